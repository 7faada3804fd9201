//! Reductions against a host reference of Nx.BinaryBackend's semantics: random shapes up to
//! rank 4 (empty and rank 0 included), random axis subsets, keep_axes, strided views, NaN and
//! infinities, extreme integers. Integers, max/min, all/any and argmax/argmin are compared
//! exactly; float sums and products within a bound relative to the sum of magnitudes (see
//! [`check_float`]), against an f64 host result.

mod common;

use common::*;
use nxvk_core::{Complex32, DType, DTypeClass, Error, Layout, Tensor};
use nxvk_kernels::reduce::{
    self, Accumulation, ReduceLayout, ReduceOp, ReduceOptions, TieBreak, result_dtype,
};
use nxvk_kernels::reference::{self, Value};
use proptest::prelude::*;

fn native() -> Vec<DType> {
    nxvk_kernels::ops::native_dtypes().collect()
}

/// Compares a float sum or product: NaN with NaN, infinities exactly, anything else within
/// `bound` (the caller's error bound) plus one rounding of the result type.
fn check_float(dtype: DType, actual: Value, expected: f64, bound: f64) -> Result<(), String> {
    let Value::Float(actual) = actual else {
        return Err(format!("got {actual:?}, expected a float near {expected}"));
    };
    let rounded = match reference::round_to(Value::Float(expected), dtype) {
        Value::Float(rounded) => rounded,
        other => return Err(format!("{other:?} is not a float")),
    };
    let ok = if rounded.is_nan() || actual.is_nan() {
        rounded.is_nan() && actual.is_nan()
    } else if rounded.is_infinite() || actual.is_infinite() {
        rounded == actual
    } else {
        // One rounding to the result type, whose subnormals (f16's) have a fixed quantum.
        let quantum = if dtype == DType::F16 {
            2f64.powi(-24)
        } else {
            0.0
        };
        (actual - expected).abs() <= bound + 2.0 * epsilon(dtype) * expected.abs() + quantum
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "got {actual:e}, expected {expected:e} ({dtype}, bound {bound:e})"
        ))
    }
}

/// Row-major coordinates of element `index` of `shape`.
fn as_f64(value: Value) -> f64 {
    match value {
        Value::Int(value) => value as f64,
        Value::Float(value) => value,
        Value::Complex(value) => value.re,
    }
}

fn is_zero(value: Value) -> bool {
    match value {
        Value::Int(value) => value == 0,
        Value::Float(value) => value == 0.0,
        Value::Complex(value) => value.re == 0.0 && value.im == 0.0,
    }
}

/// Nx.BinaryBackend's argmax/argmin of one group: every NaN replaces the extreme; otherwise a
/// strictly better value does, and an equal one with `tie_break: :high`.
fn host_arg(group: &[Value], max: bool, tie_break: TieBreak) -> i128 {
    let mut best: Option<(usize, f64, i128)> = None;
    for (index, &value) in group.iter().enumerate() {
        let (float, integer) = match value {
            Value::Int(integer) => (integer as f64, integer),
            other => (as_f64(other), 0),
        };
        let replace = match best {
            None => true,
            Some(_) if float.is_nan() => true,
            Some((_, best_float, best_integer)) => {
                let (better, equal) = match value {
                    Value::Int(_) => (
                        if max {
                            integer > best_integer
                        } else {
                            integer < best_integer
                        },
                        integer == best_integer,
                    ),
                    _ => (
                        if max {
                            float > best_float
                        } else {
                            float < best_float
                        },
                        float == best_float,
                    ),
                };
                better || (tie_break == TieBreak::High && equal)
            }
        };
        if replace {
            best = Some((index, float, integer));
        }
    }
    best.map_or(0, |(index, _, _)| index as i128)
}

/// Nx's reduce_max/reduce_min of one group: NaN wins.
fn host_extreme(group: &[Value], max: bool) -> Value {
    group
        .iter()
        .copied()
        .reduce(|a, b| match (a, b) {
            (Value::Int(x), Value::Int(y)) => Value::Int(if max { x.max(y) } else { x.min(y) }),
            (Value::Float(x), _) if x.is_nan() => a,
            (_, Value::Float(y)) if y.is_nan() => b,
            _ => {
                let (x, y) = (as_f64(a), as_f64(b));
                if (max && y > x) || (!max && y < x) {
                    b
                } else {
                    a
                }
            }
        })
        .expect("non-empty group")
}

/// Checks one reduction of `values` (logical, row-major, of `shape`) against the reference.
fn check_reduction(
    op: ReduceOp,
    input: &Tensor,
    values: &[Value],
    axes: Option<&[usize]>,
    keep_axes: bool,
    accumulation: Accumulation,
    tie_break: TieBreak,
) -> Result<(), String> {
    let dtype = input.dtype();
    let shape = input.shape();
    let sorted: Vec<usize> = match axes {
        Some(axes) => {
            let mut axes = axes.to_vec();
            axes.sort_unstable();
            axes
        }
        None => (0..shape.len()).collect(),
    };
    let groups = reduction_groups(shape, values, &sorted);
    let n_reduced: usize = sorted.iter().map(|&axis| shape[axis]).product();
    let options = ReduceOptions {
        axes,
        keep_axes,
        accumulation,
        tie_break,
    };
    let context = format!(
        "{} on {dtype}{shape:?} axes {axes:?} keep {keep_axes} {accumulation:?} {tie_break:?}",
        op.name()
    );
    let result = reduce::reduce(op, input, &options);
    if op.needs_elements() && n_reduced == 0 && !groups.is_empty() {
        return match result {
            Err(error) if error.to_string().contains(op.name()) => Ok(()),
            other => Err(format!(
                "{context}: expected an error naming the op, got {other:?}"
            )),
        };
    }
    let output = result.map_err(|error| format!("{context}: {error}"))?;
    let expected_shape: Vec<usize> = (0..shape.len())
        .filter_map(|axis| match (sorted.contains(&axis), keep_axes) {
            (false, _) => Some(shape[axis]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    let result_type = result_dtype(op, dtype);
    if output.shape() != expected_shape || output.dtype() != result_type {
        return Err(format!(
            "{context}: got {}{:?}, expected {result_type}{expected_shape:?}",
            output.dtype(),
            output.shape()
        ));
    }
    let actual = read(&output);
    let accumulator_epsilon = match (dtype, accumulation) {
        (DType::F64, _) | (_, Accumulation::F64) => 2f64.powi(-52),
        _ => 2f64.powi(-23),
    };
    for (index, group) in groups.iter().enumerate() {
        let got = actual[index];
        let checked = match op {
            ReduceOp::Sum | ReduceOp::Product if dtype.is_float() => {
                let (expected, bound) = if op == ReduceOp::Sum {
                    let magnitude: f64 = group.iter().map(|&value| as_f64(value).abs()).sum();
                    let sum: f64 = group.iter().map(|&value| as_f64(value)).sum();
                    (sum, 64.0 * accumulator_epsilon * magnitude)
                } else {
                    let product: f64 = group.iter().map(|&value| as_f64(value)).product();
                    let n = group.len() as f64 + 1.0;
                    // f32 results below the normal range flush to zero on lavapipe.
                    (
                        product,
                        4.0 * n * accumulator_epsilon * product.abs() + 1e-37,
                    )
                };
                check_float(result_type, got, expected, bound)
            }
            ReduceOp::Sum | ReduceOp::Product => {
                let exact = group.iter().fold(
                    Value::Int(i128::from(op == ReduceOp::Product)),
                    |acc, &value| {
                        let (Value::Int(a), Value::Int(b)) = (acc, value) else {
                            unreachable!("integer inputs");
                        };
                        let combined = if op == ReduceOp::Sum {
                            a + b
                        } else {
                            a.wrapping_mul(b)
                        };
                        reference::round_to(Value::Int(combined), result_type)
                    },
                );
                check_value(result_type, Tolerance::Exact, got, exact)
            }
            ReduceOp::ReduceMax | ReduceOp::ReduceMin => {
                let expected = host_extreme(group, op == ReduceOp::ReduceMax);
                match (got, expected) {
                    // Nx does not order -0.0 and 0.0; either sign is the extreme.
                    (Value::Float(a), Value::Float(e)) if a == e => Ok(()),
                    _ => check_value(result_type, Tolerance::Exact, got, expected),
                }
            }
            ReduceOp::All | ReduceOp::Any => {
                let expected = if op == ReduceOp::All {
                    group.iter().all(|&value| !is_zero(value))
                } else {
                    group.iter().any(|&value| !is_zero(value))
                };
                check_value(
                    result_type,
                    Tolerance::Exact,
                    got,
                    Value::Int(i128::from(expected)),
                )
            }
            ReduceOp::ArgMax | ReduceOp::ArgMin => {
                let expected = host_arg(group, op == ReduceOp::ArgMax, tie_break);
                check_value(result_type, Tolerance::Exact, got, Value::Int(expected))
            }
        };
        checked.map_err(|why| {
            let shown = &group[..group.len().min(8)];
            format!(
                "{context}: output {index} of {} elements starting {shown:?}: {why}",
                group.len()
            )
        })?;
    }
    Ok(())
}

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<usize>,
    view: ViewKind,
    axes: Option<Vec<usize>>,
    keep_axes: bool,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(0usize..6, 0..=4),
        any_view_kind(),
        any::<u8>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(shape, view, axis_bits, keep_axes, seed)| {
            // Mostly non-empty shapes; an empty axis in about one case of six.
            let shape: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(axis, &size)| {
                    if size == 0 && (seed >> axis) & 3 != 0 {
                        3
                    } else {
                        size
                    }
                })
                .collect();
            let axes = (axis_bits & 0x80 == 0).then(|| {
                let mut axes: Vec<usize> = (0..shape.len())
                    .filter(|axis| axis_bits & (1 << axis) != 0)
                    .collect();
                // Any order: Nx accepts unsorted axes.
                axes.reverse();
                axes
            });
            Case {
                shape,
                view,
                axes,
                keep_axes,
                seed,
            }
        })
}

fn domain(op: ReduceOp, dtype: DType) -> Domain {
    match (op, dtype.class()) {
        // Moderate float sums and unit-range products keep results away from overflow, where
        // f32 and f64 accumulation would round differently.
        (ReduceOp::Sum, DTypeClass::Float) => Domain::Moderate,
        (ReduceOp::Product, DTypeClass::Float) => Domain::Unit,
        _ => Domain::Wide,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(24), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn reductions_match_the_reference_on_every_native_dtype(case in case()) {
        let device = device();
        let mut rng = SplitMix(case.seed);
        for dtype in native() {
            for &op in ReduceOp::ALL {
                let (input, values) =
                    make_input(&device, dtype, &case.shape, case.view, domain(op, dtype), &mut rng);
                let axes = if op.is_arg() {
                    // Nx's argmax/argmin take one axis or none.
                    case.axes.as_ref().and_then(|axes| axes.first()).map(std::slice::from_ref)
                } else {
                    case.axes.as_deref()
                };
                let tie_breaks: &[TieBreak] = if op.is_arg() { &[TieBreak::Low, TieBreak::High] } else { &[TieBreak::Low] };
                for &tie_break in tie_breaks {
                    check_reduction(op, &input, &values, axes, case.keep_axes, Accumulation::Native, tie_break)
                        .map_err(TestCaseError::fail)?;
                }
                if matches!(op, ReduceOp::Sum | ReduceOp::Product) && dtype.is_float() {
                    check_reduction(op, &input, &values, axes, case.keep_axes, Accumulation::F64, TieBreak::Low)
                        .map_err(TestCaseError::fail)?;
                }
            }
        }
    }
}

/// Large reductions take the two-pass path (partials per chunk, then a second pass). Floats
/// are finite values in [-1, 1] here, so sums test accuracy rather than NaN propagation.
#[test]
fn large_reductions_split_into_two_passes() {
    let device = device();
    let mut rng = SplitMix(7);
    for (dtype, shape, axes) in [
        (DType::F32, vec![200_000], None),
        (DType::S32, vec![3, 50_000], Some(vec![1])),
        (DType::F16, vec![40_000, 2], Some(vec![0])),
        (DType::BF16, vec![2, 30_000], None),
        (DType::U8, vec![70_000], None),
    ] {
        let (input, values) = if dtype.is_float() {
            let n: usize = shape.iter().product();
            let values: Vec<Value> = (0..n)
                .map(|_| reference::round_to(Value::Float(rng.unit() * 2.0 - 1.0), dtype))
                .collect();
            let bytes = reference::encode(dtype, &values);
            (
                Tensor::from_bytes(&device, dtype, &shape, &bytes).unwrap(),
                values,
            )
        } else {
            make_input(
                &device,
                dtype,
                &shape,
                ViewKind::Contiguous,
                Domain::Wide,
                &mut rng,
            )
        };
        for &op in ReduceOp::ALL {
            if op == ReduceOp::Product {
                continue; // long products only overflow or vanish; small shapes cover them
            }
            for accumulation in [Accumulation::Native, Accumulation::F64] {
                check_reduction(
                    op,
                    &input,
                    &values,
                    axes.as_deref(),
                    false,
                    accumulation,
                    TieBreak::Low,
                )
                .unwrap();
            }
        }
    }
}

/// Shapes that take the fast templates (`reduce_codegen.rs`) in their less common corners, on
/// every native dtype and op: rows whose starts are not packet-aligned (lavapipe's subgroup of
/// 8 makes rows above 256 elements take whole workgroups), several kept axes, a long row split
/// into chunks, packed and unpacked columns over several passes, and argmax/argmin over
/// columns. NaN, infinities and extreme integers are mixed in except for float sums and
/// products (see [`domain`]).
#[test]
fn row_and_column_templates_match_the_reference() {
    let device = device();
    let mut rng = SplitMix(11);
    let shapes: [(&[usize], &[usize], ReduceLayout); 7] = [
        (&[3, 1001], &[1], ReduceLayout::Rows),
        (&[5, 37], &[1], ReduceLayout::Rows),
        (&[2, 3, 300], &[2], ReduceLayout::Rows),
        (&[40_000], &[0], ReduceLayout::Rows),
        (&[70, 12], &[0], ReduceLayout::Columns),
        (&[45, 6], &[0], ReduceLayout::Columns),
        (&[33, 2, 8], &[0], ReduceLayout::Columns),
    ];
    for dtype in native() {
        for (shape, axes, layout) in shapes {
            for &op in ReduceOp::ALL {
                let (input, values) = make_input(
                    &device,
                    dtype,
                    shape,
                    ViewKind::Contiguous,
                    domain(op, dtype),
                    &mut rng,
                );
                let axes = if op.is_arg() { &axes[..1] } else { axes };
                // Rows need a device with subgroup shuffles (lavapipe and the H200 have them).
                assert_eq!(
                    reduce::first_pass_layout(op, &input, Some(axes)).unwrap(),
                    Some(layout),
                    "{} {dtype} {shape:?}",
                    op.name()
                );
                let tie_breaks: &[TieBreak] = if op.is_arg() {
                    &[TieBreak::Low, TieBreak::High]
                } else {
                    &[TieBreak::Low]
                };
                for &tie_break in tie_breaks {
                    check_reduction(
                        op,
                        &input,
                        &values,
                        Some(axes),
                        false,
                        Accumulation::Native,
                        tie_break,
                    )
                    .unwrap();
                }
            }
        }
    }
}

/// Ties and NaN positions of argmax/argmin land in different packet lanes, subgroups and
/// chunks of a long row: the lowest (or highest) index must still win, and the last NaN.
#[test]
fn argmax_ties_and_nans_across_lanes_follow_nx() {
    let device = device();
    let n = 5000;
    let mut values = vec![0.5f32; n];
    for index in [3, 1026, 4097] {
        values[index] = 2.0;
    }
    let input = Tensor::from_slice(&device, &[n], &values).unwrap();
    let first = reduce::argmax(&input, None, TieBreak::Low, false).unwrap();
    assert_eq!(first.to_vec::<i64>().unwrap(), vec![3]);
    let last = reduce::argmax(&input, None, TieBreak::High, false).unwrap();
    assert_eq!(last.to_vec::<i64>().unwrap(), vec![4097]);
    for index in [17, 2222, 2223] {
        values[index] = f32::NAN;
    }
    let input = Tensor::from_slice(&device, &[2, n / 2], &values).unwrap();
    let rows = reduce::argmin(&input, Some(1), TieBreak::Low, false).unwrap();
    // Row 0 holds every NaN (the last, 2223, wins); row 1 ties at 0.5 from its start.
    assert_eq!(rows.to_vec::<i64>().unwrap(), vec![2223, 0]);
}

#[test]
fn known_values_follow_nx() {
    let device = device();
    let s64 = Tensor::from_slice(&device, &[3], &[i64::MAX, 1, 0]).unwrap();
    assert_eq!(
        reduce::sum(&s64, None, false)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        [i64::MIN]
    );
    let u8s = Tensor::from_slice(&device, &[2], &[255u8, 255]).unwrap();
    let sum = reduce::sum(&u8s, None, false).unwrap();
    assert_eq!(sum.dtype(), DType::U64);
    assert_eq!(sum.to_vec::<u64>().unwrap(), [510]);
    let s8 = Tensor::from_slice(&device, &[2], &[-128i8, -128]).unwrap();
    assert_eq!(
        reduce::product(&s8, None, false)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        [16384]
    );

    let floats =
        Tensor::from_slice(&device, &[6], &[1.0f32, f32::NAN, 5.0, 5.0, f32::NAN, -1.0]).unwrap();
    assert!(
        reduce::reduce_max(&floats, None, false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[0]
            .is_nan()
    );
    let argmax = |tensor: &Tensor, tie_break| {
        reduce::argmax(tensor, None, tie_break, false)
            .unwrap()
            .to_vec::<i64>()
            .unwrap()[0]
    };
    // The last NaN wins, whatever the tie break (Nx.BinaryBackend).
    assert_eq!(argmax(&floats, TieBreak::Low), 4);
    let ties = Tensor::from_slice(&device, &[2, 3], &[4i32, 7, 7, 7, 1, 7]).unwrap();
    assert_eq!(argmax(&ties, TieBreak::Low), 1);
    assert_eq!(argmax(&ties, TieBreak::High), 5);
    let per_row = reduce::argmin(&ties, Some(1), TieBreak::High, true).unwrap();
    assert_eq!(per_row.shape(), [2, 1]);
    assert_eq!(per_row.to_vec::<i64>().unwrap(), [0, 1]);
    let columns = reduce::sum(&ties, Some(&[0]), false).unwrap();
    assert_eq!(columns.to_vec::<i64>().unwrap(), [11, 8, 14]);
}

/// The signature of `reduce::sum`, `product`, `all`, ...
type AxesReduction = fn(&Tensor, Option<&[usize]>, bool) -> nxvk_core::Result<Tensor>;

#[test]
fn empty_and_rank_zero_reductions() {
    let device = device();
    let empty = Tensor::from_slice::<f32>(&device, &[0], &[]).unwrap();
    // A full reduction of nothing is the op's identity.
    let of_empty = |reduction: AxesReduction| reduction(&empty, None, false).unwrap();
    assert_eq!(of_empty(reduce::sum).to_vec::<f32>().unwrap(), [0.0]);
    assert_eq!(of_empty(reduce::product).to_vec::<f32>().unwrap(), [1.0]);
    assert_eq!(of_empty(reduce::all).to_vec::<u8>().unwrap(), [1]);
    assert_eq!(of_empty(reduce::any).to_vec::<u8>().unwrap(), [0]);
    let error = reduce::reduce_max(&empty, None, false).unwrap_err();
    assert!(
        matches!(
            error,
            Error::BadOperands {
                op: "reduce_max",
                ..
            }
        ),
        "{error}"
    );
    let error = reduce::argmin(&empty, None, TieBreak::Low, false).unwrap_err();
    assert!(error.to_string().contains("argmin"), "{error}");
    let rows = Tensor::from_slice::<i32>(&device, &[0, 3], &[]).unwrap();
    let sums = reduce::sum(&rows, Some(&[1]), true).unwrap();
    assert_eq!((sums.shape(), sums.dtype()), (&[0usize, 1][..], DType::S64));

    let scalar = Tensor::from_slice(&device, &[], &[-3i16]).unwrap();
    assert_eq!(
        reduce::sum(&scalar, None, false)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        [-3]
    );
    assert_eq!(
        reduce::argmax(&scalar, None, TieBreak::Low, false)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        [0]
    );
    // No axes: every element is its own group (and the type still aggregates).
    let broadcast = scalar.broadcast_to(&[2, 2]).unwrap();
    let same = reduce::sum(&broadcast, Some(&[]), false).unwrap();
    assert_eq!(same.to_vec::<i64>().unwrap(), [-3, -3, -3, -3]);
    assert_eq!(Layout::contiguous(same.shape()).shape(), [2, 2]);
}

#[test]
fn bad_axes_and_unsupported_types_are_errors() {
    let device = device();
    let tensor = Tensor::from_slice(&device, &[2, 2], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let error = reduce::sum(&tensor, Some(&[2]), false).unwrap_err();
    assert!(error.to_string().contains("sum"), "{error}");
    assert!(reduce::sum(&tensor, Some(&[1, 1]), false).is_err());
    let complex = Tensor::zeros(&device, DType::C64, &[2]).unwrap();
    let error = reduce::reduce_max(&complex, None, false).unwrap_err();
    assert!(
        matches!(
            error,
            Error::BadOperands {
                op: "reduce_max",
                ..
            }
        ),
        "{error}"
    );
    let float8 = Tensor::zeros(&device, DType::F8E5M2, &[2]).unwrap();
    let error = reduce::sum(&float8, None, false).unwrap_err();
    assert!(
        matches!(error, Error::Unsupported { op: "sum", .. }),
        "{error}"
    );
}

/// Complex and sub-byte reductions take the counted host fallback, with the same semantics
/// (checked against the same reference as the GPU path).
#[test]
fn complex_reductions_run_on_the_gpu_and_sub_byte_ones_on_the_host() {
    let device = device();
    let complex = Tensor::from_slice(
        &device,
        &[2, 2],
        &[
            Complex32::new(1.0, 2.0),
            Complex32::new(0.0, 1.0),
            Complex32::new(3.0, 0.0),
            Complex32::new(0.0, 0.0),
        ],
    )
    .unwrap();
    let before = fallbacks("sum", DType::C64);
    let sums = reduce::sum(&complex, Some(&[0]), false).unwrap();
    assert_eq!(
        sums.to_vec::<Complex32>().unwrap(),
        [Complex32::new(4.0, 2.0), Complex32::new(0.0, 1.0)]
    );
    // Complex reductions have kernels (tests/complex_reduce.rs): nothing counted.
    assert_eq!(fallbacks("sum", DType::C64), before);
    let products = reduce::product(&complex, Some(&[1]), true).unwrap();
    assert_eq!(products.shape(), [2, 1]);
    assert_eq!(
        products.to_vec::<Complex32>().unwrap(),
        [Complex32::new(-2.0, 1.0), Complex32::new(0.0, 0.0)]
    );
    assert_eq!(
        reduce::all(&complex, Some(&[1]), false)
            .unwrap()
            .to_vec::<u8>()
            .unwrap(),
        [1, 0]
    );

    let mut rng = SplitMix(11);
    for dtype in [DType::S2, DType::S4, DType::U2, DType::U4] {
        let shape = [3, 5];
        let values: Vec<Value> = (0..15)
            .map(|_| random_value(dtype, Domain::Wide, &mut rng))
            .collect();
        let input =
            Tensor::from_bytes(&device, dtype, &shape, &reference::encode(dtype, &values)).unwrap();
        for &op in ReduceOp::ALL {
            for axes in [None, Some(&[1usize][..])] {
                check_reduction(
                    op,
                    &input,
                    &values,
                    axes,
                    false,
                    Accumulation::Native,
                    TieBreak::High,
                )
                .unwrap();
            }
        }
    }
}

/// Null arms: the comparison helper rejects wrong results.
#[test]
fn check_float_rejects_wrong_results() {
    let float = Value::Float;
    assert!(check_float(DType::F32, float(1.0), 1.0, 0.0).is_ok());
    assert!(check_float(DType::F32, float(1.001), 1.0, 1e-6).is_err());
    assert!(check_float(DType::F32, float(f64::NAN), 1.0, 1.0).is_err());
    assert!(check_float(DType::F32, float(1.0), f64::NAN, 1.0).is_err());
    assert!(check_float(DType::F32, float(f64::INFINITY), f64::NEG_INFINITY, 1.0).is_err());
    assert!(check_float(DType::F32, Value::Int(1), 1.0, 1.0).is_err());
    assert_eq!(
        host_arg(
            &[Value::Int(1), Value::Int(3), Value::Int(3)],
            true,
            TieBreak::High
        ),
        2
    );
    assert_eq!(
        host_arg(
            &[
                Value::Float(f64::NAN),
                Value::Float(2.0),
                Value::Float(f64::NAN)
            ],
            false,
            TieBreak::Low
        ),
        2
    );
}
