# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.NxReducerTest do
    @moduledoc """
    `reduce` and `window_reduce` with an Elixir function: eagerly (`Nx.Vulkan.Backend` traces
    the function into a one-node graph) and inside defn (`Nx.Vulkan.GraphEncoding` encodes the
    Expr nodes), against Nx.BinaryBackend on random inputs, with no host fallback taken; a
    function the GPU fold cannot compute takes the counted fallback.
    """

    use ExUnit.Case, async: false

    setup do
      :rand.seed(:exsss, {4, 5, 6})
      Nx.default_backend(Nx.Vulkan.Backend)
      :ok
    end

    defp random(shape, type) do
      n = shape |> Tuple.to_list() |> Enum.product()
      values = for _ <- 1..n//1, do: :rand.uniform(21) - 11
      values |> Nx.tensor(type: type, backend: Nx.BinaryBackend) |> Nx.reshape(shape)
    end

    defp on_host(tensor), do: Nx.backend_transfer(tensor, Nx.BinaryBackend)

    # Equal to Nx.BinaryBackend's result; the null arm shows the check rejects a result moved
    # by one.
    defp agrees!(result, expected) do
      assert on_host(result) == expected
      refute on_host(Nx.add(result, 1)) == expected
    end

    defp both(fun, args) do
      {result, fallbacks} =
        Nx.Vulkan.with_fallback_count(fn ->
          apply(fun, Enum.map(args, &Nx.backend_transfer(&1, Nx.Vulkan.Backend)))
        end)

      expected =
        Nx.with_default_backend(Nx.BinaryBackend, fn -> apply(fun, Enum.map(args, &on_host/1)) end)

      {result, expected, fallbacks}
    end

    def reductions(x, y) do
      rows = Nx.reduce(Nx.add(x, y), 3, [axes: [1]], fn a, b -> Nx.max(a, b) end)
      all = Nx.reduce(x, 10, fn a, b -> Nx.add(a, b) end)

      pooled =
        Nx.window_reduce(y, 0, {2, 2}, [strides: [1, 2], padding: :same], fn a, b ->
          Nx.add(a, b)
        end)

      {rows, all, pooled}
    end

    for type <- [{:s, 32}, {:f, 32}] do
      test "eager reduce and window_reduce on #{inspect(type)} run on the GPU" do
        args = [random({4, 6}, unquote(type)), random({4, 6}, unquote(type))]
        {{rows, all, pooled}, {e_rows, e_all, e_pooled}, fallbacks} = both(&reductions/2, args)
        assert fallbacks == 0
        agrees!(rows, e_rows)
        agrees!(all, e_all)
        agrees!(pooled, e_pooled)
      end
    end

    test "a non-trivial associative function: a * b + a + b on s32" do
      x = random({3, 7}, {:s, 32})
      fun = fn a, b -> Nx.add(Nx.multiply(a, b), Nx.add(a, b)) end

      {result, fallbacks} =
        Nx.Vulkan.with_fallback_count(fn ->
          Nx.reduce(Nx.backend_transfer(x, Nx.Vulkan.Backend), 2, [axes: [1]], fun)
        end)

      assert fallbacks == 0

      agrees!(
        result,
        Nx.with_default_backend(Nx.BinaryBackend, fn -> Nx.reduce(x, 2, [axes: [1]], fun) end)
      )
    end

    test "defn code with reduce and window_reduce compiles to a fused plan" do
      args = [random({4, 6}, {:s, 32}), random({4, 6}, {:s, 32})]
      before = Nx.Vulkan.unwrap!(Nx.Vulkan.NIF.plan_counters())

      {rows, all, pooled} =
        Nx.Defn.jit(&reductions/2, compiler: Nx.Vulkan.Compiler).(
          args |> hd(),
          args |> List.last()
        )

      after_run = Nx.Vulkan.unwrap!(Nx.Vulkan.NIF.plan_counters())
      assert after_run.runs == before.runs + 1

      {e_rows, e_all, e_pooled} =
        Nx.with_default_backend(Nx.BinaryBackend, fn -> apply(&reductions/2, args) end)

      agrees!(rows, e_rows)
      agrees!(all, e_all)
      agrees!(pooled, e_pooled)
    end

    test "a function the GPU fold cannot compute takes the counted fallback" do
      x = random({5}, {:s, 32})
      # A reduction of a literal inside the function: encoded, but the fold refuses it.
      fun = fn a, b -> Nx.add(Nx.multiply(a, Nx.sum(Nx.tensor([1, 1]))), b) end
      # On the device: Nx.reduce picks the tensor's backend (Nx 0.13.1's release; later Nx
      # picks by the tensor and the accumulator).
      on_device = Nx.backend_copy(x, Nx.Vulkan.Backend)

      # Allowed here whatever NXVK_STRICT says: the test is that the fallback is taken.
      {result, fallbacks} =
        Nx.Vulkan.with_strict(:allow, fn ->
          Nx.Vulkan.with_fallback_count(fn -> Nx.reduce(on_device, 0, fun) end)
        end)

      assert fallbacks == 1

      agrees!(
        result,
        Nx.with_default_backend(Nx.BinaryBackend, fn -> Nx.reduce(on_host(x), 0, fun) end)
      )
    end
  end
end
