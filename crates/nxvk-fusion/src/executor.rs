//! Running a plan: stages in order, values held only until their last use.
//!
//! Each materialised node's value lives in a slot from the stage that makes it to the last
//! stage that reads it (computed by the planner); then the slot is cleared, and the buffer
//! goes back to the device's size-class pool for the next stage that allocates (buffer reuse
//! by liveness; the pool keeps buffers the GPU may still use alive until their batch ends).
//! Dispatches are recorded into the device's batched stream; nothing waits for the GPU except
//! `cond` and `while`, which read their predicate back. From a plan's third run on, most runs
//! skip all of this and replay the first run's recorded commands (`replay.rs`).

use crate::codegen::{FUSED_PUSH_CONSTANT_BYTES, OPAQUE_WORD, PACKET_RANK};
use crate::gemm_epilogue::GemmEpilogueKernel;
use crate::graph::{Graph, IndexedUpdate, NodeId, NodeType, Op, SliceStart};
use crate::linalg_stage;
use crate::plan::{FusedKernel, Plan, Stage};
use crate::plan_cache::PlanCache;
use crate::view::{ViewStep, apply_path};
use nxvk_core::{BufferAccess, DType, Device, Error, Kernel, Result, Tensor};
use nxvk_kernels::codegen::WORKGROUP_SIZE;
use nxvk_kernels::launch::{MAX_ELEMENTS, poison_output, simplify};
use nxvk_kernels::movement::{AxisStart, Starts};
use nxvk_kernels::reduce::{ReduceOptions, reduce};
use nxvk_kernels::{
    EpilogueOutcome, as_type, binary, conv_with_epilogue, dot_with_epilogue, index, movement, sort,
    unary,
};
use nxvk_kernels::{PACKET_ELEMENTS, PACKETS_PER_ITERATION};
use std::sync::Arc;

/// The value of one node while a plan runs.
#[derive(Debug, Clone)]
enum Value {
    Tensor(Tensor),
    Tuple(Vec<Tensor>),
    /// Not computed, already freed, or a function value.
    Absent,
}

/// Most workgroups one fused reduction dispatches (a grid-stride loop covers more rows).
pub(crate) const MAX_REDUCE_GROUPS: u64 = 65_535;

/// The packet path's parameter words for a loop of `loop_shape` cut into rows of
/// `row_length` trailing elements, when every leaf allows it: each leaf's stride between rows
/// (`kept`), then 1 for each leaf that is contiguous along the row, 0 for one constant along it.
/// Leaves that stream start every row at a packet-aligned address; `outputs`, written
/// contiguously over the loop, are packet-aligned too. Rows hold whole packets unless the loop
/// is one row (then the last `count % 4` elements are read one by one).
pub(crate) fn packet_words(
    loop_shape: &[usize],
    row_length: usize,
    leaves: &[Tensor],
    outputs: &[Tensor],
) -> Option<Vec<usize>> {
    let n_elements: usize = loop_shape.iter().product();
    if row_length == 0 || !n_elements.is_multiple_of(row_length) {
        return None;
    }
    let one_row = n_elements == row_length;
    let mut split = loop_shape.len();
    let mut trailing = 1;
    while split > 0 && trailing < row_length {
        split -= 1;
        trailing *= loop_shape[split];
    }
    if trailing != row_length || (!one_row && !row_length.is_multiple_of(PACKET_ELEMENTS as usize))
    {
        return None;
    }
    let (kept_shape, row_shape) = loop_shape.split_at(split);
    let mut streamed = Vec::with_capacity(leaves.len());
    for leaf in leaves {
        let along_row = vec![leaf.layout().strides()[split..].to_vec()];
        let (shape, strides) = simplify(row_shape, &along_row);
        if strides[0].iter().all(|&stride| stride == 0) {
            streamed.push(0);
        } else if shape.len() == 1 && strides[0] == [1] {
            streamed.push(1);
        } else {
            return None;
        }
    }
    let between_rows: Vec<Vec<usize>> = leaves
        .iter()
        .map(|leaf| leaf.layout().strides()[..split].to_vec())
        .collect();
    let (shape, kept) = simplify(kept_shape, &between_rows);
    if shape.len() > 1 {
        return None;
    }
    let kept: Vec<usize> = kept
        .iter()
        .map(|strides| strides.first().copied().unwrap_or(0))
        .collect();
    let packet_aligned = |tensor: &Tensor| {
        let packet = tensor.dtype().byte_size()? * u64::from(PACKET_ELEMENTS);
        tensor
            .device_address()
            .filter(|address| address.is_multiple_of(packet))
    };
    let leaves_aligned =
        leaves
            .iter()
            .zip(&kept)
            .zip(&streamed)
            .all(|((leaf, &kept), &streams)| {
                streams == 0
                    || (packet_aligned(leaf).is_some()
                        && kept.is_multiple_of(PACKET_ELEMENTS as usize))
            });
    let outputs_aligned = outputs
        .iter()
        .all(|output| packet_aligned(output).is_some());
    (leaves_aligned && outputs_aligned).then(|| [kept, streamed].concat())
}

/// One dispatch of a generated kernel (fused or row program): its leaves' addresses and
/// index words in the parameter block, the shared push constants, the declared accesses.
pub(crate) struct GeneratedLaunch<'a> {
    pub kernel: &'a Arc<Kernel>,
    pub loop_shape: &'a [usize],
    pub leaves: &'a [Tensor],
    pub outputs: &'a [Tensor],
    /// The packet path's words ([`packet_words`]), or `None` for the generic path.
    pub packet_words: Option<&'a [usize]>,
    /// Elements (elementwise kernels) or rows (row kernels).
    pub count: usize,
    /// Elements per row.
    pub reduced: usize,
    pub groups: u32,
}

impl GeneratedLaunch<'_> {
    /// Records the dispatch: on the packet path the given words, else each leaf's linear
    /// stride (rank 0, when the loop and every leaf simplify to one axis) or the loop's shape
    /// and every leaf's strides.
    pub(crate) fn dispatch(&self, device: &Device) -> Result<()> {
        let too_large = |detail: String| Error::BadOperands {
            op: "fused kernel",
            shapes: vec![self.loop_shape.to_vec()],
            dtypes: self.outputs.iter().map(Tensor::dtype).collect(),
            detail,
        };
        let n_elements: usize = self.loop_shape.iter().product();
        if n_elements > MAX_ELEMENTS {
            return Err(too_large(format!(
                "{n_elements} elements exceed the kernels' 32-bit index arithmetic"
            )));
        }
        let word = |value: usize| {
            u32::try_from(value).map_err(|_| too_large(format!("{value} does not fit 32 bits")))
        };
        let mut words: Vec<u32> = Vec::new();
        let rank = if let Some(packet_words) = self.packet_words {
            for &value in packet_words {
                words.push(word(value)?);
            }
            PACKET_RANK as usize
        } else {
            let strides: Vec<Vec<usize>> = self
                .leaves
                .iter()
                .map(|leaf| leaf.layout().strides().to_vec())
                .collect();
            let (shape, strides) = simplify(self.loop_shape, &strides);
            if shape.len() <= 1 {
                for leaf in &strides {
                    words.push(word(leaf.first().copied().unwrap_or(0))?);
                }
                0
            } else {
                words.resize(self.leaves.len(), 0);
                for &size in &shape {
                    words.push(word(size)?);
                }
                for leaf in &strides {
                    for &stride in leaf {
                        words.push(word(stride)?);
                    }
                }
                shape.len()
            }
        };
        let mut params: Vec<u8> = Vec::new();
        for tensor in self.leaves.iter().chain(self.outputs) {
            let address = tensor
                .device_address()
                .ok_or_else(|| too_large("sub-byte tensors have no element addresses".into()))?;
            params.extend_from_slice(&address.to_le_bytes());
        }
        for word in words {
            params.extend_from_slice(&word.to_le_bytes());
        }
        let mut push = Vec::with_capacity(FUSED_PUSH_CONSTANT_BYTES);
        push.extend_from_slice(&[0u8; 8]);
        push.extend_from_slice(&word(self.count)?.to_le_bytes());
        push.extend_from_slice(&(rank as u32).to_le_bytes());
        push.extend_from_slice(&word(self.reduced)?.to_le_bytes());
        push.extend_from_slice(&OPAQUE_WORD.to_le_bytes());
        let mut accesses: Vec<BufferAccess<'_>> = self
            .leaves
            .iter()
            .map(|leaf| BufferAccess::Read(leaf.buffer()))
            .collect();
        for output in self.outputs {
            poison_output(output.buffer())?;
            accesses.push(BufferAccess::Write(output.buffer()));
        }
        let groups = self
            .groups
            .min(device.capabilities().max_workgroup_count[0]);
        device.dispatch_with_params(self.kernel, [groups, 1, 1], &push, &params, 0, &accesses)
    }
}

/// Fresh tensors for the values of `roots`, which a generated kernel writes.
pub(crate) fn empty_outputs(
    device: &Arc<Device>,
    graph: &Graph,
    roots: &[NodeId],
) -> Result<Vec<Tensor>> {
    roots
        .iter()
        .map(|&root| {
            let ty = graph.tensor_type(root);
            Tensor::empty(device, ty.dtype, &ty.shape)
        })
        .collect()
}

fn absent(op: &'static str, node: NodeId) -> Error {
    Error::BadOperands {
        op,
        shapes: Vec::new(),
        dtypes: Vec::new(),
        detail: format!(
            "node {} has no tensor value here (planner bug)",
            node.index()
        ),
    }
}

struct Run<'a> {
    plan: &'a Plan,
    cache: &'a PlanCache,
    values: Vec<Value>,
}

impl Run<'_> {
    fn graph(&self) -> &Graph {
        &self.plan.graph
    }

    fn tensor(&self, op: &'static str, node: NodeId) -> Result<&Tensor> {
        match &self.values[node.index()] {
            Value::Tensor(tensor) => Ok(tensor),
            Value::Tuple(_) | Value::Absent => Err(absent(op, node)),
        }
    }

    fn tensors(&self, op: &'static str, nodes: &[NodeId]) -> Result<Vec<Tensor>> {
        nodes
            .iter()
            .map(|&node| self.tensor(op, node).cloned())
            .collect()
    }

    /// A dynamic slice's starts as the catalog takes them: the node starts' values stay on the
    /// device, where the start kernel reads and clamps them.
    fn axis_starts(&self, op: &'static str, starts: &[SliceStart]) -> Result<Vec<AxisStart<'_>>> {
        starts
            .iter()
            .map(|start| match *start {
                SliceStart::Static(value) => Ok(AxisStart::Fixed(value)),
                SliceStart::Node(node) => self.tensor(op, node).map(AxisStart::Tensor),
            })
            .collect()
    }

    fn fused(&self, fused: &FusedKernel) -> Result<Vec<Tensor>> {
        const OP: &str = "fused kernel";
        let device = self.cache.device();
        let graph = self.graph();
        let outputs = empty_outputs(device, graph, &fused.roots)?;
        let n_elements: usize = fused.loop_shape.iter().product();
        if n_elements == 0 {
            return Ok(outputs);
        }
        let leaves = fused
            .leaves
            .iter()
            .map(|leaf| apply_path(self.tensor(OP, leaf.node)?, &leaf.path))
            .collect::<Result<Vec<_>>>()?;
        // The packet path: rows of the reduced length for a reduction; for an elementwise kernel
        // the whole loop as one row, else rows of its last axis (softmax's normaliser, whose
        // row maxima and sums are constant along the row).
        let row_lengths = match fused.reduced_length {
            Some(reduced) => vec![reduced],
            None => vec![n_elements, fused.loop_shape.last().copied().unwrap_or(1)],
        };
        let packet_outputs: &[Tensor] = match fused.reduced_length {
            Some(_) => &[],
            None => &outputs,
        };
        let packet_path = row_lengths
            .into_iter()
            .filter(|_| fused.packet_path)
            .find_map(|row_length| {
                packet_words(&fused.loop_shape, row_length, &leaves, packet_outputs)
                    .map(|words| (row_length, words))
            });
        let workgroup = u64::from(WORKGROUP_SIZE);
        let (count, groups) = match (fused.reduced_length, &packet_path) {
            (Some(reduced), _) => {
                let rows = n_elements / reduced;
                let groups = (rows as u64).div_ceil(fused.rows_per_workgroup.max(1) as u64);
                (rows, groups.min(MAX_REDUCE_GROUPS))
            }
            // One unrolled iteration per invocation, the grid-stride loop covering the rest.
            (None, Some(_)) => {
                let packets = n_elements as u64 / u64::from(PACKET_ELEMENTS);
                let per_group = workgroup * u64::from(PACKETS_PER_ITERATION);
                (n_elements, packets.div_ceil(per_group).max(1))
            }
            (None, None) => (n_elements, (n_elements as u64).div_ceil(workgroup)),
        };
        let groups = u32::try_from(groups).unwrap_or(u32::MAX);
        let reduced = match (fused.reduced_length, &packet_path) {
            (Some(reduced), _) => reduced,
            (None, Some((row_length, _))) => *row_length,
            (None, None) => 0,
        };
        GeneratedLaunch {
            kernel: &fused.kernel,
            loop_shape: &fused.loop_shape,
            leaves: &leaves,
            outputs: &outputs,
            packet_words: packet_path.as_ref().map(|(_, words)| &words[..]),
            count,
            reduced,
            groups,
        }
        .dispatch(device)?;
        if packet_path.is_some() {
            self.cache.count_packet_dispatch();
        }
        Ok(outputs)
    }

    /// A `dot` or `conv` with its epilogue: one GEMM dispatch where the catalog applies it
    /// in the store, else the plain product and the unfused kernel on it (`gemm_epilogue.rs`).
    fn gemm_epilogue(&mut self, stage: &GemmEpilogueKernel) -> Result<Tensor> {
        const OP: &str = "gemm epilogue";
        let plan: &Plan = self.plan;
        let operands = stage
            .unfused
            .leaves
            .iter()
            .enumerate()
            .filter(|&(slot, _)| slot != stage.product_slot)
            .map(|(_, leaf)| apply_path(self.tensor(OP, leaf.node)?, &leaf.path))
            .collect::<Result<Vec<_>>>()?;
        let operands: Vec<&Tensor> = operands.iter().collect();
        let outcome = match &plan.graph.node(stage.product).op {
            Op::Dot { left, right, axes } => dot_with_epilogue(
                self.tensor(OP, *left)?,
                [
                    &axes.contract_left,
                    &axes.batch_left,
                    &axes.contract_right,
                    &axes.batch_right,
                ],
                self.tensor(OP, *right)?,
                &stage.epilogue,
                &operands,
            )?,
            Op::Conv {
                input,
                kernel,
                options,
            } => conv_with_epilogue(
                self.tensor(OP, *input)?,
                self.tensor(OP, *kernel)?,
                options,
                &stage.epilogue,
                &operands,
            )?,
            _ => return Err(absent(OP, stage.product)),
        };
        match outcome {
            EpilogueOutcome::Applied(result) => {
                self.cache.count_gemm_epilogue();
                Ok(result)
            }
            EpilogueOutcome::Plain(product) => {
                self.values[stage.product.index()] = Value::Tensor(product);
                let outputs = self.fused(&stage.unfused);
                self.values[stage.product.index()] = Value::Absent;
                outputs?
                    .into_iter()
                    .next()
                    .ok_or_else(|| absent(OP, stage.root()))
            }
        }
    }

    /// A scalar u8 predicate, read back to the host.
    fn predicate(&self, graph: &Graph, inputs: &[&Tensor]) -> Result<bool> {
        let results = self.cache.run(graph, inputs)?;
        let value = results
            .first()
            .ok_or_else(|| absent("cond", NodeId(0)))?
            .to_vec::<u8>()?;
        Ok(value.first().is_some_and(|&byte| byte != 0))
    }

    fn node(&self, id: NodeId) -> Result<Value> {
        let graph = self.graph();
        let node = graph.node(id);
        let name = node.op.name();
        let device = self.cache.device();
        let tensor_value = |tensor: Tensor| Ok(Value::Tensor(tensor));
        match &node.op {
            Op::Parameter { .. } => Err(absent(name, id)),
            Op::Literal { bytes } => self.plan.constant(device, graph, id, || bytes.clone()),
            Op::Constant { element } => self.plan.constant(device, graph, id, || {
                element.repeat(graph.tensor_type(id).n_elements())
            }),
            Op::Unary { op, input } => tensor_value(unary(*op, self.tensor(name, *input)?)?),
            Op::Binary { op, left, right } => tensor_value(binary(
                *op,
                self.tensor(name, *left)?,
                self.tensor(name, *right)?,
            )?),
            Op::AsType { input } => tensor_value(as_type(
                self.tensor(name, *input)?,
                graph.tensor_type(id).dtype,
            )?),
            // Unfused selects and clips (complex values, which the planner does not fuse) run
            // the catalog's eager kernels.
            Op::Select {
                predicate,
                on_true,
                on_false,
            } => tensor_value(nxvk_kernels::select(
                self.tensor(name, *predicate)?,
                self.tensor(name, *on_true)?,
                self.tensor(name, *on_false)?,
            )?),
            Op::Clip { input, min, max } => tensor_value(nxvk_kernels::clip(
                self.tensor(name, *input)?,
                self.tensor(name, *min)?,
                self.tensor(name, *max)?,
            )?),
            Op::Reduce {
                op,
                input,
                axes,
                keep_axes,
                tie_break,
            } => tensor_value(reduce(
                *op,
                self.tensor(name, *input)?,
                &ReduceOptions {
                    axes: Some(axes),
                    keep_axes: *keep_axes,
                    tie_break: *tie_break,
                    ..ReduceOptions::default()
                },
            )?),
            Op::Dot { left, right, axes } => tensor_value(nxvk_kernels::dot(
                self.tensor(name, *left)?,
                &axes.contract_left,
                &axes.batch_left,
                self.tensor(name, *right)?,
                &axes.contract_right,
                &axes.batch_right,
            )?),
            Op::Conv {
                input,
                kernel,
                options,
            } => tensor_value(nxvk_kernels::conv(
                self.tensor(name, *input)?,
                self.tensor(name, *kernel)?,
                options,
            )?),
            Op::Reverse { input, axes } => {
                tensor_value(movement::reverse(self.tensor(name, *input)?, axes)?)
            }
            Op::Elem { tuple, index } => match &self.values[tuple.index()] {
                Value::Tuple(items) => items
                    .get(*index)
                    .cloned()
                    .map(Value::Tensor)
                    .ok_or_else(|| absent(name, id)),
                Value::Tensor(_) | Value::Absent => Err(absent(name, id)),
            },
            Op::Fun { .. } => Ok(Value::Absent),
            Op::Cond {
                inputs,
                clauses,
                otherwise,
            } => {
                let inputs = self.tensors(name, inputs)?;
                let inputs: Vec<&Tensor> = inputs.iter().collect();
                for clause in clauses {
                    if self.predicate(&clause.predicate, &inputs)? {
                        return Ok(Value::Tuple(self.cache.run(&clause.body, &inputs)?));
                    }
                }
                Ok(Value::Tuple(self.cache.run(otherwise, &inputs)?))
            }
            Op::While {
                initial,
                condition,
                body,
            } => {
                let mut state = self.tensors(name, initial)?;
                loop {
                    let inputs: Vec<&Tensor> = state.iter().collect();
                    if !self.predicate(condition, &inputs)? {
                        return Ok(Value::Tuple(state));
                    }
                    state = self.cache.run(body, &inputs)?;
                }
            }
            Op::Block {
                inputs, default, ..
            } => {
                // Blocks the catalog runs natively are nodes of their own (`Op::LinAlg`): the
                // others run their default expression.
                let inputs = self.tensors(name, inputs)?;
                let inputs: Vec<&Tensor> = inputs.iter().collect();
                Ok(Value::Tuple(self.cache.run(default, &inputs)?))
            }
            Op::Metadata { input, .. } => Ok(Value::Tensor(self.tensor(name, *input)?.clone())),
            // The planner gives these a reducer stage of their own.
            Op::ReduceWith { .. } | Op::WindowReduceWith { .. } => Err(absent(name, id)),
            Op::Pad {
                input,
                value,
                config,
            } => tensor_value(movement::pad(
                self.tensor(name, *input)?,
                self.tensor(name, *value)?,
                config,
            )?),
            Op::Concatenate { inputs, axis } => {
                let inputs = self.tensors(name, inputs)?;
                let inputs: Vec<&Tensor> = inputs.iter().collect();
                tensor_value(movement::concatenate(&inputs, *axis)?)
            }
            Op::PutSlice {
                input,
                update,
                starts,
            } => {
                let starts: Vec<i64> = starts.iter().map(|&start| start as i64).collect();
                tensor_value(movement::put_slice(
                    self.tensor(name, *input)?,
                    &starts,
                    self.tensor(name, *update)?,
                )?)
            }
            Op::DynamicSlice {
                input,
                starts,
                lengths,
                strides,
            } => {
                let starts = self.axis_starts(name, starts)?;
                tensor_value(movement::slice_at(
                    self.tensor(name, *input)?,
                    Starts::PerAxis(&starts),
                    lengths,
                    strides,
                )?)
            }
            Op::DynamicPutSlice {
                input,
                update,
                starts,
            } => {
                let starts = self.axis_starts(name, starts)?;
                tensor_value(movement::put_slice_as(
                    self.tensor(name, *input)?,
                    Starts::PerAxis(&starts),
                    self.tensor(name, *update)?,
                    graph.tensor_type(id).dtype,
                )?)
            }
            Op::Gather {
                input,
                indices,
                axes,
            } => tensor_value(index::gather(
                self.tensor(name, *input)?,
                self.tensor(name, *indices)?,
                Some(axes),
            )?),
            Op::Take {
                input,
                indices,
                axis,
            } => tensor_value(index::take(
                self.tensor(name, *input)?,
                self.tensor(name, *indices)?,
                *axis,
            )?),
            Op::TakeAlongAxis {
                input,
                indices,
                axis,
            } => tensor_value(index::take_along_axis(
                self.tensor(name, *input)?,
                self.tensor(name, *indices)?,
                *axis,
            )?),
            Op::Indexed {
                update,
                target,
                indices,
                updates,
                axes,
            } => {
                let scatter = match update {
                    IndexedUpdate::Put => index::indexed_put,
                    IndexedUpdate::Add => index::indexed_add,
                };
                tensor_value(scatter(
                    self.tensor(name, *target)?,
                    self.tensor(name, *indices)?,
                    self.tensor(name, *updates)?,
                    Some(axes),
                )?)
            }
            Op::Cumulative {
                op,
                input,
                axis,
                reverse,
            } => tensor_value(nxvk_kernels::cumulative(
                *op,
                self.tensor(name, *input)?,
                *axis,
                *reverse,
            )?),
            Op::Window {
                op,
                input,
                window,
                options,
            } => tensor_value(nxvk_kernels::window_reduce(
                *op,
                self.tensor(name, *input)?,
                window,
                options,
            )?),
            Op::WindowScatter {
                select,
                input,
                source,
                init_value,
                window,
                options,
            } => {
                // The kernel's result has its input's type; Nx's is the merge of the source's
                // and the init value's, so the input is converted to that first.
                let input = self.tensor(name, *input)?;
                let dtype = graph.tensor_type(id).dtype;
                let converted;
                let input = if input.dtype() == dtype {
                    input
                } else {
                    converted = as_type(input, dtype)?;
                    &converted
                };
                tensor_value(nxvk_kernels::window_scatter(
                    *select,
                    input,
                    self.tensor(name, *source)?,
                    self.tensor(name, *init_value)?,
                    window,
                    options,
                )?)
            }
            Op::Iota { axis } => {
                let ty = graph.tensor_type(id);
                tensor_value(nxvk_kernels::iota(device, ty.dtype, &ty.shape, *axis)?)
            }
            Op::Sort {
                input,
                axis,
                direction,
                positions,
            } => {
                let input = self.tensor(name, *input)?;
                tensor_value(if *positions {
                    sort::argsort(input, *axis, *direction, graph.tensor_type(id).dtype)?
                } else {
                    sort::sort(input, *axis, *direction)?
                })
            }
            Op::Fft { .. } | Op::TriangularSolve { .. } | Op::LinAlg { .. } => {
                let operands = self.tensors(name, &node.op.operands())?;
                let operands: Vec<&Tensor> = operands.iter().collect();
                let input_dtype = operands.first().map_or(DType::F32, |tensor| tensor.dtype());
                let mut results = linalg_stage::run(&node.op, &operands, input_dtype)?;
                Ok(match &node.ty {
                    NodeType::Tuple(_) => Value::Tuple(results),
                    _ => Value::Tensor(results.remove(0)),
                })
            }
            op => {
                let input = self.tensor(name, op.operands()[0])?;
                let shape = &graph.tensor_type(id).shape;
                let step = ViewStep::of(op, shape).ok_or_else(|| absent(name, id))?;
                tensor_value(step.apply(input)?)
            }
        }
    }
}

/// Most bytes of one materialised constant a plan keeps on the device between runs (larger
/// ones are uploaded on each run).
const KEPT_CONSTANT_BYTES: usize = 1 << 20;

impl Plan {
    /// The value of literal or constant node `id`: uploaded on first use and kept by the plan
    /// when small (no kernel writes a value in place), so later runs upload nothing.
    fn constant(
        &self,
        device: &Arc<Device>,
        graph: &Graph,
        id: NodeId,
        bytes: impl FnOnce() -> Vec<u8>,
    ) -> Result<Value> {
        if let Some(tensor) = self.constants.lock().get(&id) {
            return Ok(Value::Tensor(tensor.clone()));
        }
        let ty = graph.tensor_type(id);
        let bytes = bytes();
        let tensor = Tensor::from_bytes(device, ty.dtype, &ty.shape, &bytes)?;
        if bytes.len() <= KEPT_CONSTANT_BYTES {
            self.constants.lock().insert(id, tensor.clone());
        }
        Ok(Value::Tensor(tensor))
    }

    /// Runs this plan on `inputs` (one per graph parameter, of its dtype and shape).
    pub(crate) fn execute(&self, cache: &PlanCache, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let graph = &self.graph;
        let given: Vec<(DType, &[usize])> = inputs
            .iter()
            .map(|tensor| (tensor.dtype(), tensor.shape()))
            .collect();
        let wanted: Vec<(DType, &[usize])> = graph
            .parameters()
            .iter()
            .map(|parameter| (parameter.dtype, &parameter.shape[..]))
            .collect();
        if given != wanted {
            return Err(Error::BadOperands {
                op: "run plan",
                shapes: inputs
                    .iter()
                    .map(|tensor| tensor.shape().to_vec())
                    .collect(),
                dtypes: inputs.iter().map(|tensor| tensor.dtype()).collect(),
                detail: format!("the graph takes {:?}", graph.parameters()),
            });
        }
        if inputs
            .iter()
            .any(|tensor| !Arc::ptr_eq(tensor.device(), cache.device()))
        {
            return Err(Error::ForeignTensor { op: "run plan" });
        }
        let mut run = Run {
            plan: self,
            cache,
            values: vec![Value::Absent; graph.nodes().len()],
        };
        for (id, node) in graph.nodes().iter().enumerate() {
            if let Op::Parameter { index } = node.op {
                run.values[id] = Value::Tensor(inputs[index].clone());
            }
        }
        for (index, stage) in self.stages.iter().enumerate() {
            match stage {
                Stage::Fused(fused) => {
                    let outputs = run.fused(fused)?;
                    for (&root, output) in fused.roots.iter().zip(outputs) {
                        run.values[root.index()] = Value::Tensor(output);
                    }
                }
                Stage::RowProgram(program) => {
                    let leaves = program
                        .leaves
                        .iter()
                        .map(|leaf| apply_path(run.tensor("row program", leaf.node)?, &leaf.path))
                        .collect::<Result<Vec<_>>>()?;
                    let (outputs, packet) = program.execute(cache.device(), graph, &leaves)?;
                    if packet {
                        cache.count_packet_dispatch();
                    }
                    for (&root, output) in program.roots.iter().zip(outputs) {
                        run.values[root.index()] = Value::Tensor(output);
                    }
                }
                Stage::View(id) | Stage::Node(id) => {
                    run.values[id.index()] = run.node(*id)?;
                }
                Stage::GemmEpilogue(epilogue) => {
                    let value = run.gemm_epilogue(epilogue)?;
                    run.values[epilogue.root().index()] = Value::Tensor(value);
                }
                Stage::Reducer(reducer) => {
                    let [input, init] = graph.node(reducer.node).op.operands()[..] else {
                        return Err(absent("reduce", reducer.node));
                    };
                    let value = reducer.execute(
                        graph,
                        run.tensor("reduce", input)?,
                        run.tensor("reduce", init)?,
                    )?;
                    run.values[reducer.node.index()] = Value::Tensor(value);
                }
            }
            for node in &self.freed_after[index] {
                run.values[node.index()] = Value::Absent;
            }
        }
        graph
            .outputs()
            .iter()
            .map(|&output| run.tensor("graph output", output).cloned())
            .collect()
    }
}
