//! Complex (c64, c128) kernels on known values and the special values of Elixir's Complex
//! library, which Nx.BinaryBackend calls: the cases the random inputs of `elementwise.rs`
//! reach only by chance. Each check also proves the op ran on the GPU (no fallback counted).

mod common;

use common::*;
use nxvk_core::{Complex32, Complex64, DType, Tensor};
use nxvk_kernels::coverage::{Cell, coverage};
use nxvk_kernels::reference::Value;
use nxvk_kernels::{BinaryOp, UnaryOp, ops};

const INFINITY: f32 = f32::INFINITY;
const NAN: f32 = f32::NAN;

fn c64_tensor(values: &[(f32, f32)]) -> Tensor {
    let values: Vec<Complex32> = values
        .iter()
        .map(|&(re, im)| Complex32::new(re, im))
        .collect();
    Tensor::from_slice(&device(), &[values.len()], &values).unwrap()
}

/// Same bits, except that any NaN matches any NaN.
fn same(actual: f32, expected: f32) -> bool {
    actual.to_bits() == expected.to_bits() || (actual.is_nan() && expected.is_nan())
}

fn assert_c64(actual: &[(f32, f32)], expected: &[(f32, f32)], what: &str) {
    let matches = actual.len() == expected.len()
        && actual
            .iter()
            .zip(expected)
            .all(|(a, e)| same(a.0, e.0) && same(a.1, e.1));
    assert!(matches, "{what}: got {actual:?}, expected {expected:?}");
}

/// Runs `run`, asserting that it counted no host fallback of `op` on `dtype`.
fn on_gpu<T>(op: &str, dtype: DType, run: impl FnOnce() -> T) -> T {
    let before = fallbacks(op, dtype);
    let result = run();
    assert_eq!(fallbacks(op, dtype), before, "{op} on {dtype} fell back");
    result
}

#[test]
fn arithmetic_follows_the_complex_library() {
    let left = c64_tensor(&[
        (1.0, 2.0),
        (1.0, 2.0),
        (3.0, 4.0),
        (INFINITY, 0.0),
        (0.0, 0.0),
    ]);
    let right = c64_tensor(&[
        (3.0, 4.0),
        (INFINITY, 0.0),
        (0.0, 0.0),
        (2.0, 0.0),
        (0.0, 0.0),
    ]);
    let product = on_gpu("multiply", DType::C64, || {
        ops::multiply(&left, &right).unwrap()
    });
    assert_c64(
        &c64_values(&product),
        &[
            (-5.0, 10.0),
            (INFINITY, INFINITY),
            (0.0, 0.0),
            (INFINITY, NAN),
            (0.0, 0.0),
        ],
        "multiply",
    );
    let quotient = on_gpu("divide", DType::C64, || ops::divide(&left, &right).unwrap());
    // (1+2i)/(3+4i) = (11+2i)/25; a finite dividend over (Inf, 0) is 0 (the library's clause);
    // over 0 both parts are 0/0; (Inf, 0)/2 is (Inf, NaN) from Inf*0 in the numerator's
    // imaginary part.
    assert_c64(
        &c64_values(&quotient),
        &[
            (11.0 / 25.0, 2.0 / 25.0),
            (0.0, 0.0),
            (NAN, NAN),
            (INFINITY, NAN),
            (NAN, NAN),
        ],
        "divide",
    );
    let sum = on_gpu("add", DType::C64, || ops::add(&left, &right).unwrap());
    assert_eq!(c64_values(&sum)[0], (4.0, 6.0));
    let negated = on_gpu("negate", DType::C64, || ops::negate(&left).unwrap());
    assert_eq!(c64_values(&negated)[2], (-3.0, -4.0));
    let conjugate = on_gpu("conjugate", DType::C64, || ops::conjugate(&left).unwrap());
    assert_eq!(c64_values(&conjugate)[2], (3.0, -4.0));
}

/// Within `ulps` ulps of f32 per part (NaN matches NaN, infinities must be equal).
fn assert_c64_near(actual: &[(f32, f32)], expected: &[(f32, f32)], ulps: u64, what: &str) {
    let tolerance = Tolerance::Ulps {
        ulps,
        absolute: 1e-7,
    };
    let values = |pairs: &[(f32, f32)]| -> Vec<Value> {
        pairs
            .iter()
            .map(|&(re, im)| Value::Complex(Complex64::new(f64::from(re), f64::from(im))))
            .collect()
    };
    let checked = check_all(
        DType::F32,
        tolerance,
        &values(actual),
        &values(expected),
        &[],
    );
    assert!(checked.is_ok(), "{what}: {checked:?}");
}

#[test]
fn transcendentals_keep_the_complex_library_special_values() {
    let pi = std::f32::consts::PI;
    let input = c64_tensor(&[
        (0.0, pi),
        (INFINITY, 0.0),
        (-INFINITY, NAN),
        (-1.0, 0.0),
        (-INFINITY, -1.0),
    ]);
    let exp = on_gpu("exp", DType::C64, || ops::exp(&input).unwrap());
    // e^(i pi) = -1 (+ a rounding of sin pi); at Re = +Inf the signs of cos and sin of the
    // imaginary part pick +-Inf, and 0 gives NaN; at Re = -Inf the result is 0.
    assert_c64_near(
        &c64_values(&exp),
        &[
            (-1.0, -8.742278e-8),
            (INFINITY, NAN),
            (0.0, 0.0),
            ((-1.0f32).exp(), 0.0),
            (0.0, 0.0),
        ],
        2,
        "exp",
    );
    let log = on_gpu("log", DType::C64, || ops::log(&input).unwrap());
    // log(-1) = i pi; a finite imaginary part over Re = -Inf has phase +pi whatever its sign
    // (C's atan2 would give -pi for (-Inf, -1)).
    let log = c64_values(&log);
    assert_c64_near(&log[3..], &[(0.0, pi), (INFINITY, pi)], 2, "log");
    let sqrt = on_gpu("sqrt", DType::C64, || ops::sqrt(&input).unwrap());
    assert_c64(
        &c64_values(&sqrt)[1..],
        &[(INFINITY, 0.0), (NAN, NAN), (0.0, 1.0), (0.0, INFINITY)],
        "sqrt",
    );
    let infinite_imaginary = c64_tensor(&[(1.0, INFINITY), (0.0, INFINITY)]);
    let sin = on_gpu("sin", DType::C64, || ops::sin(&infinite_imaginary).unwrap());
    // (re * Inf, Inf): 0 * Inf is NaN.
    assert_c64(
        &c64_values(&sin),
        &[(INFINITY, INFINITY), (NAN, INFINITY)],
        "sin",
    );
    let cos = on_gpu("cos", DType::C64, || ops::cos(&infinite_imaginary).unwrap());
    assert_c64(
        &c64_values(&cos),
        &[(INFINITY, -INFINITY), (INFINITY, NAN)],
        "cos",
    );
    let small = c64_tensor(&[(0.5, -0.25)]);
    let tanh = on_gpu("tanh", DType::C64, || ops::tanh(&small).unwrap());
    let expected = Complex64::new(0.5, -0.25).tanh();
    assert_c64_near(
        &c64_values(&tanh),
        &[(expected.re as f32, expected.im as f32)],
        16,
        "tanh",
    );
}

#[test]
fn pow_follows_the_complex_library() {
    let bases = c64_tensor(&[
        (0.0, 0.0),
        (-0.0, 0.0),
        (0.0, 0.0),
        (2.0, 3.0),
        (2.0, 3.0),
        (INFINITY, 0.0),
        (1.0, NAN),
        (1.0, 1.0),
        (0.0, 0.0),
    ]);
    let exponents = c64_tensor(&[
        (0.0, -0.0),
        (2.0, 1.0),
        (INFINITY, 0.0),
        (1.0, 0.0),
        (-1.0, 0.0),
        (2.0, 0.0),
        (2.0, 0.0),
        (2.0, 0.0),
        (INFINITY, 1.0),
    ]);
    let power = on_gpu("pow", DType::C64, || ops::pow(&bases, &exponents).unwrap());
    let power = c64_values(&power);
    // 0^0 is 1 (-0.0 counts as 0), 0 to any other power 0, also to (+Inf, 0); exponents 1
    // and -1 are x and Complex.divide(1, x); a non-finite part anywhere else gives NaN.
    assert_c64(
        &power[..7],
        &[
            (1.0, 0.0),
            (0.0, 0.0),
            (0.0, 0.0),
            (2.0, 3.0),
            (2.0 / 13.0, -3.0 / 13.0),
            (NAN, NAN),
            (NAN, NAN),
        ],
        "pow special values",
    );
    assert_c64(&power[8..], &[(NAN, NAN)], "pow of 0 to (Inf, 1)");
    // (1 + i)^2 = 2i through |x|^2 (cos 2 phase + i sin 2 phase): cos(pi/2 in f32) is -4e-8.
    assert_c64_near(&power[7..8], &[(0.0, 2.0)], 4, "pow (1 + i)^2");
    // i^i = e^(-pi/2) in c128.
    let device = device();
    let i = Tensor::from_slice(&device, &[1], &[Complex64::new(0.0, 1.0)]).unwrap();
    let i_to_the_i = on_gpu("pow", DType::C128, || ops::pow(&i, &i).unwrap());
    let i_to_the_i = i_to_the_i.to_vec::<Complex64>().unwrap()[0];
    let expected = (-std::f64::consts::FRAC_PI_2).exp();
    assert!(
        (i_to_the_i.re - expected).abs() <= 4.0 * f64::EPSILON * expected
            && i_to_the_i.im.abs() <= 4.0 * f64::EPSILON,
        "i^i = {i_to_the_i}, expected {expected}"
    );
    // A real tensor promotes to complex: 4^(0.5 + 0i) = 2.
    let four = Tensor::from_slice(&device, &[1], &[4.0f32]).unwrap();
    let half = c64_tensor(&[(0.5, 0.0)]);
    let root = on_gpu("pow", DType::C64, || ops::pow(&four, &half).unwrap());
    assert_c64_near(&c64_values(&root), &[(2.0, 0.0)], 2, "pow f32 by c64");
}

/// The host reference of `op` on c64 `values`, rounded to c64.
fn c64_reference(op: UnaryOp, values: &[(f32, f32)]) -> Vec<(f32, f32)> {
    values
        .iter()
        .map(|&(re, im)| {
            let input = Value::Complex(Complex64::new(f64::from(re), f64::from(im)));
            match nxvk_kernels::reference::unary(op, DType::C64, input) {
                Some(Value::Complex(z)) => (z.re as f32, z.im as f32),
                other => panic!("{} reference gave {other:?}", op.name()),
            }
        })
        .collect()
}

#[test]
fn rsqrt_sigmoid_and_log1p_keep_signed_zeros_and_infinities() {
    // The values where lavapipe folded a literal zero (0 * Inf, -0 + 0): the kernels must
    // match the reference bit for bit there (the last two only within the ulp bounds, which
    // the proptests check).
    let special = [
        (-INFINITY, 0.0),
        (INFINITY, 0.0),
        (-2.0, -0.0),
        (-1.0, -0.0),
        (-0.0, -0.0),
        (0.0, INFINITY),
        (-4.0, 0.0),
        (NAN, 1.0),
        (1.0e30, -1.0e30),
        (-100.0, 3.0),
    ];
    let input = c64_tensor(&special);
    let wide: Vec<Complex64> = special
        .iter()
        .map(|&(re, im)| Complex64::new(f64::from(re), f64::from(im)))
        .collect();
    let wide_input = Tensor::from_slice(&device(), &[wide.len()], &wide).unwrap();
    // Same bits, any NaN matching any NaN.
    let same_c128 = |a: Complex64, e: Complex64| {
        let part = |x: f64, y: f64| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
        part(a.re, e.re) && part(a.im, e.im)
    };
    for op in [UnaryOp::Rsqrt, UnaryOp::Sigmoid, UnaryOp::Log1p] {
        let output = on_gpu(op.name(), DType::C64, || ops::unary(op, &input).unwrap());
        assert_c64(
            &c64_values(&output)[..8],
            &c64_reference(op, &special)[..8],
            op.name(),
        );
        // c128 takes the f64 bit manipulation of `nx_zero_times` and `nx_plus_zero`.
        let output = on_gpu(op.name(), DType::C128, || {
            ops::unary(op, &wide_input).unwrap()
        });
        let output = output.to_vec::<Complex64>().unwrap();
        for (index, (&actual, &value)) in output.iter().zip(&wide).enumerate().take(8) {
            let expected = nxvk_kernels::reference::unary(op, DType::C128, Value::Complex(value));
            assert!(
                matches!(expected, Some(Value::Complex(e)) if same_c128(actual, e)),
                "{} c128 element {index}: got {actual}, expected {expected:?}",
                op.name()
            );
        }
    }
    // Known values: rsqrt(-4) = 1 / 2i = -0.5i (with +0 real part); log1p(-2 - 0i) =
    // log(-1 + 0i) = i pi (Elixir's -0.0 + 0 is +0, so the phase is +pi, not -pi);
    // sigmoid(0) = 1/2; rsqrt(-Inf) is NaN from 0 * Inf in 1 / (0 + Inf i).
    let rsqrt = c64_values(&ops::rsqrt(&input).unwrap());
    assert_c64(&[rsqrt[0], rsqrt[6]], &[(NAN, NAN), (0.0, -0.5)], "rsqrt");
    let log1p = c64_values(&ops::log1p(&input).unwrap());
    assert_c64_near(&log1p[2..3], &[(0.0, std::f32::consts::PI)], 2, "log1p");
    let sigmoid = c64_values(&ops::sigmoid(&input).unwrap());
    assert_c64(&sigmoid[4..5], &[(0.5, 0.0)], "sigmoid");
}

#[test]
fn inverse_functions_follow_the_complex_library() {
    use UnaryOp::{Acos, Acosh, Asin, Asinh, Atan, Atanh};
    // Signed zeros and non-finite parts exactly as the reference; then known values.
    let special = [(-0.0, -0.0), (0.0, 0.0), (INFINITY, 0.0), (0.5, NAN)];
    let input = c64_tensor(&special);
    for op in [Asin, Acos, Atan, Asinh, Acosh, Atanh] {
        let output = on_gpu(op.name(), DType::C64, || ops::unary(op, &input).unwrap());
        assert_c64(
            &c64_values(&output),
            &c64_reference(op, &special),
            op.name(),
        );
    }
    let known = c64_tensor(&[(0.5, 0.0), (2.0, 0.0), (1.0, 0.0)]);
    let value = |op: UnaryOp, index: usize| {
        let output = on_gpu(op.name(), DType::C64, || ops::unary(op, &known).unwrap());
        c64_values(&output)[index]
    };
    let expected = [
        (Asin, 0, (0.5f32.asin(), 0.0)),
        // acos(2) = -i log(2 + sqrt 3): the library's branch has a negative imaginary part.
        (Acos, 1, (0.0, -(2.0f32 + 3.0f32.sqrt()).ln())),
        (Atan, 2, (std::f32::consts::FRAC_PI_4, 0.0)),
        (Asinh, 2, (1.0f32.asinh(), 0.0)),
        (Acosh, 1, (2.0f32.acosh(), 0.0)),
        (Atanh, 0, (0.5f32.atanh(), 0.0)),
    ];
    for (op, index, expected) in expected {
        assert_c64_near(&[value(op, index)], &[expected], 4, op.name());
    }
}

#[test]
fn cbrt_follows_the_complex_library() {
    // from_polar(|z|^(1/3), phase / 3): 8 -> 2 (a zero angle gives +0i), -8 -> 2 e^(i pi/3),
    // 0 -> 0; Complex.phase's special values: (-Inf, -Inf) has phase 5pi/4 (so (Inf, Inf)),
    // (Inf, 1) phase 0, (1, Inf) phase pi/2; a NaN phase (where BinaryBackend raises) is NaN.
    let input = c64_tensor(&[
        (8.0, -0.0),
        (-8.0, 0.0),
        (0.0, 0.0),
        (-INFINITY, -INFINITY),
        (INFINITY, 1.0),
        (1.0, INFINITY),
        (NAN, 1.0),
    ]);
    let result = c64_values(&on_gpu("cbrt", DType::C64, || ops::cbrt(&input).unwrap()));
    let third = std::f64::consts::FRAC_PI_3;
    assert_c64_near(
        &result[..2],
        &[
            (2.0, 0.0),
            ((2.0 * third.cos()) as f32, (2.0 * third.sin()) as f32),
        ],
        4,
        "cbrt of reals",
    );
    assert_c64(
        &result[2..],
        &[
            (0.0, 0.0),
            (INFINITY, INFINITY),
            (INFINITY, 0.0),
            (INFINITY, INFINITY),
            (NAN, NAN),
        ],
        "cbrt special values",
    );
    assert!(
        result[0].1.to_bits() == 0,
        "a zero angle gives +0i: {:?}",
        result[0]
    );
}

#[test]
fn abs_real_and_imag_are_real_results() {
    let input = c64_tensor(&[
        (3.0, -4.0),
        (NAN, 1.0),
        (NAN, NAN),
        (-INFINITY, 2.0),
        (0.0, -2.5),
    ]);
    let abs = on_gpu("abs", DType::C64, || ops::abs(&input).unwrap());
    assert_eq!(abs.dtype(), DType::F32);
    let abs = abs.to_vec::<f32>().unwrap();
    // Complex.abs: +Inf when a part is NaN or infinite, NaN only when both are NaN.
    assert!(
        abs[0] == 5.0 && abs[1] == INFINITY && abs[2].is_nan(),
        "{abs:?}"
    );
    assert_eq!(&abs[3..], &[INFINITY, 2.5]);
    let real = on_gpu("real", DType::C64, || ops::real(&input).unwrap());
    let imag = on_gpu("imag", DType::C64, || ops::imag(&input).unwrap());
    assert_eq!(real.to_vec::<f32>().unwrap()[0], 3.0);
    assert_eq!(imag.to_vec::<f32>().unwrap()[4], -2.5);
}

#[test]
fn predicates_compare_like_elixir_terms() {
    let left = c64_tensor(&[(NAN, 1.0), (NAN, 1.0), (0.0, -0.0), (1.0, 2.0), (0.0, NAN)]);
    let right = c64_tensor(&[(NAN, 1.0), (NAN, 2.0), (-0.0, 0.0), (1.0, -2.0), (0.0, 0.0)]);
    let u8s = |tensor: Tensor| {
        assert_eq!(tensor.dtype(), DType::U8);
        tensor.to_vec::<u8>().unwrap()
    };
    // A NaN part equals a NaN part (both are the atom :nan to the BinaryBackend).
    let equal = on_gpu("equal", DType::C64, || ops::equal(&left, &right).unwrap());
    assert_eq!(u8s(equal), vec![1, 0, 1, 0, 0]);
    let not_equal = on_gpu("not_equal", DType::C64, || {
        ops::not_equal(&left, &right).unwrap()
    });
    assert_eq!(u8s(not_equal), vec![0, 1, 0, 1, 1]);
    let is_nan = on_gpu("is_nan", DType::C64, || ops::is_nan(&left).unwrap());
    assert_eq!(u8s(is_nan), vec![1, 1, 0, 0, 1]);
    let infinite = c64_tensor(&[(1.0, -INFINITY), (INFINITY, NAN), (NAN, 0.0)]);
    let is_infinity = on_gpu("is_infinity", DType::C64, || {
        ops::is_infinity(&infinite).unwrap()
    });
    assert_eq!(u8s(is_infinity), vec![1, 1, 0]);
    // Zero is (0, 0) with either sign; a NaN part is true.
    let not = on_gpu("logical_not", DType::C64, || {
        ops::logical_not(&left).unwrap()
    });
    assert_eq!(u8s(not), vec![0, 0, 1, 0, 0]);
    let and = on_gpu("logical_and", DType::C64, || {
        ops::logical_and(&left, &right).unwrap()
    });
    assert_eq!(u8s(and), vec![1, 1, 0, 1, 0]);
}

#[test]
fn casts_put_zero_imaginary_parts_and_take_real_parts() {
    let device = device();
    let reals = Tensor::from_slice(&device, &[3], &[1.5f64, -0.0, f64::NAN]).unwrap();
    let complex = on_gpu("as_type", DType::F64, || {
        ops::as_type(&reals, DType::C64).unwrap()
    });
    assert_c64(
        &c64_values(&complex),
        &[(1.5, 0.0), (-0.0, 0.0), (NAN, 0.0)],
        "f64 -> c64",
    );
    let input = c64_tensor(&[(-2.75, 9.0), (300.5, -1.0), (NAN, 1.0)]);
    let integers = on_gpu("as_type", DType::C64, || {
        ops::as_type(&input, DType::S8).unwrap()
    });
    // The real part truncated and wrapped as f32 -> s8 would be: 300 wraps to 44, NaN is 0.
    assert_eq!(integers.to_vec::<i8>().unwrap(), vec![-2, 44, 0]);
    let wide = on_gpu("as_type", DType::C64, || {
        ops::as_type(&input, DType::C128).unwrap()
    });
    assert_eq!(
        wide.to_vec::<Complex64>().unwrap()[0],
        Complex64::new(-2.75, 9.0)
    );
}

#[test]
fn c128_divides_in_f64() {
    let device = device();
    let third = Complex64::new(1.0, 0.0) / Complex64::new(3.0, 0.0);
    let left = Tensor::from_slice(&device, &[1], &[Complex64::new(1.0, 1.0)]).unwrap();
    let right = Tensor::from_slice(&device, &[], &[Complex64::new(3.0, 0.0)]).unwrap();
    let quotient = on_gpu("divide", DType::C128, || {
        ops::divide(&left, &right).unwrap()
    });
    let quotient = quotient.to_vec::<Complex64>().unwrap();
    assert_eq!(quotient, vec![Complex64::new(third.re, third.re)]);
}

#[test]
fn the_comparison_rejects_a_wrong_result() {
    // Null arm: the checks of `elementwise.rs` fail on a result off by 3 ulps of f32 in one
    // part, on swapped parts, and on a NaN where a number belongs.
    let expected = Value::Complex(Complex64::new(1.0, -2.0));
    let off = Value::Complex(Complex64::new(
        f64::from(f32::from_bits(1.0f32.to_bits() + 3)),
        -2.0,
    ));
    let two_ulps = Tolerance::Ulps {
        ulps: 2,
        absolute: 0.0,
    };
    assert!(check_value(DType::F32, two_ulps, off, expected).is_err());
    assert!(check_value(DType::F32, Tolerance::Exact, off, expected).is_err());
    let swapped = Value::Complex(Complex64::new(-2.0, 1.0));
    assert!(check_value(DType::F32, two_ulps, swapped, expected).is_err());
    let nan = Value::Complex(Complex64::new(f64::NAN, -2.0));
    assert!(check_value(DType::F32, two_ulps, nan, expected).is_err());
    // And the GPU's conjugate is not the reference's negate.
    let input = c64_tensor(&[(1.0, 2.0)]);
    let conjugate = read(&ops::conjugate(&input).unwrap());
    let negate = read(&ops::negate(&input).unwrap());
    assert!(check_all(DType::F32, Tolerance::Exact, &conjugate, &negate, &[]).is_err());
}

#[test]
fn coverage_has_gpu_complex_cells_and_keeps_nx_errors() {
    let rows = coverage(device().capabilities());
    let cell = |op: &str, dtype: DType| {
        rows.iter()
            .find(|row| row.op == op)
            .and_then(|row| {
                row.cells
                    .iter()
                    .find(|(cell_dtype, _)| *cell_dtype == dtype)
            })
            .map(|(_, cell)| *cell)
            .unwrap()
    };
    for dtype in [DType::C64, DType::C128] {
        for op in BinaryOp::ALL
            .iter()
            .filter(|op| op.spec().glsl.complex.is_some())
        {
            assert_eq!(cell(op.name(), dtype), Cell::Gpu, "{} {dtype}", op.name());
        }
        for op in UnaryOp::ALL
            .iter()
            .filter(|op| op.spec().glsl.complex.is_some())
        {
            assert_eq!(cell(op.name(), dtype), Cell::Gpu, "{} {dtype}", op.name());
        }
        // Nx raises on these for complex operands: errors, not kernels or fallbacks.
        for op in ["max", "min", "remainder", "bitwise_and", "less", "erf"] {
            assert_eq!(cell(op, dtype), Cell::Undefined, "{op} {dtype}");
        }
    }
    let refused = ops::max(&c64_tensor(&[(1.0, 0.0)]), &c64_tensor(&[(2.0, 0.0)]));
    let message = refused.unwrap_err().to_string();
    assert!(
        message.contains("max") && message.contains("not complex"),
        "{message}"
    );
}
