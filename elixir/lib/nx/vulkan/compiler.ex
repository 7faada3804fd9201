# Compiled only when Nx is a dependency (set NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.Compiler do
    @moduledoc """
    An `Nx.Defn.Compiler` that runs defn functions on nxvk.

        Nx.Defn.jit(&MyModule.softmax/1, compiler: Nx.Vulkan.Compiler).(tensor)

    Today a compiled plan is `Nx.Defn.Evaluator`'s: the traced expression evaluated node by
    node with `Nx.Vulkan.Backend` as the backend (inputs moved to the device first), so every
    node runs as the eager op does, native or through the counted host fallback. Plans are
    cached per key in `Nx.Vulkan.PlanCache` (per process, see there why), so a function is
    traced once per input shape and type in each process. The fused path (the expression encoded into nxvk-fusion's IR, planned into fused
    kernels) replaces the evaluator inside `plan/4` once the NIF decodes that IR.
    """

    @behaviour Nx.Defn.Compiler

    alias Nx.Defn.Composite

    # Options that change what a plan computes; the rest (e.g. :compiler) do not.
    @plan_options [:hooks, :garbage_collect]

    @impl true
    def __partitions_options__(opts), do: [opts]

    @impl true
    def __to_backend__(_opts), do: {Nx.Vulkan.Backend, []}

    @impl true
    def __jit__(key, vars, fun, args_list, opts),
      do: __compile__(key, vars, fun, opts).(args_list)

    @impl true
    def __compile__(key, vars, fun, opts) do
      plan_options = Keyword.take(opts, @plan_options)
      templates = Enum.map(vars, &Composite.traverse(&1, fn tensor -> Nx.to_template(tensor) end))

      evaluate =
        Nx.Vulkan.PlanCache.fetch({__MODULE__, key, templates, plan_options}, fn ->
          plan(key, vars, fun, plan_options)
        end)

      fn args_list ->
        Nx.with_default_backend(Nx.Vulkan.Backend, fn ->
          evaluate.(Enum.map(args_list, &on_device/1))
        end)
      end
    end

    defp plan(key, vars, fun, plan_options),
      do: Nx.Defn.Evaluator.__compile__(key, vars, fun, plan_options)

    # Parameters arrive as functions returning tensors of any backend.
    defp on_device(parameters) do
      Enum.map(parameters, fn parameter ->
        fn -> Nx.backend_transfer(parameter.(), Nx.Vulkan.Backend) end
      end)
    end
  end
end
