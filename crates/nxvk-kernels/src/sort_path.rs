//! Which kernels sort a batch of rows: the bitonic network (`sort_codegen.rs`) or the radix
//! sort (`sort_radix.rs`).
//!
//! Rule: rows that fit the network's shared-memory block (1,024 items) always take the
//! network, which sorts them in one dispatch touching global memory only to load and store
//! the block. Longer rows take whichever path moves fewer bytes through global memory for a
//! row, each path counted as its kernels run:
//! - the network pads the row to a power of two `P` and moves every padded item: the key pass
//!   reads an element and writes an item; each shared-memory pass and each global pass (up to
//!   four steps of the network) reads and writes the item; the finishing kernel reads the item,
//!   gathers the element and writes it;
//! - the radix sort runs whole tiles (a partly filled tile costs what a full one does: its
//!   invocations run every round): per key byte, the count reads the source, the scatter reads
//!   it again and writes the destination (elements in the first and last passes, items in
//!   between), and each tile's 256 counts are written, read by the block sums, read and written
//!   by the scan and read by the scatter.
//!
//! The rule counts the radix items of argsort and top_k (a key and a position) for sort too,
//! whose items are keys alone and move fewer bytes: sort switches to radix no earlier than
//! argsort, though radix would pay for it from shorter rows (a candidate for a race, as below).
//!
//! The row count does not enter: both paths sort all rows in the same dispatches. With tiles of
//! 4,096 (the H200) or 1,024 (lavapipe) the rule switches to radix from 2,049 elements for 32-bit
//! keys, from 1,025 for 8- and 16-bit keys, and for 64-bit keys from 8,193 (the H200: 2,048-item
//! tiles) or 4,097 (lavapipe), with the network taking back some lengths just below the next
//! powers of two, where it pads least (`tests/sort_radix_path.rs` pins these). The rule assumes
//! both paths move a byte at the same speed; the H200's radix passes run below its bandwidth
//! (BENCHMARKS.md), so the switch-over is a candidate for a race, not a measured optimum.

use crate::launch::MAX_ELEMENTS;
use crate::sort_codegen::{MAX_GLOBAL_STEPS, SORT_BLOCK, key_bits, wide_keys};
use crate::sort_radix::{CountLayout, radix_shape};
use crate::sort_radix_codegen::{BINS, RADIX_BITS};
use nxvk_core::{DType, Device};

/// Whether `rows` rows of `row_length` elements of `dtype` sort by radix on `device`: the
/// device runs the radix kernels, the rows are longer than the network's block, their counts
/// fit 32-bit indices, and the radix sort moves fewer bytes (module doc).
pub(crate) fn radix_applies(device: &Device, dtype: DType, rows: usize, row_length: usize) -> bool {
    // Items with positions for every op: sort's keys alone move fewer bytes, so the rule is
    // conservative for sort (module doc).
    let (Some(shape), Some(bits)) = (radix_shape(device, dtype, true), key_bits(dtype)) else {
        return false;
    };
    let item_bytes = u64::from(shape.item_bytes());
    let element_bytes = u64::from(dtype.bits() / 8);
    row_length > SORT_BLOCK as usize
        && rows
            .checked_mul(row_length)
            .is_some_and(|total| total <= MAX_ELEMENTS)
        && CountLayout::new(rows, row_length, shape.tile()).is_some()
        && radix_traffic(
            element_bytes,
            item_bytes,
            bits / RADIX_BITS,
            shape.tile(),
            row_length,
        ) < network_traffic(element_bytes, network_item_bytes(dtype), row_length)
}

/// Bytes of the network's items for `dtype`: a key and a position.
fn network_item_bytes(dtype: DType) -> u64 {
    if wide_keys(dtype) { 16 } else { 8 }
}

/// Bytes the network moves through global memory to sort one row of `row_length`.
fn network_traffic(element_bytes: u64, item_bytes: u64, row_length: usize) -> u64 {
    let padded = row_length.max(1).next_power_of_two() as u64;
    let log2_padded = padded.trailing_zeros();
    let log2_block = SORT_BLOCK.trailing_zeros();
    // The first shared-memory pass, then per stage above the block its global passes and one
    // shared-memory pass.
    let item_passes: u64 = 1
        + (log2_block + 1..=log2_padded)
            .map(|stage| u64::from((stage - log2_block).div_ceil(MAX_GLOBAL_STEPS)) + 1)
            .sum::<u64>();
    let keys = element_bytes + item_bytes;
    let finish = item_bytes + 2 * element_bytes;
    padded * (keys + item_passes * 2 * item_bytes + finish)
}

/// Bytes of counts moved per tile and pass: 256 counts written by the count kernel, read by
/// the block sums, read and written by the scan, read by the scatter.
const COUNT_BYTES_PER_TILE: u64 = BINS as u64 * 4 * 5;

/// Bytes the radix sort moves through global memory to sort one row of `row_length` in
/// `passes` passes over tiles of `tile`.
fn radix_traffic(
    element_bytes: u64,
    item_bytes: u64,
    passes: u32,
    tile: u32,
    row_length: usize,
) -> u64 {
    let tiles = row_length.div_ceil(tile as usize) as u64;
    let per_slot: u64 = (0..passes)
        .map(|pass| {
            let source = if pass == 0 { element_bytes } else { item_bytes };
            let destination = if pass + 1 == passes {
                element_bytes
            } else {
                item_bytes
            };
            2 * source + destination
        })
        .sum();
    tiles * u64::from(tile) * per_slot + tiles * u64::from(passes) * COUNT_BYTES_PER_TILE
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first length from which the rule picks radix for keys of `element_bytes`, with
    /// tiles of `tile`, searched up to 2^17.
    fn first_radix_length(element_bytes: u64, tile: u32) -> Option<usize> {
        let (item_bytes, passes) = if element_bytes == 8 {
            (16, 8)
        } else {
            (8, element_bytes as u32)
        };
        (SORT_BLOCK as usize + 1..1 << 17).find(|&length| {
            radix_traffic(element_bytes, item_bytes, passes, tile, length)
                < network_traffic(element_bytes, item_bytes, length)
        })
    }

    /// The switch-over lengths the module doc states, for the H200's tiles and lavapipe's.
    #[test]
    fn switch_over_lengths_are_as_documented() {
        for tile in [4096, 1024] {
            assert_eq!(
                first_radix_length(1, tile),
                Some(1025),
                "8-bit, tile {tile}"
            );
            assert_eq!(
                first_radix_length(2, tile),
                Some(1025),
                "16-bit, tile {tile}"
            );
            assert_eq!(
                first_radix_length(4, tile),
                Some(2049),
                "32-bit, tile {tile}"
            );
        }
        assert_eq!(first_radix_length(8, 2048), Some(8193));
        assert_eq!(first_radix_length(8, 1024), Some(4097));
    }

    /// The traffic of a 32-bit sort of a row of 16M: 84 bytes per key for the radix sort (plus
    /// its counts), and more for the network's 2^24 padded items.
    #[test]
    fn traffic_matches_the_kernels_accounting() {
        let length = 1 << 24;
        let tiles = (length / 4096) as u64;
        assert_eq!(
            radix_traffic(4, 8, 4, 4096, length),
            84 * length as u64 + tiles * 4 * COUNT_BYTES_PER_TILE
        );
        // 1 + stages 11..=24: global passes ceil((s - 10) / 4) and one shared pass each.
        let passes: u64 = 1 + (1..=14u64).map(|above| above.div_ceil(4) + 1).sum::<u64>();
        assert_eq!(
            network_traffic(4, 8, length),
            length as u64 * (12 + passes * 16 + 16)
        );
    }
}
