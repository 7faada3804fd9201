defmodule Nx.Vulkan do
  @moduledoc """
  Helpers around the nxvk NIF: devices, counters and strict mode.

  These work without Nx. `Nx.Vulkan.Backend` (compiled only when Nx is a dependency) is the
  Nx backend.

  Strict mode decides what happens when an op has no GPU path and would run on the host:
  `:allow` runs it (counted), `:warn` also logs it once per op and dtype, `:raise` refuses it
  with an error. Two scopes exist:

    * VM-wide (`set_strict/1`, `with_strict/2`, env `NXVK_STRICT`): nxvk's own setting, which
      every host fallback obeys, including those inside the kernel catalog (complex and
      sub-byte types, f64 transcendentals).
    * Per BEAM process (`with_process_strict/2`): obeyed by every fallback `Nx.Vulkan.Backend`
      takes in that process, both for callbacks without a kernel and for catalog ops whose
      operand types take the catalog's fallback (asked of the NIF's `op_path/3` before the op
      runs, only while a process scope is set). The stricter of the two scopes wins.

  Every fallback is counted by (op, dtype) in `counters/0` (VM-wide). `with_fallback_count/1`
  counts, for the calling process alone, the fallbacks that pass the backend's gate (callbacks
  without a kernel); a catalog op's internal fallback (say, a complex add) shows only in
  `counters/0`, since nxvk counts it inside the op.
  """

  require Logger

  @process_strict_key {__MODULE__, :process_strict}
  @process_fallbacks_key {__MODULE__, :process_fallbacks}
  @process_warned_key {__MODULE__, :process_warned}

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

  @doc """
  Runs `fun` with strict mode `mode` for the calling process only, and restores the previous
  process mode afterwards. It governs `Nx.Vulkan.Backend`'s host fallbacks made by this process
  (the VM-wide mode still applies: the stricter wins).
  """
  def with_process_strict(mode, fun)
      when mode in [:allow, :warn, :raise] and is_function(fun, 0) do
    previous = Process.put(@process_strict_key, mode)

    try do
      fun.()
    after
      if previous,
        do: Process.put(@process_strict_key, previous),
        else: Process.delete(@process_strict_key)
    end
  end

  @doc "The calling process's strict mode, or `nil` when it has none (the VM-wide mode rules)."
  def process_strict, do: Process.get(@process_strict_key)

  @doc """
  Runs `fun` and returns `{result, count}`, where `count` is the number of host fallbacks
  `Nx.Vulkan.Backend` took in the calling process while `fun` ran.
  """
  def with_fallback_count(fun) when is_function(fun, 0) do
    before = Process.get(@process_fallbacks_key, 0)
    result = fun.()
    {result, Process.get(@process_fallbacks_key, 0) - before}
  end

  @doc false
  # The gate every backend host fallback passes before its operands leave the device: nxvk
  # counts it by (op, dtype) and refuses it under strict mode (VM-wide or this process's).
  def host_fallback!(op, dtype, shapes) when is_atom(op) and is_binary(dtype) do
    mode = process_strict()
    unwrap!(Nx.Vulkan.NIF.host_fallback(op, dtype, shapes, mode))
    Process.put(@process_fallbacks_key, Process.get(@process_fallbacks_key, 0) + 1)

    if mode == :warn, do: warn_once(op, dtype), else: :ok
  end

  @doc false
  # Before a catalog op (kind :binary, :unary or :reduce) in a process with a strict scope:
  # when the catalog would take its host fallback, :raise refuses it here (through the gate,
  # which counts the refusal) and :warn logs it (the catalog counts the fallback it takes).
  def check_catalog_path!(kind, op, dtypes, shapes) do
    case process_strict() do
      mode when mode in [:raise, :warn] ->
        case unwrap!(Nx.Vulkan.NIF.op_path(kind, op, dtypes)) do
          :gpu -> :ok
          {:host, dtype} when mode == :raise -> host_fallback!(op, dtype, shapes)
          {:host, dtype} -> warn_once(op, dtype)
        end

      _allow_or_none ->
        :ok
    end
  end

  defp warn_once(op, dtype) do
    warned = Process.get(@process_warned_key, MapSet.new())

    unless MapSet.member?(warned, {op, dtype}) do
      Process.put(@process_warned_key, MapSet.put(warned, {op, dtype}))
      Logger.warning("nxvk: #{op} on #{dtype} runs on the host (no GPU path)")
    end

    :ok
  end

  @doc "Returns the value of an `{:ok, value}` NIF reply, or raises with the error message."
  def unwrap!({:ok, value}), do: value
  def unwrap!(:ok), do: :ok
  def unwrap!({:error, message}) when is_binary(message), do: raise(RuntimeError, message)
end
