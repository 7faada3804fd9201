defmodule Nx.Vulkan.NIF do
  @moduledoc false
  # The raw NIF (crates/nxvk-nif). Every function returns `{:ok, value}` or
  # `{:error, message}` (a panic in Rust comes back as an error too); shapes are tuples.
  # Nx.Vulkan and Nx.Vulkan.Backend are the interfaces meant for users.

  @on_load :__load_nif__

  # The library is priv/libnxvk_nif.so (`mix compile` puts it there; :erlang.load_nif/2 adds
  # the `.so`). Anything but :ok makes the module fail to load, with this reason in the log.
  def __load_nif__ do
    case :code.priv_dir(:nx_vulkan) do
      {:error, reason} -> {:error, {:no_priv_dir, reason}}
      priv -> :erlang.load_nif(:filename.join(priv, ~c"libnxvk_nif"), 0)
    end
  end

  # --- Creation and data movement ---
  def from_binary(_binary, _dtype, _shape), do: :erlang.nif_error(:nif_not_loaded)
  def to_binary(_tensor), do: :erlang.nif_error(:nif_not_loaded)

  # --- Shape ---
  def shape(_tensor), do: :erlang.nif_error(:nif_not_loaded)
  def dtype(_tensor), do: :erlang.nif_error(:nif_not_loaded)
  def reshape(_tensor, _shape), do: :erlang.nif_error(:nif_not_loaded)
  def transpose(_tensor, _permutation), do: :erlang.nif_error(:nif_not_loaded)
  def squeeze(_tensor, _axes), do: :erlang.nif_error(:nif_not_loaded)
  def broadcast(_tensor, _shape, _axes), do: :erlang.nif_error(:nif_not_loaded)
  def slice(_tensor, _starts, _lengths), do: :erlang.nif_error(:nif_not_loaded)

  # --- Data movement (new memory) ---
  def contiguous(_tensor), do: :erlang.nif_error(:nif_not_loaded)
  def reverse(_tensor, _axes), do: :erlang.nif_error(:nif_not_loaded)
  def strided_slice(_tensor, _starts, _lengths, _steps), do: :erlang.nif_error(:nif_not_loaded)
  def slice_at(_tensor, _starts, _lengths, _steps), do: :erlang.nif_error(:nif_not_loaded)
  def pad(_tensor, _value, _config), do: :erlang.nif_error(:nif_not_loaded)
  def pad_as(_tensor, _value, _config, _dtype), do: :erlang.nif_error(:nif_not_loaded)
  def concatenate(_tensors, _axis), do: :erlang.nif_error(:nif_not_loaded)
  def concatenate_as(_tensors, _axis, _dtype), do: :erlang.nif_error(:nif_not_loaded)
  def stack(_tensors, _axis), do: :erlang.nif_error(:nif_not_loaded)
  def put_slice(_tensor, _starts, _update), do: :erlang.nif_error(:nif_not_loaded)
  def put_slice_as(_tensor, _starts, _update, _dtype), do: :erlang.nif_error(:nif_not_loaded)

  # --- Element-wise ---
  def binary_op(_name, _left, _right), do: :erlang.nif_error(:nif_not_loaded)
  def unary_op(_name, _tensor), do: :erlang.nif_error(:nif_not_loaded)
  def as_type(_tensor, _dtype), do: :erlang.nif_error(:nif_not_loaded)
  def op_names, do: :erlang.nif_error(:nif_not_loaded)

  # --- Reductions ---
  def reduce(_name, _tensor, _axes, _keep_axes, _tie_break),
    do: :erlang.nif_error(:nif_not_loaded)

  # --- Creation ---
  def iota(_dtype, _shape, _axis), do: :erlang.nif_error(:nif_not_loaded)
  def eye(_dtype, _shape), do: :erlang.nif_error(:nif_not_loaded)
  def bitcast(_tensor, _dtype), do: :erlang.nif_error(:nif_not_loaded)

  # --- Selection, scans, contractions ---
  def select(_pred, _on_true, _on_false), do: :erlang.nif_error(:nif_not_loaded)
  def clip(_tensor, _min, _max), do: :erlang.nif_error(:nif_not_loaded)
  def cumulative(_name, _tensor, _axis, _reverse), do: :erlang.nif_error(:nif_not_loaded)

  def dot(_a, _contract_a, _batch_a, _b, _contract_b, _batch_b),
    do: :erlang.nif_error(:nif_not_loaded)

  def conv(_input, _kernel, _options), do: :erlang.nif_error(:nif_not_loaded)

  # --- Windows and linear algebra ---
  def window_reduce(_name, _tensor, _window_dimensions, _options),
    do: :erlang.nif_error(:nif_not_loaded)

  def window_scatter(_name, _tensor, _source, _init_value, _window_dimensions, _options),
    do: :erlang.nif_error(:nif_not_loaded)

  def triangular_solve(_a, _b, _lower, _left_side, _transpose_a),
    do: :erlang.nif_error(:nif_not_loaded)

  def cholesky(_a), do: :erlang.nif_error(:nif_not_loaded)
  def lu(_a), do: :erlang.nif_error(:nif_not_loaded)
  def qr(_a, _complete), do: :erlang.nif_error(:nif_not_loaded)
  def eigh(_a), do: :erlang.nif_error(:nif_not_loaded)
  def determinant(_a), do: :erlang.nif_error(:nif_not_loaded)
  def solve(_a, _b), do: :erlang.nif_error(:nif_not_loaded)

  # --- Indexing and sorting ---
  def gather(_tensor, _indices, _axes), do: :erlang.nif_error(:nif_not_loaded)
  def take(_tensor, _indices, _axis), do: :erlang.nif_error(:nif_not_loaded)
  def take_along_axis(_tensor, _indices, _axis), do: :erlang.nif_error(:nif_not_loaded)
  def indexed_put(_target, _indices, _updates, _axes), do: :erlang.nif_error(:nif_not_loaded)
  def indexed_add(_target, _indices, _updates, _axes), do: :erlang.nif_error(:nif_not_loaded)
  def sort(_tensor, _axis, _direction), do: :erlang.nif_error(:nif_not_loaded)
  def argsort(_tensor, _axis, _direction, _index_dtype), do: :erlang.nif_error(:nif_not_loaded)
  def top_k(_tensor, _k), do: :erlang.nif_error(:nif_not_loaded)

  # --- Fourier transforms (kind is :fft or :ifft) ---
  def fft(_kind, _tensor, _length, _axis), do: :erlang.nif_error(:nif_not_loaded)
  def fft2(_kind, _tensor, _lengths, _axes), do: :erlang.nif_error(:nif_not_loaded)
  def rfft(_tensor, _length, _axis), do: :erlang.nif_error(:nif_not_loaded)
  def irfft(_tensor, _length, _axis), do: :erlang.nif_error(:nif_not_loaded)

  # --- Compiled graphs (nxvk-fusion's encoding) ---
  def plan_run(_graph, _inputs), do: :erlang.nif_error(:nif_not_loaded)
  def plan_counters, do: :erlang.nif_error(:nif_not_loaded)

  # --- Host fallback gate (counted; refused under strict mode) ---
  def host_fallback(_op, _dtype, _shapes, _process_mode), do: :erlang.nif_error(:nif_not_loaded)
  def op_path(_kind, _name, _dtypes), do: :erlang.nif_error(:nif_not_loaded)

  # --- Devices, counters, strict mode ---
  def devices, do: :erlang.nif_error(:nif_not_loaded)
  def device_info, do: :erlang.nif_error(:nif_not_loaded)
  def open_device(_selector), do: :erlang.nif_error(:nif_not_loaded)
  def synchronize, do: :erlang.nif_error(:nif_not_loaded)
  def trim_pool, do: :erlang.nif_error(:nif_not_loaded)
  def counters, do: :erlang.nif_error(:nif_not_loaded)
  def set_strict(_mode), do: :erlang.nif_error(:nif_not_loaded)
  def strict, do: :erlang.nif_error(:nif_not_loaded)

  # --- Tests only ---
  def test_panic, do: :erlang.nif_error(:nif_not_loaded)
end
