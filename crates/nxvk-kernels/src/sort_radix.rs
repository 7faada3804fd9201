//! The radix sort of rows (`sort.rs` picks it by the rule of `sort_path.rs`; GLSL in
//! `sort_radix_codegen.rs`).
//!
//! Design: a stable LSD radix sort with 8-bit digits, so one pass per key byte: 8 passes for
//! 64-bit dtypes, 4 for 32-bit, 2 for 16-bit, 1 for 8-bit (keys are exactly as wide as the
//! dtype). All rows sort together: each pass is four dispatches over every tile of every row
//! (tiles of `workgroup_size * per_invocation` items of one row: with subgroups of 32 and
//! 48 KiB of shared memory 4,096 for argsort's 8-byte items and sort's 64-bit keys, 2,048 for
//! argsort's 16-byte items of 64-bit keys and for sort's keys of up to 32 bits, where smaller
//! tiles measured faster):
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
//! The first pass reads the input elements and builds the items on the fly (the key, and for
//! argsort and top_k the element's position); the last writes the result directly (values,
//! positions, or items for top_k), so there is no separate key pass and no gather. Sort's
//! items are the keys alone: the last pass writes each key's element, and for floats a fix-up
//! dispatch puts back the zeros and NaNs whose bits differ from their key's element
//! (`sort_radix_codegen.rs`), reading only the tiles its tallies mark. Bytes moved per key for a
//! 32-bit argsort: pass 1 reads 4 (count) + 4 (scatter) and writes 8; passes 2 and 3 read 8 + 8
//! and write 8; pass 4 reads 8 + 8 and writes 4: 84 bytes per key (about 1.4 GB for 16M keys,
//! 0.35-0.42 ms at 3.3-4 TB/s), plus 256 x 4 bytes of counts per tile, read or written five
//! times per pass. A 32-bit sort moves 12 bytes per key and pass (48 in all), a 64-bit sort
//! 24 per pass through eight passes (192), a 64-bit argsort 16-byte items (360 bytes per key).
//!
//! The variant behind `NXVK_KNOB_SORT_ONESWEEP=on` (off by default: it lost its race on the
//! H200; rows under 2^30) replaces the count and scan of every pass by one histogram of every pass's digits
//! (one read of the input) and a decoupled look-back inside the scatter: tiles are taken in
//! order from a ticket counter; each publishes its digit counts, sums the counts of the row's
//! earlier tiles back to the first published prefix, and publishes its own prefix; a tile
//! still unpublished after a few polls is counted again from the pass's source, so no
//! workgroup depends on another's progress (which Vulkan does not promise, and which
//! lavapipe's loop limiter of 65,535 iterations per invocation would turn into wrong results
//! if it spun). That is 1 + passes dispatches, and per pass it saves the count kernel (a read
//! of the pass's source: 0.045 of about 0.33 ms per middle pass of a 32-bit sort on the H200,
//! BENCHMARKS.md) and the two scan dispatches.
//!
//! Rejected: 4-bit digits (twice the passes; the previous design), one scan per (row, digit)
//! (a workgroup per segment of a few counts when rows are many and short: the flat scan's cost
//! does not depend on the row structure), and a look-back that spins until the tile before
//! publishes (on lavapipe it ran out of loop iterations and scattered out of bounds: a crash
//! of `tests/sort.rs`).

use crate::kernel_knob::KernelKnob;
use crate::launch::poison_output;
use crate::sort::Direction;
use crate::sort_codegen::{key_bits, wide_keys};
use crate::sort_radix_codegen::{
    BINS, Placement, RADIX_BITS, RadixDestination, RadixShape, RadixSource, TALLY_WORDS,
    block_sums_shader, count_shader, fix_up_shader, histogram_shader, keeps_tallies, kernel_name,
    scan_blocks_shader, scatter_shader,
};
use nxvk_core::{BufferAccess, DType, Device, DeviceBuffer, Error, Kernel, Result, Tensor};
use std::sync::Arc;

/// The most blocks the flat scan splits the counts into: each scanning workgroup first sums
/// the block sums before its own, so their count bounds that work (1,024 sums is one load per
/// invocation and a workgroup scan).
const MAX_SCAN_BLOCKS: u32 = 1024;

/// Rows from this length on keep the default passes under the look-back knob: its tile
/// statuses hold counts and prefixes in 30 bits.
const LOOK_BACK_ROW_LIMIT: usize = 1 << 30;

/// The radix kernels' shape on `device` for `dtype`'s keys, with items that carry `positions`
/// or not, when the device can run them.
pub(crate) fn radix_shape(device: &Device, dtype: DType, positions: bool) -> Option<RadixShape> {
    RadixShape::for_device(device.capabilities(), wide_keys(dtype), positions)
}

/// The push constants of every radix kernel.
#[derive(Clone, Copy)]
struct RadixPush {
    source: u64,
    destination: u64,
    /// The count kernel's counts, or this pass's tile statuses of the look-back.
    counts: u64,
    block_sums: u64,
    flip: u64,
    totals: u64,
    tickets: u64,
    tallies: u64,
    row_length: u32,
    tiles_per_row: u32,
    tiles: u32,
    shift: u32,
    destination_row_stride: u32,
    count_total: u32,
    block_length: u32,
    blocks: u32,
    pass: u32,
    passes: u32,
}

impl RadixPush {
    fn bytes(&self) -> Vec<u8> {
        let mut push = Vec::with_capacity(104);
        for address in [
            self.source,
            self.destination,
            self.counts,
            self.block_sums,
            self.flip,
            self.totals,
            self.tickets,
            self.tallies,
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
            self.pass,
            self.passes,
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
    let positions = !matches!(destination, RadixDestination::Values { .. });
    let shape = radix_shape(device, dtype, positions)
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
    let item_bytes = u64::from(shape.item_bytes());
    let run = RadixRun {
        op,
        device,
        dtype,
        shape,
        layout,
        rows: row_count as u32,
        passes,
        destination,
        flip: match direction {
            Direction::Ascending => 0,
            Direction::Descending => u64::MAX >> (64 - bits),
        },
        input: (
            rows.buffer(),
            rows.device_address()
                .ok_or_else(|| unsupported("no address"))?,
        ),
        output: (output, output_address, destination_row_stride),
        row_length: row_length as u32,
        scratch: (0..(passes - 1).min(2))
            .map(|_| device.alloc(op, total as u64 * item_bytes))
            .collect::<Result<Vec<_>>>()?,
        tallies: if keeps_tallies(shape, RadixSource::Input { dtype }) {
            Some(device.alloc(op, u64::from(layout.tiles) * u64::from(TALLY_WORDS) * 4)?)
        } else {
            None
        },
    };
    if destination != RadixDestination::Items {
        poison_output(output)?;
    }
    if KernelKnob::SortOnesweep.is_on(device) && row_length < LOOK_BACK_ROW_LIMIT {
        run.look_back_passes()?;
    } else {
        run.scanned_count_passes()?;
    }
    run.fix_up()
}

/// What one radix sort runs with: its kernels' shape, its rows and passes, and where each
/// pass reads and writes.
struct RadixRun<'a> {
    op: &'static str,
    device: &'a Arc<Device>,
    dtype: DType,
    shape: RadixShape,
    layout: CountLayout,
    rows: u32,
    row_length: u32,
    passes: u32,
    destination: RadixDestination,
    flip: u64,
    input: (&'a DeviceBuffer, u64),
    /// The output, its address and its row stride in elements.
    output: (&'a DeviceBuffer, u64, u32),
    /// Items between passes, in packed rows.
    scratch: Vec<DeviceBuffer>,
    /// The fix-up's tallies of every tile, when the first pass keeps them (`keeps_tallies`).
    tallies: Option<DeviceBuffer>,
}

/// The buffers that hold a pass's counts or statuses, and the rest of its bookkeeping.
#[derive(Clone, Copy, Default)]
struct Bookkeeping {
    counts: u64,
    block_sums: u64,
    totals: u64,
    tickets: u64,
}

impl RadixRun<'_> {
    /// Where pass `pass` reads: the input rows first, then the items the pass before wrote.
    fn source_of(&self, pass: u32) -> (&DeviceBuffer, u64) {
        if pass == 0 {
            self.input
        } else {
            let (buffer, address, _) = self.target_of(pass - 1);
            (buffer, address)
        }
    }

    /// Where pass `pass` writes, and its row stride: the last writes the output (whose rows
    /// may be longer, as top_k's are); the others alternate between the two scratch buffers.
    fn target_of(&self, pass: u32) -> (&DeviceBuffer, u64, u32) {
        if pass + 1 == self.passes {
            self.output
        } else {
            let buffer = &self.scratch[pass as usize % 2];
            (buffer, buffer.device_address(), self.row_length)
        }
    }

    /// The push constants of pass `pass`.
    fn push(&self, pass: u32, books: Bookkeeping) -> Vec<u8> {
        self.push_fields(pass, books).bytes()
    }

    /// The push constants of pass `pass`, as fields.
    fn push_fields(&self, pass: u32, books: Bookkeeping) -> RadixPush {
        let (_, destination, destination_row_stride) = self.target_of(pass);
        RadixPush {
            source: self.source_of(pass).1,
            destination,
            counts: books.counts,
            block_sums: books.block_sums,
            flip: self.flip,
            totals: books.totals,
            tickets: books.tickets,
            tallies: self
                .tallies
                .as_ref()
                .map_or(0, DeviceBuffer::device_address),
            row_length: self.row_length,
            tiles_per_row: self.layout.tiles_per_row,
            tiles: self.layout.tiles,
            shift: pass * RADIX_BITS,
            destination_row_stride,
            count_total: self.layout.count_total,
            block_length: self.layout.block_length,
            blocks: self.layout.blocks,
            pass,
            passes: self.passes,
        }
    }

    /// Pass `pass`'s source: the input elements first, items after.
    fn radix_source(&self, pass: u32) -> RadixSource {
        if pass == 0 {
            RadixSource::Input { dtype: self.dtype }
        } else {
            RadixSource::Items
        }
    }

    /// Compiles a generated radix kernel (`None`: the source or destination has no GLSL
    /// form).
    fn compile(&self, name: String, shader: Option<String>) -> Result<Arc<Kernel>> {
        let shader = shader.ok_or_else(|| Error::Unsupported {
            op: self.op,
            dtype: self.dtype,
            detail: format!("no radix kernel `{name}`"),
        })?;
        self.device.kernel_from_glsl(&name, &shader, &[])
    }

    /// Pass `pass`'s scatter kernel with `placement`.
    fn scatter_kernel(&self, pass: u32, placement: Placement) -> Result<Arc<Kernel>> {
        let source = self.radix_source(pass);
        let target = if pass + 1 == self.passes {
            self.destination
        } else {
            RadixDestination::Items
        };
        self.compile(
            kernel_name("scatter", self.shape, source, Some(target)) + placement.label(),
            scatter_shader(self.shape, source, target, placement),
        )
    }

    /// A dispatch of `count` workgroups (at most the device's limit; the kernels loop).
    fn workgroups(&self, count: u32) -> [u32; 3] {
        let max_groups = self.device.capabilities().max_workgroup_count[0];
        [count.clamp(1, max_groups), 1, 1]
    }

    /// The default passes: count, block sums, scan and scatter per key byte.
    fn scanned_count_passes(&self) -> Result<()> {
        let device = self.device;
        let counts = device.alloc(self.op, u64::from(self.layout.count_total) * 4)?;
        let block_sums = device.alloc(self.op, u64::from(self.layout.blocks) * 4)?;
        let books = Bookkeeping {
            counts: counts.device_address(),
            block_sums: block_sums.device_address(),
            ..Bookkeeping::default()
        };
        let block_sums_kernel = device.kernel_from_glsl(
            &kernel_name("block_sums", self.shape, RadixSource::Items, None),
            &block_sums_shader(self.shape),
            &[],
        )?;
        let scan_kernel = device.kernel_from_glsl(
            &kernel_name("scan_blocks", self.shape, RadixSource::Items, None),
            &scan_blocks_shader(self.shape),
            &[],
        )?;
        for pass in 0..self.passes {
            let source = self.radix_source(pass);
            let count = self.compile(
                kernel_name("count", self.shape, source, None),
                count_shader(self.shape, source),
            )?;
            let scatter = self.scatter_kernel(pass, Placement::ScannedCounts)?;
            let (read, _) = self.source_of(pass);
            let (target, _, _) = self.target_of(pass);
            let push = self.push(pass, books);
            let mut count_accesses = vec![BufferAccess::Read(read), BufferAccess::Write(&counts)];
            if let (0, Some(tallies)) = (pass, &self.tallies) {
                count_accesses.push(BufferAccess::Write(tallies));
            }
            device.dispatch(
                &count,
                self.workgroups(self.layout.tiles),
                &push,
                &count_accesses,
            )?;
            device.dispatch(
                &block_sums_kernel,
                self.workgroups(self.layout.blocks),
                &push,
                &[
                    BufferAccess::Read(&counts),
                    BufferAccess::Write(&block_sums),
                ],
            )?;
            device.dispatch(
                &scan_kernel,
                self.workgroups(self.layout.blocks),
                &push,
                &[
                    BufferAccess::Write(&counts),
                    BufferAccess::Read(&block_sums),
                ],
            )?;
            device.dispatch(
                &scatter,
                self.workgroups(self.layout.tiles),
                &push,
                &[
                    BufferAccess::Read(read),
                    BufferAccess::Read(&counts),
                    BufferAccess::Write(target),
                ],
            )?;
        }
        Ok(())
    }

    /// The look-back passes (the knob's variant): one histogram of every pass's digits, then
    /// one scatter per key byte that finds its tiles' places by looking back.
    fn look_back_passes(&self) -> Result<()> {
        let device = self.device;
        let status_bytes = u64::from(self.layout.count_total) * 4;
        let statuses = device.alloc(self.op, status_bytes * u64::from(self.passes))?;
        let totals = device.alloc(
            self.op,
            u64::from(self.rows) * u64::from(self.passes) * u64::from(BINS) * 4,
        )?;
        let tickets = device.alloc(self.op, u64::from(self.passes) * 4)?;
        for buffer in [&statuses, &totals, &tickets] {
            device.fill(buffer, 0)?;
        }
        let books = |pass: u32| Bookkeeping {
            counts: statuses.device_address() + u64::from(pass) * status_bytes,
            totals: totals.device_address(),
            tickets: tickets.device_address(),
            ..Bookkeeping::default()
        };
        let histogram = self.compile(
            kernel_name("histogram", self.shape, self.radix_source(0), None),
            histogram_shader(self.shape, self.dtype),
        )?;
        let mut histogram_accesses = vec![
            BufferAccess::Read(self.input.0),
            BufferAccess::Write(&totals),
        ];
        if let Some(tallies) = &self.tallies {
            histogram_accesses.push(BufferAccess::Write(tallies));
        }
        device.dispatch(
            &histogram,
            self.workgroups(self.layout.tiles),
            &self.push(0, books(0)),
            &histogram_accesses,
        )?;
        for pass in 0..self.passes {
            let scatter = self.scatter_kernel(pass, Placement::LookBack)?;
            let (read, _) = self.source_of(pass);
            let (target, _, _) = self.target_of(pass);
            device.dispatch(
                &scatter,
                self.workgroups(self.layout.tiles),
                &self.push(pass, books(pass)),
                &[
                    BufferAccess::Read(read),
                    BufferAccess::Read(&totals),
                    BufferAccess::Write(&statuses),
                    BufferAccess::Write(&tickets),
                    BufferAccess::Write(target),
                ],
            )?;
        }
        Ok(())
    }

    /// After the last pass of a sort whose first pass kept tallies: the fix-up (one dispatch over
    /// every tile; the tiles its tallies do not mark return at once), which reads the input
    /// rather than the last pass's source.
    fn fix_up(&self) -> Result<()> {
        let Some(tallies) = &self.tallies else {
            return Ok(());
        };
        let (output, output_address, destination_row_stride) = self.output;
        let kernel = self.compile(
            kernel_name("fix_up", self.shape, self.radix_source(0), None),
            fix_up_shader(self.shape, self.dtype),
        )?;
        let push = RadixPush {
            source: self.input.1,
            destination: output_address,
            destination_row_stride,
            ..self.push_fields(0, Bookkeeping::default())
        };
        self.device.dispatch(
            &kernel,
            self.workgroups(self.layout.tiles),
            &push.bytes(),
            &[
                BufferAccess::Read(self.input.0),
                BufferAccess::Read(tallies),
                BufferAccess::Write(output),
            ],
        )
    }
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
