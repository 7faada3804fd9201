//! Which path a sort takes, by its dispatch count: rows the rule of `sort_path.rs` gives to the
//! radix sort run count, block sums, scan and scatter per key byte for all rows together,
//! nothing else (with `NXVK_KNOB_SORT_ONESWEEP=on`, one histogram and one scatter per key
//! byte), plus, for sort of floats, the fix-up of zeros and NaNs, so the radix tests in `sort.rs` really test the radix kernels on this device;
//! and the switch-over lengths are the ones the rule documents for this device's tiles. A
//! binary of its own: the counters are per device, and other tests would dispatch in between.

mod common;

use common::*;
use nxvk_core::{DType, Tensor};
use nxvk_kernels::sort::{self, Direction};

/// Dispatches recorded by `run`.
fn dispatches_of(run: impl FnOnce()) -> u64 {
    let device = device();
    let before = device.counters().dispatches;
    run();
    device.counters().dispatches - before
}

/// Whether this process runs with the look-back knob on.
fn look_back_knob_on() -> bool {
    std::env::var("NXVK_KNOB_SORT_ONESWEEP").is_ok_and(|value| value.trim() == "on")
}

/// Dispatches of a radix argsort of keys of `dtype`: four per key byte, or one histogram and
/// one per key byte under the look-back knob.
fn radix_dispatches(dtype: DType) -> u64 {
    let passes = u64::from(dtype.bits() / 8);
    if look_back_knob_on() {
        1 + passes
    } else {
        4 * passes
    }
}

/// Dispatches of a radix sort of `dtype`: an argsort's and the fix-up for floats, whose
/// zeros and NaNs share keys.
fn radix_sort_dispatches(dtype: DType) -> u64 {
    radix_dispatches(dtype) + u64::from(dtype.is_float())
}

/// Dispatches of the bitonic network for rows of `length`: the key pass, the shared-memory
/// pass, per stage above the 1,024-item block its global passes (up to four steps each) and a
/// shared-memory pass, and the finishing pass.
fn network_dispatches(length: usize) -> u64 {
    let log2_padded = length.next_power_of_two().trailing_zeros();
    let stages: u64 = (11..=log2_padded)
        .map(|stage| u64::from(stage - 10).div_ceil(4) + 1)
        .sum();
    3 + stages
}

/// The first row length the rule gives to the radix sort, searched from 1,000.
fn first_radix_length(dtype: DType, rows: usize) -> usize {
    (1000..20_000)
        .find(|&length| sort::uses_radix(&device(), dtype, rows, length))
        .unwrap_or_else(|| panic!("{dtype}: no radix length below 20,000"))
}

#[test]
fn rows_sort_by_the_path_the_rule_names() {
    let device = device();
    let capabilities = device.capabilities();
    // The switch-overs the rule documents, for the two shapes measured: lavapipe (subgroups
    // of 8, 32 KiB: tiles of 1,024) and the H200 (subgroups of 32, 48 KiB: 4,096, and 2,048
    // for 64-bit keys). Other devices only check that the rule is the path taken.
    let documented = match (
        capabilities.subgroup_size,
        capabilities.max_shared_memory_bytes,
    ) {
        (8, 32768) => Some([1025, 1025, 2049, 4097]),
        (32, 49152) => Some([1025, 1025, 2049, 8193]),
        _ => None,
    };
    for (index, dtype) in [DType::U8, DType::F16, DType::F32, DType::F64]
        .into_iter()
        .enumerate()
    {
        // The row count does not move the switch-over: one row and forty rows agree.
        let switch_over = first_radix_length(dtype, 40);
        assert_eq!(switch_over, first_radix_length(dtype, 1), "{dtype}");
        if let Some(documented) = documented {
            assert_eq!(switch_over, documented[index], "{dtype}");
        }
        // Below and at the switch-over, and one longer row wherever the rule puts it (64-bit
        // keys go back to the network just below some powers of two, where it pads least).
        let longer = 3 * switch_over;
        for (rows, length, radix) in [
            (40, switch_over - 1, false),
            (40, switch_over, true),
            (1, longer, sort::uses_radix(&device, dtype, 1, longer)),
        ] {
            let input = Tensor::zeros(&device, dtype, &[rows, length]).unwrap();
            let sort = dispatches_of(|| drop(sort::sort(&input, 1, Direction::Ascending).unwrap()));
            let argsort = dispatches_of(|| {
                drop(sort::argsort(&input, 1, Direction::Descending, DType::S32).unwrap())
            });
            let what = format!("{dtype} {rows} x {length}");
            if radix {
                assert_eq!(sort, radix_sort_dispatches(dtype), "{what} sort");
                assert_eq!(argsort, radix_dispatches(dtype), "{what} argsort");
            } else {
                // Null arm: the network ran instead (a key pass, its network passes and a
                // finishing pass).
                assert_eq!(sort, network_dispatches(length), "{what} sort");
                assert_eq!(argsort, network_dispatches(length), "{what} argsort");
            }
        }
    }
    // Rows that fit the network's shared-memory block take it, whatever their count.
    for dtype in [DType::U8, DType::F32, DType::S64] {
        assert!(!sort::uses_radix(&device, dtype, 1 << 16, 1024), "{dtype}");
    }
}
