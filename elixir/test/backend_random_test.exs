# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.BackendRandomTest do
    # Sets VM-wide strict mode: runs alone, after the async tests.
    use ExUnit.Case, async: false

    # Random shapes (rank 0 to 3) and values for each dtype the catalog runs natively; every
    # native callback's option mapping (axes, keep_axes, tie_break, strides, padding, type
    # casts) is compared with Nx.BinaryBackend on the same inputs, with fallbacks refused.

    @dtypes [{:s, 8}, {:u, 16}, {:s, 32}, {:s, 64}, {:f, 16}, {:bf, 16}, {:f, 32}, {:f, 64}]

    setup do
      :rand.seed(:exsss, {3, 5, 8})
      Nx.default_backend(Nx.Vulkan.Backend)
      :ok
    end

    defp random_shape(rank), do: List.to_tuple(for(_ <- 1..rank//1, do: :rand.uniform(3)))

    defp random_host({kind, _} = type, shape) do
      values =
        for _ <- 1..Nx.size(shape) do
          case kind do
            :u -> :rand.uniform(9)
            :s -> :rand.uniform(19) - 10
            _float -> Float.round(:rand.uniform() * 8.0 - 4.0, 2)
          end
        end

      values |> Nx.tensor(type: type, backend: Nx.BinaryBackend) |> Nx.reshape(shape)
    end

    defp device(host), do: Nx.backend_transfer(host, Nx.Vulkan.Backend)

    defp random_axes(rank),
      do: Enum.filter(0..(rank - 1)//1, fn _ -> :rand.uniform(2) == 1 end)

    # Exact for integers and data movement; float sums and products add in tree order.
    defp assert_matches(result, %Nx.Tensor{data: %Nx.BinaryBackend{}} = expected, exact?) do
      result = Nx.backend_copy(result, Nx.BinaryBackend)
      assert {result.type, result.shape} == {expected.type, expected.shape}

      if exact? do
        assert Nx.to_binary(result) == Nx.to_binary(expected)
      else
        close = fn -> Nx.all_close(result, expected, rtol: 1.0e-2, atol: 1.0e-2) end
        assert Nx.with_default_backend(Nx.BinaryBackend, close) |> Nx.to_number() == 1
      end
    end

    defp cases(type, host) do
      rank = Nx.rank(host)
      shape = Nx.shape(host)
      axes = random_axes(rank)
      keep_axes = :rand.uniform(2) == 1
      float? = Nx.Type.float?(type)

      reductions = [
        {fn x, _on -> Nx.sum(x, axes: axes, keep_axes: keep_axes) end, not float?},
        {fn x, _on -> Nx.product(x, axes: axes, keep_axes: keep_axes) end, not float?},
        {fn x, _on -> Nx.reduce_max(x, axes: axes, keep_axes: keep_axes) end, true},
        {fn x, _on -> Nx.all(x, axes: axes) end, true},
        {fn x, _on -> Nx.any(x, axes: axes, keep_axes: keep_axes) end, true}
      ]

      arg_reductions =
        if rank > 0 do
          axis = :rand.uniform(rank) - 1

          [
            {fn x, _on -> Nx.argmin(x, axis: axis, tie_break: :high, keep_axis: keep_axes) end,
             true},
            {fn x, _on -> Nx.argmax(x, type: :s32) end, true}
          ]
        else
          []
        end

      partner = random_host(type, shape |> Tuple.to_list() |> Enum.drop(1) |> List.to_tuple())

      # nxvk rounds bf16 results to nearest even; Nx.BinaryBackend truncates the f32 result
      # (Nx.Floating.dump_bf16 keeps its top half), so bf16 arithmetic may differ in the last
      # bit (docs/ELIXIR_RESULTS.md).
      rounds_as_nx? = type != {:bf, 16}

      elementwise = [
        {fn x, on -> Nx.add(x, on.(partner)) end, rounds_as_nx?},
        {fn x, _on -> Nx.multiply(x, 3) end, rounds_as_nx?},
        {fn x, on -> Nx.greater(x, on.(partner)) end, true},
        {fn x, _on -> Nx.as_type(x, {:f, 32}) end, true},
        {fn x, _on -> Nx.negate(x) end, true}
      ]

      movement =
        if rank > 0 do
          lengths = for d <- Tuple.to_list(shape), do: :rand.uniform(d)
          starts = for d <- Tuple.to_list(shape), do: :rand.uniform(d) - 1
          strides = for _ <- 1..rank, do: :rand.uniform(2)

          # Negative low padding (a crop) only on axes longer than one: Nx.BinaryBackend, the
          # oracle, fails to crop a size-1 axis away.
          padding =
            for d <- Tuple.to_list(shape) do
              low = if d > 1, do: :rand.uniform(3) - 2, else: :rand.uniform(2) - 1
              {low, :rand.uniform(2) - 1, :rand.uniform(2) - 1}
            end

          update = random_host(type, List.to_tuple(lengths))

          [
            {fn x, _on -> Nx.reverse(x, axes: axes) end, true},
            {fn x, _on -> Nx.slice(x, starts, lengths, strides: strides) end, true},
            {fn x, _on -> Nx.pad(x, 1, padding) end, true},
            {fn x, _on -> Nx.concatenate([x, x], axis: rank - 1) end, true},
            {fn x, _on -> Nx.stack([Nx.transpose(x), Nx.transpose(x)], axis: 0) end, true},
            {fn x, on -> Nx.put_slice(x, starts, on.(update)) end, true},
            {fn x, _on -> Nx.reshape(Nx.transpose(x), {Nx.size(x)}) end, true}
          ]
        else
          []
        end

      reductions ++ arg_reductions ++ elementwise ++ movement
    end

    test "native callbacks match Nx.BinaryBackend on random shapes for every native dtype" do
      Nx.Vulkan.with_strict(:raise, fn ->
        for type <- @dtypes, _trial <- 1..6 do
          host = random_host(type, random_shape(:rand.uniform(4) - 1))
          on_device = device(host)

          # Each case gets its input and a function that puts its extra operands on the same
          # side, so the oracle runs wholly on Nx.BinaryBackend.
          for {operation, exact?} <- cases(type, host) do
            expected = Nx.with_default_backend(Nx.BinaryBackend, fn -> operation.(host, & &1) end)

            assert_matches(operation.(on_device, &device/1), expected, exact?)
          end
        end
      end)
    end

    # Null arm: a perturbed result does not match.
    test "the comparison rejects a perturbed result" do
      host = random_host({:s, 32}, {4})
      expected = Nx.with_default_backend(Nx.BinaryBackend, fn -> Nx.add(host, 1) end)
      assert_matches(Nx.add(device(host), 1), expected, true)

      assert_raise ExUnit.AssertionError, fn ->
        assert_matches(Nx.add(device(host), 2), expected, true)
      end
    end
  end
end
