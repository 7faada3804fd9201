//! The ulp bounds of `accuracy::ulp_bound`, asserted for every transcendental on f32 and f64
//! over seeded samples (edge values plus log-uniform magnitudes across each op's domain; the
//! example `ulp` runs the same measurement on 2^20 samples per op), with null arms showing the
//! measurement does catch errors.

mod common;

use common::device;
use nxvk_core::{DType, Device, Tensor};
use nxvk_kernels::accuracy::{MeasuredOp, run, samples, ulp_bound, ulp_distance, worst};
use nxvk_kernels::{BinaryOp, UnaryOp, binary, f32_math};
use std::sync::Arc;

/// Samples per op x dtype: enough to reach every edge value and each binade of the domains
/// several times, small enough for lavapipe.
const N_SAMPLES: usize = 1 << 13;

/// Whether the device flushes f32 subnormals to zero in arithmetic: NVIDIA's driver does (the
/// H200, docs/BENCHMARKS.md), lavapipe keeps them. Probed by adding 0 to the smallest one.
fn flushes_f32_subnormals(device: &Arc<Device>) -> bool {
    let tiny = Tensor::from_slice(device, &[1], &[f32::from_bits(1)]).unwrap();
    let zero = Tensor::from_slice(device, &[1], &[0.0f32]).unwrap();
    let sum: Vec<f32> = binary(BinaryOp::Add, &tiny, &zero)
        .unwrap()
        .to_vec()
        .unwrap();
    sum[0] == 0.0
}

#[test]
fn every_transcendental_meets_its_ulp_bound_on_f32_and_f64() {
    let device = device();
    // Subnormal inputs are measured on every device: the f32 kernels classify them from their
    // bits, so a driver that flushes them (the H200) must meet the same bounds
    // (tests/flushed_subnormals.rs emulates one on lavapipe).
    eprintln!(
        "{} flushes f32 subnormals: {}",
        device.capabilities().summary(),
        flushes_f32_subnormals(&device)
    );
    let mut failures = Vec::new();
    let ops = MeasuredOp::all();
    assert!(ops.len() >= 24, "{} measured ops", ops.len());
    for op in ops {
        for dtype in [DType::F32, DType::F64] {
            let inputs = samples(op, dtype, N_SAMPLES, 0x7e57);
            let actual = run(&device, op, dtype, &inputs).unwrap();
            let measurement = worst(op, dtype, &inputs, &actual);
            if measurement.max_ulps > ulp_bound(op.name(), dtype, f32_math(&device)) {
                failures.push(format!("{measurement:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn f64_transcendentals_run_on_the_gpu() {
    let device = device();
    let before = device.counters().total_host_fallbacks();
    let op = MeasuredOp::Unary(UnaryOp::Sin);
    let inputs = samples(op, DType::F64, 64, 1);
    run(&device, op, DType::F64, &inputs).unwrap();
    let pow = MeasuredOp::Binary(BinaryOp::Pow);
    run(&device, pow, DType::F64, &samples(pow, DType::F64, 64, 1)).unwrap();
    assert_eq!(device.counters().total_host_fallbacks(), before);
}

#[test]
fn the_measurement_rejects_a_perturbed_result() {
    // Null arm: the GPU's exp results with one element moved by bound + 1 ulps must measure
    // above the bound, and an unperturbed copy within it.
    let device = device();
    let op = MeasuredOp::Unary(UnaryOp::Exp);
    let dtype = DType::F64;
    let inputs = samples(op, dtype, 256, 2);
    let actual = run(&device, op, dtype, &inputs).unwrap();
    let bound = ulp_bound(op.name(), dtype, f32_math(&device));
    assert!(worst(op, dtype, &inputs, &actual).max_ulps <= bound);
    let index = inputs
        .iter()
        .position(|operands| operands[0] > 1.0 && operands[0] < 100.0)
        .expect("a moderate input");
    let mut perturbed = actual.clone();
    perturbed[index] = f64::from_bits(perturbed[index].to_bits() + bound + 1);
    let measurement = worst(op, dtype, &inputs, &perturbed);
    assert_eq!(measurement.max_ulps, bound + 1);
    assert_eq!(measurement.worst_operands, inputs[index]);
    // A NaN where a number is expected is an unbounded error.
    perturbed[index] = f64::NAN;
    assert_eq!(worst(op, dtype, &inputs, &perturbed).max_ulps, u64::MAX);
}

#[test]
fn ulp_distance_counts_adjacent_floats() {
    assert_eq!(ulp_distance(DType::F64, 1.0, 1.0 + f64::EPSILON), 1);
    assert_eq!(ulp_distance(DType::F64, -0.0, 0.0), 0);
    assert_eq!(
        ulp_distance(DType::F64, f64::from_bits(1), -f64::from_bits(1)),
        2
    );
    assert_eq!(ulp_distance(DType::F64, f64::MAX, f64::INFINITY), 1);
    assert_eq!(
        ulp_distance(DType::F32, 1.0, 1.0 + f64::from(f32::EPSILON)),
        1
    );
    assert_eq!(ulp_distance(DType::F64, f64::NAN, f64::NAN), 0);
    assert_eq!(ulp_distance(DType::F64, f64::NAN, 1.0), u64::MAX);
}
