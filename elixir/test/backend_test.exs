# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.BackendTest do
    # Reads VM-wide counters and sets strict mode: runs alone, after the async tests.
    use ExUnit.Case, async: false

    setup do
      Nx.default_backend(Nx.Vulkan.Backend)
      :ok
    end

    defp host(tensor), do: Nx.backend_copy(tensor, Nx.BinaryBackend)

    # Random values made in Elixir (Nx.Random would itself run ops on the device).
    defp random(shape, type) do
      values = for _ <- 1..Nx.size(shape), do: :rand.uniform() * 8.0 - 4.0
      values |> Nx.tensor(type: type, backend: Nx.Vulkan.Backend) |> Nx.reshape(shape)
    end

    # Same type, shape and bytes.
    defp assert_same(result, expected) do
      assert {result.type, result.shape} == {expected.type, expected.shape}
      assert Nx.to_binary(result) == Nx.to_binary(expected)
    end

    test "every Nx.Backend callback is implemented" do
      missing =
        for {name, arity} <- Nx.Backend.behaviour_info(:callbacks),
            not function_exported?(Nx.Vulkan.Backend, name, arity),
            do: {name, arity}

      assert missing == []
    end

    test "native ops match Nx.BinaryBackend and take no host fallback" do
      Nx.Vulkan.with_strict(:raise, fn ->
        {a, b} = {Nx.tensor([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]]), Nx.tensor([2.0, -1.0, 0.5])}

        {results, taken} =
          Nx.Vulkan.with_fallback_count(fn ->
            [
              Nx.add(a, b),
              Nx.sum(a, axes: [1]),
              Nx.argmax(a, axis: 0, tie_break: :high),
              Nx.reverse(Nx.transpose(a)),
              Nx.pad(a, 0.0, [{1, 0, 1}, {0, -1, 0}]),
              Nx.concatenate([a, a], axis: 1),
              Nx.stack([b, b]),
              Nx.slice(a, [0, 1], [2, 2], strides: [1, 2]),
              Nx.put_slice(a, [1, 1], Nx.tensor([[9.0, 9.0]])),
              Nx.reshape(Nx.transpose(a), {6}),
              Nx.iota({2, 3, 4}, axis: 1),
              Nx.iota({3, 5}, type: :f16),
              Nx.iota({300}, type: :u8),
              Nx.eye({2, 3, 4}, type: :bf16)
            ]
          end)

        expected = [
          Nx.add(host(a), host(b)),
          Nx.sum(host(a), axes: [1]),
          Nx.argmax(host(a), axis: 0, tie_break: :high),
          Nx.reverse(Nx.transpose(host(a))),
          Nx.pad(host(a), 0.0, [{1, 0, 1}, {0, -1, 0}]),
          Nx.concatenate([host(a), host(a)], axis: 1),
          Nx.stack([host(b), host(b)]),
          Nx.slice(host(a), [0, 1], [2, 2], strides: [1, 2]),
          Nx.put_slice(host(a), [1, 1], Nx.tensor([[9.0, 9.0]], backend: Nx.BinaryBackend)),
          Nx.reshape(Nx.transpose(host(a)), {6}),
          Nx.iota({2, 3, 4}, axis: 1, backend: Nx.BinaryBackend),
          Nx.iota({3, 5}, type: :f16, backend: Nx.BinaryBackend),
          Nx.iota({300}, type: :u8, backend: Nx.BinaryBackend),
          Nx.eye({2, 3, 4}, type: :bf16, backend: Nx.BinaryBackend)
        ]

        assert taken == 0

        for {result, reference} <- Enum.zip(results, expected), do: assert_same(result, reference)
      end)
    end

    test "a callback without a kernel is counted, and refused under strict mode" do
      # A reduce whose function the GPU fold cannot compute (a reduction of a literal inside
      # it) takes the host gate; plain functions run on the GPU (nx_reducer_test.exs).
      a = random({3, 4}, :f32)
      add = fn x, y -> Nx.add(Nx.multiply(x, Nx.sum(Nx.tensor([0.5, 0.5]))), y) end

      {sums, taken} =
        Nx.Vulkan.with_strict(:allow, fn ->
          Nx.Vulkan.with_fallback_count(fn -> Nx.reduce(a, 0.0, [axes: [1]], add) end)
        end)

      assert taken == 1
      assert %Nx.Tensor{data: %Nx.Vulkan.Backend{}} = sums
      assert Nx.all_close(host(sums), Nx.sum(host(a), axes: [1])) |> Nx.to_number() == 1

      error =
        assert_raise RuntimeError, fn ->
          Nx.Vulkan.with_process_strict(:raise, fn -> Nx.reduce(a, 0.0, [axes: [1]], add) end)
        end

      assert error.message =~ "reduce"
      assert error.message =~ "f32"
      assert error.message =~ "strict mode refuses"
    end

    test "the window family and triangular_solve run natively and agree with Nx.BinaryBackend" do
      a = random({5, 6}, :f32)
      lower = Nx.add(random({4, 4}, :f32), Nx.multiply(Nx.eye(4), 3.0))
      b = random({4, 2}, :f32)

      results =
        Nx.Vulkan.with_process_strict(:raise, fn ->
          [
            Nx.window_sum(a, {2, 3}, strides: [1, 2], padding: [{1, 0}, {0, 1}]),
            Nx.window_max(a, {2, 2}, padding: :same),
            Nx.window_scatter_max(a, Nx.iota({2, 3}, type: :f32), 0.0, {2, 2}, strides: [2, 2]),
            Nx.LinAlg.triangular_solve(lower, b)
          ]
        end)

      expected = [
        Nx.window_sum(host(a), {2, 3}, strides: [1, 2], padding: [{1, 0}, {0, 1}]),
        Nx.window_max(host(a), {2, 2}, padding: :same),
        Nx.window_scatter_max(host(a), Nx.iota({2, 3}, type: :f32), 0.0, {2, 2}, strides: [2, 2]),
        Nx.LinAlg.triangular_solve(host(lower), host(b))
      ]

      for {result, reference} <- Enum.zip(results, expected) do
        assert Nx.all_close(host(result), reference, atol: 1.0e-5) |> Nx.to_number() == 1
      end

      # Null arm: a shifted result is told apart.
      shifted = Nx.add(host(hd(results)), 1.0e-3)
      assert Nx.all_close(shifted, hd(expected), atol: 1.0e-5) |> Nx.to_number() == 0

      assert_raise ArgumentError, ~r/singular/, fn ->
        Nx.LinAlg.triangular_solve(Nx.multiply(lower, 0.0), b)
      end
    end

    test "a process :raise scope also refuses the catalog's own fallbacks (sub-byte sum)" do
      nibbles = Nx.tensor([1, 15, 7], type: :u4)

      Nx.Vulkan.with_strict(:allow, fn ->
        assert_same(Nx.sum(nibbles), Nx.sum(host(nibbles)))

        error =
          assert_raise RuntimeError, fn ->
            Nx.Vulkan.with_process_strict(:raise, fn -> Nx.sum(nibbles) end)
          end

        assert error.message =~ "sum"
        assert error.message =~ "u4"
      end)
    end

    # Null arm: the comparison above tells a wrong result apart.
    test "a perturbed result fails the comparison" do
      a = random({5}, :f32)
      assert_same(Nx.add(a, 0.0), host(a))
      assert_raise ExUnit.AssertionError, fn -> assert_same(Nx.add(a, 1.0e-3), host(a)) end
    end

    test "the compiler caches one plan per input shape and agrees with eager mode" do
      Nx.Vulkan.PlanCache.clear()

      softmax =
        Nx.Defn.jit(fn t -> Nx.divide(Nx.exp(t), Nx.sum(Nx.exp(t))) end,
          compiler: Nx.Vulkan.Compiler
        )

      t = random({8}, :f32)
      eager = Nx.exp(t) |> Nx.divide(Nx.sum(Nx.exp(t)))
      fused = softmax.(t)
      # A fused reduction may fold in another order than the eager one (nxvk-fusion's
      # invariant), so the sums, and the quotients, may differ in the last bit.
      assert {fused.type, fused.shape} == {eager.type, eager.shape}
      assert Nx.all_close(fused, eager, rtol: 1.0e-6, atol: 0.0) |> Nx.to_number() == 1
      # Null arm: a result off by 1e-4 relative is not close.
      refute Nx.all_close(Nx.multiply(fused, 1.0001), eager, rtol: 1.0e-6, atol: 0.0)
             |> Nx.to_number() == 1

      _again = softmax.(random({8}, :f32))
      assert Nx.Vulkan.PlanCache.size() == 1
      _other_shape = softmax.(random({3}, :f32))
      assert Nx.Vulkan.PlanCache.size() == 2
    end

    test "grad through the compiler" do
      grad =
        Nx.Defn.jit(fn t -> Nx.Defn.grad(t, &Nx.sum(Nx.multiply(&1, &1))) end,
          compiler: Nx.Vulkan.Compiler
        )

      t = Nx.tensor([1.0, -2.0, 3.5])
      assert_same(grad.(t), Nx.tensor([2.0, -4.0, 7.0], backend: Nx.BinaryBackend))
    end
  end
end
