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

    # The printed f32/f64 digits differ from Nx.BinaryBackend's in the last place or two:
    # GLSL's pow (x^2 through exp2/log2), exp, log and atan2 are within a few ulp of Erlang's
    # :math, and sums add in tree order. The kernels are checked against host references to
    # stated ulp bounds in crates/nxvk-kernels/tests/elementwise.rs and reduce.rs.
    @rounding_doctests [atanh: 1, atan2: 2, erfc: 1, logsumexp: 2]
    @linalg_rounding_doctests [
      cholesky: 1,
      determinant: 1,
      lu: 1,
      matrix_power: 2,
      least_squares: 3,
      pinv: 2
    ]

    # Nx's own erf_inv (Complex.erf_inv) is accurate to about 3e-8 relative: its doctest
    # prints 0.08885598780483887 for erf_inv(0.1), whose erf is 0.09999999698918151; nxvk's
    # f64 result, 0.08885599049425769, is the one whose erf is 0.1.
    @reference_inaccurate_doctests [erf_inv: 1]

    doctest Nx,
      except:
        [:moduledoc] ++
          @unrelated_doctests ++
          @rounding_doctests ++ @reference_inaccurate_doctests

    doctest Nx.LinAlg, except: @linalg_rounding_doctests
  end
end
