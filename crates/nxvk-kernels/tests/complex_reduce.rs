//! Complex (c64, c128) select, reductions (sum, product, all, any) and scans (cumulative sum
//! and product) on the GPU against host folds in f64 with Elixir's Complex arithmetic: random
//! shapes up to rank 3 (empty and rank-0 included), strided views, broadcasting, any axes,
//! Inf/NaN/-0 parts. Every run also proves that no host fallback was counted.
//!
//! Bounds, per part: sums within 64 eps sum|part| (the tree adds in another order), products
//! within 8 n eps |z| (n factors; |z| the exact product's modulus), select, all and any exact.
//! A part is non-finite exactly where the reference's is: the inputs avoid overflow, and a
//! non-finite part spreads the same way in any order (Inf - Inf is NaN whenever both meet; a
//! product with a non-finite factor is non-finite in both parts once a second factor joins).
//! Null arms: each comparison rejects a deliberately wrong reference.

mod common;

use common::*;
use nxvk_core::{Complex64, DType, Tensor};
use nxvk_kernels::reduce::{self, ReduceOp, ReduceOptions};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::{ScanOp, cumulative, select};
use proptest::prelude::*;

const COMPLEX: [DType; 2] = [DType::C64, DType::C128];

/// How test values are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scale {
    /// Parts of magnitudes 1e-3..1e3 (sums).
    Wide,
    /// Moduli within [1 / (1 + spread), 1 + spread] at random angles (products: no overflow
    /// over the lengths tested).
    Polar(f64),
}

/// Inputs up to this many elements get special values: longer ones would be all NaN.
const SPECIALS_UP_TO: usize = 200;

/// A complex value of `dtype`; with `specials`, each part is a special value (NaN, +-Inf,
/// +-0) one time in 16.
fn complex_value(dtype: DType, rng: &mut SplitMix, scale: Scale, specials: bool) -> Value {
    let (re, im) = match scale {
        Scale::Wide => {
            let mut part = || {
                let magnitude = 10f64.powf(rng.unit() * 6.0 - 3.0);
                if rng.below(2) == 0 {
                    magnitude
                } else {
                    -magnitude
                }
            };
            (part(), part())
        }
        Scale::Polar(spread) => {
            let modulus = (1.0 + spread).powf(2.0 * rng.unit() - 1.0);
            let angle = std::f64::consts::TAU * rng.unit();
            (modulus * angle.cos(), modulus * angle.sin())
        }
    };
    let values = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0];
    let mut special = |part: f64| {
        if specials && rng.below(16) == 0 {
            values[rng.below(values.len() as u64) as usize]
        } else {
            part
        }
    };
    let value = Complex64::new(special(re), special(im));
    reference::round_to(Value::Complex(value), dtype)
}

/// Products of `length` factors: a spread that keeps them within about 2^40.
fn scale_for(product: bool, length: usize) -> Scale {
    if !product {
        Scale::Wide
    } else if length > SPECIALS_UP_TO {
        Scale::Polar(0.0)
    } else {
        Scale::Polar(0.25)
    }
}

fn as_complex(value: Value) -> Complex64 {
    match value {
        Value::Complex(complex) => complex,
        Value::Float(float) => Complex64::new(float, 0.0),
        Value::Int(integer) => Complex64::new(integer as f64, 0.0),
    }
}

/// Runs `run`, asserting that it counted no host fallback of `op` on `dtype`.
fn on_gpu<T>(op: &str, dtype: DType, run: impl FnOnce() -> T) -> T {
    let before = fallbacks(op, dtype);
    let result = run();
    assert_eq!(fallbacks(op, dtype), before, "{op} on {dtype} fell back");
    result
}

/// One part against its reference: the same finiteness (NaN and infinities by class), and
/// finite parts within `bound`.
fn check_part(actual: f64, expected: f64, bound: f64) -> Result<(), String> {
    // Equal parts pass whatever the bound (a NaN partner makes a product's bound NaN).
    let same_class = if actual.is_finite() || expected.is_finite() {
        actual.is_finite()
            && expected.is_finite()
            && (actual == expected || (actual - expected).abs() <= bound)
    } else {
        true
    };
    if same_class {
        Ok(())
    } else {
        Err(format!("{actual} vs {expected} (bound {bound:e})"))
    }
}

/// Complex results against references with a bound per element and part.
fn check_complex(
    what: &str,
    actual: &[Value],
    expected: &[Complex64],
    bounds: &[(f64, f64)],
) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{what}: {} values, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    for (index, (&value, expected)) in actual.iter().zip(expected).enumerate() {
        let value = as_complex(value);
        check_part(value.re, expected.re, bounds[index].0)
            .and_then(|()| check_part(value.im, expected.im, bounds[index].1))
            .map_err(|why| format!("{what}: element {index}: {value:?} vs {expected:?}: {why}"))?;
    }
    Ok(())
}

/// Complex.multiply in f64 (IEEE, as the kernels and the library compute it).
fn multiply(a: Complex64, b: Complex64) -> Complex64 {
    Complex64::new(a.re * b.re - a.im * b.im, a.im * b.re + a.re * b.im)
}

/// Host reduction of one group as BinaryBackend folds it (from 0 or from 1 + 0i), with the
/// per-part bound of the GPU's different order.
fn host_reduce(op: ReduceOp, dtype: DType, group: &[Complex64]) -> (Complex64, (f64, f64)) {
    let eps = epsilon(if dtype == DType::C64 {
        DType::F32
    } else {
        DType::F64
    });
    match op {
        ReduceOp::Sum => {
            let sum = group
                .iter()
                .fold(Complex64::new(0.0, 0.0), |acc, &z| acc + z);
            let magnitude = |part: fn(&Complex64) -> f64| {
                group.iter().map(|z| part(z).abs()).sum::<f64>() * 64.0 * eps
            };
            (sum, (magnitude(|z| z.re), magnitude(|z| z.im)))
        }
        ReduceOp::Product => {
            let product = group
                .iter()
                .fold(Complex64::new(1.0, 0.0), |acc, &z| multiply(z, acc));
            let bound = 8.0 * (group.len() as f64 + 1.0) * eps * product.norm();
            (product, (bound, bound))
        }
        ReduceOp::All | ReduceOp::Any => {
            let nonzero = |z: &Complex64| z.re != 0.0 || z.im != 0.0;
            let truth = if op == ReduceOp::All {
                group.iter().all(nonzero)
            } else {
                group.iter().any(nonzero)
            };
            (Complex64::new(f64::from(u8::from(truth)), 0.0), (0.0, 0.0))
        }
        _ => unreachable!("complex max/min/argmax/argmin are errors"),
    }
}

fn rounded(dtype: DType, value: Complex64) -> Complex64 {
    as_complex(reference::round_to(Value::Complex(value), dtype))
}

const REDUCE_OPS: [ReduceOp; 4] = [
    ReduceOp::Sum,
    ReduceOp::Product,
    ReduceOp::All,
    ReduceOp::Any,
];

#[allow(clippy::too_many_arguments)] // One case of the property, as drawn.
fn reduce_case(
    op: ReduceOp,
    dtype: DType,
    shape: &[usize],
    view: ViewKind,
    axes: Option<&[usize]>,
    keep_axes: bool,
    seed: u64,
    wrong: bool,
) -> Result<(), String> {
    let device = device();
    let mut rng = SplitMix(seed);
    let n_elements: usize = shape.iter().product();
    let scale = scale_for(op == ReduceOp::Product, n_elements);
    let specials = n_elements <= SPECIALS_UP_TO;
    let (input, values) = make_view_input(&device, dtype, shape, view, || {
        complex_value(dtype, &mut rng, scale, specials)
    });
    let options = ReduceOptions {
        axes,
        keep_axes,
        ..ReduceOptions::default()
    };
    let output = on_gpu(op.name(), dtype, || reduce::reduce(op, &input, &options))
        .map_err(|error| error.to_string())?;
    let all_axes: Vec<usize> = (0..shape.len()).collect();
    let axes = axes.unwrap_or(&all_axes);
    let expected_shape: Vec<usize> = (0..shape.len())
        .filter_map(|axis| match (axes.contains(&axis), keep_axes) {
            (false, _) => Some(shape[axis]),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    if output.shape() != expected_shape {
        return Err(format!(
            "shape {:?}, expected {expected_shape:?}",
            output.shape()
        ));
    }
    let result_dtype = reduce::result_dtype(op, dtype);
    if output.dtype() != result_dtype {
        return Err(format!("dtype {}, expected {result_dtype}", output.dtype()));
    }
    // The null arm checks sums against products and the other way round, and all/any
    // against the negated truth.
    let reference_op = match (op, wrong) {
        (ReduceOp::Sum, true) => ReduceOp::Product,
        (ReduceOp::Product, true) => ReduceOp::Sum,
        _ => op,
    };
    let negate = wrong && matches!(op, ReduceOp::All | ReduceOp::Any);
    let (expected, bounds): (Vec<Complex64>, Vec<(f64, f64)>) =
        reduction_groups(shape, &values, axes)
            .iter()
            .map(|group| {
                let group: Vec<Complex64> = group.iter().map(|&value| as_complex(value)).collect();
                let (mut value, bound) = host_reduce(reference_op, dtype, &group);
                if negate {
                    value.re = 1.0 - value.re;
                }
                (rounded(result_dtype_or(dtype, result_dtype), value), bound)
            })
            .unzip();
    check_complex(
        &format!("{} {dtype} {shape:?} {axes:?}", op.name()),
        &read(&output),
        &expected,
        &bounds,
    )
}

/// The dtype host values round to: the complex input type for sums and products, u8 truth
/// values stay as they are.
fn result_dtype_or(input: DType, result: DType) -> DType {
    if result.is_complex() {
        input
    } else {
        DType::F64
    }
}

fn shape_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..6, 0..=3)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(32), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn reductions_match_the_host(
        op_index in 0usize..4,
        complex in 0usize..2,
        shape in shape_strategy(),
        view in any_view_kind(),
        axis_mask in 0u32..16,
        all_axes in any::<bool>(),
        keep_axes in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let axes: Vec<usize> = (0..shape.len()).filter(|axis| axis_mask & (1 << axis) != 0).collect();
        let axes = if all_axes { None } else { Some(&axes[..]) };
        let result = reduce_case(REDUCE_OPS[op_index], COMPLEX[complex], &shape, view, axes, keep_axes, seed, false);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

#[test]
fn long_reductions_take_the_split_passes() {
    // 5000 and 20000 elements per output: the sum's split passes and the product's chunks
    // (more than 16 workgroups' worth), on both layouts of a column and a row reduction.
    for dtype in COMPLEX {
        for op in REDUCE_OPS {
            for (shape, axes) in [(vec![5000, 3], vec![0]), (vec![2, 20000], vec![1])] {
                reduce_case(
                    op,
                    dtype,
                    &shape,
                    ViewKind::Contiguous,
                    Some(&axes),
                    false,
                    7,
                    false,
                )
                .unwrap();
            }
        }
    }
}

#[test]
fn reduction_null_arms_reject_the_wrong_op() {
    for dtype in COMPLEX {
        for op in REDUCE_OPS {
            let result = reduce_case(
                op,
                dtype,
                &[3, 4],
                ViewKind::Transposed,
                Some(&[1]),
                false,
                11,
                true,
            );
            assert!(
                result.is_err(),
                "{} {dtype}: a wrong reference passed",
                op.name()
            );
        }
    }
}

#[test]
fn product_special_values_follow_binary_backend() {
    // BinaryBackend folds from the integer 1: a lone (Inf, 0) becomes (Inf, NaN), a lone
    // (-0, -0) becomes (-0 - (-0 * 0), -0 + -0 * 0) = (+0, -0), the empty product is 1.
    let device = device();
    type Case = (&'static [(f32, f32)], (f32, f32));
    let cases: [Case; 4] = [
        (&[(f32::INFINITY, 0.0)], (f32::INFINITY, f32::NAN)),
        (&[(-0.0, -0.0)], (0.0, -0.0)),
        (&[], (1.0, 0.0)),
        (&[(2.0, 1.0), (0.5, -1.0)], (2.0, -1.5)),
    ];
    for (values, (re, im)) in cases {
        let values: Vec<nxvk_core::Complex32> = values
            .iter()
            .map(|&(re, im)| nxvk_core::Complex32::new(re, im))
            .collect();
        let input = Tensor::from_slice(&device, &[values.len()], &values).unwrap();
        let output = on_gpu("product", DType::C64, || {
            reduce::product(&input, None, false)
        })
        .unwrap();
        let got = output.to_vec::<nxvk_core::Complex32>().unwrap()[0];
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        assert!(
            same(got.re, re) && same(got.im, im),
            "{values:?}: got {got:?}, expected ({re}, {im})"
        );
    }
}

#[test]
fn product_overflow_in_c64_is_non_finite() {
    // Three factors of 1e20 overflow f32 in the second product, whose (Inf, 0) times 1e20
    // gives (Inf, NaN), and the final multiplication by 1 (NaN, NaN). BinaryBackend (f64)
    // rounds 1e60 to (Inf, 0) at the end: both are non-finite in the real part (the
    // documented difference of f32 accumulation).
    let device = device();
    let values = vec![nxvk_core::Complex32::new(1e20, 0.0); 3];
    let input = Tensor::from_slice(&device, &[3], &values).unwrap();
    let got = reduce::product(&input, None, false)
        .unwrap()
        .to_vec::<nxvk_core::Complex32>()
        .unwrap()[0];
    assert!(got.re.is_nan() && got.im.is_nan(), "{got:?}");
}

#[test]
fn complex_max_and_argmax_stay_errors() {
    let device = device();
    let input = Tensor::zeros(&device, DType::C64, &[3]).unwrap();
    assert!(reduce::reduce_max(&input, None, false).is_err());
    assert!(reduce::argmax(&input, None, reduce::TieBreak::Low, false).is_err());
}

// ---- select ----

fn select_case(
    dtype: DType,
    other: DType,
    shape: &[usize],
    pred_rank0: bool,
    view: ViewKind,
    seed: u64,
    wrong: bool,
) -> Result<(), String> {
    let device = device();
    let mut rng = SplitMix(seed);
    let pred_dtype = if seed.is_multiple_of(3) {
        DType::C64
    } else {
        DType::U8
    };
    let pred_shape: Vec<usize> = if pred_rank0 { vec![] } else { shape.to_vec() };
    let (pred, pred_values) = make_view_input(
        &device,
        pred_dtype,
        &pred_shape,
        ViewKind::Contiguous,
        || {
            if pred_dtype == DType::U8 {
                Value::Int(i128::from(rng.below(3) == 0) * 7)
            } else {
                // Complex predicates: zero of either sign, or a non-zero / NaN part.
                let choices = [(0.0, 0.0), (-0.0, 0.0), (0.0, 1.0), (f64::NAN, 0.0)];
                let (re, im) = choices[rng.below(4) as usize];
                Value::Complex(Complex64::new(re, im))
            }
        },
    );
    let (on_true, true_values) = make_view_input(&device, dtype, shape, view, || {
        complex_value(dtype, &mut rng, Scale::Wide, true)
    });
    // The false branch is broadcast from its last axis, in `other` (promoted to the result).
    let false_shape: Vec<usize> = shape.last().map(|&last| vec![last]).unwrap_or_default();
    let (on_false, false_values) =
        make_view_input(&device, other, &false_shape, ViewKind::Contiguous, || {
            reference::round_to(
                complex_value(DType::C128, &mut rng, Scale::Wide, true),
                other,
            )
        });
    let result_dtype = nxvk_kernels::types::merge(dtype, other);
    let output = on_gpu("select", result_dtype, || {
        select(&pred, &on_true, &on_false)
    })
    .map_err(|error| error.to_string())?;
    let pred_values = broadcast_values(&pred_values, &pred_shape, shape);
    let false_values = broadcast_values(&false_values, &false_shape, shape);
    let expected: Vec<Value> = (0..true_values.len())
        .map(|index| {
            let truth = as_complex(pred_values[index]);
            let chosen = (truth.re != 0.0 || truth.im != 0.0) != wrong;
            let value = if chosen {
                true_values[index]
            } else {
                false_values[index]
            };
            reference::round_to(value, result_dtype)
        })
        .collect();
    check_output_exact(
        &format!("select {dtype} {shape:?}"),
        &output,
        shape,
        &expected,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(32), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn select_matches_the_host(
        complex in 0usize..2,
        other in 0usize..3,
        shape in shape_strategy(),
        pred_rank0 in any::<bool>(),
        view in any_view_kind(),
        seed in any::<u64>(),
    ) {
        let dtype = COMPLEX[complex];
        let other = [DType::C64, DType::C128, DType::F32][other];
        let result = select_case(dtype, other, &shape, pred_rank0, view, seed, false);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

#[test]
fn select_null_arm_rejects_swapped_branches() {
    for dtype in COMPLEX {
        // Seed 1: a u8 predicate with both truth values over 12 elements.
        let result = select_case(dtype, dtype, &[3, 4], false, ViewKind::Sliced, 1, true);
        assert!(result.is_err(), "{dtype}: swapped branches passed");
    }
}

// ---- scans ----

/// The sequential host scan along `axis`, from the end when `reverse` (f64, Complex.multiply),
/// with per-element bounds; `shift` makes it exclusive (a null arm).
fn complex_host_scan(
    (op, dtype): (ScanOp, DType),
    (shape, values): (&[usize], &[Value]),
    (axis, reverse): (usize, bool),
    shift: bool,
) -> (Vec<Complex64>, Vec<(f64, f64)>) {
    let eps = epsilon(if dtype == DType::C64 {
        DType::F32
    } else {
        DType::F64
    });
    let length = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let mut expected = vec![Complex64::new(0.0, 0.0); values.len()];
    let mut bounds = vec![(0.0, 0.0); values.len()];
    for line in 0..values.len() / length.max(1) {
        let (outer, within) = (line / inner, line % inner);
        let mut running: Option<Complex64> = None;
        let mut magnitude = (0.0, 0.0);
        for step in 0..length {
            let along = if reverse { length - 1 - step } else { step };
            let index = (outer * length + along) * inner + within;
            let value = as_complex(values[index]);
            let previous = running;
            running = Some(match (running, op) {
                (None, _) => value,
                (Some(earlier), ScanOp::Sum) => earlier + value,
                (Some(earlier), _) => multiply(earlier, value),
            });
            magnitude.0 += value.re.abs();
            magnitude.1 += value.im.abs();
            let shown = if shift {
                previous.unwrap_or_default()
            } else {
                running.expect("set")
            };
            expected[index] = rounded(dtype, shown);
            bounds[index] = match op {
                ScanOp::Sum => (64.0 * eps * magnitude.0, 64.0 * eps * magnitude.1),
                _ => {
                    let bound = 8.0 * (step as f64 + 1.0) * eps * shown.norm();
                    (bound, bound)
                }
            };
        }
    }
    (expected, bounds)
}

#[allow(clippy::too_many_arguments)] // One case of the property, as drawn.
fn scan_case(
    op: ScanOp,
    dtype: DType,
    shape: &[usize],
    view: ViewKind,
    axis: usize,
    reverse: bool,
    seed: u64,
    shift: bool,
) -> Result<(), String> {
    let device = device();
    let mut rng = SplitMix(seed);
    let scale = scale_for(op == ScanOp::Product, shape[axis]);
    let specials = shape.iter().product::<usize>() <= SPECIALS_UP_TO;
    let (input, values) = make_view_input(&device, dtype, shape, view, || {
        complex_value(dtype, &mut rng, scale, specials)
    });
    let output = on_gpu(op.name(), dtype, || cumulative(op, &input, axis, reverse))
        .map_err(|error| error.to_string())?;
    if output.shape() != shape || output.dtype() != dtype {
        return Err(format!(
            "{:?} {}, expected {shape:?} {dtype}",
            output.shape(),
            output.dtype()
        ));
    }
    let (expected, bounds) =
        complex_host_scan((op, dtype), (shape, &values), (axis, reverse), shift);
    check_complex(
        &format!("{} {dtype} {shape:?} axis {axis}", op.name()),
        &read(&output),
        &expected,
        &bounds,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(32), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn scans_match_the_host(
        product in any::<bool>(),
        complex in 0usize..2,
        shape in prop::collection::vec(0usize..7, 1..=3),
        view in any_view_kind(),
        axis_seed in any::<usize>(),
        reverse in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let op = if product { ScanOp::Product } else { ScanOp::Sum };
        let axis = axis_seed % shape.len();
        let result = scan_case(op, COMPLEX[complex], &shape, view, axis, reverse, seed, false);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

#[test]
fn long_scans_take_the_block_and_carry_passes() {
    // 2500 > one block of 1024: block scans, a scanned carry line and the carry pass; the
    // second shape scans a long inner axis (transposed to rows and back).
    for dtype in COMPLEX {
        for op in [ScanOp::Sum, ScanOp::Product] {
            for (shape, axis) in [(vec![2, 2500], 1), (vec![2500, 3], 0), (vec![70], 0)] {
                scan_case(
                    op,
                    dtype,
                    &shape,
                    ViewKind::Contiguous,
                    axis,
                    axis == 0,
                    5,
                    false,
                )
                .unwrap();
            }
        }
    }
}

#[test]
fn scan_null_arm_rejects_an_exclusive_scan() {
    for dtype in COMPLEX {
        for op in [ScanOp::Sum, ScanOp::Product] {
            let result = scan_case(op, dtype, &[3, 5], ViewKind::Contiguous, 1, false, 3, true);
            assert!(
                result.is_err(),
                "{} {dtype}: an exclusive scan passed",
                op.name()
            );
        }
    }
}

#[test]
fn complex_scan_min_max_stay_errors() {
    let device = device();
    let input = Tensor::zeros(&device, DType::C128, &[4]).unwrap();
    assert!(cumulative(ScanOp::Max, &input, 0, false).is_err());
    assert!(cumulative(ScanOp::Min, &input, 0, false).is_err());
}
