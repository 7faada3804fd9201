//! The comparison shared by the GEMM-based tests (dot, conv): integers exactly; floats against
//! an f64 reference within `(k + 2) * eps(accumulator) * sum|products|` (the error bound of a
//! length-k sum; f32 accumulators for f16, bf16 and f32) plus one rounding to the result type;
//! complex numbers per part as real sums of depth 2k (`sum|products|` then sums the four real
//! products' magnitudes), non-finite parts by class.
//! Its includers also include `common`.
// Each test binary uses part of this module.
#![allow(dead_code)]

use crate::common::{check_lengths, epsilon, non_finite_match};
use nxvk_core::DType;
use nxvk_kernels::reference::{self, Value};

/// Checks one output element against the reference (see the module doc for the bound).
pub fn check(
    result: DType,
    actual: Value,
    expected: Value,
    magnitude: f64,
    k: usize,
) -> Result<(), String> {
    let fail = || {
        Err(format!(
            "got {actual:?}, expected {expected:?} ({result}, k = {k})"
        ))
    };
    match (actual, expected) {
        (Value::Int(x), Value::Int(y)) => {
            if x == y {
                Ok(())
            } else {
                fail()
            }
        }
        (Value::Float(x), Value::Float(y)) => {
            let rounded = match reference::round_to(Value::Float(y), result) {
                Value::Float(rounded) => rounded,
                _ => return fail(),
            };
            if let Some(same) = non_finite_match(x, rounded) {
                return if same { Ok(()) } else { fail() };
            }
            let accumulator = if result == DType::F64 {
                2f64.powi(-52)
            } else {
                2f64.powi(-23)
            };
            let quantum = match result {
                DType::F16 => 2f64.powi(-24),
                _ => 0.0,
            };
            let bound = (k as f64 + 2.0) * accumulator * magnitude
                + 2.0 * epsilon(result) * y.abs()
                + quantum;
            if (x - y).abs() <= bound {
                Ok(())
            } else {
                fail()
            }
        }
        (Value::Complex(x), Value::Complex(y)) => {
            // Per part: the same class (finite or not: the GEMM sums the same four real
            // products per complex one in another order, and BinaryBackend's NaN/Inf pattern is
            // not kept), finite parts within the bound of a real sum of depth 2k.
            let component = if result == DType::C128 {
                DType::F64
            } else {
                DType::F32
            };
            let rounded = match reference::round_to(Value::Complex(y), result) {
                Value::Complex(rounded) => rounded,
                _ => return fail(),
            };
            let parts = [(x.re, rounded.re, y.re), (x.im, rounded.im, y.im)];
            for (got, rounded, wanted) in parts {
                if !got.is_finite() || !rounded.is_finite() {
                    if got.is_finite() != rounded.is_finite() {
                        return fail();
                    }
                    continue;
                }
                let bound = (2.0 * k as f64 + 2.0) * epsilon(component) * magnitude
                    + 2.0 * epsilon(component) * wanted.abs();
                if (got - wanted).abs() > bound {
                    return fail();
                }
            }
            Ok(())
        }
        _ => fail(),
    }
}

pub fn check_all(
    result: DType,
    actual: &[Value],
    expected: &[Value],
    magnitudes: &[f64],
    k: usize,
) -> Result<(), String> {
    check_lengths(actual, expected)?;
    for (index, ((&got, &wanted), &magnitude)) in
        actual.iter().zip(expected).zip(magnitudes).enumerate()
    {
        check(result, got, wanted, magnitude, k)
            .map_err(|why| format!("element {index}: {why}"))?;
    }
    Ok(())
}
