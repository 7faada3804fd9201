defmodule Nx.Vulkan.PlanCache do
  @moduledoc """
  Compiled plans of `Nx.Vulkan.Compiler`, by key: the defn key, the input templates (shapes,
  types, names) and the compiler options that change the plan.

  A public ETS table read without a process hop; this process only owns it. Two processes
  compiling the same key at once may both build the plan: the first stored wins and both are
  correct, which is cheaper than serialising every compile through one process. The table is
  emptied when it reaches `@max_plans` entries, so programs that trace unboundedly many keys
  cannot grow it without bound.
  """

  use GenServer

  @table __MODULE__
  @max_plans 4_096

  @doc false
  def start_link(_options), do: GenServer.start_link(__MODULE__, :ok, name: __MODULE__)

  @doc "The plan stored under `key`, building and storing it with `build` when absent."
  def fetch(key, build) when is_function(build, 0) do
    case :ets.lookup(@table, key) do
      [{^key, plan}] ->
        plan

      [] ->
        plan = build.()
        if :ets.info(@table, :size) >= @max_plans, do: :ets.delete_all_objects(@table)
        :ets.insert_new(@table, {key, plan})
        plan
    end
  end

  @doc "The number of plans stored."
  def size, do: :ets.info(@table, :size)

  @doc "Forgets every stored plan."
  def clear, do: :ets.delete_all_objects(@table)

  @impl true
  def init(:ok) do
    :ets.new(@table, [:set, :public, :named_table, read_concurrency: true])
    {:ok, nil}
  end
end
