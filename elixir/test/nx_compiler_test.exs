# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.NxCompilerTest do
    @moduledoc """
    `Nx.Vulkan.Compiler` against `Nx.Defn.Evaluator` on random inputs: functions the graph
    encoding covers run as fused plans (the NIF's fusion counters show one trace, then cache
    hits), the others keep the evaluator (no trace).
    """

    use ExUnit.Case, async: false

    setup do
      :rand.seed(:exsss, {1, 2, 3})
      Nx.default_backend(Nx.Vulkan.Backend)
      :ok
    end

    defp random(shape, type) do
      n = shape |> Tuple.to_list() |> Enum.product()

      values =
        for _ <- 1..n//1 do
          case type do
            {:f, _} -> :rand.uniform() * 4 - 2
            _ -> :rand.uniform(21) - 11
          end
        end

      values |> Nx.tensor(type: type, backend: Nx.BinaryBackend) |> Nx.reshape(shape)
    end

    defp counters, do: Nx.Vulkan.unwrap!(Nx.Vulkan.NIF.plan_counters())

    defp on_host(result), do: Nx.backend_transfer(result, Nx.BinaryBackend)

    # Equal within `tolerance` (0 for integers); the null arm shows the same check rejects a
    # result moved by one.
    defp agrees!(compiled, evaluated, tolerance) do
      close? = fn a ->
        Nx.all_close(a, evaluated, atol: tolerance, rtol: tolerance) |> Nx.to_number() == 1
      end

      assert close?.(compiled)
      refute close?.(Nx.add(compiled, 1))
    end

    @functions [
      {"element-wise chain with broadcasting", &__MODULE__.chain/2,
       [{{3, 5}, {:f, 32}}, {{5}, {:f, 32}}], 1.0e-5},
      {"reduction over an axis", &__MODULE__.row_sums/2, [{{4, 6}, {:f, 32}}, {{4, 6}, {:f, 32}}],
       1.0e-5},
      {"dot then select", &__MODULE__.dot_select/2, [{{3, 4}, {:s, 32}}, {{4, 2}, {:s, 32}}], 0},
      {"f64 transcendentals and clip", &__MODULE__.f64_clip/2, [{{7}, {:f, 64}}, {{}, {:f, 64}}],
       1.0e-12},
      {"sort, cumulative_sum and a padded window_max", &__MODULE__.sort_scan_pool/1,
       [{{3, 5}, {:f, 32}}], 1.0e-5},
      {"take, pad and put_slice", &__MODULE__.take_pad_put/2,
       [{{4, 3}, {:f, 32}}, {{5}, {:s, 32}}], 0}
    ]

    def chain(x, y), do: Nx.add(Nx.multiply(Nx.exp(x), y), 1.5)
    def row_sums(x, y), do: Nx.sum(Nx.subtract(x, Nx.tanh(y)), axes: [1])

    def dot_select(a, b),
      do: a |> Nx.dot(b) |> then(&Nx.select(Nx.greater(&1, 0), &1, Nx.negate(&1)))

    def f64_clip(x, y), do: x |> Nx.sin() |> Nx.multiply(y) |> Nx.clip(-0.5, 0.5)

    def sort_scan_pool(x) do
      x
      |> Nx.sort(axis: 1, direction: :desc)
      |> Nx.cumulative_sum(axis: 1)
      |> Nx.window_max({2, 2}, padding: [{1, 0}, {0, 1}], strides: [1, 2])
    end

    def take_pad_put(x, i) do
      rows = Nx.take(x, Nx.remainder(Nx.abs(i), 4), axis: 0)
      padded = Nx.pad(rows, 0.0, [{1, -1, 1}, {0, 2, 0}])
      Nx.put_slice(padded, [1, 0], Nx.slice(padded, [0, 0], [2, 2]))
    end

    for {name, fun, specs, tolerance} <- @functions do
      test "fused: #{name} equals the evaluator and plans once" do
        fun = unquote(fun)

        for _ <- 1..3 do
          args =
            Enum.map(unquote(Macro.escape(specs)), fn {shape, type} -> random(shape, type) end)

          before = counters()
          compiled = apply(Nx.Defn.jit(fun, compiler: Nx.Vulkan.Compiler), args)

          evaluated =
            apply(
              Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator, on_conflict: :reuse),
              Enum.map(args, &on_host/1)
            )

          agrees!(on_host(compiled), evaluated, unquote(tolerance))
          after_run = counters()
          assert after_run.runs == before.runs + 1
          # Same shapes and types every round: planned at most in the first round.
          assert after_run.traces - before.traces <= 1
        end

        # A second call with new values of the same signature finds its plan.
        args = Enum.map(unquote(Macro.escape(specs)), fn {shape, type} -> random(shape, type) end)
        before = counters()
        apply(Nx.Defn.jit(fun, compiler: Nx.Vulkan.Compiler), args)
        after_run = counters()
        assert after_run.traces == before.traces
        assert after_run.cache_hits == before.cache_hits + 1
      end
    end

    test "a function with a node the IR lacks (stack) keeps the evaluator" do
      x = random({9}, {:f, 32})
      before = counters()
      stacked = &Nx.stack([&1, Nx.multiply(&1, 2)])
      compiled = Nx.Defn.jit(stacked, compiler: Nx.Vulkan.Compiler).(x)
      assert counters().runs == before.runs
      agrees!(on_host(compiled), stacked.(on_host(x)), 0)
    end
  end
end
