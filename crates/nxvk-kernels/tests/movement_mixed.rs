//! Data movement with Nx's type promotion and start indices given as tensors, against host
//! index arithmetic and the host `as_type` reference (`reference::round_to`): mixed operand
//! types of concatenate, pad and put_slice converted on load into an explicit result type, and
//! slice/put_slice at starts read on the device and clamped as Nx clamps them (negative, past
//! the end and u64 starts above 2^63 included). Random shapes up to rank 3 with empty axes,
//! rank 0, strided views; every native and complex type. Comparisons are exact.

mod common;

use common::movement_cases::{
    ShapeCase, joined_values, pad_config, padded_values, put_values, shape_case,
};
use common::*;
use nxvk_core::{DType, Tensor};
use nxvk_kernels::movement::{self, AxisStart, Starts};
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::types::merge;
use proptest::prelude::*;

fn dtypes() -> Vec<DType> {
    let mut dtypes: Vec<DType> = nxvk_kernels::ops::native_dtypes().collect();
    dtypes.extend([DType::C64, DType::C128]);
    dtypes
}

fn integer_dtypes() -> Vec<DType> {
    dtypes()
        .into_iter()
        .filter(|dtype| dtype.is_integer())
        .collect()
}

fn pick<T: Copy>(items: &[T], rng: &mut SplitMix) -> T {
    items[rng.below(items.len() as u64) as usize]
}

/// The values converted into `dtype` as Nx's `as_type` converts them.
fn converted(values: &[Value], dtype: DType) -> Vec<Value> {
    values
        .iter()
        .map(|&value| reference::round_to(value, dtype))
        .collect()
}

/// Random start indices for `rank` axes stored as `dtype` (negative ones, ones past the end and
/// the type's extremes included), and their values.
fn start_tensor(dtype: DType, rank: usize, rng: &mut SplitMix) -> (Tensor, Vec<i128>) {
    let (min, max) = reference::integer_limits(dtype);
    let starts: Vec<i128> = (0..rank)
        .map(|_| match rng.below(8) {
            0 => min,
            1 => max,
            _ => (rng.below(9) as i128 - 3).clamp(min, max),
        })
        .collect();
    let values: Vec<Value> = starts.iter().map(|&start| Value::Int(start)).collect();
    let tensor = Tensor::from_bytes(
        &device(),
        dtype,
        &[rank],
        &reference::encode(dtype, &values),
    )
    .unwrap();
    (tensor, starts)
}

/// Nx's clamp of a start: into `0..=size - length`.
fn clamp_start(start: i128, size: usize, length: usize) -> usize {
    start.clamp(0, (size - length) as i128) as usize
}

/// concatenate, pad and put_slice of operands of types `first` and `second` into `output`.
fn check_mixed(
    case: &ShapeCase,
    first: DType,
    second: DType,
    output: DType,
    rng: &mut SplitMix,
) -> Result<(), String> {
    let device = device();
    let shape = &case.shape[..];
    let rank = shape.len();
    let (input, values) = make_input(&device, first, shape, case.view, Domain::Wide, rng);
    let fail = |error: nxvk_core::Error| error.to_string();

    // pad with a value of the second type.
    let fill = random_value(second, Domain::Wide, rng);
    let value =
        Tensor::from_bytes(&device, second, &[], &reference::encode(second, &[fill])).unwrap();
    let config = pad_config(rank, rng);
    let source = converted(&values, output);
    if let Some((padded_shape, want)) =
        padded_values(shape, &source, &config, reference::round_to(fill, output))
    {
        let padded = movement::pad_as(&input, &value, &config, output).map_err(fail)?;
        check_output_exact(
            &format!("pad {first} with {second} as {output} {config:?}"),
            &padded,
            &padded_shape,
            &want,
        )?;
    }

    if rank == 0 {
        return Ok(());
    }
    // concatenate [input, other, input] with the other of the second type.
    let axis = rng.below(rank as u64) as usize;
    let mut other_shape = shape.to_vec();
    other_shape[axis] = rng.below(3) as usize;
    let (other, other_values) = make_input(
        &device,
        second,
        &other_shape,
        ViewKind::Transposed,
        Domain::Wide,
        rng,
    );
    let joined = movement::concatenate_as(&[&input, &other, &input], axis, output).map_err(fail)?;
    let other_source = converted(&other_values, output);
    let (joined_shape, want) = joined_values(shape, &source, &other_shape, &other_source, axis);
    check_output_exact(
        &format!("concatenate {first} {second} as {output} on axis {axis}"),
        &joined,
        &joined_shape,
        &want,
    )?;

    // put_slice of an update of the second type at starts given as a tensor.
    let update_shape: Vec<usize> = shape
        .iter()
        .map(|&size| rng.below(size as u64 + 1) as usize)
        .collect();
    let (update, update_values) = make_input(
        &device,
        second,
        &update_shape,
        ViewKind::Sliced,
        Domain::Wide,
        rng,
    );
    let (starts, start_values) = start_tensor(pick(&integer_dtypes(), rng), rank, rng);
    let put =
        movement::put_slice_as(&input, Starts::Tensor(&starts), &update, output).map_err(fail)?;
    let clamped: Vec<usize> = (0..rank)
        .map(|axis| clamp_start(start_values[axis], shape[axis], update_shape[axis]))
        .collect();
    let update_source = converted(&update_values, output);
    let want = put_values(shape, &source, &update_shape, &update_source, &clamped);
    check_output_exact(
        &format!(
            "put_slice {second} into {first} as {output} at {start_values:?} ({})",
            starts.dtype()
        ),
        &put,
        shape,
        &want,
    )
}

/// Per-axis starts for `rank` axes: each at random a host value (i64 extremes included) or a
/// scalar tensor of a random integer type (the type's extremes included), and their values.
fn per_axis_starts(rank: usize, rng: &mut SplitMix) -> (Vec<Option<Tensor>>, Vec<i128>) {
    (0..rank)
        .map(|_| {
            if rng.below(3) == 0 {
                let value = match rng.below(6) {
                    0 => i64::MIN,
                    1 => i64::MAX,
                    _ => rng.below(9) as i64 - 3,
                };
                (None, i128::from(value))
            } else {
                let (tensor, values) = start_tensor(pick(&integer_dtypes(), rng), 1, rng);
                (Some(tensor.reshape(&[]).unwrap()), values[0])
            }
        })
        .unzip()
}

/// The per-axis form of `tensors` and `values` (made by [`per_axis_starts`]).
fn axis_starts<'a>(tensors: &'a [Option<Tensor>], values: &[i128]) -> Vec<AxisStart<'a>> {
    tensors
        .iter()
        .zip(values)
        .map(|(tensor, &value)| match tensor {
            Some(tensor) => AxisStart::Tensor(tensor),
            None => AxisStart::Fixed(value as i64),
        })
        .collect()
}

/// slice at starts given as a rank-1 tensor and per axis, with steps, and put_slice at
/// per-axis starts, on a view of `dtype`.
fn check_tensor_starts(case: &ShapeCase, dtype: DType, rng: &mut SplitMix) -> Result<(), String> {
    let device = device();
    let shape = &case.shape[..];
    let rank = shape.len();
    let (input, values) = make_input(&device, dtype, shape, case.view, Domain::Wide, rng);
    let lengths: Vec<usize> = shape
        .iter()
        .map(|&size| rng.below(size as u64 + 1) as usize)
        .collect();
    let steps: Vec<usize> = (0..rank).map(|_| rng.below(3) as usize + 1).collect();
    let (starts, start_values) = start_tensor(pick(&integer_dtypes(), rng), rank, rng);
    let (per_axis, per_axis_values) = per_axis_starts(rank, rng);
    let sliced_shape: Vec<usize> = (0..rank)
        .map(|axis| lengths[axis].div_ceil(steps[axis]))
        .collect();
    let n: usize = sliced_shape.iter().product();
    let per_axis_form = axis_starts(&per_axis, &per_axis_values);
    let forms = [
        (Starts::Tensor(&starts), &start_values),
        (Starts::PerAxis(&per_axis_form), &per_axis_values),
    ];
    for (form, start_values) in forms {
        let output = movement::slice_at(&input, form, &lengths, &steps)
            .map_err(|error| error.to_string())?;
        let want: Vec<Value> = (0..n)
            .map(|index| {
                let at = coordinates(&sliced_shape, index);
                let source: Vec<usize> = (0..rank)
                    .map(|axis| {
                        clamp_start(start_values[axis], shape[axis], lengths[axis])
                            + at[axis] * steps[axis]
                    })
                    .collect();
                values[linear(shape, &source)]
            })
            .collect();
        check_output_exact(
            &format!("slice at {start_values:?} ({form:?}) {lengths:?} {steps:?}"),
            &output,
            &sliced_shape,
            &want,
        )?;
    }

    // put_slice of an update of `lengths` at the per-axis starts.
    let (update, update_values) = make_input(
        &device,
        dtype,
        &lengths,
        ViewKind::Contiguous,
        Domain::Wide,
        rng,
    );
    let put = movement::put_slice_as(&input, Starts::PerAxis(&per_axis_form), &update, dtype)
        .map_err(|error| error.to_string())?;
    let clamped: Vec<usize> = (0..rank)
        .map(|axis| clamp_start(per_axis_values[axis], shape[axis], lengths[axis]))
        .collect();
    let want = put_values(shape, &values, &lengths, &update_values, &clamped);
    check_output_exact(
        &format!("put_slice {dtype} at {per_axis_values:?}"),
        &put,
        shape,
        &want,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(24), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn mixed_operands_convert_on_load_as_nx_as_type(case in shape_case(3)) {
        let mut rng = SplitMix(case.seed);
        let all = dtypes();
        for _ in 0..4 {
            let (first, second) = (pick(&all, &mut rng), pick(&all, &mut rng));
            // Nx's merged type, or an explicit one (the Elixir backend passes `out`'s).
            let output = if rng.below(2) == 0 { merge(first, second) } else { pick(&all, &mut rng) };
            check_mixed(&case, first, second, output, &mut rng).map_err(TestCaseError::fail)?;
        }
    }

    #[test]
    fn tensor_starts_are_clamped_on_the_device(case in shape_case(3)) {
        let mut rng = SplitMix(case.seed);
        for dtype in dtypes() {
            check_tensor_starts(&case, dtype, &mut rng).map_err(TestCaseError::fail)?;
        }
    }
}

/// Every (from, to) pair of native types through the converting copy, on one small case.
#[test]
fn every_native_pair_converts_on_load() {
    let case = ShapeCase {
        shape: vec![3, 5],
        view: ViewKind::Transposed,
        seed: 7,
    };
    let mut rng = SplitMix(case.seed);
    let native: Vec<DType> = nxvk_kernels::ops::native_dtypes().collect();
    for &first in &native {
        for &output in &native {
            check_mixed(&case, first, first, output, &mut rng).unwrap();
        }
    }
}

/// Sub-byte operands and results (moved as bytes, packed again) on every view kind, mixed
/// with native ones, and sliced at tensor starts.
#[test]
fn sub_byte_types_move_as_bytes() {
    let mut rng = SplitMix(23);
    let sub_byte = [DType::S2, DType::S4, DType::U2, DType::U4];
    for (shape, view) in [
        (vec![5usize], ViewKind::Contiguous),
        (vec![3, 5], ViewKind::Transposed),
        (vec![2, 3, 3], ViewKind::Sliced),
        (vec![], ViewKind::Contiguous),
    ] {
        let case = ShapeCase {
            shape,
            view,
            seed: 0,
        };
        for &narrow in &sub_byte {
            for other in [narrow, DType::F32, DType::S64, pick(&sub_byte, &mut rng)] {
                check_mixed(&case, narrow, other, narrow, &mut rng).unwrap();
                check_mixed(&case, other, narrow, merge(other, narrow), &mut rng).unwrap();
            }
            check_tensor_starts(&case, narrow, &mut rng).unwrap();
        }
    }
}

/// Known values, errors, and the null arms: the checks reject an unconverted copy and an
/// unclamped start.
#[test]
fn known_values_errors_and_null_arms() {
    let device = device();
    let integers = Tensor::from_slice(&device, &[3], &[1i32, -2, 300]).unwrap();
    let halves = Tensor::from_slice(&device, &[1], &[2.5f32]).unwrap();
    let joined = movement::concatenate(&[&integers, &halves], 0).unwrap();
    assert_eq!(joined.dtype(), DType::F32);
    assert_eq!(joined.to_vec::<f32>().unwrap(), [1.0, -2.0, 300.0, 2.5]);
    let bytes = movement::concatenate_as(&[&integers, &halves], 0, DType::U8).unwrap();
    assert_eq!(bytes.to_vec::<u8>().unwrap(), [1, 254, 44, 2]);
    // Null arm: the raw bits of the s32 operand are not its f32 conversion.
    let raw = [
        Value::Float(f64::from(f32::from_bits(1))),
        Value::Float(-2.0),
    ];
    let first_two = movement::slice(&joined, &[0], &[2], &[1]).unwrap();
    assert!(check_output_exact("null", &first_two, &[2], &raw).is_err());

    let matrix = Tensor::from_slice(&device, &[2, 4], &[0i64, 1, 2, 3, 4, 5, 6, 7]).unwrap();
    let starts = Tensor::from_slice(&device, &[2], &[-5i16, 9]).unwrap();
    let window = movement::slice_at(&matrix, Starts::Tensor(&starts), &[1, 2], &[1, 1]).unwrap();
    assert_eq!(window.to_vec::<i64>().unwrap(), [2, 3]);
    // Null arm: the unclamped window [-5, 9) does not exist; the first in-range one differs.
    let unclamped = [Value::Int(0), Value::Int(1)];
    assert!(check_output_exact("null", &window, &[1, 2], &unclamped).is_err());
    let patch = Tensor::from_slice(&device, &[1, 2], &[-1.5f64, 9.0]).unwrap();
    let put = movement::put_slice_as(&matrix, Starts::Tensor(&starts), &patch, DType::F64).unwrap();
    assert_eq!(
        put.to_vec::<f64>().unwrap(),
        [0.0, 1.0, -1.5, 9.0, 4.0, 5.0, 6.0, 7.0]
    );

    // Per-axis starts of different types: a u64 above 2^63 clamps to the last row (read as
    // an s64 it would wrap negative and clamp to the first), a host -7 to column 0.
    let huge = Tensor::from_slice(&device, &[], &[(1u64 << 63) + 5]).unwrap();
    let per_axis = [AxisStart::Tensor(&huge), AxisStart::Fixed(-7)];
    let window = movement::slice_at(&matrix, Starts::PerAxis(&per_axis), &[1, 2], &[1, 1]).unwrap();
    assert_eq!(window.to_vec::<i64>().unwrap(), [4, 5]);
    let wrapped = [Value::Int(0), Value::Int(1)];
    assert!(check_output_exact("null", &window, &[1, 2], &wrapped).is_err());
    let small = Tensor::from_slice(&device, &[], &[3i8]).unwrap();
    let per_axis = [AxisStart::Fixed(0), AxisStart::Tensor(&small)];
    let put =
        movement::put_slice_as(&matrix, Starts::PerAxis(&per_axis), &patch, DType::F64).unwrap();
    assert_eq!(
        put.to_vec::<f64>().unwrap(),
        [0.0, 1.0, -1.5, 9.0, 4.0, 5.0, 6.0, 7.0]
    );
    let half = Tensor::from_slice(&device, &[], &[0.5f32]).unwrap();
    for (starts, what) in [
        (
            vec![AxisStart::Tensor(&starts), AxisStart::Fixed(0)],
            "rank-1 start",
        ),
        (
            vec![AxisStart::Tensor(&half), AxisStart::Fixed(0)],
            "float start",
        ),
        (vec![AxisStart::Fixed(0)], "one start for rank 2"),
    ] {
        let error = movement::slice_at(&matrix, Starts::PerAxis(&starts), &[1, 1], &[1, 1])
            .unwrap_err()
            .to_string();
        assert!(error.contains("slice"), "{what}: {error}");
    }

    let floats = Tensor::from_slice(&device, &[2], &[0.0f32, 1.0]).unwrap();
    let error = movement::slice_at(&matrix, Starts::Tensor(&floats), &[1, 1], &[1, 1]).unwrap_err();
    assert!(error.to_string().contains("slice"), "{error}");
    let three = Tensor::from_slice(&device, &[3], &[0i32, 0, 0]).unwrap();
    let error =
        movement::put_slice_as(&matrix, Starts::Tensor(&three), &patch, DType::F64).unwrap_err();
    assert!(error.to_string().contains("put_slice"), "{error}");
    let error = movement::concatenate_as(&[&matrix, &integers], 0, DType::F32).unwrap_err();
    assert!(error.to_string().contains("concatenate"), "{error}");
}
