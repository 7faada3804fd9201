# Compiled only when Nx is a dependency (set NX_PATH, see docs/ELIXIR.md): CI has no Nx.
if Code.ensure_loaded?(Nx) do
  defmodule Nx.Vulkan.GraphEncoding do
    @moduledoc """
    Encodes an `Nx.Defn.Expr` graph into nxvk-fusion's versioned binary format (version 2; the
    node tags and fields are listed in `crates/nxvk-fusion/src/encoding.rs`), which the NIF's
    `plan_run/2` decodes, plans and runs.

    Only flat graphs are encoded: parameters, constants, tensors, the catalog's element-wise
    ops, `as_type`, views (broadcast, reshape, transpose, squeeze, slice), select, clip, the
    reductions, dot, conv, reverse, metadata, pad, concatenate, put_slice, slice and put_slice
    at tensor starts (dynamic slices: the starts stay on the device, clamped there),
    gather, indexed_put/add, the window ops and window scatters, iota, sort, argsort, and the
    cumulative, take and take_along_axis blocks, `reduce` and `window_reduce`, whose
    function is encoded as a nested graph of its two scalar parameters (a function that
    captures an outer parameter is not encoded), `fft`/`ifft`, `triangular_solve` (real),
    and the `Nx.Block.LinAlg` blocks cholesky, solve, lu and determinant (real; lu's `elem`
    nodes too), which run the catalog's GPU kernels instead of their default expressions, as
    the backend does. Any other node (`cond`, `while`, `fun`, other blocks such as qr and
    eigh and their `elem`s, tokens, ...) makes `encode/2` return `{:unsupported, op}`, and `Nx.Vulkan.Compiler` keeps the evaluator for that function:
    encoding a graph partly would split it into fused and evaluated halves with a transfer in
    between, which the evaluator already does without the split.
    """

    alias Nx.Tensor, as: T
    alias Nx.Defn.Expr

    @magic "NXVKGRPH"
    @version 2

    @unary MapSet.new(Nx.Vulkan.Ops.unary())
    @binary MapSet.new(Nx.Vulkan.Ops.binary())
    @reduce MapSet.new(Nx.Vulkan.Ops.reduce())
    @cumulative %{
      Nx.Block.CumulativeSum => "cumulative_sum",
      Nx.Block.CumulativeProduct => "cumulative_product",
      Nx.Block.CumulativeMin => "cumulative_min",
      Nx.Block.CumulativeMax => "cumulative_max"
    }
    # Nx's linear-algebra blocks encoded as native nodes: those `Nx.Vulkan.Backend` also runs
    # natively, so a compiled function computes what the eager backend computes. QR and eigh
    # stay out (graphs with them keep the evaluator): the backend keeps Nx's default for them,
    # since nxvk's QR signs and eigh's ascending order differ from Nx's. The IR has both
    # (`qr_reduced`, `qr_complete`, `eigh`) for Rust users.
    @linalg %{
      Nx.Block.LinAlg.Cholesky => "cholesky",
      Nx.Block.LinAlg.Solve => "solve",
      Nx.Block.LinAlg.LU => "lu",
      Nx.Block.LinAlg.Determinant => "determinant"
    }

    @doc """
    `{:ok, bytes}` for the graph whose outputs are `outputs` (a list of expression tensors)
    over `parameters` (templates, in parameter order), or `{:unsupported, op}`.
    """
    def encode(parameters, outputs) do
      state = with_parameters(%{ids: %{}, nodes: [], count: 0, nested: false}, parameters)
      {:ok, IO.iodata_to_binary([@magic, u32(@version), graph(outputs, state)])}
    catch
      {:unsupported, op} -> {:unsupported, op}
    end

    defp with_parameters(state, parameters) do
      Enum.reduce(parameters, state, fn %T{type: type, shape: shape}, state ->
        add(state, [<<0>>, text(dtype(type)), list(Tuple.to_list(shape))])
      end)
    end

    # The `graph` of the format: the nodes `outputs` need, after those already in `state`.
    defp graph(outputs, state) do
      {output_ids, state} = Enum.map_reduce(outputs, state, &node/2)

      [
        u32(state.count),
        Enum.reverse(state.nodes),
        u32(length(output_ids)),
        Enum.map(output_ids, &u32/1)
      ]
    end

    # A reduce/window_reduce function (an Expr `fun` of two scalar parameters) as a nested
    # graph whose parameters and result have the reduction's type `type` (Nx converts the
    # result to it: Expr leaves "type conversions to the compiler").
    defp reducer_graph(%T{data: %Expr{op: :fun, args: [[a, b], body, _mfa]}}, type) do
      scalar = %T{type: type, shape: {}, names: []}
      state = with_parameters(%{ids: %{}, nodes: [], count: 0, nested: true}, [scalar, scalar])
      state = %{state | ids: %{a.data.id => 0, b.data.id => 1}}
      {body_id, state} = node(body, state)

      if body.type == type do
        graph_of(state, body_id)
      else
        state = add(state, [<<5>>, text(dtype(type)), u32(body_id)])
        graph_of(state, state.count - 1)
      end
    end

    defp reducer_graph(_fun, _type), do: throw({:unsupported, :fun})

    # reduce and window_reduce: tag, tensor, acc, the op's options, then the function.
    defp reducer_fields(tag, tensor, acc, options, {fun, type}, state) do
      {tensor_id, state} = node(tensor, state)
      {acc_id, state} = node(acc, state)
      {[tag, u32(tensor_id), u32(acc_id), options, reducer_graph(fun, type)], state}
    end

    defp graph_of(state, output),
      do: [u32(state.count), Enum.reverse(state.nodes), u32(1), u32(output)]

    # --- Nodes: each expression is encoded once (by its id), after its operands ---

    # Parameter `position` is node `position`: the parameters are emitted first, in order. In
    # a nested function graph the parameters are found by id; any other is a captured value.
    defp node(%T{data: %Expr{op: :parameter, args: [position]}}, %{nested: false} = state),
      do: {position, state}

    defp node(%T{data: %Expr{id: id}} = tensor, state) do
      case state.ids do
        %{^id => index} ->
          {index, state}

        _ ->
          {fields, state} = fields(tensor, state)
          state = add(state, fields)
          index = state.count - 1
          {index, %{state | ids: Map.put(state.ids, id, index)}}
      end
    end

    # The node of `tensor`, converted to `type` by an extra as_type node where it differs.
    defp node_as(%T{type: type} = tensor, type, state), do: node(tensor, state)

    defp node_as(tensor, type, state) do
      {input, state} = node(tensor, state)
      state = add(state, [<<5>>, text(dtype(type)), u32(input)])
      {state.count - 1, state}
    end

    defp add(state, fields),
      do: %{state | nodes: [fields | state.nodes], count: state.count + 1}

    defp fields(%T{data: %Expr{op: :parameter}}, _state),
      do: throw({:unsupported, :captured_parameter})

    defp fields(%T{data: %Expr{op: :constant, args: [number]}, type: type, shape: shape}, state) do
      scalar = Nx.BinaryBackend.constant(%T{shape: {}, type: type, names: []}, number, [])
      element = Nx.BinaryBackend.to_binary(scalar, 1)
      {[<<1>>, text(dtype(type)), list(Tuple.to_list(shape)), bytes(element)], state}
    end

    defp fields(%T{data: %Expr{op: :tensor, args: [tensor]}, type: type, shape: shape}, state) do
      data = tensor |> Nx.to_binary() |> whole_bytes()
      {[<<2>>, text(dtype(type)), list(Tuple.to_list(shape)), bytes(data)], state}
    end

    defp fields(%T{data: %Expr{op: :metadata, args: [input, _metadata]}}, state) do
      {input, state} = node(input, state)
      {[<<16>>, u32(input), text("metadata")], state}
    end

    defp fields(%T{data: %Expr{op: :as_type, args: [input]}, type: type}, state) do
      {input, state} = node(input, state)
      {[<<5>>, text(dtype(type)), u32(input)], state}
    end

    defp fields(%T{data: %Expr{op: :broadcast, args: [input, shape, axes]}}, state) do
      {input, state} = node(input, state)
      {[<<6>>, u32(input), list(Tuple.to_list(shape)), list(axes)], state}
    end

    defp fields(%T{data: %Expr{op: :reshape, args: [input]}, shape: shape}, state) do
      {input, state} = node(input, state)
      {[<<7>>, u32(input), list(Tuple.to_list(shape))], state}
    end

    defp fields(%T{data: %Expr{op: :transpose, args: [input, axes]}}, state) do
      {input, state} = node(input, state)
      {[<<8>>, u32(input), list(axes)], state}
    end

    defp fields(%T{data: %Expr{op: :squeeze, args: [input, axes]}}, state) do
      {input, state} = node(input, state)
      {[<<9>>, u32(input), list(axes)], state}
    end

    # Starts that are tensors other than integer constants make a dynamic slice (tag 43): each
    # such start is a node, clamped on the device when the plan runs; the others are static,
    # clamped here as Nx clamps them.
    defp fields(%T{data: %Expr{op: :slice, args: [input, starts, lengths, strides]}}, state) do
      {starts, state} = window_starts(starts, input, lengths, state)
      {input, state} = node(input, state)

      if Enum.all?(starts, &is_integer/1) do
        {[<<10>>, u32(input), list(starts), list(lengths), list(strides)], state}
      else
        {[<<43>>, u32(input), slice_starts(starts), list(lengths), list(strides)], state}
      end
    end

    defp fields(%T{data: %Expr{op: :reverse, args: [input, axes]}}, state) do
      {input, state} = node(input, state)
      {[<<22>>, u32(input), list(axes)], state}
    end

    defp fields(%T{data: %Expr{op: op, args: [a, b, c]}}, state) when op in [:select, :clip] do
      {[a, b, c], state} = Enum.map_reduce([a, b, c], state, &node/2)
      tag = if op == :select, do: <<11>>, else: <<12>>
      # The decoder reads the three operands as an id list (count first), whatever the
      # format's table says: follow the code.
      {[tag, u32(3), u32(a), u32(b), u32(c)], state}
    end

    # nxvk's dot, conv and reducer folds have no complex kernels: those graphs keep the
    # evaluator, whose backend callbacks take the counted host gate for them.
    defp fields(%T{data: %Expr{op: op}, type: {:c, _}}, _state)
         when op in [:dot, :conv, :reduce, :window_reduce],
         do: throw({:unsupported, op})

    defp fields(%T{data: %Expr{op: :reduce, args: [tensor, acc, opts, fun]}} = out, state) do
      axes = opts[:axes] || Enum.to_list(0..(tuple_size(tensor.shape) - 1)//1)
      keep_axes = if opts[:keep_axes], do: 1, else: 0
      reducer_fields(<<37>>, tensor, acc, [list(axes), <<keep_axes>>], {fun, out.type}, state)
    end

    defp fields(
           %T{data: %Expr{op: :window_reduce, args: [tensor, acc, window, opts, fun]}} = out,
           state
         ) do
      options = [
        list(Tuple.to_list(window)),
        list(opts[:strides]),
        pairs(opts[:padding]),
        list(opts[:window_dilations])
      ]

      reducer_fields(<<38>>, tensor, acc, options, {fun, out.type}, state)
    end

    # --- Data movement, indexing, scans, windows, creation and sorting (tags 23-36) ---

    # pad, concatenate and put_slice take operands of one dtype in the IR; Nx merges their
    # types, so each operand is converted to the result's type first.
    defp fields(%T{data: %Expr{op: :pad, args: [input, value, config]}, type: type}, state) do
      {input, state} = node_as(input, type, state)
      {value, state} = node_as(value, type, state)
      {[<<23>>, u32(input), u32(value), triples(config)], state}
    end

    defp fields(%T{data: %Expr{op: :concatenate, args: [inputs, axis]}, type: type}, state) do
      {inputs, state} = Enum.map_reduce(inputs, state, &node_as(&1, type, &2))
      {[<<24>>, ids(inputs), u32(axis)], state}
    end

    # Static starts are clamped here as Nx clamps them so the update fits; tensor starts make
    # a dynamic put_slice (tag 44), clamped on the device.
    defp fields(
           %T{data: %Expr{op: :put_slice, args: [input, starts, update]}, type: type},
           state
         ) do
      {starts, state} = window_starts(starts, input, Tuple.to_list(update.shape), state)
      {input, state} = node_as(input, type, state)
      {update, state} = node_as(update, type, state)

      if Enum.all?(starts, &is_integer/1) do
        {[<<25>>, u32(input), u32(update), list(starts)], state}
      else
        {[<<44>>, u32(input), u32(update), slice_starts(starts)], state}
      end
    end

    defp fields(%T{data: %Expr{op: :gather, args: [input, indices, opts]}}, state) do
      {input, state} = node(input, state)
      {indices, state} = node(indices, state)
      {[<<26>>, u32(input), u32(indices), list(opts[:axes])], state}
    end

    defp fields(%T{data: %Expr{op: op, args: [target, indices, updates, opts]}}, state)
         when op in [:indexed_put, :indexed_add] do
      {ids, state} = Enum.map_reduce([target, indices, updates], state, &node/2)
      tag = if op == :indexed_put, do: <<29>>, else: <<30>>
      {[tag, ids(ids), list(opts[:axes])], state}
    end

    defp fields(%T{data: %Expr{op: op, args: [input, window, opts]}}, state)
         when op in [:window_sum, :window_product, :window_max, :window_min] do
      {input, state} = node(input, state)
      {[<<32>>, text(Atom.to_string(op)), u32(input), window_fields(window, opts)], state}
    end

    defp fields(%T{data: %Expr{op: op, args: [input, source, init, window, opts]}}, state)
         when op in [:window_scatter_max, :window_scatter_min] do
      {ids, state} = Enum.map_reduce([input, source, init], state, &node/2)
      {[<<33>>, text(Atom.to_string(op)), ids(ids), window_fields(window, opts)], state}
    end

    defp fields(%T{data: %Expr{op: :iota, args: [axis]}, type: type, shape: shape}, state) do
      has_axis = if axis == nil, do: 0, else: 1
      fields = [<<34>>, text(dtype(type)), list(Tuple.to_list(shape)), <<has_axis>>]
      {fields ++ [u32(axis || 0)], state}
    end

    defp fields(%T{data: %Expr{op: :sort, args: [input, opts]}}, state) do
      {input, state} = node(input, state)
      {[<<35>>, u32(input), u32(opts[:axis]), descending(opts)], state}
    end

    defp fields(%T{data: %Expr{op: :argsort, args: [input, opts]}, type: type}, state) do
      {input, state} = node(input, state)
      {[<<36>>, text(dtype(type)), u32(input), u32(opts[:axis]), descending(opts)], state}
    end

    # Nx's cumulative ops, take and take_along_axis are blocks with a default expression;
    # the catalog runs them natively.
    defp fields(%T{data: %Expr{op: :block, args: [%struct{} = block, [input], _, _]}}, state)
         when is_map_key(@cumulative, struct) do
      {input, state} = node(input, state)
      reverse = if block.reverse, do: 1, else: 0
      {[<<31>>, text(@cumulative[struct]), u32(input), u32(block.axis), <<reverse>>], state}
    end

    defp fields(
           %T{data: %Expr{op: :block, args: [%struct{} = block, [input, indices], _, _]}},
           state
         )
         when struct in [Nx.Block.Take, Nx.Block.TakeAlongAxis] do
      {input, state} = node(input, state)
      {indices, state} = node(indices, state)
      tag = if struct == Nx.Block.Take, do: <<27>>, else: <<28>>
      {[tag, u32(input), u32(indices), u32(block.axis)], state}
    end

    # --- Fourier transforms and linear algebra (tags 39-42, and 15 for tuple elements) ---

    defp fields(%T{data: %Expr{op: op, args: [input, opts]}}, state) when op in [:fft, :ifft] do
      {input, state} = node(input, state)
      tag = if op == :fft, do: <<39>>, else: <<40>>
      {[tag, u32(input), u32(opts[:length]), u32(opts[:axis])], state}
    end

    # The linear-algebra kernels are real-only: complex systems keep the evaluator (and
    # `:conjugate` is `:none` on real matrices).
    defp fields(%T{data: %Expr{op: :triangular_solve}, type: {:c, _}}, _state),
      do: throw({:unsupported, :triangular_solve})

    defp fields(%T{data: %Expr{op: :triangular_solve, args: [a, b, opts]}}, state) do
      {a, state} = node(a, state)
      {b, state} = node(b, state)
      left_side = if opts[:left_side], do: 1, else: 0
      lower = if opts[:lower], do: 1, else: 0
      transpose_a = if opts[:transform_a] == :transpose, do: 1, else: 0
      {[<<41>>, u32(a), u32(b), <<left_side, lower, transpose_a>>], state}
    end

    defp fields(%T{data: %Expr{op: :block, args: [%struct{}, inputs, _, _]}}, state)
         when is_map_key(@linalg, struct) do
      if Enum.any?(inputs, &match?(%T{type: {:c, _}}, &1)),
        do: throw({:unsupported, :complex_linalg})

      {inputs, state} = Enum.map_reduce(inputs, state, &node/2)
      {[<<42>>, text(@linalg[struct]), ids(inputs)], state}
    end

    # An element of a tuple: only the linear-algebra blocks' tuples are encoded.
    defp fields(%T{data: %Expr{op: :elem, args: [tuple, index]}}, state) do
      case tuple do
        %T{data: %Expr{op: :block, args: [%struct{} | _]}} when is_map_key(@linalg, struct) ->
          {tuple, state} = node(tuple, state)
          {[<<15>>, u32(tuple), u32(index)], state}

        _ ->
          throw({:unsupported, :elem})
      end
    end

    # nxvk's dot and conv have no complex kernels: those graphs keep the evaluator, whose
    # backend callbacks take the counted host gate for them.
    defp fields(%T{data: %Expr{op: op}, type: {:c, _}}, _state) when op in [:dot, :conv],
      do: throw({:unsupported, op})

    defp fields(%T{data: %Expr{op: :dot, args: [left, cl, bl, right, cr, br]}}, state) do
      {left, state} = node(left, state)
      {right, state} = node(right, state)
      {[<<14>>, u32(left), u32(right), list(cl), list(bl), list(cr), list(br)], state}
    end

    defp fields(%T{data: %Expr{op: :conv, args: [input, kernel, opts]}}, state) do
      {input, state} = node(input, state)
      {kernel, state} = node(kernel, state)

      fields = [
        <<21>>,
        u32(input),
        u32(kernel),
        list(opts[:strides]),
        pairs(opts[:padding]),
        list(opts[:input_dilation]),
        list(opts[:kernel_dilation]),
        u32(opts[:feature_group_size]),
        u32(opts[:batch_group_size]),
        permutation(opts[:input_permutation]),
        permutation(opts[:kernel_permutation]),
        permutation(opts[:output_permutation])
      ]

      {fields, state}
    end

    defp fields(%T{data: %Expr{op: op, args: [input, opts]}}, state) when is_list(opts) do
      unless MapSet.member?(@reduce, op), do: throw({:unsupported, op})
      {input, state} = node(input, state)

      {axes, keep_axes} =
        if op in [:argmax, :argmin] do
          {if(opts[:axis], do: [opts[:axis]]), opts[:keep_axis] || false}
        else
          {opts[:axes], opts[:keep_axes] || false}
        end

      all_axes = if axes == nil, do: 1, else: 0
      tie_break_high = if opts[:tie_break] == :high, do: 1, else: 0

      fields = [
        <<13>>,
        text(Atom.to_string(op)),
        u32(input),
        <<all_axes>>,
        list(axes || []),
        <<if(keep_axes, do: 1, else: 0)>>,
        <<tie_break_high>>
      ]

      {fields, state}
    end

    defp fields(%T{data: %Expr{op: op, args: [input]}}, state) do
      unless MapSet.member?(@unary, op), do: throw({:unsupported, op})
      {input, state} = node(input, state)
      {[<<3>>, text(Atom.to_string(op)), u32(input)], state}
    end

    defp fields(%T{data: %Expr{op: op, args: [left, right]}}, state) do
      unless MapSet.member?(@binary, op), do: throw({:unsupported, op})
      {left, state} = node(left, state)
      {right, state} = node(right, state)
      {[<<4>>, text(Atom.to_string(op)), u32(left), u32(right)], state}
    end

    defp fields(%T{data: %Expr{op: op}}, _state), do: throw({:unsupported, op})

    # --- Field encodings (little-endian) ---

    defp u32(value), do: <<value::unsigned-little-32>>
    defp text(string), do: [u32(byte_size(string)), string]
    defp bytes(binary), do: [u32(byte_size(binary)), binary]
    defp list(items), do: [u32(length(items)), Enum.map(items, &<<&1::unsigned-little-64>>)]

    defp pairs(pairs),
      do: [
        u32(length(pairs)),
        Enum.map(pairs, fn {low, high} -> <<low::signed-little-64, high::signed-little-64>> end)
      ]

    defp ids(ids), do: [u32(length(ids)), Enum.map(ids, &u32/1)]

    defp triples(config),
      do: [
        u32(length(config)),
        Enum.map(config, fn {low, high, interior} ->
          <<low::signed-little-64, high::signed-little-64, interior::unsigned-little-64>>
        end)
      ]

    defp window_fields(window, opts) do
      rank = tuple_size(window)

      [
        list(Tuple.to_list(window)),
        list(opts[:strides] || List.duplicate(1, rank)),
        pairs(opts[:padding] || List.duplicate({0, 0}, rank)),
        list(opts[:window_dilations] || List.duplicate(1, rank))
      ]
    end

    defp descending(opts), do: if(opts[:direction] == :desc, do: <<1>>, else: <<0>>)

    # The starts of a window of `lengths` in `input`: integers (and integer constants, which
    # Nx makes of the integers among tensor starts) clamped into 0..size - length as Nx
    # clamps them, and `{:node, id}` for the other scalar tensors. The IR reads start nodes
    # of 8 to 64 bits: sub-byte ones are widened first (exactly, as_type on the device).
    defp window_starts(starts, input, lengths, state) do
      [starts, Tuple.to_list(input.shape), lengths]
      |> Enum.zip()
      |> Enum.map_reduce(state, fn {start, size, length}, state ->
        case start do
          start when is_integer(start) ->
            {start |> max(0) |> min(size - length), state}

          %T{data: %Expr{op: :constant, args: [start]}} when is_integer(start) ->
            {start |> max(0) |> min(size - length), state}

          %T{type: {kind, bits}} = start when bits < 8 ->
            {id, state} = node_as(start, {kind, 8}, state)
            {{:node, id}, state}

          %T{} = start ->
            {id, state} = node(start, state)
            {{:node, id}, state}
        end
      end)
    end

    # The `starts` field of tags 43 and 44: a kind byte, then a static value or a node id.
    defp slice_starts(starts) do
      [
        u32(length(starts)),
        Enum.map(starts, fn
          {:node, id} -> [<<1>>, u32(id)]
          start -> <<0, start::signed-little-64>>
        end)
      ]
    end

    defp permutation(nil), do: [<<0>>, list([])]
    defp permutation(axes), do: [<<1>>, list(axes)]

    defp dtype(type), do: Nx.Vulkan.Backend.dtype_name(type)

    defp whole_bytes(bits) do
      case rem(bit_size(bits), 8) do
        0 -> bits
        used -> <<bits::bitstring, 0::size(8 - used)>>
      end
    end
  end
end
