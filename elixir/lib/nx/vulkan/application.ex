defmodule Nx.Vulkan.Application do
  @moduledoc false
  # Starts the process that owns the compiled-plan cache (Nx.Vulkan.PlanCache).

  use Application

  @impl true
  def start(_type, _args) do
    Supervisor.start_link([Nx.Vulkan.PlanCache],
      strategy: :one_for_one,
      name: Nx.Vulkan.Supervisor
    )
  end
end
