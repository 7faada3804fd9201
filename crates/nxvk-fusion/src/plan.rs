//! The planner: which nodes are materialised, and the stages that compute them.
//!
//! Policy:
//! - Elementwise nodes (the op table's unary and binary ops, `as_type`, `select`, `clip`,
//!   constants) whose types the device runs natively are *fusible*; views (`broadcast`,
//!   `reshape`, `transpose`, `squeeze`, `slice`) and `metadata` are transparent inside a fused
//!   kernel (they only change which leaf element is read).
//! - A node is *materialised* (written to memory) when it is a graph output, when a
//!   non-fusible node uses it, or when it is not fusible itself. Everything else is inlined
//!   into each kernel that uses it: with cross-stage CSE off (the default, [`PlanOptions`]) a
//!   fusible node used by two kernels is recomputed by both, trading arithmetic for a write
//!   and a read of memory; with it on, such a node is written once and read by both.
//! - A materialised fusible node is a *root*; consecutive roots of one loop shape share one
//!   kernel (multi-output graphs share one schedule), which evaluates each subexpression once
//!   per element. A materialised view over a materialised value is a view stage: no copy.
//! - Reductions whose input is a fusible expression and whose reduced axes are the trailing
//!   ones (or all) take that expression as a fused prologue: the reduction kernel computes it
//!   while it reads, so the expression is never written. Other nodes (reductions in general,
//!   dot, literals, structural kinds) run one by one through the eager API of nxvk-kernels.
//! - Reductions over the last axis whose results (and what is computed from them) only
//!   elementwise roots of the rows' shape read are absorbed into those roots' kernel, a *row
//!   program* (`row_program.rs`, [`PlanOptions::row_programs`]): softmax is one kernel that
//!   never writes its maxima and sums. The planner asks it for groups once materialisation is
//!   known and gives each group one stage at its last root.
//! - A `dot` or `conv` of real floats whose product one elementwise kernel alone reads, element for
//!   element, becomes one stage with that kernel: the GEMM applies the kernel's expression
//!   in its store, a *GEMM epilogue* (`gemm_epilogue.rs`, [`PlanOptions::gemm_epilogues`]),
//!   or, where the GEMM runs split-K or on cooperative matrices (or a convolution's output
//!   is permuted), the stage runs the two parts as before.
//! - A fused reduction's rows are folded by one subgroup each when they are at most
//!   [`SUBGROUP_ROW_WIDTHS`] subgroups wide (several rows per workgroup), else by a workgroup,
//!   both through subgroup shuffles; devices without them fold through shared memory. Whether a
//!   kernel runs its packet path depends on the leaves' layouts and addresses, so the executor
//!   decides it per run (every generated kernel has both paths).

use crate::codegen::{Expression, LeafAccess, RowTeam, elementwise_shader, reduce_shader};
use crate::gemm_epilogue::{GemmEpilogueKernel, fuse_epilogues};
use crate::graph::{Graph, NodeId, Op};
use crate::reducer::{ReducerKernel, plan_stage};
use crate::row_program::{self, NodeFacts, RowProgramKernel, find_groups};
use nxvk_core::{Capabilities, DType, Device, Kernel, Result};
use nxvk_kernels::catalog::{device_supports, elem_of};
use nxvk_kernels::codegen::{F64Math, WORKGROUP_SIZE, f64_math, output_elem};
use nxvk_kernels::op_table::expression;
use nxvk_kernels::reduce::{Accumulation, accumulator_elem, result_dtype};
use nxvk_kernels::types::{binary_types, unary_types};
use nxvk_kernels::{Elem, ReduceOp};
use std::sync::Arc;

/// Planner switches, each a knob with a default chosen by a race.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PlanOptions {
    /// Cross-stage CSE: write a fusible node used by several kernels once instead of
    /// recomputing it in each (`NXVK_KNOB_CSE=on|off`, off until `cargo xtask race cse` says
    /// otherwise).
    pub cross_stage_cse: bool,
    /// Let fused kernels take the packet path (four elements per vector access) where their
    /// leaves allow it (`NXVK_KNOB_PACKETS=on|off`, on: the catalog's dense kernels of the same
    /// shape moved 4377 GB/s against 3313 for the scalar loop on the H200, BENCHMARKS.md).
    pub packet_path: bool,
    /// Fold reduction rows with subgroup shuffles where the device has them, rather than
    /// through a shared-memory tree with a barrier per step (`NXVK_KNOB_ROW_FOLD=subgroup|shared`,
    /// subgroup: the catalog's row kernels fold that way).
    pub subgroup_row_folds: bool,
    /// Compute chains of row reductions and the elementwise outputs that read them (softmax,
    /// log_softmax, layer norm) as one kernel holding each row on chip, where the row fits
    /// (`NXVK_KNOB_ROW_PROGRAM=on|off`, on: `row_program.rs`; softmax reads and writes its
    /// data once instead of three passes).
    pub row_programs: bool,
    /// Apply the elementwise kernel that alone reads a `dot`'s or `conv`'s product in the
    /// GEMM's store, where the GEMM takes one tiled pass (`NXVK_KNOB_GEMM_EPILOGUE=on|off`,
    /// off: `gemm_epilogue.rs`; one dispatch instead of two, but on the H200 relu(x . w + b)
    /// at 4096 took 67 ms against 3.74 unfused, docs/BENCHMARKS.md).
    pub gemm_epilogues: bool,
    /// In row programs, divide f32 values by a divisor the row shares (a reduction result)
    /// through its f64 reciprocal, computed once per row (`nx_div_by_shared`), rather than
    /// `nx_div`, on devices with f64 (`NXVK_KNOB_SHARED_DIVISOR=on|off`, on: on the H200
    /// softmax took 0.232 ms with it against 0.281 without, docs/BENCHMARKS.md).
    pub shared_divisors: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            cross_stage_cse: false,
            packet_path: true,
            subgroup_row_folds: true,
            row_programs: true,
            gemm_epilogues: false,
            shared_divisors: true,
        }
    }
}

/// The switch `NXVK_KNOB_<name>` sets: `on` or `off` by name, else `default` (with a warning
/// for a value that is neither).
fn switch_from_env(name: &str, on: &str, off: &str, default: bool) -> bool {
    let variable = format!("NXVK_KNOB_{name}");
    match std::env::var(&variable) {
        Ok(value) if value == on => true,
        Ok(value) if value == off => false,
        Ok(other) => {
            eprintln!("nxvk: ignoring {variable}={other:?}: expected {on} or {off}");
            default
        }
        Err(_) => default,
    }
}

impl PlanOptions {
    /// The defaults, overridden by `NXVK_KNOB_CSE`, `NXVK_KNOB_PACKETS`, `NXVK_KNOB_ROW_FOLD`,
    /// `NXVK_KNOB_ROW_PROGRAM`, `NXVK_KNOB_GEMM_EPILOGUE` and `NXVK_KNOB_SHARED_DIVISOR`.
    pub fn from_env() -> Self {
        let defaults = PlanOptions::default();
        PlanOptions {
            cross_stage_cse: switch_from_env("CSE", "on", "off", defaults.cross_stage_cse),
            packet_path: switch_from_env("PACKETS", "on", "off", defaults.packet_path),
            subgroup_row_folds: switch_from_env(
                "ROW_FOLD",
                "subgroup",
                "shared",
                defaults.subgroup_row_folds,
            ),
            row_programs: switch_from_env("ROW_PROGRAM", "on", "off", defaults.row_programs),
            gemm_epilogues: switch_from_env("GEMM_EPILOGUE", "on", "off", defaults.gemm_epilogues),
            shared_divisors: switch_from_env(
                "SHARED_DIVISOR",
                "on",
                "off",
                defaults.shared_divisors,
            ),
        }
    }
}

/// A generated kernel with what it reads and writes.
#[derive(Debug)]
pub struct FusedKernel {
    pub(crate) kernel: Arc<Kernel>,
    /// The loop's shape (of every root; for a reduction, of its input).
    pub(crate) loop_shape: Vec<usize>,
    pub(crate) leaves: Vec<LeafAccess>,
    /// Nodes written, contiguous (a reduction writes one: its own node).
    pub(crate) roots: Vec<NodeId>,
    /// For a reduction: elements reduced per output (the trailing part of the loop).
    pub(crate) reduced_length: Option<usize>,
    /// For a reduction: rows one workgroup folds (one per subgroup for subgroup teams).
    pub(crate) rows_per_workgroup: usize,
    /// The executor may run the packet path ([`PlanOptions::packet_path`]).
    pub(crate) packet_path: bool,
}

/// One step of a plan.
#[derive(Debug)]
pub enum Stage {
    /// A generated kernel (elementwise, or a reduction with its prologue).
    Fused(FusedKernel),
    /// A view of a materialised value (no copy unless the layout cannot express it).
    View(NodeId),
    /// One node through the eager API (or the executor, for structural kinds).
    Node(NodeId),
    /// A reduction with a reducer function (`reducer.rs`).
    Reducer(ReducerKernel),
    /// Row reductions and their elementwise outputs in one kernel (`row_program.rs`).
    RowProgram(RowProgramKernel),
    /// A `dot` or `conv` with its elementwise consumer applied in the GEMM's store
    /// (`gemm_epilogue.rs`).
    GemmEpilogue(GemmEpilogueKernel),
}

impl Stage {
    /// The values this stage reads.
    fn reads(&self, graph: &Graph) -> Vec<NodeId> {
        match self {
            Stage::Fused(fused) => fused.leaves.iter().map(|leaf| leaf.node).collect(),
            Stage::View(id) | Stage::Node(id) => graph.node(*id).op.operands(),
            Stage::Reducer(reducer) => graph.node(reducer.node).op.operands(),
            Stage::RowProgram(program) => program.leaves.iter().map(|leaf| leaf.node).collect(),
            Stage::GemmEpilogue(epilogue) => {
                let mut read = graph.node(epilogue.product).op.operands();
                read.extend(
                    epilogue
                        .unfused
                        .leaves
                        .iter()
                        .map(|leaf| leaf.node)
                        .filter(|&node| node != epilogue.product),
                );
                read
            }
        }
    }
}

/// What the planner produced for one graph and input types.
#[derive(Debug)]
pub struct Plan {
    pub(crate) graph: Arc<Graph>,
    pub(crate) stages: Vec<Stage>,
    /// For each stage, the values no later stage reads (graph outputs are never listed).
    pub(crate) freed_after: Vec<Vec<NodeId>>,
    /// GLSL sources generated for this plan.
    pub(crate) generated_kernels: usize,
    /// Its captured runs and recorded command buffer (`replay.rs`).
    pub(crate) replay: crate::replay::PlanReplay,
    /// Small literal and constant values uploaded by earlier runs (`executor.rs`).
    pub(crate) constants: parking_lot::Mutex<std::collections::HashMap<NodeId, nxvk_core::Tensor>>,
}

impl Plan {
    /// Stages in execution order.
    pub fn stages(&self) -> &[Stage] {
        &self.stages
    }

    /// How many of the stages are generated kernels of fused elementwise code (fused kernels,
    /// row programs and GEMM epilogues).
    pub fn fused_kernels(&self) -> usize {
        self.stages
            .iter()
            .filter(|stage| {
                matches!(
                    stage,
                    Stage::Fused(_) | Stage::RowProgram(_) | Stage::GemmEpilogue(_)
                )
            })
            .count()
    }

    /// How many of the stages are GEMMs with an epilogue.
    pub fn gemm_epilogues(&self) -> usize {
        self.stages
            .iter()
            .filter(|stage| matches!(stage, Stage::GemmEpilogue(_)))
            .count()
    }

    /// How many of the stages are row programs.
    pub fn row_programs(&self) -> usize {
        self.stages
            .iter()
            .filter(|stage| matches!(stage, Stage::RowProgram(_)))
            .count()
    }
}

pub(crate) fn native_on(capabilities: &Capabilities, dtype: DType) -> Option<Elem> {
    elem_of(dtype).filter(|&elem| device_supports(capabilities, elem))
}

/// True for views and metadata: nodes a fused kernel passes through without computing.
pub(crate) fn is_transparent(op: &Op) -> bool {
    matches!(
        op,
        Op::Broadcast { .. }
            | Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Squeeze { .. }
            | Op::Slice { .. }
            | Op::Metadata { .. }
    )
}

/// True when `id` is an elementwise node a fused kernel can compute on this device.
pub(crate) fn is_computable(graph: &Graph, capabilities: &Capabilities, id: NodeId) -> bool {
    let node = graph.node(id);
    let elementwise = matches!(
        node.op,
        Op::Constant { .. }
            | Op::AsType { .. }
            | Op::Select { .. }
            | Op::Unary { .. }
            | Op::Binary { .. }
            | Op::Clip { .. }
    );
    // Only elementwise nodes are looked at further: their operands are tensors.
    if !elementwise {
        return false;
    }
    let dtype_of = |operand: NodeId| graph.tensor_type(operand).dtype;
    let native = |dtype: DType| native_on(capabilities, dtype).is_some();
    let Some(result) = node.ty.tensor().map(|tensor| tensor.dtype) else {
        return false;
    };
    if !native(result) || !node.op.operands().iter().all(|&id| native(dtype_of(id))) {
        return false;
    }
    let has_kernel = |spec: &nxvk_kernels::OpSpec, compute: DType| {
        native_on(capabilities, compute).is_some_and(|elem| {
            expression(spec, elem).is_some_and(|function| {
                capabilities.shader_float64 || f64_math(function, elem) != F64Math::Required
            }) && output_elem(spec, elem) == elem_of(result)
        })
    };
    match &node.op {
        Op::Constant { .. } | Op::AsType { .. } | Op::Select { .. } => true,
        Op::Unary { op, input } => unary_types(*op, dtype_of(*input), &[])
            .is_ok_and(|types| has_kernel(&op.spec(), types.compute)),
        Op::Binary { op, left, right } => binary_types(*op, dtype_of(*left), dtype_of(*right), &[])
            .is_ok_and(|types| has_kernel(&op.spec(), types.compute)),
        Op::Clip { .. } => !result.is_complex(),
        _ => false,
    }
}

/// A reduction whose prologue can be fused: a non-arg reduction over the trailing axes (or
/// all), whose accumulator is its result type (so no cast follows), on a native input.
#[derive(Debug, Clone, Copy)]
struct PrologueReduction {
    op: ReduceOp,
    input: NodeId,
    input_elem: Elem,
    /// Elements reduced per output.
    reduced_length: usize,
}

/// Rows up to this long take a fused prologue whatever their number (and a reducer
/// function's row one workgroup)...
pub(crate) const SHORT_ROW: usize = 4096;
/// ...longer ones only when there are at least this many...
pub(crate) const MANY_ROWS: usize = 1024;
/// ...and never longer than this (1024 loop iterations per invocation of 256).
const MAX_PROLOGUE_ROW: usize = 1 << 18;

fn prologue_reduction(
    graph: &Graph,
    capabilities: &Capabilities,
    id: NodeId,
) -> Option<PrologueReduction> {
    let Op::Reduce {
        op, input, axes, ..
    } = &graph.node(id).op
    else {
        return None;
    };
    let input_type = graph.tensor_type(*input);
    let input_elem = native_on(capabilities, input_type.dtype)?;
    let rank = input_type.shape.len();
    let trailing = axes.iter().copied().eq(rank - axes.len()..rank);
    let accumulator = accumulator_elem(*op, input_elem, Accumulation::Native);
    let same_type = elem_of(result_dtype(*op, input_type.dtype)) == Some(accumulator);
    let supported = device_supports(capabilities, accumulator) && !op.is_arg();
    let reduced_length: usize = axes.iter().map(|&axis| input_type.shape[axis]).product();
    let rows = input_type.n_elements() / reduced_length.max(1);
    // One workgroup folds one row: fine for many rows or short ones, but a few long rows (a
    // full reduction of a large tensor) would leave the GPU idle, where the catalog's kernel
    // splits rows into chunks. Rows also stay under lavapipe's 65,535 loop iterations per
    // invocation. (A first guess, not raced yet.)
    let shape_suits =
        reduced_length <= MAX_PROLOGUE_ROW && (reduced_length <= SHORT_ROW || rows >= MANY_ROWS);
    (trailing && same_type && supported && reduced_length > 0 && shape_suits).then_some(
        PrologueReduction {
            op: *op,
            input: *input,
            input_elem,
            reduced_length,
        },
    )
}

/// Rows up to this many subgroup widths are folded by one subgroup each (at most 32 elements
/// per invocation, as in the catalog's row kernels); longer ones by a whole workgroup.
const SUBGROUP_ROW_WIDTHS: usize = 32;

/// The team folding rows of `reduced_length` elements on this device, and how many rows one
/// workgroup folds at a time. Without subgroup shuffles (or with them switched off) a
/// workgroup folds each row through shared memory.
fn row_team(
    capabilities: &Capabilities,
    reduced_length: usize,
    options: PlanOptions,
) -> (RowTeam, usize) {
    let operations = capabilities.subgroup_operations;
    if !(operations.basic && operations.shuffle && options.subgroup_row_folds) {
        return (RowTeam::WorkgroupTree, 1);
    }
    let subgroup_size = capabilities.subgroup_size.max(1) as usize;
    if reduced_length <= SUBGROUP_ROW_WIDTHS * subgroup_size {
        let rows = (WORKGROUP_SIZE as usize / subgroup_size).max(1);
        (RowTeam::Subgroup, rows)
    } else {
        (RowTeam::Workgroup, 1)
    }
}

/// Expressions of more statements get no packet path: they are bound by arithmetic, where
/// vector loads gain nothing, and the path copies their code per packet lane (the bench's
/// 1000-op chain took lavapipe about 13 s more to compile with it).
pub(crate) const MAX_PACKET_STATEMENTS: usize = 64;

/// True when a kernel of `expression` gets the packet path.
fn takes_packet_path(expression: &Expression, options: PlanOptions) -> bool {
    options.packet_path && expression.statement_count() <= MAX_PACKET_STATEMENTS
}

/// Plans `graph` for `device`, compiling its generated kernels.
pub(crate) fn plan(graph: Arc<Graph>, device: &Device, options: PlanOptions) -> Result<Plan> {
    let capabilities = device.capabilities();
    let n = graph.nodes().len();
    let ids = || (0..n).map(|index| NodeId(index as u32));

    // Nodes the outputs need, and how often each is used by needed nodes.
    let mut needed = vec![false; n];
    for &output in graph.outputs() {
        needed[output.index()] = true;
    }
    let mut uses = vec![0usize; n];
    for id in ids().rev() {
        if needed[id.index()] {
            for operand in graph.node(id).op.operands() {
                needed[operand.index()] = true;
                uses[operand.index()] += 1;
            }
        }
    }
    let computable: Vec<bool> = ids()
        .map(|id| is_computable(&graph, capabilities, id))
        .collect();
    let transparent: Vec<bool> = ids().map(|id| is_transparent(&graph.node(id).op)).collect();
    let prologue_reductions: Vec<Option<PrologueReduction>> = ids()
        .map(|id| prologue_reduction(&graph, capabilities, id))
        .collect();
    let fusible = |id: NodeId| computable[id.index()] || transparent[id.index()];

    // Materialisation, with the `absorbed` reductions (row programs') fusing their operands.
    let materialise = |absorbed: &[bool]| {
        let mut materialised = vec![false; n];
        for &output in graph.outputs() {
            materialised[output.index()] = true;
        }
        for id in ids().rev() {
            if !needed[id.index()] {
                continue;
            }
            if !fusible(id) {
                materialised[id.index()] = true;
            }
            if options.cross_stage_cse && computable[id.index()] && uses[id.index()] > 1 {
                materialised[id.index()] = true;
            }
            let node = graph.node(id);
            let user_fuses_operands =
                fusible(id) || prologue_reductions[id.index()].is_some() || absorbed[id.index()];
            for operand in node.op.operands() {
                // Non-fusible users read their operands from memory; a materialised view makes
                // its view operand materialised too (a chain of views is a chain of free views).
                let view_chain = transparent[id.index()]
                    && materialised[id.index()]
                    && transparent[operand.index()];
                if !user_fuses_operands || view_chain {
                    materialised[operand.index()] = true;
                }
            }
        }
        materialised
    };
    let fusible_mask: Vec<bool> = ids().map(fusible).collect();
    let (row_groups, materialised) = find_groups(
        &graph,
        capabilities,
        options,
        &NodeFacts {
            needed: &needed,
            fusible: &fusible_mask,
            materialise: &materialise,
        },
    );

    let mut stages: Vec<Stage> = Vec::new();
    // Roots of the elementwise kernel being gathered, and its loop shape.
    let mut pending: Vec<NodeId> = Vec::new();
    let flush = |pending: &mut Vec<NodeId>, stages: &mut Vec<Stage>| -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let roots = std::mem::take(pending);
        let is_leaf = |node: NodeId| materialised[node.index()] && !roots.contains(&node);
        let expression = Expression::build(&graph, &roots, &is_leaf)?;
        let outputs: Vec<Elem> = roots
            .iter()
            .map(|&root| elem_of(graph.tensor_type(root).dtype).unwrap_or(Elem::U8))
            .collect();
        let packet_path = takes_packet_path(&expression, options);
        let source = elementwise_shader(&expression, &outputs, packet_path);
        let kernel = compile(device, "fused_elementwise", &source)?;
        stages.push(Stage::Fused(FusedKernel {
            kernel,
            loop_shape: graph.tensor_type(roots[0]).shape.clone(),
            leaves: expression.leaves,
            roots,
            reduced_length: None,
            rows_per_workgroup: 1,
            packet_path,
        }));
        Ok(())
    };
    for id in ids() {
        if !needed[id.index()] || !materialised[id.index()] {
            continue;
        }
        let node = graph.node(id);
        if matches!(node.op, Op::Parameter { .. }) {
            continue;
        }
        if let Some(group) = row_groups.ending_at(id) {
            flush(&mut pending, &mut stages)?;
            let program = row_program::plan_stage(&graph, device, group, &materialised, options)?;
            stages.push(Stage::RowProgram(program));
            continue;
        }
        if row_groups.skips(id) {
            continue;
        }
        if transparent[id.index()]
            && node
                .op
                .operands()
                .iter()
                .all(|operand| materialised[operand.index()])
        {
            flush(&mut pending, &mut stages)?;
            stages.push(Stage::View(id));
        } else if fusible(id) {
            let shape = &graph.tensor_type(id).shape;
            if pending
                .first()
                .is_some_and(|&first| &graph.tensor_type(first).shape != shape)
            {
                flush(&mut pending, &mut stages)?;
            }
            pending.push(id);
        } else if let Some(reduction) = prologue_reductions[id.index()] {
            flush(&mut pending, &mut stages)?;
            let is_leaf = |node: NodeId| materialised[node.index()];
            let expression = Expression::build(&graph, &[reduction.input], &is_leaf)?;
            let (team, rows_per_workgroup) =
                row_team(capabilities, reduction.reduced_length, options);
            let packet_path = takes_packet_path(&expression, options);
            let source = reduce_shader(
                &expression,
                reduction.op,
                reduction.input_elem,
                team,
                packet_path,
            );
            let kernel = compile(device, "fused_reduce", &source)?;
            stages.push(Stage::Fused(FusedKernel {
                kernel,
                loop_shape: graph.tensor_type(reduction.input).shape.clone(),
                leaves: expression.leaves,
                roots: vec![id],
                reduced_length: Some(reduction.reduced_length),
                rows_per_workgroup,
                packet_path,
            }));
        } else if let Some(reducer) = plan_stage(&graph, device, id)? {
            flush(&mut pending, &mut stages)?;
            stages.push(Stage::Reducer(reducer));
        } else {
            flush(&mut pending, &mut stages)?;
            stages.push(Stage::Node(id));
        }
    }
    flush(&mut pending, &mut stages)?;
    let stages = if options.gemm_epilogues {
        fuse_epilogues(&graph, capabilities, stages, &materialised, |stage| {
            stage.reads(&graph)
        })?
    } else {
        stages
    };

    let mut last_use: Vec<Option<usize>> = vec![None; n];
    for (index, stage) in stages.iter().enumerate() {
        for node in stage.reads(&graph) {
            last_use[node.index()] = Some(index);
        }
    }
    for &output in graph.outputs() {
        last_use[output.index()] = None;
    }
    let mut freed_after = vec![Vec::new(); stages.len()];
    for (node, last) in last_use.iter().enumerate() {
        if let Some(stage) = last {
            freed_after[*stage].push(NodeId(node as u32));
        }
    }
    let generated_kernels = stages
        .iter()
        .filter(|stage| {
            matches!(
                stage,
                Stage::Fused(_) | Stage::Reducer(_) | Stage::RowProgram(_) | Stage::GemmEpilogue(_)
            )
        })
        .count();
    Ok(Plan {
        graph,
        stages,
        freed_after,
        generated_kernels,
        replay: Default::default(),
        constants: Default::default(),
    })
}

/// The kernel of a generated `source`, named by its content hash (compiled through the
/// device's content-addressed SPIR-V cache), with the f32 forms of the refined helpers where
/// the device computes f32 in f32 alone (`nxvk_kernels::f32_math`).
pub(crate) fn compile(device: &Device, family: &str, source: &str) -> Result<Arc<Kernel>> {
    let hash = blake3::hash(source.as_bytes()).to_hex();
    let name = format!("{family}_{}", &hash[..16]);
    nxvk_kernels::catalog::kernel_for_device(device, &name, source)
}
