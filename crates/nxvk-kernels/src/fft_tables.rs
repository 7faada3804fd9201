//! The FFT's constant tables: twiddles, Bluestein's chirp and the spectrum of its convolution
//! kernel. They are computed on the host in f64 (GLSL's trigonometry is 32-bit only, and c128
//! must be accurate to f64), rounded to the transform's precision, and kept on the device as
//! nxvk-core resident tables: one upload per (device, length, precision and, for the
//! spectrum, direction), none on later calls.
//!
//! Twiddles are stored in two levels (see `fft_codegen`'s `twiddle`): `W^i` for `i` below
//! `2^log2_fine` and then `W^(i 2^log2_fine)`, about `2 sqrt(N)` entries instead of `N`, so
//! that a transform of 2^14 reads 2 KiB of twiddles that stay in cache rather than 128 KiB.
//! Mixed-radix lengths (`2^a 3^b 5^c 7^d`) use the same form with a power-of-two fine level.

use crate::fft::Transform;
use crate::fft_codegen::Precision;
use nxvk_core::{Complex64, Device, DeviceBuffer, Result};
use std::f64::consts::PI;
use std::sync::Arc;

/// The twiddles of transforms of `2^log2_length` on the device.
pub(crate) struct TwiddleTable {
    pub buffer: DeviceBuffer,
    pub log2_length: u32,
    /// Entries of the fine level, as a power of two.
    pub log2_fine: u32,
}

/// Bluestein's tables for one length on the device: the chirp (conjugated in the kernels for
/// an inverse) and the spectrum of the convolution kernel for one direction.
pub(crate) struct BluesteinTables {
    pub chirp: DeviceBuffer,
    pub spectrum: DeviceBuffer,
}

/// Complex numbers as interleaved bytes of the precision.
fn complex_bytes(precision: Precision, values: &[Complex64]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(values.len() * precision.complex_bytes() as usize);
    for value in values {
        match precision {
            Precision::Single => {
                bytes.extend_from_slice(&(value.re as f32).to_le_bytes());
                bytes.extend_from_slice(&(value.im as f32).to_le_bytes());
            }
            Precision::Double => {
                bytes.extend_from_slice(&value.re.to_le_bytes());
                bytes.extend_from_slice(&value.im.to_le_bytes());
            }
        }
    }
    bytes
}

/// `exp(-2 pi i t / length)`, exactly reduced (`t` below the length).
fn root_of_unity(length: usize, t: usize) -> Complex64 {
    Complex64::from_polar(1.0, -2.0 * PI * t as f64 / length as f64)
}

/// The two-level twiddle table of transforms of `2^log2_length`, on the device.
pub(crate) fn twiddle_table(
    device: &Arc<Device>,
    precision: Precision,
    log2_length: u32,
) -> Result<TwiddleTable> {
    let (buffer, log2_fine) = two_level_twiddles(device, precision, 1 << log2_length)?;
    Ok(TwiddleTable {
        buffer,
        log2_length,
        log2_fine,
    })
}

/// The two-level twiddle table of transforms of any `length` (mixed-radix lengths too), on
/// the device: `W^i` for `i` below `2^log2_fine`, then `W^(i 2^log2_fine)` up to the length
/// (`W = exp(-2 pi i / length)`, the fine level the power of two at least `sqrt(length)`), and
/// `log2_fine`. For a power of two this is the table the block kernels were tuned with.
pub(crate) fn two_level_twiddles(
    device: &Arc<Device>,
    precision: Precision,
    length: usize,
) -> Result<(DeviceBuffer, u32)> {
    let log2_fine = length.next_power_of_two().trailing_zeros().div_ceil(2);
    let key = format!("fft twiddles {} {length}", precision.name());
    let buffer = device.resident_table("fft", &key, || {
        let fine = (0..1usize << log2_fine).map(|t| root_of_unity(length, t));
        let coarse =
            (0..length.div_ceil(1 << log2_fine)).map(|t| root_of_unity(length, t << log2_fine));
        complex_bytes(precision, &fine.chain(coarse).collect::<Vec<_>>())
    })?;
    Ok((buffer, log2_fine))
}

/// Bluestein's tables for transforms of `length` through circular convolutions of `padded`
/// (a power of two at least `2 length - 1`), on the device.
pub(crate) fn bluestein_tables(
    device: &Arc<Device>,
    precision: Precision,
    transform: Transform,
    length: usize,
    padded: usize,
) -> Result<BluesteinTables> {
    let name = precision.name();
    let chirp = device.resident_table("fft", &format!("fft chirp {name} {length}"), || {
        complex_bytes(precision, &chirp_values(length))
    })?;
    let direction = match transform {
        Transform::Forward => "forward",
        Transform::Inverse => "inverse",
    };
    let spectrum_key = format!("fft chirp spectrum {name} {length} in {padded} {direction}");
    let spectrum = device.resident_table("fft", &spectrum_key, || {
        complex_bytes(precision, &kernel_spectrum(transform, length, padded))
    })?;
    Ok(BluesteinTables { chirp, spectrum })
}

/// Bluestein's chirp `w_k = exp(-pi i k^2 / n)`, with `k^2` reduced modulo `2n` exactly.
fn chirp_values(length: usize) -> Vec<Complex64> {
    let modulus = 2 * length as u128;
    (0..length)
        .map(|k| {
            let square = (k as u128 * k as u128) % modulus;
            Complex64::from_polar(1.0, -PI * square as f64 / length as f64)
        })
        .collect()
}

/// The spectrum of the convolution kernel: the conjugated chirp (the chirp itself for an
/// inverse) at `k` and `padded - k`, zero between, transformed.
fn kernel_spectrum(transform: Transform, length: usize, padded: usize) -> Vec<Complex64> {
    let mut kernel = vec![Complex64::new(0.0, 0.0); padded];
    for (k, value) in chirp_values(length).into_iter().enumerate() {
        let value = match transform {
            Transform::Forward => value.conj(),
            Transform::Inverse => value,
        };
        kernel[k] = value;
        if k > 0 {
            kernel[padded - k] = value;
        }
    }
    host_fft(&mut kernel);
    kernel
}

/// An in-place iterative radix-2 FFT on the host (f64), for the kernel's spectrum.
fn host_fft(values: &mut [Complex64]) {
    let length = values.len();
    let bits = length.trailing_zeros();
    if length <= 1 {
        return;
    }
    for index in 0..length {
        let reversed = index.reverse_bits() >> (usize::BITS - bits);
        if reversed > index {
            values.swap(index, reversed);
        }
    }
    let mut size = 2;
    while size <= length {
        for start in (0..length).step_by(size) {
            for offset in 0..size / 2 {
                let twiddle = if offset == 0 {
                    Complex64::new(1.0, 0.0)
                } else {
                    Complex64::from_polar(1.0, -2.0 * PI * offset as f64 / size as f64)
                };
                let a = values[start + offset];
                let b = values[start + offset + size / 2] * twiddle;
                values[start + offset] = a + b;
                values[start + offset + size / 2] = a - b;
            }
        }
        size *= 2;
    }
}
