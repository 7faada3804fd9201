# The compiler task that builds the NIF lives outside lib/ so it exists before lib/ is compiled
# (Nx.Vulkan.NIF loads the library as soon as the Elixir compiler defines it).
Code.require_file("mix/tasks/compile.nxvk.ex", __DIR__)

defmodule NxVulkan.MixProject do
  use Mix.Project

  # The package depends on {:nx, "~> 0.13"} where it can be fetched: hex is available and
  # Elixir is 1.17+ (Nx 0.13's floor). Nx is on no registry the CI machine reaches (Debian 12,
  # Elixir 1.14, no hex), and the NIF layer and its tests need none, so there the dependency is
  # left out and the Nx-dependent modules (Nx.Vulkan.Backend, Nx.Vulkan.Compiler) are not
  # compiled. NX_PATH (a checkout of elixir-nx/nx's `nx` folder) uses a local Nx instead; when
  # hex is unreachable too, COMPLEX_PATH and TELEMETRY_PATH point at checkouts of Nx's two
  # dependencies (elixir-nx/complex, beam-telemetry/telemetry).
  defp deps do
    nx_path = System.get_env("NX_PATH", "")

    cond do
      nx_path != "" -> [{:nx, path: nx_path} | nx_dependency_checkouts()]
      nx_fetchable?() -> [{:nx, "~> 0.13"}]
      true -> []
    end
  end

  defp nx_fetchable?,
    do: Code.ensure_loaded?(Hex) and Version.match?(System.version(), ">= 1.17.0")

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
