# Runs only with Nx present (NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.NxDoctestTest do
    @moduledoc """
    Nx's own doctests with Nx.Vulkan.Backend as the default backend.

    Strict mode is nxvk's VM-wide setting: `NXVK_STRICT=raise mix test
    test/nx_doctest_test.exs` refuses every host fallback, so a doctest passes only if it ran
    on the GPU; with `NXVK_STRICT=allow` fallbacks run on Nx.BinaryBackend (counted). The
    counts of both runs are in docs/ELIXIR_RESULTS.md.
    """

    use ExUnit.Case, async: false

    setup do
      Nx.default_backend(Nx.Vulkan.Backend)
      :ok
    end

    # Not about a backend's computation.
    @unrelated_doctests [default_backend: 1]

    doctest Nx, except: [:moduledoc] ++ @unrelated_doctests
    doctest Nx.LinAlg
  end
end
