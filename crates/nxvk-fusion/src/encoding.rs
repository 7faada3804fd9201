//! The versioned binary encoding of graphs: what `Nx.Vulkan.Compiler` produces and the NIF
//! hands to [`decode`]. The plan cache hashes the same bytes, so two graphs share a plan
//! exactly when they encode alike.
//!
//! Format (all integers little-endian):
//!
//! ```text
//! file    := "NXVKGRPH" version:u32 graph          (version = 2; version 1 is the same
//!                                                  format without tags 43 and 44, still read)
//! graph   := n_nodes:u32 node* n_outputs:u32 output_id:u32*
//! node    := tag:u8 fields                          (ids refer to earlier nodes)
//! list    := n:u32 item:u64*                        (shapes, axes, starts, ...)
//! ids     := n:u32 id:u32*
//! text    := n:u32 utf8-bytes                       (dtype and op names are Nx's: "f32", "add")
//! bytes   := n:u32 byte*
//!
//! tag fields
//!  0  parameter   dtype:text shape:list            (parameters are numbered in order)
//!  1  constant    dtype:text shape:list element:bytes
//!  2  tensor      dtype:text shape:list data:bytes
//!  3  unary       op:text input:u32
//!  4  binary      op:text left:u32 right:u32
//!  5  as_type     dtype:text input:u32
//!  6  broadcast   input:u32 shape:list axes:list
//!  7  reshape     input:u32 shape:list
//!  8  transpose   input:u32 permutation:list
//!  9  squeeze     input:u32 axes:list
//! 10  slice       input:u32 starts:list lengths:list strides:list
//! 11  select      operands:ids                     (three: predicate, on_true, on_false)
//! 12  clip        operands:ids                     (three: input, min, max)
//! 13  reduce      op:text input:u32 all_axes:u8 axes:list keep_axes:u8 tie_break_high:u8
//! 14  dot         left:u32 right:u32 contract_left:list batch_left:list contract_right:list batch_right:list
//! 15  elem        tuple:u32 index:u32
//! 16  metadata    input:u32 label:text
//! 17  fun         body:graph
//! 18  cond        inputs:ids n_clauses:u32 (predicate:graph body:graph)* otherwise:graph
//! 19  while       initial:ids condition:graph body:graph
//! 20  block       name:text inputs:ids default:graph
//! 21  conv        input:u32 kernel:u32 strides:list padding:pairs input_dilation:list
//!                 kernel_dilation:list feature_group_size:u32 batch_group_size:u32
//!                 input_permutation:perm kernel_permutation:perm output_permutation:perm
//! 22  reverse     input:u32 axes:list
//! 23  pad         input:u32 value:u32 config:triples
//! 24  concatenate inputs:ids axis:u32
//! 25  put_slice   input:u32 update:u32 starts:list  (starts already clamped to fit)
//! 26  gather      input:u32 indices:u32 axes:list
//! 27  take        input:u32 indices:u32 axis:u32
//! 28  take_along_axis input:u32 indices:u32 axis:u32
//! 29  indexed_put target:u32 indices:u32 updates:u32 axes:list
//! 30  indexed_add target:u32 indices:u32 updates:u32 axes:list
//! 31  cumulative  op:text input:u32 axis:u32 reverse:u8       (op: "cumulative_sum", ...)
//! 32  window      op:text input:u32 window:list strides:list padding:pairs dilations:list
//!                 (op: "window_sum", "window_product", "window_max", "window_min")
//! 33  window_scatter op:text input:u32 source:u32 init_value:u32 window:list strides:list
//!                 padding:pairs dilations:list    (op: "window_scatter_max"/"_min")
//! 34  iota        dtype:text shape:list has_axis:u8 axis:u32
//! 35  sort        input:u32 axis:u32 descending:u8
//! 36  argsort     dtype:text input:u32 axis:u32 descending:u8   (dtype: of the positions)
//! 37  reduce_with input:u32 init:u32 axes:list keep_axes:u8 reducer:graph
//! 38  window_reduce_with
//!                 input:u32 init:u32 window_dimensions:list strides:list padding:pairs
//!                 window_dilations:list reducer:graph
//! 39  fft         input:u32 length:u32 axis:u32
//! 40  ifft        input:u32 length:u32 axis:u32
//! 41  triangular_solve a:u32 b:u32 left_side:u8 lower:u8 transpose_a:u8
//! 42  linalg      kind:text inputs:ids             (kind: "cholesky", "solve", "qr_reduced",
//!                 "qr_complete", "lu", "determinant", "eigh"; qr, lu and eigh give a tuple)
//! 43  dynamic_slice input:u32 starts:starts lengths:list strides:list
//! 44  dynamic_put_slice input:u32 update:u32 starts:starts
//!                 (43 and 44: a slice and a put_slice with at least one start given by a node)
//!
//! starts  := n:u32 (0:u8 value:i64 | 1:u8 node:u32)*   (a static start, or a scalar integer
//!                                                    node's id; static ones stored clamped)
//! pairs   := n:u32 (low:i64 high:i64)*
//! triples := n:u32 (low:i64 high:i64 interior:u64)*
//! perm    := present:u8 list                        (present 0: identity, the list is empty)
//! ```
//!
//! Decoding replays the nodes through [`GraphBuilder`], so a decoded graph passed every check
//! a built one does. Arbitrary bytes give an error, never a panic: lengths are checked against
//! the bytes left before anything is allocated, and nesting is limited to [`MAX_DEPTH`].

use crate::builder::GraphBuilder;
use crate::graph::{CondClause, DotAxes, Graph, IndexedUpdate, LinAlgKind, NodeId, Op, SliceStart};
use nxvk_core::{DType, Error, Result};
use nxvk_kernels::sort::Direction;
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak, UnaryOp};
use nxvk_kernels::{
    ConvOptions, ScanOp, ScatterSelect, TriangularSolveOptions, WindowOp, WindowOptions,
};

/// The first bytes of every encoded graph.
pub const MAGIC: &[u8; 8] = b"NXVKGRPH";
/// The format version this crate writes (and the newest it reads).
pub const VERSION: u32 = 2;
/// The oldest format version this crate reads: version 1 lacks tags 43 and 44 (dynamic
/// slices) and means the same as version 2 otherwise.
const OLDEST_READ_VERSION: u32 = 1;
/// The first version with tags 43 and 44.
const DYNAMIC_SLICE_VERSION: u32 = 2;
/// Deepest nesting of graphs (`fun`, `cond`, `while`, `block`) the decoder accepts.
pub const MAX_DEPTH: usize = 32;

const OP: &str = "decode graph";

fn malformed(detail: impl Into<String>) -> Error {
    Error::BadOperands {
        op: OP,
        shapes: Vec::new(),
        dtypes: Vec::new(),
        detail: detail.into(),
    }
}

/// The bytes of `graph` in the format above.
pub fn encode(graph: &Graph) -> Vec<u8> {
    let mut writer = Writer(Vec::new());
    writer.0.extend_from_slice(MAGIC);
    writer.u32(VERSION);
    writer.graph(graph);
    writer.0
}

/// The graph encoded in `bytes`.
pub fn decode(bytes: &[u8]) -> Result<Graph> {
    let mut reader = Reader {
        bytes,
        position: 0,
        version: VERSION,
    };
    if reader.take(MAGIC.len())? != MAGIC {
        return Err(malformed("not an nxvk graph (bad magic)"));
    }
    let version = reader.u32()?;
    if !(OLDEST_READ_VERSION..=VERSION).contains(&version) {
        return Err(malformed(format!(
            "format version {version}; this build reads versions {OLDEST_READ_VERSION} to {VERSION}"
        )));
    }
    reader.version = version;
    let graph = reader.graph(0)?;
    if reader.position != bytes.len() {
        return Err(malformed(format!(
            "{} bytes after the graph",
            bytes.len() - reader.position
        )));
    }
    Ok(graph)
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, value: u8) {
        self.0.push(value);
    }

    fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_le_bytes());
    }

    fn len(&mut self, length: usize) {
        self.u32(length as u32);
    }

    fn id(&mut self, id: NodeId) {
        self.u32(id.0);
    }

    fn ids(&mut self, ids: &[NodeId]) {
        self.len(ids.len());
        ids.iter().for_each(|&id| self.id(id));
    }

    fn list(&mut self, items: &[usize]) {
        self.len(items.len());
        for &item in items {
            self.0.extend_from_slice(&(item as u64).to_le_bytes());
        }
    }

    fn starts(&mut self, starts: &[SliceStart]) {
        self.len(starts.len());
        for start in starts {
            match *start {
                SliceStart::Static(value) => {
                    self.u8(0);
                    self.0.extend_from_slice(&value.to_le_bytes());
                }
                SliceStart::Node(node) => {
                    self.u8(1);
                    self.id(node);
                }
            }
        }
    }

    fn pairs(&mut self, pairs: &[(i64, i64)]) {
        self.len(pairs.len());
        for (low, high) in pairs {
            self.0.extend_from_slice(&low.to_le_bytes());
            self.0.extend_from_slice(&high.to_le_bytes());
        }
    }

    fn triples(&mut self, triples: &[(i64, i64, usize)]) {
        self.len(triples.len());
        for &(low, high, interior) in triples {
            self.0.extend_from_slice(&low.to_le_bytes());
            self.0.extend_from_slice(&high.to_le_bytes());
            self.0.extend_from_slice(&(interior as u64).to_le_bytes());
        }
    }

    fn window(&mut self, window: &[usize], options: &WindowOptions) {
        self.list(window);
        self.list(&options.strides);
        self.pairs(&options.padding);
        self.list(&options.window_dilations);
    }

    fn permutation(&mut self, permutation: &Option<Vec<usize>>) {
        self.u8(u8::from(permutation.is_some()));
        self.list(permutation.as_deref().unwrap_or(&[]));
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.len(bytes.len());
        self.0.extend_from_slice(bytes);
    }

    fn text(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    fn graph(&mut self, graph: &Graph) {
        self.len(graph.nodes.len());
        for node in &graph.nodes {
            let tensor = node.ty.tensor();
            let dtype = tensor.map_or("", |tensor| tensor.dtype.name());
            let shape = tensor.map_or(&[][..], |tensor| &tensor.shape[..]);
            match &node.op {
                Op::Parameter { .. } => {
                    self.u8(0);
                    self.text(dtype);
                    self.list(shape);
                }
                Op::Constant { element } => {
                    self.u8(1);
                    self.text(dtype);
                    self.list(shape);
                    self.bytes(element);
                }
                Op::Literal { bytes } => {
                    self.u8(2);
                    self.text(dtype);
                    self.list(shape);
                    self.bytes(bytes);
                }
                Op::Unary { op, input } => {
                    self.u8(3);
                    self.text(op.name());
                    self.id(*input);
                }
                Op::Binary { op, left, right } => {
                    self.u8(4);
                    self.text(op.name());
                    self.id(*left);
                    self.id(*right);
                }
                Op::AsType { input } => {
                    self.u8(5);
                    self.text(dtype);
                    self.id(*input);
                }
                Op::Broadcast { input, axes } => {
                    self.u8(6);
                    self.id(*input);
                    self.list(shape);
                    self.list(axes);
                }
                Op::Reshape { input } => {
                    self.u8(7);
                    self.id(*input);
                    self.list(shape);
                }
                Op::Transpose { input, permutation } => {
                    self.u8(8);
                    self.id(*input);
                    self.list(permutation);
                }
                Op::Squeeze { input, axes } => {
                    self.u8(9);
                    self.id(*input);
                    self.list(axes);
                }
                Op::Slice {
                    input,
                    starts,
                    lengths,
                    strides,
                } => {
                    self.u8(10);
                    self.id(*input);
                    self.list(starts);
                    self.list(lengths);
                    self.list(strides);
                }
                Op::Select {
                    predicate,
                    on_true,
                    on_false,
                } => {
                    self.u8(11);
                    self.ids(&[*predicate, *on_true, *on_false][..]);
                }
                Op::Clip { input, min, max } => {
                    self.u8(12);
                    self.ids(&[*input, *min, *max][..]);
                }
                Op::Reduce {
                    op,
                    input,
                    axes,
                    keep_axes,
                    tie_break,
                } => {
                    self.u8(13);
                    self.text(op.name());
                    self.id(*input);
                    // All axes are written as "no axes" (argmax/argmin over several axes
                    // exist only that way); for rank 1 the two readings agree.
                    let all_axes = axes.len() == graph.tensor_type(*input).shape.len();
                    self.u8(u8::from(all_axes));
                    self.list(if all_axes { &[] } else { axes });
                    self.u8(u8::from(*keep_axes));
                    self.u8(u8::from(*tie_break == TieBreak::High));
                }
                Op::Dot { left, right, axes } => {
                    self.u8(14);
                    self.id(*left);
                    self.id(*right);
                    self.list(&axes.contract_left);
                    self.list(&axes.batch_left);
                    self.list(&axes.contract_right);
                    self.list(&axes.batch_right);
                }
                Op::Conv {
                    input,
                    kernel,
                    options,
                } => {
                    self.u8(21);
                    self.id(*input);
                    self.id(*kernel);
                    self.list(&options.strides);
                    self.pairs(&options.padding);
                    self.list(&options.input_dilation);
                    self.list(&options.kernel_dilation);
                    self.len(options.feature_group_size);
                    self.len(options.batch_group_size);
                    self.permutation(&options.input_permutation);
                    self.permutation(&options.kernel_permutation);
                    self.permutation(&options.output_permutation);
                }
                Op::Reverse { input, axes } => {
                    self.u8(22);
                    self.id(*input);
                    self.list(axes);
                }
                Op::Pad {
                    input,
                    value,
                    config,
                } => {
                    self.u8(23);
                    self.id(*input);
                    self.id(*value);
                    self.triples(config);
                }
                Op::Concatenate { inputs, axis } => {
                    self.u8(24);
                    self.ids(inputs);
                    self.len(*axis);
                }
                Op::PutSlice {
                    input,
                    update,
                    starts,
                } => {
                    self.u8(25);
                    self.id(*input);
                    self.id(*update);
                    self.list(starts);
                }
                Op::DynamicSlice {
                    input,
                    starts,
                    lengths,
                    strides,
                } => {
                    self.u8(43);
                    self.id(*input);
                    self.starts(starts);
                    self.list(lengths);
                    self.list(strides);
                }
                Op::DynamicPutSlice {
                    input,
                    update,
                    starts,
                } => {
                    self.u8(44);
                    self.id(*input);
                    self.id(*update);
                    self.starts(starts);
                }
                Op::Gather {
                    input,
                    indices,
                    axes,
                } => {
                    self.u8(26);
                    self.id(*input);
                    self.id(*indices);
                    self.list(axes);
                }
                Op::Take {
                    input,
                    indices,
                    axis,
                }
                | Op::TakeAlongAxis {
                    input,
                    indices,
                    axis,
                } => {
                    self.u8(if matches!(node.op, Op::Take { .. }) {
                        27
                    } else {
                        28
                    });
                    self.id(*input);
                    self.id(*indices);
                    self.len(*axis);
                }
                Op::Indexed {
                    update,
                    target,
                    indices,
                    updates,
                    axes,
                } => {
                    self.u8(match update {
                        IndexedUpdate::Put => 29,
                        IndexedUpdate::Add => 30,
                    });
                    self.ids(&[*target, *indices, *updates][..]);
                    self.list(axes);
                }
                Op::Cumulative {
                    op,
                    input,
                    axis,
                    reverse,
                } => {
                    self.u8(31);
                    self.text(op.name());
                    self.id(*input);
                    self.len(*axis);
                    self.u8(u8::from(*reverse));
                }
                Op::Window {
                    op,
                    input,
                    window,
                    options,
                } => {
                    self.u8(32);
                    self.text(op.name());
                    self.id(*input);
                    self.window(window, options);
                }
                Op::WindowScatter {
                    select,
                    input,
                    source,
                    init_value,
                    window,
                    options,
                } => {
                    self.u8(33);
                    self.text(select.name());
                    self.ids(&[*input, *source, *init_value][..]);
                    self.window(window, options);
                }
                Op::Iota { axis } => {
                    self.u8(34);
                    self.text(dtype);
                    self.list(shape);
                    self.u8(u8::from(axis.is_some()));
                    self.len(axis.unwrap_or(0));
                }
                Op::Sort {
                    input,
                    axis,
                    direction,
                    positions,
                } => {
                    if *positions {
                        self.u8(36);
                        self.text(dtype);
                    } else {
                        self.u8(35);
                    }
                    self.id(*input);
                    self.len(*axis);
                    self.u8(u8::from(*direction == Direction::Descending));
                }
                Op::Elem { tuple, index } => {
                    self.u8(15);
                    self.id(*tuple);
                    self.len(*index);
                }
                Op::Metadata { input, label } => {
                    self.u8(16);
                    self.id(*input);
                    self.text(label);
                }
                Op::Fun { body } => {
                    self.u8(17);
                    self.graph(body);
                }
                Op::Cond {
                    inputs,
                    clauses,
                    otherwise,
                } => {
                    self.u8(18);
                    self.ids(inputs);
                    self.len(clauses.len());
                    for clause in clauses {
                        self.graph(&clause.predicate);
                        self.graph(&clause.body);
                    }
                    self.graph(otherwise);
                }
                Op::While {
                    initial,
                    condition,
                    body,
                } => {
                    self.u8(19);
                    self.ids(initial);
                    self.graph(condition);
                    self.graph(body);
                }
                Op::Block {
                    name,
                    inputs,
                    default,
                } => {
                    self.u8(20);
                    self.text(name);
                    self.ids(inputs);
                    self.graph(default);
                }
                Op::ReduceWith {
                    input,
                    init,
                    reducer,
                    axes,
                    keep_axes,
                } => {
                    self.u8(37);
                    self.id(*input);
                    self.id(*init);
                    self.list(axes);
                    self.u8(u8::from(*keep_axes));
                    self.graph(reducer);
                }
                Op::WindowReduceWith {
                    input,
                    init,
                    reducer,
                    window_dimensions,
                    options,
                } => {
                    self.u8(38);
                    self.id(*input);
                    self.id(*init);
                    self.list(window_dimensions);
                    self.list(&options.strides);
                    self.pairs(&options.padding);
                    self.list(&options.window_dilations);
                    self.graph(reducer);
                }
                Op::Fft {
                    input,
                    inverse,
                    length,
                    axis,
                } => {
                    self.u8(if *inverse { 40 } else { 39 });
                    self.id(*input);
                    self.len(*length);
                    self.len(*axis);
                }
                Op::TriangularSolve { a, b, options } => {
                    self.u8(41);
                    self.id(*a);
                    self.id(*b);
                    self.u8(u8::from(options.left_side));
                    self.u8(u8::from(options.lower));
                    self.u8(u8::from(options.transpose_a));
                }
                Op::LinAlg { kind, inputs } => {
                    self.u8(42);
                    self.text(kind.encoded_name());
                    self.ids(inputs);
                }
            }
        }
        self.ids(&graph.outputs);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
    /// The format version being read.
    version: u32,
}

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8]> {
        let end = self
            .position
            .checked_add(count)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| malformed(format!("truncated at byte {}", self.position)))?;
        let taken = &self.bytes[self.position..end];
        self.position = end;
        Ok(taken)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn flag(&mut self) -> Result<bool> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            other => Err(malformed(format!("flag byte {other} is neither 0 nor 1"))),
        }
    }

    fn u32(&mut self) -> Result<u32> {
        let bytes = self.take(4)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// A count of items of `item_bytes` each, checked against the bytes left.
    fn count(&mut self, item_bytes: usize) -> Result<usize> {
        let count = self.u32()? as usize;
        if count.saturating_mul(item_bytes) > self.bytes.len() - self.position {
            return Err(malformed(format!(
                "{count} items announced at byte {}, past the end",
                self.position
            )));
        }
        Ok(count)
    }

    fn id(&mut self) -> Result<NodeId> {
        Ok(NodeId(self.u32()?))
    }

    fn ids(&mut self) -> Result<Vec<NodeId>> {
        let count = self.count(4)?;
        (0..count).map(|_| self.id()).collect()
    }

    fn list(&mut self) -> Result<Vec<usize>> {
        let count = self.count(8)?;
        (0..count)
            .map(|_| {
                let bytes = self.take(8)?;
                let value =
                    u64::from_le_bytes(bytes.try_into().map_err(|_| malformed("short item"))?);
                usize::try_from(value).map_err(|_| malformed(format!("{value} does not fit usize")))
            })
            .collect()
    }

    /// A dynamic slice's starts (tags 43 and 44).
    fn starts(&mut self) -> Result<Vec<SliceStart>> {
        // Each start takes at least a kind byte and a node id.
        let count = self.count(5)?;
        (0..count)
            .map(|_| match self.u8()? {
                0 => Ok(SliceStart::Static(self.i64()?)),
                1 => Ok(SliceStart::Node(self.id()?)),
                other => Err(malformed(format!(
                    "start kind {other} is neither 0 (static) nor 1 (node)"
                ))),
            })
            .collect()
    }

    fn pairs(&mut self) -> Result<Vec<(i64, i64)>> {
        let n = self.count(16)?;
        (0..n).map(|_| Ok((self.i64()?, self.i64()?))).collect()
    }

    fn triples(&mut self) -> Result<Vec<(i64, i64, usize)>> {
        let count = self.count(24)?;
        (0..count)
            .map(|_| {
                let (low, high) = (self.i64()?, self.i64()?);
                let interior = usize::try_from(self.i64()? as u64)
                    .map_err(|_| malformed("an interior padding does not fit usize"))?;
                Ok((low, high, interior))
            })
            .collect()
    }

    fn i64(&mut self) -> Result<i64> {
        let bytes = self.take(8)?;
        Ok(i64::from_le_bytes(
            bytes.try_into().map_err(|_| malformed("short item"))?,
        ))
    }

    /// A window's dimensions and options (tags 32 and 33).
    fn window(&mut self) -> Result<(Vec<usize>, WindowOptions)> {
        let window = self.list()?;
        let options = WindowOptions {
            strides: self.list()?,
            padding: self.pairs()?,
            window_dilations: self.list()?,
        };
        Ok((window, options))
    }

    /// Three operand ids written as `ids`.
    fn three_ids(&mut self, what: &str) -> Result<[NodeId; 3]> {
        let ids = self.ids()?;
        <[NodeId; 3]>::try_from(ids).map_err(|_| malformed(format!("{what} takes three operands")))
    }

    fn named<T: Copy>(&mut self, all: &[T], name_of: fn(T) -> &'static str) -> Result<T> {
        let name = self.text()?;
        all.iter()
            .copied()
            .find(|&item| name_of(item) == name)
            .ok_or_else(|| malformed(format!("unknown op `{name}`")))
    }

    fn direction(&mut self) -> Result<Direction> {
        Ok(if self.flag()? {
            Direction::Descending
        } else {
            Direction::Ascending
        })
    }

    fn permutation(&mut self) -> Result<Option<Vec<usize>>> {
        let present = self.flag()?;
        let list = self.list()?;
        Ok(present.then_some(list))
    }

    fn bytes(&mut self) -> Result<&'a [u8]> {
        let count = self.count(1)?;
        self.take(count)
    }

    fn text(&mut self) -> Result<&'a str> {
        std::str::from_utf8(self.bytes()?).map_err(|_| malformed("a name is not UTF-8"))
    }

    fn dtype(&mut self) -> Result<DType> {
        let name = self.text()?;
        name.parse()
            .map_err(|_| malformed(format!("unknown dtype `{name}`")))
    }

    fn graph(&mut self, depth: usize) -> Result<Graph> {
        if depth > MAX_DEPTH {
            return Err(malformed(format!("graphs nested deeper than {MAX_DEPTH}")));
        }
        let mut builder = GraphBuilder::new();
        // Every node takes at least its tag byte.
        let n_nodes = self.count(1)?;
        for _ in 0..n_nodes {
            self.node(&mut builder, depth)?;
        }
        let outputs = self.ids()?;
        builder.finish(&outputs)
    }

    fn node(&mut self, builder: &mut GraphBuilder, depth: usize) -> Result<NodeId> {
        let tag = self.u8()?;
        match tag {
            0 => {
                let dtype = self.dtype()?;
                builder.parameter(dtype, &self.list()?)
            }
            1 => {
                let dtype = self.dtype()?;
                let shape = self.list()?;
                builder.constant_bytes(dtype, &shape, self.bytes()?)
            }
            2 => {
                let dtype = self.dtype()?;
                let shape = self.list()?;
                builder.literal(dtype, &shape, self.bytes()?)
            }
            3 => {
                let name = self.text()?;
                let op = UnaryOp::ALL
                    .iter()
                    .find(|op| op.name() == name)
                    .ok_or_else(|| malformed(format!("unknown unary op `{name}`")))?;
                builder.unary(*op, self.id()?)
            }
            4 => {
                let name = self.text()?;
                let op = BinaryOp::ALL
                    .iter()
                    .find(|op| op.name() == name)
                    .ok_or_else(|| malformed(format!("unknown binary op `{name}`")))?;
                let left = self.id()?;
                builder.binary(*op, left, self.id()?)
            }
            5 => {
                let dtype = self.dtype()?;
                builder.as_type(self.id()?, dtype)
            }
            6 => {
                let input = self.id()?;
                let shape = self.list()?;
                builder.broadcast(input, &shape, &self.list()?)
            }
            7 => {
                let input = self.id()?;
                builder.reshape(input, &self.list()?)
            }
            8 => {
                let input = self.id()?;
                builder.transpose(input, &self.list()?)
            }
            9 => {
                let input = self.id()?;
                builder.squeeze(input, &self.list()?)
            }
            10 => {
                let input = self.id()?;
                let starts = self.list()?;
                let lengths = self.list()?;
                builder.slice(input, &starts, &lengths, &self.list()?)
            }
            11 | 12 => {
                let ids = self.ids()?;
                let [a, b, c] = ids[..] else {
                    return Err(malformed("select and clip take three operands"));
                };
                if tag == 11 {
                    builder.select(a, b, c)
                } else {
                    builder.clip(a, b, c)
                }
            }
            13 => {
                let name = self.text()?;
                let op = ReduceOp::ALL
                    .iter()
                    .find(|op| op.name() == name)
                    .ok_or_else(|| malformed(format!("unknown reduction `{name}`")))?;
                let input = self.id()?;
                let all_axes = self.flag()?;
                let axes = self.list()?;
                let keep_axes = self.flag()?;
                let tie_break = if self.flag()? {
                    TieBreak::High
                } else {
                    TieBreak::Low
                };
                let axes = (!all_axes).then_some(&axes[..]);
                builder.reduce(*op, input, axes, keep_axes, tie_break)
            }
            14 => {
                let left = self.id()?;
                let right = self.id()?;
                let axes = DotAxes {
                    contract_left: self.list()?,
                    batch_left: self.list()?,
                    contract_right: self.list()?,
                    batch_right: self.list()?,
                };
                builder.dot(left, right, axes)
            }
            15 => {
                let tuple = self.id()?;
                builder.elem(tuple, self.u32()? as usize)
            }
            16 => {
                let input = self.id()?;
                builder.metadata(input, self.text()?)
            }
            17 => {
                let body = self.graph(depth + 1)?;
                builder.fun(body)
            }
            18 => {
                let inputs = self.ids()?;
                // Each clause takes at least two graph headers (8 bytes each).
                let n_clauses = self.count(16)?;
                let clauses = (0..n_clauses)
                    .map(|_| {
                        Ok(CondClause {
                            predicate: self.graph(depth + 1)?.into(),
                            body: self.graph(depth + 1)?.into(),
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let otherwise = self.graph(depth + 1)?;
                builder.cond(&inputs, clauses, otherwise)
            }
            19 => {
                let initial = self.ids()?;
                let condition = self.graph(depth + 1)?;
                let body = self.graph(depth + 1)?;
                builder.while_loop(&initial, condition, body)
            }
            20 => {
                let name = self.text()?;
                let inputs = self.ids()?;
                let default = self.graph(depth + 1)?;
                builder.block(name, &inputs, default)
            }
            21 => {
                let input = self.id()?;
                let kernel = self.id()?;
                let options = ConvOptions {
                    strides: self.list()?,
                    padding: self.pairs()?,
                    input_dilation: self.list()?,
                    kernel_dilation: self.list()?,
                    feature_group_size: self.u32()? as usize,
                    batch_group_size: self.u32()? as usize,
                    input_permutation: self.permutation()?,
                    kernel_permutation: self.permutation()?,
                    output_permutation: self.permutation()?,
                };
                builder.conv(input, kernel, options)
            }
            22 => {
                let input = self.id()?;
                let axes = self.list()?;
                builder.reverse(input, &axes)
            }
            23 => {
                let input = self.id()?;
                let value = self.id()?;
                builder.pad(input, value, &self.triples()?)
            }
            24 => {
                let inputs = self.ids()?;
                builder.concatenate(&inputs, self.u32()? as usize)
            }
            25 => {
                let input = self.id()?;
                let update = self.id()?;
                let starts = self
                    .list()?
                    .into_iter()
                    .map(|start| i64::try_from(start).map_err(|_| malformed("start too large")))
                    .collect::<Result<Vec<i64>>>()?;
                builder.put_slice(input, &starts, update)
            }
            26 => {
                let input = self.id()?;
                let indices = self.id()?;
                builder.gather(input, indices, Some(&self.list()?))
            }
            27 | 28 => {
                let input = self.id()?;
                let indices = self.id()?;
                let axis = self.u32()? as usize;
                if tag == 27 {
                    builder.take(input, indices, axis)
                } else {
                    builder.take_along_axis(input, indices, axis)
                }
            }
            29 | 30 => {
                let update = if tag == 29 {
                    IndexedUpdate::Put
                } else {
                    IndexedUpdate::Add
                };
                let [target, indices, updates] = self.three_ids(update.name())?;
                builder.indexed(update, target, indices, updates, Some(&self.list()?))
            }
            31 => {
                let op = self.named(&ScanOp::ALL, ScanOp::name)?;
                let input = self.id()?;
                let axis = self.u32()? as usize;
                let reverse = self.flag()?;
                builder.cumulative(op, input, axis, reverse)
            }
            32 => {
                let all = [
                    WindowOp::Sum,
                    WindowOp::Product,
                    WindowOp::Max,
                    WindowOp::Min,
                ];
                let op = self.named(&all, WindowOp::name)?;
                let input = self.id()?;
                let (window, options) = self.window()?;
                builder.window(op, input, &window, options)
            }
            33 => {
                let all = [ScatterSelect::Max, ScatterSelect::Min];
                let select = self.named(&all, ScatterSelect::name)?;
                let [input, source, init_value] = self.three_ids(select.name())?;
                let (window, options) = self.window()?;
                builder.window_scatter(select, input, source, init_value, &window, options)
            }
            34 => {
                let dtype = self.dtype()?;
                let shape = self.list()?;
                let has_axis = self.flag()?;
                let axis = self.u32()? as usize;
                builder.iota(dtype, &shape, has_axis.then_some(axis))
            }
            35 | 36 => {
                let positions = if tag == 36 { Some(self.dtype()?) } else { None };
                let input = self.id()?;
                let axis = self.u32()? as usize;
                let direction = self.direction()?;
                builder.sort(input, axis, direction, positions)
            }
            37 => {
                let input = self.id()?;
                let init = self.id()?;
                let axes = self.list()?;
                let keep_axes = self.flag()?;
                let reducer = self.graph(depth + 1)?;
                builder.reduce_with(input, init, reducer, Some(&axes), keep_axes)
            }
            38 => {
                let input = self.id()?;
                let init = self.id()?;
                let window_dimensions = self.list()?;
                let options = WindowOptions {
                    strides: self.list()?,
                    padding: self.pairs()?,
                    window_dilations: self.list()?,
                };
                let reducer = self.graph(depth + 1)?;
                builder.window_reduce_with(input, init, reducer, &window_dimensions, options)
            }
            39 | 40 => {
                let input = self.id()?;
                let length = self.u32()? as usize;
                let axis = self.u32()? as usize;
                builder.fft(input, tag == 40, Some(length), axis)
            }
            41 => {
                let a = self.id()?;
                let b = self.id()?;
                let options = TriangularSolveOptions {
                    left_side: self.flag()?,
                    lower: self.flag()?,
                    transpose_a: self.flag()?,
                };
                builder.triangular_solve(a, b, options)
            }
            42 => {
                let kind = self.named(&LinAlgKind::ALL, LinAlgKind::encoded_name)?;
                builder.linalg(kind, &self.ids()?)
            }
            43 | 44 if self.version < DYNAMIC_SLICE_VERSION => Err(malformed(format!(
                "node tag {tag} needs format version {DYNAMIC_SLICE_VERSION}, the graph has version {}",
                self.version
            ))),
            43 => {
                let input = self.id()?;
                let starts = self.starts()?;
                let lengths = self.list()?;
                builder.dynamic_slice(input, &starts, &lengths, &self.list()?)
            }
            44 => {
                let input = self.id()?;
                let update = self.id()?;
                builder.dynamic_put_slice(input, &self.starts()?, update)
            }
            other => Err(malformed(format!("unknown node tag {other}"))),
        }
    }
}
