//! Every dtype survives upload and read-back bit for bit, at every rank, empty and rank 0
//! included; typed read-back agrees with the bytes.

mod common;
use common::{device, same_bytes};
use nxvk_core::{DType, Error, Tensor};
use proptest::prelude::*;

fn shapes() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..6, 0..5)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn bytes_round_trip_for_every_dtype(shape in shapes(), dtype_index in 0usize..DType::ALL.len(), seed in any::<u64>()) {
        let dtype = DType::ALL[dtype_index];
        let n_elements: usize = shape.iter().product();
        let length = dtype.storage_bytes(n_elements as u64) as usize;
        let bytes: Vec<u8> = (0..length).map(|i| (seed.wrapping_mul(6364136223846793005).wrapping_add((i as u64).wrapping_mul(1442695040888963407)) >> 56) as u8).collect();
        let tensor = Tensor::from_bytes(&device(), dtype, &shape, &bytes).unwrap();
        prop_assert_eq!(tensor.shape(), &shape[..]);
        let back = tensor.to_bytes().unwrap();
        // Read-back zeroes the unused low bits of a partly filled last byte.
        let mut expected = bytes.clone();
        let used_in_last = (n_elements as u64 * u64::from(dtype.bits()) % 8) as u32;
        if let (Some(last), true) = (expected.last_mut(), used_in_last != 0) {
            *last &= !(0xffu8 >> used_in_last);
        }
        same_bytes(&format!("{dtype} {shape:?}"), &back, &expected).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn typed_round_trips_keep_special_values() {
    let device = device();
    let floats = [
        0.0f32,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE / 2.0,
        f32::MAX,
    ];
    let back: Vec<f32> = Tensor::from_slice(&device, &[7], &floats)
        .unwrap()
        .to_vec()
        .unwrap();
    common::same_f32("f32 specials", &back, &floats).unwrap();
    let integers = [i64::MIN, -1, 0, 1, i64::MAX];
    let back: Vec<i64> = Tensor::from_slice(&device, &[5], &integers)
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(back, integers);
    let halves = [nxvk_core::bf16::from_f32(1.5), nxvk_core::bf16::NAN];
    let back: Vec<nxvk_core::bf16> = Tensor::from_slice(&device, &[2], &halves)
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(back[0], halves[0]);
    assert!(back[1].is_nan());
    let complex = [nxvk_core::Complex64::new(1.0, -2.0)];
    let back: Vec<nxvk_core::Complex64> = Tensor::from_slice(&device, &[], &complex)
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(back, complex);
}

#[test]
fn wrong_lengths_and_types_are_errors_naming_the_tensor() {
    let device = device();
    let error = Tensor::from_bytes(&device, DType::U4, &[3], &[0u8; 1]).unwrap_err();
    assert!(
        matches!(
            error,
            Error::ByteLength {
                expected: 2,
                actual: 1,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("u4") && error.to_string().contains("[3]"));
    let tensor = Tensor::from_slice(&device, &[2], &[1u32, 2]).unwrap();
    let error = tensor.to_vec::<f32>().unwrap_err();
    assert!(
        error.to_string().contains("u32") && error.to_string().contains("f32"),
        "{error}"
    );
}

#[test]
fn shapes_whose_size_overflows_are_errors() {
    let device = device();
    let huge = [usize::MAX / 2, 4];
    let error = Tensor::empty(&device, DType::F64, &huge).unwrap_err();
    assert!(
        matches!(error, Error::InvalidView { op: "empty", .. }),
        "{error}"
    );
    let error = Tensor::from_bytes(&device, DType::U8, &huge, &[]).unwrap_err();
    assert!(error.to_string().contains("overflow"), "{error}");
}
