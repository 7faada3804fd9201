# Compiled only when Nx is a dependency (set NX_PATH, see README.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.Backend do
    @moduledoc """
    An Nx backend on nxvk: tensors live in Vulkan device memory and ops run as nxvk kernels.

        Nx.default_backend(Nx.Vulkan.Backend)

    Native (GPU) today: creation from binaries and constants, iota and eye, every view (reshape, squeeze,
    transpose, broadcast, unit-step slice, bitcast), data movement (strided slice, pad,
    reverse, concatenate, stack, put_slice, batching), `as_type`, every element-wise op of
    nxvk's op table, select and clip, the reductions (sum, product, reduce_max/min, all, any,
    argmax/argmin), dot, conv, gather, indexed_put/add, sort, argsort, fft and ifft; and in
    `block/4`, the cumulative ops, take, take_along_axis, top_k, fft2/ifft2, rfft and irfft.
    The window family (window_sum/product/max/min, window_scatter_max/min) runs natively on
    real types, window_sum/product and triangular_solve on complex ones too, and in `block/4`
    so do Nx.LinAlg's cholesky, lu, determinant and solve (real and complex types).
    `reduce` and `window_reduce` with an arbitrary function trace the function into an
    `Nx.Defn.Expr` and run it as a one-node compiled graph (nxvk-fusion's reducer kernels).
    What has no kernel (a function the graph encoding or the GPU fold cannot express; complex
    operands of window_max/min and window_scatter_max/min, which Nx refuses too) runs on
    `Nx.BinaryBackend` through one gate,
    `Nx.Vulkan.host_fallback!/3`, which counts each one by (op, dtype) and refuses it under
    strict mode: no host path is silent. Other blocks run Nx's default implementation, built
    from the callbacks above.
    """

    @behaviour Nx.Backend

    defstruct [:ref]

    # False in tests (config/config.exs), as in EXLA and Torchx, so Nx's doctests match.
    @inspect_backend Application.compile_env(:nx_vulkan, :inspect_backend, true)

    alias Nx.Tensor, as: T
    alias Nx.Vulkan.NIF

    @eight_bit_floats [{:f, 8}, {:f8_e4m3fn, 8}]

    ## Creation

    @impl true
    def init(opts), do: opts

    # Sub-byte tensors may arrive as bitstrings; the NIF takes whole bytes (zero padding).
    @impl true
    def from_binary(%T{shape: shape, type: type} = out, bits, _backend_options) do
      binary =
        case rem(bit_size(bits), 8) do
          0 -> bits
          used -> <<bits::bitstring, 0::size(8 - used)>>
        end

      put_ref(out, unwrap!(NIF.from_binary(binary, dtype_name(type), shape)))
    end

    # The literal is encoded once on the host (as from_binary would take it) and broadcast on
    # the device as a view; sub-byte types, which views cannot address per element, are
    # encoded whole.
    @impl true
    def constant(%T{shape: shape, type: {_, bits} = type} = out, number, _backend_options) do
      if bits < 8 do
        host = Nx.BinaryBackend.constant(out, number, [])
        from_binary(out, Nx.BinaryBackend.to_binary(host, Nx.size(shape)), [])
      else
        scalar = Nx.BinaryBackend.constant(%{out | shape: {}, names: []}, number, [])

        ref =
          unwrap!(NIF.from_binary(Nx.BinaryBackend.to_binary(scalar, 1), dtype_name(type), {}))

        put_ref(out, unwrap!(NIF.broadcast(ref, shape, [])))
      end
    end

    # iota and eye are nxvk-kernels' creation kernels; 8-bit floats, which the catalog cannot
    # write, take the counted host fallback.
    @impl true
    def iota(%T{type: type} = out, axis, _backend_options) when type in @eight_bit_floats,
      do: host_creation(:iota, out, [axis])

    def iota(%T{shape: shape, type: type} = out, axis, _backend_options),
      do: put_ref(out, unwrap!(NIF.iota(dtype_name(type), shape, axis)))

    @impl true
    def eye(%T{type: type} = out, _backend_options) when type in @eight_bit_floats,
      do: host_creation(:eye, out, [])

    def eye(%T{shape: shape, type: type} = out, _backend_options),
      do: put_ref(out, unwrap!(NIF.eye(dtype_name(type), shape)))

    @impl true
    def from_pointer(_pointer, _type, _shape, _backend_opts, _opts) do
      raise ArgumentError,
            "Nx.Vulkan.Backend does not import pointers (Vulkan memory is not shareable here)"
    end

    @impl true
    def to_pointer(_tensor, _opts) do
      raise ArgumentError,
            "Nx.Vulkan.Backend does not export pointers (Vulkan memory is not shareable here)"
    end

    ## Data movement between backends

    @impl true
    def to_binary(%T{data: %__MODULE__{ref: ref}, type: {_, bits}}, limit) do
      binary = unwrap!(NIF.to_binary(ref))
      # `limit` counts elements of the devectorized data; sub-byte types end on a bit, not a
      # byte, as Nx.BinaryBackend's binaries do.
      <<data::bitstring-size(min(limit * bits, bit_size(binary))), _::bitstring>> = binary
      data
    end

    # Device tensors are immutable (every op makes a new one), so a copy on this backend can
    # share the buffer.
    @impl true
    def backend_copy(tensor, __MODULE__, _backend_options), do: tensor

    def backend_copy(tensor, Nx.Tensor, backend_options),
      do: backend_copy(tensor, Nx.BinaryBackend, backend_options)

    def backend_copy(tensor, backend, backend_options) do
      backend.from_binary(tensor, to_binary(tensor, Nx.size(tensor)), backend_options)
    end

    @impl true
    def backend_transfer(tensor, __MODULE__, _backend_options), do: tensor

    def backend_transfer(tensor, backend, backend_options),
      do: backend_copy(tensor, backend, backend_options)

    # Buffers are freed by the BEAM's garbage collector when the last reference goes.
    @impl true
    def backend_deallocate(_tensor), do: :ok

    @impl true
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

    # Batches are views (unit-step slices of the leading axis); a repeated leftover batch
    # wraps around to the start, joined on the device.
    @impl true
    def to_batched(%T{shape: batch_shape} = out, %T{shape: shape} = tensor, opts) do
      batch_size = elem(batch_shape, 0)
      axis_size = elem(shape, 0)
      full_batches = div(axis_size, batch_size)
      remainder = rem(axis_size, batch_size)
      source = ref(tensor)
      rest = shape |> Tuple.delete_at(0) |> Tuple.to_list()

      leading = fn start, length ->
        unwrap!(NIF.slice(source, [start | Enum.map(rest, fn _ -> 0 end)], [length | rest]))
      end

      full =
        for index <- 0..(full_batches - 1)//1,
            do: put_ref(out, leading.(index * batch_size, batch_size))

      if remainder != 0 and opts[:leftover] == :repeat do
        tail = leading.(full_batches * batch_size, remainder)
        head = leading.(0, batch_size - remainder)
        full ++ [put_ref(out, unwrap!(NIF.concatenate([tail, head], 0)))]
      else
        full
      end
    end

    ## Shape

    # A view when the layout allows it; otherwise (a transposed or broadcast view) the
    # tensor is materialised on the device first.
    @impl true
    def reshape(%T{shape: shape} = out, tensor) do
      source = ref(tensor)

      case NIF.reshape(source, shape) do
        {:ok, view} ->
          put_ref(out, view)

        {:error, _not_a_view} ->
          put_ref(out, unwrap!(NIF.reshape(unwrap!(NIF.contiguous(source)), shape)))
      end
    end

    @impl true
    def squeeze(out, tensor, axes), do: put_ref(out, unwrap!(NIF.squeeze(ref(tensor), axes)))

    @impl true
    def transpose(out, tensor, axes), do: put_ref(out, unwrap!(NIF.transpose(ref(tensor), axes)))

    @impl true
    def broadcast(out, tensor, shape, axes),
      do: put_ref(out, unwrap!(NIF.broadcast(ref(tensor), shape, axes)))

    @impl true
    def reverse(out, tensor, axes), do: put_ref(out, unwrap!(NIF.reverse(ref(tensor), axes)))

    # Operands of other types than `out`'s are converted on the device while they are copied.
    @impl true
    def pad(%T{type: type} = out, tensor, pad_value, config) do
      result = NIF.pad_as(ref(tensor), ref(pad_value), config, dtype_name(type))
      put_ref(out, unwrap!(result))
    end

    # Unit steps at integer starts are views (starts clamped here as Nx clamps them); starts
    # given as tensors are read and clamped on the device, never read back; other steps copy.
    @impl true
    def slice(out, %T{shape: shape} = tensor, starts, lengths, strides) do
      cond do
        Enum.any?(starts, &is_struct(&1, T)) ->
          result = NIF.slice_at(ref(tensor), device_starts(starts), lengths, strides)
          put_ref(out, unwrap!(result))

        Enum.all?(strides, &(&1 == 1)) ->
          starts = clamp_starts(starts, Tuple.to_list(shape), lengths)
          put_ref(out, unwrap!(NIF.slice(ref(tensor), starts, lengths)))

        true ->
          put_ref(out, unwrap!(NIF.strided_slice(ref(tensor), starts, lengths, strides)))
      end
    end

    @impl true
    def put_slice(%T{type: type} = out, tensor, starts, update) do
      starts = if Enum.any?(starts, &is_struct(&1, T)), do: device_starts(starts), else: starts
      result = NIF.put_slice_as(ref(tensor), starts, ref(update), dtype_name(type))
      put_ref(out, unwrap!(result))
    end

    @impl true
    def concatenate(%T{type: type} = out, tensors, axis) do
      result = NIF.concatenate_as(Enum.map(tensors, &ref/1), axis, dtype_name(type))
      put_ref(out, unwrap!(result))
    end

    # nxvk-kernels' stack reshapes its operands as views, which a transposed operand refuses:
    # materialise them first (a no-op for contiguous ones).
    @impl true
    def stack(%T{type: type} = out, tensors, axis) do
      operands = Enum.map(tensors, &unwrap!(NIF.contiguous(ref_as(&1, type))))
      put_ref(out, unwrap!(NIF.stack(operands, axis)))
    end

    ## Element-wise

    @impl true
    def as_type(%T{type: type} = out, tensor),
      do: put_ref(out, unwrap!(NIF.as_type(ref(tensor), dtype_name(type))))

    @impl true
    def bitcast(%T{type: type} = out, tensor),
      do: put_ref(out, unwrap!(NIF.bitcast(ref(tensor), dtype_name(type))))

    # The branches (and clip's bounds) arrive in their own types: they are converted to the
    # output type first, as Nx.BinaryBackend converts each element.
    @impl true
    def select(%T{type: type} = out, pred, on_true, on_false) do
      result = NIF.select(ref(pred), ref_as(on_true, type), ref_as(on_false, type))
      put_ref(out, result |> unwrap!() |> cast_to(type))
    end

    @impl true
    def clip(%T{type: type} = out, tensor, min, max) do
      result = NIF.clip(ref_as(tensor, type), ref_as(min, type), ref_as(max, type))
      put_ref(out, result |> unwrap!() |> cast_to(type))
    end

    for op <- Nx.Vulkan.Ops.binary() do
      @impl true
      def unquote(op)(out, left, right) do
        check_catalog_path!(:binary, unquote(op), [left, right])
        result = unwrap!(NIF.binary_op(unquote(op), ref(left), ref(right)))
        put_ref(out, cast_to(result, out.type))
      end
    end

    # The op table has a few unary ops Nx composes from others (logical_not): those are
    # plain functions here, not callbacks.
    @callbacks Nx.Backend.behaviour_info(:callbacks)

    for op <- Nx.Vulkan.Ops.unary() do
      @impl {op, 2} in @callbacks
      def unquote(op)(out, tensor) do
        check_catalog_path!(:unary, unquote(op), [tensor])
        result = unwrap!(NIF.unary_op(unquote(op), ref(tensor)))
        put_ref(out, cast_to(result, out.type))
      end
    end

    ## Reduction

    for op <- Nx.Vulkan.Ops.reduce() do
      @impl true
      def unquote(op)(out, tensor, opts) do
        {axes, keep_axes} = reduced_axes(unquote(op), opts)
        tie_break = opts[:tie_break] || :low
        check_catalog_path!(:reduce, unquote(op), [tensor])
        result = unwrap!(NIF.reduce(unquote(op), ref(tensor), axes, keep_axes, tie_break))
        put_ref(out, result |> cast_to(out.type) |> reshape_to(out.shape))
      end
    end

    defp reduced_axes(op, opts) when op in [:argmax, :argmin] do
      axes = if axis = opts[:axis], do: [axis], else: nil
      {axes, opts[:keep_axis] || false}
    end

    defp reduced_axes(_op, opts), do: {opts[:axes], opts[:keep_axes] || false}

    ## Linear algebra

    # nxvk-kernels' dot and conv take every dtype Nx gives them here, complex included (as
    # real GEMMs over the parts).
    @impl true
    def dot(out, left, contract_left, batch_left, right, contract_right, batch_right) do
      result =
        NIF.dot(ref(left), contract_left, batch_left, ref(right), contract_right, batch_right)

      put_ref(out, result |> unwrap!() |> cast_to(out.type))
    end

    @conv_options ~w(strides padding input_dilation kernel_dilation feature_group_size
                     batch_group_size input_permutation kernel_permutation output_permutation)a

    @impl true
    def conv(out, tensor, kernel, opts) do
      options = Map.new(@conv_options, &{&1, opts[&1]})
      result = NIF.conv(ref(tensor), ref(kernel), options)
      put_ref(out, result |> unwrap!() |> cast_to(out.type))
    end

    ## Indexing

    @impl true
    def gather(out, tensor, indices, opts),
      do: put_ref(out, unwrap!(NIF.gather(ref_as(tensor, out.type), ref(indices), opts[:axes])))

    for op <- [:indexed_put, :indexed_add] do
      @impl true
      def unquote(op)(%T{type: type} = out, target, indices, updates, opts) do
        result =
          NIF.unquote(op)(ref_as(target, type), ref(indices), ref_as(updates, type), opts[:axes])

        put_ref(out, unwrap!(result))
      end
    end

    ## Sorting

    @impl true
    def sort(out, tensor, opts),
      do: put_ref(out, unwrap!(NIF.sort(ref(tensor), opts[:axis], opts[:direction] || :asc)))

    # nxvk's sort is stable, which satisfies both `stable: true` and `stable: false`.
    @impl true
    def argsort(%T{type: type} = out, tensor, opts) do
      direction = opts[:direction] || :asc
      put_ref(out, unwrap!(NIF.argsort(ref(tensor), opts[:axis], direction, dtype_name(type))))
    end

    ## Fourier transforms

    for kind <- [:fft, :ifft] do
      @impl true
      def unquote(kind)(out, tensor, opts) do
        result = NIF.fft(unquote(kind), ref(tensor), opts[:length], opts[:axis])
        put_ref(out, result |> unwrap!() |> cast_to(out.type))
      end
    end

    ## Window ops: padding is a list of {low, high} per axis after Nx's normalisation

    for op <- [:window_sum, :window_product, :window_max, :window_min] do
      @impl true
      # Complex numbers have no order: the host raises the error Nx raises.
      if op in [:window_max, :window_min] do
        def unquote(op)(%T{type: {:c, _}} = out, tensor, window_dimensions, opts),
          do: via_host(unquote(op), out, [tensor, window_dimensions, opts])
      end

      def unquote(op)(out, tensor, window_dimensions, opts) do
        result =
          NIF.window_reduce(
            unquote(op),
            ref_as(tensor, out.type),
            window_dimensions,
            window_options(opts)
          )

        put_ref(out, unwrap!(result))
      end
    end

    for op <- [:window_scatter_max, :window_scatter_min] do
      @impl true
      def unquote(op)(%T{type: {:c, _}} = out, tensor, source, init_value, window_dims, opts),
        do: via_host(unquote(op), out, [tensor, source, init_value, window_dims, opts])

      def unquote(op)(out, tensor, source, init_value, window_dimensions, opts) do
        result =
          NIF.window_scatter(
            unquote(op),
            ref_as(tensor, out.type),
            ref_as(source, out.type),
            ref_as(init_value, out.type),
            window_dimensions,
            window_options(opts)
          )

        put_ref(out, unwrap!(result))
      end
    end

    defp window_options(opts) do
      %{
        strides: opts[:strides] || [],
        padding: opts[:padding] || [],
        window_dilations: opts[:window_dilations] || []
      }
    end

    ## Linear algebra

    # `transform_a: :conjugate` conjugates without transposing (:none on real types);
    # `:transpose` is a plain transpose, complex matrices included.
    @impl true
    def triangular_solve(out, a, b, opts) do
      if singular?(a), do: raise(ArgumentError, "can't solve for singular matrix")

      a =
        if match?({:c, _}, out.type) and opts[:transform_a] == :conjugate,
          do: Nx.conjugate(a),
          else: a

      result =
        NIF.triangular_solve(
          ref_as(a, out.type),
          ref_as(b, out.type),
          Keyword.get(opts, :lower, true),
          Keyword.get(opts, :left_side, true),
          opts[:transform_a] == :transpose
        )

      put_ref(out, unwrap!(result))
    end

    # Nx raises where a triangular matrix has a zero on its diagonal (the kernel would divide
    # by it); the check reads one boolean back.
    defp singular?(%T{shape: shape} = a) do
      n = elem(shape, tuple_size(shape) - 1)

      n > 0 and Nx.size(a) > 0 and
        a
        |> Nx.reshape({div(Nx.size(a), n * n), n * n})
        |> Nx.slice_along_axis(0, n * n, axis: 1, strides: n + 1)
        |> Nx.equal(0)
        |> Nx.any()
        |> Nx.to_number() == 1
    end

    ## Everything else: counted, refusable host fallbacks

    ## Reductions with a function: traced into a one-node graph

    @impl true
    def reduce(out, tensor, acc, opts, fun),
      do: reducer(:reduce, out, tensor, acc, [opts], fun)

    @impl true
    def window_reduce(out, tensor, acc, window_dimensions, opts, fun),
      do: reducer(:window_reduce, out, tensor, acc, [window_dimensions, opts], fun)

    # The function is traced with Nx.Defn.Expr's own callback (which builds the `fun` node
    # with two scalar parameters of the output type), encoded with the tensor and acc as the
    # graph's parameters, and the bytes cached per (op, types, shapes, options, function) in
    # the process's plan cache; the NIF's plan cache keeps the compiled plan per bytes. A
    # function that cannot be traced or encoded, or whose plan the device refuses (say a
    # literal tensor inside it), takes the counted host gate.
    defp reducer(op, out, tensor, acc, arguments, fun) do
      key =
        {__MODULE__, op, {out.type, out.shape}, {tensor.type, tensor.shape},
         {acc.type, acc.shape}, arguments, fun}

      graph =
        Nx.Vulkan.PlanCache.fetch(key, fn ->
          trace_reducer(op, out, tensor, acc, arguments, fun)
        end)

      with {:ok, bytes} <- graph,
           {:ok, [result]} <- NIF.plan_run(bytes, [ref(tensor), ref(acc)]) do
        from_ref(out, result)
      else
        _ -> via_host(op, out, [tensor, acc | arguments] ++ [fun])
      end
    end

    defp trace_reducer(op, out, tensor, acc, arguments, fun) do
      parameters = [Nx.to_template(tensor), Nx.to_template(acc)]

      expression =
        apply(
          Nx.Defn.Expr,
          op,
          [
            out,
            Nx.Defn.Expr.parameter(:reducer, tensor.type, tensor.shape, 0),
            Nx.Defn.Expr.parameter(:reducer, acc.type, acc.shape, 1)
          ] ++ arguments ++ [fun]
        )

      Nx.Vulkan.GraphEncoding.encode(parameters, [expression])
    rescue
      _ -> {:unsupported, op}
    end

    ## Blocks with a kernel of their own; any other block runs Nx's default implementation,
    ## built from the callbacks above.

    @cumulative_blocks %{
      Nx.Block.CumulativeSum => :cumulative_sum,
      Nx.Block.CumulativeProduct => :cumulative_product,
      Nx.Block.CumulativeMin => :cumulative_min,
      Nx.Block.CumulativeMax => :cumulative_max
    }

    @impl true
    def block(%module{axis: axis, reverse: reverse}, out, [tensor], _fun)
        when is_map_key(@cumulative_blocks, module) do
      result = NIF.cumulative(@cumulative_blocks[module], ref(tensor), axis, reverse)
      put_ref(out, result |> unwrap!() |> cast_to(out.type))
    end

    def block(%Nx.Block.Take{axis: axis}, out, [tensor, indices], _fun),
      do: put_ref(out, unwrap!(NIF.take(ref_as(tensor, out.type), ref(indices), axis)))

    def block(%Nx.Block.TakeAlongAxis{axis: axis}, out, [tensor, indices], _fun) do
      result = NIF.take_along_axis(ref_as(tensor, out.type), ref(indices), axis)
      put_ref(out, unwrap!(result))
    end

    def block(%Nx.Block.TopK{k: k}, {out_values, out_indices}, [tensor], _fun) do
      {values, positions} = unwrap!(NIF.top_k(ref(tensor), k))
      {put_ref(out_values, values), put_ref(out_indices, cast_to(positions, out_indices.type))}
    end

    def block(%kind{lengths: lengths, axes: [first, second]}, out, [tensor], _fun)
        when kind in [Nx.Block.FFT2, Nx.Block.IFFT2] do
      direction = if kind == Nx.Block.FFT2, do: :fft, else: :ifft
      lengths = if lengths, do: List.to_tuple(lengths)
      result = NIF.fft2(direction, ref(tensor), lengths, {first, second})
      put_ref(out, result |> unwrap!() |> cast_to(out.type))
    end

    def block(%Nx.Block.RFFT{length: length, axis: axis}, out, [tensor], _fun) do
      result = NIF.rfft(ref(tensor), length, axis)
      put_ref(out, result |> unwrap!() |> cast_to(out.type))
    end

    def block(%Nx.Block.IRFFT{length: length, axis: axis}, out, [tensor], _fun) do
      result = NIF.irfft(ref(tensor), length, axis)
      put_ref(out, result |> unwrap!() |> cast_to(out.type))
    end

    # Nx.LinAlg's cholesky, lu, determinant and solve blocks run the linalg kernels (which
    # compute in the floating result type), real and complex (c64/c128: Hermitian cholesky,
    # pivoting by modulus). qr and eigh keep Nx's default: nxvk's Householder QR does not follow
    # Nx's sign convention (Nx makes R's diagonal non-negative) and nxvk's eigh sorts the
    # eigenvalues ascending where Nx keeps its Jacobi order, so results differ from Nx's. svd
    # keeps Nx's default too (Nx 0.13 raises for complex svd itself), which runs on the qr,
    # eigh and other callbacks above.
    def block(%Nx.Block.LinAlg.Cholesky{}, out, [tensor], _fun),
      do: put_ref(out, unwrap!(NIF.cholesky(ref_as(tensor, out.type))))

    def block(%Nx.Block.LinAlg.Determinant{}, out, [tensor], _fun),
      do: put_ref(out, unwrap!(NIF.determinant(ref_as(tensor, out.type))))

    def block(%Nx.Block.LinAlg.Solve{}, out, [a, b], _fun),
      do: put_ref(out, unwrap!(NIF.solve(ref_as(a, out.type), ref_as(b, out.type))))

    def block(%Nx.Block.LinAlg.LU{}, {p_out, l_out, u_out}, [tensor], _fun) do
      {p, l, u} = unwrap!(NIF.lu(ref_as(tensor, l_out.type)))
      {put_ref(p_out, cast_to(p, p_out.type)), put_ref(l_out, l), put_ref(u_out, u)}
    end

    def block(struct, _output, args, fun), do: apply(fun, [struct | args])

    defp host_creation(op, out, arguments) do
      Nx.Vulkan.host_fallback!(op, dtype_name(out.type), [out.shape])

      Nx.BinaryBackend
      |> Nx.with_default_backend(fn -> apply(Nx.BinaryBackend, op, [out | arguments] ++ [[]]) end)
      |> Nx.backend_transfer(__MODULE__)
    end

    # The one host path: the gate counts (and may refuse) the op under its first operand's
    # dtype, then operands go to Nx.BinaryBackend and the results come back to the device.
    defp via_host(op, out, arguments) do
      operands = arguments |> List.flatten() |> Enum.filter(&match?(%T{}, &1))

      dtype =
        case operands do
          [%T{type: type} | _] -> type
          [] -> out_type(out)
        end

      Nx.Vulkan.host_fallback!(op, dtype_name(dtype), Enum.map(operands, & &1.shape))
      host_arguments = Enum.map(arguments, &to_host/1)

      # Nx.BinaryBackend builds intermediate tensors with Nx functions, which use the default
      # backend: keep them on the host too.
      Nx.BinaryBackend
      |> Nx.with_default_backend(fn -> apply(Nx.BinaryBackend, op, [out | host_arguments]) end)
      |> from_host()
    end

    # A process strict scope also covers the catalog's own fallbacks (complex and sub-byte
    # types, f64 transcendentals); without a scope this costs nothing.
    defp check_catalog_path!(kind, op, operands) do
      if Nx.Vulkan.process_strict() do
        dtypes = Enum.map(operands, &dtype_name(&1.type))
        Nx.Vulkan.check_catalog_path!(kind, op, dtypes, Enum.map(operands, & &1.shape))
      end
    end

    defp out_type(%T{type: type}), do: type
    defp out_type(tuple) when is_tuple(tuple), do: tuple |> elem(0) |> out_type()

    defp to_host(%T{data: %__MODULE__{}} = tensor), do: Nx.backend_copy(tensor, Nx.BinaryBackend)
    defp to_host(list) when is_list(list), do: Enum.map(list, &to_host/1)
    defp to_host(other), do: other

    defp from_host(%T{} = tensor), do: Nx.backend_transfer(tensor, __MODULE__)

    defp from_host(tuple) when is_tuple(tuple),
      do: tuple |> Tuple.to_list() |> Enum.map(&from_host/1) |> List.to_tuple()

    ## Helpers

    @doc false
    # A device tensor from a NIF tensor reference, shaped and typed as `template` (converted
    # when a compiled plan's output type differs from Nx's).
    def from_ref(%T{type: type} = template, ref), do: put_ref(template, cast_to(ref, type))

    @doc false
    def dtype_name({:f8_e4m3fn, 8}), do: "f8_e4m3fn"
    def dtype_name({kind, bits}), do: "#{kind}#{bits}"

    defp cast_to(ref, type) do
      name = dtype_name(type)

      case unwrap!(NIF.dtype(ref)) do
        ^name -> ref
        _ -> unwrap!(NIF.as_type(ref, name))
      end
    end

    defp reshape_to(ref, shape) do
      case unwrap!(NIF.shape(ref)) do
        ^shape -> ref
        _ -> unwrap!(NIF.reshape(ref, shape))
      end
    end

    defp ref_as(tensor, type), do: tensor |> ref() |> cast_to(type)

    defp ref(%T{data: %__MODULE__{ref: ref}}), do: ref

    defp ref(%T{} = tensor) do
      %T{data: %__MODULE__{ref: ref}} = Nx.backend_transfer(tensor, __MODULE__)
      ref
    end

    # Start indices given as scalar tensors (Nx makes the integers among them constants), one
    # device tensor per axis, for the NIFs that read and clamp starts on the GPU: each is read
    # in its own type (stacking them would merge mixed types and wrap a u64 above 2^63 into
    # a negative s64); sub-byte ones are widened to 8 bits first.
    defp device_starts(starts) do
      Enum.map(starts, fn
        %T{type: {kind, bits}} = start when bits < 8 -> start |> Nx.as_type({kind, 8}) |> ref()
        %T{} = start -> ref(start)
        start -> start
      end)
    end

    defp clamp_starts(starts, dimensions, lengths) do
      [starts, dimensions, lengths]
      |> Enum.zip_with(fn [start, dimension, length] ->
        start |> max(0) |> min(dimension - length)
      end)
    end

    defp put_ref(%T{} = out, ref), do: %{out | data: %__MODULE__{ref: ref}}

    defp unwrap!(reply), do: Nx.Vulkan.unwrap!(reply)
  end
end
