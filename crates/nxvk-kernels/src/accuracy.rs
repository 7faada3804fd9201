//! Ulp accuracy of the catalog's transcendentals against the host reference (the CPU's libm,
//! through `reference.rs`), for f32 and f64.
//!
//! Inputs are seeded and reproducible: the op's edge values (zeros of both signs, subnormals,
//! infinities, NaN, the largest finite value and the domain's edges) followed by random values
//! whose magnitudes are log-uniform over the op's interesting range, so that every binade gets
//! the same attention. The error of a result is its distance to the reference in units in the
//! last place of the dtype (adjacent floats are 1 apart; a NaN matches only a NaN).
//!
//! [`ulp_bound`] states the bound each op x dtype is held to: what the kernels achieve on
//! lavapipe over 2^20 samples per op, with an ulp of headroom where the measured maximum
//! came from a rare input. `cargo run -p nxvk-kernels --example ulp` prints the table that
//! docs/CAPABILITIES.md publishes; `tests/accuracy.rs` asserts the bounds on smaller samples.
//!
//! f32 results below the smallest normal f32 count as exact when the reference is also below
//! it: Vulkan lets a driver flush f32 denormals, so relative error means nothing there.

use crate::catalog::F32Math;
use crate::op_table::{BinaryOp, UnaryOp};
use crate::reference::{self, Value};
use nxvk_core::{DType, Device, Error, Result, Tensor};
use std::sync::Arc;

/// An op whose accuracy is measured: the transcendental unary ops and pow and atan2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MeasuredOp {
    Unary(UnaryOp),
    Binary(BinaryOp),
}

impl MeasuredOp {
    /// Every op of the table that is checked to an ulp bound rather than bit for bit.
    pub fn all() -> Vec<MeasuredOp> {
        let unary = UnaryOp::ALL
            .iter()
            .filter(|op| !op.spec().exact)
            .map(|&op| MeasuredOp::Unary(op));
        let binary = BinaryOp::ALL
            .iter()
            .filter(|op| !op.spec().exact)
            .map(|&op| MeasuredOp::Binary(op));
        unary.chain(binary).collect()
    }

    pub fn name(self) -> &'static str {
        match self {
            MeasuredOp::Unary(op) => op.name(),
            MeasuredOp::Binary(op) => op.name(),
        }
    }
}

/// The ulp bound the op named `name` is held to on `dtype` (f32 or f64; f16 and bf16 compute
/// in f32 and round once more) when f32 kernels compute as `math` says ([`f32_math`] of the
/// device), as measured (see the module docs).
pub fn ulp_bound(name: &str, dtype: DType, math: F32Math) -> u64 {
    if dtype == DType::F64 {
        // erfc and erf_inv: the reference (the libm crate's erfc) is itself off by up to 2.5
        // ulps (erfc(1.4183207571919654): nxvk 0.48 ulp from the true value, libm 2.5).
        return match name {
            "erfc" | "erf_inv" => 3,
            _ => 2,
        };
    }
    // f32: sin, cos, tan, cbrt and pow always round an f64 result once, and so do the refined
    // helpers (codegen.rs, F64_REFINED_HELPERS) unless the kernels compute in f32 alone;
    // exp, cosh and rsqrt are nxvk's own f32 implementations (glsl_helpers.glsl).
    match (name, math) {
        ("sin" | "cos" | "tan" | "cbrt" | "pow", _) => 1,
        ("exp" | "cosh" | "rsqrt", _) => 2,
        (_, F32Math::ViaF64) => 1,
        (
            "log" | "log1p" | "tanh" | "asin" | "acos" | "atan" | "sinh" | "atan2" | "erf" | "erfc"
            | "erf_inv",
            F32Math::F32Only,
        ) => 2,
        ("expm1" | "sigmoid" | "asinh" | "acosh", F32Math::F32Only) => 3,
        ("atanh", F32Math::F32Only) => 4,
        _ => 8,
    }
}

/// One op x dtype's measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub op: MeasuredOp,
    pub dtype: DType,
    pub n_samples: usize,
    /// The largest distance seen, in ulps of `dtype`.
    pub max_ulps: u64,
    /// The operands of the worst sample.
    pub worst_operands: Vec<f64>,
    /// The GPU's and the reference's results there.
    pub worst_actual: f64,
    pub worst_expected: f64,
}

/// Distance in units in the last place of `dtype` between two values of that type: the
/// difference of their positions in the ordered sequence of floats. NaN is at distance 0 from
/// NaN and `u64::MAX` from anything else.
pub fn ulp_distance(dtype: DType, a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let ordered = |value: f64| -> i64 {
        let (bits, sign_mask) = match dtype {
            DType::F16 => (
                i64::from(half::f16::from_f64(value).to_bits() as i16),
                i64::from(i16::MIN),
            ),
            DType::BF16 => (
                i64::from(half::bf16::from_f64(value).to_bits() as i16),
                i64::from(i16::MIN),
            ),
            DType::F32 => (
                i64::from((value as f32).to_bits() as i32),
                i64::from(i32::MIN),
            ),
            _ => (value.to_bits() as i64, i64::MIN),
        };
        if bits < 0 {
            sign_mask.wrapping_sub(bits)
        } else {
            bits
        }
    };
    ordered(a).abs_diff(ordered(b))
}

/// The ulp error of `actual` against `expected` under this module's policy (f32 values that
/// are both below the smallest normal count as exact).
pub fn ulp_error(dtype: DType, actual: f64, expected: f64) -> u64 {
    let below_normal = |value: f64| value.abs() < f64::from(f32::MIN_POSITIVE);
    if dtype == DType::F32 && below_normal(actual) && below_normal(expected) {
        return 0;
    }
    ulp_distance(dtype, actual, expected)
}

/// splitmix64, so that samples are reproducible from a seed.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A magnitude whose base-2 exponent is uniform in `[low, high)`.
    fn log_uniform(&mut self, low: f64, high: f64) -> f64 {
        (low + (high - low) * self.unit()).exp2()
    }

    fn signed(&mut self, magnitude: f64) -> f64 {
        if self.next() & 1 == 0 {
            magnitude
        } else {
            -magnitude
        }
    }
}

/// Where an op's inputs are drawn from.
#[derive(Debug, Clone, Copy)]
enum Sampling {
    /// Both signs, magnitudes 2^low .. 2^high.
    Symmetric { low: f64, high: f64 },
    /// Positive magnitudes 2^low .. 2^high.
    Positive { low: f64, high: f64 },
    /// [-1, 1], log-uniform both towards 0 and towards the edges ±1.
    Unit,
    /// 1 + magnitudes 2^low .. 2^high (acosh).
    AboveOne { low: f64, high: f64 },
}

/// Exponent range of finite values of `dtype`, subnormals included.
fn exponent_range(dtype: DType) -> (f64, f64) {
    if dtype == DType::F64 {
        (-1074.0, 1024.0)
    } else {
        (-149.0, 128.0)
    }
}

fn sampling(op: MeasuredOp, dtype: DType) -> Sampling {
    let (smallest, largest) = exponent_range(dtype);
    // ln of the largest finite value: past it exp-like ops saturate.
    let saturation = if dtype == DType::F64 { 9.6 } else { 6.5 };
    match op.name() {
        "exp" | "expm1" | "sigmoid" | "sinh" | "cosh" => Sampling::Symmetric {
            low: -60.0,
            high: saturation + 0.1,
        },
        "tanh" => Sampling::Symmetric {
            low: -60.0,
            high: 5.0,
        },
        "log" | "rsqrt" => Sampling::Positive {
            low: smallest,
            high: largest,
        },
        "log1p" => Sampling::Symmetric {
            low: -60.0,
            high: largest,
        },
        "asin" | "acos" | "atanh" | "erf_inv" => Sampling::Unit,
        "acosh" => Sampling::AboveOne {
            low: -60.0,
            high: largest,
        },
        "erf" | "erfc" => Sampling::Symmetric {
            low: -60.0,
            high: 5.0,
        },
        "pow" => Sampling::Symmetric {
            low: -20.0,
            high: 20.0,
        },
        _ => Sampling::Symmetric {
            low: smallest,
            high: largest,
        },
    }
}

/// Edge values every op sees, rounded to `dtype` by the caller.
fn edge_values(dtype: DType) -> Vec<f64> {
    let (max, min_normal, min_subnormal) = if dtype == DType::F64 {
        (f64::MAX, f64::MIN_POSITIVE, f64::from_bits(1))
    } else {
        (
            f64::from(f32::MAX),
            f64::from(f32::MIN_POSITIVE),
            f64::from(f32::from_bits(1)),
        )
    };
    let mut values = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        max,
        -max,
        min_normal,
        -min_normal,
        min_subnormal,
        -min_subnormal,
        min_normal - min_subnormal,
        709.782712893384,
        -708.396_418_532_264_1,
        -745.133_219_101_941_1,
        88.72283935546875,
        -87.336_544_750_553_1,
        -103.97208,
        26.5,
        27.3,
        1e6,
        823_549.6,
        1e22,
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::PI,
    ];
    let below_one = if dtype == DType::F64 {
        1.0 - f64::EPSILON / 2.0
    } else {
        1.0 - f64::from(f32::EPSILON) / 2.0
    };
    values.extend([below_one, -below_one]);
    values
}

fn random_operand(sampling: Sampling, random: &mut Random) -> f64 {
    match sampling {
        Sampling::Symmetric { low, high } => {
            let magnitude = random.log_uniform(low, high);
            random.signed(magnitude)
        }
        Sampling::Positive { low, high } => random.log_uniform(low, high),
        Sampling::Unit => {
            let distance = random.log_uniform(-60.0, 0.0);
            let magnitude = if random.next() & 1 == 0 {
                distance
            } else {
                1.0 - distance
            };
            random.signed(magnitude)
        }
        Sampling::AboveOne { low, high } => 1.0 + random.log_uniform(low, high),
    }
}

/// `n_samples` operand lists for `op` on `dtype` (edge values first, then random ones),
/// each operand rounded to `dtype`.
pub fn samples(op: MeasuredOp, dtype: DType, n_samples: usize, seed: u64) -> Vec<Vec<f64>> {
    let round = |value: f64| match reference::round_to(Value::Float(value), dtype) {
        Value::Float(rounded) => rounded,
        _ => value,
    };
    let mut random = Random(seed ^ (op.name().len() as u64) << 32);
    let edges = edge_values(dtype);
    let first = sampling(op, dtype);
    match op {
        MeasuredOp::Unary(_) => (0..n_samples)
            .map(|index| {
                let value = edges
                    .get(index)
                    .copied()
                    .unwrap_or_else(|| random_operand(first, &mut random));
                vec![round(value)]
            })
            .collect(),
        MeasuredOp::Binary(binary) => (0..n_samples)
            .map(|index| {
                // Edge values meet every other edge value, then random pairs; pow's exponents
                // are small (|y| <= 64, integers one time in four) so results stay finite.
                let (left, right) = if index < edges.len() * edges.len() {
                    (edges[index / edges.len()], edges[index % edges.len()])
                } else if binary == BinaryOp::Pow {
                    let exponent = random.unit() * 128.0 - 64.0;
                    let exponent = if random.next() & 3 == 0 {
                        exponent.round()
                    } else {
                        exponent
                    };
                    (random_operand(first, &mut random), exponent)
                } else {
                    (
                        random_operand(first, &mut random),
                        random_operand(first, &mut random),
                    )
                };
                vec![round(left), round(right)]
            })
            .collect(),
    }
}

/// The host reference's result for one sample, rounded to `dtype`.
pub fn expected(op: MeasuredOp, dtype: DType, operands: &[f64]) -> Option<f64> {
    let value = match op {
        MeasuredOp::Unary(unary) => reference::unary(unary, dtype, Value::Float(operands[0]))?,
        MeasuredOp::Binary(binary) => reference::binary(
            binary,
            dtype,
            Value::Float(operands[0]),
            Value::Float(operands[1]),
        )?,
    };
    match reference::round_to(value, dtype) {
        Value::Float(result) => Some(result),
        _ => None,
    }
}

fn upload(device: &Arc<Device>, dtype: DType, values: &[f64]) -> Result<Tensor> {
    let values: Vec<Value> = values.iter().map(|&value| Value::Float(value)).collect();
    Tensor::from_bytes(
        device,
        dtype,
        &[values.len()],
        &reference::encode(dtype, &values),
    )
}

/// Runs `op` on the GPU over `samples` (as from [`samples`]) and returns its results.
pub fn run(
    device: &Arc<Device>,
    op: MeasuredOp,
    dtype: DType,
    samples: &[Vec<f64>],
) -> Result<Vec<f64>> {
    let column =
        |operand: usize| -> Vec<f64> { samples.iter().map(|operands| operands[operand]).collect() };
    let output = match op {
        MeasuredOp::Unary(unary) => crate::ops::unary(unary, &upload(device, dtype, &column(0))?)?,
        MeasuredOp::Binary(binary) => crate::ops::binary(
            binary,
            &upload(device, dtype, &column(0))?,
            &upload(device, dtype, &column(1))?,
        )?,
    };
    let bytes = output.to_bytes()?;
    let values =
        reference::decode(dtype, &bytes, samples.len()).ok_or_else(|| Error::Unsupported {
            op: op.name(),
            dtype,
            detail: "no host decoding of this dtype".to_owned(),
        })?;
    Ok(values
        .into_iter()
        .map(|value| match value {
            Value::Float(float) => float,
            _ => f64::NAN,
        })
        .collect())
}

/// The worst ulp error of `actual` (GPU results) against the reference over `samples`.
pub fn worst(op: MeasuredOp, dtype: DType, samples: &[Vec<f64>], actual: &[f64]) -> Measurement {
    let mut measurement = Measurement {
        op,
        dtype,
        n_samples: samples.len(),
        max_ulps: 0,
        worst_operands: Vec::new(),
        worst_actual: 0.0,
        worst_expected: 0.0,
    };
    for (operands, &result) in samples.iter().zip(actual) {
        let Some(expected) = expected(op, dtype, operands) else {
            continue;
        };
        let error = ulp_error(dtype, result, expected);
        if error > measurement.max_ulps || measurement.worst_operands.is_empty() {
            measurement.max_ulps = error.max(measurement.max_ulps);
            if error == measurement.max_ulps {
                measurement.worst_operands = operands.clone();
                measurement.worst_actual = result;
                measurement.worst_expected = expected;
            }
        }
    }
    measurement
}

/// Measures `op` on `dtype` over `n_samples` seeded samples.
pub fn measure(
    device: &Arc<Device>,
    op: MeasuredOp,
    dtype: DType,
    n_samples: usize,
    seed: u64,
) -> Result<Measurement> {
    let samples = samples(op, dtype, n_samples, seed);
    let actual = run(device, op, dtype, &samples)?;
    Ok(worst(op, dtype, &samples, &actual))
}
