# Compiled only when Nx is a dependency (set NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.Compiler do
    @moduledoc """
    An `Nx.Defn.Compiler` that runs defn functions on nxvk.

        Nx.Defn.jit(&MyModule.softmax/1, compiler: Nx.Vulkan.Compiler).(tensor)

    A function whose traced expression `Nx.Vulkan.GraphEncoding` can encode (flat graphs of
    element-wise ops, views, select, clip, reductions, dot, conv) runs through nxvk-fusion:
    the NIF's `plan_run/2` plans it into fused kernels once per input signature (one plan
    cache per device, in the NIF, shared by every process) and runs the plan on each call.
    Any other function (control flow, blocks, gather, sort, vectorized inputs, ...) runs as
    `Nx.Defn.Evaluator`'s plan: the expression evaluated node by node with
    `Nx.Vulkan.Backend` (inputs moved to the device first), each node as the eager op does,
    native or through the counted host fallback. Either plan is cached per key in
    `Nx.Vulkan.PlanCache` (per process, see there why), so a function is traced once per
    input shape and type in each process.
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

    # Hooks run Elixir code on intermediate values, which a fused plan cannot call back into:
    # functions with hooks keep the evaluator.
    defp plan(key, vars, fun, plan_options) do
      fused = if plan_options[:hooks] in [nil, %{}], do: fused_plan(vars, fun)
      fused || Nx.Defn.Evaluator.__compile__(key, vars, fun, plan_options)
    end

    # The fused plan, or nil when the expression has a node the IR lacks.
    defp fused_plan(vars, fun) do
      parameters = Composite.flatten_list(vars)
      result = fun.(vars)
      outputs = Composite.flatten_list([result])
      flat? = Enum.all?(parameters ++ outputs, &(&1.vectorized_axes == []))

      with true <- flat?,
           {:ok, graph} <- Nx.Vulkan.GraphEncoding.encode(parameters, outputs) do
        templates = Enum.map(outputs, &Nx.to_template/1)

        fn [params] ->
          inputs = Enum.map(params, &device_ref(&1.()))
          refs = Nx.Vulkan.unwrap!(Nx.Vulkan.NIF.plan_run(graph, inputs))
          tensors = Enum.zip_with(templates, refs, &Nx.Vulkan.Backend.from_ref/2)

          {rebuilt, []} =
            Composite.traverse(result, tensors, fn _, [head | tail] -> {head, tail} end)

          [rebuilt]
        end
      else
        _ -> nil
      end
    end

    defp device_ref(tensor) do
      %Nx.Tensor{data: %Nx.Vulkan.Backend{ref: ref}} =
        Nx.backend_transfer(tensor, Nx.Vulkan.Backend)

      ref
    end

    # Parameters arrive as functions returning tensors of any backend.
    defp on_device(parameters) do
      Enum.map(parameters, fn parameter ->
        fn -> Nx.backend_transfer(parameter.(), Nx.Vulkan.Backend) end
      end)
    end
  end
end
