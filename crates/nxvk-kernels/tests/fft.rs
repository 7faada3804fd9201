//! FFT and IFFT against a direct O(n^2) DFT in f64: random shapes, axes and lengths (padding,
//! truncation, powers of two, mixed-radix and Bluestein lengths), real, integer and complex inputs, c64
//! (f32 arithmetic) and c128; long rows of both kinds; fft2; and a null arm.

mod common;

use common::*;
use nxvk_core::{Complex64, DType, Tensor};
use nxvk_kernels::fft::{self, Transform};
use nxvk_kernels::reference::{self, Value};
use proptest::prelude::*;
use std::f64::consts::PI;

fn cases() -> u32 {
    std::env::var("NXVK_TEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(24)
}

/// Finite values in [-1, 1] of `dtype` (complex ones with both parts), as stored.
fn make(dtype: DType, shape: &[usize], rng: &mut SplitMix) -> (Tensor, Vec<Complex64>) {
    let n: usize = shape.iter().product();
    let values: Vec<Value> = (0..n)
        .map(|_| {
            let re = rng.unit() * 2.0 - 1.0;
            let im = rng.unit() * 2.0 - 1.0;
            let value = match dtype.class() {
                nxvk_core::DTypeClass::Complex => Value::Complex(Complex64::new(re, im)),
                nxvk_core::DTypeClass::Float => Value::Float(re),
                _ => Value::Int((re * 100.0) as i128),
            };
            reference::round_to(value, dtype)
        })
        .collect();
    let tensor =
        Tensor::from_bytes(&device(), dtype, shape, &reference::encode(dtype, &values)).unwrap();
    let complex = values
        .iter()
        .map(|value| match *value {
            Value::Complex(value) => value,
            Value::Float(value) => Complex64::new(value, 0.0),
            Value::Int(value) => Complex64::new(value as f64, 0.0),
        })
        .collect();
    (tensor, complex)
}

/// The host transform along `axis` with `length` (pad or truncate), in f64.
fn host_fft(
    values: &[Complex64],
    shape: &[usize],
    axis: usize,
    length: usize,
    transform: Transform,
) -> (Vec<usize>, Vec<Complex64>) {
    let input_length = shape[axis];
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let mut out_shape = shape.to_vec();
    out_shape[axis] = length;
    let mut result = vec![Complex64::new(0.0, 0.0); outer * length * inner];
    let sign = match transform {
        Transform::Forward => -1.0,
        Transform::Inverse => 1.0,
    };
    let scale = match transform {
        Transform::Forward => 1.0,
        Transform::Inverse => 1.0 / length as f64,
    };
    for o in 0..outer {
        for i in 0..inner {
            for k in 0..length {
                let mut sum = Complex64::new(0.0, 0.0);
                for n in 0..input_length.min(length) {
                    let angle = sign * 2.0 * PI * ((n * k) % length) as f64 / length as f64;
                    sum += values[(o * input_length + n) * inner + i]
                        * Complex64::from_polar(1.0, angle);
                }
                result[(o * length + k) * inner + i] = sum * scale;
            }
        }
    }
    (out_shape, result)
}

/// Every element within `tolerance` times the largest row sum of magnitudes (plus one).
fn close(
    actual: &[Value],
    expected: &[Complex64],
    tolerance: f64,
    magnitude: f64,
) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{} elements, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    let bound = tolerance * (magnitude + 1.0);
    for (index, (value, want)) in actual.iter().zip(expected).enumerate() {
        let Value::Complex(got) = *value else {
            return Err(format!("element {index} is {value:?}, not complex"));
        };
        let error = (got - want).norm();
        if error.is_nan() || error > bound {
            return Err(format!(
                "element {index}: got {got}, expected {want} (bound {bound:e})"
            ));
        }
    }
    Ok(())
}

fn check(
    dtype: DType,
    shape: &[usize],
    axis: usize,
    length: Option<usize>,
    transform: Transform,
    rng: &mut SplitMix,
) -> Result<(), String> {
    let (input, values) = make(dtype, shape, rng);
    let what = format!("{dtype} {shape:?} axis {axis} length {length:?} {transform:?}");
    let output =
        fft::fft(&input, transform, length, axis).map_err(|error| format!("{what}: {error}"))?;
    let transform_length = length.unwrap_or(shape[axis]);
    let (want_shape, want) = host_fft(&values, shape, axis, transform_length, transform);
    let want_dtype = if matches!(dtype, DType::F64 | DType::C128) {
        DType::C128
    } else {
        DType::C64
    };
    if output.shape() != want_shape || output.dtype() != want_dtype {
        return Err(format!(
            "{what}: got {:?} {}",
            output.shape(),
            output.dtype()
        ));
    }
    let magnitude: f64 = values
        .iter()
        .map(|value| value.norm())
        .sum::<f64>()
        .max(1.0);
    let tolerance = if want_dtype == DType::C64 {
        2e-6
    } else {
        1e-14
    };
    close(&read(&output), &want, tolerance, magnitude).map_err(|why| format!("{what}: {why}"))
}

fn case() -> impl Strategy<Value = (Vec<usize>, usize, Option<usize>, bool, u64)> {
    (
        prop::collection::vec(1usize..10, 1..=3),
        any::<usize>(),
        prop::option::of(1usize..20),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(shape, axis, length, inverse, seed)| {
            let axis = axis % shape.len();
            (shape, axis, length, inverse, seed)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn transforms_match_the_dft((shape, axis, length, inverse, seed) in case()) {
        let mut rng = SplitMix(seed);
        let transform = if inverse { Transform::Inverse } else { Transform::Forward };
        for dtype in [DType::C64, DType::C128, DType::F32, DType::F64, DType::S32, DType::BF16] {
            if let Err(why) = check(dtype, &shape, axis, length, transform, &mut rng) {
                prop_assert!(false, "{}", why);
            }
        }
    }
}

/// Long rows: a power of two (Stockham passes only) and a prime (Bluestein), both precisions.
#[test]
fn long_rows_transform() {
    let mut rng = SplitMix(11);
    for (dtype, shape) in [
        (DType::C64, vec![2, 2048]),
        (DType::C128, vec![1, 1024]),
        (DType::C64, vec![1, 1021]),
        (DType::C128, vec![2, 997]),
    ] {
        for transform in [Transform::Forward, Transform::Inverse] {
            check(dtype, &shape, 1, None, transform, &mut rng).unwrap();
        }
    }
}

/// fft2 is fft along both axes; ifft2 inverts it.
#[test]
fn fft2_round_trips() {
    let mut rng = SplitMix(5);
    let (input, values) = make(DType::C128, &[3, 6, 5], &mut rng);
    let spectrum = fft::fft2(&input, Transform::Forward, None, [1, 2]).unwrap();
    let (_, rows) = host_fft(&values, &[3, 6, 5], 2, 5, Transform::Forward);
    let (_, both) = host_fft(&rows, &[3, 6, 5], 1, 6, Transform::Forward);
    close(&read(&spectrum), &both, 1e-13, 60.0).unwrap();
    let back = fft::fft2(&spectrum, Transform::Inverse, None, [1, 2]).unwrap();
    close(&read(&back), &values, 1e-13, 60.0).unwrap();
}

/// Bad operands are errors, never panics.
#[test]
fn bad_operands_are_errors() {
    let device = device();
    let scalar = Tensor::from_slice(&device, &[], &[1.0f32]).unwrap();
    assert!(fft::fft(&scalar, Transform::Forward, None, 0).is_err());
    let row = Tensor::from_slice(&device, &[2], &[1.0f32, 2.0]).unwrap();
    assert!(fft::fft(&row, Transform::Forward, Some(0), 0).is_err());
    assert!(fft::fft(&row, Transform::Forward, None, 1).is_err());
    let sub_byte = Tensor::zeros(&device, DType::U4, &[4]).unwrap();
    assert!(fft::fft(&sub_byte, Transform::Forward, None, 0).is_err());
}

/// Null arm: the comparison rejects the transform of the wrong sign and an unscaled inverse.
#[test]
fn the_comparison_rejects_wrong_transforms() {
    let mut rng = SplitMix(3);
    let (input, values) = make(DType::C64, &[12], &mut rng);
    let output = read(&fft::fft(&input, Transform::Forward, None, 0).unwrap());
    let magnitude: f64 = values.iter().map(|value| value.norm()).sum();
    let (_, forward) = host_fft(&values, &[12], 0, 12, Transform::Forward);
    assert!(close(&output, &forward, 2e-6, magnitude).is_ok());
    let (_, wrong_sign) = host_fft(&values, &[12], 0, 12, Transform::Inverse);
    let unscaled: Vec<Complex64> = wrong_sign.iter().map(|value| value * 12.0).collect();
    assert!(close(&output, &unscaled, 2e-6, magnitude).is_err());
    let inverse = read(&fft::fft(&input, Transform::Inverse, None, 0).unwrap());
    assert!(close(&inverse, &unscaled, 2e-6, magnitude).is_err());
    assert!(close(&inverse, &wrong_sign, 2e-6, magnitude).is_ok());
}

/// Rows longer than the four-step limit (2^20) run one radix-2 dispatch per stage: a
/// complex exponential of frequency f transforms to n at bin f and zero elsewhere, and an
/// impulse at position a to exp(-2 pi i a k / n).
#[test]
fn huge_rows_transform() {
    let device = device();
    let length = 1usize << 21;
    let (frequency, position) = (12_345usize, 777usize);
    let values: Vec<Complex64> = (0..length)
        .map(|n| {
            let angle = 2.0 * PI * ((frequency * n) % length) as f64 / length as f64;
            Complex64::from_polar(1.0, angle) + if n == position { 1.0 } else { 0.0 }
        })
        .collect();
    let input = Tensor::from_slice(&device, &[length], &values).unwrap();
    let output = fft::fft(&input, Transform::Forward, None, 0)
        .unwrap()
        .to_vec::<Complex64>()
        .unwrap();
    let expected = |k: usize| {
        let impulse = Complex64::from_polar(
            1.0,
            -2.0 * PI * ((position * k) % length) as f64 / length as f64,
        );
        impulse + if k == frequency { length as f64 } else { 0.0 }
    };
    let worst = (0..length)
        .map(|k| (output[k] - expected(k)).norm())
        .fold(0.0, f64::max);
    assert!(worst < 1e-6, "largest error {worst}");
    // Null arm: the same check against the wrong frequency fails.
    assert!((output[frequency + 1] - (expected(frequency + 1) + length as f64)).norm() > 1.0);
}

fn close_reals(actual: &[f32], expected: &[f32]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (got, want) in actual.iter().zip(expected) {
        assert!((got - want).abs() < 1e-5, "{actual:?} vs {expected:?}");
    }
}

/// rfft and irfft: Nx's documented examples, and irfft(rfft(x)) == x for odd and even
/// lengths (Bluestein and powers of two) on either axis.
#[test]
fn real_transforms_match_nx() {
    use nxvk_core::Complex32;
    let device = device();
    let signal = Tensor::from_slice(&device, &[6], &[1.0f32, 1.0, 1.0, 0.0, 1.0, 1.0]).unwrap();
    let spectrum = fft::rfft(&signal, None, 0).unwrap();
    let values = spectrum.to_vec::<Complex32>().unwrap();
    let expected = [5.0, 1.0, -1.0, 1.0];
    assert_eq!(values.len(), 4);
    for (got, want) in values.iter().zip(expected) {
        assert!(
            (got - Complex32::new(want, 0.0)).norm() < 1e-5,
            "{values:?}"
        );
    }
    let pair = Tensor::from_slice(&device, &[2], &[1.0f32, 1.0]).unwrap();
    let padded = fft::rfft(&pair, Some(4), 0)
        .unwrap()
        .to_vec::<Complex32>()
        .unwrap();
    let expected = [
        Complex32::new(2.0, 0.0),
        Complex32::new(1.0, -1.0),
        Complex32::new(0.0, 0.0),
    ];
    for (got, want) in padded.iter().zip(expected) {
        assert!((got - want).norm() < 1e-5, "{padded:?}");
    }
    let half = Tensor::from_slice(
        &device,
        &[2, 3],
        &[
            Complex32::new(2.0, 0.0),
            Complex32::new(1.0, -1.0),
            Complex32::new(0.0, 0.0),
            Complex32::new(4.0, 0.0),
            Complex32::new(0.0, 0.0),
            Complex32::new(0.0, 0.0),
        ],
    )
    .unwrap();
    let back = fft::irfft(&half, None, 1).unwrap();
    assert_eq!(back.shape(), &[2, 4]);
    close_reals(
        &back.to_vec::<f32>().unwrap(),
        &[1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0],
    );
    let five = Tensor::from_slice(&device, &[4], &[5.0f32, 1.0, -1.0, 1.0]).unwrap();
    close_reals(
        &fft::irfft(&five, None, 0).unwrap().to_vec::<f32>().unwrap(),
        &[1.0, 1.0, 1.0, 0.0, 1.0, 1.0],
    );
    let mut rng = SplitMix(21);
    for (shape, axis, length) in [(vec![3, 7], 1, 7), (vec![8, 2], 0, 8), (vec![5, 3], 0, 5)] {
        let (input, values) = make(DType::F64, &shape, &mut rng);
        let spectrum = fft::rfft(&input, None, axis).unwrap();
        let round_trip = fft::irfft(&spectrum, Some(length), axis).unwrap();
        assert_eq!(round_trip.dtype(), DType::F64);
        let got = round_trip.to_vec::<f64>().unwrap();
        for (got, want) in got.iter().zip(&values) {
            assert!(
                (got - want.re).abs() < 1e-12,
                "{shape:?} axis {axis}: {got} vs {want}"
            );
        }
    }
    assert!(fft::rfft(&half, None, 1).is_err());
    assert!(
        fft::irfft(
            &pair.reshape(&[2]).unwrap().slice(&[0], &[1]).unwrap(),
            None,
            0
        )
        .is_err()
    );
}

/// irfft(rfft(x)) == x for mixed-radix lengths in one block pass and in the four-step pair
/// (irfft's Hermitian half mirrored by the first pass), in f64 (c128) and f32 (c64), with a
/// batch of two on the last axis; the null arm: the same comparison against the signal moved
/// by one element fails.
#[test]
fn real_round_trips_of_mixed_lengths() {
    let mut rng = SplitMix(6144);
    for (dtype, length, tolerance) in [
        (DType::F64, 1000, 1e-12),
        (DType::F64, 3 << 11, 1e-12),
        (DType::F32, 3 << 12, 1e-4),
        (DType::F32, 105, 1e-5),
    ] {
        let (input, values) = make(dtype, &[2, length], &mut rng);
        let spectrum = fft::rfft(&input, None, 1).unwrap();
        assert_eq!(spectrum.shape(), &[2, length / 2 + 1]);
        let round_trip = fft::irfft(&spectrum, Some(length), 1).unwrap();
        let got: Vec<f64> = match dtype {
            DType::F64 => round_trip.to_vec::<f64>().unwrap(),
            _ => round_trip
                .to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect(),
        };
        let worst = |shift: usize| {
            (0..2 * length)
                .map(|index| {
                    let row = index / length;
                    let source = row * length + (index % length + shift) % length;
                    (got[index] - values[source].re).abs()
                })
                .fold(0.0, f64::max)
        };
        assert!(worst(0) < tolerance, "{dtype} {length}: {}", worst(0));
        assert!(
            worst(1) > tolerance,
            "{dtype} {length}: a shifted signal passed"
        );
    }
}

/// An inverse transform leaves the zero imaginary parts of a real result +0, as
/// Nx.BinaryBackend does (`ifft([5, 5, 5, 5])` is `[5.0+0.0i, 0.0+0.0i, ...]`): radix-2,
/// mixed-radix, four-step and Bluestein lengths, c64 and c128.
#[test]
fn inverse_transforms_keep_zero_imaginary_parts_positive() {
    let device = device();
    let mut zeros_seen = 0;
    for dtype in [DType::C64, DType::C128] {
        for length in [4usize, 12, 4096, 13] {
            let real = Tensor::from_slice(&device, &[length], &vec![5.0f64; length]).unwrap();
            let constant = nxvk_kernels::as_type(&real, dtype).unwrap();
            let inverse = read(&fft::fft(&constant, Transform::Inverse, None, 0).unwrap());
            for (position, value) in inverse.iter().enumerate() {
                let Value::Complex(value) = value else {
                    panic!("{dtype:?}: a complex result, not {value:?}");
                };
                if value.im == 0.0 {
                    zeros_seen += 1;
                    assert!(
                        value.im.is_sign_positive(),
                        "{dtype:?} length {length}: imaginary part -0 at {position}"
                    );
                }
            }
        }
    }
    // The check has something to look at: the radix kernels' results are exact.
    assert!(zeros_seen > 4096, "{zeros_seen} zero imaginary parts");
}
