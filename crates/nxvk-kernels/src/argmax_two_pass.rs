//! argmax and argmin of long rows in two passes.
//!
//! The one-pass templates give a row to one workgroup (or one subgroup), whose invocations
//! each walk `row / 256` elements: past 16M elements per row that is more than the 65,535
//! iterations Mesa 22's lavapipe allows an invocation, and on a large GPU a handful of long
//! rows would leave all but a few of its multiprocessors idle. Rows longer than
//! [`TWO_PASS_MIN_REDUCED`] are therefore split into chunks:
//!
//! 1. the catalog's Strided kernel runs one workgroup per (output, chunk) and writes each
//!    chunk's winning *index* (s64; an empty chunk writes the 32-bit `NO_INDEX`, 2^32 - 1) into
//!    a partials tensor;
//! 2. a combining kernel runs one workgroup per output, reads each chunk's index, loads the
//!    input element at that index again, and folds the (value, index) pairs with the same
//!    `nx_take` as the first pass (`reduce_codegen::reduce_prelude`): the last NaN wins,
//!    otherwise the extreme, ties broken by Nx's `tie_break`. The rule picks the best pair by
//!    (value, index) alone, so how the first pass partitions a row does not matter.
//!
//! Storing indices only keeps the partials one type (s64) for every input type and leaves the
//! values where they are; the second pass reads one element per chunk back. The threshold
//! is the one-pass limit, not a tuned crossover: a lower one would be a knob to race first.

use crate::catalog::CatalogKernel;
use crate::op_table::Elem;
use crate::reduce::{Pass, TieBreak, dispatch, dispatch_kernel, kernel};
use crate::reduce_codegen::{
    Accumulation, FLAG_TIE_BREAK_HIGH, REDUCE_WORKGROUP_SIZE, ReduceLayout, ReduceOp,
    reduce_prelude,
};
use nxvk_core::{DType, Result, Tensor};

/// Rows longer than this many elements take two passes (the one-pass templates' limit).
pub const TWO_PASS_MIN_REDUCED: usize = 1 << 24;

/// Elements each first-pass workgroup task covers: 256 per invocation.
const CHUNK_ELEMENTS: usize = 256 * REDUCE_WORKGROUP_SIZE as usize;

/// The most chunks per row: a second-pass invocation then folds at most 64 of them, and a
/// first-pass invocation of a 2^32-element row walks 1,024 elements.
const MAX_CHUNKS: usize = 64 * REDUCE_WORKGROUP_SIZE as usize;

/// The chunks each row of `op` over `n_reduced` elements splits into, or `None` for one pass:
/// `forced` (a test hook) for argmax/argmin, else enough chunks for rows longer than
/// [`TWO_PASS_MIN_REDUCED`].
pub(crate) fn chunks(op: ReduceOp, n_reduced: usize, forced: Option<usize>) -> Option<usize> {
    if !op.is_arg() {
        return None;
    }
    match forced {
        Some(chunks) => Some(chunks.max(1)),
        None if n_reduced > TWO_PASS_MIN_REDUCED => {
            Some(n_reduced.div_ceil(CHUNK_ELEMENTS).min(MAX_CHUNKS))
        }
        None => None,
    }
}

/// Nx's argmax (`op` ArgMax) or argmin over `axis` with every row split into `chunks` chunks
/// reduced in two passes, whatever its length: a test hook, so tests can exercise both passes
/// on small inputs (`reduce::argmax` splits only rows longer than [`TWO_PASS_MIN_REDUCED`]).
pub fn arg_reduce_in_chunks(
    op: ReduceOp,
    input: &Tensor,
    axis: Option<usize>,
    tie_break: TieBreak,
    keep_axis: bool,
    chunks: usize,
) -> Result<Tensor> {
    crate::reduce::arg_reduce(op, input, axis, tie_break, keep_axis, Some(chunks))
}

/// Both passes of `op` over `kept`/`reduced` of `input` (of catalog type `elem`), into a fresh
/// s64 tensor of `output_shape`.
#[allow(clippy::too_many_arguments)] // One reduction description, as `reduce_passes` takes.
pub(crate) fn reduce(
    op: ReduceOp,
    elem: Elem,
    input: &Tensor,
    kept: (&[usize], &[usize]),
    reduced: (&[usize], &[usize]),
    tie_break: TieBreak,
    output_shape: &[usize],
    chunks: usize,
) -> Result<Tensor> {
    let device = input.device();
    let n_outputs: usize = kept.0.iter().product();
    let flags = match tie_break {
        TieBreak::Low => 0,
        TieBreak::High => FLAG_TIE_BREAK_HIGH,
    };
    let strided: &'static CatalogKernel =
        kernel(op, elem, Accumulation::Native, ReduceLayout::Strided);
    let first = Pass {
        op,
        kernel: strided,
        input,
        kept,
        reduced,
        chunks,
        flags,
        groups: n_outputs * chunks,
    };
    let partials = Tensor::empty(device, DType::S64, &[n_outputs, chunks])?;
    dispatch(&first, &partials)?;
    // The second pass walks the same view; `chunks` tells it how many partials each output
    // has, and the parameter block ends with the partials' address.
    let combine = device.kernel_from_glsl(
        &format!("{}_{}_combine_chunks", op.name(), elem.name()),
        &combine_shader(op, elem),
        &[],
    )?;
    let partials_address = partials.buffer().device_address();
    let second = Pass {
        groups: n_outputs,
        ..first
    };
    let output = Tensor::empty(device, DType::S64, output_shape)?;
    dispatch_kernel(
        &second,
        &combine,
        &[partials_address as u32, (partials_address >> 32) as u32],
        &[partials.buffer()],
        &output,
    )?;
    Ok(output)
}

/// The combining kernel: one workgroup per output folds its chunks' (value, index) pairs.
fn combine_shader(op: ReduceOp, elem: Elem) -> String {
    let mut shader = reduce_prelude(op, elem, Accumulation::Native);
    shader.push_str(COMBINE_MAIN);
    shader
}

const COMBINE_MAIN: &str = "
layout(buffer_reference, scalar, buffer_reference_align = 8) readonly buffer Partial { uint64_t v; };

shared V chunk_value[WORKGROUP_SIZE];
shared uint chunk_index[WORKGROUP_SIZE];

void main() {
    uint local = gl_LocalInvocationID.x;
    uint reduced_first_word = 2u * push.kept_rank;
    uint address_word = reduced_first_word + 2u * push.reduced_rank;
    uint64_t partials = uint64_t(push.params.v[address_word])
        | (uint64_t(push.params.v[address_word + 1u]) << 32);
    // Grid-stride over outputs; `output_index` is uniform, so every barrier is reached by all.
    for (uint output_index = gl_WorkGroupID.x; output_index < push.n_outputs; output_index += gl_NumWorkGroups.x) {
        uint64_t base = nx_offset(output_index, 0u, push.kept_rank);
        V value = IDENTITY;
        uint index = NO_INDEX;
        for (uint chunk = local; chunk < push.chunks; chunk += WORKGROUP_SIZE) {
            uint64_t partial = uint64_t(output_index) * uint64_t(push.chunks) + uint64_t(chunk);
            // Indices fit 32 bits (see the reduce template), NO_INDEX included.
            uint other_index = uint(Partial(partials + partial * 8ul).v);
            // An empty chunk has no element to read back.
            if (other_index != NO_INDEX) {
                V other_value = nx_load(base + nx_offset(other_index, reduced_first_word, push.reduced_rank));
                NX_FOLD(value, index, other_value, other_index)
            }
        }
        chunk_value[local] = value;
        chunk_index[local] = index;
        barrier();
        for (uint width = WORKGROUP_SIZE / 2u; width > 0u; width >>= 1u) {
            if (local < width) {
                value = chunk_value[local];
                index = chunk_index[local];
                NX_FOLD(value, index, chunk_value[local + width], chunk_index[local + width])
                chunk_value[local] = value;
                chunk_index[local] = index;
            }
            barrier();
        }
        if (local == 0u) {
            nx_store(output_index, chunk_value[0], chunk_index[0]);
        }
        barrier();
    }
}
";
