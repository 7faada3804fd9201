//! The FFT's tables stay on the device: a second transform of a length uploads nothing
//! (nxvk-core's upload and resident-table counters), for a block length, a four-step length,
//! a mixed-radix length and a Bluestein length, in both precisions and directions; a new length does upload (the
//! null arm: the counters can see an upload). Its own test binary, with one test, so no other
//! test's uploads land between two counter readings.

mod common;

use common::*;
use nxvk_core::{Complex32, Complex64, CounterSnapshot, Tensor};
use nxvk_kernels::fft::{self, Transform};

/// The counter changes over `run`: (bytes uploaded, tables built, tables found).
fn table_traffic(run: impl FnOnce()) -> (u64, u64, u64) {
    let before: CounterSnapshot = device().counters();
    run();
    let after = device().counters();
    (
        after.bytes_uploaded - before.bytes_uploaded,
        after.resident_table_builds - before.resident_table_builds,
        after.resident_table_hits - before.resident_table_hits,
    )
}

#[test]
fn repeated_lengths_upload_nothing() {
    let device = device();
    for length in [512usize, 8192, 1000, 1009] {
        let single: Vec<Complex32> = (0..2 * length)
            .map(|index| Complex32::new(index as f32, 1.0))
            .collect();
        let double: Vec<Complex64> = (0..2 * length)
            .map(|index| Complex64::new(index as f64, -1.0))
            .collect();
        let inputs = [
            Tensor::from_slice(&device, &[2, length], &single).unwrap(),
            Tensor::from_slice(&device, &[2, length], &double).unwrap(),
        ];
        for input in &inputs {
            for transform in [Transform::Forward, Transform::Inverse] {
                let transform_once = || {
                    let output = fft::fft(input, transform, None, 1).unwrap();
                    device.synchronize().unwrap();
                    drop(output);
                };
                let (first_bytes, first_builds, _) = table_traffic(transform_once);
                let (bytes, builds, hits) = table_traffic(transform_once);
                let what = format!("{} {length} {transform:?}", input.dtype());
                assert_eq!((bytes, builds), (0, 0), "{what}: a repeated call uploaded");
                assert!(hits > 0, "{what}: no table was looked up");
                // Null arm: the first call of a length in a direction (the forward one for
                // powers of two and mixed lengths, whose tables serve both) uploaded its tables, and the
                // counters saw it.
                if transform == Transform::Forward {
                    assert!(
                        first_bytes > 0 && first_builds > 0,
                        "{what}: no upload seen"
                    );
                }
            }
        }
    }
}
