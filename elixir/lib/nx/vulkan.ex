defmodule Nx.Vulkan do
  @moduledoc """
  Helpers around the nxvk NIF: devices, counters and strict mode.

  These work without Nx. `Nx.Vulkan.Backend` (compiled only when Nx is a dependency) is the
  Nx backend.

  Strict mode decides what happens when an op has no GPU path and would run on the host:
  `:allow` runs it (counted), `:warn` also logs it once per op and dtype, `:raise` refuses it
  with an error. The mode is process-wide in nxvk (one setting for the whole VM), not per BEAM
  process: `with_strict/2` sets it for the duration of a function and restores it after.
  """

  @doc "Every Vulkan device the loader sees, as maps (`:index`, `:name`, `:driver`, ...)."
  def devices, do: unwrap!(Nx.Vulkan.NIF.devices())

  @doc "The default device's name, driver and capabilities, opening it if needed."
  def device_info, do: unwrap!(Nx.Vulkan.NIF.device_info())

  @doc """
  Makes the device `selector` names the default (an index into `devices/0`, or a substring of
  its name, driver or driver info); `nil` returns to `NXVK_DEVICE` or the preferred device.
  Tensors made before keep their device.
  """
  def open_device(selector \\ nil) do
    selector = if is_integer(selector), do: Integer.to_string(selector), else: selector
    unwrap!(Nx.Vulkan.NIF.open_device(selector))
  end

  @doc "Waits until the default device has finished all submitted work."
  def synchronize, do: unwrap!(Nx.Vulkan.NIF.synchronize())

  @doc """
  The default device's counters: dispatches, submits, bytes moved, pool traffic, pipeline
  builds, `:device_bytes_live`, and `:host_fallbacks` as `%{op:, dtype:, count:}` maps.
  """
  def counters, do: unwrap!(Nx.Vulkan.NIF.counters())

  @doc "The total number of host fallbacks taken so far."
  def fallback_count, do: counters().host_fallbacks_total

  @doc "The strict mode in force: `:allow`, `:warn` or `:raise`."
  def strict, do: unwrap!(Nx.Vulkan.NIF.strict())

  @doc "Sets the strict mode (`nil` returns to `NXVK_STRICT`); returns the previous mode."
  def set_strict(mode) when mode in [:allow, :warn, :raise, nil],
    do: unwrap!(Nx.Vulkan.NIF.set_strict(mode))

  @doc """
  Runs `fun` with strict mode `mode` and restores the previous mode afterwards, even when
  `fun` raises. The setting is VM-wide while `fun` runs.
  """
  def with_strict(mode, fun) when mode in [:allow, :warn, :raise] and is_function(fun, 0) do
    previous = set_strict(mode)

    try do
      fun.()
    after
      set_strict(previous)
    end
  end

  @doc "Returns the value of an `{:ok, value}` NIF reply, or raises with the error message."
  def unwrap!({:ok, value}), do: value
  def unwrap!(:ok), do: :ok
  def unwrap!({:error, message}) when is_binary(message), do: raise(RuntimeError, message)
end
