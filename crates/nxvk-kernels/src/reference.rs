//! Host references: every op of the table evaluated on the CPU, element by element, with the
//! same semantics the kernels implement. They are the oracle of the property tests and the
//! body of the host fallback (complex and sub-byte types, f64 transcendentals).
//!
//! Values are evaluated in the op's compute type and rounded into the result type by
//! [`encode`], as Nx's BinaryBackend does: integers exactly then wrapped to the type's width,
//! floats in f64 then rounded (f16 and bf16 through f32, as the kernels do).

use crate::op_table::{BinaryOp, UnaryOp};
use nxvk_core::{Complex64, DType, DTypeClass, bf16, f16};

/// One element on the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Int(i128),
    Float(f64),
    Complex(Complex64),
}

impl Value {
    fn as_f64(self) -> f64 {
        match self {
            Value::Int(value) => value as f64,
            Value::Float(value) => value,
            Value::Complex(value) => value.re,
        }
    }

    fn as_complex(self) -> Complex64 {
        match self {
            Value::Complex(value) => value,
            other => Complex64::new(other.as_f64(), 0.0),
        }
    }

    fn is_zero(self) -> bool {
        match self {
            Value::Int(value) => value == 0,
            Value::Float(value) => value == 0.0,
            Value::Complex(value) => value.re == 0.0 && value.im == 0.0,
        }
    }
}

/// Smallest and largest value of an integer dtype.
pub fn integer_limits(dtype: DType) -> (i128, i128) {
    let bits = dtype.bits();
    if dtype.class() == DTypeClass::SignedInt {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    }
}

/// Wraps an integer to `dtype`'s width (two's complement), as Nx writes integers.
fn wrap(value: i128, dtype: DType) -> i128 {
    let bits = dtype.bits();
    let low = (value as u128) & ((1u128 << bits) - 1);
    if dtype.class() == DTypeClass::SignedInt && low >> (bits - 1) == 1 {
        low as i128 - (1i128 << bits)
    } else {
        low as i128
    }
}

/// trunc(x) modulo 2^64 for a finite float (Nx truncates then writes the integer's low bits).
fn truncate_wrapped(value: f64) -> i128 {
    let truncated = value.trunc();
    if truncated.abs() < 1.7e38 {
        return truncated as i128;
    }
    let bits = truncated.abs().to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1075;
    let mantissa = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    let magnitude = if exponent >= 64 {
        0u128
    } else {
        (u128::from(mantissa) << exponent) & u128::from(u64::MAX)
    };
    let magnitude = magnitude as i128;
    if value < 0.0 { -magnitude } else { magnitude }
}

fn round_f32_to(value: f32, dtype: DType) -> f64 {
    match dtype {
        DType::F16 => f64::from(f16::from_f32(value).to_f32()),
        DType::BF16 => f64::from(bf16::from_f32(value).to_f32()),
        DType::F8E5M2 | DType::F8E4M3FN => f8_value(dtype, f8_bits(dtype, f64::from(value))),
        _ => f64::from(value),
    }
}

/// The 8-bit float bits Nx writes for `value` (`f8.rs`).
fn f8_bits(dtype: DType, value: f64) -> u8 {
    if dtype == DType::F8E5M2 {
        crate::f8::e5m2_from_f64(value)
    } else {
        crate::f8::e4m3fn_from_f64(value)
    }
}

/// The value Nx reads from 8-bit float bits (`f8.rs`).
fn f8_value(dtype: DType, bits: u8) -> f64 {
    if dtype == DType::F8E5M2 {
        crate::f8::e5m2_to_f64(bits)
    } else {
        crate::f8::e4m3fn_to_f64(bits)
    }
}

/// Rounds or wraps `value` into `dtype`: the value an element of that type holds after Nx's
/// `as_type` (NaN to 0 and infinities to the limits for integers; floats round to nearest even,
/// integers reach f16/bf16 through f32).
pub fn round_to(value: Value, dtype: DType) -> Value {
    match dtype.class() {
        DTypeClass::SignedInt | DTypeClass::UnsignedInt => Value::Int(match value {
            Value::Int(integer) => wrap(integer, dtype),
            Value::Float(float) | Value::Complex(Complex64 { re: float, .. }) => {
                let (min, max) = integer_limits(dtype);
                if float.is_nan() {
                    0
                } else if float.is_infinite() {
                    if float > 0.0 { max } else { min }
                } else {
                    wrap(truncate_wrapped(float), dtype)
                }
            }
        }),
        DTypeClass::Float => Value::Float(match value {
            Value::Int(integer) if dtype == DType::F64 => integer as f64,
            Value::Int(integer) => round_f32_to(integer as f32, dtype),
            Value::Float(float) | Value::Complex(Complex64 { re: float, .. }) => match dtype {
                DType::F64 => float,
                // Nx writes E4M3FN from the f64 value itself.
                DType::F8E4M3FN => f8_value(dtype, f8_bits(dtype, float)),
                _ => round_f32_to(float as f32, dtype),
            },
        }),
        DTypeClass::Complex => {
            let complex = value.as_complex();
            Value::Complex(if dtype == DType::C64 {
                Complex64::new(f64::from(complex.re as f32), f64::from(complex.im as f32))
            } else {
                complex
            })
        }
    }
}

/// The elements of Nx binary data of `dtype` (always `Some`).
pub fn decode(dtype: DType, bytes: &[u8], n_elements: usize) -> Option<Vec<Value>> {
    if matches!(dtype, DType::F8E5M2 | DType::F8E4M3FN) {
        let values = bytes.iter().take(n_elements);
        return Some(
            values
                .map(|&bits| Value::Float(f8_value(dtype, bits)))
                .collect(),
        );
    }
    let bits = dtype.bits() as usize;
    if dtype.is_sub_byte() {
        return Some(
            (0..n_elements)
                .map(|index| {
                    let bit = index * bits;
                    let raw = (bytes[bit / 8] >> (8 - bits - bit % 8)) & ((1u8 << bits) - 1);
                    Value::Int(wrap(i128::from(raw), dtype))
                })
                .collect(),
        );
    }
    let size = bits / 8;
    Some(
        bytes
            .chunks_exact(size)
            .take(n_elements)
            .map(|chunk| {
                let mut word = [0u8; 16];
                word[..size].copy_from_slice(chunk);
                let raw = u128::from_le_bytes(word);
                match dtype.class() {
                    DTypeClass::SignedInt | DTypeClass::UnsignedInt => {
                        Value::Int(wrap(raw as i128, dtype))
                    }
                    DTypeClass::Float => Value::Float(match dtype {
                        DType::F16 => f64::from(f16::from_bits(raw as u16).to_f32()),
                        DType::BF16 => f64::from(bf16::from_bits(raw as u16).to_f32()),
                        DType::F32 => f64::from(f32::from_bits(raw as u32)),
                        _ => f64::from_bits(raw as u64),
                    }),
                    DTypeClass::Complex => Value::Complex(if dtype == DType::C64 {
                        Complex64::new(
                            f64::from(f32::from_bits(raw as u32)),
                            f64::from(f32::from_bits((raw >> 32) as u32)),
                        )
                    } else {
                        Complex64::new(
                            f64::from_bits(raw as u64),
                            f64::from_bits((raw >> 64) as u64),
                        )
                    }),
                }
            })
            .collect(),
    )
}

/// Nx binary data of `dtype` holding `values` (each rounded or wrapped into the type).
pub fn encode(dtype: DType, values: &[Value]) -> Vec<u8> {
    let bits = dtype.bits() as usize;
    let mut bytes = vec![0u8; dtype.storage_bytes(values.len() as u64) as usize];
    for (index, &value) in values.iter().enumerate() {
        if matches!(dtype, DType::F8E5M2 | DType::F8E4M3FN) {
            // Written from the value itself: rounding first would write E5M2 subnormals
            // twice (Nx reads them back as other values, see `f8.rs`).
            bytes[index] = f8_bits(dtype, value.as_f64());
            continue;
        }
        let value = round_to(value, dtype);
        let raw: u128 = match value {
            Value::Int(integer) => (integer as u128) & ((1u128 << bits) - 1),
            Value::Float(float) => match dtype {
                DType::F16 => u128::from(f16::from_f64(float).to_bits()),
                DType::BF16 => u128::from(bf16::from_f64(float).to_bits()),
                DType::F32 => u128::from((float as f32).to_bits()),
                _ => u128::from(float.to_bits()),
            },
            Value::Complex(complex) => {
                if dtype == DType::C64 {
                    u128::from((complex.re as f32).to_bits())
                        | (u128::from((complex.im as f32).to_bits()) << 32)
                } else {
                    u128::from(complex.re.to_bits()) | (u128::from(complex.im.to_bits()) << 64)
                }
            }
        };
        if dtype.is_sub_byte() {
            let bit = index * bits;
            bytes[bit / 8] |= (raw as u8) << (8 - bits - bit % 8);
        } else {
            let size = bits / 8;
            bytes[index * size..(index + 1) * size].copy_from_slice(&raw.to_le_bytes()[..size]);
        }
    }
    bytes
}

fn predicate(value: bool) -> Option<Value> {
    Some(Value::Int(i128::from(value)))
}

fn integer_pow(base: i128, exponent: i128) -> i128 {
    if exponent < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exponent % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let (mut result, mut base, mut exponent) = (1i128, base, exponent);
    while exponent != 0 {
        if exponent & 1 != 0 {
            result = result.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exponent >>= 1;
    }
    result
}

/// Erlang's max/min: NaN wins, and the first operand when the two compare equal.
fn float_max(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a >= b {
        a
    } else {
        b
    }
}

fn float_min(a: f64, b: f64) -> f64 {
    if a.is_nan() {
        a
    } else if b.is_nan() {
        b
    } else if a <= b {
        a
    } else {
        b
    }
}

/// A binary op on two values of the compute type `compute`; `None` where the host has no
/// implementation (complex atan2, min, ...).
pub fn binary(op: BinaryOp, compute: DType, a: Value, b: Value) -> Option<Value> {
    use BinaryOp::*;
    let bits = compute.bits() as i128;
    match (a, b) {
        (Value::Int(a), Value::Int(b)) => Some(Value::Int(match op {
            Add => a.wrapping_add(b),
            Subtract => a.wrapping_sub(b),
            Multiply => a.wrapping_mul(b),
            Pow => integer_pow(a, b),
            Remainder => {
                if b == 0 {
                    0
                } else {
                    a.wrapping_rem(b)
                }
            }
            Quotient => {
                if b == 0 {
                    0
                } else {
                    a.wrapping_div(b)
                }
            }
            Min => a.min(b),
            Max => a.max(b),
            BitwiseAnd => a & b,
            BitwiseOr => a | b,
            BitwiseXor => a ^ b,
            LeftShift => {
                if b < 0 || b >= bits {
                    0
                } else {
                    (a as u128).wrapping_shl(b as u32) as i128
                }
            }
            RightShift => {
                if b < 0 || b >= bits {
                    if a < 0 { -1 } else { 0 }
                } else {
                    a >> b
                }
            }
            Equal => i128::from(a == b),
            NotEqual => i128::from(a != b),
            Greater => i128::from(a > b),
            Less => i128::from(a < b),
            GreaterEqual => i128::from(a >= b),
            LessEqual => i128::from(a <= b),
            LogicalAnd => i128::from(a != 0 && b != 0),
            LogicalOr => i128::from(a != 0 || b != 0),
            LogicalXor => i128::from((a != 0) != (b != 0)),
            Divide | Atan2 => return None,
        })),
        (Value::Float(a), Value::Float(b)) => Some(match op {
            Add => Value::Float(a + b),
            Subtract => Value::Float(a - b),
            Multiply => Value::Float(a * b),
            Divide => Value::Float(a / b),
            Pow => Value::Float(a.powf(b)),
            Remainder => Value::Float(a % b),
            Atan2 => Value::Float(a.atan2(b)),
            Min => Value::Float(float_min(a, b)),
            Max => Value::Float(float_max(a, b)),
            Equal => return predicate(a == b),
            NotEqual => return predicate(a != b),
            Greater => return predicate(a > b),
            Less => return predicate(a < b),
            GreaterEqual => return predicate(a >= b),
            LessEqual => return predicate(a <= b),
            LogicalAnd => return predicate(a != 0.0 && b != 0.0),
            LogicalOr => return predicate(a != 0.0 || b != 0.0),
            LogicalXor => return predicate((a != 0.0) != (b != 0.0)),
            Quotient | BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift => return None,
        }),
        (a, b) => {
            let (x, y) = (a.as_complex(), b.as_complex());
            let arithmetic = ComplexArithmetic::of(compute);
            Some(match op {
                Add => Value::Complex(x + y),
                Subtract => Value::Complex(x - y),
                Multiply => Value::Complex(arithmetic.multiply(x, y)),
                Divide => Value::Complex(arithmetic.divide(x, y)),
                Pow => Value::Complex(arithmetic.pow(x, y)),
                Equal => return predicate(complex_equal(x, y)),
                NotEqual => return predicate(!complex_equal(x, y)),
                LogicalAnd => return predicate(!a.is_zero() && !b.is_zero()),
                LogicalOr => return predicate(!a.is_zero() || !b.is_zero()),
                LogicalXor => return predicate(a.is_zero() != b.is_zero()),
                _ => return None,
            })
        }
    }
}

fn round_half_away(value: f64) -> f64 {
    let rounded = value.round();
    if rounded == 0.0 { 0.0 } else { rounded }
}

fn sign(value: f64) -> f64 {
    if value > 0.0 {
        1.0
    } else if value < 0.0 {
        -1.0
    } else {
        value
    }
}

/// erf⁻¹ by Newton steps on libm's erf (erfc near ±1, where erf loses the digits).
fn erf_inv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    let magnitude = y.abs();
    let w = -((1.0 - magnitude) * (1.0 + magnitude)).ln();
    // Initial guess: the inverse of erf's tail asymptote, refined below.
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        1.50140941 + w * (0.246640727 + w * (-0.00417768164 + w * -0.00125372503))
    } else {
        let w = w.sqrt() - 3.0;
        2.83297682 + w * (1.00167406 + w * 0.00943887047)
    } * magnitude;
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    for _ in 0..40 {
        // erf(x) - magnitude, written as (1 - magnitude) - erfc(x) near 1 where it is exact.
        let residual = if magnitude > 0.5 {
            (1.0 - magnitude) - libm::erfc(x)
        } else {
            libm::erf(x) - magnitude
        };
        let step = residual / (two_over_sqrt_pi * (-x * x).exp());
        x -= step;
        if step.abs() <= x.abs() * 1e-17 {
            break;
        }
    }
    x.copysign(y)
}

/// Complex arithmetic as Elixir's Complex library writes it (and `glsl_complex.glsl` repeats),
/// every operation rounded to the component type: f64 carries more than twice f32's digits, so
/// an f64 sum, product, quotient or square root of f32 values rounded to f32 is the correctly
/// rounded f32 result, as the kernels compute it.
#[derive(Debug, Clone, Copy)]
struct ComplexArithmetic {
    single_precision: bool,
}

impl ComplexArithmetic {
    fn of(compute: DType) -> Self {
        ComplexArithmetic {
            single_precision: compute == DType::C64,
        }
    }

    fn round(self, value: f64) -> f64 {
        if self.single_precision {
            f64::from(value as f32)
        } else {
            value
        }
    }

    fn product(self, a: f64, b: f64) -> f64 {
        self.round(a * b)
    }

    /// Complex.multiply: (ac - bd) + (bc + ad)i.
    fn multiply(self, a: Complex64, b: Complex64) -> Complex64 {
        Complex64::new(
            self.round(self.product(a.re, b.re) - self.product(a.im, b.im)),
            self.round(self.product(a.im, b.re) + self.product(a.re, b.im)),
        )
    }

    /// Complex's real divide inside complex division: finite over infinite is +0.
    fn divide_component(self, numerator: f64, denominator: f64) -> f64 {
        if denominator.is_infinite() && numerator.is_finite() {
            0.0
        } else {
            self.round(numerator / denominator)
        }
    }

    /// Complex.divide: times the conjugate over |b|^2, unscaled; a finite dividend over
    /// (+-Inf, 0) is 0.
    fn divide(self, a: Complex64, b: Complex64) -> Complex64 {
        if a.re.is_finite() && a.im.is_finite() && b.re.is_infinite() && b.im == 0.0 {
            return Complex64::new(0.0, 0.0);
        }
        let numerator_re = self.round(self.product(a.re, b.re) + self.product(a.im, b.im));
        let numerator_im = self.round(self.product(a.im, b.re) - self.product(a.re, b.im));
        let denominator = self.round(self.product(b.re, b.re) + self.product(b.im, b.im));
        Complex64::new(
            self.divide_component(numerator_re, denominator),
            self.divide_component(numerator_im, denominator),
        )
    }

    /// Complex.abs: NaN when both parts are NaN, +Inf when either is not finite, else the
    /// larger part times sqrt(1 + ratio^2).
    fn abs(self, z: Complex64) -> f64 {
        if z.re.is_nan() && z.im.is_nan() {
            return f64::NAN;
        }
        if !z.re.is_finite() || !z.im.is_finite() {
            return f64::INFINITY;
        }
        let (x, y) = (z.re.abs(), z.im.abs());
        if x == 0.0 {
            return y;
        }
        if y == 0.0 {
            return x;
        }
        let (larger, smaller) = (x.max(y), x.min(y));
        let ratio = self.round(smaller / larger);
        let root = self.round((self.round(1.0 + self.product(ratio, ratio))).sqrt());
        self.product(larger, root)
    }
}

/// The Complex library's transcendentals as `glsl_complex.glsl` writes them: every real
/// function's result rounded to the component type, like every arithmetic operation, so
/// overflow and cancellation happen where the kernels meet them; only the real functions'
/// own errors (a few ulps, `accuracy.rs`) separate the two.
impl ComplexArithmetic {
    fn sum(self, a: f64, b: f64) -> f64 {
        self.round(a + b)
    }

    fn half(self, z: Complex64) -> Complex64 {
        Complex64::new(self.round(z.re / 2.0), self.round(z.im / 2.0))
    }

    /// Complex.sqrt: special values, then the scaled formula.
    fn sqrt(self, z: Complex64) -> Complex64 {
        let root = |x: f64| self.round(x.sqrt());
        if z.re.is_nan() || z.im.is_nan() {
            return Complex64::new(f64::NAN, f64::NAN);
        }
        if z.im.is_infinite() {
            return Complex64::new(f64::INFINITY, z.im);
        }
        if z.re.is_infinite() {
            return if z.re > 0.0 {
                Complex64::new(z.re, 0.0)
            } else {
                Complex64::new(0.0, f64::INFINITY)
            };
        }
        if z.re == 0.0 && z.im == 0.0 {
            return z;
        }
        let (x, y) = (z.re.abs(), z.im.abs());
        let w = if x >= y {
            let ratio = self.round(y / x);
            let inner = root(self.sum(1.0, self.product(ratio, ratio)));
            self.product(root(x), root(self.product(0.5, self.sum(1.0, inner))))
        } else {
            let ratio = self.round(x / y);
            let inner = root(self.sum(1.0, self.product(ratio, ratio)));
            self.product(root(y), root(self.product(0.5, self.sum(ratio, inner))))
        };
        if z.re >= 0.0 {
            return Complex64::new(w, self.round(z.im / self.product(2.0, w)));
        }
        let signed_w = if z.im >= 0.0 { w } else { -w };
        Complex64::new(self.round(z.im / self.product(2.0, signed_w)), signed_w)
    }

    /// Complex.exp of `z` from exp(re), cos(im) and sin(im), with the library's special
    /// values.
    fn exp_parts(self, z: Complex64, exp_re: f64, cosine: f64, sine: f64) -> Complex64 {
        let signed_infinity = |x: f64| {
            if x > 0.0 {
                f64::INFINITY
            } else if x < 0.0 {
                f64::NEG_INFINITY
            } else {
                f64::NAN
            }
        };
        if z.re == f64::NEG_INFINITY {
            return Complex64::new(0.0, 0.0);
        }
        if z.re == f64::INFINITY && !z.im.is_infinite() {
            if z.im.is_nan() {
                return z;
            }
            return Complex64::new(signed_infinity(cosine), signed_infinity(sine));
        }
        if !z.re.is_finite() || !z.im.is_finite() {
            return Complex64::new(f64::NAN, f64::NAN);
        }
        Complex64::new(self.product(exp_re, cosine), self.product(exp_re, sine))
    }

    fn exp(self, z: Complex64) -> Complex64 {
        let (cosine, sine) = (self.round(z.im.cos()), self.round(z.im.sin()));
        self.exp_parts(z, self.round(z.re.exp()), cosine, sine)
    }

    /// e^z and e^-z sharing cos(im) and sin(im), as the kernels do.
    fn exp_both(self, z: Complex64) -> (Complex64, Complex64) {
        let (cosine, sine) = (self.round(z.im.cos()), self.round(z.im.sin()));
        (
            self.exp_parts(z, self.round(z.re.exp()), cosine, sine),
            self.exp_parts(-z, self.round((-z.re).exp()), cosine, -sine),
        )
    }

    /// Complex.log: log(Complex.abs) + i atan2, a finite imaginary part over an infinite
    /// real part giving +0 or +pi.
    fn log(self, z: Complex64) -> Complex64 {
        let phase = if z.re.is_infinite() && z.im.is_finite() {
            if z.re > 0.0 {
                0.0
            } else {
                std::f64::consts::PI
            }
        } else {
            z.im.atan2(z.re)
        };
        Complex64::new(self.round(self.abs(z).ln()), self.round(phase))
    }

    /// Complex.pow: NaN for a non-finite part (but 0 to (+Inf, 0) is 0), the zero base and
    /// unit exponent clauses, then |x|^re e^(-im phase) (cos r + i sin r), r = re phase +
    /// im log|x|.
    fn pow(self, x: Complex64, y: Complex64) -> Complex64 {
        let is_zero = |z: Complex64| z.re == 0.0 && z.im == 0.0;
        let finite = |z: Complex64| z.re.is_finite() && z.im.is_finite();
        if !finite(x) || !finite(y) {
            return if is_zero(x) && y.re == f64::INFINITY && y.im == 0.0 {
                Complex64::new(0.0, 0.0)
            } else {
                Complex64::new(f64::NAN, f64::NAN)
            };
        }
        if is_zero(x) {
            let power = if is_zero(y) { 1.0 } else { 0.0 };
            return Complex64::new(power, 0.0);
        }
        if y.re == 1.0 && y.im == 0.0 {
            return x;
        }
        if y.re == -1.0 && y.im == 0.0 {
            return self.divide(Complex64::new(1.0, 0.0), x);
        }
        let rho = self.abs(x);
        let theta = self.log(x).im;
        let magnitude = self.product(
            self.round(rho.powf(y.re)),
            self.round(self.product(-y.im, theta).exp()),
        );
        let angle = self.sum(
            self.product(y.re, theta),
            self.product(y.im, self.round(rho.ln())),
        );
        Complex64::new(
            self.product(magnitude, self.round(angle.cos())),
            self.product(magnitude, self.round(angle.sin())),
        )
    }

    /// Complex.asin (`cosine` false): -i log(i z + sqrt(1 - z^2)), and Complex.acos
    /// (`cosine` true): -i log(z + sqrt(z^2 - 1)); NaN for a non-finite part.
    fn asin_or_acos(self, z: Complex64, cosine: bool) -> Complex64 {
        if !z.re.is_finite() || !z.im.is_finite() {
            return Complex64::new(f64::NAN, f64::NAN);
        }
        let square = self.multiply(z, z);
        let (shifted, term) = if cosine {
            (Complex64::new(self.sum(square.re, -1.0), square.im), z)
        } else {
            let i = Complex64::new(0.0, 1.0);
            let one_minus_square = Complex64::new(self.sum(1.0, -square.re), 0.0 - square.im);
            (one_minus_square, self.multiply(i, z))
        };
        let root = self.sqrt(shifted);
        let sum = Complex64::new(self.sum(term.re, root.re), self.sum(term.im, root.im));
        self.multiply(Complex64::new(-0.0, -1.0), self.log(sum))
    }

    /// Complex.subtract(1, z) and Complex.add(z, 1) with Elixir's float zero parts.
    fn one_minus_and_plus(self, z: Complex64) -> (Complex64, Complex64) {
        (
            Complex64::new(self.sum(1.0, -z.re), 0.0 - z.im),
            Complex64::new(self.sum(z.re, 1.0), z.im + 0.0),
        )
    }

    /// Complex.atan: (0.5 i) (log(1 - i z) - log(1 + i z)), unguarded.
    fn atan(self, z: Complex64) -> Complex64 {
        let (minus, plus) = self.one_minus_and_plus(self.multiply(Complex64::new(0.0, 1.0), z));
        let (left, right) = (self.log(minus), self.log(plus));
        let difference = Complex64::new(self.sum(left.re, -right.re), self.sum(left.im, -right.im));
        self.multiply(Complex64::new(0.0, 0.5), difference)
    }

    /// Complex.atanh: 0.5 log((1 + z) / (1 - z)), unguarded.
    fn atanh(self, z: Complex64) -> Complex64 {
        let (minus, plus) = self.one_minus_and_plus(z);
        let logarithm = self.log(self.divide(plus, minus));
        self.multiply(Complex64::new(0.5, 0.0), logarithm)
    }

    /// Complex.asinh (`cosine` false): log(z + sqrt(z^2 + 1)), and Complex.acosh (`cosine`
    /// true): log(z + sqrt(z^2 - 1)), unguarded.
    fn asinh_or_acosh(self, z: Complex64, cosine: bool) -> Complex64 {
        let square = self.multiply(z, z);
        let shifted = if cosine {
            Complex64::new(self.sum(square.re, -1.0), square.im)
        } else {
            Complex64::new(self.sum(square.re, 1.0), square.im + 0.0)
        };
        let root = self.sqrt(shifted);
        self.log(Complex64::new(
            self.sum(z.re, root.re),
            self.sum(z.im, root.im),
        ))
    }

    /// Complex.cbrt: from_polar(abs(z)^(1/3), phase(z) / 3) with Complex.phase's special
    /// values, NaN parts where BinaryBackend raises (a NaN phase); as `nx_complex_cbrt`
    /// computes it, every operation rounded to the component type.
    fn cbrt(self, z: Complex64) -> Complex64 {
        let pi = self.round(std::f64::consts::PI);
        let phase = match (z.re.is_infinite(), z.im.is_infinite()) {
            (true, true) => {
                let quarters = match (z.re > 0.0, z.im > 0.0) {
                    (true, true) => 1.0,
                    (true, false) => -1.0,
                    (false, true) => 3.0,
                    (false, false) => 5.0,
                };
                self.round(self.product(quarters, pi) / 4.0)
            }
            (_, true) => pi / 2.0 * z.im.signum(),
            (true, false) if !z.im.is_nan() => {
                if z.re > 0.0 {
                    0.0
                } else {
                    pi
                }
            }
            _ if z.re.is_nan() || z.im.is_nan() => f64::NAN,
            _ => self.round(z.im.atan2(z.re)),
        };
        if phase.is_nan() {
            return Complex64::new(f64::NAN, f64::NAN);
        }
        let modulus = self.round(self.abs(z).powf(1.0 / 3.0));
        let angle = self.round(phase / 3.0);
        if angle == 0.0 {
            return Complex64::new(modulus, 0.0);
        }
        let (sine, cosine) = (self.round(angle.sin()), self.round(angle.cos()));
        Complex64::new(
            self.product(modulus, cosine) - 0.0 * sine,
            0.0 * cosine + self.product(modulus, sine),
        )
    }

    /// Complex.sin (`cosine` false) and Complex.cos (`cosine` true).
    fn sin_or_cos(self, z: Complex64, cosine: bool) -> Complex64 {
        if z.re.is_nan() || z.im.is_nan() || z.re.is_infinite() {
            return Complex64::new(f64::NAN, f64::NAN);
        }
        if z.im.is_infinite() {
            return if cosine {
                Complex64::new(f64::INFINITY, -z.im * z.re)
            } else {
                Complex64::new(z.re * z.im, z.im)
            };
        }
        let (sin, cos) = (self.round(z.re.sin()), self.round(z.re.cos()));
        let (cosh, sinh) = (self.round(z.im.cosh()), self.round(z.im.sinh()));
        if cosine {
            Complex64::new(self.product(cos, cosh), self.product(-sin, sinh))
        } else {
            Complex64::new(self.product(sin, cosh), self.product(cos, sinh))
        }
    }

    /// Complex.sinh (`sign` -1) and Complex.cosh (`sign` 1): (e^z + sign e^-z) / 2.
    fn hyperbolic(self, z: Complex64, sign: f64) -> Complex64 {
        let (up, down) = self.exp_both(z);
        self.half(Complex64::new(
            self.sum(up.re, sign * down.re),
            self.sum(up.im, sign * down.im),
        ))
    }
}

/// Nx.BinaryBackend compares complex numbers as Elixir terms: NaN parts (the atom :nan) are
/// equal, and 0.0 equals -0.0.
fn complex_equal(a: Complex64, b: Complex64) -> bool {
    let same = |x: f64, y: f64| x == y || (x.is_nan() && y.is_nan());
    same(a.re, b.re) && same(a.im, b.im)
}

fn complex_unary(op: UnaryOp, compute: DType, z: Complex64) -> Option<Value> {
    use UnaryOp::*;
    let one = Complex64::new(1.0, 0.0);
    let complex = ComplexArithmetic::of(compute);
    Some(Value::Complex(match op {
        Negate => -z,
        Exp => complex.exp(z),
        Expm1 => {
            let exp = complex.exp(z);
            Complex64::new(complex.round(exp.re - 1.0), exp.im)
        }
        Log => complex.log(z),
        Log1p => complex.log(Complex64::new(complex.sum(z.re, 1.0), z.im + 0.0)),
        Sqrt => complex.sqrt(z),
        Rsqrt => complex.divide(one, complex.sqrt(z)),
        Sigmoid => {
            let exp = complex.exp(-z);
            complex.divide(one, Complex64::new(complex.sum(exp.re, 1.0), exp.im + 0.0))
        }
        Sin => complex.sin_or_cos(z, false),
        Cos => complex.sin_or_cos(z, true),
        Tan => complex.divide(complex.sin_or_cos(z, false), complex.sin_or_cos(z, true)),
        Asin => complex.asin_or_acos(z, false),
        Acos => complex.asin_or_acos(z, true),
        Atan => complex.atan(z),
        Sinh => complex.hyperbolic(z, -1.0),
        Cosh => complex.hyperbolic(z, 1.0),
        Tanh => complex.divide(complex.hyperbolic(z, -1.0), complex.hyperbolic(z, 1.0)),
        Asinh => complex.asinh_or_acosh(z, false),
        Acosh => complex.asinh_or_acosh(z, true),
        Atanh => complex.atanh(z),
        Cbrt => complex.cbrt(z),
        Conjugate => z.conj(),
        Abs => return Some(Value::Float(complex.abs(z))),
        Real => return Some(Value::Float(z.re)),
        Imag => return Some(Value::Float(z.im)),
        IsNan => return predicate(z.re.is_nan() || z.im.is_nan()),
        IsInfinity => return predicate(z.re.is_infinite() || z.im.is_infinite()),
        LogicalNot => return predicate(z.re == 0.0 && z.im == 0.0),
        _ => return None,
    }))
}

/// A unary op on a value of the compute type `compute`.
pub fn unary(op: UnaryOp, compute: DType, a: Value) -> Option<Value> {
    use UnaryOp::*;
    match a {
        Value::Int(x) => {
            let bits = compute.bits();
            let unsigned = (x as u128) & ((1u128 << bits) - 1);
            Some(Value::Int(match op {
                Negate => x.wrapping_neg(),
                Abs => x.abs(),
                Sign => x.signum(),
                Floor | Ceil | Round => x,
                BitwiseNot => !x,
                LogicalNot => i128::from(x == 0),
                IsNan | IsInfinity => 0,
                PopulationCount => i128::from(unsigned.count_ones()),
                CountLeadingZeros => i128::from(unsigned.leading_zeros() - (128 - bits)),
                _ => return None,
            }))
        }
        Value::Float(x) => Some(match op {
            Negate => Value::Float(-x),
            Abs => Value::Float(x.abs()),
            Sign => Value::Float(sign(x)),
            Floor => Value::Float(x.floor()),
            Ceil => Value::Float(x.ceil()),
            Round => Value::Float(round_half_away(x)),
            Exp => Value::Float(x.exp()),
            Expm1 => Value::Float(x.exp_m1()),
            Log => Value::Float(x.ln()),
            Log1p => Value::Float(x.ln_1p()),
            Sqrt => Value::Float(x.sqrt()),
            Rsqrt => Value::Float(1.0 / x.sqrt()),
            Sigmoid => Value::Float(1.0 / (1.0 + (-x).exp())),
            Tanh => Value::Float(x.tanh()),
            Sin => Value::Float(x.sin()),
            Cos => Value::Float(x.cos()),
            Tan => Value::Float(x.tan()),
            Asin => Value::Float(x.asin()),
            Acos => Value::Float(x.acos()),
            Atan => Value::Float(x.atan()),
            Sinh => Value::Float(x.sinh()),
            Cosh => Value::Float(x.cosh()),
            // libm's, not std's: std writes these as formulas that overflow near f64::MAX
            // (asinh, acosh) and lose digits near -1 (atanh); Nx calls C's libm. The libm
            // crate's acosh (musl's) returns finite values below -1, C's a NaN.
            Asinh => Value::Float(libm::asinh(x)),
            Acosh => Value::Float(if x < 1.0 { f64::NAN } else { libm::acosh(x) }),
            Atanh => Value::Float(libm::atanh(x)),
            Erf => Value::Float(libm::erf(x)),
            Erfc => Value::Float(libm::erfc(x)),
            ErfInv => Value::Float(erf_inv(x)),
            Cbrt => Value::Float(x.cbrt()),
            LogicalNot => return predicate(x == 0.0),
            IsNan => return predicate(x.is_nan()),
            IsInfinity => return predicate(x.is_infinite()),
            Real => Value::Float(x),
            Imag => Value::Float(0.0),
            Conjugate => Value::Complex(Complex64::new(x, -0.0)),
            BitwiseNot | PopulationCount | CountLeadingZeros => return None,
        }),
        Value::Complex(z) => complex_unary(op, compute, z),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_nx_as_type() {
        assert_eq!(round_to(Value::Float(300.7), DType::U8), Value::Int(44));
        assert_eq!(round_to(Value::Float(-1.5), DType::U8), Value::Int(255));
        assert_eq!(round_to(Value::Float(f64::NAN), DType::S32), Value::Int(0));
        assert_eq!(
            round_to(Value::Float(f64::INFINITY), DType::S16),
            Value::Int(32767)
        );
        assert_eq!(
            round_to(Value::Float(f64::NEG_INFINITY), DType::U32),
            Value::Int(0)
        );
        assert_eq!(
            round_to(Value::Float(1e20), DType::S64),
            Value::Int(wrap(100_000_000_000_000_000_000, DType::S64))
        );
        assert_eq!(round_to(Value::Int(-1), DType::U16), Value::Int(65535));
    }

    #[test]
    fn integer_semantics_follow_elixir() {
        let s8 = DType::S8;
        let int = |value| Value::Int(value);
        assert_eq!(
            binary(BinaryOp::Remainder, s8, int(-7), int(2)),
            Some(int(-1))
        );
        assert_eq!(
            binary(BinaryOp::Quotient, s8, int(-7), int(2)),
            Some(int(-3))
        );
        assert_eq!(
            binary(BinaryOp::RightShift, s8, int(-8), int(9)),
            Some(int(-1))
        );
        assert_eq!(unary(UnaryOp::CountLeadingZeros, s8, int(1)), Some(int(7)));
        assert_eq!(unary(UnaryOp::PopulationCount, s8, int(-1)), Some(int(8)));
        assert_eq!(
            unary(UnaryOp::Round, DType::F32, Value::Float(-2.5)),
            Some(Value::Float(-3.0))
        );
    }

    #[test]
    fn sub_byte_values_round_trip_msb_first() {
        let values: Vec<Value> = [-8, 7, -1, 0, 3].into_iter().map(Value::Int).collect();
        let bytes = encode(DType::S4, &values);
        assert_eq!(bytes, vec![0x87, 0xF0, 0x30]);
        assert_eq!(decode(DType::S4, &bytes, 5).unwrap(), values);
    }

    #[test]
    fn erf_inv_inverts_erf() {
        for x in [-3.0, -0.7, -1e-5, 0.0, 0.3, 1.2, 4.5] {
            let y = libm::erf(x);
            let back = erf_inv(y);
            assert!(
                (back - x).abs() <= 1e-12 * x.abs().max(1.0) || y.abs() > 0.999_999_999,
                "{x}: {back}"
            );
        }
    }
}
