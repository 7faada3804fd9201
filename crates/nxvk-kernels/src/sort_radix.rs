//! The radix sort of rows (`sort.rs` picks it by the rule of `sort_path.rs`; GLSL in
//! `sort_radix_codegen.rs`).
//!
//! Design: a stable LSD radix sort with 8-bit digits, so one pass per key byte: 8 passes for
//! 64-bit dtypes, 4 for 32-bit, 2 for 16-bit, 1 for 8-bit (keys are exactly as wide as the
//! dtype). All rows sort together: each pass is four dispatches over every tile of every row
//! (tiles of `workgroup_size * per_invocation` items of one row: 4,096 with subgroups of 32
//! and 48 KiB of shared memory, 2,048 for the 16-byte items of 64-bit keys):
//! 1. count: each workgroup counts its tile's digits with shared atomics and writes one count
//!    per (row, digit, tile), row-major then digit-major;
//! 2. block sums and 3. scan: one exclusive scan over all those counts (the sums of blocks of
//!    counts, then each block scanned from the sum of the blocks before it), which gives every
//!    (row, digit, tile) its place in the packed rows;
//! 4. scatter: each workgroup ranks its tile's items by digit (subgroup ballots, stable),
//!    reorders them into digit order in shared memory, and writes each digit's run to its place
//!    plus the item's rank: coalesced writes of about `tile / 256` items per run instead of one
//!    scattered item per invocation.
//!
//! The first pass reads the input elements and builds the items on the fly (key, then the
//! element's bits for sort or its position for argsort); the last writes the result directly
//! (values, positions, or items for top_k), so there is no separate key pass and no gather.
//! Bytes moved per key for a 32-bit sort: pass 1 reads 4 (count) + 4 (scatter) and writes 8;
//! passes 2 and 3 read 8 + 8 and write 8; pass 4 reads 8 + 8 and writes 4: 84 bytes per key
//! (about 1.4 GB for 16M keys, 0.35-0.42 ms at 3.3-4 TB/s), plus 256 x 4 bytes of counts per
//! tile, read or written five times per pass. A 64-bit sort moves 16-byte items through eight
//! passes: 360 bytes per key.
//!
//! Rejected: 4-bit digits (twice the passes; the previous design), one scan per (row, digit)
//! (a workgroup per segment of a few counts when rows are many and short: the flat scan's
//! cost does not depend on the row structure), and a single-pass chained scan (decoupled
//! look-back: it saves the count reads, 20 of the 84 bytes, but spins on other workgroups'
//! progress, which Vulkan does not guarantee and lavapipe's loop cap makes risky).

use crate::launch::poison_output;
use crate::sort::Direction;
use crate::sort_codegen::{key_bits, wide_keys};
use crate::sort_radix_codegen::{
    BINS, Payload, RADIX_BITS, RadixDestination, RadixShape, RadixSource, block_sums_shader,
    count_shader, kernel_name, scan_blocks_shader, scatter_shader,
};
use nxvk_core::{BufferAccess, DType, Device, DeviceBuffer, Error, Kernel, Result, Tensor};
use std::sync::Arc;

/// The most blocks the flat scan splits the counts into: each scanning workgroup first sums
/// the block sums before its own, so their count bounds that work (1,024 sums is one load per
/// invocation and a workgroup scan).
const MAX_SCAN_BLOCKS: u32 = 1024;

/// The radix kernels' shape on `device` for `dtype`'s keys, when the device can run them.
pub(crate) fn radix_shape(device: &Device, dtype: DType) -> Option<RadixShape> {
    RadixShape::for_device(device.capabilities(), wide_keys(dtype))
}

/// The push constants of every radix kernel.
struct RadixPush {
    source: u64,
    destination: u64,
    counts: u64,
    block_sums: u64,
    flip: u64,
    row_length: u32,
    tiles_per_row: u32,
    tiles: u32,
    shift: u32,
    destination_row_stride: u32,
    count_total: u32,
    block_length: u32,
    blocks: u32,
}

impl RadixPush {
    fn bytes(&self) -> Vec<u8> {
        let mut push = Vec::with_capacity(72);
        for address in [
            self.source,
            self.destination,
            self.counts,
            self.block_sums,
            self.flip,
        ] {
            push.extend_from_slice(&address.to_le_bytes());
        }
        for word in [
            self.row_length,
            self.tiles_per_row,
            self.tiles,
            self.shift,
            self.destination_row_stride,
            self.count_total,
            self.block_length,
            self.blocks,
        ] {
            push.extend_from_slice(&word.to_le_bytes());
        }
        push
    }
}

/// How the counts of one sort are laid out and split for the scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CountLayout {
    pub(crate) tiles_per_row: u32,
    pub(crate) tiles: u32,
    pub(crate) count_total: u32,
    pub(crate) block_length: u32,
    pub(crate) blocks: u32,
}

impl CountLayout {
    /// The layout for `rows` rows of `row_length` in tiles of `tile`, or `None` when the
    /// counts would not fit 32-bit indices.
    pub(crate) fn new(rows: usize, row_length: usize, tile: u32) -> Option<CountLayout> {
        let tiles_per_row = u32::try_from(row_length.div_ceil(tile as usize)).ok()?;
        let tiles = u32::try_from(rows).ok()?.checked_mul(tiles_per_row)?;
        let count_total = tiles.checked_mul(BINS)?;
        let chunks = count_total.div_ceil(tile);
        let block_length = chunks.div_ceil(MAX_SCAN_BLOCKS).max(1).checked_mul(tile)?;
        Some(CountLayout {
            tiles_per_row,
            tiles,
            count_total,
            block_length,
            blocks: count_total.div_ceil(block_length),
        })
    }
}

/// Sorts each of the contiguous `rows` (rows of `row_length` elements of a dtype with radix
/// keys) in `direction`, stably, all rows at once, writing the result as `destination` into
/// `output` (row `r` from element `r * output_row_stride` at `output_address`): items (key,
/// position) for the network's finishing kernels, the sorted values, or the positions.
#[allow(clippy::too_many_arguments)] // Each is one fact about the result; a struct would only rename them.
pub(crate) fn radix_sort_rows(
    op: &'static str,
    rows: &Tensor,
    row_length: usize,
    direction: Direction,
    destination: RadixDestination,
    output: &DeviceBuffer,
    output_address: u64,
    output_row_stride: usize,
) -> Result<()> {
    let device = rows.device();
    let dtype = rows.dtype();
    let unsupported = |detail: &str| Error::Unsupported {
        op,
        dtype,
        detail: detail.into(),
    };
    let shape = radix_shape(device, dtype)
        .ok_or_else(|| unsupported("the device lacks the radix sort's subgroup operations"))?;
    let bits = key_bits(dtype).ok_or_else(|| unsupported("no radix keys for this dtype"))?;
    let row_count = rows.n_elements().checked_div(row_length).unwrap_or(0);
    let total = row_count * row_length;
    let layout = CountLayout::new(row_count, row_length, shape.tile())
        .filter(|_| total <= crate::launch::MAX_ELEMENTS)
        .ok_or_else(|| unsupported("more radix tiles or elements than 32-bit indices hold"))?;
    let destination_row_stride = u32::try_from(output_row_stride)
        .ok()
        .filter(|&stride| stride as usize >= row_length)
        .ok_or_else(|| unsupported("a destination row shorter than the row"))?;
    let passes = bits / RADIX_BITS;
    let payload = match destination {
        RadixDestination::Values { .. } => Payload::Bits,
        _ => Payload::Position,
    };
    let flip = match direction {
        Direction::Ascending => 0,
        Direction::Descending => u64::MAX >> (64 - bits),
    };
    let counts = device.alloc(op, u64::from(layout.count_total) * 4)?;
    let block_sums = device.alloc(op, u64::from(layout.blocks) * 4)?;
    // Scratch items between passes, in packed rows: passes alternate between two buffers,
    // and only the last writes the output (whose rows may be longer, as top_k's are).
    let item_bytes = u64::from(shape.item_bytes());
    let scratch = (0..(passes - 1).min(2))
        .map(|_| device.alloc(op, total as u64 * item_bytes))
        .collect::<Result<Vec<_>>>()?;
    let target_of = |pass: u32| -> (&DeviceBuffer, u64, u32) {
        if pass + 1 == passes {
            (output, output_address, destination_row_stride)
        } else {
            let buffer = &scratch[pass as usize % 2];
            (buffer, buffer.device_address(), row_length as u32)
        }
    };
    if destination != RadixDestination::Items {
        poison_output(output)?;
    }
    let max_groups = device.capabilities().max_workgroup_count[0];
    let tile_groups = layout.tiles.clamp(1, max_groups);
    let scan_groups = layout.blocks.clamp(1, max_groups);
    let block_sums_kernel = device.kernel_from_glsl(
        &kernel_name("block_sums", shape, RadixSource::Items, None),
        &block_sums_shader(shape),
        &[],
    )?;
    let scan_kernel = device.kernel_from_glsl(
        &kernel_name("scan_blocks", shape, RadixSource::Items, None),
        &scan_blocks_shader(shape),
        &[],
    )?;
    let kernels = pass_kernels(device, shape, passes, dtype, payload, destination, op)?;
    let input_address = rows
        .device_address()
        .ok_or_else(|| unsupported("no address"))?;
    let mut source: (&DeviceBuffer, u64) = (rows.buffer(), input_address);
    for (pass, (count, scatter)) in (0..passes).zip(&kernels) {
        let (target, target_address, target_row_stride) = target_of(pass);
        let push = RadixPush {
            source: source.1,
            destination: target_address,
            counts: counts.device_address(),
            block_sums: block_sums.device_address(),
            flip,
            row_length: row_length as u32,
            tiles_per_row: layout.tiles_per_row,
            tiles: layout.tiles,
            shift: pass * RADIX_BITS,
            destination_row_stride: target_row_stride,
            count_total: layout.count_total,
            block_length: layout.block_length,
            blocks: layout.blocks,
        }
        .bytes();
        device.dispatch(
            count,
            [tile_groups, 1, 1],
            &push,
            &[BufferAccess::Read(source.0), BufferAccess::Write(&counts)],
        )?;
        device.dispatch(
            &block_sums_kernel,
            [scan_groups, 1, 1],
            &push,
            &[
                BufferAccess::Read(&counts),
                BufferAccess::Write(&block_sums),
            ],
        )?;
        device.dispatch(
            &scan_kernel,
            [scan_groups, 1, 1],
            &push,
            &[
                BufferAccess::Write(&counts),
                BufferAccess::Read(&block_sums),
            ],
        )?;
        device.dispatch(
            scatter,
            [tile_groups, 1, 1],
            &push,
            &[
                BufferAccess::Read(source.0),
                BufferAccess::Read(&counts),
                BufferAccess::Write(target),
            ],
        )?;
        source = (target, target_address);
    }
    Ok(())
}

/// Each pass's (count, scatter) kernels: the first reads the input, the last writes
/// `destination`, the others read and write items.
fn pass_kernels(
    device: &Arc<Device>,
    shape: RadixShape,
    passes: u32,
    dtype: DType,
    payload: Payload,
    destination: RadixDestination,
    op: &'static str,
) -> Result<Vec<(Arc<Kernel>, Arc<Kernel>)>> {
    (0..passes)
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
        .collect()
}

/// Compiles a generated radix kernel (`None`: the source or destination has no GLSL form).
fn compile(
    device: &Arc<Device>,
    name: String,
    shader: Option<String>,
    op: &'static str,
    dtype: DType,
) -> Result<Arc<Kernel>> {
    let shader = shader.ok_or_else(|| Error::Unsupported {
        op,
        dtype,
        detail: format!("no radix kernel `{name}`"),
    })?;
    device.kernel_from_glsl(&name, &shader, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan's blocks cover the counts exactly, in whole chunks of a tile, and never number
    /// more than the bound, from one tile to the most tiles 32-bit counts allow.
    #[test]
    fn count_layouts_cover_the_counts() {
        for (rows, row_length, tile) in [
            (1, 1, 4096),
            (1, 1 << 24, 4096),
            (1 << 14, 5000, 4096),
            (3, 2049, 1024),
            (1 << 20, 1100, 1024),
        ] {
            let layout = CountLayout::new(rows, row_length, tile).unwrap();
            assert_eq!(layout.count_total, layout.tiles * BINS);
            assert_eq!(layout.block_length % tile, 0);
            assert!(layout.blocks <= MAX_SCAN_BLOCKS, "{layout:?}");
            assert!(layout.blocks * layout.block_length >= layout.count_total);
            assert!((layout.blocks - 1) * layout.block_length < layout.count_total);
        }
        assert!(CountLayout::new(1 << 26, 4096, 1024).is_none());
    }
}
