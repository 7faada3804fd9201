defmodule Mix.Tasks.Compile.Nxvk do
  @moduledoc """
  Builds the nxvk NIF with cargo and copies it to the application's `priv/libnxvk_nif.so`.

  Runs `cargo build -p nxvk-nif` in the Cargo workspace named by the project's
  `nxvk: [workspace: ...]` option (the repository root). Cargo is found as `$CARGO`, on the
  `PATH`, or in `~/.cargo/bin`. Cargo's own up-to-date check makes a no-op build cost well under
  a second, so the task runs it every time and copies the library only when it changed.

  Environment:

    * `NXVK_NIF_PATH` - a prebuilt `libnxvk_nif.so` to copy instead of running cargo.
    * `NXVK_NIF_PROFILE` - `release` or `debug`. Defaults to `release` in `MIX_ENV=prod` and to
      `debug` otherwise, which reuses the artifacts of `cargo test` (the workspace builds its
      dependencies optimised even in the dev profile).
    * `CARGO_TARGET_DIR` - honoured, as cargo honours it.
  """
  use Mix.Task.Compiler

  @library "libnxvk_nif.so"

  @impl true
  def run(_args) do
    config = Mix.Project.config()
    # The application's priv/ in _build, where :code.priv_dir/1 looks. When elixir/priv/ exists,
    # Mix makes this a symlink to it, so the library lands in elixir/priv/ (git-ignored).
    priv = Path.join(Mix.Project.app_path(config), "priv")
    File.mkdir_p!(priv)

    with {:ok, built} <- locate_library(config) do
      copy_if_changed(built, Path.join(priv, @library))
      {:ok, []}
    else
      {:error, message} ->
        Mix.shell().error("nxvk: " <> message)
        {:error, [diagnostic(message)]}
    end
  end

  defp locate_library(config) do
    case System.get_env("NXVK_NIF_PATH") do
      path when path in [nil, ""] -> cargo_build(config)
      path -> if File.regular?(path), do: {:ok, path}, else: {:error, "NXVK_NIF_PATH=#{path} is not a file"}
    end
  end

  defp cargo_build(config) do
    workspace = Keyword.fetch!(Keyword.fetch!(config, :nxvk), :workspace)
    profile = profile()
    profile_arguments = if profile == "release", do: ["--release"], else: []

    with {:ok, cargo} <- find_cargo() do
      arguments = ["build", "--quiet", "-p", "nxvk-nif"] ++ profile_arguments

      case System.cmd(cargo, arguments, cd: workspace, stderr_to_stdout: true, into: IO.stream(:stdio, :line)) do
        {_, 0} ->
          target = System.get_env("CARGO_TARGET_DIR") || Path.join(workspace, "target")
          {:ok, Path.join([target, profile, @library])}

        {_, status} ->
          {:error, "`cargo #{Enum.join(arguments, " ")}` in #{workspace} exited with status #{status}"}
      end
    end
  end

  defp profile do
    case System.get_env("NXVK_NIF_PROFILE") do
      profile when profile in ["release", "debug"] -> profile
      _ -> if Mix.env() == :prod, do: "release", else: "debug"
    end
  end

  defp find_cargo do
    candidates = [
      System.get_env("CARGO"),
      System.find_executable("cargo"),
      Path.expand("~/.cargo/bin/cargo")
    ]

    case Enum.find(candidates, &(&1 && File.regular?(&1))) do
      nil -> {:error, "cargo not found (set CARGO, put it on PATH, or set NXVK_NIF_PATH)"}
      cargo -> {:ok, cargo}
    end
  end

  defp copy_if_changed(source, destination) do
    unless File.exists?(destination) and same_file_contents?(source, destination) do
      # Write a new file and rename it: a VM that has the old library loaded keeps its mapping.
      # The temporary name is per OS process, so two compilers sharing one _build do not race.
      temporary = "#{destination}.#{System.pid()}.tmp"
      File.cp!(source, temporary)
      File.rename!(temporary, destination)
    end
  end

  defp same_file_contents?(left, right) do
    %{size: left_size, mtime: left_mtime} = File.stat!(left)
    %{size: right_size, mtime: right_mtime} = File.stat!(right)
    left_size == right_size and left_mtime <= right_mtime
  end

  defp diagnostic(message) do
    %Mix.Task.Compiler.Diagnostic{
      compiler_name: "nxvk",
      file: "mix.exs",
      message: message,
      position: nil,
      severity: :error
    }
  end
end
