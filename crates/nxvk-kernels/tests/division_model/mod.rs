//! A host model of the catalog's f32 division (`nx_div` in `src/glsl_helpers.glsl`): the same
//! sequence of f32 operations, step for step, with the driver's choices as parameters: its
//! reciprocal `1.0 / b` (the correctly rounded one moved by some ulps: Vulkan lets it be
//! approximate, NVIDIA's is), whether its `fma` is fused (`f32::mul_add`) or split into a
//! rounded multiply and add (lavapipe's), and the value of the `NXVK_FUSED_FMA` specialization
//! constant that picks the remainder path. Keep it in step with the GLSL: `tests/division.rs`
//! proves the model correctly rounded and checks the GPU against the same reference.
// Each includer uses part of this module.
#![allow(dead_code)]

/// One run's circumstances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// How far the driver's `1.0 / b` is from the correctly rounded reciprocal.
    pub reciprocal_error_ulps: i32,
    /// Whether the driver's `fma` rounds once.
    pub driver_fuses_fma: bool,
    /// The `NXVK_FUSED_FMA` specialization constant: the device sets it to the probed
    /// `driver_fuses_fma`; the null arms set it otherwise.
    pub fused_fma_constant: bool,
    /// False drops the final choice between the candidate and its neighbour (a null arm).
    pub neighbour_decision: bool,
}

impl Setup {
    /// The catalog's algorithm on a driver with this reciprocal error and fma.
    pub fn catalog(reciprocal_error_ulps: i32, driver_fuses_fma: bool) -> Setup {
        Setup {
            reciprocal_error_ulps,
            driver_fuses_fma,
            fused_fma_constant: driver_fuses_fma,
            neighbour_decision: true,
        }
    }

    /// The driver's `fma(x, y, z)`.
    fn fma(self, x: f32, y: f32, z: f32) -> f32 {
        if self.driver_fuses_fma {
            x.mul_add(y, z)
        } else {
            x * y + z
        }
    }

    /// The driver's `1.0 / b`.
    fn reciprocal(self, b: f32) -> f32 {
        let exact = 1.0 / b;
        f32::from_bits(
            exact
                .to_bits()
                .wrapping_add_signed(self.reciprocal_error_ulps),
        )
    }

    /// `nx_exact_remainder`.
    fn remainder(self, a: f32, b: f32, q: f32) -> f32 {
        if self.fused_fma_constant {
            return self.fma(-b, q, a);
        }
        let b_head = f32::from_bits(b.to_bits() & 0xFFFF_F000);
        let q_head = f32::from_bits(q.to_bits() & 0xFFFF_F000);
        let b_tail = b - b_head;
        let q_tail = q - q_head;
        let product = b * q;
        let product_error =
            ((b_head * q_head - product) + b_head * q_tail + b_tail * q_head) + b_tail * q_tail;
        (a - product) - product_error
    }

    /// `nx_div_core`: the quotient and the exact remainder of the returned quotient.
    fn divide_core(self, a: f32, b: f32) -> (f32, f32) {
        let reciprocal_estimate = self.reciprocal(b);
        let reciprocal_error = if self.fused_fma_constant {
            self.fma(-b, reciprocal_estimate, 1.0)
        } else {
            1.0 - b * reciprocal_estimate
        };
        let reciprocal = reciprocal_estimate + reciprocal_estimate * reciprocal_error;
        let first = a * reciprocal;
        let candidate = first + self.remainder(a, b, first) * reciprocal;
        let remainder = self.remainder(a, b, candidate);
        if !self.neighbour_decision || remainder.to_bits() << 1 == 0 {
            return (candidate, remainder);
        }
        let away_from_zero = (remainder.to_bits() ^ a.to_bits()) >> 31 == 0;
        let neighbour = f32::from_bits(if away_from_zero {
            candidate.to_bits() + 1
        } else {
            candidate.to_bits() - 1
        });
        let neighbour_remainder = self.remainder(a, b, neighbour);
        let remainder_magnitude = remainder.to_bits() & 0x7FFF_FFFF;
        let neighbour_magnitude = neighbour_remainder.to_bits() & 0x7FFF_FFFF;
        let take_neighbour = neighbour_magnitude < remainder_magnitude
            || (neighbour_magnitude == remainder_magnitude && candidate.to_bits() & 1 == 1);
        if take_neighbour {
            (neighbour, neighbour_remainder)
        } else {
            (candidate, remainder)
        }
    }

    /// `nx_div_scaled`: every operand pair outside the fast window.
    fn divide_scaled(self, a: f32, b: f32) -> f32 {
        let (a_bits, b_bits) = (a.to_bits(), b.to_bits());
        let sign = (a_bits ^ b_bits) & 0x8000_0000;
        let a_magnitude = a_bits & 0x7FFF_FFFF;
        let b_magnitude = b_bits & 0x7FFF_FFFF;
        const INFINITY: u32 = 0x7F80_0000;
        let nan = f32::from_bits(0x7FC0_0000);
        if a_magnitude > INFINITY || b_magnitude > INFINITY {
            return nan;
        }
        if a_magnitude == INFINITY {
            return if b_magnitude == INFINITY {
                nan
            } else {
                f32::from_bits(sign | INFINITY)
            };
        }
        if b_magnitude == INFINITY {
            return f32::from_bits(sign);
        }
        if b_magnitude == 0 {
            return if a_magnitude == 0 {
                nan
            } else {
                f32::from_bits(sign | INFINITY)
            };
        }
        if a_magnitude == 0 {
            return f32::from_bits(sign);
        }
        let (a_significand, a_exponent) = significand(a_magnitude);
        let (b_significand, b_exponent) = significand(b_magnitude);
        let (quotient, remainder) = self.divide_core(a_significand, b_significand);
        let quotient_bits = quotient.to_bits();
        let scale = a_exponent - b_exponent;
        let exponent = (quotient_bits >> 23) as i32 - 127 + scale;
        if exponent > 127 {
            return f32::from_bits(sign | INFINITY);
        }
        if exponent >= -126 {
            return f32::from_bits(sign | quotient_bits.wrapping_add((scale << 23) as u32));
        }
        let shift = (-126 - exponent) as u32;
        if shift >= 25 {
            return f32::from_bits(sign);
        }
        let significand = (quotient_bits & 0x7F_FFFF) | 0x80_0000;
        let kept = significand >> shift;
        let dropped = significand & ((1 << shift) - 1);
        let halfway = 1 << (shift - 1);
        let remainder_bits = remainder.to_bits();
        let round_up = dropped > halfway
            || (dropped == halfway
                && if remainder_bits << 1 != 0 {
                    remainder_bits >> 31 == 0
                } else {
                    kept & 1 == 1
                });
        f32::from_bits(sign | (kept + u32::from(round_up)))
    }

    /// `nx_div(a, b)`.
    pub fn divide(self, a: f32, b: f32) -> f32 {
        if in_fast_window(a, b) {
            self.divide_core(a, b).0
        } else {
            self.divide_scaled(a, b)
        }
    }
}

/// `nx_significand`: the significand of a finite non-zero magnitude as a float in [1, 2),
/// and its exponent (subnormals normalised).
fn significand(magnitude: u32) -> (f32, i32) {
    let biased = (magnitude >> 23) as i32;
    let mut mantissa = magnitude & 0x7F_FFFF;
    let exponent = if biased == 0 {
        let shift = mantissa.leading_zeros() as i32 - 8;
        mantissa = (mantissa << shift) & 0x7F_FFFF;
        -126 - shift
    } else {
        biased - 127
    };
    (f32::from_bits(0x3F80_0000 | mantissa), exponent)
}

/// True when `nx_div` takes its fast path: |a| in [2^-75, 2^127), |b| in [2^-100, 2^126) and
/// the exponent of a / b within [-100, 126].
pub fn in_fast_window(a: f32, b: f32) -> bool {
    let a_exponent = (a.to_bits() >> 23) & 0xFF;
    let b_exponent = (b.to_bits() >> 23) & 0xFF;
    a_exponent.wrapping_sub(52) < 202
        && b_exponent.wrapping_sub(27) < 226
        && a_exponent.wrapping_sub(b_exponent).wrapping_add(100) < 227
}

/// The reference: the f64 quotient rounded to f32 (exact: 53 >= 2 * 24 + 2 bits, so the
/// double rounding is innocuous).
pub fn reference(a: f32, b: f32) -> f32 {
    (f64::from(a) / f64::from(b)) as f32
}

/// Same bits, or both NaN.
pub fn same(actual: f32, expected: f32) -> bool {
    actual.to_bits() == expected.to_bits() || (actual.is_nan() && expected.is_nan())
}
