//! The catalog's f32 division is correctly rounded (ties to even) for every operand pair,
//! whatever the accuracy of the driver's reciprocal within +-4 ulps and whether its fma is
//! fused (`src/glsl_helpers.glsl`, `nx_div`). First on the host, through `division_model`
//! (the GLSL's sequence of f32 operations): structured edge cases under every reciprocal error
//! and both remainder paths, then random bit patterns (`NXVK_DIVISION_SAMPLES`, default 2^22;
//! docs/CAPABILITIES.md records a 10^9 run). Then on the GPU against the same reference, for
//! f32, f16 and bf16 (which divide in f32 and round once more: double rounding is innocuous
//! for division because 24 >= 2 * 11 + 2 bits). Null arms: the model without its last step
//! fails, so does the fused-fma path on a driver that splits fma, and so does a quotient one
//! ulp off.

mod common;
mod division_model;

use common::{SplitMix, device};
use division_model::{Setup, in_fast_window, reference, same};
use nxvk_core::{DType, Tensor};
use nxvk_kernels::reference::{self as host, Value};
use nxvk_kernels::{BinaryOp, binary};

/// The reciprocal errors the proof covers (Vulkan allows 2.5 ulps for a division; NVIDIA's
/// reciprocal is within 1).
const RECIPROCAL_ERRORS: std::ops::RangeInclusive<i32> = -4..=4;

/// Random operand pairs for the host proof.
fn host_samples() -> u64 {
    std::env::var("NXVK_DIVISION_SAMPLES")
        .ok()
        .and_then(|samples| samples.parse().ok())
        .unwrap_or(1 << 22)
}

/// Significand patterns that stress rounding: none, the lowest bits, one half, all ones,
/// alternating bits.
const MANTISSAS: [u32; 8] = [
    0, 1, 2, 0x40_0000, 0x7F_FFFE, 0x7F_FFFF, 0x55_5555, 0x2A_AAAA,
];

/// Every exponent field (zeros, subnormals, infinities and NaNs included) with each pattern of
/// [`MANTISSAS`], both signs.
fn structured_values() -> Vec<f32> {
    let mut values = Vec::new();
    for exponent in 0..=255u32 {
        for mantissa in MANTISSAS {
            for sign in [0, 0x8000_0000] {
                values.push(f32::from_bits(sign | exponent << 23 | mantissa));
            }
        }
    }
    values
}

/// Pairs whose quotient lies at the edges of the range: next to the largest finite value,
/// the smallest normal, the smallest subnormal and half of it, from operands of every size;
/// and exact quotients in the subnormal range whose dropped bits are exactly one half (the
/// only place a binary quotient can be a tie).
fn threshold_pairs(random: &mut SplitMix) -> Vec<(f32, f32)> {
    let targets = [
        f32::MAX,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(1) / 2.0,
        f32::from_bits(0x7F_FFFF),
        1.0,
    ];
    let mut pairs = Vec::new();
    for _ in 0..4096 {
        let a = f32::from_bits((random.next() as u32) & 0x7FFF_FFFF);
        if !a.is_finite() || a == 0.0 {
            continue;
        }
        for target in targets {
            let b = (f64::from(a) / f64::from(target)) as f32;
            for offset in -3i32..=3 {
                let b = f32::from_bits(b.to_bits().wrapping_add_signed(offset));
                pairs.push((a, b));
                pairs.push((-a, b));
            }
        }
    }
    for shift in 1..=26u32 {
        for _ in 0..256 {
            let significand = (random.next() as u32 & 0xFF_FFFF) | 0x80_0000;
            // significand * 2^(e - 23) / 2^k lands `shift` bits below the smallest normal.
            let exponent = (random.next() % 200) as i32 - 100;
            let a = f32::from_bits(((exponent + 127) as u32) << 23 | (significand & 0x7F_FFFF));
            let b_exponent = exponent + 126 + shift as i32;
            if !(-126..=127).contains(&b_exponent) {
                continue;
            }
            let b = f32::from_bits(((b_exponent + 127) as u32) << 23);
            pairs.push((a, b));
            let three = f32::from_bits(b.to_bits() | 0x40_0000);
            pairs.push((a, three));
        }
    }
    pairs
}

/// Whether the driver's fma is fused, both ways: the device probes it and sets the
/// specialization constant that picks the remainder path.
const FMA_KINDS: [bool; 2] = [true, false];

fn check_model(a: f32, b: f32, setup: Setup) -> Result<(), String> {
    let actual = setup.divide(a, b);
    let expected = reference(a, b);
    if same(actual, expected) {
        Ok(())
    } else {
        Err(format!(
            "{a:e} / {b:e} ({:#010x} / {:#010x}) under {setup:?}: {actual:e} ({:#010x}), expected {expected:e} ({:#010x}); fast path: {}",
            a.to_bits(),
            b.to_bits(),
            actual.to_bits(),
            expected.to_bits(),
            in_fast_window(a, b)
        ))
    }
}

#[test]
fn the_model_is_correctly_rounded_on_structured_operands() {
    let values = structured_values();
    let mut random = SplitMix(0xD1_7151);
    // Every pair of positive values with mantissa 0 or all ones (all exponents), under every
    // reciprocal error.
    let edges: Vec<f32> = values
        .iter()
        .copied()
        .filter(|value| {
            let mantissa = value.to_bits() & 0x7F_FFFF;
            value.is_sign_positive() && (mantissa == 0 || mantissa == 0x7F_FFFF)
        })
        .collect();
    for &a in &edges {
        for &b in &edges {
            for error in RECIPROCAL_ERRORS {
                for fused in FMA_KINDS {
                    check_model(a, b, Setup::catalog(error, fused)).unwrap();
                }
            }
        }
    }
    // Random pairs of all the structured values, with a random reciprocal error.
    for _ in 0..(1 << 20) {
        let a = values[random.next() as usize % values.len()];
        let b = values[random.next() as usize % values.len()];
        let error = (random.next() % 9) as i32 - 4;
        for fused in FMA_KINDS {
            check_model(a, b, Setup::catalog(error, fused)).unwrap();
        }
    }
    for (a, b) in threshold_pairs(&mut random) {
        for error in RECIPROCAL_ERRORS {
            for fused in FMA_KINDS {
                check_model(a, b, Setup::catalog(error, fused)).unwrap();
                check_model(b, a, Setup::catalog(error, fused)).unwrap();
            }
        }
    }
}

#[test]
fn the_model_is_correctly_rounded_on_random_bit_patterns() {
    let mut random = SplitMix(0xB17_5EED);
    for _ in 0..host_samples() {
        let bits = random.next();
        let (a, b) = (
            f32::from_bits(bits as u32),
            f32::from_bits((bits >> 32) as u32),
        );
        let error = (random.next() % 9) as i32 - 4;
        let fused = bits & (1 << 31) == 0;
        check_model(a, b, Setup::catalog(error, fused)).unwrap();
    }
}

/// `nx_div_by_shared` (glsl_helpers.glsl, the row programs' division by a row's shared
/// divisor) on the host, step for step: `a` times `reciprocal(b)` in f64, rounded once where
/// normal; below the smallest normal, the subnormal midpoint times `b` (exact in f64)
/// against `a` decides.
fn shared_divisor_quotient(a: f32, b: f32, reciprocal: impl Fn(f64) -> f64) -> f32 {
    let quotient = f64::from(a) * reciprocal(f64::from(b));
    if quotient.is_nan() {
        return f32::NAN;
    }
    if quotient.abs() >= f64::from(f32::MIN_POSITIVE) {
        return quotient as f32;
    }
    let low = (quotient.abs() * 2f64.powi(149)).floor();
    let midpoint = (low + 0.5) * 2f64.powi(-149) * f64::from(b).abs();
    let magnitude = f64::from(a).abs();
    let mut units = low as u32;
    units += u32::from(magnitude > midpoint || (magnitude == midpoint && units & 1 == 1));
    f32::from_bits(units | ((quotient.to_bits() >> 32) as u32 & 0x8000_0000))
}

/// The f64 reciprocal of `b` moved by `ulps` of its own (a driver's f64 division need not be
/// correctly rounded), except for infinite or zero reciprocals.
fn reciprocal_off_by(ulps: i64) -> impl Fn(f64) -> f64 {
    move |b| {
        let reciprocal = 1.0 / b;
        if reciprocal.is_finite() && reciprocal != 0.0 {
            f64::from_bits(reciprocal.to_bits().wrapping_add_signed(ulps))
        } else {
            reciprocal
        }
    }
}

#[test]
fn a_shared_divisors_f64_reciprocal_gives_the_correctly_rounded_quotient() {
    let values = structured_values();
    let mut random = SplitMix(0x5A_A7ED);
    let mut pairs = threshold_pairs(&mut random);
    for _ in 0..host_samples() / 4 {
        let bits = random.next();
        pairs.push((
            f32::from_bits(bits as u32),
            f32::from_bits((bits >> 32) as u32),
        ));
    }
    for (index, &a) in values.iter().enumerate().step_by(7) {
        pairs.extend(values.iter().skip(index % 5).step_by(5).map(|&b| (a, b)));
    }
    for ulps in [0, -4, -1, 1, 4] {
        let reciprocal = reciprocal_off_by(ulps);
        let wrong = pairs
            .iter()
            .find(|&&(a, b)| !same(shared_divisor_quotient(a, b, &reciprocal), reference(a, b)));
        assert_eq!(wrong, None, "reciprocal {ulps} ulps off");
    }
    // Null arm: an f32 reciprocal is not enough.
    let f32_reciprocal = |b: f64| f64::from((1.0 / b) as f32);
    let misses = pairs
        .iter()
        .filter(|&&(a, b)| {
            !same(
                shared_divisor_quotient(a, b, f32_reciprocal),
                reference(a, b),
            )
        })
        .count();
    assert!(misses > 1000, "{misses}");
}

#[test]
fn the_model_tolerates_much_worse_reciprocals() {
    // The Newton step squares the reciprocal's error, so the proof's +-4 ulps has a wide
    // margin: reciprocals up to 2^15 ulps off still give correctly rounded quotients.
    let mut random = SplitMix(0xFA_11);
    for _ in 0..(1 << 18) {
        let a = f32::from_bits(random.next() as u32);
        let b = f32::from_bits(random.next() as u32);
        let error = (random.next() % (1 << 16)) as i32 - (1 << 15);
        for fused in FMA_KINDS {
            check_model(a, b, Setup::catalog(error, fused)).unwrap();
        }
    }
}

#[test]
fn the_last_step_and_the_probed_remainder_path_matter() {
    // Null arm: Markstein's refinement alone is correctly rounded only from a correctly
    // rounded reciprocal. After the Newton step even a reciprocal 2^12 ulps off nearly always
    // is one, so the null arm starts 2^16 ulps off, where the catalog's algorithm is still
    // exact: then some quotients in 2^16 come out one ulp off.
    let mut random = SplitMix(0x0FF);
    let failures = (0..(1 << 16))
        .filter(|_| {
            let a = 1.0 + (random.next() as u32 >> 9) as f32 / 8_388_608.0;
            let b = 1.0 + (random.next() as u32 >> 9) as f32 / 8_388_608.0;
            let catalog = Setup::catalog(1 << 16, true);
            let without = Setup {
                neighbour_decision: false,
                ..catalog
            };
            check_model(a, b, without).is_err() && check_model(a, b, catalog).is_ok()
        })
        .count();
    assert!(failures > 0, "the last step never mattered");
    // The fused-fma path on a driver that splits fma (what lavapipe computed before the
    // device probed its fma): the remainders are no longer exact and about one quotient in
    // fifteen misrounds.
    let failures = (0..(1 << 12))
        .filter(|_| {
            let a = 1.0 + (random.next() as u32 >> 9) as f32 / 8_388_608.0;
            let b = 1.0 + (random.next() as u32 >> 9) as f32 / 8_388_608.0;
            let unprobed = Setup {
                fused_fma_constant: true,
                ..Setup::catalog(0, false)
            };
            check_model(a, b, unprobed).is_err()
                && check_model(a, b, Setup::catalog(0, false)).is_ok()
        })
        .count();
    assert!(failures > 1 << 6, "{failures} misrounded");
    // And the reference comparison itself catches a quotient one ulp off.
    let quotient = reference(1.0, 3.0);
    assert!(!same(f32::from_bits(quotient.to_bits() + 1), quotient));
}

#[test]
fn f16_and_bf16_quotients_round_once_through_the_f32_quotient() {
    // f16 and bf16 divide in f32 (a correctly rounded quotient) and round to their type:
    // double rounding is innocuous for division with 24 >= 2p + 2 bits (p = 11, 8), which the
    // model shows on random pairs and on every f16 dividend over structured divisors.
    let mut random = SplitMix(0x16);
    let divisors: Vec<u16> = [0x3C00u16, 0x4200, 0x3555, 0x7BFF, 0x0001, 0x03FF, 0x4248]
        .into_iter()
        .chain((0..64).map(|_| random.next() as u16))
        .collect();
    let check_f16 = |a_bits: u16, b_bits: u16| {
        let (a, b) = (half::f16::from_bits(a_bits), half::f16::from_bits(b_bits));
        let quotient = Setup::catalog(0, b_bits & 1 == 0).divide(a.to_f32(), b.to_f32());
        let actual = half::f16::from_f32(quotient);
        let expected = half::f16::from_f64(a.to_f64() / b.to_f64());
        assert!(
            actual.to_bits() == expected.to_bits() || (actual.is_nan() && expected.is_nan()),
            "f16 {a} / {b}: {actual}, expected {expected}"
        );
    };
    for a_bits in 0..=u16::MAX {
        for &b_bits in &divisors {
            check_f16(a_bits, b_bits);
        }
    }
    for _ in 0..(1 << 20) {
        let bits = random.next();
        check_f16(bits as u16, (bits >> 16) as u16);
        let (a, b) = (
            half::bf16::from_bits((bits >> 32) as u16),
            half::bf16::from_bits((bits >> 48) as u16),
        );
        let actual =
            half::bf16::from_f32(Setup::catalog(0, bits & 1 == 0).divide(a.to_f32(), b.to_f32()));
        let expected = half::bf16::from_f64(a.to_f64() / b.to_f64());
        assert!(
            actual.to_bits() == expected.to_bits() || (actual.is_nan() && expected.is_nan()),
            "bf16 {a} / {b}: {actual}, expected {expected}"
        );
    }
}

/// The GPU's quotients of `pairs` in `dtype` against the f64 quotient rounded to `dtype`:
/// the same bits, or a signed zero where the reference is subnormal (Vulkan lets a driver
/// flush subnormal results). Returns the number of pairs checked.
fn check_gpu(dtype: DType, pairs: &[(f64, f64)]) -> usize {
    let device = device();
    let round = |value: f64| match host::round_to(Value::Float(value), dtype) {
        Value::Float(rounded) => rounded,
        other => panic!("{other:?}"),
    };
    let pairs: Vec<(f64, f64)> = pairs.iter().map(|&(a, b)| (round(a), round(b))).collect();
    let upload = |values: Vec<Value>| {
        Tensor::from_bytes(
            &device,
            dtype,
            &[values.len()],
            &host::encode(dtype, &values),
        )
        .unwrap()
    };
    let left = upload(pairs.iter().map(|&(a, _)| Value::Float(a)).collect());
    let right = upload(pairs.iter().map(|&(_, b)| Value::Float(b)).collect());
    let output = binary(BinaryOp::Divide, &left, &right).unwrap();
    let actual = host::decode(dtype, &output.to_bytes().unwrap(), pairs.len()).unwrap();
    let smallest_normal = match dtype {
        DType::F16 => 2f64.powi(-14),
        _ => f64::from(f32::MIN_POSITIVE),
    };
    let mut failures = Vec::new();
    for (&(a, b), actual) in pairs.iter().zip(actual) {
        let expected = round(a / b);
        let Value::Float(actual) = actual else {
            panic!("{actual:?}")
        };
        let flushed = actual == 0.0
            && expected.abs() < smallest_normal
            && actual.is_sign_negative() == expected.is_sign_negative();
        let matches = actual.to_bits() == expected.to_bits()
            || (actual.is_nan() && expected.is_nan())
            || flushed;
        if !matches && failures.len() < 8 {
            failures.push(format!("{a:e} / {b:e}: {actual:e}, expected {expected:e}"));
        }
    }
    assert!(failures.is_empty(), "{dtype} division: {failures:#?}");
    pairs.len()
}

fn gpu_pairs() -> Vec<(f64, f64)> {
    let values = structured_values();
    let mut random = SplitMix(0x6_9D);
    let mut pairs: Vec<(f64, f64)> = threshold_pairs(&mut random)
        .into_iter()
        .map(|(a, b)| (f64::from(a), f64::from(b)))
        .collect();
    for _ in 0..(1 << 17) {
        let a = values[random.next() as usize % values.len()];
        let b = values[random.next() as usize % values.len()];
        pairs.push((f64::from(a), f64::from(b)));
        let bits = random.next();
        pairs.push((
            f64::from(f32::from_bits(bits as u32)),
            f64::from(f32::from_bits((bits >> 32) as u32)),
        ));
    }
    pairs
}

#[test]
fn the_helpers_declare_the_devices_fused_fma_constants() {
    use nxvk_kernels::codegen::{F64_MATH, HELPERS};
    for (source, id, name) in [
        (
            HELPERS,
            nxvk_core::FUSED_FMA_CONSTANT_ID,
            "NXVK_FUSED_FMA = ",
        ),
        (
            F64_MATH,
            nxvk_core::FUSED_FMA_F64_CONSTANT_ID,
            "NXVK_FUSED_FMA_F64 = ",
        ),
    ] {
        let declaration = format!("layout(constant_id = {id}) const bool {name}");
        assert!(source.contains(&declaration), "{declaration}");
    }
}

#[test]
fn gpu_f32_division_is_correctly_rounded() {
    // Which remainder path the device's kernels take (lavapipe: split, NVIDIA: fused).
    eprintln!(
        "fused fma: f32 {}, f64 {}",
        device().fused_fma(),
        device().fused_fma_f64()
    );
    let checked = check_gpu(DType::F32, &gpu_pairs());
    assert!(checked > 1 << 18, "{checked} pairs");
}

#[test]
fn gpu_f16_and_bf16_division_round_once() {
    let mut random = SplitMix(0x1_6B);
    let mut pairs = gpu_pairs();
    for _ in 0..(1 << 16) {
        let bits = random.next();
        pairs.push((
            half::f16::from_bits(bits as u16).to_f64(),
            half::f16::from_bits((bits >> 16) as u16).to_f64(),
        ));
    }
    check_gpu(DType::F16, &pairs);
    for _ in 0..(1 << 16) {
        let bits = random.next();
        pairs.push((
            half::bf16::from_bits(bits as u16).to_f64(),
            half::bf16::from_bits((bits >> 16) as u16).to_f64(),
        ));
    }
    check_gpu(DType::BF16, &pairs);
}
