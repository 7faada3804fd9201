//! Row programs: chains of row reductions and the elementwise outputs that read them, in one
//! kernel (softmax, log_softmax, layer norm).
//!
//! Policy:
//! - A *row program* computes, for every row of its loop shape's last axis, k reductions
//!   over that axis, each of an elementwise expression of the row's leaves and of the earlier
//!   reductions' results, then the elementwise outputs of the row (one or more, all of the
//!   loop shape). Softmax is max, then the sum of exp(x - max), then exp(x - max) / sum;
//!   log_softmax and layer norm (mean, then variance) have the same form.
//! - The planner starts a group at each materialised elementwise root whose expression reads
//!   reductions over the last axis of values of the root's own shape. It absorbs those
//!   reductions (and, through their prologues, earlier ones) when nothing outside the group
//!   reads them or a value computed from them; another materialised root of the same shape
//!   that reads them joins the group (multi-output graphs share the stage). Absorbed
//!   reductions are never written to memory. Anything else keeps the plan of `plan.rs`.
//! - One team of invocations holds one row: it reads the row's leaves once into registers (in
//!   packets of four, with vector loads where the executor finds the packet conditions),
//!   folds each reduction from the registers (subgroup butterflies, then shared memory across
//!   the team's subgroups: one barrier pair per reduction), and writes each output once.
//!   Teams are a power of two no wider than the workgroup; short rows put several teams in a
//!   workgroup, as the fused row folds do. A team filling the workgroup whose invocations
//!   each hold more than [`WIDE_TEAM_LEAF_BYTES`] of leaves doubles, in a workgroup of its own
//!   (layer norm's three leaves).
//! - A phase whose reduction input a later phase reads again (softmax's exp, which the sum
//!   folds and the output divides) keeps its values in registers when computing them costs
//!   a transcendental or a division and the registers hold them ([`held_reductions`]); the
//!   later phases read them instead of computing them again (bit for bit the same values).
//! - Values every element of a row shares (a reduction's result and what is computed from
//!   results and constants alone: layer norm's mean, variance and square root, log_softmax's
//!   log of the sum, a shared divisor's reciprocal) are computed once per row, as soon as the
//!   reductions they read are folded, into module variables the element function reads
//!   (`Expression::uniform_statements`): NVIDIA's compiler does not hoist them out of the
//!   element loop itself.
//! - Each program has two kernels, one per path: vector loads and stores where the leaves
//!   meet the packet conditions, element-by-element addressing otherwise. The packet kernel
//!   (when the options allow it) is compiled when the plan is, the generic one on the first
//!   run that needs it. One kernel holding both paths, choosing per run, ran softmax's row
//!   program 1.8x slower on the H200 when the row's arithmetic was stripped (0.252 against
//!   0.140 ms for 512 MiB): the generic addressing's registers sit beside the row's.
//! - A row must fit the registers: at most [`MAX_PACKETS_PER_LANE`] packets per invocation
//!   and [`MAX_CACHED_BYTES`] of leaf values per invocation. Longer rows, and expressions of
//!   more than [`MAX_PACKET_STATEMENTS`] statements, keep the multi-dispatch plan (rejected for
//!   now: a shared-memory row cache for longer rows; not built).
//! - Numerics: reductions accumulate like the fused row reductions (f32 for f16 and bf16,
//!   rounded to the reduction's result type before the outputs read it, as the eager path
//!   stores it), so results differ from the multi-dispatch plan only in the order sums fold.
//!   Max and min are exact.

mod shader;

use crate::codegen::{Expression, LeafAccess, Register};
use crate::executor::{GeneratedLaunch, MAX_REDUCE_GROUPS, empty_outputs, packet_words};
use crate::graph::{Graph, NodeId, NodeType, Op};
use crate::plan::{MAX_PACKET_STATEMENTS, PlanOptions, compile, native_on};
use crate::view::ViewPath;
use nxvk_core::{Capabilities, Device, Kernel, Layout, Result, Tensor, contiguous_strides};
use nxvk_kernels::catalog::{device_supports, elem_of};
use nxvk_kernels::codegen::{WORKGROUP_SIZE, storage_bytes};
use nxvk_kernels::reduce::{Accumulation, accumulator_elem};
use nxvk_kernels::{BinaryOp, Elem, PACKET_ELEMENTS, ReduceOp};
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

/// Most packets of a row each invocation holds per leaf: 32 elements, as the fused row folds
/// give one invocation (H200 and lavapipe: 8192-element rows in a 256-wide workgroup).
pub(crate) const MAX_PACKETS_PER_LANE: usize = 8;

/// Most bytes of leaf values one invocation holds (softmax's f64 row of 8192, or layer norm's
/// three f32 leaves of 8192), so that the registers stay within what keeps a GPU occupied;
/// kept reduction inputs ([`held_reductions`]) count against it too.
/// A first guess, not raced yet.
const MAX_CACHED_BYTES: usize = 384;

/// Leaf bytes per invocation above which a team that fills the workgroup doubles its width,
/// into a workgroup of its own twice as wide. On the H200 layer norm's three f32 leaves of
/// 8192 (384 bytes per invocation in a team of 256) ran 11 % faster in a team of 512 (0.269
/// -> 0.239 ms), while softmax and log_softmax (128 bytes) ran as fast or slower there, and
/// teams of 1024, or of 512 sharing a 1024-wide workgroup, were slower for all three
/// (docs/BENCHMARKS.md, twelfth session).
const WIDE_TEAM_LEAF_BYTES: usize = 256;

/// One reduction a row program computes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowReduction {
    pub node: NodeId,
    pub op: ReduceOp,
    pub input: NodeId,
    pub input_elem: Elem,
    /// The type it folds in.
    pub accumulator: Elem,
    /// The type it is stored in (the accumulator, or f16/bf16 from an f32 accumulator).
    pub result: Elem,
}

/// A reduction a row program can compute: a non-arg reduction over the last axis alone, on a
/// native input, whose result is its accumulator or a narrower float of it.
fn row_reduction(graph: &Graph, capabilities: &Capabilities, id: NodeId) -> Option<RowReduction> {
    let Op::Reduce {
        op, input, axes, ..
    } = &graph.node(id).op
    else {
        return None;
    };
    let rank = graph.tensor_type(*input).shape.len();
    if rank == 0 || axes[..] != [rank - 1] || op.is_arg() {
        return None;
    }
    let input_elem = native_on(capabilities, graph.tensor_type(*input).dtype)?;
    let accumulator = accumulator_elem(*op, input_elem, Accumulation::Native);
    let result = elem_of(graph.tensor_type(id).dtype)?;
    let narrowed = accumulator == Elem::F32 && matches!(result, Elem::F16 | Elem::BF16);
    let supported =
        device_supports(capabilities, accumulator) && device_supports(capabilities, result);
    (supported && (result == accumulator || narrowed)).then_some(RowReduction {
        node: id,
        op: *op,
        input: *input,
        input_elem,
        accumulator,
        result,
    })
}

/// How a row is spread over a team.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TeamShape {
    /// Invocations per row (a power of two dividing the workgroup).
    pub size: usize,
    /// Packets of the row each invocation holds.
    pub packets_per_lane: usize,
    /// Fold by subgroup shuffles (else by a shared-memory tree over the whole workgroup).
    pub subgroup_fold: bool,
    /// Invocations per workgroup: [`WORKGROUP_SIZE`], or the team where it is wider.
    pub workgroup: usize,
}

/// The team for rows of `row_length` elements whose leaves take `leaf_bytes` per element: the
/// narrowest power of two, from a subgroup (or the row's packets, if fewer: short rows are not
/// folded serially), whose invocations each hold their share of the row within the register
/// limits; the whole workgroup when the team folds without subgroup shuffles
/// (`subgroup_fold` false). A team filling the workgroup whose invocations hold more than
/// [`WIDE_TEAM_LEAF_BYTES`] doubles, within `max_workgroup` invocations. `None` when the row
/// does not fit.
fn team_shape(
    subgroup_fold: bool,
    subgroup_size: u32,
    row_length: usize,
    leaf_bytes: usize,
    max_workgroup: usize,
) -> Option<TeamShape> {
    let packets = row_length.div_ceil(PACKET_ELEMENTS as usize);
    let workgroup = WORKGROUP_SIZE as usize;
    let subgroup = (subgroup_size.max(1) as usize).next_power_of_two();
    let narrowest = if subgroup_fold {
        subgroup.min(packets.next_power_of_two()).min(workgroup)
    } else {
        workgroup
    };
    let lane_bytes = |size: usize| packets.div_ceil(size) * PACKET_ELEMENTS as usize * leaf_bytes;
    let fits = |size: usize| {
        packets.div_ceil(size) <= MAX_PACKETS_PER_LANE && lane_bytes(size) <= MAX_CACHED_BYTES
    };
    let size = std::iter::successors(Some(narrowest), |&size| Some(size * 2))
        .take_while(|&size| size <= workgroup)
        .find(|&size| fits(size))?;
    let widened = subgroup_fold
        && size == workgroup
        && lane_bytes(size) > WIDE_TEAM_LEAF_BYTES
        && 2 * size <= max_workgroup.min(packets);
    let size = if widened { 2 * size } else { size };
    Some(TeamShape {
        size,
        packets_per_lane: packets.div_ceil(size),
        subgroup_fold,
        workgroup: size.max(workgroup),
    })
}

/// One group: the reductions it absorbs and the roots it writes, both in node order.
#[derive(Debug)]
pub(crate) struct RowGroup {
    reductions: Vec<RowReduction>,
    roots: Vec<NodeId>,
    /// Computed nodes inside the kernel other than the roots.
    inlined: Vec<NodeId>,
    loop_shape: Vec<usize>,
    team: TeamShape,
    /// Reductions (indices into `reductions`) whose input values the kernel keeps in
    /// registers for the later phases ([`held_reductions`]).
    held: Vec<usize>,
}

/// The groups of a plan, by node.
#[derive(Debug)]
pub(crate) struct RowGroups {
    groups: Vec<RowGroup>,
    /// Absorbed reductions and roots other than each group's last: no stage of their own.
    skipped: Vec<bool>,
    /// At each group's last root: the group, whose stage runs there.
    ending: HashMap<NodeId, usize>,
}

impl RowGroups {
    fn new(n_nodes: usize, groups: Vec<RowGroup>) -> Self {
        let mut skipped = vec![false; n_nodes];
        let mut ending = HashMap::new();
        for (index, group) in groups.iter().enumerate() {
            for reduction in &group.reductions {
                skipped[reduction.node.index()] = true;
            }
            if let Some((last, others)) = group.roots.split_last() {
                for root in others {
                    skipped[root.index()] = true;
                }
                ending.insert(*last, index);
            }
        }
        RowGroups {
            groups,
            skipped,
            ending,
        }
    }

    /// True for a node whose value a row program computes without a stage at the node.
    pub(crate) fn skips(&self, id: NodeId) -> bool {
        self.skipped[id.index()]
    }

    /// The group whose stage runs at `id`.
    pub(crate) fn ending_at(&self, id: NodeId) -> Option<&RowGroup> {
        self.ending.get(&id).map(|&index| &self.groups[index])
    }
}

/// What the planner knows of each node when it looks for groups.
pub(crate) struct NodeFacts<'a> {
    pub needed: &'a [bool],
    /// Elementwise or transparent: computable inside a fused kernel.
    pub fusible: &'a [bool],
    /// Materialisation with the given reductions fusing their operands (as prologue
    /// reductions do).
    pub materialise: &'a dyn Fn(&[bool]) -> Vec<bool>,
}

/// The row programs of `graph` and the materialisation they leave (absorbed reductions read
/// their operands inside the kernel). Groups are gathered assuming every candidate reduction
/// is absorbed; a group some of whose inlined values turn out materialised once the others
/// are known (their users outside the group then read memory) is dropped, until none is.
pub(crate) fn find_groups(
    graph: &Graph,
    capabilities: &Capabilities,
    options: PlanOptions,
    facts: &NodeFacts<'_>,
) -> (RowGroups, Vec<bool>) {
    let n = graph.nodes().len();
    let nobody = vec![false; n];
    if !options.row_programs {
        return (RowGroups::new(n, Vec::new()), (facts.materialise)(&nobody));
    }
    let candidates: Vec<Option<RowReduction>> = (0..n)
        .map(|index| {
            let id = NodeId(index as u32);
            facts.needed[index]
                .then(|| row_reduction(graph, capabilities, id))
                .flatten()
        })
        .collect();
    let all_candidates: Vec<bool> = candidates.iter().map(Option::is_some).collect();
    if !all_candidates.contains(&true) {
        return (RowGroups::new(n, Vec::new()), (facts.materialise)(&nobody));
    }
    let mut users: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    for (index, node) in graph.nodes().iter().enumerate() {
        if facts.needed[index] {
            for operand in node.op.operands() {
                users[operand.index()].push(NodeId(index as u32));
            }
        }
    }
    let assumed = (facts.materialise)(&all_candidates);
    let finder = Finder {
        graph,
        capabilities,
        options,
        fusible: facts.fusible,
        materialised: &assumed,
        candidates: &candidates,
        users: &users,
    };
    let mut groups = finder.gather(facts.needed);
    loop {
        let mut absorbing = vec![false; n];
        for group in &groups {
            for reduction in &group.reductions {
                absorbing[reduction.node.index()] = true;
            }
        }
        let materialised = (facts.materialise)(&absorbing);
        let before = groups.len();
        groups.retain(|group| group.inlined.iter().all(|node| !materialised[node.index()]));
        if groups.len() == before {
            return (RowGroups::new(n, groups), materialised);
        }
    }
}

struct Finder<'a> {
    graph: &'a Graph,
    capabilities: &'a Capabilities,
    options: PlanOptions,
    fusible: &'a [bool],
    materialised: &'a [bool],
    candidates: &'a [Option<RowReduction>],
    users: &'a [Vec<NodeId>],
}

/// The nodes one group's kernel computes.
struct Closure {
    /// Roots and the computed nodes they (and the absorbed reductions' inputs) read.
    computed: BTreeSet<NodeId>,
    reductions: BTreeSet<NodeId>,
}

impl Finder<'_> {
    fn gather(&self, needed: &[bool]) -> Vec<RowGroup> {
        let mut claimed = vec![false; self.graph.nodes().len()];
        let mut groups = Vec::new();
        for (index, &is_needed) in needed.iter().enumerate() {
            let id = NodeId(index as u32);
            if claimed[index] || !is_needed || !self.may_be_root(id, &claimed) {
                continue;
            }
            if let Some(group) = self.grow(id, &claimed) {
                let members = group.roots.iter().chain(&group.inlined);
                for node in members.chain(group.reductions.iter().map(|r| &r.node)) {
                    claimed[node.index()] = true;
                }
                groups.push(group);
            }
        }
        groups
    }

    /// A materialised tensor node a fused kernel computes (not a view of a materialised value;
    /// tuples, such as a `while`'s state, are never roots).
    fn may_be_root(&self, id: NodeId, claimed: &[bool]) -> bool {
        if !matches!(self.graph.node(id).ty, NodeType::Tensor(_)) {
            return false;
        }
        let operands = self.graph.node(id).op.operands();
        let view_stage = crate::plan::is_transparent(&self.graph.node(id).op)
            && operands
                .iter()
                .all(|operand| self.materialised[operand.index()]);
        self.materialised[id.index()]
            && self.fusible[id.index()]
            && !view_stage
            && !claimed[id.index()]
    }

    /// The closure of `roots`: nodes computed in the kernel, reductions absorbed.
    fn closure(&self, roots: &[NodeId], loop_shape: &[usize]) -> Closure {
        let mut closure = Closure {
            computed: BTreeSet::new(),
            reductions: BTreeSet::new(),
        };
        let mut seen = BTreeSet::new();
        let mut stack = roots.to_vec();
        while let Some(node) = stack.pop() {
            if !seen.insert(node) {
                continue;
            }
            if roots.contains(&node) || !self.materialised[node.index()] {
                closure.computed.insert(node);
                stack.extend(self.graph.node(node).op.operands());
            } else if let Some(reduction) = self.candidates[node.index()].filter(|reduction| {
                self.graph.tensor_type(reduction.input).shape == loop_shape
                    && !self.graph.outputs().contains(&node)
            }) {
                closure.reductions.insert(node);
                stack.push(reduction.input);
            }
        }
        closure
    }

    /// The group rooted at `first`, if it absorbs a reduction and every check passes.
    fn grow(&self, first: NodeId, claimed: &[bool]) -> Option<RowGroup> {
        let loop_shape = self.graph.tensor_type(first).shape.clone();
        let row_length = *loop_shape.last()?;
        if row_length == 0 || loop_shape.contains(&0) {
            return None;
        }
        let mut roots = vec![first];
        let closure = loop {
            let closure = self.closure(&roots, &loop_shape);
            let inside = |node: &NodeId| {
                closure.computed.contains(node) || closure.reductions.contains(node)
            };
            if closure.computed.iter().any(|node| claimed[node.index()]) {
                return None;
            }
            // Values computed from an absorbed reduction must stay inside: a user outside
            // joins as a root when it can, else there is no group.
            let internal: Vec<NodeId> = closure
                .computed
                .iter()
                .filter(|node| !roots.contains(node))
                .chain(&closure.reductions)
                .copied()
                .collect();
            let mut joining: BTreeSet<NodeId> = BTreeSet::new();
            for node in internal {
                for &user in &self.users[node.index()] {
                    if inside(&user) {
                        continue;
                    }
                    // A root first: only tensors have a shape (a `while` may read the node).
                    if !(self.may_be_root(user, claimed)
                        && self.graph.tensor_type(user).shape == loop_shape)
                    {
                        return None;
                    }
                    joining.insert(user);
                }
            }
            // Later roots of the shape that read a root share the kernel where they can.
            for root in &roots {
                for &user in &self.users[root.index()] {
                    if !inside(&user)
                        && self.may_be_root(user, claimed)
                        && self.graph.tensor_type(user).shape == loop_shape
                    {
                        joining.insert(user);
                    }
                }
            }
            if joining.is_empty() {
                break closure;
            }
            roots.extend(joining);
        };
        if closure.reductions.is_empty() {
            return None;
        }
        roots.sort();
        let last = *roots.last()?;
        // The stage runs at the last root: nothing outside may read a root before it.
        let read_early = roots.iter().any(|root| {
            self.users[root.index()].iter().any(|user| {
                !closure.computed.contains(user)
                    && !closure.reductions.contains(user)
                    && *user < last
            })
        });
        if read_early {
            return None;
        }
        let reductions: Vec<RowReduction> = closure
            .reductions
            .iter()
            .map(|node| self.candidates[node.index()])
            .collect::<Option<_>>()?;
        let inlined = closure
            .computed
            .iter()
            .copied()
            .filter(|node| !roots.contains(node))
            .collect();
        let team = self.team_if_it_fits(&reductions, &roots, &loop_shape)?;
        let is_leaf = |node: NodeId| self.materialised[node.index()] && !roots.contains(&node);
        let held = held_reductions(self.graph, &reductions, &roots, &is_leaf, team);
        Some(RowGroup {
            reductions,
            roots,
            inlined,
            loop_shape,
            team,
            held,
        })
    }

    /// The team holding a row of the group of `reductions` and `roots`, when its kernel can
    /// be generated and holds the row: native types, a short expression, reductions read along
    /// their own rows, registers and shared memory enough.
    fn team_if_it_fits(
        &self,
        reductions: &[RowReduction],
        roots: &[NodeId],
        loop_shape: &[usize],
    ) -> Option<TeamShape> {
        let expression =
            group_expression(self.graph, reductions, roots, self.materialised, &[], false).ok()?;
        let rows_aligned = expression
            .register_reads
            .iter()
            .all(|(node, path)| reads_its_row(self.graph, *node, path, loop_shape));
        let leaf_bytes: usize = expression
            .leaf_elems()
            .iter()
            .map(|&elem| storage_bytes(elem) as usize)
            .sum();
        let shared_bytes_per_invocation: usize = reductions
            .iter()
            .map(|reduction| storage_bytes(reduction.accumulator) as usize)
            .sum();
        let natively_stored = roots.iter().all(|&root| {
            native_on(self.capabilities, self.graph.tensor_type(root).dtype).is_some()
        });
        let row_length = loop_shape.last().copied().unwrap_or(1);
        if !rows_aligned || !natively_stored || expression.statement_count() > MAX_PACKET_STATEMENTS
        {
            return None;
        }
        let operations = self.capabilities.subgroup_operations;
        let subgroup_fold =
            operations.basic && operations.shuffle && self.options.subgroup_row_folds;
        let team = team_shape(
            subgroup_fold,
            self.capabilities.subgroup_size,
            row_length,
            leaf_bytes,
            self.capabilities.max_workgroup_invocations as usize,
        )?;
        let shared_bytes = shared_bytes_per_invocation * team.workgroup;
        (shared_bytes <= self.capabilities.max_shared_memory_bytes as usize).then_some(team)
    }
}

/// True when `path` reads element `row` of `node` (a reduction's result, row-major) for every
/// element of row `row` of `loop_shape`.
fn reads_its_row(graph: &Graph, node: NodeId, path: &ViewPath, loop_shape: &[usize]) -> bool {
    let shape = &graph.tensor_type(node).shape;
    let layout = path
        .iter()
        .try_fold(Layout::contiguous(shape), |layout, step| {
            step.apply_layout(&layout)
        });
    let Ok(layout) = layout else {
        return false;
    };
    let Some((_, kept_shape)) = loop_shape.split_last() else {
        return false;
    };
    let row_strides = contiguous_strides(kept_shape);
    let last = loop_shape.len() - 1;
    let along_rows = layout.strides()[..last]
        .iter()
        .zip(&row_strides)
        .zip(kept_shape)
        .all(|((&stride, &wanted), &size)| size == 1 || stride == wanted);
    layout.shape() == loop_shape
        && layout.offset() == 0
        && along_rows
        && (loop_shape[last] == 1 || layout.strides()[last] == 0)
}

/// The reductions whose input a later phase reads again (the same element, through
/// elementwise ops of the loop's shape) and whose value costs a transcendental or a division
/// to compute, as long as the registers hold them beside the leaves
/// ([`MAX_CACHED_BYTES`]): their phase keeps each value for the later ones instead of
/// computing it again (softmax's exp, read by the sum and by the output). Cheap values
/// (layer norm's `x - mean`) are computed again: registers cost occupancy.
fn held_reductions(
    graph: &Graph,
    reductions: &[RowReduction],
    roots: &[NodeId],
    is_leaf: &dyn Fn(NodeId) -> bool,
    team: TeamShape,
) -> Vec<usize> {
    let elements_per_lane = team.packets_per_lane * PACKET_ELEMENTS as usize;
    let is_register = |node: NodeId| reductions.iter().any(|r| r.node == node);
    let computed = |node: NodeId| !is_leaf(node) && !is_register(node);
    let mut bytes: usize = leaf_nodes(graph, reductions, roots, &computed)
        .iter()
        .map(|&node| {
            elem_of(graph.tensor_type(node).dtype).map_or(8, |elem| storage_bytes(elem) as usize)
        })
        .sum::<usize>()
        * elements_per_lane;
    let mut held = Vec::new();
    for (k, reduction) in reductions.iter().enumerate() {
        let later: Vec<NodeId> = reductions[k + 1..]
            .iter()
            .map(|r| r.input)
            .chain(roots.iter().copied())
            .collect();
        let Some(elem) = elem_of(graph.tensor_type(reduction.input).dtype) else {
            continue;
        };
        let cost = elements_per_lane * compute_bytes(elem);
        let wanted = computed(reduction.input)
            && costly(graph, reduction.input, &computed)
            && reads_elementwise(graph, &later, reduction.input, &computed);
        if wanted && bytes + cost <= MAX_CACHED_BYTES {
            bytes += cost;
            held.push(k);
        }
    }
    held
}

/// Bytes of one value of `elem` in its compute type (narrow types widen to 32 bits).
fn compute_bytes(elem: Elem) -> usize {
    if elem.bits() > 32 { 8 } else { 4 }
}

/// The leaves (not computed) the kernel's roots and reduction inputs read.
fn leaf_nodes(
    graph: &Graph,
    reductions: &[RowReduction],
    roots: &[NodeId],
    computed: &dyn Fn(NodeId) -> bool,
) -> BTreeSet<NodeId> {
    let mut leaves = BTreeSet::new();
    let mut seen = BTreeSet::new();
    let mut stack: Vec<NodeId> = reductions
        .iter()
        .map(|r| r.input)
        .chain(roots.iter().copied())
        .collect();
    while let Some(node) = stack.pop() {
        if !seen.insert(node) {
            continue;
        }
        if computed(node) {
            stack.extend(graph.node(node).op.operands());
        } else if !reductions.iter().any(|r| r.node == node) {
            leaves.insert(node);
        }
    }
    leaves
}

/// True when computing `node` takes a transcendental, a division, a power or a remainder.
fn costly(graph: &Graph, node: NodeId, computed: &dyn Fn(NodeId) -> bool) -> bool {
    let mut stack = vec![node];
    let mut seen = BTreeSet::new();
    while let Some(node) = stack.pop() {
        if !seen.insert(node) || !computed(node) {
            continue;
        }
        let op = &graph.node(node).op;
        let expensive = match op {
            Op::Unary { op, .. } => !op.spec().exact,
            Op::Binary { op, .. } => matches!(
                op,
                BinaryOp::Divide | BinaryOp::Pow | BinaryOp::Remainder | BinaryOp::Atan2
            ),
            _ => false,
        };
        if expensive {
            return true;
        }
        stack.extend(op.operands());
    }
    false
}

/// True when one of `users` reads `target` element for element: through computed
/// elementwise ops whose operands have the loop's shape (a broadcast or a view would read
/// the value at another index, which the held registers do not have).
fn reads_elementwise(
    graph: &Graph,
    users: &[NodeId],
    target: NodeId,
    computed: &dyn Fn(NodeId) -> bool,
) -> bool {
    let shape = &graph.tensor_type(target).shape;
    let mut stack = users.to_vec();
    let mut seen = BTreeSet::new();
    while let Some(node) = stack.pop() {
        if node == target {
            return true;
        }
        if !seen.insert(node) || !computed(node) || &graph.tensor_type(node).shape != shape {
            continue;
        }
        let op = &graph.node(node).op;
        if matches!(
            op,
            Op::Unary { .. }
                | Op::Binary { .. }
                | Op::AsType { .. }
                | Op::Select { .. }
                | Op::Clip { .. }
        ) {
            stack.extend(op.operands());
        }
    }
    false
}

/// The expression of a group: the absorbed reductions' inputs (in order), then the roots;
/// reduction `k`'s result is the register `reduced<k>`, the inputs of the `held` reductions
/// may come from registers, and with `shared_divisors` divisions by a row's reduction
/// results divide through one f64 reciprocal per row.
fn group_expression(
    graph: &Graph,
    reductions: &[RowReduction],
    group_roots: &[NodeId],
    materialised: &[bool],
    held: &[usize],
    shared_divisors: bool,
) -> Result<Expression> {
    let mut roots: Vec<NodeId> = reductions.iter().map(|r| r.input).collect();
    roots.extend(group_roots);
    let registers = reductions
        .iter()
        .enumerate()
        .map(|(k, reduction)| {
            let register = Register {
                name: format!("reduced{k}"),
                reductions_done: k + 1,
            };
            (reduction.node, register)
        })
        .collect();
    let held_nodes = held.iter().map(|&k| reductions[k].input).collect();
    let is_leaf = |node: NodeId| materialised[node.index()] && !group_roots.contains(&node);
    Expression::build_holding(
        graph,
        &roots,
        &is_leaf,
        registers,
        held_nodes,
        shared_divisors,
    )
}

/// One variant of a row program's kernel: its source, compiled on first use.
#[derive(Debug)]
struct PathKernel {
    source: String,
    kernel: OnceLock<Arc<Kernel>>,
}

impl PathKernel {
    fn new(source: String) -> Self {
        PathKernel {
            source,
            kernel: OnceLock::new(),
        }
    }

    fn get(&self, device: &Device) -> Result<Arc<Kernel>> {
        if let Some(kernel) = self.kernel.get() {
            return Ok(kernel.clone());
        }
        let kernel = compile(device, "fused_row_program", &self.source)?;
        // Two threads may compile at once; both kernels are the same module.
        Ok(self.kernel.get_or_init(|| kernel).clone())
    }
}

/// A compiled row program with what it reads and writes.
#[derive(Debug)]
pub struct RowProgramKernel {
    /// The packet variant, where the options allow the packet path and rows are whole
    /// packets; compiled when planned.
    packets: Option<PathKernel>,
    /// The generic variant: compiled when planned if there is no packet variant, else on the
    /// first run whose leaves miss the packet conditions.
    generic: PathKernel,
    loop_shape: Vec<usize>,
    pub(crate) leaves: Vec<LeafAccess>,
    pub(crate) roots: Vec<NodeId>,
    rows_per_workgroup: usize,
}

/// Generates the kernel of `group` and compiles the variant its runs will most likely take.
pub(crate) fn plan_stage(
    graph: &Graph,
    device: &Device,
    group: &RowGroup,
    materialised: &[bool],
    options: PlanOptions,
) -> Result<RowProgramKernel> {
    let expression = group_expression(
        graph,
        &group.reductions,
        &group.roots,
        materialised,
        &group.held,
        options.shared_divisors && device.capabilities().shader_float64,
    )?;
    let outputs: Vec<Elem> = group
        .roots
        .iter()
        .map(|&root| elem_of(graph.tensor_type(root).dtype).unwrap_or(Elem::U8))
        .collect();
    let row_length = group.loop_shape.last().copied().unwrap_or(1);
    let source = |packet_path: bool| {
        shader::row_program_shader(&shader::RowProgramSource {
            expression: &expression,
            reductions: &group.reductions,
            outputs: &outputs,
            team: group.team,
            held: &group.held,
            row_length,
            packet_path,
        })
    };
    let whole_packets = row_length.is_multiple_of(PACKET_ELEMENTS as usize);
    let packets = (options.packet_path && whole_packets).then(|| PathKernel::new(source(true)));
    let generic = PathKernel::new(source(false));
    packets.as_ref().unwrap_or(&generic).get(device)?;
    Ok(RowProgramKernel {
        packets,
        generic,
        loop_shape: group.loop_shape.clone(),
        leaves: expression.leaves,
        roots: group.roots.clone(),
        rows_per_workgroup: group.team.workgroup / group.team.size,
    })
}

impl RowProgramKernel {
    /// Runs the program on `leaves` (its leaf accesses applied): the outputs, and whether it
    /// took the packet path (whole packets per row, every leaf streamed along the row from a
    /// packet-aligned address or constant along it).
    pub(crate) fn execute(
        &self,
        device: &Arc<Device>,
        graph: &Graph,
        leaves: &[Tensor],
    ) -> Result<(Vec<Tensor>, bool)> {
        let outputs = empty_outputs(device, graph, &self.roots)?;
        let row_length = self.loop_shape.last().copied().unwrap_or(1);
        let n_elements: usize = self.loop_shape.iter().product();
        if n_elements == 0 {
            return Ok((outputs, false));
        }
        let packet = self.packets.as_ref().and_then(|packets| {
            packet_words(&self.loop_shape, row_length, leaves, &outputs)
                .map(|words| (packets, words))
        });
        let kernel = match &packet {
            Some((packets, _)) => packets.get(device)?,
            None => self.generic.get(device)?,
        };
        let rows = n_elements / row_length;
        let groups = (rows.div_ceil(self.rows_per_workgroup) as u64).min(MAX_REDUCE_GROUPS);
        GeneratedLaunch {
            kernel: &kernel,
            loop_shape: &self.loop_shape,
            leaves,
            outputs: &outputs,
            packet_words: packet.as_ref().map(|(_, words)| &words[..]),
            count: rows,
            reduced: row_length,
            groups: groups as u32,
        }
        .dispatch(device)?;
        Ok((outputs, packet.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GraphBuilder;
    use nxvk_core::DType;
    use nxvk_kernels::{TieBreak, UnaryOp};

    /// Softmax over `dtype[4, columns]` (or log_softmax): the graph, its two reductions as the
    /// planner sees them, its output and its input.
    fn softmax_parts(
        dtype: DType,
        columns: usize,
        log: bool,
    ) -> (Graph, Vec<RowReduction>, NodeId, NodeId) {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(dtype, &[4, columns]).unwrap();
        let max = builder
            .reduce(ReduceOp::ReduceMax, x, Some(&[1]), true, TieBreak::Low)
            .unwrap();
        let shifted = builder.binary(BinaryOp::Subtract, x, max).unwrap();
        let exp = builder.unary(UnaryOp::Exp, shifted).unwrap();
        let sum = builder
            .reduce(ReduceOp::Sum, exp, Some(&[1]), true, TieBreak::Low)
            .unwrap();
        let out = if log {
            let log_sum = builder.unary(UnaryOp::Log, sum).unwrap();
            builder
                .binary(BinaryOp::Subtract, shifted, log_sum)
                .unwrap()
        } else {
            builder.binary(BinaryOp::Divide, exp, sum).unwrap()
        };
        let elem = elem_of(dtype).unwrap();
        let reduction = |node, op, input| RowReduction {
            node,
            op,
            input,
            input_elem: elem,
            accumulator: accumulator_elem(op, elem, Accumulation::Native),
            result: elem,
        };
        let reductions = vec![
            reduction(max, ReduceOp::ReduceMax, x),
            reduction(sum, ReduceOp::Sum, exp),
        ];
        (builder.finish(&[out]).unwrap(), reductions, out, x)
    }

    fn held_of(dtype: DType, log: bool) -> Vec<usize> {
        let (graph, reductions, out, x) = softmax_parts(dtype, 8192, log);
        let team = TeamShape {
            size: 256,
            packets_per_lane: 8,
            subgroup_fold: true,
            workgroup: 256,
        };
        held_reductions(&graph, &reductions, &[out], &|node| node == x, team)
    }

    fn softmax_expression(log: bool, shared_divisors: bool) -> Expression {
        let (graph, reductions, out, x) = softmax_parts(DType::F32, 64, log);
        let materialised: Vec<bool> = (0..graph.nodes().len())
            .map(|index| NodeId(index as u32) == x)
            .collect();
        let held: &[usize] = if log { &[] } else { &[1] };
        group_expression(
            &graph,
            &reductions,
            &[out],
            &materialised,
            held,
            shared_divisors,
        )
        .unwrap()
    }

    #[test]
    fn a_division_by_the_rows_sum_divides_through_one_reciprocal_per_row_where_f64_exists() {
        let shared = softmax_expression(false, true);
        let element = shared.element_function();
        assert!(element.contains("nxop_divide_shared_f32("));
        // The reciprocal is computed once the sum is folded, not per element.
        assert!(
            shared
                .uniform_statements(2)
                .contains("nxf32_shared_reciprocal(")
        );
        assert!(!element.contains("nxf32_shared_reciprocal("));
        // Null arm: without f64 the catalog's division stays, per element.
        let plain = softmax_expression(false, false);
        assert!(plain.element_function().contains("nxop_divide_f32("));
        assert!(!plain.helper_blocks().contains("nxop_divide_shared_f32"));
    }

    #[test]
    fn values_every_element_of_a_row_shares_are_computed_once_per_row() {
        let expression = softmax_expression(true, false);
        let element = expression.element_function();
        // log_softmax's log(sum) waits for both reductions and leaves the element function.
        assert!(expression.uniform_statements(2).contains("nxop_log_f32("));
        assert!(!element.contains("nxop_log_f32("));
        // The maximum's register is read once it is folded.
        assert!(expression.uniform_statements(1).contains("reduced0"));
        // Null arm: x - max reads the leaf, so it stays per element, and so do exp(x - max)
        // (the sum's input) and the output.
        assert!(element.contains("nxop_subtract_f32("));
        assert!(element.contains("nxop_exp_f32("));
        assert_eq!(expression.uniform_statements(0), "");
    }

    #[test]
    fn softmax_keeps_its_exponentials_for_the_output_phase() {
        // The sum's input, exp(x - max), is what the output divides: kept.
        assert_eq!(held_of(DType::F32, false), vec![1]);
        // The maximum's input is the leaf itself: nothing to keep.
        // Null arms: log_softmax's output reads x - max, not the exponentials; an f64 row of
        // 8192 fills the registers with its leaf alone.
        assert_eq!(held_of(DType::F32, true), Vec::<usize>::new());
        assert_eq!(held_of(DType::F64, false), Vec::<usize>::new());
    }

    fn team(
        subgroup_fold: bool,
        subgroup_size: u32,
        row: usize,
        bytes: usize,
    ) -> Option<(usize, usize)> {
        team_shape(subgroup_fold, subgroup_size, row, bytes, 1024)
            .map(|team| (team.size, team.packets_per_lane))
    }

    #[test]
    fn rows_up_to_the_register_cap_get_a_team() {
        // H200: subgroups of 32. An 8K f32 row fills a 256-wide workgroup, eight packets each.
        assert_eq!(team(true, 32, 8192, 4), Some((256, 8)));
        // Null arm: one element more does not fit.
        assert_eq!(team(true, 32, 8193, 4), None);
        // Layer norm's three f32 leaves fill the 384 bytes in a team of 256, past the 256
        // that widens it: a team of 512 in a workgroup of its own. A fourth leaf does not fit.
        assert_eq!(team(true, 32, 8192, 12), Some((512, 4)));
        assert_eq!(team(true, 32, 8192, 16), None);
        // Null arms: no wider workgroup on the device, or a team narrower than the workgroup
        // (a row of 2048 with three leaves), keep the team.
        let narrow = team_shape(true, 32, 8192, 12, 256).unwrap();
        assert_eq!((narrow.size, narrow.workgroup), (256, 256));
        assert_eq!(team(true, 32, 2048, 12), Some((64, 8)));
        let wide = team_shape(true, 32, 8192, 12, 1024).unwrap();
        assert_eq!(wide.workgroup, 512);
        // Short rows: a team narrower than a subgroup, several rows per workgroup.
        assert_eq!(team(true, 32, 64, 4), Some((16, 1)));
        assert_eq!(team(true, 32, 1, 8), Some((1, 1)));
        // lavapipe: subgroups of 8; a team widens until each invocation holds its share.
        assert_eq!(team(true, 8, 300, 4), Some((16, 5)));
        // Without shuffles the whole workgroup folds one row through shared memory.
        assert_eq!(team(false, 32, 64, 4), Some((256, 1)));
    }
}
