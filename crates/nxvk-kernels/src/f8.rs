//! Nx's two 8-bit float formats on the host, with the rules of `Nx.Floating` (what
//! Nx.BinaryBackend reads and writes), which the GPU conversions (`narrow_types.rs`) follow:
//!
//! - **f8 (E5M2)**: written as the high byte of the f16 nearest the value (ties to even; the
//!   f16 is reached through f32, as nxvk rounds every f16), so the f16 -> f8 step truncates;
//!   NaN is written 0x7E, infinities 0x7C/0xFC. Read as `2^(e - 15) * (1 + m/4)` for every
//!   exponent other than 0 and 31, *and for exponent 0 with a non-zero mantissa*: Nx reads
//!   the E5M2 subnormals as if they were normal (0x01 reads 2^-15 * 1.25, where IEEE-style
//!   formats would read 2^-16). nxvk follows Nx here.
//! - **f8_e4m3fn (E4M3, finite, no infinities)**: written by clamping to [-448, 448] (so
//!   infinities saturate), exponent `floor(log2 |x|)`, mantissa rounded half away from zero and
//!   capped at 7 (no carry into the exponent: 1.97 writes 1.875); below 2^-6 the subnormal
//!   mantissa `round(|x| * 512)`, capped at 7; NaN is 0x7F, -0.0 is 0x80. Read exactly
//!   (`S.1111.111` is NaN, exponent 0 is subnormal).

use nxvk_core::f16;

/// The bits Nx writes for NaN in E5M2.
pub const E5M2_NAN: u8 = 0x7E;

/// The bits Nx writes for NaN in E4M3FN.
pub const E4M3FN_NAN: u8 = 0x7F;

/// The E5M2 value Nx reads from `bits`.
pub fn e5m2_to_f64(bits: u8) -> f64 {
    let negative = bits & 0x80 != 0;
    let exponent = i32::from((bits >> 2) & 0x1F);
    let mantissa = f64::from(bits & 0x3);
    let magnitude = match (exponent, mantissa == 0.0) {
        (31, true) => f64::INFINITY,
        (31, false) => return f64::NAN,
        (0, true) => 0.0,
        _ => 2f64.powi(exponent - 15) * (1.0 + mantissa / 4.0),
    };
    if negative { -magnitude } else { magnitude }
}

/// The E5M2 bits Nx writes for `value`.
pub fn e5m2_from_f64(value: f64) -> u8 {
    if value.is_nan() {
        return E5M2_NAN;
    }
    (f16::from_f32(value as f32).to_bits() >> 8) as u8
}

/// The E4M3FN value Nx reads from `bits`.
pub fn e4m3fn_to_f64(bits: u8) -> f64 {
    let negative = bits & 0x80 != 0;
    let exponent = i32::from((bits >> 3) & 0xF);
    let mantissa = f64::from(bits & 0x7);
    let magnitude = match exponent {
        15 if mantissa == 7.0 => return f64::NAN,
        0 => mantissa / 512.0,
        _ => 2f64.powi(exponent - 7) * (1.0 + mantissa / 8.0),
    };
    if negative { -magnitude } else { magnitude }
}

/// The E4M3FN bits Nx writes for `value`.
pub fn e4m3fn_from_f64(value: f64) -> u8 {
    if value.is_nan() {
        return E4M3FN_NAN;
    }
    if value == 0.0 {
        return if value.is_sign_negative() { 0x80 } else { 0 };
    }
    let clamped = value.clamp(-448.0, 448.0);
    let sign = if clamped < 0.0 { 0x80 } else { 0 };
    let magnitude = clamped.abs();
    let unbiased = magnitude.log2().floor();
    let biased = unbiased as i32 + 7;
    if biased <= 0 {
        return sign | ((magnitude * 512.0).round() as u8).min(7);
    }
    let significand = magnitude / 2f64.powf(unbiased);
    let mantissa = ((significand - 1.0) * 8.0).round().clamp(0.0, 7.0) as u8;
    // Exponent 15 with mantissa 7 is NaN: the largest finite value is 448 (mantissa 6).
    let mantissa = if biased >= 15 {
        mantissa.min(6)
    } else {
        mantissa
    };
    sign | ((biased.min(15) as u8) << 3) | mantissa
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nx.Floating's doctests and special values.
    #[test]
    fn follows_nx_floating() {
        assert_eq!(e4m3fn_from_f64(1.0), 0x38);
        assert_eq!(e4m3fn_from_f64(448.0), 0x7E);
        assert_eq!(e4m3fn_from_f64(-448.0), 0xFE);
        assert_eq!(e4m3fn_from_f64(f64::INFINITY), 0x7E);
        assert_eq!(e4m3fn_from_f64(f64::NEG_INFINITY), 0xFE);
        assert_eq!(e4m3fn_from_f64(1e6), 0x7E);
        assert_eq!(e4m3fn_from_f64(f64::NAN), 0x7F);
        assert_eq!(e4m3fn_from_f64(-0.0), 0x80);
        assert_eq!(
            e4m3fn_from_f64(1.97),
            0x3F,
            "capped at mantissa 7, no carry"
        );
        assert!(e4m3fn_to_f64(0x7F).is_nan());
        assert_eq!(e4m3fn_to_f64(0x7E), 448.0);
        assert_eq!(e4m3fn_to_f64(0x01), 2f64.powi(-9));
        assert_eq!(e5m2_from_f64(1.0), 0x3C);
        assert_eq!(e5m2_from_f64(-2.0), 0xC0);
        assert_eq!(e5m2_from_f64(f64::INFINITY), 0x7C);
        assert_eq!(e5m2_from_f64(1e6), 0x7C);
        assert_eq!(e5m2_from_f64(f64::NAN), 0x7E);
        assert_eq!(e5m2_from_f64(1.875), 0x3F, "the f16 -> f8 step truncates");
        assert_eq!(e5m2_to_f64(0xFC), f64::NEG_INFINITY);
        assert!(e5m2_to_f64(0x7D).is_nan());
        assert_eq!(
            e5m2_to_f64(0x01),
            2f64.powi(-15) * 1.25,
            "Nx's subnormal reading"
        );
        for bits in 0..=255u8 {
            // Normal values survive a round trip in both formats.
            let value = e4m3fn_to_f64(bits);
            if !value.is_nan() {
                assert_eq!(e4m3fn_from_f64(value), bits, "{bits:#x}");
            }
            let value = e5m2_to_f64(bits);
            if (bits >> 2) & 0x1F != 0 && !value.is_nan() {
                assert_eq!(e5m2_from_f64(value), bits, "{bits:#x}");
            }
        }
    }
}
