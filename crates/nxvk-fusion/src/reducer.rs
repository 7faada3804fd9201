//! Reductions with a reducer function: Nx's `reduce` and `window_reduce` whose `fun` is a
//! graph of two scalar parameters ([`Op::ReduceWith`], [`Op::WindowReduceWith`]).
//!
//! Policy:
//! - The reducer becomes one GLSL function, `V nx_reducer(V element, V acc)`, written by
//!   fusion's own expression machinery (`codegen.rs`, the op table's expressions, rounded and
//!   opaque as fused kernels are), so a reducer computes what the eager ops would. A reducer
//!   node the fused kernels cannot compute on the device (a literal, a reduction, an op
//!   without a GLSL expression for the type) makes the stage an `Error::Unsupported`.
//! - The reducer is assumed associative and commutative, as XLA assumes: the GPU folds in
//!   tree order. `init` is folded in exactly once, after the elements (Nx starts its
//!   accumulator at `init`: `reduce(t, 10, &add/2)` is the sum plus 10); an empty reduction
//!   gives `init`. No identity is needed: invocations start from their first element, and
//!   the tree only combines values that exist.
//! - `reduce` moves the reduced axes last through a transposed view (no copy) and folds each
//!   row with one workgroup: every invocation folds a strided part, each subgroup its lanes
//!   by shuffles, then a shared-memory tree over the subgroups' results. Few long rows (a full
//!   reduction) are split into chunks folded by separate
//!   workgroups, whose partials a second dispatch of the same kernel folds with `init`.
//! - `window_reduce` runs `nxvk_kernels::window`'s kernel with the reducer as its fold: one
//!   invocation per output element, the window started from `init` and the padding holding
//!   `init` (as Nx.BinaryBackend pads with the accumulator).
//! - An input or init of another dtype is converted to the reducer's first (eager `as_type`),
//!   as Nx converts them before the function sees them.
//! - Kernels are compiled when the plan is made, so a cached plan runs without code
//!   generation.

use crate::codegen::{Expression, OPAQUE_HELPERS, OPAQUE_WORD, PUSH_BLOCK};
use crate::graph::{Graph, NodeId, Op};
use crate::plan::{MANY_ROWS, SHORT_ROW, compile, is_computable, is_transparent};
use nxvk_core::{BufferAccess, Capabilities, DType, Device, Error, Kernel, Result, Tensor};
use nxvk_kernels::catalog::{device_supports, elem_of};
use nxvk_kernels::codegen::{
    WORKGROUP_SIZE, compute_type, load, storage_bytes, storage_type, store,
};
use nxvk_kernels::launch::{MAX_ELEMENTS, poison_output, simplify};
use nxvk_kernels::{Elem, as_type, window_fold, window_fold_shader};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

/// A reduction with a reducer function, its kernel compiled.
#[derive(Debug)]
pub struct ReducerKernel {
    /// The `ReduceWith` or `WindowReduceWith` node computed.
    pub(crate) node: NodeId,
    kernel: Arc<Kernel>,
}

/// One dispatch of the reduce kernel: `tasks` (row, chunk) pairs of `source`, each row of
/// `row_length` elements, addressed through the `kept` and `folded` axes' (sizes, strides).
#[derive(Debug, Clone, Copy)]
struct Pass<'a> {
    source: &'a Tensor,
    init: &'a Tensor,
    destination: &'a Tensor,
    kept: (&'a [usize], &'a [usize]),
    folded: (&'a [usize], &'a [usize]),
    tasks: usize,
    row_length: usize,
    chunks: usize,
    chunk_length: usize,
    /// Fold `init` into each task's result (the last pass).
    fold_init: bool,
}

// One workgroup folds each row when there are `MANY_ROWS` rows or more or the rows are at
// most `SHORT_ROW` long (the fused prologue's rule, plan.rs); longer rows are split into
// chunks of at least `SHORT_ROW` elements, about `MANY_ROWS` chunks in all (a first guess,
// not raced yet).
/// Longest chunk: 16,384 iterations per invocation of 256, well under lavapipe's 65,535.
const MAX_CHUNK: usize = 1 << 22;
/// Most workgroups one dispatch launches (a grid-stride loop covers more tasks).
const MAX_GROUPS: u64 = 65_535;
/// Bytes of the address block: input, init, output.
const ADDRESS_BYTES: usize = 24;

fn unsupported(op: &'static str, dtype: DType, detail: impl Into<String>) -> Error {
    Error::Unsupported {
        op,
        dtype,
        detail: detail.into(),
    }
}

/// The element type the GPU computes `dtype` in, if this device runs it.
fn device_elem(op: &'static str, capabilities: &Capabilities, dtype: DType) -> Result<Elem> {
    elem_of(dtype)
        .filter(|&elem| device_supports(capabilities, elem))
        .ok_or_else(|| {
            unsupported(
                op,
                dtype,
                "reducer functions run on the GPU for the device's native real dtypes only",
            )
        })
}

/// GLSL defining `V {name}(V element, V acc)` from `reducer` (parameters: element, then
/// accumulator, as Nx calls `fun.(x, acc)`), without extensions or buffer types.
fn reducer_function(
    op: &'static str,
    reducer: &Graph,
    capabilities: &Capabilities,
    elem: Elem,
    name: &str,
) -> Result<Expression> {
    for (index, node) in reducer.nodes().iter().enumerate() {
        let id = NodeId(index as u32);
        let allowed = matches!(node.op, Op::Parameter { .. })
            || is_computable(reducer, capabilities, id)
            || is_transparent(&node.op);
        if !allowed {
            let dtype = node.ty.tensor().map_or(DType::U8, |tensor| tensor.dtype);
            return Err(unsupported(
                op,
                dtype,
                format!(
                    "the reducer function uses `{}`, which a GPU fold of {} cannot compute",
                    node.op.name(),
                    elem.name()
                ),
            ));
        }
    }
    let mut expression = Expression::build_function(reducer, &["a".into(), "b".into()])?;
    let value_type = compute_type(elem);
    let root = expression.root_values.first().cloned().unwrap_or_default();
    let mut function = format!("{value_type} {name}({value_type} a, {value_type} b) {{\n");
    function.push_str(&expression.statements);
    let _ = writeln!(function, "        return {root};\n}}");
    expression.statements = function;
    Ok(expression)
}

/// `V nx_shuffle_down(V value, uint delta)` (the value of lane + `delta`; the prelude enables
/// plain shuffles, not the relative ones) for the GLSL compute type `value_type`: 64-bit
/// values travel as two words (shuffles of 64-bit integers need the extended-types feature).
fn shuffle_down(value_type: &str) -> String {
    let body = match value_type {
        "double" => {
            "packDouble2x32(subgroupShuffle(unpackDouble2x32(value), gl_SubgroupInvocationID + delta))"
        }
        "int64_t" => {
            "int64_t(packUint2x32(subgroupShuffle(unpackUint2x32(uint64_t(value)), gl_SubgroupInvocationID + delta)))"
        }
        "uint64_t" => {
            "packUint2x32(subgroupShuffle(unpackUint2x32(value), gl_SubgroupInvocationID + delta))"
        }
        _ => "subgroupShuffle(value, gl_SubgroupInvocationID + delta)",
    };
    format!("V nx_shuffle_down(V value, uint delta) {{ return {body}; }}")
}

/// The reduce kernel's shader for `elem` with `reducer`. Parameter words after the three
/// addresses: chunks per row, chunk length, fold-init flag, kept rank, reduced rank, then the
/// kept axes' sizes and element strides, then the reduced axes' sizes and strides.
fn reduce_shader(reducer: &Expression, elem: Elem) -> String {
    let mut shader = reducer.declarations(&BTreeSet::new());
    shader.push_str(PUSH_BLOCK);
    shader.push_str(OPAQUE_HELPERS);
    shader.push_str(&reducer.statements);
    let _ = write!(
        shader,
        "#define V {value_type}
#define BYTES {bytes}ul
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) readonly buffer Element {{ {storage} v; }};
layout(buffer_reference, scalar, buffer_reference_align = {bytes}) writeonly buffer Folded {{ {storage} v; }};
layout(local_size_x = {WORKGROUP_SIZE}) in;
shared V partial[{WORKGROUP_SIZE}];
shared uint partial_valid[{WORKGROUP_SIZE}];

{shuffle}

V element_at(uint64_t address) {{ return {loaded}; }}

// Element offset of row-major `index` over `rank` axes whose sizes start at word `base` and
// strides follow them.
uint64_t element_offset(Words words, uint base, uint rank, uint index) {{
    uint64_t offset = 0ul;
    for (uint axis = rank; axis > 0u; axis--) {{
        uint size = words.v[base + axis - 1u];
        offset += uint64_t(index % size) * uint64_t(words.v[base + rank + axis - 1u]);
        index /= size;
    }}
    return offset;
}}

// Byte offset of element `j` of a row.
uint64_t column_offset(Words words, uint base, uint rank, bool linear, uint64_t linear_stride, uint j) {{
    return linear ? uint64_t(j) * linear_stride : element_offset(words, base, rank, j) * BYTES;
}}

void main() {{
    Addresses addresses = Addresses(push.params);
    Words words = Words(push.params + {ADDRESS_BYTES}ul);
    V init = element_at(addresses.v[1]);
    uint chunks = words.v[0];
    uint chunk_length = words.v[1];
    bool fold_init = words.v[2] != 0u;
    uint kept_rank = words.v[3];
    uint reduced_rank = words.v[4];
    uint reduced_base = 5u + 2u * kept_rank;
    // Rows over one (merged) axis, the common case, step by their stride: no division per
    // element.
    bool linear = reduced_rank <= 1u;
    uint64_t linear_stride = reduced_rank == 1u ? uint64_t(words.v[reduced_base + 1u]) * BYTES : 0ul;
    uint local = gl_LocalInvocationID.x;
    for (uint task = gl_WorkGroupID.x; task < push.count; task += gl_NumWorkGroups.x) {{
        uint begin = (task % chunks) * chunk_length;
        uint end = min(begin + chunk_length, push.reduced);
        uint present = end > begin ? end - begin : 0u;
        uint64_t row = addresses.v[0] + element_offset(words, 5u, kept_rank, task / chunks) * BYTES;
        // Invocations without an element hold `init` as a placeholder that is never folded.
        bool valid = local < present;
        V value = init;
        if (valid) {{
            value = element_at(row + column_offset(words, reduced_base, reduced_rank, linear, linear_stride, begin + local));
            for (uint j = begin + local + {WORKGROUP_SIZE}u; j < end; j += {WORKGROUP_SIZE}u) {{
                value = nx_reducer(element_at(row + column_offset(words, reduced_base, reduced_rank, linear, linear_stride, j)), value);
            }}
        }}
        // Each subgroup folds its lanes by shuffles (lane 0 ends with them all), carrying a
        // valid flag: no lane layout within the workgroup is assumed.
        for (uint delta = 1u; delta < gl_SubgroupSize; delta <<= 1u) {{
            V other = nx_shuffle_down(value, delta);
            bool other_valid = subgroupShuffle(valid ? 1u : 0u, gl_SubgroupInvocationID + delta) != 0u
                && gl_SubgroupInvocationID + delta < gl_SubgroupSize;
            if (other_valid) {{
                value = valid ? nx_reducer(other, value) : other;
                valid = true;
            }}
        }}
        if (gl_SubgroupInvocationID == 0u) {{
            partial[gl_SubgroupID] = value;
            partial_valid[gl_SubgroupID] = valid ? 1u : 0u;
        }}
        barrier();
        // Then a shared-memory tree over the subgroups' results.
        for (uint alive = gl_NumSubgroups; alive > 1u; ) {{
            uint half_size = (alive + 1u) / 2u;
            if (local + half_size < alive && partial_valid[local + half_size] != 0u) {{
                partial[local] = partial_valid[local] != 0u
                    ? nx_reducer(partial[local + half_size], partial[local])
                    : partial[local + half_size];
                partial_valid[local] = 1u;
            }}
            barrier();
            alive = half_size;
        }}
        if (local == 0u) {{
            V result = partial_valid[0] == 0u ? init : (fold_init ? nx_reducer(partial[0], init) : partial[0]);
            Folded(addresses.v[2] + uint64_t(task) * BYTES).v = {stored};
        }}
        barrier();
    }}
}}
",
        value_type = compute_type(elem),
        shuffle = shuffle_down(compute_type(elem)),
        bytes = storage_bytes(elem),
        storage = storage_type(elem),
        loaded = load(elem, "Element(address).v"),
        stored = store(elem, "result"),
    );
    shader
}

/// The kernel of `id`'s reducer node, or `None` for any other node.
pub(crate) fn plan_stage(
    graph: &Graph,
    device: &Device,
    id: NodeId,
) -> Result<Option<ReducerKernel>> {
    let node = graph.node(id);
    let (reducer, window) = match &node.op {
        Op::ReduceWith { reducer, .. } => (reducer, false),
        Op::WindowReduceWith { reducer, .. } => (reducer, true),
        _ => return Ok(None),
    };
    let op = node.op.name();
    let capabilities = device.capabilities();
    let elem = device_elem(op, capabilities, graph.tensor_type(id).dtype)?;
    let (family, source) = if window {
        let expression = reducer_function(op, reducer, capabilities, elem, "nx_window_fold")?;
        let declarations = format!(
            "{OPAQUE_HELPERS}{}{}",
            expression.helper_blocks(),
            expression.statements
        );
        ("reducer_window", window_fold_shader(elem, &declarations))
    } else {
        let expression = reducer_function(op, reducer, capabilities, elem, "nx_reducer")?;
        ("reducer_reduce", reduce_shader(&expression, elem))
    };
    let kernel = compile(device, family, &source)?;
    Ok(Some(ReducerKernel { node: id, kernel }))
}

impl ReducerKernel {
    /// Runs the node on its `input` and `init` values (converted to the node's dtype first).
    pub(crate) fn execute(&self, graph: &Graph, input: &Tensor, init: &Tensor) -> Result<Tensor> {
        let dtype = graph.tensor_type(self.node).dtype;
        let converted = |tensor: &Tensor| {
            if tensor.dtype() == dtype {
                Ok(tensor.clone())
            } else {
                as_type(tensor, dtype)
            }
        };
        let (input, init) = (&converted(input)?, &converted(init)?);
        match &graph.node(self.node).op {
            Op::ReduceWith { axes, .. } => {
                let output_type = graph.tensor_type(self.node);
                self.reduce(input, init, axes, &output_type.shape)
            }
            Op::WindowReduceWith {
                window_dimensions,
                options,
                ..
            } => window_fold(&self.kernel, input, init, window_dimensions, options),
            other => Err(unsupported(
                other.name(),
                input.dtype(),
                "not a reducer node (planner bug)",
            )),
        }
    }

    fn reduce(
        &self,
        input: &Tensor,
        init: &Tensor,
        axes: &[usize],
        output_shape: &[usize],
    ) -> Result<Tensor> {
        const OP: &str = "reduce";
        let device = input.device();
        let output = Tensor::empty(device, input.dtype(), output_shape)?;
        let rank = input.shape().len();
        let kept: Vec<usize> = (0..rank).filter(|axis| !axes.contains(axis)).collect();
        let permutation: Vec<usize> = kept.iter().chain(axes).copied().collect();
        let rows_first = input.transpose(&permutation)?;
        let (shape, strides) = (rows_first.shape(), rows_first.layout().strides());
        let split = kept.len();
        let rows: usize = shape[..split].iter().product();
        let reduced: usize = shape[split..].iter().product();
        if rows == 0 {
            return Ok(output);
        }
        if input.n_elements() > MAX_ELEMENTS {
            return Err(Error::BadOperands {
                op: OP,
                shapes: vec![input.shape().to_vec()],
                dtypes: vec![input.dtype()],
                detail: format!(
                    "{} elements exceed the kernel's 32-bit index arithmetic",
                    input.n_elements()
                ),
            });
        }
        let chunk_length = if rows >= MANY_ROWS || reduced <= SHORT_ROW {
            reduced
        } else {
            reduced.div_ceil(MANY_ROWS.div_ceil(rows)).max(SHORT_ROW)
        }
        .clamp(1, MAX_CHUNK);
        let chunks = reduced.div_ceil(chunk_length).max(1);
        let (kept_shape, kept_strides) = simplify(&shape[..split], &[strides[..split].to_vec()]);
        let (reduced_shape, reduced_strides) =
            simplify(&shape[split..], &[strides[split..].to_vec()]);
        let kept = (&kept_shape[..], &kept_strides[0][..]);
        let folded = (&reduced_shape[..], &reduced_strides[0][..]);
        if chunks == 1 {
            self.dispatch(&Pass {
                source: input,
                init,
                destination: &output,
                kept,
                folded,
                tasks: rows,
                row_length: reduced,
                chunks: 1,
                chunk_length,
                fold_init: true,
            })?;
        } else {
            let partials = Tensor::empty(device, input.dtype(), &[rows, chunks])?;
            self.dispatch(&Pass {
                source: input,
                init,
                destination: &partials,
                kept,
                folded,
                tasks: rows * chunks,
                row_length: reduced,
                chunks,
                chunk_length,
                fold_init: false,
            })?;
            self.dispatch(&Pass {
                source: &partials,
                init,
                destination: &output,
                kept: (&[rows], &[chunks]),
                folded: (&[chunks], &[1]),
                tasks: rows,
                row_length: chunks,
                chunks: 1,
                chunk_length: chunks,
                fold_init: true,
            })?;
        }
        Ok(output)
    }

    /// One dispatch of the reduce kernel.
    fn dispatch(&self, pass: &Pass<'_>) -> Result<()> {
        let Pass {
            source,
            init,
            destination,
            kept,
            folded,
            tasks,
            row_length,
            chunks,
            chunk_length,
            fold_init,
        } = *pass;
        const OP: &str = "reduce";
        let fail = |detail: String| Error::BadOperands {
            op: OP,
            shapes: vec![source.shape().to_vec(), init.shape().to_vec()],
            dtypes: vec![source.dtype(), init.dtype()],
            detail,
        };
        let word = |value: usize| {
            u32::try_from(value).map_err(|_| fail(format!("{value} does not fit 32 bits")))
        };
        let mut params = Vec::new();
        for tensor in [source, init, destination] {
            let address = tensor
                .device_address()
                .ok_or_else(|| fail("sub-byte tensors have no element addresses".into()))?;
            params.extend_from_slice(&address.to_le_bytes());
        }
        let mut words = vec![chunks, chunk_length, usize::from(fold_init)];
        words.extend([kept.0.len(), folded.0.len()]);
        for part in [kept.0, kept.1, folded.0, folded.1] {
            words.extend_from_slice(part);
        }
        for value in words {
            params.extend_from_slice(&word(value)?.to_le_bytes());
        }
        let mut push = vec![0u8; 8];
        for value in [word(tasks)?, 0, word(row_length)?, OPAQUE_WORD] {
            push.extend_from_slice(&value.to_le_bytes());
        }
        let device = source.device();
        let groups = (tasks as u64)
            .min(MAX_GROUPS)
            .min(u64::from(device.capabilities().max_workgroup_count[0]))
            as u32;
        poison_output(destination.buffer())?;
        let accesses = [
            BufferAccess::Read(source.buffer()),
            BufferAccess::Read(init.buffer()),
            BufferAccess::Write(destination.buffer()),
        ];
        device.dispatch_with_params(&self.kernel, [groups, 1, 1], &push, &params, 0, &accesses)
    }
}
