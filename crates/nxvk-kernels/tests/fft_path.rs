//! Which path an FFT length takes, by the work its first call records: mixed-radix lengths
//! (`2^a 3^b 5^c 7^d`) run one block dispatch (up to the tile) or two (the four-step pair) and
//! build one resident table (their twiddles), where Bluestein runs at least two dispatches and
//! builds three tables (the convolution's twiddles, the chirp and its spectrum); c64 rows of
//! 2^12 to 2^14 run one dispatch where the row pass is on (`fft::takes_row_pass`) and two
//! without. So the
//! mixed-radix and row-pass tests in `fft_paths.rs` really test those kernels, and other primes
//! still go through Bluestein. A binary of its own, with one test: the counters are per
//! device, and other tests would record work in between.

mod common;

use common::*;
use nxvk_core::{Complex32, Complex64, Tensor};
use nxvk_kernels::fft::{self, Transform};

/// (dispatches, resident tables built) while `run` runs.
fn work_of(run: impl FnOnce()) -> (u64, u64) {
    let before = device().counters();
    run();
    let after = device().counters();
    (
        after.dispatches - before.dispatches,
        after.resident_table_builds - before.resident_table_builds,
    )
}

#[test]
fn lengths_take_their_paths() {
    let device = device();
    let row_pass_dispatches = |length| {
        if fft::takes_row_pass(&device, length) {
            1
        } else {
            2
        }
    };
    // (length, double precision, the path's dispatches and tables, or None for Bluestein).
    for (length, double, expected_work) in [
        (1 << 12, false, Some((row_pass_dispatches(1 << 12), 1))),
        (1 << 14, false, Some((row_pass_dispatches(1 << 14), 1))),
        // c128 rows of 2^12 keep the four-step pair either way.
        (1 << 12, true, Some((2, 1))),
        (3, false, Some((1, 1))),
        (1000, false, Some((1, 1))),
        (105, true, Some((1, 1))),
        (3 << 12, false, Some((2, 1))),
        (1536, true, Some((2, 1))),
        (11, false, None),
        (1009, true, None),
        (3 * 1009, false, None),
    ] {
        let input = if double {
            let values: Vec<Complex64> = (0..2 * length)
                .map(|index| Complex64::new(index as f64, 1.0))
                .collect();
            Tensor::from_slice(&device, &[2, length], &values).unwrap()
        } else {
            let values: Vec<Complex32> = (0..2 * length)
                .map(|index| Complex32::new(index as f32, 1.0))
                .collect();
            Tensor::from_slice(&device, &[2, length], &values).unwrap()
        };
        let (dispatches, tables) = work_of(|| {
            drop(fft::fft(&input, Transform::Forward, None, 1).unwrap());
            device.synchronize().unwrap();
        });
        let what = format!("{length} (c128 {double})");
        match expected_work {
            Some(expected) => assert_eq!((dispatches, tables), expected, "{what}"),
            // Null arm: Bluestein's first call is told apart by its work.
            None => assert!(
                dispatches >= 2 && tables == 3,
                "{what}: {dispatches} {tables}"
            ),
        }
    }
}
