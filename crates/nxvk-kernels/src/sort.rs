//! Sorting: Nx's `sort`, `argsort` (on any axis, both directions, always stable) and
//! `top_k`, on the GPU for every real dtype of whole bytes.
//!
//! Two paths, chosen per batch of rows by the rule of `sort_path.rs` (rows of up to 1,024
//! elements always take the network; longer ones whichever moves fewer bytes):
//! - a bitonic sorting network over *items* (an order-preserving key of the element and its
//!   position in the row; `sort_codegen.rs`). Ties compare by position, which makes the
//!   network stable; descending order complements the keys, so equal elements still keep
//!   their input order (Nx's stable descending sort). Rows are padded to a power of two with
//!   items above every real one. Steps whose distance is below a block of 1,024 items run in
//!   shared memory (one dispatch for all of them); longer steps run up to four per dispatch,
//!   each invocation holding the 16 items they connect in registers. No invocation loops more
//!   than a few times, whatever the row length (2^24 and beyond).
//! - a stable LSD radix sort (`sort_radix.rs`) of all rows at once: 8-bit digits, one pass
//!   per key byte (8 for 64-bit keys), reading the input in its first pass and writing the
//!   values or positions in its last; top_k takes its items.
//!
//! Keys follow Nx's order: NaN above +infinity (last ascending, first descending), and -0.0
//! equal to 0.0 (their input order is kept). Keys are as wide as the dtype. Not done yet: a
//! merge sort (data-dependent partitioning).
//!
//! The sorted axis is moved last (a transposing copy) and back; complex tensors are rejected
//! as Nx rejects them; 8-bit floats and sub-byte integers are `Unsupported`.

use crate::launch::poison_output;
use crate::movement;
use crate::sort_codegen::{
    Finish, MAX_GLOBAL_STEPS, SORT_BLOCK, SORT_WORKGROUP_SIZE, finish_shader, global_shader,
    keys_shader, local_shader, wide_keys,
};
use crate::sort_path::radix_applies;
use crate::sort_radix::radix_sort_rows;
use crate::sort_radix_codegen::RadixDestination;
use nxvk_core::{BufferAccess, DType, Device, DeviceBuffer, Error, Result, Tensor};
use std::sync::Arc;

/// The order of a sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Ascending,
    Descending,
}

fn bad(op: &'static str, input: &Tensor, detail: String) -> Error {
    Error::BadOperands {
        op,
        shapes: vec![input.shape().to_vec()],
        dtypes: vec![input.dtype()],
        detail,
    }
}

/// Rows of the input, sorted as items: `rows` rows of `row_length` elements, each padded to
/// `1 << log2_padded` items in `items`.
struct SortedRows {
    /// The input with the sorted axis last, contiguous.
    rows_tensor: Tensor,
    items: DeviceBuffer,
    wide: bool,
    rows: usize,
    row_length: usize,
    log2_padded: u32,
}

fn groups(device: &Device, invocations: u64) -> u32 {
    let max_groups = device.capabilities().max_workgroup_count[0];
    invocations
        .div_ceil(u64::from(SORT_WORKGROUP_SIZE))
        .clamp(1, u64::from(max_groups)) as u32
}

fn push_words(addresses: &[u64], words: &[u32]) -> Vec<u8> {
    let mut push = Vec::with_capacity(addresses.len() * 8 + words.len() * 4);
    for address in addresses {
        push.extend_from_slice(&address.to_le_bytes());
    }
    for word in words {
        push.extend_from_slice(&word.to_le_bytes());
    }
    push
}

/// The permutation that moves `axis` last, and the input in that order, contiguous.
fn axis_last(input: &Tensor, axis: usize) -> Result<(Vec<usize>, Tensor)> {
    let rank = input.shape().len();
    let mut permutation: Vec<usize> = (0..rank).filter(|&other| other != axis).collect();
    permutation.push(axis);
    let moved = if axis + 1 == rank {
        movement::contiguous(input)?
    } else {
        movement::transpose(input, &permutation)?
    };
    Ok((permutation, moved))
}

/// The inverse of `permutation`, as `transpose` takes it.
fn inverse(permutation: &[usize]) -> Vec<usize> {
    let mut inverse = vec![0; permutation.len()];
    for (position, &axis) in permutation.iter().enumerate() {
        inverse[axis] = position;
    }
    inverse
}

/// The input's rows along the sort axis: the axis moved last, contiguous.
struct Rows {
    /// The permutation that moved the axis last.
    permutation: Vec<usize>,
    tensor: Tensor,
    rows: usize,
    row_length: usize,
}

/// Checks the operand and lays its rows along `axis` out contiguously.
fn prepare(op: &'static str, input: &Tensor, axis: usize) -> Result<Rows> {
    let dtype = input.dtype();
    if dtype.is_complex() {
        return Err(bad(op, input, "complex numbers have no order".into()));
    }
    if dtype.is_sub_byte() || matches!(dtype, DType::F8E5M2 | DType::F8E4M3FN) {
        return Err(Error::Unsupported {
            op,
            dtype,
            detail: "no sort keys for sub-byte integers and 8-bit floats yet".into(),
        });
    }
    let rank = input.shape().len();
    let scalar;
    let (input, axis) = if rank == 0 {
        scalar = input.reshape(&[1])?;
        (&scalar, 0)
    } else {
        (input, axis)
    };
    if axis >= input.shape().len() {
        return Err(bad(
            op,
            input,
            format!("axis {axis} out of range for rank {rank}"),
        ));
    }
    let (permutation, tensor) = axis_last(input, axis)?;
    let row_length = input.shape()[axis];
    let rows = input.n_elements().checked_div(row_length).unwrap_or(0);
    Ok(Rows {
        permutation,
        tensor,
        rows,
        row_length,
    })
}

/// Sorts the rows as items (key, position), padded to a power of two per row: by radix or by
/// the bitonic network, as `sort_path.rs` decides.
fn sort_rows(op: &'static str, rows: Rows, direction: Direction) -> Result<SortedRows> {
    let Rows {
        tensor: rows_tensor,
        rows,
        row_length,
        ..
    } = rows;
    let dtype = rows_tensor.dtype();
    let padded = row_length.max(1).next_power_of_two();
    let block = SORT_BLOCK as usize;
    let total = (rows * padded).div_ceil(block) * block;
    if total > (u32::MAX / 2) as usize || padded > (1 << 31) {
        return Err(bad(
            op,
            &rows_tensor,
            format!("{total} padded items exceed the sort's 32-bit positions"),
        ));
    }
    let wide = wide_keys(dtype);
    let item_bytes = if wide { 16 } else { 8 };
    let device = rows_tensor.device().clone();
    let items = device.alloc(op, (total.max(1) * item_bytes) as u64)?;
    let sorted = SortedRows {
        rows_tensor,
        items,
        wide,
        rows,
        row_length,
        log2_padded: padded.trailing_zeros(),
    };
    if radix_applies(&device, dtype, rows, row_length) {
        radix_sort_rows(
            op,
            &sorted.rows_tensor,
            row_length,
            direction,
            RadixDestination::Items,
            &sorted.items,
            sorted.items.device_address(),
            padded,
        )?;
    } else if total > 0 {
        run_network(op, &device, &sorted, total as u32, padded as u32, direction)?;
    }
    Ok(sorted)
}

/// Sorts the rows by radix straight into a fresh tensor of `dtype` (the values or the
/// positions, as `destination` says), with the axis moved back: `None` when the rows do not
/// sort by radix.
fn radix_result(
    op: &'static str,
    rows: &Rows,
    direction: Direction,
    destination: RadixDestination,
    dtype: DType,
    original_shape: &[usize],
) -> Result<Option<Tensor>> {
    let device = rows.tensor.device();
    if !radix_applies(device, rows.tensor.dtype(), rows.rows, rows.row_length) {
        return Ok(None);
    }
    let output = Tensor::empty(device, dtype, rows.tensor.shape())?;
    radix_sort_rows(
        op,
        &rows.tensor,
        rows.row_length,
        direction,
        destination,
        output.buffer(),
        output.device_address().unwrap_or_default(),
        rows.row_length,
    )?;
    restore_axis(output, &rows.permutation, original_shape).map(Some)
}

/// Records the key pass and the whole network over `total` items in rows of `padded`.
fn run_network(
    op: &'static str,
    device: &Arc<Device>,
    sorted: &SortedRows,
    total: u32,
    padded: u32,
    direction: Direction,
) -> Result<()> {
    let dtype = sorted.rows_tensor.dtype();
    let keys = keys_shader(dtype).ok_or_else(|| Error::Unsupported {
        op,
        dtype,
        detail: "no sort key for this dtype".into(),
    })?;
    let keys_kernel = device.kernel_from_glsl(&format!("sort_keys_{dtype}"), &keys, &[])?;
    let input_address = sorted.rows_tensor.device_address().unwrap_or_default();
    let items_address = sorted.items.device_address();
    let push = push_words(
        &[input_address, items_address],
        &[
            total,
            sorted.row_length as u32,
            sorted.log2_padded,
            u32::from(direction == Direction::Descending),
            sorted.rows as u32,
        ],
    );
    device.dispatch(
        &keys_kernel,
        [groups(device, u64::from(total)), 1, 1],
        &push,
        &[
            BufferAccess::Read(sorted.rows_tensor.buffer()),
            BufferAccess::Write(&sorted.items),
        ],
    )?;
    let suffix = if sorted.wide { "wide" } else { "packed" };
    let local = device.kernel_from_glsl(
        &format!("sort_local_{suffix}"),
        &local_shader(sorted.wide),
        &[],
    )?;
    let max_groups = device.capabilities().max_workgroup_count[0];
    let local_groups = (total / SORT_BLOCK).clamp(1, max_groups);
    let access = [BufferAccess::Write(&sorted.items)];
    let padded_mask = padded - 1;
    let local_step = |stage: u32| {
        device.dispatch(
            &local,
            [local_groups, 1, 1],
            &push_words(&[items_address], &[total, padded_mask, stage]),
            &access,
        )
    };
    local_step(0)?;
    let log2_block = SORT_BLOCK.trailing_zeros();
    let mut stage = SORT_BLOCK * 2;
    while stage <= padded {
        // Distances from stage / 2 down to the block, up to four per pass.
        let mut top = stage.trailing_zeros() - 1;
        while top >= log2_block {
            let steps = (top - log2_block + 1).min(MAX_GLOBAL_STEPS);
            let log2_low = top + 1 - steps;
            let global = device.kernel_from_glsl(
                &format!("sort_global_{suffix}_{steps}"),
                &global_shader(sorted.wide, steps),
                &[],
            )?;
            device.dispatch(
                &global,
                [groups(device, u64::from(total >> steps)), 1, 1],
                &push_words(&[items_address], &[total, padded_mask, stage, log2_low]),
                &access,
            )?;
            top -= steps;
        }
        local_step(stage)?;
        stage *= 2;
    }
    Ok(())
}

/// Writes the first `output_length` sorted items of each row as `finish`, into a fresh tensor
/// of `dtype`, and moves the axis back.
fn finish(
    op: &'static str,
    sorted: &SortedRows,
    permutation: &[usize],
    finish: Finish,
    dtype: DType,
    output_length: usize,
    original_shape: &[usize],
) -> Result<Tensor> {
    let device = sorted.rows_tensor.device();
    let mut moved_shape = sorted.rows_tensor.shape().to_vec();
    if let Some(last) = moved_shape.last_mut() {
        *last = output_length;
    }
    let output = Tensor::empty(device, dtype, &moved_shape)?;
    let count = sorted.rows * output_length;
    if count > 0 {
        poison_output(output.buffer())?;
        let shader = finish_shader(sorted.wide, finish).ok_or_else(|| {
            bad(
                op,
                &sorted.rows_tensor,
                format!("positions cannot be written as {dtype}"),
            )
        })?;
        let name = match finish {
            Finish::Values { element_bytes } => format!("sort_values_{}", element_bytes * 8),
            Finish::Positions { dtype } => format!("sort_positions_{dtype}"),
        };
        let suffix = if sorted.wide { "wide" } else { "packed" };
        let kernel = device.kernel_from_glsl(&format!("{name}_{suffix}"), &shader, &[])?;
        let push = push_words(
            &[
                sorted.items.device_address(),
                sorted.rows_tensor.device_address().unwrap_or_default(),
                output.device_address().unwrap_or_default(),
            ],
            &[
                count as u32,
                sorted.row_length as u32,
                output_length as u32,
                sorted.log2_padded,
            ],
        );
        device.dispatch(
            &kernel,
            [groups(device, count as u64), 1, 1],
            &push,
            &[
                BufferAccess::Read(&sorted.items),
                BufferAccess::Read(sorted.rows_tensor.buffer()),
                BufferAccess::Write(output.buffer()),
            ],
        )?;
    }
    restore_axis(output, permutation, original_shape)
}

/// Moves the sorted axis of `output` back where `permutation` took it from, and gives a rank-0
/// input its shape back.
fn restore_axis(output: Tensor, permutation: &[usize], original_shape: &[usize]) -> Result<Tensor> {
    let restored = if permutation.len() > 1 && permutation.last() != Some(&(permutation.len() - 1))
    {
        movement::transpose(&output, &inverse(permutation))?
    } else {
        output
    };
    if original_shape.is_empty() {
        restored.reshape(&[])
    } else {
        Ok(restored)
    }
}

/// Whether `sort`, `argsort` and `top_k` of `rows` rows of `row_length` elements of `dtype`
/// run the radix path on `device` (the bitonic network otherwise): the rule of the module doc,
/// for tests and benchmarks that need to know which kernels ran.
pub fn uses_radix(device: &Device, dtype: DType, rows: usize, row_length: usize) -> bool {
    radix_applies(device, dtype, rows, row_length)
}

/// Nx's `sort` along `axis` (stable).
pub fn sort(input: &Tensor, axis: usize, direction: Direction) -> Result<Tensor> {
    const OP: &str = "sort";
    let rows = prepare(OP, input, axis)?;
    let values = RadixDestination::Values {
        dtype: input.dtype(),
    };
    if let Some(sorted) = radix_result(OP, &rows, direction, values, input.dtype(), input.shape())?
    {
        return Ok(sorted);
    }
    let permutation = rows.permutation.clone();
    let sorted = sort_rows(OP, rows, direction)?;
    finish(
        OP,
        &sorted,
        &permutation,
        Finish::Values {
            element_bytes: input.dtype().bits() / 8,
        },
        input.dtype(),
        sorted.row_length,
        input.shape(),
    )
}

/// Nx's `argsort` along `axis` (stable): positions of the sorted elements in their rows, as
/// `index_type` (Nx's default is s32).
pub fn argsort(
    input: &Tensor,
    axis: usize,
    direction: Direction,
    index_type: DType,
) -> Result<Tensor> {
    const OP: &str = "argsort";
    if !index_type.is_integer() || index_type.is_sub_byte() {
        return Err(bad(
            OP,
            input,
            format!("positions cannot be written as {index_type}"),
        ));
    }
    let rows = prepare(OP, input, axis)?;
    let positions = RadixDestination::Positions { dtype: index_type };
    if let Some(sorted) = radix_result(OP, &rows, direction, positions, index_type, input.shape())?
    {
        return Ok(sorted);
    }
    let permutation = rows.permutation.clone();
    let sorted = sort_rows(OP, rows, direction)?;
    finish(
        OP,
        &sorted,
        &permutation,
        Finish::Positions { dtype: index_type },
        index_type,
        sorted.row_length,
        input.shape(),
    )
}

/// Nx's `top_k`: the `k` largest elements along the last axis, in descending order (ties in
/// input order), and their positions as s32.
pub fn top_k(input: &Tensor, k: usize) -> Result<(Tensor, Tensor)> {
    const OP: &str = "top_k";
    let rank = input.shape().len();
    let Some(&length) = input.shape().last() else {
        return Err(bad(
            OP,
            input,
            "top_k needs a tensor of rank 1 or more".into(),
        ));
    };
    if k > length {
        return Err(bad(
            OP,
            input,
            format!("k ({k}) exceeds the last axis ({length})"),
        ));
    }
    let rows = prepare(OP, input, rank - 1)?;
    let permutation = rows.permutation.clone();
    let sorted = sort_rows(OP, rows, Direction::Descending)?;
    let element_bytes = input.dtype().bits() / 8;
    let values = finish(
        OP,
        &sorted,
        &permutation,
        Finish::Values { element_bytes },
        input.dtype(),
        k,
        input.shape(),
    )?;
    let positions = finish(
        OP,
        &sorted,
        &permutation,
        Finish::Positions { dtype: DType::S32 },
        DType::S32,
        k,
        input.shape(),
    )?;
    Ok((values, positions))
}
