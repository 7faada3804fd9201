//! Which path a sort takes, by its dispatch count: a few long rows of keys of up to 32 bits
//! sort by radix (count, scan and scatter per key byte and row, nothing else), so the radix tests in
//! `sort.rs` really test the radix kernels on this device. A binary of its own: the counters
//! are per device, and other tests would dispatch in between.

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

#[test]
fn long_rows_of_narrow_keys_sort_by_radix_and_others_by_the_network() {
    let device = device();
    for (dtype, passes) in [(DType::U8, 1), (DType::F16, 2), (DType::F32, 4)] {
        let input = Tensor::zeros(&device, dtype, &[5000]).unwrap();
        let sort = dispatches_of(|| drop(sort::sort(&input, 0, Direction::Ascending).unwrap()));
        let argsort = dispatches_of(|| {
            drop(sort::argsort(&input, 0, Direction::Descending, DType::S32).unwrap())
        });
        assert_eq!(sort, 3 * passes, "{dtype} sort");
        assert_eq!(argsort, 3 * passes, "{dtype} argsort");
    }
    let two_rows = Tensor::zeros(&device, DType::F32, &[2, 5000]).unwrap();
    let count = dispatches_of(|| drop(sort::sort(&two_rows, 1, Direction::Ascending).unwrap()));
    assert_eq!(count, 2 * 12, "two rows, one after another");
    // Null arm: a short row, many rows and 64-bit keys take the bitonic network, whose
    // dispatch count differs (one test, so no other test dispatches in between).
    for (dtype, shape) in [
        (DType::F32, vec![2048]),
        (DType::F32, vec![17, 5000]),
        (DType::F64, vec![5000]),
    ] {
        let input = Tensor::zeros(&device, dtype, &shape).unwrap();
        let count = dispatches_of(|| {
            drop(sort::sort(&input, shape.len() - 1, Direction::Ascending).unwrap())
        });
        let rows: usize = shape[..shape.len() - 1].iter().product();
        assert_ne!(count, 12 * rows as u64, "{dtype} {shape:?}");
    }
}
