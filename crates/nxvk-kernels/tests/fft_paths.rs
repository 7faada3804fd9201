//! The FFT's paths at and around their boundaries, against an f64 host DFT: power-of-two
//! rows (complex or real) from 2 to 2^15 (one block pass up to 2048 c64 / 1,024 c128, the
//! four-step pair of passes above, with every radix-8/4/2 stage mix), batches of rows,
//! either axis, `length` padding and truncation, forward and inverse, c64 and c128;
//! Bluestein lengths whose convolutions fall on either side of the four-step boundary, and
//! one beyond two block passes; a NaN kept in its row; empty and rank-0 inputs; and null
//! arms.
//!
//! Error bound: an FFT in precision `eps` has a root-mean-square error of about
//! `eps log2(n)` times the root-mean-square of its result, and the largest element error is
//! a few times that. Every element must be within
//! `factor * eps * (log2(m) + 1) * rms(result)`, `rms` taken over each row, where `m` is the
//! length of the power-of-two transforms that run: `n` itself, with [`POWER_OF_TWO_FACTOR`],
//! or Bluestein's convolution length (`2n - 1` rounded up), with [`BLUESTEIN_FACTOR`] (its
//! chirp products and two transforms of a longer row add error).

mod common;

use common::*;
use nxvk_core::{Complex32, Complex64, DType, Tensor};
use nxvk_kernels::fft::{self, Transform};
use proptest::prelude::*;
use std::f64::consts::PI;

/// The allowed element error in units of `eps (log2(m) + 1) rms(result)`.
const POWER_OF_TWO_FACTOR: f64 = 8.0;
const BLUESTEIN_FACTOR: f64 = 24.0;

/// The element error allowed in a transform of `length` whose result has root-mean-square
/// `rms`.
fn error_bound(dtype: DType, length: usize, rms: f64) -> f64 {
    let (factor, transformed) = if length.is_power_of_two() {
        (POWER_OF_TWO_FACTOR, length)
    } else {
        (BLUESTEIN_FACTOR, (2 * length - 1).next_power_of_two())
    };
    factor * precision_epsilon(dtype) * ((transformed as f64).log2() + 1.0) * rms
        + f64::MIN_POSITIVE
}

/// The unit roundoff of the arithmetic a transform of `dtype` input runs in: f32 for c64
/// and f32, f64 for c128 and f64.
fn precision_epsilon(dtype: DType) -> f64 {
    match dtype {
        DType::C64 | DType::F32 => 2f64.powi(-24),
        _ => 2f64.powi(-53),
    }
}

/// The DFT of `values` (any length), in f64: each output a direct sum over a table of the
/// roots of unity, `exp(-+2 pi i (n k mod N) / N)`, computed once.
fn host_dft(values: &[Complex64], transform: Transform) -> Vec<Complex64> {
    let length = values.len();
    let sign = match transform {
        Transform::Forward => -1.0,
        Transform::Inverse => 1.0,
    };
    let roots: Vec<Complex64> = (0..length)
        .map(|t| Complex64::from_polar(1.0, sign * 2.0 * PI * t as f64 / length as f64))
        .collect();
    (0..length)
        .map(|k| {
            values
                .iter()
                .enumerate()
                .map(|(n, value)| value * roots[(n * k) % length])
                .sum()
        })
        .collect()
}

/// The DFT of a power-of-two number of `values`, in f64, by the recursive radix-2 split
/// (fast enough for rows of 2^15 in a debug build; `the_host_fft_is_the_dft` checks it).
fn host_fft(values: &[Complex64], transform: Transform) -> Vec<Complex64> {
    let length = values.len();
    if length == 1 {
        return values.to_vec();
    }
    let even: Vec<Complex64> = values.iter().step_by(2).copied().collect();
    let odd: Vec<Complex64> = values.iter().skip(1).step_by(2).copied().collect();
    let (even, odd) = (host_fft(&even, transform), host_fft(&odd, transform));
    let sign = match transform {
        Transform::Forward => -1.0,
        Transform::Inverse => 1.0,
    };
    let mut result = vec![Complex64::new(0.0, 0.0); length];
    for k in 0..length / 2 {
        let twiddled =
            odd[k] * Complex64::from_polar(1.0, sign * 2.0 * PI * k as f64 / length as f64);
        result[k] = even[k] + twiddled;
        result[k + length / 2] = even[k] - twiddled;
    }
    result
}

/// The expected rows: each row padded with zeros or truncated to `length`, transformed, and
/// scaled by `1 / length` for an inverse.
fn expected_rows(
    rows: &[Vec<Complex64>],
    length: usize,
    transform: Transform,
) -> Vec<Vec<Complex64>> {
    rows.iter()
        .map(|row| {
            let mut padded: Vec<Complex64> = row.iter().copied().take(length).collect();
            padded.resize(length, Complex64::new(0.0, 0.0));
            let transformed = if length.is_power_of_two() {
                host_fft(&padded, transform)
            } else {
                host_dft(&padded, transform)
            };
            let scale = match transform {
                Transform::Forward => 1.0,
                Transform::Inverse => 1.0 / length as f64,
            };
            transformed.into_iter().map(|value| value * scale).collect()
        })
        .collect()
}

/// Checks each row of `actual` against `expected` within the bound of the module doc.
fn within_bound(
    actual: &[Vec<Complex64>],
    expected: &[Vec<Complex64>],
    dtype: DType,
) -> Result<(), String> {
    if actual.len() != expected.len() {
        return Err(format!(
            "{} rows, expected {}",
            actual.len(),
            expected.len()
        ));
    }
    for (row, (got, want)) in actual.iter().zip(expected).enumerate() {
        if got.len() != want.len() {
            return Err(format!(
                "row {row}: {} elements, expected {}",
                got.len(),
                want.len()
            ));
        }
        let rms =
            (want.iter().map(|value| value.norm_sqr()).sum::<f64>() / want.len() as f64).sqrt();
        let bound = error_bound(dtype, want.len(), rms);
        // The worst element (a NaN ranks above every number).
        let worst = got
            .iter()
            .zip(want)
            .map(|(got, want)| (got - want).norm())
            .enumerate()
            .max_by(|(_, a), (_, b)| a.abs().total_cmp(&b.abs()));
        if let Some((index, error)) = worst.filter(|&(_, error)| error.is_nan() || error > bound) {
            return Err(format!(
                "row {row} element {index}: got {}, expected {}, error {error:e} > bound {bound:e}",
                got[index], want[index]
            ));
        }
    }
    Ok(())
}

/// Random rows of `input_length` numbers of `dtype` (c64, c128, f32 or f64) in the unit square
/// or interval, as complex numbers (f32 parts rounded to f32, so that the reference sees
/// what the device sees).
fn random_rows(
    dtype: DType,
    rows: usize,
    input_length: usize,
    rng: &mut SplitMix,
) -> Vec<Vec<Complex64>> {
    (0..rows)
        .map(|_| {
            (0..input_length)
                .map(|_| {
                    let (re, im) = (rng.unit() * 2.0 - 1.0, rng.unit() * 2.0 - 1.0);
                    match dtype {
                        DType::C64 => Complex64::new(re as f32 as f64, im as f32 as f64),
                        DType::F32 => Complex64::new(re as f32 as f64, 0.0),
                        DType::F64 => Complex64::new(re, 0.0),
                        _ => Complex64::new(re, im),
                    }
                })
                .collect()
        })
        .collect()
}

/// A tensor of `dtype` holding `values` in `shape` (real types keep the real parts).
fn tensor(dtype: DType, shape: &[usize], values: &[Complex64]) -> Tensor {
    let real_parts = values.iter().map(|value| value.re);
    match dtype {
        DType::F32 => {
            let narrow: Vec<f32> = real_parts.map(|value| value as f32).collect();
            Tensor::from_slice(&device(), shape, &narrow).unwrap()
        }
        DType::F64 => {
            Tensor::from_slice(&device(), shape, &real_parts.collect::<Vec<_>>()).unwrap()
        }
        DType::C64 => {
            let narrow: Vec<Complex32> = values
                .iter()
                .map(|value| Complex32::new(value.re as f32, value.im as f32))
                .collect();
            Tensor::from_slice(&device(), shape, &narrow).unwrap()
        }
        _ => Tensor::from_slice(&device(), shape, values).unwrap(),
    }
}

fn values_of(tensor: &Tensor) -> Vec<Complex64> {
    match tensor.dtype() {
        DType::C64 => tensor
            .to_vec::<Complex32>()
            .unwrap()
            .into_iter()
            .map(|value| Complex64::new(f64::from(value.re), f64::from(value.im)))
            .collect(),
        _ => tensor.to_vec::<Complex64>().unwrap(),
    }
}

/// Transforms `rows` (all of `input_length`) to `length` along the last axis, or along the
/// first axis of their transpose when `along_first_axis`, and returns the result's rows.
fn device_rows(
    dtype: DType,
    rows: &[Vec<Complex64>],
    length: usize,
    transform: Transform,
    along_first_axis: bool,
) -> Result<Vec<Vec<Complex64>>, String> {
    let (count, input_length) = (rows.len(), rows[0].len());
    let explicit_length = (length != input_length).then_some(length);
    if along_first_axis {
        let columns: Vec<Complex64> = (0..input_length)
            .flat_map(|element| rows.iter().map(move |row| row[element]))
            .collect();
        let input = tensor(dtype, &[input_length, count], &columns);
        let output =
            fft::fft(&input, transform, explicit_length, 0).map_err(|error| error.to_string())?;
        let values = values_of(&output);
        Ok((0..count)
            .map(|row| (0..length).map(|k| values[k * count + row]).collect())
            .collect())
    } else {
        let flat: Vec<Complex64> = rows.concat();
        let input = tensor(dtype, &[count, input_length], &flat);
        let output =
            fft::fft(&input, transform, explicit_length, 1).map_err(|error| error.to_string())?;
        Ok(values_of(&output)
            .chunks(length)
            .map(<[Complex64]>::to_vec)
            .collect())
    }
}

#[allow(clippy::too_many_arguments)]
fn check(
    dtype: DType,
    rows: usize,
    input_length: usize,
    length: usize,
    transform: Transform,
    along_first_axis: bool,
    rng: &mut SplitMix,
) -> Result<(), String> {
    let what = format!(
        "{dtype} {rows} rows of {input_length} to {length} {transform:?} first axis {along_first_axis}"
    );
    let input = random_rows(dtype, rows, input_length, rng);
    let actual = device_rows(dtype, &input, length, transform, along_first_axis)
        .map_err(|error| format!("{what}: {error}"))?;
    within_bound(&actual, &expected_rows(&input, length, transform), dtype)
        .map_err(|why| format!("{what}: {why}"))
}

fn direction(inverse: bool) -> Transform {
    if inverse {
        Transform::Inverse
    } else {
        Transform::Forward
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(24), max_shrink_iters: 16, ..ProptestConfig::default() })]

    /// Powers of two from 2 to 2^15, complex or real input of the same length or a padded
    /// or truncated one (read so by the first pass), in batches, on either axis.
    #[test]
    fn power_of_two_lengths_match_the_dft(
        log2_length in 1u32..=15,
        rows in 1usize..=3,
        input_change in prop_oneof![Just(0i64), -3i64..=3],
        dtype in prop::sample::select(vec![DType::C64, DType::C128, DType::F32, DType::F64]),
        inverse in any::<bool>(),
        along_first_axis in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut rng = SplitMix(seed);
        let length = 1usize << log2_length;
        let input_length = (length as i64 + input_change).max(1) as usize;
        let result = check(dtype, rows, input_length, length, direction(inverse), along_first_axis, &mut rng);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    /// Bluestein lengths: odd lengths whose convolutions of `2^ceil(log2(2n - 1))` run in one
    /// block pass or as four-step passes, in both precisions.
    #[test]
    fn bluestein_lengths_match_the_dft(
        half_length in 1usize..1100,
        rows in 1usize..=2,
        double in any::<bool>(),
        inverse in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut rng = SplitMix(seed);
        let dtype = if double { DType::C128 } else { DType::C64 };
        let length = 2 * half_length + 1;
        let result = check(dtype, rows, length, length, direction(inverse), false, &mut rng);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

/// Lengths at each boundary in both precisions: the largest single block pass, the first
/// four-step lengths, and Bluestein lengths whose convolutions straddle the block limit.
#[test]
fn boundary_lengths_match_the_dft() {
    let mut rng = SplitMix(41);
    for (dtype, lengths) in [
        (DType::C64, [1024, 2048, 4096, 8192, 1024, 1025]),
        (DType::C128, [512, 1024, 2048, 4096, 512, 513]),
    ] {
        for length in lengths {
            for transform in [Transform::Forward, Transform::Inverse] {
                check(dtype, 2, length, length, transform, false, &mut rng).unwrap();
            }
        }
    }
}

/// The reference itself: the recursive FFT agrees with the direct sum.
#[test]
fn the_host_fft_is_the_dft() {
    let mut rng = SplitMix(7);
    let row = random_rows(DType::C128, 1, 256, &mut rng).remove(0);
    for transform in [Transform::Forward, Transform::Inverse] {
        let fast = host_fft(&row, transform);
        let direct = host_dft(&row, transform);
        let worst = fast
            .iter()
            .zip(&direct)
            .map(|(a, b)| (a - b).norm())
            .fold(0.0, f64::max);
        assert!(worst < 1e-11, "{transform:?}: {worst}");
    }
}

/// Null arms: the bound rejects one element off by ten times the bound, a transform of the
/// wrong direction, and a c64 result held to c128's bound.
#[test]
fn the_bound_rejects_wrong_results() {
    let mut rng = SplitMix(9);
    let input = random_rows(DType::C64, 2, 4096, &mut rng);
    let expected = expected_rows(&input, 4096, Transform::Forward);
    let actual = device_rows(DType::C64, &input, 4096, Transform::Forward, false).unwrap();
    within_bound(&actual, &expected, DType::C64).unwrap();
    let rms = (expected[1]
        .iter()
        .map(|value| value.norm_sqr())
        .sum::<f64>()
        / 4096.0)
        .sqrt();
    let bound = error_bound(DType::C64, 4096, rms);
    let mut perturbed = actual.clone();
    perturbed[1][777] += Complex64::new(10.0 * bound, 0.0);
    assert!(within_bound(&perturbed, &expected, DType::C64).is_err());
    let wrong_direction: Vec<Vec<Complex64>> = expected_rows(&input, 4096, Transform::Inverse)
        .into_iter()
        .map(|row| row.into_iter().map(|value| value * 4096.0).collect())
        .collect();
    assert!(within_bound(&actual, &wrong_direction, DType::C64).is_err());
    assert!(within_bound(&actual, &expected, DType::C128).is_err());
}

/// A NaN stays in its row: every output of that row is NaN (each depends on every input),
/// and the other rows of the batch still match the DFT, in a block pass, the four-step
/// passes and Bluestein; the bound rejects a NaN result (null arm).
#[test]
fn nan_stays_in_its_row() {
    let mut rng = SplitMix(13);
    for (dtype, length) in [
        (DType::C64, 256),
        (DType::C64, 8192),
        (DType::C128, 4096),
        (DType::C64, 1000),
    ] {
        let mut input = random_rows(dtype, 3, length, &mut rng);
        input[1][length / 3] = Complex64::new(f64::NAN, 0.0);
        let actual = device_rows(dtype, &input, length, Transform::Forward, false).unwrap();
        assert!(
            actual[1]
                .iter()
                .all(|value| value.re.is_nan() || value.im.is_nan()),
            "{dtype} {length}: a finite output in the NaN row"
        );
        let expected = expected_rows(&input, length, Transform::Forward);
        for row in [0, 2] {
            within_bound(&actual[row..=row], &expected[row..=row], dtype).unwrap();
        }
        assert!(within_bound(&actual[1..=1], &expected[0..=0], dtype).is_err());
    }
}

/// Empty batches give empty results of the right shape and type; an empty axis padded to a
/// length transforms zeros; a rank-0 tensor is an error, not a panic.
#[test]
fn empty_and_scalar_inputs() {
    let device = device();
    let no_rows = Tensor::zeros(&device, DType::C64, &[0, 4096]).unwrap();
    let output = fft::fft(&no_rows, Transform::Forward, None, 1).unwrap();
    assert_eq!(
        (output.shape(), output.dtype()),
        (&[0, 4096][..], DType::C64)
    );
    let empty_axis = Tensor::zeros(&device, DType::C128, &[2, 0]).unwrap();
    let output = fft::fft(&empty_axis, Transform::Inverse, Some(8), 1).unwrap();
    assert_eq!(output.shape(), &[2, 8]);
    let values = values_of(&output);
    assert!(
        values
            .iter()
            .all(|value| *value == Complex64::new(0.0, 0.0)),
        "{values:?}"
    );
    let scalar = Tensor::zeros(&device, DType::C64, &[]).unwrap();
    assert!(fft::fft(&scalar, Transform::Forward, None, 0).is_err());
}

/// Bluestein beyond two block passes (c128 of 2^19 + 1: a convolution of 2^21, run as the
/// load, radix-2, pointwise and store passes, the radix-2 passes in place with an odd pass
/// count, which once ended in the scratch buffer): a complex exponential of frequency `f`
/// transforms to `n` at bin `f` and zero elsewhere, an impulse at `a` to
/// `exp(-2 pi i a k / n)`; the null arm moves the frequency by one bin.
#[test]
fn huge_bluestein_rows_transform() {
    let length = (1usize << 19) + 1;
    let (frequency, position) = (4321usize, 99usize);
    let angle = |a: usize, b: usize, sign: f64| {
        sign * 2.0 * PI * ((a as u128 * b as u128) % length as u128) as f64 / length as f64
    };
    let values: Vec<Complex64> = (0..length)
        .map(|n| {
            Complex64::from_polar(1.0, angle(frequency, n, 1.0))
                + if n == position { 1.0 } else { 0.0 }
        })
        .collect();
    let input = tensor(DType::C128, &[length], &values);
    let output = values_of(&fft::fft(&input, Transform::Forward, None, 0).unwrap());
    let expected = |k: usize, frequency: usize| {
        Complex64::from_polar(1.0, angle(position, k, -1.0))
            + if k == frequency { length as f64 } else { 0.0 }
    };
    let worst = |frequency: usize| {
        (0..length)
            .map(|k| (output[k] - expected(k, frequency)).norm())
            .fold(0.0, f64::max)
    };
    assert!(
        worst(frequency) < 1e-7,
        "largest error {}",
        worst(frequency)
    );
    assert!(worst(frequency + 1) > 1.0);
}
