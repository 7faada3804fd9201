# Compiled only when Nx is a dependency (set NX_PATH, see README.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.Backend do
    @moduledoc """
    An Nx backend on nxvk (SKELETON).

    Today it covers data movement (`from_binary`, `to_binary`, copy, transfer, deallocate,
    inspect), the views (reshape, squeeze, transpose, broadcast, unit-step slice), `as_type`
    and every element-wise op of the op table. It does not yet implement the rest of the
    `Nx.Backend` behaviour (reductions, dot, indexing, linear algebra, ...), so it does not
    declare `@behaviour Nx.Backend`. It has not been run against Nx in CI: Nx is on no registry
    the CI machines reach.

        Nx.default_backend(Nx.Vulkan.Backend)
    """

    defstruct [:ref]

    # False in tests (config/config.exs), as in EXLA and Torchx, so Nx's doctests match.
    @inspect_backend Application.compile_env(:nx_vulkan, :inspect_backend, true)

    alias Nx.Tensor, as: T
    alias Nx.Vulkan.NIF

    # --- Creation and data movement ---

    def init(opts), do: opts

    def from_binary(%T{shape: shape, type: type} = out, binary, _backend_options) do
      ref = unwrap!(NIF.from_binary(binary, dtype_name(type), shape))
      put_ref(out, ref)
    end

    def to_binary(%T{data: %__MODULE__{ref: ref}, type: {_, bits}} = tensor, limit) do
      binary = unwrap!(NIF.to_binary(ref))

      if limit < Nx.size(tensor) do
        binary_part(binary, 0, div(limit * bits + 7, 8))
      else
        binary
      end
    end

    def backend_copy(tensor, Nx.Tensor, backend_options),
      do: backend_copy(tensor, Nx.BinaryBackend, backend_options)

    def backend_copy(tensor, backend, backend_options) do
      backend.from_binary(tensor, to_binary(tensor, Nx.size(tensor)), backend_options)
    end

    def backend_transfer(tensor, __MODULE__, _backend_options), do: tensor

    def backend_transfer(tensor, backend, backend_options),
      do: backend_copy(tensor, backend, backend_options)

    # Buffers are freed by the BEAM's garbage collector when the last reference goes.
    def backend_deallocate(_tensor), do: :ok

    def inspect(%T{} = tensor, inspect_opts) do
      limit =
        if inspect_opts.limit == :infinity, do: Nx.size(tensor), else: inspect_opts.limit + 1

      binary = to_binary(tensor, min(limit, Nx.size(tensor)))
      document = Nx.Backend.inspect(tensor, binary, inspect_opts)

      if @inspect_backend do
        Inspect.Algebra.concat(["Nx.Vulkan.Backend", Inspect.Algebra.line(), document])
      else
        document
      end
    end

    # --- Shape (views) ---

    def reshape(%T{shape: shape} = out, tensor),
      do: put_ref(out, unwrap!(NIF.reshape(ref(tensor), shape)))

    def squeeze(out, tensor, axes), do: put_ref(out, unwrap!(NIF.squeeze(ref(tensor), axes)))

    def transpose(out, tensor, axes), do: put_ref(out, unwrap!(NIF.transpose(ref(tensor), axes)))

    def broadcast(out, tensor, shape, axes),
      do: put_ref(out, unwrap!(NIF.broadcast(ref(tensor), shape, axes)))

    def slice(out, tensor, starts, lengths, strides) do
      if Enum.all?(strides, &(&1 == 1)) and Enum.all?(starts, &is_integer/1) do
        put_ref(out, unwrap!(NIF.slice(ref(tensor), starts, lengths)))
      else
        # Strided slices and tensor start indices: not native yet; run on Nx.BinaryBackend.
        binary_tensor = backend_transfer(tensor, Nx.BinaryBackend, [])

        result = Nx.BinaryBackend.slice(out, binary_tensor, starts, lengths, strides)

        backend_transfer(result, __MODULE__, [])
      end
    end

    # --- Element-wise ---

    def as_type(%T{type: type} = out, tensor),
      do: put_ref(out, unwrap!(NIF.as_type(ref(tensor), dtype_name(type))))

    for op <- Nx.Vulkan.Ops.binary() do
      def unquote(op)(out, left, right) do
        result = unwrap!(NIF.binary_op(unquote(op), ref(left), ref(right)))
        put_ref(out, cast_to(result, out.type))
      end
    end

    for op <- Nx.Vulkan.Ops.unary() do
      def unquote(op)(out, tensor) do
        result = unwrap!(NIF.unary_op(unquote(op), ref(tensor)))
        put_ref(out, cast_to(result, out.type))
      end
    end

    # --- Helpers ---

    @doc false
    def dtype_name({:f, 8}), do: "f8"
    def dtype_name({:f8_e4m3fn, 8}), do: "f8_e4m3fn"
    def dtype_name({kind, bits}), do: "#{kind}#{bits}"

    defp cast_to(ref, type) do
      name = dtype_name(type)

      case NIF.dtype(ref) do
        {:ok, ^name} -> ref
        {:ok, _} -> unwrap!(NIF.as_type(ref, name))
      end
    end

    defp ref(%T{data: %__MODULE__{ref: ref}}), do: ref

    defp ref(%T{} = tensor) do
      %T{data: %__MODULE__{ref: ref}} = Nx.backend_transfer(tensor, __MODULE__)
      ref
    end

    defp put_ref(%T{} = out, ref), do: %{out | data: %__MODULE__{ref: ref}}

    defp unwrap!(reply), do: Nx.Vulkan.unwrap!(reply)
  end
end
