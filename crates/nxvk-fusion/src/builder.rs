//! Building graphs: the one way a [`Graph`] is made, for Rust users and for the decoder.
//!
//! Each method checks its operands (same graph, tensor-valued, shapes and dtypes Nx accepts)
//! and infers the node's type with Nx's rules: the op table's result-type rules
//! (`nxvk_kernels::types`), right-aligned broadcasting for elementwise operands, the
//! catalog's reduction result types, and nxvk-core's pure view functions for broadcast,
//! reshape, transpose, squeeze and slice (so a view the IR accepts is a view the layout code
//! accepts). A rejected node is an `Error::BadOperands` naming the op, shapes and dtypes; the
//! builder is unchanged by a rejected call.

use crate::graph::{CondClause, DotAxes, Graph, Node, NodeId, NodeType, Op, TensorType};
use nxvk_core::{DType, Error, Layout, Result};
use nxvk_kernels::reduce::result_dtype;
use nxvk_kernels::types::{binary_types, merge, unary_types};
use nxvk_kernels::{
    BinaryOp, ConvGeometry, ConvOptions, ReduceOp, TieBreak, UnaryOp, WindowOptions,
    window_output_shape,
};
use std::sync::Arc;

/// Builds one [`Graph`]; nested graphs (`fun`, `cond`, `while`, `block`) are built by their
/// own builders and passed in finished.
#[derive(Debug, Default)]
pub struct GraphBuilder {
    graph: Graph,
}

pub(crate) fn bad(op: &'static str, operands: &[&TensorType], detail: impl Into<String>) -> Error {
    Error::BadOperands {
        op,
        shapes: operands.iter().map(|tensor| tensor.shape.clone()).collect(),
        dtypes: operands.iter().map(|tensor| tensor.dtype).collect(),
        detail: detail.into(),
    }
}

/// Nx's right-aligned broadcast of several shapes.
pub(crate) fn broadcast_shapes(op: &'static str, operands: &[&TensorType]) -> Result<Vec<usize>> {
    let rank = operands
        .iter()
        .map(|tensor| tensor.shape.len())
        .max()
        .unwrap_or(0);
    let mut shape = vec![1; rank];
    for tensor in operands {
        let skip = rank - tensor.shape.len();
        for (axis, &size) in tensor.shape.iter().enumerate() {
            let target = &mut shape[skip + axis];
            if *target == 1 {
                *target = size;
            } else if size != 1 && size != *target {
                return Err(bad(
                    op,
                    operands,
                    "shapes cannot be broadcast together (right-aligned)",
                ));
            }
        }
    }
    Ok(shape)
}

impl GraphBuilder {
    pub fn new() -> Self {
        GraphBuilder::default()
    }

    /// Appends a node whose type the caller knows (the checked constructors below, and
    /// autodiff's inlining of a node of a checked graph over operands of the same types).
    pub(crate) fn push(&mut self, op: Op, ty: NodeType) -> Result<NodeId> {
        let id = u32::try_from(self.graph.nodes.len()).map_err(|_| Error::BadOperands {
            op: "graph",
            shapes: Vec::new(),
            dtypes: Vec::new(),
            detail: "more than 2^32 nodes".into(),
        })?;
        self.graph.nodes.push(Node { op, ty });
        Ok(NodeId(id))
    }

    pub(crate) fn push_tensor(
        &mut self,
        op: Op,
        dtype: DType,
        shape: Vec<usize>,
    ) -> Result<NodeId> {
        checked_elements(op.name(), dtype, &shape)?;
        self.push(op, NodeType::Tensor(TensorType { dtype, shape }))
    }

    fn node_type(&self, op: &'static str, id: NodeId) -> Result<&NodeType> {
        self.graph
            .nodes
            .get(id.index())
            .map(|node| &node.ty)
            .ok_or_else(|| Error::BadOperands {
                op,
                shapes: Vec::new(),
                dtypes: Vec::new(),
                detail: format!(
                    "operand {} is not a node of this graph (it has {})",
                    id.index(),
                    self.graph.nodes.len()
                ),
            })
    }

    /// The tensor type of operand `id` of `op`.
    pub(crate) fn tensor(&self, op: &'static str, id: NodeId) -> Result<TensorType> {
        match self.node_type(op, id)? {
            NodeType::Tensor(tensor) => Ok(tensor.clone()),
            NodeType::Tuple(_) | NodeType::Function { .. } => Err(Error::BadOperands {
                op,
                shapes: Vec::new(),
                dtypes: Vec::new(),
                detail: format!("operand {} is not a tensor", id.index()),
            }),
        }
    }

    /// Node `id`, if it exists (autodiff reads the graph it extends).
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.graph.nodes.get(id.index())
    }

    /// The type of node `id`, if it exists.
    pub fn type_of(&self, id: NodeId) -> Option<&NodeType> {
        self.graph.nodes.get(id.index()).map(|node| &node.ty)
    }

    // --- Leaves ---

    /// The next graph input, of `dtype` and `shape`.
    pub fn parameter(&mut self, dtype: DType, shape: &[usize]) -> Result<NodeId> {
        let index = self.graph.parameters.len();
        let id = self.push_tensor(Op::Parameter { index }, dtype, shape.to_vec())?;
        self.graph.parameters.push(TensorType::new(dtype, shape));
        Ok(id)
    }

    /// A scalar given as the little-endian bytes of one `dtype` element, broadcast to `shape`.
    pub fn constant_bytes(
        &mut self,
        dtype: DType,
        shape: &[usize],
        element: &[u8],
    ) -> Result<NodeId> {
        if dtype.is_sub_byte() || dtype.byte_size() != Some(element.len() as u64) {
            return Err(bad(
                "constant",
                &[&TensorType::new(dtype, shape)],
                format!("{} bytes do not make one {dtype} element", element.len()),
            ));
        }
        self.push_tensor(
            Op::Constant {
                element: element.to_vec(),
            },
            dtype,
            shape.to_vec(),
        )
    }

    /// A scalar constant (rank 0) of a native `dtype`, converted from `value` as Rust's `as`
    /// converts (floats round to nearest, integers saturate; complex dtypes get `value + 0i`).
    pub fn constant(&mut self, dtype: DType, value: f64) -> Result<NodeId> {
        let element = scalar_bytes(dtype, value).ok_or_else(|| {
            bad(
                "constant",
                &[&TensorType::new(dtype, &[])],
                "a scalar constant from a real number needs a native real or complex dtype",
            )
        })?;
        self.constant_bytes(dtype, &[], &element)
    }

    /// A literal tensor (Nx's `tensor` node): all elements, little-endian, row-major.
    pub fn literal(&mut self, dtype: DType, shape: &[usize], bytes: &[u8]) -> Result<NodeId> {
        let tensor = TensorType::new(dtype, shape);
        let expected = checked_elements("tensor", dtype, shape)?;
        if bytes.len() as u64 != expected {
            return Err(bad(
                "tensor",
                &[&tensor],
                format!("{} bytes given, {expected} needed", bytes.len()),
            ));
        }
        self.push_tensor(
            Op::Literal {
                bytes: bytes.to_vec(),
            },
            dtype,
            shape.to_vec(),
        )
    }

    // --- Elementwise ---

    pub fn unary(&mut self, op: UnaryOp, input: NodeId) -> Result<NodeId> {
        let tensor = self.tensor(op.name(), input)?;
        let types = unary_types(op, tensor.dtype, &tensor.shape)?;
        self.push_tensor(Op::Unary { op, input }, types.result, tensor.shape)
    }

    pub fn binary(&mut self, op: BinaryOp, left: NodeId, right: NodeId) -> Result<NodeId> {
        let (a, b) = (
            self.tensor(op.name(), left)?,
            self.tensor(op.name(), right)?,
        );
        let shape = broadcast_shapes(op.name(), &[&a, &b])?;
        let types = binary_types(op, a.dtype, b.dtype, &[&a.shape, &b.shape])?;
        self.push_tensor(Op::Binary { op, left, right }, types.result, shape)
    }

    pub fn as_type(&mut self, input: NodeId, dtype: DType) -> Result<NodeId> {
        let tensor = self.tensor("as_type", input)?;
        self.push_tensor(Op::AsType { input }, dtype, tensor.shape)
    }

    /// `predicate != 0 ? on_true : on_false`, all three broadcast; the result type is the
    /// merge of the two branches' types.
    pub fn select(
        &mut self,
        predicate: NodeId,
        on_true: NodeId,
        on_false: NodeId,
    ) -> Result<NodeId> {
        const OP: &str = "select";
        let (p, t, f) = (
            self.tensor(OP, predicate)?,
            self.tensor(OP, on_true)?,
            self.tensor(OP, on_false)?,
        );
        let shape = broadcast_shapes(OP, &[&p, &t, &f])?;
        if p.dtype.is_sub_byte() {
            return Err(bad(
                OP,
                &[&p, &t, &f],
                "sub-byte predicates are not supported",
            ));
        }
        self.push_tensor(
            Op::Select {
                predicate,
                on_true,
                on_false,
            },
            merge(t.dtype, f.dtype),
            shape,
        )
    }

    /// `min(max(input, min), max)` with scalar bounds; the result type merges all three.
    pub fn clip(&mut self, input: NodeId, min: NodeId, max: NodeId) -> Result<NodeId> {
        const OP: &str = "clip";
        let (x, lo, hi) = (
            self.tensor(OP, input)?,
            self.tensor(OP, min)?,
            self.tensor(OP, max)?,
        );
        if !lo.shape.is_empty() || !hi.shape.is_empty() {
            return Err(bad(OP, &[&x, &lo, &hi], "min and max must be scalars"));
        }
        if [x.dtype, lo.dtype, hi.dtype].iter().any(|d| d.is_complex()) {
            return Err(bad(
                OP,
                &[&x, &lo, &hi],
                "Nx does not order complex numbers",
            ));
        }
        let dtype = merge(merge(lo.dtype, hi.dtype), x.dtype);
        self.push_tensor(Op::Clip { input, min, max }, dtype, x.shape)
    }

    // --- Views ---

    /// Broadcast to `shape`: input axis `i` becomes output axis `axes[i]`.
    pub fn broadcast(&mut self, input: NodeId, shape: &[usize], axes: &[usize]) -> Result<NodeId> {
        let tensor = self.tensor("broadcast", input)?;
        view_layout(&tensor)?.broadcast(shape, axes)?;
        self.push_tensor(
            Op::Broadcast {
                input,
                axes: axes.to_vec(),
            },
            tensor.dtype,
            shape.to_vec(),
        )
    }

    /// Right-aligned broadcast to `shape` (the axes are the trailing ones).
    pub fn broadcast_to(&mut self, input: NodeId, shape: &[usize]) -> Result<NodeId> {
        let rank = self.tensor("broadcast", input)?.shape.len();
        let axes: Vec<usize> = (shape.len().saturating_sub(rank)..shape.len()).collect();
        self.broadcast(input, shape, &axes)
    }

    pub fn reshape(&mut self, input: NodeId, shape: &[usize]) -> Result<NodeId> {
        let tensor = self.tensor("reshape", input)?;
        view_layout(&tensor)?.reshape(shape)?;
        self.push_tensor(Op::Reshape { input }, tensor.dtype, shape.to_vec())
    }

    pub fn transpose(&mut self, input: NodeId, permutation: &[usize]) -> Result<NodeId> {
        let tensor = self.tensor("transpose", input)?;
        let layout = view_layout(&tensor)?.transpose(permutation)?;
        self.push_tensor(
            Op::Transpose {
                input,
                permutation: permutation.to_vec(),
            },
            tensor.dtype,
            layout.shape().to_vec(),
        )
    }

    pub fn squeeze(&mut self, input: NodeId, axes: &[usize]) -> Result<NodeId> {
        let tensor = self.tensor("squeeze", input)?;
        let mut sorted = axes.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != axes.len() {
            return Err(bad(
                "squeeze",
                &[&tensor],
                format!("axes {axes:?} repeat an axis"),
            ));
        }
        let layout = view_layout(&tensor)?.squeeze(axes)?;
        self.push_tensor(
            Op::Squeeze {
                input,
                axes: sorted,
            },
            tensor.dtype,
            layout.shape().to_vec(),
        )
    }

    /// `lengths[i]` elements from `starts[i]`, taking every `strides[i]`th (Nx's slice).
    pub fn slice(
        &mut self,
        input: NodeId,
        starts: &[usize],
        lengths: &[usize],
        strides: &[usize],
    ) -> Result<NodeId> {
        let tensor = self.tensor("slice", input)?;
        let shape = sliced_shape(&tensor, starts.len(), lengths, strides)?;
        view_layout(&tensor)?.slice(starts, lengths)?;
        self.push_tensor(
            Op::Slice {
                input,
                starts: starts.to_vec(),
                lengths: lengths.to_vec(),
                strides: strides.to_vec(),
            },
            tensor.dtype,
            shape,
        )
    }

    // --- Reductions and contractions ---

    /// `op` over `axes` (`None`: all axes). argmax/argmin take at most one axis.
    pub fn reduce(
        &mut self,
        op: ReduceOp,
        input: NodeId,
        axes: Option<&[usize]>,
        keep_axes: bool,
        tie_break: TieBreak,
    ) -> Result<NodeId> {
        let name = op.name();
        let tensor = self.tensor(name, input)?;
        let (sorted, shape) = reduced_shape(name, &tensor, axes, keep_axes)?;
        if op.is_arg() && axes.is_some_and(|axes| axes.len() != 1) {
            return Err(bad(name, &[&tensor], "argmax/argmin take one axis or none"));
        }
        if tensor.dtype.is_complex() && op.needs_elements() {
            return Err(bad(name, &[&tensor], "Nx does not order complex numbers"));
        }
        if op.needs_elements() && sorted.iter().any(|&axis| tensor.shape[axis] == 0) {
            return Err(bad(name, &[&tensor], "no value over an empty axis"));
        }
        self.push_tensor(
            Op::Reduce {
                op,
                input,
                axes: sorted,
                keep_axes,
                tie_break,
            },
            result_dtype(op, tensor.dtype),
            shape,
        )
    }

    /// Nx's `reduce(input, init, axes, keep_axes, reducer)` (`None`: all axes). The node has
    /// the dtype of `reducer`'s parameters (two scalars; its result is one scalar of that
    /// dtype); `input` and `init` (a scalar) may have other dtypes: they are converted to it
    /// as Nx's `as_type` converts.
    pub fn reduce_with(
        &mut self,
        input: NodeId,
        init: NodeId,
        reducer: Graph,
        axes: Option<&[usize]>,
        keep_axes: bool,
    ) -> Result<NodeId> {
        const OP: &str = "reduce";
        let (axes, shape) = reduced_shape(OP, &self.tensor(OP, input)?, axes, keep_axes)?;
        let dtype = self.reducer_dtype(OP, input, init, &reducer)?;
        self.push_tensor(
            Op::ReduceWith {
                input,
                init,
                reducer: Arc::new(reducer),
                axes,
                keep_axes,
            },
            dtype,
            shape,
        )
    }

    /// Nx's `window_reduce(input, init, window_dimensions, options, reducer)`; types as
    /// [`reduce_with`](Self::reduce_with), the pooled shape as `nxvk_kernels::window`'s.
    pub fn window_reduce_with(
        &mut self,
        input: NodeId,
        init: NodeId,
        reducer: Graph,
        window_dimensions: &[usize],
        options: WindowOptions,
    ) -> Result<NodeId> {
        const OP: &str = "window_reduce";
        let tensor = self.tensor(OP, input)?;
        let shape = window_output_shape(&tensor.shape, window_dimensions, &options)
            .map_err(|detail| bad(OP, &[&tensor], detail))?;
        let dtype = self.reducer_dtype(OP, input, init, &reducer)?;
        self.push_tensor(
            Op::WindowReduceWith {
                input,
                init,
                reducer: Arc::new(reducer),
                window_dimensions: window_dimensions.to_vec(),
                options,
            },
            dtype,
            shape,
        )
    }

    /// The dtype of a reducer (two scalar parameters and one scalar result, all of one
    /// dtype), checked with a scalar `init`.
    fn reducer_dtype(
        &self,
        op: &'static str,
        input: NodeId,
        init: NodeId,
        reducer: &Graph,
    ) -> Result<DType> {
        let (tensor, start) = (self.tensor(op, input)?, self.tensor(op, init)?);
        let dtype = reducer
            .parameters
            .first()
            .map_or(tensor.dtype, |first| first.dtype);
        let scalar = TensorType::new(dtype, &[]);
        let well_typed = reducer.parameters == [scalar.clone(), scalar.clone()]
            && reducer.output_types() == [scalar];
        if !well_typed || !start.shape.is_empty() {
            return Err(bad(
                op,
                &[&tensor, &start],
                format!(
                    "the init value must be a scalar and the reducer must map two scalars of one dtype to one of that dtype (it takes {:?} and gives {:?})",
                    reducer.parameters,
                    reducer.output_types()
                ),
            ));
        }
        Ok(dtype)
    }

    /// Nx's `dot/6`: batch axes first, then the free axes of `left`, then those of `right`.
    pub fn dot(&mut self, left: NodeId, right: NodeId, axes: DotAxes) -> Result<NodeId> {
        const OP: &str = "dot";
        let (a, b) = (self.tensor(OP, left)?, self.tensor(OP, right)?);
        let distinct = |list: &[usize], rank: usize| {
            let mut sorted = list.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            sorted.len() == list.len() && sorted.iter().all(|&axis| axis < rank)
        };
        let left_used: Vec<usize> = axes
            .contract_left
            .iter()
            .chain(&axes.batch_left)
            .copied()
            .collect();
        let right_used: Vec<usize> = axes
            .contract_right
            .iter()
            .chain(&axes.batch_right)
            .copied()
            .collect();
        let sizes_match = |from: &[usize], to: &[usize]| {
            from.len() == to.len() && from.iter().zip(to).all(|(&i, &j)| a.shape[i] == b.shape[j])
        };
        let valid = distinct(&left_used, a.shape.len())
            && distinct(&right_used, b.shape.len())
            && sizes_match(&axes.contract_left, &axes.contract_right)
            && sizes_match(&axes.batch_left, &axes.batch_right);
        if !valid {
            return Err(bad(OP, &[&a, &b], format!("invalid contraction {axes:?}")));
        }
        let free = |shape: &[usize], used: &[usize]| -> Vec<usize> {
            (0..shape.len())
                .filter(|axis| !used.contains(axis))
                .map(|axis| shape[axis])
                .collect()
        };
        let mut shape: Vec<usize> = axes.batch_left.iter().map(|&axis| a.shape[axis]).collect();
        shape.extend(free(&a.shape, &left_used));
        shape.extend(free(&b.shape, &right_used));
        self.push_tensor(
            Op::Dot { left, right, axes },
            merge(a.dtype, b.dtype),
            shape,
        )
    }

    // --- Structure ---

    /// Nx's `conv(input, kernel, options)`; the result type is `nxvk_kernels::conv`'s.
    pub fn conv(&mut self, input: NodeId, kernel: NodeId, options: ConvOptions) -> Result<NodeId> {
        const OP: &str = "conv";
        let (x, k) = (self.tensor(OP, input)?, self.tensor(OP, kernel)?);
        let geometry = ConvGeometry::new(&x.shape, &k.shape, &options)
            .map_err(|detail| bad(OP, &[&x, &k], detail))?;
        self.push_tensor(
            Op::Conv {
                input,
                kernel,
                options,
            },
            nxvk_kernels::conv::result_dtype(x.dtype, k.dtype),
            geometry.output_shape,
        )
    }

    /// Nx's `reverse`: the elements in reverse order along each of `axes`.
    pub fn reverse(&mut self, input: NodeId, axes: &[usize]) -> Result<NodeId> {
        const OP: &str = "reverse";
        let tensor = self.tensor(OP, input)?;
        let mut sorted = axes.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != axes.len() || sorted.iter().any(|&axis| axis >= tensor.shape.len()) {
            return Err(bad(
                OP,
                &[&tensor],
                format!(
                    "axes {axes:?} are not distinct axes of rank {}",
                    tensor.shape.len()
                ),
            ));
        }
        self.push_tensor(
            Op::Reverse {
                input,
                axes: axes.to_vec(),
            },
            tensor.dtype,
            tensor.shape,
        )
    }

    /// Element `index` of a tuple-valued node.
    pub fn elem(&mut self, tuple: NodeId, index: usize) -> Result<NodeId> {
        let tensor = match self.node_type("elem", tuple)? {
            NodeType::Tuple(items) => items.get(index).cloned(),
            NodeType::Tensor(_) | NodeType::Function { .. } => None,
        }
        .ok_or_else(|| Error::BadOperands {
            op: "elem",
            shapes: Vec::new(),
            dtypes: Vec::new(),
            detail: format!("node {} has no tuple element {index}", tuple.index()),
        })?;
        self.push(Op::Elem { tuple, index }, NodeType::Tensor(tensor))
    }

    pub fn metadata(&mut self, input: NodeId, label: &str) -> Result<NodeId> {
        let tensor = self.tensor("metadata", input)?;
        self.push(
            Op::Metadata {
                input,
                label: label.to_owned(),
            },
            NodeType::Tensor(tensor),
        )
    }

    pub fn fun(&mut self, body: Graph) -> Result<NodeId> {
        let ty = NodeType::Function {
            parameters: body.parameters.clone(),
            results: body.output_types(),
        };
        self.push(
            Op::Fun {
                body: Arc::new(body),
            },
            ty,
        )
    }

    /// Checks that `inputs` match `graph`'s parameters.
    fn check_call(&self, op: &'static str, inputs: &[NodeId], graph: &Graph) -> Result<()> {
        let types = inputs
            .iter()
            .map(|&id| self.tensor(op, id))
            .collect::<Result<Vec<_>>>()?;
        if types != graph.parameters {
            let shown: Vec<&TensorType> = types.iter().collect();
            return Err(bad(
                op,
                &shown,
                format!("a nested graph takes {:?}", graph.parameters),
            ));
        }
        Ok(())
    }

    pub fn cond(
        &mut self,
        inputs: &[NodeId],
        clauses: Vec<CondClause>,
        otherwise: Graph,
    ) -> Result<NodeId> {
        const OP: &str = "cond";
        let results = otherwise.output_types();
        self.check_call(OP, inputs, &otherwise)?;
        for clause in &clauses {
            self.check_call(OP, inputs, &clause.predicate)?;
            self.check_call(OP, inputs, &clause.body)?;
            if clause.predicate.output_types() != [TensorType::new(DType::U8, &[])] {
                return Err(bad(OP, &[], "a predicate must give one u8 scalar"));
            }
            if clause.body.output_types() != results {
                return Err(bad(OP, &[], "every branch must give the same types"));
            }
        }
        self.push(
            Op::Cond {
                inputs: inputs.to_vec(),
                clauses,
                otherwise: Arc::new(otherwise),
            },
            NodeType::Tuple(results),
        )
    }

    pub fn while_loop(
        &mut self,
        initial: &[NodeId],
        condition: Graph,
        body: Graph,
    ) -> Result<NodeId> {
        const OP: &str = "while";
        self.check_call(OP, initial, &condition)?;
        self.check_call(OP, initial, &body)?;
        if condition.output_types() != [TensorType::new(DType::U8, &[])] {
            return Err(bad(OP, &[], "the condition must give one u8 scalar"));
        }
        if body.output_types() != body.parameters {
            return Err(bad(OP, &[], "the body must give back the state's types"));
        }
        let results = body.parameters.clone();
        self.push(
            Op::While {
                initial: initial.to_vec(),
                condition: Arc::new(condition),
                body: Arc::new(body),
            },
            NodeType::Tuple(results),
        )
    }

    pub fn block(&mut self, name: &str, inputs: &[NodeId], default: Graph) -> Result<NodeId> {
        self.check_call("block", inputs, &default)?;
        let results = default.output_types();
        self.push(
            Op::Block {
                name: name.to_owned(),
                inputs: inputs.to_vec(),
                default: Arc::new(default),
            },
            NodeType::Tuple(results),
        )
    }

    /// The finished graph with `outputs` (each a tensor node).
    pub fn finish(mut self, outputs: &[NodeId]) -> Result<Graph> {
        for &output in outputs {
            self.tensor("graph output", output)?;
        }
        self.graph.outputs = outputs.to_vec();
        Ok(self.graph)
    }
}

/// `axes` (`None`: all) sorted and checked against `tensor`, and the shape left after
/// reducing them (size 1 where `keep_axes`).
fn reduced_shape(
    op: &'static str,
    tensor: &TensorType,
    axes: Option<&[usize]>,
    keep_axes: bool,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let rank = tensor.shape.len();
    let mut sorted: Vec<usize> = axes.map_or_else(|| (0..rank).collect(), <[usize]>::to_vec);
    sorted.sort_unstable();
    let repeated = sorted.windows(2).any(|pair| pair[0] == pair[1]);
    if repeated || sorted.iter().any(|&axis| axis >= rank) {
        return Err(bad(
            op,
            &[tensor],
            format!("axes {axes:?} are not distinct axes of rank {rank}"),
        ));
    }
    let shape = (0..rank)
        .filter_map(
            |axis| match (sorted.binary_search(&axis).is_ok(), keep_axes) {
                (false, _) => Some(tensor.shape[axis]),
                (true, true) => Some(1),
                (true, false) => None,
            },
        )
        .collect();
    Ok((sorted, shape))
}

/// The contiguous layout of a tensor type, for checking views through nxvk-core's functions.
/// The shape of a slice of `tensor` with `n_starts` starts, `lengths` and `strides`
/// (`ceil(length / stride)` per axis), when there is one start, one length no longer than its
/// axis and one positive stride per axis.
pub(crate) fn sliced_shape(
    tensor: &TensorType,
    n_starts: usize,
    lengths: &[usize],
    strides: &[usize],
) -> Result<Vec<usize>> {
    let rank = tensor.shape.len();
    let valid = n_starts == rank
        && lengths.len() == rank
        && strides.len() == rank
        && strides.iter().all(|&stride| stride > 0)
        && lengths
            .iter()
            .zip(&tensor.shape)
            .all(|(length, size)| length <= size);
    if !valid {
        return Err(bad(
            "slice",
            &[tensor],
            format!(
                "needs one start, one length (at most the axis' size) and one positive stride per axis; got {n_starts} starts, lengths {lengths:?}, strides {strides:?}"
            ),
        ));
    }
    Ok(lengths
        .iter()
        .zip(strides)
        .map(|(&length, &stride)| length.div_ceil(stride))
        .collect())
}

fn view_layout(tensor: &TensorType) -> Result<Layout> {
    Layout::from_parts(
        tensor.shape.clone(),
        nxvk_core::contiguous_strides(&tensor.shape),
        0,
    )
}

/// Bytes a tensor of `dtype` and `shape` needs, or an error when that overflows.
fn checked_elements(op: &'static str, dtype: DType, shape: &[usize]) -> Result<u64> {
    shape
        .iter()
        .try_fold(1u64, |count, &size| count.checked_mul(size as u64))
        .and_then(|count| count.checked_mul(u64::from(dtype.bits())))
        .map(|bits| bits.div_ceil(8))
        .ok_or_else(|| {
            bad(
                op,
                &[&TensorType::new(dtype, shape)],
                "the tensor's size overflows",
            )
        })
}

/// The little-endian bytes of `value` as one element of a native real `dtype`, or of `value + 0i`
/// as a complex one.
pub(crate) fn scalar_bytes(dtype: DType, value: f64) -> Option<Vec<u8>> {
    Some(match dtype {
        DType::S8 => (value as i8).to_le_bytes().to_vec(),
        DType::S16 => (value as i16).to_le_bytes().to_vec(),
        DType::S32 => (value as i32).to_le_bytes().to_vec(),
        DType::S64 => (value as i64).to_le_bytes().to_vec(),
        DType::U8 => (value as u8).to_le_bytes().to_vec(),
        DType::U16 => (value as u16).to_le_bytes().to_vec(),
        DType::U32 => (value as u32).to_le_bytes().to_vec(),
        DType::U64 => (value as u64).to_le_bytes().to_vec(),
        DType::F16 => nxvk_core::f16::from_f64(value).to_le_bytes().to_vec(),
        DType::BF16 => nxvk_core::bf16::from_f64(value).to_le_bytes().to_vec(),
        DType::F32 => (value as f32).to_le_bytes().to_vec(),
        DType::F64 => value.to_le_bytes().to_vec(),
        DType::C64 => [(value as f32).to_le_bytes(), 0f32.to_le_bytes()].concat(),
        DType::C128 => [value.to_le_bytes(), 0f64.to_le_bytes()].concat(),
        _ => return None,
    })
}
