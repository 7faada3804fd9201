//! The graph IR: an arena of nodes with typed handles, mirroring `Nx.Defn.Expr`.
//!
//! A [`Graph`] owns its nodes in creation order, which is a topological order: an operand
//! always has a smaller [`NodeId`] than its user. Every node carries its op and its inferred
//! output type (dtype and shape, or a tuple of them for `cond`, `while`, `block` and the
//! multi-output linear-algebra nodes `qr`, `lu` and `eigh`), so later
//! passes never re-derive types. Graphs are only made by [`GraphBuilder`](crate::GraphBuilder)
//! (directly or through the decoder), which checks operands and infers types with Nx's rules:
//! a `Graph` value is always well formed.
//!
//! Elementwise ops are the op table's [`UnaryOp`]/[`BinaryOp`] (one node kind each, not one
//! per op), so every op the catalog gains is a graph op at once. Structural kinds (`fun`,
//! `cond`, `while`, `block`) hold nested graphs whose parameters are the values passed in.

use nxvk_core::DType;
use nxvk_kernels::sort::Direction;
use nxvk_kernels::{
    BinaryOp, ConvOptions, ReduceOp, ScanOp, ScatterSelect, TieBreak, TriangularSolveOptions,
    UnaryOp, WindowOp, WindowOptions,
};
use std::sync::Arc;

/// A handle to a node of one [`Graph`] (its position in the arena).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub(crate) u32);

impl NodeId {
    /// Position of the node in its graph's arena.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// The dtype and shape of one tensor value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: &[usize]) -> Self {
        TensorType {
            dtype,
            shape: shape.to_vec(),
        }
    }

    pub fn n_elements(&self) -> usize {
        self.shape.iter().product()
    }
}

/// What a node produces.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NodeType {
    /// One tensor.
    Tensor(TensorType),
    /// Several tensors (`cond`, `while`, `block`); read one with an `elem` node.
    Tuple(Vec<TensorType>),
    /// A function value (`fun`): its parameter and result types.
    Function {
        parameters: Vec<TensorType>,
        results: Vec<TensorType>,
    },
}

impl NodeType {
    /// The tensor type, when the node produces exactly one tensor.
    pub fn tensor(&self) -> Option<&TensorType> {
        match self {
            NodeType::Tensor(tensor) => Some(tensor),
            NodeType::Tuple(_) | NodeType::Function { .. } => None,
        }
    }
}

/// Which values a `dot` contracts and batches over (Nx's `dot/6`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DotAxes {
    pub contract_left: Vec<usize>,
    pub batch_left: Vec<usize>,
    pub contract_right: Vec<usize>,
    pub batch_right: Vec<usize>,
}

impl DotAxes {
    /// The matrix product `x[m, k] . w[k, n]`: axis 1 of the left operand contracted with
    /// axis 0 of the right, no batch axes.
    pub fn matrix_product() -> DotAxes {
        DotAxes {
            contract_left: vec![1],
            batch_left: vec![],
            contract_right: vec![0],
            batch_right: vec![],
        }
    }
}

/// One clause of a `cond`: a predicate graph (one u8 scalar output) and a body graph, both
/// over the cond's inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct CondClause {
    pub predicate: Arc<Graph>,
    pub body: Arc<Graph>,
}

/// How `indexed_put`/`indexed_add` combine an update with the target's element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexedUpdate {
    Put,
    Add,
}

impl IndexedUpdate {
    /// Nx's name of the op.
    pub const fn name(self) -> &'static str {
        match self {
            IndexedUpdate::Put => "indexed_put",
            IndexedUpdate::Add => "indexed_add",
        }
    }
}

/// Which of Nx's linear-algebra blocks (`Nx.Block.LinAlg.*`) a [`Op::LinAlg`] node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinAlgKind {
    /// `l` with `l l^T = a` (one tensor).
    Cholesky,
    /// `x` with `a x = b` (one tensor; two operands).
    Solve,
    /// `{q, r}`; `complete` is Nx's `mode: :complete`, else `:reduced`.
    Qr { complete: bool },
    /// `{p, l, u}` with `a = p l u`; `p` has the input's dtype, as in Nx.
    Lu,
    /// One value per matrix (one tensor).
    Determinant,
    /// `{eigenvalues, eigenvectors}` of symmetric matrices.
    Eigh,
}

impl LinAlgKind {
    /// Every kind, in encoding order.
    pub const ALL: [LinAlgKind; 7] = [
        LinAlgKind::Cholesky,
        LinAlgKind::Solve,
        LinAlgKind::Qr { complete: false },
        LinAlgKind::Qr { complete: true },
        LinAlgKind::Lu,
        LinAlgKind::Determinant,
        LinAlgKind::Eigh,
    ];

    /// Nx's name of the op.
    pub const fn name(self) -> &'static str {
        match self {
            LinAlgKind::Cholesky => "cholesky",
            LinAlgKind::Solve => "solve",
            LinAlgKind::Qr { .. } => "qr",
            LinAlgKind::Lu => "lu",
            LinAlgKind::Determinant => "determinant",
            LinAlgKind::Eigh => "eigh",
        }
    }

    /// The name the encoding writes (the QR mode folded in).
    pub const fn encoded_name(self) -> &'static str {
        match self {
            LinAlgKind::Qr { complete: false } => "qr_reduced",
            LinAlgKind::Qr { complete: true } => "qr_complete",
            other => other.name(),
        }
    }

    /// How many tensors the node takes.
    pub const fn arity(self) -> usize {
        match self {
            LinAlgKind::Solve => 2,
            _ => 1,
        }
    }
}

/// Where the window of a dynamic `slice`/`put_slice` starts on one axis (Nx takes an integer
/// or a scalar tensor per axis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SliceStart {
    /// Known when the graph is built; in a built graph already clamped so the window fits.
    Static(i64),
    /// A scalar integer node (8 to 64 bits, signed or not), clamped when the graph runs.
    Node(NodeId),
}

impl SliceStart {
    /// The values of `starts` when every one is static.
    pub fn all_static(starts: &[SliceStart]) -> Option<Vec<i64>> {
        starts
            .iter()
            .map(|start| match start {
                SliceStart::Static(value) => Some(*value),
                SliceStart::Node(_) => None,
            })
            .collect()
    }

    /// The start nodes among `starts`, in axis order.
    pub(crate) fn nodes(starts: &[SliceStart]) -> impl Iterator<Item = NodeId> + '_ {
        starts.iter().filter_map(|start| match start {
            SliceStart::Static(_) => None,
            SliceStart::Node(node) => Some(*node),
        })
    }
}

/// The op of a node. Operands are [`NodeId`]s of the same graph.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// The `index`th input of the graph.
    Parameter {
        index: usize,
    },
    /// A scalar (one element, little-endian bytes of the node's dtype) broadcast to the node's
    /// shape: Nx's `constant`.
    Constant {
        element: Vec<u8>,
    },
    /// A literal tensor (all elements, little-endian, row-major): Nx's `tensor`.
    Literal {
        bytes: Vec<u8>,
    },
    Unary {
        op: UnaryOp,
        input: NodeId,
    },
    Binary {
        op: BinaryOp,
        left: NodeId,
        right: NodeId,
    },
    /// Conversion to the node's dtype (Nx's `as_type`).
    AsType {
        input: NodeId,
    },
    /// Broadcast to the node's shape; input axis `i` becomes output axis `axes[i]`.
    Broadcast {
        input: NodeId,
        axes: Vec<usize>,
    },
    /// Same elements in row-major order, the node's shape.
    Reshape {
        input: NodeId,
    },
    Transpose {
        input: NodeId,
        permutation: Vec<usize>,
    },
    /// Removes the listed size-1 axes.
    Squeeze {
        input: NodeId,
        axes: Vec<usize>,
    },
    /// `lengths` elements from `starts`, every `strides`th.
    Slice {
        input: NodeId,
        starts: Vec<usize>,
        lengths: Vec<usize>,
        strides: Vec<usize>,
    },
    /// Elementwise `predicate != 0 ? on_true : on_false`, broadcasting all three.
    Select {
        predicate: NodeId,
        on_true: NodeId,
        on_false: NodeId,
    },
    /// `min(max(input, min), max)` with scalar bounds.
    Clip {
        input: NodeId,
        min: NodeId,
        max: NodeId,
    },
    /// A reduction over `axes` (sorted; argmax/argmin: one axis, or all axes when empty
    /// and `all_axes`).
    Reduce {
        op: ReduceOp,
        input: NodeId,
        axes: Vec<usize>,
        keep_axes: bool,
        tie_break: TieBreak,
    },
    Dot {
        left: NodeId,
        right: NodeId,
        axes: DotAxes,
    },
    /// Nx's `conv/4` (`nxvk_kernels::conv` states the semantics).
    Conv {
        input: NodeId,
        kernel: NodeId,
        options: ConvOptions,
    },
    /// Nx's `reverse` over `axes`.
    Reverse {
        input: NodeId,
        axes: Vec<usize>,
    },
    /// Element `index` of a tuple-valued node.
    Elem {
        tuple: NodeId,
        index: usize,
    },
    /// A value passed through with a label (Nx's `metadata`; hooks and stop_grad live here).
    Metadata {
        input: NodeId,
        label: String,
    },
    /// A function value: `body`'s parameters are the function's arguments.
    Fun {
        body: Arc<Graph>,
    },
    /// The first clause whose predicate holds runs its body, else `otherwise`; all over
    /// `inputs`, all with the same output types.
    Cond {
        inputs: Vec<NodeId>,
        clauses: Vec<CondClause>,
        otherwise: Arc<Graph>,
    },
    /// `state = initial; while condition(state) != 0 { state = body(state) }`.
    While {
        initial: Vec<NodeId>,
        condition: Arc<Graph>,
        body: Arc<Graph>,
    },
    /// An optional fused kernel named `name` (Nx's `block`/`optional`): a native kernel where
    /// the catalog has one, else `default` over `inputs`.
    Block {
        name: String,
        inputs: Vec<NodeId>,
        default: Arc<Graph>,
    },
    /// Nx's `reduce` with a reducer function: `init` (a scalar) folded with every element of
    /// `input` over `axes` (sorted) by `reducer`, whose two scalar parameters and scalar result
    /// have the node's dtype (`input` and `init` are converted to it first, as Nx's `as_type`
    /// converts; the node keeps its operands as given, so a graph encodes one node per call).
    /// The reducer is assumed associative
    /// and commutative (as XLA assumes), so the GPU may fold in any order; `init` is folded in
    /// exactly once, and an empty reduction gives `init`.
    ReduceWith {
        input: NodeId,
        init: NodeId,
        reducer: Arc<Graph>,
        axes: Vec<usize>,
        keep_axes: bool,
    },
    /// Nx's `window_reduce` with a reducer function (`nxvk_kernels::window`'s geometry): each
    /// window folded from `init`, the padding holding `init`; dtypes as for `ReduceWith`.
    WindowReduceWith {
        input: NodeId,
        init: NodeId,
        reducer: Arc<Graph>,
        window_dimensions: Vec<usize>,
        options: WindowOptions,
    },
    // Data movement, indexing, scans, windows, creation and sorting: each runs the eager
    // catalog's op of the same name as its own stage (none of them fuses).
    /// Nx's `pad`: per axis `(low, high, interior)`; negative `low`/`high` crop. `value` is a
    /// scalar of the input's dtype.
    Pad {
        input: NodeId,
        value: NodeId,
        config: Vec<(i64, i64, usize)>,
    },
    /// Nx's `concatenate` along `axis`.
    Concatenate {
        inputs: Vec<NodeId>,
        axis: usize,
    },
    /// `input` with `update` written from `starts` (already clamped so the update fits, as
    /// Nx clamps).
    PutSlice {
        input: NodeId,
        update: NodeId,
        starts: Vec<usize>,
    },
    /// Nx's `slice` at starts of which at least one is a node: `lengths` elements from each
    /// start, every `strides`th, each start clamped to `0..=size - length` when the graph runs
    /// (as Nx clamps). The start nodes are operands after `input`.
    DynamicSlice {
        input: NodeId,
        starts: Vec<SliceStart>,
        lengths: Vec<usize>,
        strides: Vec<usize>,
    },
    /// Nx's `put_slice` at starts of which at least one is a node, each clamped when the graph
    /// runs so the update fits. The start nodes are operands after `input` and `update`.
    DynamicPutSlice {
        input: NodeId,
        update: NodeId,
        starts: Vec<SliceStart>,
    },
    /// Nx's `gather`: rows of `indices` (last axis: coordinates on `axes`) select elements.
    Gather {
        input: NodeId,
        indices: NodeId,
        axes: Vec<usize>,
    },
    /// Nx's `take` along `axis`.
    Take {
        input: NodeId,
        indices: NodeId,
        axis: usize,
    },
    /// Nx's `take_along_axis`.
    TakeAlongAxis {
        input: NodeId,
        indices: NodeId,
        axis: usize,
    },
    /// Nx's `indexed_put`/`indexed_add`: `indices` of shape `[n, axes.len()]`, `updates` of
    /// shape `[n, ...window over the other axes]`.
    Indexed {
        update: IndexedUpdate,
        target: NodeId,
        indices: NodeId,
        updates: NodeId,
        axes: Vec<usize>,
    },
    /// Nx's cumulative ops along `axis`, from the end when `reverse`.
    Cumulative {
        op: ScanOp,
        input: NodeId,
        axis: usize,
        reverse: bool,
    },
    /// Nx's window_sum/product/max/min over windows of `window`.
    Window {
        op: WindowOp,
        input: NodeId,
        window: Vec<usize>,
        options: WindowOptions,
    },
    /// Nx's window_scatter_max/min: `source` (the pooled shape) scattered onto the positions
    /// each window of `input` selects, over the scalar `init_value`.
    WindowScatter {
        select: ScatterSelect,
        input: NodeId,
        source: NodeId,
        init_value: NodeId,
        window: Vec<usize>,
        options: WindowOptions,
    },
    /// Nx's `iota` of the node's type: coordinates along `axis`, or row-major positions.
    Iota {
        axis: Option<usize>,
    },
    /// Nx's stable `sort` along `axis`, or `argsort` (positions, of the node's dtype) when
    /// `positions`.
    Sort {
        input: NodeId,
        axis: usize,
        direction: Direction,
        positions: bool,
    },
    // Fourier transforms and linear algebra: each runs the eager catalog's GPU kernel as its
    // own stage.
    /// Nx's `fft` (or `ifft` when `inverse`) along `axis`, over `length` elements (the input
    /// padded with zeros or truncated to it).
    Fft {
        input: NodeId,
        inverse: bool,
        length: usize,
        axis: usize,
    },
    /// Nx's `triangular_solve`: `x` with `op(a) x = b` (or `x op(a) = b`), reading one
    /// triangle of `a`.
    TriangularSolve {
        a: NodeId,
        b: NodeId,
        options: TriangularSolveOptions,
    },
    /// One of Nx's linear-algebra blocks run natively; a tuple for `qr`, `lu` and `eigh`.
    LinAlg {
        kind: LinAlgKind,
        inputs: Vec<NodeId>,
    },
}

impl Op {
    /// Nx's name of the op (for error messages and stage names).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Parameter { .. } => "parameter",
            Op::Constant { .. } => "constant",
            Op::Literal { .. } => "tensor",
            Op::Unary { op, .. } => op.name(),
            Op::Binary { op, .. } => op.name(),
            Op::AsType { .. } => "as_type",
            Op::Broadcast { .. } => "broadcast",
            Op::Reshape { .. } => "reshape",
            Op::Transpose { .. } => "transpose",
            Op::Squeeze { .. } => "squeeze",
            Op::Slice { .. } => "slice",
            Op::Select { .. } => "select",
            Op::Clip { .. } => "clip",
            Op::Reduce { op, .. } => op.name(),
            Op::Dot { .. } => "dot",
            Op::Conv { .. } => "conv",
            Op::Reverse { .. } => "reverse",
            Op::Elem { .. } => "elem",
            Op::Metadata { .. } => "metadata",
            Op::Fun { .. } => "fun",
            Op::Cond { .. } => "cond",
            Op::While { .. } => "while",
            Op::Block { .. } => "block",
            Op::ReduceWith { .. } => "reduce",
            Op::WindowReduceWith { .. } => "window_reduce",
            Op::Pad { .. } => "pad",
            Op::Concatenate { .. } => "concatenate",
            Op::PutSlice { .. } => "put_slice",
            Op::DynamicSlice { .. } => "slice",
            Op::DynamicPutSlice { .. } => "put_slice",
            Op::Gather { .. } => "gather",
            Op::Take { .. } => "take",
            Op::TakeAlongAxis { .. } => "take_along_axis",
            Op::Indexed { update, .. } => update.name(),
            Op::Cumulative { op, .. } => op.name(),
            Op::Window { op, .. } => op.name(),
            Op::WindowScatter { select, .. } => select.name(),
            Op::Iota { .. } => "iota",
            Op::Sort {
                positions: false, ..
            } => "sort",
            Op::Sort {
                positions: true, ..
            } => "argsort",
            Op::Fft { inverse: false, .. } => "fft",
            Op::Fft { inverse: true, .. } => "ifft",
            Op::TriangularSolve { .. } => "triangular_solve",
            Op::LinAlg { kind, .. } => kind.name(),
        }
    }

    /// The operands of this node in the same graph (nested graphs excluded).
    pub fn operands(&self) -> Vec<NodeId> {
        match self {
            Op::Parameter { .. }
            | Op::Constant { .. }
            | Op::Literal { .. }
            | Op::Fun { .. }
            | Op::Iota { .. } => Vec::new(),
            Op::Unary { input, .. }
            | Op::AsType { input }
            | Op::Broadcast { input, .. }
            | Op::Reshape { input }
            | Op::Transpose { input, .. }
            | Op::Squeeze { input, .. }
            | Op::Slice { input, .. }
            | Op::Reduce { input, .. }
            | Op::Reverse { input, .. }
            | Op::Metadata { input, .. }
            | Op::Cumulative { input, .. }
            | Op::Window { input, .. }
            | Op::Sort { input, .. }
            | Op::Fft { input, .. } => vec![*input],
            Op::Elem { tuple, .. } => vec![*tuple],
            Op::Binary { left, right, .. } | Op::Dot { left, right, .. } => vec![*left, *right],
            Op::Conv { input, kernel, .. } => vec![*input, *kernel],
            Op::Select {
                predicate,
                on_true,
                on_false,
            } => vec![*predicate, *on_true, *on_false],
            Op::Clip { input, min, max } => vec![*input, *min, *max],
            Op::Cond { inputs, .. } | Op::Block { inputs, .. } | Op::LinAlg { inputs, .. } => {
                inputs.clone()
            }
            Op::TriangularSolve { a, b, .. } => vec![*a, *b],
            Op::While { initial, .. } => initial.clone(),
            Op::ReduceWith { input, init, .. } | Op::WindowReduceWith { input, init, .. } => {
                vec![*input, *init]
            }
            Op::Pad { input, value, .. } => vec![*input, *value],
            Op::Concatenate { inputs, .. } => inputs.clone(),
            Op::PutSlice { input, update, .. } => vec![*input, *update],
            Op::DynamicSlice { input, starts, .. } => std::iter::once(*input)
                .chain(SliceStart::nodes(starts))
                .collect(),
            Op::DynamicPutSlice {
                input,
                update,
                starts,
            } => [*input, *update]
                .into_iter()
                .chain(SliceStart::nodes(starts))
                .collect(),
            Op::Gather { input, indices, .. }
            | Op::Take { input, indices, .. }
            | Op::TakeAlongAxis { input, indices, .. } => vec![*input, *indices],
            Op::Indexed {
                target,
                indices,
                updates,
                ..
            } => vec![*target, *indices, *updates],
            Op::WindowScatter {
                input,
                source,
                init_value,
                ..
            } => vec![*input, *source, *init_value],
        }
    }
}

/// One node: its op and the type it produces.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub op: Op,
    pub ty: NodeType,
}

/// A graph: parameters, nodes in topological order, and the outputs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    pub(crate) parameters: Vec<TensorType>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) outputs: Vec<NodeId>,
}

impl Graph {
    pub fn parameters(&self) -> &[TensorType] {
        &self.parameters
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    /// The tensor type of `id` (only called on nodes the builder checked to be tensors).
    pub(crate) fn tensor_type(&self, id: NodeId) -> &TensorType {
        match &self.node(id).ty {
            NodeType::Tensor(tensor) => tensor,
            // The builder never lets a tuple or function reach a tensor operand.
            NodeType::Tuple(_) | NodeType::Function { .. } => {
                unreachable!("node {} is not a tensor", id.index())
            }
        }
    }

    /// The output types, in order.
    pub fn output_types(&self) -> Vec<TensorType> {
        self.outputs
            .iter()
            .map(|&id| self.tensor_type(id).clone())
            .collect()
    }

    /// For each node, how many times it is used (as an operand or as a graph output).
    pub fn use_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.nodes.len()];
        for node in &self.nodes {
            for operand in node.op.operands() {
                counts[operand.index()] += 1;
            }
        }
        for output in &self.outputs {
            counts[output.index()] += 1;
        }
        counts
    }
}
