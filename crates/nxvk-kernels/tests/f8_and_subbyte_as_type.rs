//! `as_type` to and from the 8-bit floats (E5M2, E4M3FN) and the sub-byte integers (s2, s4,
//! u2, u4) on the GPU, against the host reference (`reference::round_to` with `f8.rs`'s
//! `Nx.Floating` rules): every pair with a narrow side, random values with NaN, infinities,
//! signed zeros and extremes, odd lengths (partly filled bytes), empty and rank-0 tensors,
//! transposed and sliced views as inputs. Comparisons are exact, and no host fallback may be
//! counted.

mod common;

use common::*;
use nxvk_core::{DType, Tensor};
use nxvk_kernels::reference::{self, Value};
use proptest::prelude::*;

const NARROW: [DType; 6] = [
    DType::F8E5M2,
    DType::F8E4M3FN,
    DType::S2,
    DType::S4,
    DType::U2,
    DType::U4,
];

fn real_dtypes() -> Vec<DType> {
    let mut dtypes: Vec<DType> = nxvk_kernels::ops::native_dtypes().collect();
    dtypes.extend(NARROW);
    dtypes
}

/// `as_type` of a random `view` of `shape` from `from` to `to`, against the reference.
fn check_pair(
    from: DType,
    to: DType,
    shape: &[usize],
    view: ViewKind,
    rng: &mut SplitMix,
) -> Result<(), String> {
    let device = device();
    let (input, values) = make_input(&device, from, shape, view, Domain::Wide, rng);
    let before = fallbacks("as_type", from) + fallbacks("as_type", to);
    let output = nxvk_kernels::as_type(&input, to).map_err(|error| error.to_string())?;
    // The values as stored: Nx writes an E5M2 subnormal it has read as another value
    // (`f8.rs`), so a generated value and the one its bits hold can differ.
    let stored = |value: Value| reference::decode(from, &reference::encode(from, &[value]), 1);
    let want: Vec<Value> = values
        .iter()
        .map(|&value| reference::round_to(stored(value).unwrap()[0], to))
        .collect();
    check_output_exact(
        &format!("as_type {from} -> {to} of {shape:?} ({view:?})"),
        &output,
        shape,
        &want,
    )?;
    let after = fallbacks("as_type", from) + fallbacks("as_type", to);
    if after != before {
        return Err(format!("as_type {from} -> {to} took the host fallback"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(12), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn narrow_conversions_match_nx_rules(
        shape in prop::collection::vec(0usize..6, 0..=3),
        view in any_view_kind(),
        seed in any::<u64>(),
    ) {
        let mut rng = SplitMix(seed);
        for narrow in NARROW {
            for other in real_dtypes().into_iter().filter(|&other| other != narrow) {
                check_pair(narrow, other, &shape, view, &mut rng).map_err(TestCaseError::fail)?;
                check_pair(other, narrow, &shape, view, &mut rng).map_err(TestCaseError::fail)?;
            }
        }
    }
}

/// Odd lengths fill the last byte of a sub-byte result partly; rank 0 and empty tensors too.
#[test]
fn odd_lengths_rank_zero_and_empty() {
    let mut rng = SplitMix(11);
    for shape in [&[1usize][..], &[3], &[5], &[7], &[9, 3], &[], &[0], &[2, 0]] {
        for narrow in NARROW {
            for other in [DType::F32, DType::S64, DType::U8, DType::F16] {
                check_pair(other, narrow, shape, ViewKind::Contiguous, &mut rng).unwrap();
                check_pair(narrow, other, shape, ViewKind::Sliced, &mut rng).unwrap();
            }
        }
    }
}

/// Special values with their exact bits and packing (first element in the high bits), and the
/// null arms: the checks reject IEEE rounding for E5M2 and a little-endian nibble order.
#[test]
fn special_values_packing_and_null_arms() {
    let device = device();
    let floats = Tensor::from_slice(
        &device,
        &[6],
        &[
            1000.0f32,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -0.0,
            1.97,
        ],
    )
    .unwrap();
    let e4m3fn = nxvk_kernels::as_type(&floats, DType::F8E4M3FN).unwrap();
    assert_eq!(
        e4m3fn.to_bytes().unwrap(),
        [0x7E, 0x7E, 0xFE, 0x7F, 0x80, 0x3F]
    );
    let e5m2 = nxvk_kernels::as_type(&floats, DType::F8E5M2).unwrap();
    assert_eq!(
        e5m2.to_bytes().unwrap(),
        [0x63, 0x7C, 0xFC, 0x7E, 0x80, 0x3F]
    );
    let back = nxvk_kernels::as_type(&e4m3fn, DType::F32).unwrap();
    let back = back.to_vec::<f32>().unwrap();
    assert_eq!(&back[..3], [448.0, 448.0, -448.0]);
    assert!(back[3].is_nan());
    assert_eq!(back[4].to_bits(), (-0.0f32).to_bits());
    assert_eq!(back[5], 1.875);

    let seven_eighths = Tensor::from_slice(&device, &[1], &[1.875f32]).unwrap();
    let truncated = nxvk_kernels::as_type(&seven_eighths, DType::F8E5M2).unwrap();
    assert!(check_output_exact("e5m2", &truncated, &[1], &[Value::Float(1.75)]).is_ok());
    // Null arm: IEEE rounding (ties to even) would give 2.0.
    assert!(check_output_exact("null", &truncated, &[1], &[Value::Float(2.0)]).is_err());

    let integers = Tensor::from_slice(&device, &[3], &[1i32, 2, 3]).unwrap();
    let nibbles = nxvk_kernels::as_type(&integers, DType::U4).unwrap();
    assert_eq!(nibbles.to_bytes().unwrap(), [0x12, 0x30]);
    let mixed =
        Tensor::from_slice(&device, &[5], &[1.0f32, -1.0, -2.0, 5.0, f32::INFINITY]).unwrap();
    let pairs = nxvk_kernels::as_type(&mixed, DType::S2).unwrap();
    assert_eq!(pairs.to_bytes().unwrap(), [0b0111_1001, 0b0100_0000]);
    // Null arm: the nibbles in the other order decode to other values.
    let swapped = [Value::Int(2), Value::Int(1), Value::Int(0)];
    assert!(check_output_exact("null", &nibbles, &[3], &swapped).is_err());
}

/// Element-wise ops on 8-bit floats take the counted host fallback with `f8.rs`'s rules
/// (E4M3FN saturates at 448).
/// Nx writes E4M3FN from the f64 itself: f64 values just below a power of two or a rounding
/// midpoint, which the nearest f32 would round onto it, write what the reference writes.
#[test]
fn f64_to_e4m3fn_rounds_from_the_f64() {
    let device = device();
    let values = [
        0.999_999_999_999,
        -0.999_999_999_999,
        1.062_499_999_999,
        0.002_929_687_499_999,
    ];
    // Null arm: the nearest f32 of each would write other bits.
    for value in values {
        let through_f32 = f64::from(value as f32);
        assert_ne!(
            reference::encode(DType::F8E4M3FN, &[Value::Float(through_f32)]),
            reference::encode(DType::F8E4M3FN, &[Value::Float(value)]),
            "{value}"
        );
    }
    let input = Tensor::from_slice(&device, &[values.len()], &values).unwrap();
    let output = nxvk_kernels::as_type(&input, DType::F8E4M3FN).unwrap();
    let want: Vec<Value> = values
        .iter()
        .map(|&value| reference::round_to(Value::Float(value), DType::F8E4M3FN))
        .collect();
    check_output_exact("f64 -> f8_e4m3fn", &output, &[values.len()], &want).unwrap();
}

#[test]
fn f8_element_wise_ops_run_on_the_gpu() {
    let device = device();
    let values = [Value::Float(1.0), Value::Float(2.5), Value::Float(448.0)];
    let bytes = reference::encode(DType::F8E4M3FN, &values);
    let a = Tensor::from_bytes(&device, DType::F8E4M3FN, &[3], &bytes).unwrap();
    let before = device.counters().total_host_fallbacks();
    let sum = nxvk_kernels::ops::add(&a, &a).unwrap();
    assert_eq!(device.counters().total_host_fallbacks(), before);
    let want = [Value::Float(2.0), Value::Float(5.0), Value::Float(448.0)];
    check_output_exact("f8 add", &sum, &[3], &want).unwrap();
    // Null arm: an unsaturated sum (896) is not what is stored.
    let unsaturated = [Value::Float(2.0), Value::Float(5.0), Value::Float(896.0)];
    assert!(check_output_exact("null", &sum, &[3], &unsaturated).is_err());
}
