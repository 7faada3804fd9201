# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.NxLinalgCompilerTest do
    @moduledoc """
    `Nx.Vulkan.Compiler` on functions with `fft`/`ifft`, `triangular_solve` and the
    `Nx.Block.LinAlg` blocks cholesky, solve, lu and determinant: `Nx.Vulkan.GraphEncoding`
    encodes them as native nodes (the function runs as one plan: the NIF's run counter moves,
    no evaluator), and the results agree with the evaluator running the eager backend. QR,
    eigh and complex linear algebra keep the evaluator.
    """

    use ExUnit.Case, async: false

    setup do
      :rand.seed(:exsss, {3, 1, 4})
      Nx.default_backend(Nx.Vulkan.Backend)
      :ok
    end

    defp counters, do: Nx.Vulkan.unwrap!(Nx.Vulkan.NIF.plan_counters())
    defp on_host(result), do: Nx.backend_transfer(result, Nx.BinaryBackend)

    defp random(shape) do
      n = shape |> Tuple.to_list() |> Enum.product()
      values = for _ <- 1..n//1, do: :rand.uniform() * 2 - 1
      values |> Nx.tensor(type: {:f, 64}, backend: Nx.BinaryBackend) |> Nx.reshape(shape)
    end

    # Symmetric positive definite (and well-conditioned): m + m^T + 8 I.
    defp spd(shape) do
      m = random(shape)
      eye = Nx.eye(shape, type: {:f, 64}, backend: Nx.BinaryBackend)
      m |> Nx.add(Nx.transpose(m, axes: [0, 2, 1])) |> Nx.add(Nx.multiply(eye, 8))
    end

    def spectrum(x), do: x |> Nx.fft(length: 8) |> Nx.ifft(axis: 0) |> Nx.abs()

    def solves(a, b) do
      x = Nx.LinAlg.triangular_solve(a, b, lower: false, transform_a: :transpose)
      {x, Nx.LinAlg.solve(a, b), Nx.LinAlg.determinant(a), Nx.LinAlg.cholesky(a)}
    end

    def lu_factors(a) do
      {p, l, u} = Nx.LinAlg.lu(a)
      {p, Nx.dot(l, [2], [0], u, [1], [0])}
    end

    def qr_factors(a) do
      {q, r} = Nx.LinAlg.qr(a)
      Nx.dot(q, [2], [0], r, [1], [0])
    end

    defp agrees!(compiled, evaluated) do
      close? = fn a, b ->
        Nx.all_close(a, b, atol: 1.0e-9, rtol: 1.0e-9) |> Nx.to_number() == 1
      end

      for {c, e} <- Enum.zip(List.wrap(compiled), List.wrap(evaluated)) do
        assert close?.(on_host(c), e)
        # Null arm: the same check rejects a moved result.
        refute close?.(Nx.add(on_host(c), 1.0e-6), e)
      end
    end

    defp fused!(fun, args) do
      args = Enum.map(args, &Nx.backend_copy(&1, Nx.Vulkan.Backend))
      before = counters()
      compiled = apply(Nx.Defn.jit(fun, compiler: Nx.Vulkan.Compiler), args)
      assert counters().runs == before.runs + 1, "the function did not run as one plan"
      # The evaluator on the same backend: the eager ops (Nx.BinaryBackend's LU pivots
      # differently, so the eager backend is the reference).
      evaluated = apply(Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator), args)
      evaluated = Enum.map(tuples(evaluated), &on_host/1)
      agrees!(tuples(compiled), evaluated)
    end

    defp tuples(value) when is_tuple(value), do: Tuple.to_list(value)
    defp tuples(value), do: [value]

    test "fft and ifft with a padded length run fused" do
      fused!(&__MODULE__.spectrum/1, [random({3, 5})])
    end

    test "triangular_solve, solve, determinant and cholesky run fused" do
      fused!(&__MODULE__.solves/2, [spd({2, 3, 3}), random({2, 3, 2})])
    end

    test "lu runs fused and its factors multiply back to the permuted matrix" do
      a = spd({2, 4, 4})
      fused!(&__MODULE__.lu_factors/1, [a])
      {p, lu} = Nx.Defn.jit(&__MODULE__.lu_factors/1, compiler: Nx.Vulkan.Compiler).(a)
      pa = Nx.dot(on_host(p), [2], [0], on_host(lu), [1], [0])
      assert Nx.all_close(pa, on_host(a), atol: 1.0e-9) |> Nx.to_number() == 1
    end

    test "qr and eigh keep the evaluator (the backend keeps Nx's conventions for them)" do
      a = spd({1, 3, 3})
      before = counters()
      Nx.Defn.jit(&__MODULE__.qr_factors/1, compiler: Nx.Vulkan.Compiler).(a)
      Nx.Defn.jit(&Nx.LinAlg.eigh/1, compiler: Nx.Vulkan.Compiler).(a)
      assert counters().runs == before.runs
    end

    test "complex linear algebra keeps the evaluator" do
      a = Nx.complex(spd({1, 2, 2}), random({1, 2, 2}))
      before = counters()
      Nx.Defn.jit(&Nx.LinAlg.determinant/1, compiler: Nx.Vulkan.Compiler).(a)
      assert counters().runs == before.runs
    end
  end
end
