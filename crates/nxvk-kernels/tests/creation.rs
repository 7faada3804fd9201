//! Creation, bitcast, select and clip against host oracles: random shapes up to rank 4 with
//! empty and rank-0 cases, every native dtype, strided and broadcast operands, NaN, -0.0 and
//! extreme integers; each check has a null arm showing it can fail.

mod common;

use common::*;
use nxvk_core::{Complex32, DType, Error, Tensor};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::types::merge;
use nxvk_kernels::{BinaryOp, bitcast, clip, eye, full, iota, ops, select};
use proptest::prelude::*;

fn native_dtype() -> impl Strategy<Value = DType> {
    let dtypes: Vec<DType> = ops::native_dtypes().collect();
    prop::sample::select(dtypes)
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(prop_oneof![8 => 1..5usize, 1 => Just(0usize)], 0..=4)
}

/// The row-major coordinates of element `index` of `shape`.
fn coordinates(shape: &[usize], mut index: usize) -> Vec<usize> {
    let mut coordinates = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        coordinates[axis] = index % shape[axis];
        index /= shape[axis];
    }
    coordinates
}

fn integers(dtype: DType, values: impl Iterator<Item = usize>) -> Vec<Value> {
    values
        .map(|value| reference::round_to(Value::Int(value as i128), dtype))
        .collect()
}

fn exact(dtype: DType, actual: &[Value], expected: &[Value]) -> Result<(), String> {
    check_all(dtype, Tolerance::Exact, actual, expected, &[])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn iota_and_eye_match_their_definitions(
        dtype in native_dtype(),
        shape in shape(),
        axis_seed in any::<usize>(),
    ) {
        let device = device();
        let n: usize = shape.iter().product();
        let axis = (!shape.is_empty() && axis_seed % 3 != 0).then(|| axis_seed % shape.len());
        let tensor = iota(&device, dtype, &shape, axis).unwrap();
        prop_assert_eq!(tensor.shape(), &shape[..]);
        let expected = integers(
            dtype,
            (0..n).map(|index| axis.map_or(index, |axis| coordinates(&shape, index)[axis])),
        );
        let actual = read(&tensor);
        prop_assert!(exact(dtype, &actual, &expected).is_ok(), "{:?}", exact(dtype, &actual, &expected));
        if shape.len() >= 2 {
            let rank = shape.len();
            let diagonal = integers(dtype, (0..n).map(|index| {
                let at = coordinates(&shape, index);
                usize::from(at[rank - 2] == at[rank - 1])
            }));
            let actual = read(&eye(&device, dtype, &shape).unwrap());
            prop_assert!(exact(dtype, &actual, &diagonal).is_ok());
            // Null arm: iota along an axis is not the identity when that axis has length > 1.
            if shape[rank - 1] > 1 && n > 0 {
                prop_assert!(exact(dtype, &actual, &expected).is_err() || axis.is_none());
            }
        }
    }

    #[test]
    fn full_fills_with_the_converted_value(dtype in native_dtype(), shape in shape(), seed in any::<u64>()) {
        let device = device();
        let mut rng = SplitMix(seed);
        let value = random_value(DType::F64, Domain::Wide, &mut rng);
        let tensor = full(&device, value, dtype, &shape).unwrap();
        let n: usize = shape.iter().product();
        let expected = vec![reference::round_to(value, dtype); n];
        let actual = read(&tensor);
        prop_assert!(exact(dtype, &actual, &expected).is_ok(), "{:?}", exact(dtype, &actual, &expected));
    }

    #[test]
    fn select_picks_by_truth_with_broadcasting_and_nx_types(
        pred_type in native_dtype(),
        true_type in native_dtype(),
        false_type in native_dtype(),
        shape in shape(),
        drops in (0..3usize, 0..3usize, 0..3usize),
        ones in (any::<u8>(), any::<u8>(), any::<u8>()),
        views in (0..3usize, 0..3usize, 0..3usize),
        seed in any::<u64>(),
    ) {
        let device = device();
        let mut rng = SplitMix(seed);
        let view = |choice: usize| [ViewKind::Contiguous, ViewKind::Transposed, ViewKind::Sliced][choice];
        let operand_shape = |drop: usize, ones: u8| -> Vec<usize> {
            shape.iter().enumerate().skip(drop.min(shape.len()))
                .map(|(axis, &size)| if ones >> axis & 1 == 1 { 1 } else { size }).collect()
        };
        let shapes = [operand_shape(drops.0, ones.0), operand_shape(drops.1, ones.1), operand_shape(drops.2, ones.2)];
        let (pred, pred_values) = make_input(&device, pred_type, &shapes[0], view(views.0), Domain::Wide, &mut rng);
        let (on_true, true_values) = make_input(&device, true_type, &shapes[1], view(views.1), Domain::Wide, &mut rng);
        let (on_false, false_values) = make_input(&device, false_type, &shapes[2], view(views.2), Domain::Wide, &mut rng);
        let result = select(&pred, &on_true, &on_false).unwrap();
        let result_type = merge(true_type, false_type);
        prop_assert_eq!(result.dtype(), result_type);
        let target = result.shape().to_vec();
        let pred_values = broadcast_values(&pred_values, &shapes[0], &target);
        let true_values = broadcast_values(&true_values, &shapes[1], &target);
        let false_values = broadcast_values(&false_values, &shapes[2], &target);
        let truthy = |value: &Value| match value {
            Value::Int(integer) => *integer != 0,
            Value::Float(float) => *float != 0.0,
            Value::Complex(complex) => complex.re != 0.0 || complex.im != 0.0,
        };
        let expected: Vec<Value> = (0..pred_values.len())
            .map(|index| {
                let chosen = if truthy(&pred_values[index]) { true_values[index] } else { false_values[index] };
                reference::round_to(chosen, result_type)
            })
            .collect();
        let actual = read(&result);
        prop_assert!(exact(result_type, &actual, &expected).is_ok(), "{:?}", exact(result_type, &actual, &expected));
        // Null arm: swapping the branches is caught wherever they differ.
        let swapped: Vec<Value> = (0..pred_values.len())
            .map(|index| {
                let chosen = if truthy(&pred_values[index]) { false_values[index] } else { true_values[index] };
                reference::round_to(chosen, result_type)
            })
            .collect();
        if exact(result_type, &swapped, &expected).is_err() {
            prop_assert!(exact(result_type, &actual, &swapped).is_err());
        }
    }

    #[test]
    fn clip_is_min_of_max_with_nx_types(
        input_type in native_dtype(),
        bound_type in native_dtype(),
        shape in shape(),
        seed in any::<u64>(),
    ) {
        let device = device();
        let mut rng = SplitMix(seed);
        let (input, values) = make_input(&device, input_type, &shape, ViewKind::Sliced, Domain::Wide, &mut rng);
        let low = random_value(bound_type, Domain::Wide, &mut rng);
        let high = random_value(bound_type, Domain::Wide, &mut rng);
        let scalar = |value: Value| {
            Tensor::from_bytes(&device, bound_type, &[], &reference::encode(bound_type, &[value])).unwrap()
        };
        let clipped = clip(&input, &scalar(low), &scalar(high)).unwrap();
        let result_type = merge(input_type, bound_type);
        prop_assert_eq!(clipped.dtype(), result_type);
        let cast = |value: Value| reference::round_to(value, result_type);
        let expected: Vec<Value> = values
            .iter()
            .map(|&value| {
                let raised = reference::binary(BinaryOp::Max, result_type, cast(value), cast(low)).unwrap();
                reference::binary(BinaryOp::Min, result_type, raised, cast(high)).unwrap()
            })
            .collect();
        let actual = read(&clipped);
        prop_assert!(exact(result_type, &actual, &expected).is_ok(), "{:?}", exact(result_type, &actual, &expected));
        // Null arm: without the upper bound the result differs where values exceed it.
        let unclipped: Vec<Value> = values
            .iter()
            .map(|&value| reference::binary(BinaryOp::Max, result_type, cast(value), cast(low)).unwrap())
            .collect();
        if exact(result_type, &unclipped, &expected).is_err() {
            prop_assert!(exact(result_type, &actual, &unclipped).is_err());
        }
    }
}

#[test]
fn bitcast_reinterprets_bits_as_a_view() {
    let device = device();
    let floats = Tensor::from_slice(&device, &[4], &[1.0f32, -0.0, f32::NAN, -2.5]).unwrap();
    let bits = bitcast(&floats, DType::U32).unwrap();
    let expected: Vec<u32> = [1.0f32, -0.0, f32::NAN, -2.5]
        .iter()
        .map(|value| value.to_bits())
        .collect();
    assert_eq!(bits.to_vec::<u32>().unwrap(), expected);
    assert!(std::sync::Arc::ptr_eq(bits.buffer(), floats.buffer()));
    // Views stay views: a transposed bitcast reads the same elements.
    let matrix = Tensor::from_slice(&device, &[2, 2], &[-1i8, 2, -3, 4]).unwrap();
    let transposed = bitcast(&matrix.transpose(&[1, 0]).unwrap(), DType::U8).unwrap();
    assert_eq!(transposed.to_vec::<u8>().unwrap(), vec![255, 253, 2, 4]);
    let error = bitcast(&floats, DType::F64).unwrap_err();
    assert!(
        matches!(error, Error::BadOperands { op: "bitcast", .. }),
        "{error}"
    );
}

#[test]
fn creation_and_select_errors_name_op_shapes_and_dtypes() {
    let device = device();
    let error = iota(&device, DType::S32, &[2, 3], Some(2)).unwrap_err();
    assert!(
        error.to_string().contains("iota") && error.to_string().contains("[2, 3]"),
        "{error}"
    );
    let error = eye(&device, DType::F32, &[4]).unwrap_err();
    assert!(
        matches!(error, Error::BadOperands { op: "eye", .. }),
        "{error}"
    );
    let error = iota(&device, DType::F8E5M2, &[2], None).unwrap_err();
    assert!(
        matches!(
            error,
            Error::Unsupported {
                op: "iota",
                dtype: DType::F8E5M2,
                ..
            }
        ),
        "{error}"
    );
    let a = Tensor::from_slice(&device, &[2], &[1u8, 0]).unwrap();
    let b = Tensor::from_slice(&device, &[3], &[1.0f32, 2.0, 3.0]).unwrap();
    let error = select(&a, &b, &b).unwrap_err();
    assert!(
        error.to_string().contains("[2]") && error.to_string().contains("[3]"),
        "{error}"
    );
    let error = clip(&b, &b, &b).unwrap_err();
    assert!(
        matches!(error, Error::BadOperands { op: "clip", .. }),
        "{error}"
    );
    let complex = Tensor::from_slice(&device, &[], &[Complex32::new(1.0, 0.0)]).unwrap();
    let error = clip(&b, &complex, &complex).unwrap_err();
    assert!(error.to_string().contains("complex"), "{error}");
}

#[test]
fn select_on_complex_runs_on_the_gpu() {
    let device = device();
    let before = fallbacks("select", DType::C64);
    let pred = Tensor::from_slice(&device, &[3], &[0.0f32, f32::NAN, -0.0]).unwrap();
    let on_true = Tensor::from_slice(&device, &[], &[Complex32::new(1.0, 2.0)]).unwrap();
    let on_false = Tensor::from_slice(&device, &[3], &[3.0f32, 4.0, 5.0]).unwrap();
    let result = select(&pred, &on_true, &on_false).unwrap();
    assert_eq!(result.dtype(), DType::C64);
    assert_eq!(
        result.to_vec::<Complex32>().unwrap(),
        vec![
            Complex32::new(3.0, 0.0),
            Complex32::new(1.0, 2.0),
            Complex32::new(5.0, 0.0)
        ]
    );
    assert_eq!(fallbacks("select", DType::C64), before);
}

#[test]
fn complex_and_sub_byte_iota_go_through_as_type() {
    let device = device();
    let before = fallbacks("as_type", DType::C64);
    let complex = iota(&device, DType::C64, &[2, 2], Some(1)).unwrap();
    assert_eq!(complex.dtype(), DType::C64);
    assert_eq!(
        complex.to_vec::<Complex32>().unwrap(),
        [0.0f32, 1.0, 0.0, 1.0]
            .iter()
            .map(|&re| Complex32::new(re, 0.0))
            .collect::<Vec<_>>()
    );
    // The cast to complex runs on the GPU: nothing counted.
    assert_eq!(fallbacks("as_type", DType::C64), before);
    let packed = eye(&device, DType::S4, &[3, 3]).unwrap();
    let expected: Vec<Value> = (0..9)
        .map(|index| Value::Int(i128::from(index % 4 == 0)))
        .collect();
    assert_eq!(read(&packed), expected);
}
