//! Complex (c64, c128) matrices for the linear-algebra tests: random values rounded to the
//! dtype, upload and read-back as f64 complex numbers, and a per-part comparison.

use super::{SplitMix, device, read};
use nxvk_core::{Complex64, DType, Tensor};
use nxvk_kernels::reference::{self, Value};

/// The complex number `value` as `dtype` holds it (c64 rounds each part to f32).
pub fn rounded_complex(dtype: DType, value: Complex64) -> Complex64 {
    match reference::round_to(Value::Complex(value), dtype) {
        Value::Complex(rounded) => rounded,
        other => panic!("{other:?}"),
    }
}

/// A random complex number with parts in [-scale, scale], representable in `dtype`.
pub fn random_complex(dtype: DType, rng: &mut SplitMix, scale: f64) -> Complex64 {
    let value = Complex64::new(
        scale * (rng.unit() * 2.0 - 1.0),
        scale * (rng.unit() * 2.0 - 1.0),
    );
    rounded_complex(dtype, value)
}

pub fn as_complex(value: Value) -> Complex64 {
    match value {
        Value::Complex(z) => z,
        other => panic!("{other:?}"),
    }
}

pub fn upload_complex(dtype: DType, shape: &[usize], values: &[Complex64]) -> Tensor {
    let values: Vec<Value> = values.iter().map(|&z| Value::Complex(z)).collect();
    Tensor::from_bytes(&device(), dtype, shape, &reference::encode(dtype, &values)).unwrap()
}

/// The elements of a complex tensor as f64 complex numbers, row-major.
pub fn complex_values(tensor: &Tensor) -> Vec<Complex64> {
    read(tensor).into_iter().map(as_complex).collect()
}

/// The component precision of a complex dtype (f32's for c64, f64's for c128).
pub fn component_epsilon(dtype: DType) -> f64 {
    super::epsilon(if dtype == DType::C64 {
        DType::F32
    } else {
        DType::F64
    })
}

/// The first element whose real or imaginary part differs from `expected` by more than
/// `bound`, described (a NaN part always differs); `None` when all agree.
pub fn complex_mismatch(
    actual: &[Complex64],
    expected: &[Complex64],
    bound: f64,
) -> Option<String> {
    if actual.len() != expected.len() {
        return Some(format!(
            "{} values, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    actual
        .iter()
        .zip(expected)
        .enumerate()
        .find(|(_, (got, wanted))| {
            !((got.re - wanted.re).abs() <= bound && (got.im - wanted.im).abs() <= bound)
        })
        .map(|(index, (got, wanted))| {
            format!("element {index}: {got} against {wanted} (bound {bound:e})")
        })
}
