//! The radix sort of a few long rows with keys of up to 32 bits (`sort.rs` picks it; GLSL in
//! `sort_radix_codegen.rs`).
//!
//! Design: a stable LSD radix sort with 8-bit digits, so one pass per key byte: 4 passes for
//! 32-bit dtypes, 2 for 16-bit, 1 for 8-bit (keys are exactly as wide as the dtype). Each pass
//! is three dispatches over tiles of `workgroup_size * per_invocation` items (4,096 with
//! subgroups of 32 and 48 KiB of shared memory):
//! 1. count: each workgroup counts its tile's digits with shared atomics and writes one count
//!    per (digit, tile), digit-major;
//! 2. scan: one workgroup per digit turns that digit's tile counts into exclusive prefix sums
//!    and writes the digit's total;
//! 3. scatter: each workgroup ranks its tile's items by digit (subgroup ballots, stable),
//!    reorders them into digit order in shared memory, and writes each digit's run to its place
//!    (the digit's start from the totals, plus earlier tiles from the scan): coalesced writes of
//!    about `tile / 256` items per run instead of one scattered item per invocation.
//!
//! The first pass reads the input elements and builds the 8-byte items on the fly (key, then
//! the element's bits for sort or its position for argsort); the last writes the result
//! directly (values, positions, or items for top_k), so there is no separate key pass and no
//! gather. Bytes moved per key for a 32-bit sort: pass 1 reads 4 (count) + 4 (scatter) and
//! writes 8; passes 2 and 3 read 8 + 8 and write 8; pass 4 reads 8 + 8 and writes 4: 84 bytes
//! per key (about 1.4 GB for 16M keys, 0.35-0.42 ms at 3.3-4 TB/s), plus 256 x tiles x 4 bytes
//! of counts, three times per pass. An argsort to s64 writes 8 instead of 4 in its last pass.
//!
//! Rejected: 4-bit digits (twice the passes; the previous design), and a single-pass chained
//! scan (decoupled look-back: it saves the count reads, 20 of the 84 bytes, but spins on other
//! workgroups' progress, which Vulkan does not guarantee and lavapipe's loop cap makes risky).
//! Rows sort one after another (up to 16 rows; more rows take the network). Not done yet:
//! many rows in one sort (the row would join the key's high digits) and 64-bit keys.

use crate::launch::poison_output;
use crate::sort::Direction;
use crate::sort_codegen::key_bits;
use crate::sort_radix_codegen::{
    Payload, RADIX_BITS, RadixDestination, RadixShape, RadixSource, count_shader, kernel_name,
    scan_shader, scatter_shader,
};
use nxvk_core::{BufferAccess, Device, DeviceBuffer, Error, Result, Tensor};
use std::sync::Arc;

/// Rows at least this long sort by radix; shorter rows sort faster in the bitonic network's
/// one shared-memory dispatch and few global steps.
const RADIX_MIN_ITEMS: usize = 2049;

/// Rows sort by radix one after another (three dispatches per key byte each), so only a few
/// rows do: more rows sort together in the network's dispatches.
const RADIX_MAX_ROWS: usize = 16;

/// Whether `rows` rows of `row_length` elements of `dtype` sort by radix on `device`.
pub(crate) fn radix_applies(
    device: &Device,
    dtype: nxvk_core::DType,
    rows: usize,
    row_length: usize,
) -> bool {
    (1..=RADIX_MAX_ROWS).contains(&rows)
        && (RADIX_MIN_ITEMS..=crate::launch::MAX_ELEMENTS).contains(&row_length)
        && key_bits(dtype).is_some_and(|bits| bits <= 32)
        && RadixShape::for_device(device.capabilities()).is_some()
}

/// The push constants of every radix kernel.
struct RadixPush {
    source: u64,
    destination: u64,
    counts: u64,
    totals: u64,
    total: u32,
    tiles: u32,
    shift: u32,
    flip: u32,
}

impl RadixPush {
    fn bytes(&self) -> Vec<u8> {
        let mut push = Vec::with_capacity(48);
        for address in [self.source, self.destination, self.counts, self.totals] {
            push.extend_from_slice(&address.to_le_bytes());
        }
        for word in [self.total, self.tiles, self.shift, self.flip] {
            push.extend_from_slice(&word.to_le_bytes());
        }
        push
    }
}

/// Sorts each row of `row_length` elements of the contiguous `rows` (of a dtype with keys of
/// up to 32 bits) in `direction`, stably, one row after another, writing the result as
/// `destination` into `output` (row `r` at `output_address + r * output_row_bytes`): items
/// (key, position) for the network's finishing kernels, the sorted values, or the positions.
#[allow(clippy::too_many_arguments)] // Each is one fact about the result; a struct would only rename them.
pub(crate) fn radix_sort_rows(
    op: &'static str,
    rows: &Tensor,
    row_length: usize,
    direction: Direction,
    destination: RadixDestination,
    output: &DeviceBuffer,
    output_address: u64,
    output_row_bytes: u64,
) -> Result<()> {
    let device = rows.device();
    let dtype = rows.dtype();
    let unsupported = |detail: &str| Error::Unsupported {
        op,
        dtype,
        detail: detail.into(),
    };
    let shape = RadixShape::for_device(device.capabilities())
        .ok_or_else(|| unsupported("the device lacks the radix sort's subgroup operations"))?;
    let bits = key_bits(dtype)
        .filter(|&bits| bits <= 32)
        .ok_or_else(|| unsupported("no radix keys of up to 32 bits for this dtype"))?;
    let total = u32::try_from(row_length).map_err(|_| unsupported("rows beyond 2^32 elements"))?;
    let row_count = rows.n_elements().checked_div(row_length).unwrap_or(0);
    let tiles = total.div_ceil(shape.tile());
    let passes = bits / RADIX_BITS;
    let payload = match destination {
        RadixDestination::Values { .. } => Payload::Bits,
        _ => Payload::Position,
    };
    let flip = match direction {
        Direction::Ascending => 0,
        Direction::Descending => u32::MAX >> (32 - bits),
    };
    let counts = device.alloc(op, u64::from(tiles) * 256 * 4)?;
    let totals = device.alloc(op, 256 * 4)?;
    let final_is_items = destination == RadixDestination::Items;
    // Scratch items between passes: passes alternate between two buffers, the last writing
    // the output (which is one of the two when the result is items).
    let scratch_buffers = if final_is_items { 1 } else { 2 };
    let scratch = (0..(passes - 1).min(scratch_buffers))
        .map(|_| device.alloc(op, u64::from(total) * 8))
        .collect::<Result<Vec<_>>>()?;
    // A pass writes the output when it is the last, or when the result is items and an even
    // number of passes follow; otherwise the scratch buffers, alternating.
    let target_of = |pass: u32, row_output: u64| -> (&DeviceBuffer, u64) {
        let passes_after = passes - 1 - pass;
        if passes_after == 0 || (final_is_items && passes_after.is_multiple_of(2)) {
            (output, row_output)
        } else {
            let buffer = &scratch[(passes_after as usize + 1) % scratch.len()];
            (buffer, buffer.device_address())
        }
    };
    if destination != RadixDestination::Items {
        poison_output(output)?;
    }
    let max_groups = device.capabilities().max_workgroup_count[0];
    let tile_groups = tiles.clamp(1, max_groups);
    let scan = device.kernel_from_glsl(
        &kernel_name("scan", shape, RadixSource::Items, None),
        &scan_shader(shape),
        &[],
    )?;
    // Each pass's (count, scatter) kernels.
    let kernels = (0..passes)
        .map(|pass| {
            let source = if pass == 0 {
                RadixSource::Input { dtype, payload }
            } else {
                RadixSource::Items
            };
            let target = if pass + 1 == passes {
                destination
            } else {
                RadixDestination::Items
            };
            let count = compile(
                device,
                kernel_name("count", shape, source, None),
                count_shader(shape, source),
                op,
                dtype,
            )?;
            let scatter = compile(
                device,
                kernel_name("scatter", shape, source, Some(target)),
                scatter_shader(shape, source, target),
                op,
                dtype,
            )?;
            Ok((count, scatter))
        })
        .collect::<Result<Vec<_>>>()?;
    let input_address = rows
        .device_address()
        .ok_or_else(|| unsupported("no address"))?;
    let input_row_bytes = row_length as u64 * u64::from(dtype.bits() / 8);
    for row in 0..row_count as u64 {
        let row_output = output_address + row * output_row_bytes;
        let mut source: (&DeviceBuffer, u64) =
            (rows.buffer(), input_address + row * input_row_bytes);
        for (pass, (count, scatter)) in (0..passes).zip(&kernels) {
            let (target, target_address) = target_of(pass, row_output);
            let push = RadixPush {
                source: source.1,
                destination: target_address,
                counts: counts.device_address(),
                totals: totals.device_address(),
                total,
                tiles,
                shift: pass * RADIX_BITS,
                flip,
            }
            .bytes();
            device.dispatch(
                count,
                [tile_groups, 1, 1],
                &push,
                &[BufferAccess::Read(source.0), BufferAccess::Write(&counts)],
            )?;
            device.dispatch(
                &scan,
                [256u32.min(max_groups), 1, 1],
                &push,
                &[BufferAccess::Write(&counts), BufferAccess::Write(&totals)],
            )?;
            device.dispatch(
                scatter,
                [tile_groups, 1, 1],
                &push,
                &[
                    BufferAccess::Read(source.0),
                    BufferAccess::Read(&counts),
                    BufferAccess::Read(&totals),
                    BufferAccess::Write(target),
                ],
            )?;
            source = (target, target_address);
        }
    }
    Ok(())
}

/// Compiles a generated radix kernel (`None`: the source or destination has no GLSL form).
fn compile(
    device: &Arc<Device>,
    name: String,
    shader: Option<String>,
    op: &'static str,
    dtype: nxvk_core::DType,
) -> Result<Arc<nxvk_core::Kernel>> {
    let shader = shader.ok_or_else(|| Error::Unsupported {
        op,
        dtype,
        detail: format!("no radix kernel `{name}`"),
    })?;
    device.kernel_from_glsl(&name, &shader, &[])
}
