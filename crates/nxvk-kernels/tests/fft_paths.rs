//! The FFT's paths at and around their boundaries, against an f64 host DFT: power-of-two
//! rows (complex or real) from 2 to 2^15 (one block pass up to 2048 c64 / 1,024 c128, the
//! four-step pair of passes above, with every radix-8/4/2 stage mix), batches of rows,
//! either axis, `length` padding and truncation, forward and inverse, c64 and c128;
//! mixed-radix lengths (`2^a 3^b 5^c 7^d`: 3, 5, 6, 7, 9, 12, 15, 21, 35, 49, 105, 243, 1000,
//! `3 * 2^k` up to the four-step pair, and random ones up to 16,384); Bluestein lengths (other
//! primes) whose convolutions fall on either side of the four-step boundary, and one beyond
//! two block passes; a NaN kept in its row; empty and rank-0 inputs; and null arms.
//!
//! The reference is a recursive FFT in f64 (decimation on the factors 2, 3, 5, 7), checked
//! against a direct DFT with compensated summation, whose own error does not grow with the
//! length.
//!
//! Error bound: an FFT in precision `eps` has a root-mean-square error of about
//! `eps log2(n)` times the root-mean-square of its result, and the largest element error is
//! a few times that. Every element must be within
//! `factor * eps * (log2(m) + 1) * rms(result)`, `rms` taken over each row, where `m` is the
//! length of the transforms that run: `n` itself for powers of two
//! ([`POWER_OF_TWO_FACTOR`]) and mixed-radix lengths ([`MIXED_FACTOR`]), or Bluestein's
//! convolution length (`2n - 1` rounded up), with [`BLUESTEIN_FACTOR`] (its chirp products and
//! two transforms of a longer row add error).

mod common;

use common::*;
use nxvk_core::{Complex32, Complex64, DType, Tensor};
use nxvk_kernels::fft::{self, Transform};
use proptest::prelude::*;
use std::f64::consts::PI;

/// The allowed element error in units of `eps (log2(m) + 1) rms(result)`.
const POWER_OF_TWO_FACTOR: f64 = 8.0;
const MIXED_FACTOR: f64 = 8.0;
const BLUESTEIN_FACTOR: f64 = 24.0;

/// Whether `length` has no prime factor above 7 (the mixed-radix path's lengths, up to the
/// tile capacity squared and when it splits within the tile; the lengths tested here do).
fn is_smooth(length: usize) -> bool {
    let mut rest = length;
    for radix in [2, 3, 5, 7] {
        while rest > 1 && rest.is_multiple_of(radix) {
            rest /= radix;
        }
    }
    rest == 1
}

/// The element error allowed in a transform of `length` whose result has root-mean-square
/// `rms`.
fn error_bound(dtype: DType, length: usize, rms: f64) -> f64 {
    let (factor, transformed) = if length.is_power_of_two() {
        (POWER_OF_TWO_FACTOR, length)
    } else if is_smooth(length) {
        (MIXED_FACTOR, length)
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
/// roots of unity, `exp(-+2 pi i (n k mod N) / N)`, computed once, with compensated
/// (Neumaier) summation, so that the reference's own error is a few units of the last place of
/// f64 rather than growing with the length.
fn host_dft(values: &[Complex64], transform: Transform) -> Vec<Complex64> {
    let length = values.len();
    let roots = roots_of_unity(length, transform);
    (0..length)
        .map(|k| {
            let (mut sum, mut compensation) = (Complex64::new(0.0, 0.0), Complex64::new(0.0, 0.0));
            for (n, value) in values.iter().enumerate() {
                let term = value * roots[(n * k) % length];
                let next = sum + term;
                let lost = |big: f64, small: f64, next: f64| {
                    if big.abs() >= small.abs() {
                        (big - next) + small
                    } else {
                        (small - next) + big
                    }
                };
                compensation += Complex64::new(
                    lost(sum.re, term.re, next.re),
                    lost(sum.im, term.im, next.im),
                );
                sum = next;
            }
            sum + compensation
        })
        .collect()
}

/// `exp(-+2 pi i t / length)` for `t` below `length` (the sign of the transform).
fn roots_of_unity(length: usize, transform: Transform) -> Vec<Complex64> {
    let sign = match transform {
        Transform::Forward => -1.0,
        Transform::Inverse => 1.0,
    };
    (0..length)
        .map(|t| Complex64::from_polar(1.0, sign * 2.0 * PI * t as f64 / length as f64))
        .collect()
}

/// The DFT of `values`, in f64, by recursive decimation in time on the smallest prime factor
/// `p` of the length (2, 3, 5 or 7; a longer prime row is summed directly): the `p`
/// sub-transforms of the elements `p` apart, output `k` their sum weighted by `W^(r k)`. Fast
/// enough for rows of 2^15 in a debug build; `the_host_fft_is_the_dft` checks it against the
/// direct sum.
fn host_fft(values: &[Complex64], transform: Transform) -> Vec<Complex64> {
    let length = values.len();
    let Some(factor) = [2, 3, 5, 7]
        .into_iter()
        .find(|&factor| length.is_multiple_of(factor) && factor < length)
    else {
        return host_dft(values, transform);
    };
    let part = length / factor;
    let subs: Vec<Vec<Complex64>> = (0..factor)
        .map(|r| {
            let decimated: Vec<Complex64> =
                values.iter().skip(r).step_by(factor).copied().collect();
            host_fft(&decimated, transform)
        })
        .collect();
    let roots = roots_of_unity(length, transform);
    (0..length)
        .map(|k| {
            (0..factor)
                .map(|r| subs[r][k % part] * roots[(r * k) % length])
                .sum()
        })
        .collect()
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
            let transformed = host_fft(&padded, transform);
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
    fn power_of_two_lengths_match_the_dft(log2_length in 1u32..=15, case in random_case()) {
        let result = check_random_case(1 << log2_length, case);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }

    /// Bluestein lengths: odd lengths with a prime factor above 7 (the next such odd length
    /// from a random one) whose convolutions of `2^ceil(log2(2n - 1))` run in one block pass
    /// or as four-step passes, in both precisions.
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
        let mut length = 2 * half_length + 1;
        while is_smooth(length) {
            length += 2;
        }
        let result = check(dtype, rows, length, length, direction(inverse), false, &mut rng);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(16), max_shrink_iters: 16, ..ProptestConfig::default() })]

    /// Random mixed-radix lengths up to 16,384 (one block pass up to the tile, the four-step
    /// pair above), complex or real input of the same length or a padded or truncated one, in
    /// batches, on either axis, both precisions and directions.
    #[test]
    fn smooth_lengths_match_the_dft(
        length in prop::sample::select(smooth_lengths(16_384)),
        case in random_case(),
    ) {
        let result = check_random_case(length, case);
        prop_assert!(result.is_ok(), "{}", result.unwrap_err());
    }
}

/// A random case's draws besides its length: rows, the change of the input's length (none,
/// or padding or truncating by up to 3), the dtype, inverse or not, along the first axis or
/// not, and the seed.
type RandomCase = (usize, i64, DType, bool, bool, u64);

fn random_case() -> impl Strategy<Value = RandomCase> {
    (
        1usize..=3,
        prop_oneof![Just(0i64), -3i64..=3],
        prop::sample::select(vec![DType::C64, DType::C128, DType::F32, DType::F64]),
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
}

/// [`check`] of a random case of transforms of `length`.
fn check_random_case(
    length: usize,
    (rows, input_change, dtype, inverse, along_first_axis, seed): RandomCase,
) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let input_length = (length as i64 + input_change).max(1) as usize;
    check(
        dtype,
        rows,
        input_length,
        length,
        direction(inverse),
        along_first_axis,
        &mut rng,
    )
}

/// The lengths `2^a 3^b 5^c 7^d` up to `limit` that are not powers of two.
fn smooth_lengths(limit: usize) -> Vec<usize> {
    (3..=limit)
        .filter(|&length| is_smooth(length) && !length.is_power_of_two())
        .collect()
}

/// Mixed-radix lengths: 3, 5, 6, 7, 9, 12, 15, 21, 35, 49, 105, 243, 1000, 2000 (one block
/// pass) and `3 * 2^k` up to 12,288 (one block pass up to the tile, the four-step pair of
/// passes above it in either precision), in batches of three rows, both precisions and
/// directions, along either axis, complex and real input, padded and truncated.
#[test]
fn mixed_lengths_match_the_dft() {
    let mut rng = SplitMix(105);
    let lengths = [3, 5, 6, 7, 9, 12, 15, 21, 35, 49, 105, 243, 1000, 2000]
        .into_iter()
        .chain((1..=12).map(|k| 3usize << k));
    for length in lengths {
        check_cases(
            length,
            &[
                (DType::C64, Transform::Forward, false, 0),
                (DType::C128, Transform::Inverse, false, 0),
                (DType::F32, Transform::Inverse, true, 2),
                (DType::C128, Transform::Forward, true, -1),
                (DType::C64, Transform::Inverse, false, -2),
                (DType::F64, Transform::Forward, false, 1),
            ],
            &mut rng,
        );
    }
}

/// [`check`] of three rows of `length` for each (dtype, direction, along the first axis,
/// change of the input's length) case.
fn check_cases(length: usize, cases: &[(DType, Transform, bool, i64)], rng: &mut SplitMix) {
    for &(dtype, transform, along_first_axis, input_change) in cases {
        let input_length = (length as i64 + input_change).max(1) as usize;
        check(
            dtype,
            3,
            input_length,
            length,
            transform,
            along_first_axis,
            rng,
        )
        .unwrap();
    }
}

/// c64 rows of 2^12 to 2^14 (the four-step pair, or the one-pass row kernel with
/// `NXVK_KNOB_FFT_ROW_PASS=on`): complex and real input, padded and truncated, both
/// directions, a batch of three rows along either axis.
#[test]
fn row_pass_lengths_match_the_dft() {
    let mut rng = SplitMix(16384);
    for log2_length in 12..=14 {
        check_cases(
            1 << log2_length,
            &[
                (DType::C64, Transform::Forward, false, 0),
                (DType::C64, Transform::Inverse, false, 0),
                (DType::F32, Transform::Forward, false, -5),
                (DType::C64, Transform::Inverse, true, 3),
            ],
            &mut rng,
        );
    }
}

/// Other primes still go through Bluestein and match: 11, 13, 22, 33, 1009 and 2 * 1009, both
/// precisions and directions, in batches of two.
#[test]
fn other_primes_match_the_dft() {
    let mut rng = SplitMix(1009);
    for length in [11, 13, 22, 33, 1009, 2018] {
        assert!(!is_smooth(length));
        for dtype in [DType::C64, DType::C128] {
            for transform in [Transform::Forward, Transform::Inverse] {
                check(dtype, 2, length, length, transform, false, &mut rng).unwrap();
            }
        }
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

/// The reference itself: the recursive FFT agrees with the compensated direct sum for powers
/// of two, mixed lengths and a length with a larger prime factor, within a few units of the
/// last place of f64 (relative to the result's root-mean-square); the null arm: the direct sum
/// of an input changed in one element differs from the FFT of the original.
#[test]
fn the_host_fft_is_the_dft() {
    let mut rng = SplitMix(7);
    for length in [256, 105, 1000, 3 * 128, 2 * 3 * 11] {
        let row = random_rows(DType::C128, 1, length, &mut rng).remove(0);
        for transform in [Transform::Forward, Transform::Inverse] {
            let fast = host_fft(&row, transform);
            let direct = host_dft(&row, transform);
            let rms =
                (direct.iter().map(|value| value.norm_sqr()).sum::<f64>() / length as f64).sqrt();
            let worst = fast
                .iter()
                .zip(&direct)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max);
            let bound = 4.0 * precision_epsilon(DType::C128) * ((length as f64).log2() + 1.0) * rms;
            assert!(worst < bound, "{length} {transform:?}: {worst} > {bound}");
            let mut changed = row.clone();
            changed[length / 2] += Complex64::new(1e-9, 0.0);
            let moved = host_dft(&changed, transform)
                .iter()
                .zip(&fast)
                .map(|(a, b)| (a - b).norm())
                .fold(0.0, f64::max);
            assert!(moved > bound, "{length}: a changed input went unseen");
        }
    }
}

/// Null arms: the bound rejects one element off by ten times the bound, a transform of the
/// wrong direction, and a c64 result held to c128's bound, for a power of two, a mixed length
/// in one pass and a mixed length in the four-step pair.
#[test]
fn the_bound_rejects_wrong_results() {
    let mut rng = SplitMix(9);
    for length in [4096, 1000, 3 << 12] {
        let input = random_rows(DType::C64, 2, length, &mut rng);
        let expected = expected_rows(&input, length, Transform::Forward);
        let actual = device_rows(DType::C64, &input, length, Transform::Forward, false).unwrap();
        within_bound(&actual, &expected, DType::C64).unwrap();
        let rms = (expected[1]
            .iter()
            .map(|value| value.norm_sqr())
            .sum::<f64>()
            / length as f64)
            .sqrt();
        let bound = error_bound(DType::C64, length, rms);
        let mut perturbed = actual.clone();
        perturbed[1][777] += Complex64::new(10.0 * bound, 0.0);
        assert!(within_bound(&perturbed, &expected, DType::C64).is_err());
        let wrong_direction: Vec<Vec<Complex64>> =
            expected_rows(&input, length, Transform::Inverse)
                .into_iter()
                .map(|row| row.into_iter().map(|value| value * length as f64).collect())
                .collect();
        assert!(within_bound(&actual, &wrong_direction, DType::C64).is_err());
        assert!(within_bound(&actual, &expected, DType::C128).is_err());
    }
}

/// A NaN stays in its row: every output of that row is NaN (each depends on every input),
/// and the other rows of the batch still match the DFT, in a block pass, the four-step
/// passes, Bluestein and the mixed-radix single and four-step passes; the bound rejects a NaN
/// result (null arm).
#[test]
fn nan_stays_in_its_row() {
    let mut rng = SplitMix(13);
    for (dtype, length) in [
        (DType::C64, 256),
        (DType::C64, 8192),
        (DType::C128, 4096),
        (DType::C64, 1009),
        (DType::C64, 1000),
        (DType::C128, 1536),
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
