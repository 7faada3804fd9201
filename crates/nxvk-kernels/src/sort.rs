//! Sorting: Nx's `sort`, `argsort` (on any axis, both directions, always stable) and
//! `top_k`, on the GPU for every real dtype of whole bytes.
//!
//! Design: a bitonic sorting network over *items* (an order-preserving key of the element and
//! its position in the row; `sort_codegen.rs`). Ties compare by position, which makes the
//! network stable; descending order complements the keys, so equal elements still keep their
//! input order (Nx's stable descending sort). Rows are padded to a power of two with items
//! above every real one. Steps whose distance is below a block of 1,024 items run in shared
//! memory (one dispatch for all of them); longer steps run up to four per dispatch, each
//! invocation holding the 16 items they connect in registers. No invocation loops more than
//! a few times, whatever the row length (2^24 and beyond).
//!
//! One row of keys of up to 32 bits (the common `sort` of a long vector) sorts instead by a
//! stable LSD radix sort on the key bits, 4 bits per pass (count per tile, one scan, stable
//! scatter): eight passes over the items instead of the network's O(log^2 n) steps.
//!
//! Keys follow Nx's order: NaN above +infinity (last ascending, first descending), and -0.0
//! equal to 0.0 (their input order is kept). Not done yet: radix for many rows or 64-bit keys
//! (the row or a second key word would join the digits), 8-bit digits with a decoupled
//! look-back scan (half the passes), and a merge sort (data-dependent partitioning).
//!
//! The sorted axis is moved last (a transposing copy) and back; complex tensors are rejected
//! as Nx rejects them; 8-bit floats and sub-byte integers are `Unsupported`.

use crate::launch::poison_output;
use crate::movement;
use crate::sort_codegen::{
    Finish, MAX_GLOBAL_STEPS, RADIX_BITS, RADIX_TILE, SORT_BLOCK, SORT_WORKGROUP_SIZE,
    finish_shader, global_shader, keys_shader, local_shader, radix_count_shader, radix_scan_shader,
    radix_scatter_shader, wide_keys,
};
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

/// Checks the operand and sorts its rows along `axis` as items.
fn sort_rows(
    op: &'static str,
    input: &Tensor,
    axis: usize,
    direction: Direction,
) -> Result<(Vec<usize>, SortedRows)> {
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
    let (permutation, rows_tensor) = axis_last(input, axis)?;
    let row_length = input.shape()[axis];
    let rows = input.n_elements().checked_div(row_length).unwrap_or(0);
    let padded = row_length.max(1).next_power_of_two();
    let block = SORT_BLOCK as usize;
    let total = (rows * padded).div_ceil(block) * block;
    if total > (u32::MAX / 2) as usize || padded > (1 << 31) {
        return Err(bad(
            op,
            input,
            format!("{total} padded items exceed the sort's 32-bit positions"),
        ));
    }
    let wide = wide_keys(dtype);
    let item_bytes = if wide { 16 } else { 8 };
    let device = input.device();
    let items = device.alloc(op, (total.max(1) * item_bytes) as u64)?;
    let sorted = SortedRows {
        rows_tensor,
        items,
        wide,
        rows,
        row_length,
        log2_padded: padded.trailing_zeros(),
    };
    if total > 0 {
        run_network(op, device, &sorted, total as u32, padded as u32, direction)?;
    }
    Ok((permutation, sorted))
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
    if !sorted.wide && sorted.rows == 1 && padded >= RADIX_MIN_ITEMS {
        return radix_sort(op, device, &sorted.items, total);
    }
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

/// Rows at least this long (padded) with keys of up to 32 bits sort by radix, not by the
/// network (when there is one row).
const RADIX_MIN_ITEMS: u32 = 4096;

/// A stable LSD radix sort of `total` packed items on their keys (the high words), 4 bits per
/// pass: per pass, a count of each digit per tile, one exclusive scan over (digit, tile), and
/// a stable scatter. Eight passes (even) leave the items back in `items`.
fn radix_sort(
    op: &'static str,
    device: &Arc<Device>,
    items: &DeviceBuffer,
    total: u32,
) -> Result<()> {
    let tiles = total.div_ceil(RADIX_TILE);
    let entries = tiles * (1 << RADIX_BITS);
    let counts = device.alloc(op, u64::from(entries) * 4)?;
    let alternate = device.alloc(op, u64::from(total) * 8)?;
    let count = device.kernel_from_glsl("sort_radix_count", &radix_count_shader(), &[])?;
    let scan = device.kernel_from_glsl("sort_radix_scan", &radix_scan_shader(), &[])?;
    let scatter = device.kernel_from_glsl("sort_radix_scatter", &radix_scatter_shader(), &[])?;
    let workgroups = tiles.clamp(1, device.capabilities().max_workgroup_count[0]);
    let (mut from, mut to) = (items, &alternate);
    for pass in 0..32 / RADIX_BITS {
        let shift = pass * RADIX_BITS;
        device.dispatch(
            &count,
            [workgroups, 1, 1],
            &push_words(
                &[from.device_address(), counts.device_address()],
                &[total, tiles, shift],
            ),
            &[BufferAccess::Read(from), BufferAccess::Write(&counts)],
        )?;
        device.dispatch(
            &scan,
            [1, 1, 1],
            &push_words(&[counts.device_address()], &[entries]),
            &[BufferAccess::Write(&counts)],
        )?;
        device.dispatch(
            &scatter,
            [workgroups, 1, 1],
            &push_words(
                &[
                    from.device_address(),
                    to.device_address(),
                    counts.device_address(),
                ],
                &[total, tiles, shift],
            ),
            &[
                BufferAccess::Read(from),
                BufferAccess::Read(&counts),
                BufferAccess::Write(to),
            ],
        )?;
        std::mem::swap(&mut from, &mut to);
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

/// Nx's `sort` along `axis` (stable).
pub fn sort(input: &Tensor, axis: usize, direction: Direction) -> Result<Tensor> {
    const OP: &str = "sort";
    let (permutation, sorted) = sort_rows(OP, input, axis, direction)?;
    let element_bytes = input.dtype().bits() / 8;
    finish(
        OP,
        &sorted,
        &permutation,
        Finish::Values { element_bytes },
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
    let (permutation, sorted) = sort_rows(OP, input, axis, direction)?;
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
    let (permutation, sorted) = sort_rows(OP, input, rank - 1, Direction::Descending)?;
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
