# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.NxDynamicSliceTest do
    @moduledoc """
    `Nx.Vulkan.Compiler` on functions that slice and put_slice at tensor starts (parameters
    of several integer types, starts computed in the function, gradients): they run as fused
    plans (the NIF's counters show a run and no evaluator), equal `Nx.Defn.Evaluator` on
    Nx.BinaryBackend for starts inside, before and past the valid range, and a call with new
    start values finds the plan.
    """

    use ExUnit.Case, async: false

    setup do
      Nx.default_backend(Nx.Vulkan.Backend)
      :ok
    end

    defp counters, do: Nx.Vulkan.unwrap!(Nx.Vulkan.NIF.plan_counters())

    defp on_host(tensor), do: Nx.backend_transfer(tensor, Nx.BinaryBackend)

    def window(x, i, j), do: Nx.slice(x, [i, j], [2, 3])
    def strided(x, i, j), do: Nx.slice(x, [i, j], [3, 2], strides: [2, 3])
    def mixed(x, i, _j), do: Nx.slice(x, [1, i], [3, 2])
    def put(x, i, j), do: Nx.put_slice(x, [i, j], Nx.iota({2, 3}, type: x.type))
    def at_argmax(x, _i, _j), do: Nx.slice(x, [Nx.subtract(Nx.argmax(x[[.., 0]]), 1), 0], [2, 2])

    def slice_gradient(x, i, j) do
      Nx.Defn.grad(x, fn x ->
        x |> Nx.slice([i, j], [2, 3], strides: [2, 1]) |> Nx.pow(2) |> Nx.sum()
      end)
    end

    def put_gradient(x, i, j) do
      Nx.Defn.grad(x, fn x ->
        x
        |> Nx.put_slice([i, j], Nx.multiply(Nx.slice(x, [0, 0], [2, 2]), 3.0))
        |> Nx.pow(2)
        |> Nx.sum()
      end)
    end

    # The gradients are Nx's own (Nx.Defn.Grad writes them into the expression before the
    # compiler sees it), so the compiled ones equal the evaluator's, Nx's placement of a
    # strided slice's gradient at a start past the end included (docs/CAPABILITIES.md).
    @functions [
      {"slice", &__MODULE__.window/3},
      {"strided slice", &__MODULE__.strided/3},
      {"slice with a constant start", &__MODULE__.mixed/3},
      {"put_slice", &__MODULE__.put/3},
      {"slice at a start computed from an argmax", &__MODULE__.at_argmax/3},
      {"the gradient of a strided slice", &__MODULE__.slice_gradient/3},
      {"the gradient of a put_slice", &__MODULE__.put_gradient/3}
    ]

    # Starts inside, before and past the valid range; u64 above 2^63 clamps to the end.
    @starts [
      {{:s, 32}, 1, 1},
      {{:s, 32}, -4, 7},
      {{:u, 8}, 200, 0},
      {{:s, 64}, 3, -1},
      {{:u, 64}, 9_223_372_036_854_775_813, 2}
    ]

    # The oracle: Nx's evaluator on Nx.BinaryBackend (tensors the function creates too).
    defp evaluated(fun, x, i, j) do
      Nx.with_default_backend(Nx.BinaryBackend, fn ->
        Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator, on_conflict: :reuse).(
          on_host(x),
          on_host(i),
          on_host(j)
        )
      end)
    end

    defp close?(a, b),
      do: Nx.all_close(a, b, atol: 1.0e-6, rtol: 1.0e-6) |> Nx.to_number() == 1

    for {name, fun} <- @functions do
      test "fused: #{name} at tensor starts equals the evaluator and plans once per type" do
        fun = unquote(fun)
        x = Nx.iota({6, 5}, type: {:f, 32}) |> Nx.multiply(0.5) |> Nx.subtract(3)

        for {type, i, j} <- @starts do
          {i, j} = {Nx.tensor(i, type: type), Nx.tensor(j, type: {:s, 32})}
          before = counters()
          compiled = Nx.Defn.jit(fun, compiler: Nx.Vulkan.Compiler).(x, i, j)
          after_run = counters()
          assert after_run.runs == before.runs + 1, "the function kept the evaluator"

          expected = evaluated(fun, x, i, j)
          assert on_host(compiled).shape == expected.shape
          assert close?(on_host(compiled), expected), "#{inspect(type)} #{inspect({i, j})}"
          # Null arm: the same comparison rejects a result moved by one.
          refute close?(on_host(Nx.add(compiled, 1)), expected)
        end

        # New start values of the types of the first round: the plan is found, nothing is
        # planned again.
        before = counters()
        Nx.Defn.jit(fun, compiler: Nx.Vulkan.Compiler).(x, Nx.tensor(2), Nx.tensor(0))
        Nx.Defn.jit(fun, compiler: Nx.Vulkan.Compiler).(x, Nx.tensor(-1), Nx.tensor(3))
        after_run = counters()
        assert after_run.traces == before.traces
        assert after_run.cache_hits == before.cache_hits + 2
      end
    end

    # The eager backend: starts of mixed types, each read in its own type.
    test "eager slice and put_slice at tensor starts of mixed types equal Nx.BinaryBackend" do
      x = Nx.iota({6, 5}, type: {:s, 32})
      update = Nx.iota({2, 3}, type: {:s, 32}) |> Nx.negate()

      for {{ti, i}, {tj, j}} <- [
            {{{:u, 64}, 9_223_372_036_854_775_813}, {{:s, 32}, -2}},
            {{{:s, 8}, -100}, {{:u, 8}, 255}},
            {{{:s, 4}, 7}, {{:s, 64}, 1}}
          ] do
        starts = [Nx.tensor(i, type: ti), Nx.tensor(j, type: tj)]
        host_starts = Enum.map(starts, &on_host/1)
        expected = Nx.slice(on_host(x), host_starts, [2, 3])
        assert on_host(Nx.slice(x, starts, [2, 3])) == expected
        refute on_host(Nx.slice(x, starts, [2, 3])) == Nx.slice(on_host(x), [0, 0], [2, 3])
        expected = Nx.put_slice(on_host(x), host_starts, on_host(update))
        assert on_host(Nx.put_slice(x, starts, update)) == expected
      end
    end
  end
end
