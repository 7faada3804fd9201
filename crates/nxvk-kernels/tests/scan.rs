//! The cumulative ops against a sequential host scan: every native dtype, any axis of shapes
//! up to rank 4 (strided views included), forward and reversed, lines shorter and longer than
//! one block (so the carry passes and their recursion run), empty tensors. Integers and
//! min/max must match exactly; float sums and products within a bound proportional to the
//! magnitudes involved (the GPU combines in a different order). Null arms: an exclusive scan
//! and a scan in the wrong direction are rejected.

mod common;

use common::*;
use nxvk_core::{DType, DTypeClass, Error, Tensor};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::{BinaryOp, ScanOp, cumulative, ops};
use proptest::prelude::*;

fn combine_op(op: ScanOp) -> BinaryOp {
    match op {
        ScanOp::Sum => BinaryOp::Add,
        ScanOp::Product => BinaryOp::Multiply,
        ScanOp::Min => BinaryOp::Min,
        ScanOp::Max => BinaryOp::Max,
    }
}

/// The sequential scan of `values` (row-major, `shape`) along `axis`: integers and min/max in
/// the dtype itself, float sums and products in f64 (rounded once at the end); `shift` makes
/// it exclusive (a null arm). Also returns, per element, the sum of magnitudes that went in.
fn host_scan(
    op: ScanOp,
    dtype: DType,
    shape: &[usize],
    values: &[Value],
    axis: usize,
    reverse: bool,
    shift: bool,
) -> (Vec<Value>, Vec<f64>) {
    let length = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer = values.len() / (length * inner).max(1);
    let mut result = values.to_vec();
    let mut magnitudes = vec![0.0; values.len()];
    let compute =
        if dtype.class() == DTypeClass::Float && matches!(op, ScanOp::Sum | ScanOp::Product) {
            DType::F64
        } else {
            dtype
        };
    for o in 0..outer {
        for i in 0..inner {
            let mut accumulator: Option<Value> = None;
            let mut magnitude = 0.0;
            for step in 0..length {
                let along = if reverse { length - 1 - step } else { step };
                let index = (o * length + along) * inner + i;
                let value = reference::round_to(values[index], compute);
                let previous = accumulator;
                accumulator = Some(match accumulator {
                    None => value,
                    Some(earlier) => {
                        reference::binary(combine_op(op), compute, earlier, value).unwrap()
                    }
                });
                if let Value::Float(float) = value {
                    magnitude += float.abs();
                }
                let shown = if shift {
                    previous.unwrap_or(value)
                } else {
                    accumulator.unwrap()
                };
                result[index] = reference::round_to(shown, dtype);
                magnitudes[index] = magnitude;
            }
        }
    }
    (result, magnitudes)
}

fn epsilon(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        DType::F32 => 2f64.powi(-23),
        _ => 2f64.powi(-52),
    }
}

/// Compares a scan with its reference: floating sums and products within a slack (scaled by
/// `slack_factor`; symmetric in `actual` and `expected`), everything else exactly.
fn check(
    op: ScanOp,
    dtype: DType,
    actual: &[Value],
    expected: &[Value],
    magnitudes: &[f64],
    length: usize,
    slack_factor: f64,
) -> Result<(), String> {
    let approximate =
        dtype.class() == DTypeClass::Float && matches!(op, ScanOp::Sum | ScanOp::Product);
    for (index, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        let fine = match (approximate, a, e) {
            (true, Value::Float(a), Value::Float(e)) => {
                let slack = slack_factor
                    * match op {
                        ScanOp::Sum => 8.0 * epsilon(dtype) * magnitudes[index],
                        _ => 8.0 * epsilon(dtype) * length as f64 * e.abs().max(a.abs()),
                    };
                (a.is_nan() && e.is_nan()) || a == e || (a - e).abs() <= slack + 1.2e-38
            }
            _ => check_value(dtype, Tolerance::Exact, a, e).is_ok(),
        };
        if !fine {
            return Err(format!("element {index}: got {a:?}, expected {e:?}"));
        }
    }
    Ok(())
}

fn scan_op() -> impl Strategy<Value = ScanOp> {
    prop::sample::select(ScanOp::ALL.to_vec())
}

fn native_dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(ops::native_dtypes().collect::<Vec<_>>())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn scans_match_a_sequential_host_scan(
        op in scan_op(),
        dtype in native_dtype(),
        shape in prop::collection::vec(prop_oneof![6 => 1..5usize, 1 => Just(0usize), 2 => 900..2600usize], 1..=3),
        axis_seed in any::<usize>(),
        reverse in any::<bool>(),
        view in prop::sample::select(vec![ViewKind::Contiguous, ViewKind::Transposed, ViewKind::Sliced]),
        seed in any::<u64>(),
    ) {
        let n: usize = shape.iter().product();
        prop_assume!(n <= 20_000);
        let device = device();
        let mut rng = SplitMix(seed);
        let axis = axis_seed % shape.len();
        let domain = match op {
            ScanOp::Product => Domain::Unit,
            ScanOp::Sum => Domain::Moderate,
            _ => Domain::Wide,
        };
        let (input, values) = make_input(&device, dtype, &shape, view, domain, &mut rng);
        let result = cumulative(op, &input, axis, reverse).unwrap();
        prop_assert_eq!(result.dtype(), dtype);
        prop_assert_eq!(result.shape(), &shape[..]);
        let actual = read(&result);
        let (expected, magnitudes) = host_scan(op, dtype, &shape, &values, axis, reverse, false);
        let verdict = check(op, dtype, &actual, &expected, &magnitudes, shape[axis], 1.0);
        prop_assert!(verdict.is_ok(), "{:?}", verdict);
        // Null arms: the exclusive scan, and the scan in the other direction, are rejected
        // wherever they differ from the right one by more than three slacks (a result within
        // one slack of the reference may be within one slack of a scan that is two away).
        for (wrong_reverse, shift) in [(reverse, true), (!reverse, false)] {
            let (wrong, _) = host_scan(op, dtype, &shape, &values, axis, wrong_reverse, shift);
            if check(op, dtype, &wrong, &expected, &magnitudes, shape[axis], 3.0).is_err() {
                prop_assert!(
                    check(op, dtype, &actual, &wrong, &magnitudes, shape[axis], 1.0).is_err()
                );
            }
        }
    }
}

#[test]
fn a_line_of_a_million_elements_needs_two_carry_levels() {
    // 2^20 + 5 elements: 1025 blocks, whose carries take two blocks of their own.
    let device = device();
    let n = (1 << 20) + 5;
    let values: Vec<i32> = (0..n).map(|index| (index % 7) as i32 - 3).collect();
    let input = Tensor::from_slice(&device, &[n], &values).unwrap();
    for reverse in [false, true] {
        let result = cumulative(ScanOp::Sum, &input, 0, reverse)
            .unwrap()
            .to_vec::<i32>()
            .unwrap();
        let mut expected = vec![0i32; n];
        let mut running = 0i32;
        for step in 0..n {
            let index = if reverse { n - 1 - step } else { step };
            running = running.wrapping_add(values[index]);
            expected[index] = running;
        }
        assert_eq!(result, expected, "reverse: {reverse}");
    }
    let maxima = cumulative(ScanOp::Max, &input, 0, false)
        .unwrap()
        .to_vec::<i32>()
        .unwrap();
    assert_eq!(maxima[0], -3);
    assert!(maxima[6..].iter().all(|&value| value == 3));
}

#[test]
fn scan_errors_name_op_shapes_and_dtypes() {
    let device = device();
    let x = Tensor::from_slice(&device, &[2, 3], &[1.0f32; 6]).unwrap();
    let error = cumulative(ScanOp::Sum, &x, 2, false).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("cumulative_sum") && message.contains("[2, 3]"),
        "{message}"
    );
    let scalar = Tensor::from_slice(&device, &[], &[1.0f32]).unwrap();
    assert!(cumulative(ScanOp::Max, &scalar, 0, false).is_err());
    let complex =
        Tensor::from_slice(&device, &[2], &[nxvk_core::Complex32::new(1.0, 0.0); 2]).unwrap();
    let error = cumulative(ScanOp::Max, &complex, 0, false).unwrap_err();
    assert!(
        matches!(
            error,
            Error::BadOperands {
                op: "cumulative_max",
                ..
            }
        ),
        "{error}"
    );
    let f8 = Tensor::from_bytes(&device, DType::F8E5M2, &[2], &[0, 0]).unwrap();
    let error = cumulative(ScanOp::Sum, &f8, 0, false).unwrap_err();
    assert!(
        matches!(
            error,
            Error::Unsupported {
                op: "cumulative_sum",
                ..
            }
        ),
        "{error}"
    );
    let empty = Tensor::from_slice::<f32>(&device, &[0, 3], &[]).unwrap();
    assert_eq!(
        cumulative(ScanOp::Sum, &empty, 1, true).unwrap().shape(),
        &[0, 3]
    );
}

#[test]
fn complex_scans_run_on_the_gpu_and_sub_byte_ones_on_the_host() {
    use nxvk_core::Complex32;
    let device = device();
    let before = fallbacks("cumulative_product", DType::C64);
    let values = [
        Complex32::new(1.0, 1.0),
        Complex32::new(0.0, 2.0),
        Complex32::new(3.0, 0.0),
    ];
    let complex = Tensor::from_slice(&device, &[3], &values).unwrap();
    let result = cumulative(ScanOp::Product, &complex, 0, true).unwrap();
    // Reversed: [v0 v1 v2, v1 v2, v2].
    let expected = vec![
        values[0] * values[1] * values[2],
        values[1] * values[2],
        values[2],
    ];
    assert_eq!(result.to_vec::<Complex32>().unwrap(), expected);
    // Complex scans have kernels (tests/complex_reduce.rs): nothing counted.
    assert_eq!(fallbacks("cumulative_product", DType::C64), before);
    // s4 sums wrap in 4 bits: 7 + 7 = -2.
    let packed = Tensor::from_bytes(&device, DType::S4, &[2], &[0x77]).unwrap();
    let sums = cumulative(ScanOp::Sum, &packed, 0, false).unwrap();
    assert_eq!(read(&sums), vec![Value::Int(7), Value::Int(-2)]);
    // Null arm: the forward product differs from the reversed one.
    let forward = cumulative(ScanOp::Product, &complex, 0, false).unwrap();
    assert_ne!(forward.to_vec::<Complex32>().unwrap(), expected);
}
