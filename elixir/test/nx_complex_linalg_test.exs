# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.NxComplexLinalgTest do
    @moduledoc """
    Nx.LinAlg's cholesky, lu, determinant and solve on c64 and c128 tensors through
    `Nx.Vulkan.Backend`: the blocks run the NIF's linalg kernels (a handful of dispatches and
    no host fallback, where Nx's default implementation would dispatch every step of its
    loops), and the results agree with Nx.BinaryBackend's on the same inputs.
    """

    use ExUnit.Case, async: false

    @types [{:c, 64}, {:c, 128}]

    # Dispatches one call may take on the kernels (measured on lavapipe: cholesky 1,
    # determinant 2, lu 3, solve 10, whatever the size and batch). Nx's own implementations
    # dispatch every step (6 for a 2x2 determinant's closed form, over 100 for each cholesky,
    # lu and solve of these tests), so a bound between the two tells which one ran.
    @kernel_dispatches %{cholesky: 2, determinant: 4, lu: 4, solve: 12}

    setup do
      :rand.seed(:exsss, {2, 7, 1})
      :ok
    end

    defp on_host(tensor), do: Nx.backend_transfer(tensor, Nx.BinaryBackend)
    defp on_device(tensor), do: Nx.backend_copy(tensor, Nx.Vulkan.Backend)

    defp tolerance({:c, 64}), do: 1.0e-4
    defp tolerance({:c, 128}), do: 1.0e-10

    defp close?(a, b, type) do
      tol = tolerance(type)
      Nx.all_close(a, b, atol: tol, rtol: tol) |> Nx.to_number() == 1
    end

    defp random(shape, type) do
      n = shape |> Tuple.to_list() |> Enum.product()
      parts = for _ <- 1..2, do: for(_ <- 1..n//1, do: :rand.uniform() * 2 - 1)
      [re, im] = Enum.map(parts, &Nx.tensor(&1, type: {:f, 64}, backend: Nx.BinaryBackend))
      Nx.complex(re, im) |> Nx.reshape(shape) |> Nx.as_type(type)
    end

    defp eye(shape, type), do: Nx.eye(shape, type: type, backend: Nx.BinaryBackend)

    # Hermitian positive definite: m m^H + n I.
    defp hermitian_positive(shape, type) do
      m = random(shape, type)
      rank = tuple_size(shape)
      batch = Enum.to_list(0..(rank - 3)//1)
      # (m m^H)[i, j] = sum over k of m[i, k] conj(m[j, k]).
      gram = Nx.dot(m, [rank - 1], batch, Nx.conjugate(m), [rank - 1], batch)
      n = elem(shape, rank - 1)
      Nx.add(gram, Nx.multiply(eye(shape, type), n))
    end

    # Diagonally dominant by columns (entries of modulus below 1.5 off the diagonal, 8 added to
    # it, at most 5 rows): elimination keeps the dominance, so partial pivoting by modulus
    # keeps every row in place on both backends and P, L and U are comparable entry by entry.
    defp dominant(shape, type), do: Nx.add(random(shape, type), Nx.multiply(eye(shape, type), 8))

    # Runs `fun` on the device copies of `inputs` with fallbacks refused; `op`'s kernels ran.
    defp on_vulkan(op, fun, inputs) do
      device_inputs = Enum.map(inputs, &on_device/1)
      before = Nx.Vulkan.counters().dispatches

      {result, fallbacks} =
        Nx.Vulkan.with_process_strict(:raise, fn ->
          Nx.Vulkan.with_fallback_count(fn -> apply(fun, device_inputs) end)
        end)

      dispatches = Nx.Vulkan.counters().dispatches - before
      assert fallbacks == 0
      assert dispatches <= @kernel_dispatches[op], "#{dispatches} dispatches: Nx's default ran"
      result |> Tuple.to_list() |> Enum.map(&on_host/1) |> List.to_tuple()
    end

    defp assert_close!(vulkan, binary, type) do
      for {v, b} <- Enum.zip(Tuple.to_list(vulkan), Tuple.to_list(binary)) do
        assert v.type == b.type and v.shape == b.shape
        assert close?(v, b, type), "#{inspect(v)}\nexpected\n#{inspect(b)}"
        # Null arm: the same comparison rejects the result moved by 20 tolerances.
        refute close?(Nx.add(v, Nx.multiply(Nx.add(v, 1), 20 * tolerance(type))), b, type)
      end
    end

    for type <- @types do
      test "cholesky of #{inspect(type)} Hermitian matrices equals Nx.BinaryBackend" do
        type = unquote(Macro.escape(type))

        for shape <- [{3, 3}, {2, 4, 4}] do
          a = hermitian_positive(shape, type)
          {l} = on_vulkan(:cholesky, &{Nx.LinAlg.cholesky(&1)}, [a])
          assert_close!({l}, {Nx.LinAlg.cholesky(a)}, type)
        end
      end

      test "determinant of #{inspect(type)} matrices equals Nx.BinaryBackend" do
        type = unquote(Macro.escape(type))
        # 2x2 and 3x3 take Nx's closed forms on Nx.BinaryBackend, larger ones its LU.
        for shape <- [{2, 2}, {3, 3}, {2, 5, 5}] do
          a = random(shape, type)
          {det} = on_vulkan(:determinant, &{Nx.LinAlg.determinant(&1)}, [a])
          assert_close!({det}, {Nx.LinAlg.determinant(a)}, type)
        end
      end

      test "solve of #{inspect(type)} systems equals Nx.BinaryBackend" do
        type = unquote(Macro.escape(type))

        for {a_shape, b_shape} <- [{{3, 3}, {3}}, {{4, 4}, {4, 2}}, {{2, 3, 3}, {2, 3, 2}}] do
          {a, b} = {dominant(a_shape, type), random(b_shape, type)}
          {x} = on_vulkan(:solve, &{Nx.LinAlg.solve(&1, &2)}, [a, b])
          assert_close!({x}, {Nx.LinAlg.solve(a, b)}, type)
        end
      end

      test "lu of #{inspect(type)} matrices equals Nx.BinaryBackend" do
        type = unquote(Macro.escape(type))

        for shape <- [{3, 3}, {2, 4, 4}] do
          a = dominant(shape, type)
          vulkan = on_vulkan(:lu, &Nx.LinAlg.lu/1, [a])
          assert_close!(vulkan, Nx.LinAlg.lu(a), type)
        end
      end

      test "lu of #{inspect(type)} matrices that need pivoting multiplies back to the input" do
        type = unquote(Macro.escape(type))
        # Rows reversed so the first column's largest modulus is last: both backends swap
        # rows. Random moduli do not tie, so both pick the same pivots and the factors agree,
        # and P L U is the input on both (Nx's complex lu conjugates twice in its update:
        # `Nx.outer` conjugates its second operand, an adjoint).
        a = dominant({4, 4}, type) |> Nx.reverse(axes: [0])
        {p, l, u} = on_vulkan(:lu, &Nx.LinAlg.lu/1, [a])
        refute Nx.equal(p, eye({4, 4}, p.type)) |> Nx.all() |> Nx.to_number() == 1
        {bp, bl, bu} = Nx.LinAlg.lu(a)
        assert_close!({p, l, u}, {bp, bl, bu}, type)
        assert close?(p |> Nx.dot(l) |> Nx.dot(u), a, type)
        assert close?(bp |> Nx.dot(bl) |> Nx.dot(bu), a, type)
      end
    end
  end
end
