//! The host fallback (sub-byte types; complex and f64 ops run on the GPU): results, counting, and
//! the poison control and comparison helpers' null arms. Tests here that read global counters
//! take `SERIAL`, since tests of one binary run in parallel.

mod common;

use common::*;
use nxvk_core::{Complex32, Complex64, DType, Tensor, f16};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::{BinaryOp, ops};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn complex_reductions_run_on_the_gpu_uncounted() {
    let _serial = SERIAL.lock().unwrap();
    let device = device();
    // Complex sums have a kernel now (tests/complex_reduce.rs); sub-byte ops still fall back
    // (`sub_byte_ops_run_on_the_host_with_nx_packing`).
    let before = fallbacks("sum", DType::C64);
    let a = Tensor::from_slice(
        &device,
        &[2],
        &[Complex32::new(0.5, -1.0), Complex32::new(0.25, 3.0)],
    )
    .unwrap();
    let sum = nxvk_kernels::reduce::sum(&a, None, false).unwrap();
    assert_eq!(
        sum.to_vec::<Complex32>().unwrap(),
        [Complex32::new(0.75, 2.0)]
    );
    assert_eq!(fallbacks("sum", DType::C64), before);
}

#[test]
fn sub_byte_ops_run_on_the_gpu_with_nx_packing() {
    let _serial = SERIAL.lock().unwrap();
    let device = device();
    let before = device.counters().total_host_fallbacks();
    let zeros_before = fallbacks("count_leading_zeros", DType::S4);
    let values: Vec<Value> = [7, -8, 3, -1].into_iter().map(Value::Int).collect();
    let a = Tensor::from_bytes(
        &device,
        DType::S4,
        &[4],
        &reference::encode(DType::S4, &values),
    )
    .unwrap();
    let one = Tensor::from_bytes(
        &device,
        DType::S4,
        &[],
        &reference::encode(DType::S4, &[Value::Int(1)]),
    )
    .unwrap();
    let sum = ops::add(&a, &one).unwrap();
    assert_eq!(sum.dtype(), DType::S4);
    let expected: Vec<Value> = [-8, -7, 4, 0].into_iter().map(Value::Int).collect();
    assert_eq!(read(&sum), expected, "s4 wraps like Nx");
    // A strided view of a packed tensor goes through the same path.
    let reversed = a.reshape(&[2, 2]).unwrap().transpose(&[1, 0]).unwrap();
    let negated = ops::negate(&reversed).unwrap();
    let expected: Vec<Value> = [-7, -3, -8, 1].into_iter().map(Value::Int).collect();
    assert_eq!(read(&negated), expected);
    // u2 mixed with f32 promotes to f32.
    let u2 = Tensor::from_bytes(&device, DType::U2, &[3], &[0b11_01_10_00]).unwrap();
    let scaled = ops::multiply(&u2, &Tensor::from_slice(&device, &[], &[0.5f32]).unwrap()).unwrap();
    assert_eq!(scaled.to_vec::<f32>().unwrap(), vec![1.5, 0.5, 1.0]);
    assert_eq!(device.counters().total_host_fallbacks(), before);
    // The null arm: an op whose result depends on the width still takes the counted fallback.
    let leading_zeros = ops::count_leading_zeros(&a).unwrap();
    let expected: Vec<Value> = [1, 0, 2, 0].into_iter().map(Value::Int).collect();
    assert_eq!(read(&leading_zeros), expected, "zeros of 4-bit values");
    assert_eq!(
        fallbacks("count_leading_zeros", DType::S4),
        zeros_before + 1
    );
}

#[test]
fn f64_transcendentals_run_on_the_gpu_and_never_compute_in_f32() {
    let _serial = SERIAL.lock().unwrap();
    let device = device();
    let before = device.counters().total_host_fallbacks();
    let x = Tensor::from_slice(&device, &[3], &[1.0f64, -0.5, 700.0]).unwrap();
    let result = ops::exp(&x).unwrap().to_vec::<f64>().unwrap();
    let expected = [1.0f64.exp(), (-0.5f64).exp(), 700.0f64.exp()];
    for (actual, expected) in result.iter().zip(expected) {
        assert!(
            ulp_distance(DType::F64, *actual, expected) <= 2,
            "{actual} vs {expected}"
        );
    }
    assert!(
        result[2] > f64::from(f32::MAX),
        "an f32 computation would overflow"
    );
    // Null arm of the f32 claim: the same values through f32 lose the large one.
    let narrowed = ops::exp(&ops::as_type(&x, DType::F32).unwrap()).unwrap();
    assert_eq!(narrowed.to_vec::<f32>().unwrap()[2], f32::INFINITY);
    let sum = ops::add(&x, &x).unwrap().to_vec::<f64>().unwrap();
    assert_eq!(sum, vec![2.0, -1.0, 1400.0]);
    assert_eq!(device.counters().total_host_fallbacks(), before);
}

#[test]
fn empty_results_dispatch_nothing_and_rank_zero_runs() {
    let _serial = SERIAL.lock().unwrap();
    let device = device();
    let empty = Tensor::from_slice::<f32>(&device, &[0, 3], &[]).unwrap();
    let before = device.counters().dispatches;
    let sum = ops::add(
        &empty,
        &Tensor::from_slice(&device, &[3], &[1.0f32, 2.0, 3.0]).unwrap(),
    )
    .unwrap();
    let root = ops::sqrt(&empty).unwrap();
    assert_eq!((sum.shape(), root.shape()), (&[0, 3][..], &[0, 3][..]));
    assert_eq!(
        device.counters().dispatches,
        before,
        "empty results dispatch nothing"
    );
    let half = Tensor::from_slice(&device, &[], &[f16::from_f32(2.0)]).unwrap();
    assert_eq!(
        ops::rsqrt(&half).unwrap().to_vec::<f16>().unwrap(),
        vec![f16::from_f32(0.70703125)]
    );
}

#[test]
fn poison_shows_an_element_a_kernel_forgets() {
    // Run `add` by hand with a count one short, as a buggy kernel would: the last element must
    // keep the poison and fail the comparison.
    let device = device();
    let a = Tensor::from_slice(&device, &[4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let output = Tensor::empty(&device, DType::F32, &[4]).unwrap();
    device.fill(output.buffer(), POISON).unwrap();
    let kernel = nxvk_kernels::catalog::ADD_F32.load(&device).unwrap();
    let mut push = Vec::new();
    for address in [
        a.device_address().unwrap(),
        a.device_address().unwrap(),
        output.device_address().unwrap(),
        0,
    ] {
        push.extend_from_slice(&address.to_le_bytes());
    }
    push.extend_from_slice(&3u32.to_le_bytes());
    push.resize(128, 0);
    let accesses = [
        nxvk_core::BufferAccess::Read(a.buffer()),
        nxvk_core::BufferAccess::Write(output.buffer()),
    ];
    device
        .dispatch(&kernel, [1, 1, 1], &push, &accesses)
        .unwrap();
    let actual = read(&output);
    let expected: Vec<Value> = [2.0, 4.0, 6.0, 8.0].into_iter().map(Value::Float).collect();
    assert_eq!(&actual[..3], &expected[..3]);
    assert!(
        matches!(actual[3], Value::Float(poison) if poison.is_nan()),
        "{:?}",
        actual[3]
    );
    assert!(
        check_all(
            DType::F32,
            Tolerance::Exact,
            &actual,
            &expected,
            &[&expected]
        )
        .is_err()
    );
    // And the real op over the same poisoned buffer class writes every element.
    let full = ops::binary(BinaryOp::Add, &a, &a).unwrap();
    assert!(
        check_all(
            DType::F32,
            Tolerance::Exact,
            &read(&full),
            &expected,
            &[&expected]
        )
        .is_ok()
    );
}

/// Null arms: each comparison helper must reject a wrong value.
#[test]
fn comparison_helpers_reject_wrong_values() {
    let exact = Tolerance::Exact;
    let ulps = Tolerance::Ulps {
        ulps: 2,
        absolute: 0.0,
    };
    assert!(check_value(DType::S32, exact, Value::Int(1), Value::Int(1)).is_ok());
    assert!(check_value(DType::S32, exact, Value::Int(1), Value::Int(2)).is_err());
    assert!(check_value(DType::F32, exact, Value::Float(0.0), Value::Float(-0.0)).is_err());
    assert!(check_value(DType::F32, exact, Value::Float(f64::NAN), Value::Float(1.0)).is_err());
    assert!(check_value(DType::F32, exact, Value::Float(1.0), Value::Float(f64::NAN)).is_err());
    assert!(
        check_value(
            DType::F32,
            exact,
            Value::Float(f64::NAN),
            Value::Float(-f64::NAN)
        )
        .is_ok()
    );
    let one_plus = |steps: u32| Value::Float(f64::from(f32::from_bits(1.0f32.to_bits() + steps)));
    assert!(check_value(DType::F32, ulps, one_plus(2), one_plus(0)).is_ok());
    assert!(check_value(DType::F32, ulps, one_plus(3), one_plus(0)).is_err());
    assert!(
        check_value(
            DType::F32,
            ulps,
            Value::Float(f64::INFINITY),
            Value::Float(f64::from(f32::MAX))
        )
        .is_err()
    );
    assert_eq!(ulp_distance(DType::F32, -0.0, 0.0), 0);
    assert_eq!(ulp_distance(DType::F16, 1.0, 1.0 + 2f64.powi(-10)), 1);
    assert_eq!(ulp_distance(DType::BF16, -1.0, -1.0 - 2f64.powi(-7)), 1);
    let complex = |re: f64, im: f64| Value::Complex(Complex64::new(re, im));
    assert!(check_value(DType::C64, exact, complex(1.0, 2.0), complex(1.0, 3.0)).is_err());
    assert!(check_value(DType::F32, exact, Value::Int(1), Value::Float(1.0)).is_err());
    let values = [Value::Int(1), Value::Int(2)];
    assert!(check_all(DType::S8, exact, &values, &values[..1], &[]).is_err());
    assert!(
        check_all(
            DType::S8,
            exact,
            &values,
            &[Value::Int(1), Value::Int(3)],
            &[&values]
        )
        .is_err()
    );
}
