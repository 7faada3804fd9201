//! Every op of the table on every native and complex dtype against the host reference: random shapes up to
//! rank 4 with broadcasting, transposed and sliced views, empty and rank-0 tensors, and NaN,
//! infinities, -0.0 and extreme integers mixed into the inputs. Outputs are poisoned before
//! every kernel (see `common::device`).
//!
//! Exact ops must match bit for bit (any NaN matches any NaN). Transcendentals are checked to
//! ulp bounds measured on lavapipe (see [`tolerance`]); results below f32's smallest normal may
//! flush to zero (Vulkan allows it), hence the absolute slack.

mod common;

use common::*;
use nxvk_core::{DType, Tensor};
use nxvk_kernels::accuracy::ulp_bound;
use nxvk_kernels::f32_math;
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::types::{OpTypes, binary_types, unary_types};
use nxvk_kernels::{BinaryOp, UnaryOp, ops};
use proptest::prelude::*;

/// Transcendentals are held to the bounds `accuracy::ulp_bound` states for f32 and f64 (f16
/// and bf16 round an f32 result once more: 2 ulps of theirs). Complex results are checked part
/// by part in ulps of the component type (see [`complex_ulps`]).
fn tolerance(op: &str, exact: bool, compute: DType, result: DType) -> Tolerance {
    let exact = if compute.is_complex() {
        complex_ulps(op) == 0
    } else {
        exact
    };
    if exact {
        return Tolerance::Exact;
    }
    let (ulps, absolute) = match (compute, ulp_type(result)) {
        (DType::C64 | DType::C128, _) => (complex_ulps(op), complex_absolute(op, compute)),
        (_, DType::F16) => (2, 0.0),
        (_, DType::BF16) => (2, 1.2e-38),
        (_, DType::F64) => (ulp_bound(op, DType::F64, f32_math(&device())), 0.0),
        _ => (ulp_bound(op, DType::F32, f32_math(&device())), 1.2e-38),
    };
    Tolerance::Ulps { ulps, absolute }
}

/// Ulps (of the component type, per part) allowed between a complex kernel and the host
/// reference. Both evaluate the Complex library's formulas operation by operation, with
/// correctly rounded divides and square roots: arithmetic matches bit for bit on lavapipe (2
/// ulps leave room for a driver whose f64 divide or square root is not correctly rounded).
/// Transcendentals differ by the real functions' errors (up to 7 ulps in f32, 2 in f64,
/// `accuracy::ulp_bound`), which the formulas can amplify; see [`complex_absolute`].
fn complex_ulps(op: &str) -> u64 {
    match op {
        "add" | "subtract" | "negate" | "conjugate" | "real" | "imag" => 0,
        "multiply" | "divide" | "abs" | "sqrt" | "rsqrt" => 2,
        _ => 16,
    }
}

/// Absolute slack per part for complex transcendentals: 64 machine epsilons of the component
/// type, for parts that cancel (sinh near 0, log near |z| = 1, the real part of tan for a large
/// imaginary part), whose error is relative to the terms, not the result.
fn complex_absolute(op: &str, compute: DType) -> f64 {
    match (complex_ulps(op), compute) {
        (16, DType::C64) => 64.0 * f64::from(f32::EPSILON),
        (16, _) => 64.0 * f64::EPSILON,
        _ => 0.0,
    }
}

/// The type whose ulps measure a result: a complex number's component type.
fn ulp_type(result: DType) -> DType {
    match result {
        DType::C64 => DType::F32,
        DType::C128 => DType::F64,
        other => other,
    }
}

fn unary_domain(op: UnaryOp) -> Domain {
    use UnaryOp::*;
    match op {
        Asin | Acos | Atanh | ErfInv => Domain::Unit,
        _ => Domain::Wide,
    }
}

fn binary_domains(op: BinaryOp) -> (Domain, Domain) {
    match op {
        BinaryOp::LeftShift | BinaryOp::RightShift | BinaryOp::Pow => {
            (Domain::Wide, Domain::SmallInteger)
        }
        _ => (Domain::Wide, Domain::Wide),
    }
}

/// A random broadcast case: an output shape and two operand shapes that broadcast to it.
#[derive(Debug, Clone)]
struct Case {
    shape: Vec<usize>,
    left: Vec<usize>,
    right: Vec<usize>,
    left_view: ViewKind,
    right_view: ViewKind,
    seed: u64,
}

fn view_kind() -> impl Strategy<Value = ViewKind> {
    prop_oneof![
        Just(ViewKind::Contiguous),
        Just(ViewKind::Transposed),
        Just(ViewKind::Sliced)
    ]
}

/// Drops `drop` leading axes and turns the axes in `ones` into size 1 (broadcast operands).
fn operand_shape(shape: &[usize], drop: usize, ones: u8) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .skip(drop.min(shape.len()))
        .map(|(axis, &size)| if ones >> axis & 1 == 1 { 1 } else { size })
        .collect()
}

fn case() -> impl Strategy<Value = Case> {
    let dimension = prop_oneof![12 => 1..4usize, 1 => Just(0usize)];
    (
        prop::collection::vec(dimension, 0..=4),
        (0..3usize, any::<u8>(), 0..3usize, any::<u8>()),
        view_kind(),
        view_kind(),
        any::<u64>(),
    )
        .prop_map(
            |(
                shape,
                (left_drop, left_ones, right_drop, right_ones),
                left_view,
                right_view,
                seed,
            )| Case {
                left: operand_shape(&shape, left_drop, left_ones),
                right: operand_shape(&shape, right_drop, right_ones),
                shape,
                left_view,
                right_view,
                seed,
            },
        )
}

/// The right-aligned broadcast of two compatible shapes.
fn broadcast_shape(left: &[usize], right: &[usize]) -> Vec<usize> {
    let rank = left.len().max(right.len());
    let size = |shape: &[usize], axis: usize| {
        (axis + shape.len())
            .checked_sub(rank)
            .map_or(1, |index| shape[index])
    };
    (0..rank)
        .map(|axis| {
            if size(left, axis) == 1 {
                size(right, axis)
            } else {
                size(left, axis)
            }
        })
        .collect()
}

/// Runs `op` on fresh inputs of types `left_type` and `right_type` for `case` and checks it.
fn check_binary(
    op: BinaryOp,
    left_type: DType,
    right_type: DType,
    case: &Case,
    rng: &mut SplitMix,
) -> Result<(), String> {
    let device = device();
    let (left_domain, right_domain) = binary_domains(op);
    let (left, left_values) = make_input(
        &device,
        left_type,
        &case.left,
        case.left_view,
        left_domain,
        rng,
    );
    let (right, right_values) = make_input(
        &device,
        right_type,
        &case.right,
        case.right_view,
        right_domain,
        rng,
    );
    let types = binary_types(op, left_type, right_type, &[]).unwrap();
    let output = ops::binary(op, &left, &right).map_err(|error| error.to_string())?;
    let label = format!(
        "{} on {left_type} {:?} and {right_type} {:?}",
        op.name(),
        case.left,
        case.right
    );
    let shape = broadcast_shape(&case.left, &case.right);
    if output.shape() != shape.as_slice() || output.dtype() != types.result {
        return Err(format!(
            "{label}: result {:?} {}",
            output.shape(),
            output.dtype()
        ));
    }
    let left_values = broadcast_values(&left_values, &case.left, &shape);
    let right_values = broadcast_values(&right_values, &case.right, &shape);
    let expected: Vec<Value> = left_values
        .iter()
        .zip(&right_values)
        .map(|(&a, &b)| {
            reference::binary(
                op,
                types.compute,
                reference::round_to(a, types.compute),
                reference::round_to(b, types.compute),
            )
            .unwrap()
        })
        .collect();
    let expected = reference::decode(
        types.result,
        &reference::encode(types.result, &expected),
        expected.len(),
    )
    .unwrap();
    if op == BinaryOp::Pow && types.compute.is_complex() {
        return check_complex_pow(
            types.compute,
            &read(&output),
            &expected,
            &left_values,
            &right_values,
        )
        .map_err(|why| format!("{label}: {why}"));
    }
    let tolerance = tolerance(op.name(), op.spec().exact, types.compute, types.result);
    check_all(
        ulp_type(types.result),
        tolerance,
        &read(&output),
        &expected,
        &[&left_values, &right_values],
    )
    .map_err(|why| format!("{label}: {why}"))
}

/// Complex pow is |x|^re e^(-im phase) (cos r + i sin r): the real functions' errors in log|x|,
/// the phase and r = re phase + im log|x| are relative to |x^y| and grow with |y| and |r|, so a
/// part is checked against 16 epsilons of the component type times |x^y| (1 + |y| (|log|x|| +
/// pi)), not in its own ulps (a part near a zero of cos r has few correct digits on either
/// side). Equal parts pass (the bound is NaN for 0^0); non-finite parts must match, signs
/// aside when |x^y| overflowed.
fn check_complex_pow(
    compute: DType,
    actual: &[Value],
    expected: &[Value],
    bases: &[Value],
    exponents: &[Value],
) -> Result<(), String> {
    let epsilon = if compute == DType::C64 {
        f64::from(f32::EPSILON)
    } else {
        f64::EPSILON
    };
    let complex = |value: Value| match value {
        Value::Complex(z) => z,
        Value::Float(x) => nxvk_core::Complex64::new(x, 0.0),
        Value::Int(x) => nxvk_core::Complex64::new(x as f64, 0.0),
    };
    if actual.len() != expected.len() {
        return Err(format!(
            "{} elements, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    for (index, (((&actual, &expected), &base), &exponent)) in actual
        .iter()
        .zip(expected)
        .zip(bases)
        .zip(exponents)
        .enumerate()
    {
        let (got, want) = (complex(actual), complex(expected));
        let (base, exponent) = (complex(base), complex(exponent));
        let log_magnitude = base.norm().ln().abs();
        let condition = 1.0 + exponent.norm() * (log_magnitude + std::f64::consts::PI);
        let bound = 16.0 * epsilon * want.norm() * condition;
        // An overflowed |x^y| times cos r or sin r is an infinity whose sign is that of cos r
        // or sin r, which the real functions' errors flip when r is large: only the kind of
        // each part (infinite, NaN) must match then.
        if want.norm().is_infinite() {
            let kind = |x: f64| (x.is_infinite(), x.is_nan());
            if kind(got.re) == kind(want.re) && kind(got.im) == kind(want.im) {
                continue;
            }
        }
        let part_matches = |a: f64, e: f64| {
            non_finite_match(a, e).unwrap_or_else(|| a == e || (a - e).abs() <= bound)
        };
        if !(part_matches(got.re, want.re) && part_matches(got.im, want.im)) {
            return Err(format!(
                "element {index}: got {got}, expected {want} (bound {bound:e})"
            ));
        }
    }
    Ok(())
}

fn check_unary(
    op: UnaryOp,
    dtype: DType,
    shape: &[usize],
    view: ViewKind,
    rng: &mut SplitMix,
) -> Result<(), String> {
    let device = device();
    let (input, values) = make_input(&device, dtype, shape, view, unary_domain(op), rng);
    let types = unary_types(op, dtype, &[]).unwrap();
    let output = ops::unary(op, &input).map_err(|error| error.to_string())?;
    let label = format!("{} on {dtype} {shape:?} ({view:?})", op.name());
    if output.shape() != shape || output.dtype() != types.result {
        return Err(format!(
            "{label}: result {:?} {}",
            output.shape(),
            output.dtype()
        ));
    }
    let expected: Vec<Value> = values
        .iter()
        .map(|&a| {
            reference::unary(op, types.compute, reference::round_to(a, types.compute)).unwrap()
        })
        .collect();
    let expected = reference::decode(
        types.result,
        &reference::encode(types.result, &expected),
        expected.len(),
    )
    .unwrap();
    let tolerance = tolerance(op.name(), op.spec().exact, types.compute, types.result);
    check_all(
        ulp_type(types.result),
        tolerance,
        &read(&output),
        &expected,
        &[&values],
    )
    .map_err(|why| format!("{label}: {why}"))
}

/// Cases per property: 24 in CI (the whole crate's tests stay within seconds on lavapipe);
/// `NXVK_TEST_CASES=2000` soaks them.
fn cases() -> u32 {
    std::env::var("NXVK_TEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(24)
}

/// The dtypes with kernels: the native ones and the complex ones.
fn native() -> Vec<DType> {
    ops::native_dtypes()
        .chain([DType::C64, DType::C128])
        .collect()
}

/// True when Nx accepts the operand types (`types`) and, for a complex compute type, the op has
/// a complex kernel (every complex op Nx defines has one; atan2 and cbrt are refused).
fn has_kernel_or_is_real(spec: nxvk_kernels::OpSpec, types: nxvk_core::Result<OpTypes>) -> bool {
    types.is_ok_and(|types| !types.compute.is_complex() || spec.glsl.complex.is_some())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn binary_ops_match_the_reference_on_every_native_dtype(case in case()) {
        let mut rng = SplitMix(case.seed);
        for &op in BinaryOp::ALL {
            for dtype in native() {
                if !has_kernel_or_is_real(op.spec(), binary_types(op, dtype, dtype, &[])) {
                    continue;
                }
                check_binary(op, dtype, dtype, &case, &mut rng).map_err(TestCaseError::fail)?;
            }
        }
    }

    #[test]
    fn unary_ops_match_the_reference_on_every_native_dtype(case in case()) {
        let mut rng = SplitMix(case.seed);
        for &op in UnaryOp::ALL {
            for dtype in native() {
                if !has_kernel_or_is_real(op.spec(), unary_types(op, dtype, &[])) {
                    continue;
                }
                check_unary(op, dtype, &case.shape, case.left_view, &mut rng).map_err(TestCaseError::fail)?;
            }
        }
    }

    #[test]
    fn mixed_dtypes_promote_and_cast_like_nx(case in case(), picks in prop::collection::vec((0..24usize, 0..14usize, 0..14usize), 12)) {
        let mut rng = SplitMix(case.seed);
        let dtypes = native();
        for (op, left, right) in picks {
            let op = BinaryOp::ALL[op];
            let (left, right) = (dtypes[left], dtypes[right]);
            if !has_kernel_or_is_real(op.spec(), binary_types(op, left, right, &[])) {
                continue;
            }
            check_binary(op, left, right, &case, &mut rng).map_err(TestCaseError::fail)?;
        }
    }

    /// Narrow types (sub-byte integers, 8-bit floats): every op, on two operands of the type
    /// and mixed with native and narrow types, runs on the GPU through wider native types
    /// (`ops.rs`, `narrow_widening`) and matches the reference computing in the narrow type;
    /// only the ops whose result depends on the width (count_leading_zeros,
    /// population_count) count host fallbacks.
    #[test]
    fn narrow_ops_match_the_reference_on_the_gpu(case in case()) {
        let mut rng = SplitMix(case.seed);
        let width_dependent = ["count_leading_zeros", "population_count"];
        let narrow = [DType::S2, DType::S4, DType::U2, DType::U4, DType::F8E5M2, DType::F8E4M3FN];
        for dtype in narrow {
            for &op in BinaryOp::ALL {
                for other in [dtype, DType::S8, DType::F32, DType::BF16, DType::S4, DType::F8E5M2] {
                    if binary_types(op, dtype, other, &[]).is_err() {
                        continue;
                    }
                    let before = common::fallbacks(op.name(), dtype);
                    check_binary(op, dtype, other, &case, &mut rng).map_err(TestCaseError::fail)?;
                    prop_assert_eq!(common::fallbacks(op.name(), dtype), before, "{} {}", op.name(), dtype);
                }
            }
            for &op in UnaryOp::ALL {
                if unary_types(op, dtype, &[]).is_err() {
                    continue;
                }
                let before = common::fallbacks(op.name(), dtype);
                check_unary(op, dtype, &case.shape, case.left_view, &mut rng).map_err(TestCaseError::fail)?;
                if !width_dependent.contains(&op.name()) {
                    prop_assert_eq!(common::fallbacks(op.name(), dtype), before, "{} {}", op.name(), dtype);
                }
            }
        }
    }

    #[test]
    fn casts_match_nx_as_type_between_every_native_pair(case in case()) {
        let device = device();
        let mut rng = SplitMix(case.seed);
        for from in native() {
            for to in native() {
                let (input, values) = make_input(&device, from, &case.shape, case.left_view, Domain::Wide, &mut rng);
                let output = ops::as_type(&input, to).map_err(|error| TestCaseError::fail(error.to_string()))?;
                let expected = reference::decode(to, &reference::encode(to, &values), values.len()).unwrap();
                check_all(ulp_type(to), Tolerance::Exact, &read(&output), &expected, &[&values])
                    .map_err(|why| TestCaseError::fail(format!("as_type {from} -> {to}: {why}")))?;
            }
        }
    }
}

#[test]
fn the_complex_pow_check_rejects_a_wrong_result() {
    // Null arm of `check_complex_pow`: (1 + i)^2 = 2i; swapped parts, a relative error of
    // 1e-4 and a NaN part all fail, the exact value passes.
    let complex = |re: f64, im: f64| Value::Complex(nxvk_core::Complex64::new(re, im));
    let (base, exponent, expected) = (
        [complex(1.0, 1.0)],
        [complex(2.0, 0.0)],
        [complex(0.0, 2.0)],
    );
    let check =
        |actual: Value| check_complex_pow(DType::C64, &[actual], &expected, &base, &exponent);
    assert!(check(complex(0.0, 2.0)).is_ok());
    assert!(check(complex(2.0, 0.0)).is_err());
    assert!(check(complex(0.0, 2.0002)).is_err());
    assert!(check(complex(f64::NAN, 2.0)).is_err());
}

#[test]
fn rank_zero_and_empty_tensors() {
    let device = device();
    let two = Tensor::from_slice(&device, &[], &[2.0f32]).unwrap();
    let vector = Tensor::from_slice(&device, &[3], &[1.0f32, -4.0, 0.5]).unwrap();
    let product = ops::multiply(&two, &vector).unwrap();
    assert_eq!(product.to_vec::<f32>().unwrap(), vec![2.0, -8.0, 1.0]);
    let scalar = ops::exp(&Tensor::from_slice(&device, &[], &[0i32]).unwrap()).unwrap();
    assert_eq!(
        (scalar.shape().to_vec(), scalar.to_vec::<f32>().unwrap()),
        (vec![], vec![1.0])
    );

    let empty = Tensor::from_slice::<f32>(&device, &[2, 0], &[]).unwrap();
    let sum = ops::add(
        &empty,
        &Tensor::from_slice(&device, &[1], &[1.0f32]).unwrap(),
    )
    .unwrap();
    let cast = ops::as_type(&empty, DType::S8).unwrap();
    assert_eq!(
        (sum.shape(), cast.shape(), cast.dtype()),
        (&[2, 0][..], &[2, 0][..], DType::S8)
    );
}

#[test]
fn bad_operands_are_errors_naming_op_shapes_and_dtypes() {
    let device = device();
    let a = Tensor::from_slice(&device, &[2, 3], &[0f32; 6]).unwrap();
    let b = Tensor::from_slice(&device, &[4], &[0i32; 4]).unwrap();
    let message = ops::add(&a, &b).unwrap_err().to_string();
    assert!(
        message.contains("add")
            && message.contains("[2, 3]")
            && message.contains("[4]")
            && message.contains("32"),
        "{message}"
    );
    let message = ops::bitwise_and(&a, &a).unwrap_err().to_string();
    assert!(
        message.contains("bitwise_and") && message.contains("32"),
        "{message}"
    );
    let message = ops::remainder(
        &Tensor::from_slice(&device, &[1], &[nxvk_core::Complex32::new(1.0, 1.0)]).unwrap(),
        &a,
    )
    .unwrap_err()
    .to_string();
    assert!(
        message.contains("remainder") && message.contains("not complex"),
        "{message}"
    );
}

#[test]
fn known_values_follow_nx_semantics() {
    let device = device();
    let ints = Tensor::from_slice(&device, &[4], &[-7i32, 7, i32::MIN, 5]).unwrap();
    let divisors = Tensor::from_slice(&device, &[4], &[2i32, -2, -1, 0]).unwrap();
    assert_eq!(
        ops::remainder(&ints, &divisors)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![-1, 1, 0, 0]
    );
    assert_eq!(
        ops::quotient(&ints, &divisors)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![-3, -3, i32::MIN, 0]
    );
    let floats =
        Tensor::from_slice(&device, &[6], &[-2.5f32, -0.5, 0.5, 2.5, -0.3, f32::NAN]).unwrap();
    let rounded = ops::round(&floats).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(&rounded[..5], &[-3.0, -1.0, 1.0, 3.0, 0.0]);
    assert!(rounded[4].is_sign_positive() && rounded[5].is_nan());
    let nan = Tensor::from_slice(&device, &[2], &[f32::NAN, 1.0]).unwrap();
    let one = Tensor::from_slice(&device, &[2], &[1.0f32, f32::NAN]).unwrap();
    let max = ops::max(&nan, &one).unwrap().to_vec::<f32>().unwrap();
    assert!(max[0].is_nan() && max[1].is_nan());
    let mixed = ops::add(
        &Tensor::from_slice(&device, &[2], &[200u8, 255]).unwrap(),
        &Tensor::from_slice(&device, &[2], &[-100i8, 127]).unwrap(),
    )
    .unwrap();
    assert_eq!(mixed.dtype(), DType::S16);
    assert_eq!(mixed.to_vec::<i16>().unwrap(), vec![100, 382]);
    let cast = ops::as_type(
        &Tensor::from_slice(&device, &[4], &[f32::NAN, f32::INFINITY, -1.0e10, 300.7]).unwrap(),
        DType::U8,
    )
    .unwrap();
    assert_eq!(cast.to_vec::<u8>().unwrap(), vec![0, 255, 0, 44]);
}

#[test]
fn coverage_fallback_cells_are_all_allowlisted() {
    let device = device();
    let rows = nxvk_kernels::coverage::coverage(device.capabilities());
    let unlisted: Vec<String> = rows
        .iter()
        .flat_map(|row| {
            row.cells
                .iter()
                .map(move |(dtype, cell)| (row.op, dtype, cell))
        })
        .filter(|(_, _, cell)| {
            matches!(
                cell,
                nxvk_kernels::coverage::Cell::Fallback { allowlisted: false }
            )
        })
        .map(|(op, dtype, _)| format!("{op} {dtype}"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "fallbacks missing from fallback_allowlist.txt: {unlisted:?}"
    );
    // Null arm: an (op, dtype) that has a GPU path is not on the list.
    assert!(!nxvk_kernels::is_allowlisted("add", DType::F32));
    assert!(nxvk_kernels::is_allowlisted("sum", DType::S4));
    assert!(!nxvk_kernels::is_allowlisted("sum", DType::C64));
    assert!(!nxvk_kernels::is_allowlisted("exp", DType::F64));
}
