# The compiler task that builds the NIF lives outside lib/ so it exists before lib/ is compiled
# (Nx.Vulkan.NIF loads the library as soon as the Elixir compiler defines it).
Code.require_file("mix/tasks/compile.nxvk.ex", __DIR__)

defmodule NxVulkan.MixProject do
  use Mix.Project

  # Nx is on no registry the CI machine reaches, so it is not a default dependency: the NIF
  # layer and its tests need none. Set NX_PATH to a checkout of elixir-nx/nx's `nx` folder to
  # compile the Nx-dependent modules (Nx.Vulkan.Backend, Nx.Vulkan.Compiler) as well; when hex
  # is unreachable too, COMPLEX_PATH and TELEMETRY_PATH point at checkouts of Nx's two
  # dependencies (elixir-nx/complex, beam-telemetry/telemetry).
  defp deps do
    case System.get_env("NX_PATH") do
      blank when blank in [nil, ""] -> []
      nx_path -> [{:nx, path: nx_path} | nx_dependency_checkouts()]
    end
  end

  defp nx_dependency_checkouts do
    for {app, variable} <- [complex: "COMPLEX_PATH", telemetry: "TELEMETRY_PATH"],
        path = System.get_env(variable),
        path not in [nil, ""],
        do: {app, path: path, override: true}
  end

  def project do
    [
      app: :nx_vulkan,
      version: "0.1.0",
      elixir: "~> 1.14",
      start_permanent: Mix.env() == :prod,
      compilers: [:nxvk | Mix.compilers()],
      nxvk: [
        # The Cargo workspace that holds crates/nxvk-nif.
        workspace: Path.expand("..", __DIR__)
      ],
      deps: deps()
    ]
  end

  def application do
    [extra_applications: [:logger]]
  end
end
