defmodule Nx.Vulkan.PlanCache do
  @moduledoc """
  Compiled plans of `Nx.Vulkan.Compiler`, by key: the defn key, the input templates (shapes,
  types, names) and the compiler options that change the plan.

  The cache lives in the calling process (its process dictionary), not in ETS or another
  process: today's plans are `Nx.Defn.Evaluator` closures over expression graphs whose
  subtrees are heavily shared, and any copy out of the process heap (ETS, persistent_term,
  a message) flattens the sharing. Measured: the plan of a gradient through `Nx.LinAlg.svd`
  is about 6e9 words flat, and storing it in ETS took the VM down. Plans that are NIF
  resources (the fused path) can move to a shared table.

  A process keeps at most `@max_plans` plans; past that it forgets them all, so a program
  that traces unboundedly many keys cannot grow it without bound.
  """

  @plans_key {__MODULE__, :plans}
  @max_plans 256

  @doc "The plan stored under `key`, building and storing it with `build` when absent."
  def fetch(key, build) when is_function(build, 0) do
    plans = Process.get(@plans_key, %{})

    case plans do
      %{^key => plan} ->
        plan

      %{} ->
        plan = build.()
        plans = if map_size(plans) >= @max_plans, do: %{}, else: plans
        Process.put(@plans_key, Map.put(plans, key, plan))
        plan
    end
  end

  @doc "The number of plans the calling process holds."
  def size, do: map_size(Process.get(@plans_key, %{}))

  @doc "Forgets the calling process's plans."
  def clear do
    Process.delete(@plans_key)
    :ok
  end
end
