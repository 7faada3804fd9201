//! Shared test support: one device per test binary, seeded value generators with special
//! values mixed in, strided-view construction, the host oracle and the comparison helpers.
// Each test binary uses part of this module.
#![allow(dead_code)]

use nxvk_core::{Context, DType, DTypeClass, Device, Layout, Tensor};
use nxvk_kernels::reference::{self, Value};
use std::sync::{Arc, OnceLock};

/// The poison word outputs are filled with before every kernel in tests (a NaN pattern for
/// floats, an unlikely integer).
pub const POISON: u32 = 0x7FBA_DBAD;

/// Host fallbacks counted so far for (op, dtype) on the shared device.
pub fn fallbacks(op: &str, dtype: DType) -> u64 {
    device()
        .counters()
        .host_fallbacks
        .get(&(op.to_owned(), dtype))
        .copied()
        .unwrap_or(0)
}

/// Cases per property: `NXVK_TEST_CASES` when set (to soak them), else `default`.
pub fn cases_or(default: u32) -> u32 {
    std::env::var("NXVK_TEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default)
}

/// Relative precision of a float type (f64's for anything else).
pub fn epsilon(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        DType::F32 => 2f64.powi(-23),
        _ => 2f64.powi(-52),
    }
}

/// One context per test binary: device creation costs time on lavapipe.
pub fn device() -> Arc<Device> {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    let context = CONTEXT.get_or_init(|| {
        nxvk_kernels::set_output_poison(Some(POISON));
        Context::new().expect("a Vulkan device (lavapipe in CI)")
    });
    context.device().expect("device")
}

pub mod complex_matrices;
pub mod movement_cases;
mod split_mix;
pub use split_mix::SplitMix;

impl SplitMix {
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The row-major coordinates of element `index` of `shape`.
pub fn coordinates(shape: &[usize], mut index: usize) -> Vec<usize> {
    let mut coordinates = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        coordinates[axis] = index % shape[axis];
        index /= shape[axis];
    }
    coordinates
}

/// The row-major index of the element at `coordinates` of `shape`.
pub fn linear(shape: &[usize], coordinates: &[usize]) -> usize {
    coordinates
        .iter()
        .zip(shape)
        .fold(0, |acc, (&coordinate, &size)| acc * size + coordinate)
}

/// Input ranges: ops with narrow domains get inputs where their results are meaningful.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Domain {
    /// Anything, extremes included.
    Wide,
    /// |x| up to 64 (trigonometric ops, whose range reduction is the driver's).
    Moderate,
    /// [-1, 1] (asin, acos, atanh, erf_inv).
    Unit,
    /// Small integers (shift counts, pow exponents).
    SmallInteger,
}

fn special_floats() -> [f64; 10] {
    [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.0,
    ]
}

/// One random value of `dtype` (already representable in it).
pub fn random_value(dtype: DType, domain: Domain, rng: &mut SplitMix) -> Value {
    let value = match dtype.class() {
        DTypeClass::SignedInt | DTypeClass::UnsignedInt => {
            let (min, max) = reference::integer_limits(dtype);
            Value::Int(match (domain, rng.below(8)) {
                (Domain::SmallInteger, _) => rng.below(12) as i128 - 2,
                (Domain::Moderate | Domain::Unit, _) if dtype.class() == DTypeClass::SignedInt => {
                    rng.below(129) as i128 - 64
                }
                (Domain::Moderate | Domain::Unit, _) => rng.below(65) as i128,
                (_, 0) => min,
                (_, 1) => max,
                (_, 2) => 0,
                (_, 3 | 4) => rng.below(21) as i128 - 10,
                _ => {
                    (rng.next() as i128 | ((rng.next() as i128) << 64)).rem_euclid(max - min + 1)
                        + min
                }
            })
        }
        DTypeClass::Float | DTypeClass::Complex => {
            // Both parts of a complex number are drawn alike, special values included.
            let mut float = || match (domain, rng.below(10)) {
                (Domain::SmallInteger, _) => rng.below(9) as f64 - 3.0,
                (_, 0 | 1) => special_floats()[rng.below(10) as usize],
                (Domain::Unit, _) => rng.unit() * 2.0 - 1.0,
                (Domain::Moderate, _) => rng.unit() * 128.0 - 64.0,
                (Domain::Wide, 2) => (rng.below(41) as f64 - 20.0) * 0.5,
                (Domain::Wide, 3) => f64::MAX * if rng.below(2) == 0 { 1.0 } else { -1.0 },
                (Domain::Wide, _) => {
                    let magnitude = 10f64.powf(rng.unit() * 12.0 - 6.0);
                    if rng.below(2) == 0 {
                        magnitude
                    } else {
                        -magnitude
                    }
                }
            };
            if dtype.is_complex() {
                let re = float();
                Value::Complex(nxvk_core::Complex64::new(re, float()))
            } else {
                Value::Float(float())
            }
        }
    };
    // Nx reads an E5M2 subnormal as a value it writes with other bits (`f8.rs`), so a value
    // rounded once may store as another: round until the value is one Nx writes and reads
    // back unchanged (at most four steps, up to the smallest normal).
    let mut value = reference::round_to(value, dtype);
    for _ in 0..4 {
        let again = reference::round_to(value, dtype);
        if again == value || matches!(value, Value::Float(float) if float.is_nan()) {
            break;
        }
        value = again;
    }
    value
}

/// How a test input is laid out in device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewKind {
    Contiguous,
    /// A transpose of a contiguous tensor of the reversed shape.
    Transposed,
    /// An interior slice of a tensor one larger on every axis.
    Sliced,
}

/// Every view kind, drawn with equal weight (proptest cases).
pub fn any_view_kind() -> impl proptest::strategy::Strategy<Value = ViewKind> {
    use proptest::strategy::Just;
    proptest::prop_oneof![
        Just(ViewKind::Contiguous),
        Just(ViewKind::Transposed),
        Just(ViewKind::Sliced)
    ]
}

/// A tensor of `shape` laid out as `view`, and its logical values in row-major order.
pub fn make_input(
    device: &Arc<Device>,
    dtype: DType,
    shape: &[usize],
    view: ViewKind,
    domain: Domain,
    rng: &mut SplitMix,
) -> (Tensor, Vec<Value>) {
    make_view_input(device, dtype, shape, view, || {
        random_value(dtype, domain, rng)
    })
}

/// [`make_input`] with the base tensor's values drawn from `value`.
pub fn make_view_input(
    device: &Arc<Device>,
    dtype: DType,
    shape: &[usize],
    view: ViewKind,
    mut value: impl FnMut() -> Value,
) -> (Tensor, Vec<Value>) {
    let base_shape: Vec<usize> = match view {
        ViewKind::Contiguous => shape.to_vec(),
        ViewKind::Transposed => shape.iter().rev().copied().collect(),
        ViewKind::Sliced => shape.iter().map(|size| size + 1).collect(),
    };
    let base_count: usize = base_shape.iter().product();
    let base_values: Vec<Value> = (0..base_count).map(|_| value()).collect();
    let base = Tensor::from_bytes(
        device,
        dtype,
        &base_shape,
        &reference::encode(dtype, &base_values),
    )
    .expect("upload");
    let base_layout = Layout::contiguous(&base_shape);
    let (tensor, layout) = match view {
        ViewKind::Contiguous => (base, base_layout),
        ViewKind::Transposed => {
            let permutation: Vec<usize> = (0..shape.len()).rev().collect();
            (
                base.transpose(&permutation).unwrap(),
                base_layout.transpose(&permutation).unwrap(),
            )
        }
        ViewKind::Sliced => {
            let starts = vec![1; shape.len()];
            (
                base.slice(&starts, shape).unwrap(),
                base_layout.slice(&starts, shape).unwrap(),
            )
        }
    };
    let values = layout
        .element_indices()
        .map(|index| base_values[index])
        .collect();
    (tensor, values)
}

/// Logical values of an input of `shape` broadcast (right-aligned) to `target`.
pub fn broadcast_values(values: &[Value], shape: &[usize], target: &[usize]) -> Vec<Value> {
    let layout = Layout::contiguous(shape).broadcast_to(target).unwrap();
    layout
        .element_indices()
        .map(|index| values[index])
        .collect()
}

/// The values of `values` (row-major, `shape`) grouped by output element when `axes` are
/// reduced, each group in row-major order of the reduced axes.
pub fn reduction_groups(shape: &[usize], values: &[Value], axes: &[usize]) -> Vec<Vec<Value>> {
    let kept: Vec<usize> = (0..shape.len())
        .filter(|axis| !axes.contains(axis))
        .collect();
    let n_outputs: usize = kept.iter().map(|&axis| shape[axis]).product();
    let mut groups = vec![Vec::new(); n_outputs];
    for (index, &value) in values.iter().enumerate() {
        let coordinates = coordinates(shape, index);
        let output = kept
            .iter()
            .fold(0, |acc, &axis| acc * shape[axis] + coordinates[axis]);
        groups[output].push(value);
    }
    groups
}

/// A c64 tensor's values as (re, im) pairs.
pub fn c64_values(tensor: &Tensor) -> Vec<(f32, f32)> {
    assert_eq!(tensor.dtype(), DType::C64);
    tensor
        .to_vec::<nxvk_core::Complex32>()
        .unwrap()
        .into_iter()
        .map(|value| (value.re, value.im))
        .collect()
}

/// The values of a tensor, read back and decoded.
pub fn read(tensor: &Tensor) -> Vec<Value> {
    reference::decode(
        tensor.dtype(),
        &tensor.to_bytes().unwrap(),
        tensor.n_elements(),
    )
    .unwrap()
}

pub use nxvk_kernels::accuracy::ulp_distance;

/// How close a GPU value must be to the reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// Same bits (any NaN equals any NaN; -0.0 differs from 0.0).
    Exact,
    /// Within `ulps` units in the last place, or within `absolute` (for results near a zero
    /// of the function, where relative error is meaningless).
    Ulps { ulps: u64, absolute: f64 },
}

/// Whether `actual` matches `expected` when either is NaN or infinite (NaN matches any NaN, an
/// infinity only itself); `None` when both are finite and a tolerance decides.
pub fn non_finite_match(actual: f64, expected: f64) -> Option<bool> {
    if actual.is_nan() || expected.is_nan() {
        Some(actual.is_nan() && expected.is_nan())
    } else if actual.is_infinite() || expected.is_infinite() {
        Some(actual == expected)
    } else {
        None
    }
}

/// Checks one element; returns why it differs.
pub fn check_value(
    dtype: DType,
    tolerance: Tolerance,
    actual: Value,
    expected: Value,
) -> Result<(), String> {
    let fail = || {
        Err(format!(
            "got {actual:?}, expected {expected:?} ({dtype}, {tolerance:?})"
        ))
    };
    match (actual, expected) {
        (Value::Int(a), Value::Int(e)) => {
            if a == e {
                Ok(())
            } else {
                fail()
            }
        }
        (Value::Float(a), Value::Float(e)) => {
            if let Some(same) = non_finite_match(a, e) {
                return if same { Ok(()) } else { fail() };
            }
            match tolerance {
                Tolerance::Exact => {
                    if a.to_bits() == e.to_bits() {
                        Ok(())
                    } else {
                        fail()
                    }
                }
                Tolerance::Ulps { ulps, absolute } => {
                    if a == e || ulp_distance(dtype, a, e) <= ulps || (a - e).abs() <= absolute {
                        Ok(())
                    } else {
                        fail()
                    }
                }
            }
        }
        (Value::Complex(a), Value::Complex(e)) => {
            check_value(dtype, tolerance, Value::Float(a.re), Value::Float(e.re))?;
            check_value(dtype, tolerance, Value::Float(a.im), Value::Float(e.im))
        }
        _ => fail(),
    }
}

/// Checks that a result has as many elements as its reference.
pub fn check_lengths(actual: &[Value], expected: &[Value]) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{} elements, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    Ok(())
}

/// Checks a whole result; the error names the first differing element and its inputs.
pub fn check_all(
    dtype: DType,
    tolerance: Tolerance,
    actual: &[Value],
    expected: &[Value],
    inputs: &[&[Value]],
) -> Result<(), String> {
    check_lengths(actual, expected)?;
    for (index, (&a, &e)) in actual.iter().zip(expected).enumerate() {
        check_value(dtype, tolerance, a, e).map_err(|why| {
            let operands: Vec<Value> = inputs.iter().map(|column| column[index]).collect();
            format!("element {index} of operands {operands:?}: {why}")
        })?;
    }
    Ok(())
}

/// Checks `output`'s shape against `shape` and its elements against `expected` within
/// `tolerance`; the error names `what`, the dtype and the first differing element.
pub fn check_output(
    what: &str,
    output: &Tensor,
    shape: &[usize],
    expected: &[Value],
    tolerance: Tolerance,
) -> Result<(), String> {
    if output.shape() != shape {
        return Err(format!(
            "{what}: shape {:?}, expected {shape:?}",
            output.shape()
        ));
    }
    check_all(output.dtype(), tolerance, &read(output), expected, &[])
        .map_err(|why| format!("{what} on {}: {why}", output.dtype()))
}

/// [`check_output`] for results that must match their reference bit for bit.
pub fn check_output_exact(
    what: &str,
    output: &Tensor,
    shape: &[usize],
    expected: &[Value],
) -> Result<(), String> {
    check_output(what, output, shape, expected, Tolerance::Exact)
}
