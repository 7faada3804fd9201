//! Data movement against host index arithmetic: random shapes up to rank 4 (empty and rank 0
//! included), strided views as inputs, every byte-sized dtype (complex included). Results are
//! compared exactly: the copies move bits.

mod common;

use common::movement_cases::{
    ShapeCase, joined_values, pad_config, padded_values, put_values, shape_case,
};
use common::*;
use nxvk_core::{DType, Layout, Tensor};
use nxvk_kernels::movement;
use nxvk_kernels::reference::{self, Value};
use proptest::prelude::*;

fn dtypes() -> Vec<DType> {
    let mut dtypes: Vec<DType> = nxvk_kernels::ops::native_dtypes().collect();
    dtypes.extend([DType::C64, DType::C128]);
    dtypes
}

/// The expected result of `shape`: each output coordinate maps to an input element or `fill`.
fn expected(
    shape: &[usize],
    values: &[Value],
    input_shape: &[usize],
    fill: Option<Value>,
    map: impl Fn(&[usize]) -> Option<Vec<usize>>,
) -> Vec<Value> {
    let n: usize = shape.iter().product();
    (0..n)
        .map(|index| match map(&coordinates(shape, index)) {
            Some(source) => values[linear(input_shape, &source)],
            None => fill.expect("a fill value for unmapped elements"),
        })
        .collect()
}

fn check_case(case: &ShapeCase, dtype: DType, rng: &mut SplitMix) -> Result<(), String> {
    let device = device();
    let shape = &case.shape[..];
    let rank = shape.len();
    let (input, values) = make_input(&device, dtype, shape, case.view, Domain::Wide, rng);

    // contiguous and transpose.
    let output = movement::contiguous(&input).map_err(|error| error.to_string())?;
    check_output_exact("contiguous", &output, shape, &values)?;
    let mut permutation: Vec<usize> = (0..rank).collect();
    for axis in (1..rank).rev() {
        permutation.swap(axis, rng.below(axis as u64 + 1) as usize);
    }
    let transposed_shape: Vec<usize> = permutation.iter().map(|&axis| shape[axis]).collect();
    let output = movement::transpose(&input, &permutation).map_err(|error| error.to_string())?;
    let want: Vec<Value> = Layout::contiguous(shape)
        .transpose(&permutation)
        .unwrap()
        .element_indices()
        .map(|index| values[index])
        .collect();
    check_output_exact(
        &format!("transpose {permutation:?}"),
        &output,
        &transposed_shape,
        &want,
    )?;

    // reverse.
    let axes: Vec<usize> = (0..rank).filter(|_| rng.below(2) == 0).collect();
    let output = movement::reverse(&input, &axes).map_err(|error| error.to_string())?;
    let want = expected(shape, &values, shape, None, |coordinates| {
        Some(
            (0..rank)
                .map(|axis| {
                    if axes.contains(&axis) {
                        shape[axis] - 1 - coordinates[axis]
                    } else {
                        coordinates[axis]
                    }
                })
                .collect(),
        )
    });
    check_output_exact(&format!("reverse {axes:?}"), &output, shape, &want)?;

    // slice with steps; starts beyond the window are clamped.
    let lengths: Vec<usize> = shape
        .iter()
        .map(|&size| rng.below(size as u64 + 1) as usize)
        .collect();
    let starts: Vec<i64> = (0..rank).map(|_| rng.below(7) as i64 - 2).collect();
    let steps: Vec<usize> = (0..rank).map(|_| rng.below(3) as usize + 1).collect();
    let clamped: Vec<usize> = (0..rank)
        .map(|axis| starts[axis].clamp(0, (shape[axis] - lengths[axis]) as i64) as usize)
        .collect();
    let sliced_shape: Vec<usize> = (0..rank)
        .map(|axis| lengths[axis].div_ceil(steps[axis]))
        .collect();
    let output =
        movement::slice(&input, &starts, &lengths, &steps).map_err(|error| error.to_string())?;
    let want = expected(&sliced_shape, &values, shape, None, |coordinates| {
        Some(
            (0..rank)
                .map(|axis| clamped[axis] + coordinates[axis] * steps[axis])
                .collect(),
        )
    });
    check_output_exact(
        &format!("slice {starts:?} {lengths:?} {steps:?}"),
        &output,
        &sliced_shape,
        &want,
    )?;

    // pad, negative lo/hi included (configurations with a negative size are skipped).
    let fill = random_value(dtype, Domain::Wide, rng);
    let value =
        Tensor::from_bytes(&device, dtype, &[], &reference::encode(dtype, &[fill])).unwrap();
    let config = pad_config(rank, rng);
    if let Some((padded_shape, want)) = padded_values(shape, &values, &config, fill) {
        let output = movement::pad(&input, &value, &config).map_err(|error| error.to_string())?;
        check_output_exact(&format!("pad {config:?}"), &output, &padded_shape, &want)?;
    } else {
        let error = movement::pad(&input, &value, &config).unwrap_err();
        if !error.to_string().contains("pad") {
            return Err(format!(
                "pad {config:?}: error without the op's name: {error}"
            ));
        }
    }

    if rank == 0 {
        return Ok(());
    }
    // concatenate with a contiguous tensor of another size on the axis.
    let axis = rng.below(rank as u64) as usize;
    let mut other_shape = shape.to_vec();
    other_shape[axis] = rng.below(4) as usize;
    let (other, other_values) = make_input(
        &device,
        dtype,
        &other_shape,
        ViewKind::Contiguous,
        Domain::Wide,
        rng,
    );
    let output = movement::concatenate(&[&input, &other, &input], axis)
        .map_err(|error| error.to_string())?;
    let (joined_shape, want) = joined_values(shape, &values, &other_shape, &other_values, axis);
    check_output_exact(
        &format!("concatenate axis {axis}"),
        &output,
        &joined_shape,
        &want,
    )?;

    // put_slice with clamped starts.
    let update_shape: Vec<usize> = shape
        .iter()
        .map(|&size| rng.below(size as u64 + 1) as usize)
        .collect();
    let (update, update_values) = make_input(
        &device,
        dtype,
        &update_shape,
        ViewKind::Sliced,
        Domain::Wide,
        rng,
    );
    let starts: Vec<i64> = (0..rank).map(|_| rng.below(7) as i64 - 2).collect();
    let clamped: Vec<usize> = (0..rank)
        .map(|axis| starts[axis].clamp(0, (shape[axis] - update_shape[axis]) as i64) as usize)
        .collect();
    let output =
        movement::put_slice(&input, &starts, &update).map_err(|error| error.to_string())?;
    let want = put_values(shape, &values, &update_shape, &update_values, &clamped);
    check_output_exact(&format!("put_slice {starts:?}"), &output, shape, &want)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(24), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn movement_matches_host_index_arithmetic_on_every_dtype(case in shape_case(4)) {
        let mut rng = SplitMix(case.seed);
        for dtype in dtypes() {
            check_case(&case, dtype, &mut rng).map_err(TestCaseError::fail)?;
        }
    }
}

#[test]
fn known_values_and_errors() {
    let device = device();
    let matrix = Tensor::from_slice(&device, &[2, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap();
    let transposed = movement::transpose(&matrix, &[1, 0]).unwrap();
    assert_eq!(transposed.to_vec::<i32>().unwrap(), [1, 4, 2, 5, 3, 6]);
    let zero = Tensor::from_slice(&device, &[], &[0i32]).unwrap();
    let padded = movement::pad(&matrix, &zero, &[(0, 0, 0), (-1, 1, 1)]).unwrap();
    assert_eq!(padded.shape(), [2, 5]);
    assert_eq!(
        padded.to_vec::<i32>().unwrap(),
        [0, 2, 0, 3, 0, 0, 5, 0, 6, 0]
    );
    let rows = movement::broadcast(
        &matrix.slice(&[0, 0], &[2, 1]).unwrap(),
        &[3, 2, 2],
        &[1, 2],
    )
    .unwrap();
    assert_eq!(
        rows.to_vec::<i32>().unwrap(),
        [1, 1, 4, 4, 1, 1, 4, 4, 1, 1, 4, 4]
    );
    let stacked = movement::stack(&[&matrix, &transposed.reshape(&[2, 3]).unwrap()], 2).unwrap();
    assert_eq!(stacked.shape(), [2, 3, 2]);
    assert_eq!(
        stacked.to_vec::<i32>().unwrap(),
        [1, 1, 2, 4, 3, 2, 4, 5, 5, 3, 6, 6]
    );
    assert!(movement::stack(&[&matrix, &transposed], 0).is_err());
    let error = movement::pad(&matrix, &zero, &[(0, 0, 0)]).unwrap_err();
    assert!(error.to_string().contains("pad"), "{error}");
    let error = movement::concatenate(&[&matrix, &zero.reshape(&[1]).unwrap()], 0).unwrap_err();
    assert!(error.to_string().contains("concatenate"), "{error}");
    let error = movement::reverse(&matrix, &[2]).unwrap_err();
    assert!(error.to_string().contains("reverse"), "{error}");
    // Sub-byte elements move as bytes, packed again afterwards (first element in the high bits).
    let nibbles = Tensor::from_bytes(&device, DType::U4, &[5], &[0x12, 0x34, 0x50]).unwrap();
    let reversed = movement::reverse(&nibbles, &[0]).unwrap();
    assert_eq!(reversed.dtype(), DType::U4);
    assert_eq!(reversed.to_bytes().unwrap(), [0x54, 0x32, 0x10]);
}

/// Materialised transposes that take the tiled kernel: several 32 x 32 tiles with partial
/// ones at both edges, batched (3-D) permutations, a transposed view of a sliced input (an
/// offset and strides from a larger tensor) and a pad whose output region starts inside the
/// result, on every byte-sized dtype (c128 moves as 8-byte halves and keeps the strided copy).
#[test]
fn tiled_transposes_match_host_index_arithmetic() {
    let device = device();
    let mut rng = SplitMix(5);
    let cases: [(&[usize], &[usize]); 5] = [
        (&[70, 45], &[1, 0]),
        (&[3, 33, 65], &[0, 2, 1]),
        (&[3, 33, 65], &[2, 1, 0]),
        (&[40, 3, 37], &[2, 0, 1]),
        (&[2, 34, 3, 35], &[3, 1, 2, 0]),
    ];
    for dtype in dtypes() {
        for (shape, permutation) in cases {
            let (input, values) = make_input(
                &device,
                dtype,
                shape,
                ViewKind::Contiguous,
                Domain::Wide,
                &mut rng,
            );
            let view = input.transpose(permutation).unwrap();
            assert_eq!(
                movement::transposes_by_tiles(&view),
                dtype != DType::C128,
                "{dtype} {shape:?} {permutation:?}"
            );
            let want: Vec<Value> = Layout::contiguous(shape)
                .transpose(permutation)
                .unwrap()
                .element_indices()
                .map(|index| values[index])
                .collect();
            let output = movement::transpose(&input, permutation).unwrap();
            check_output_exact(
                &format!("tiled transpose {shape:?} {permutation:?}"),
                &output,
                view.shape(),
                &want,
            )
            .unwrap();
        }
        // A transposed view of a slice: offset and row stride from the larger tensor.
        let (sliced, values) = make_input(
            &device,
            dtype,
            &[36, 50],
            ViewKind::Sliced,
            Domain::Wide,
            &mut rng,
        );
        let view = sliced.transpose(&[1, 0]).unwrap();
        assert_eq!(movement::transposes_by_tiles(&view), dtype != DType::C128);
        let want = expected(&[50, 36], &values, &[36, 50], None, |at| {
            Some(vec![at[1], at[0]])
        });
        check_output_exact(
            "tiled transpose of a slice",
            &movement::contiguous(&view).unwrap(),
            &[50, 36],
            &want,
        )
        .unwrap();
        // A pad of the transposed view: the tiles write a region of a larger output.
        let fill = values[0];
        let scalar =
            Tensor::from_bytes(&device, dtype, &[], &reference::encode(dtype, &[fill])).unwrap();
        let padded = movement::pad(&view, &scalar, &[(2, 1, 0), (1, 3, 0)]).unwrap();
        let want = expected(&[53, 40], &values, &[36, 50], Some(fill), |at| {
            let (row, column) = (at[0].checked_sub(2)?, at[1].checked_sub(1)?);
            (row < 50 && column < 36).then(|| vec![column, row])
        });
        check_output_exact("pad of a transposed view", &padded, &[53, 40], &want).unwrap();
    }
}

/// Null arm: `compare` rejects a wrong element and a wrong shape.
#[test]
fn compare_rejects_wrong_results() {
    let device = device();
    let tensor = Tensor::from_slice(&device, &[2], &[1i32, 2]).unwrap();
    assert!(check_output_exact("null", &tensor, &[2], &[Value::Int(1), Value::Int(2)]).is_ok());
    assert!(check_output_exact("null", &tensor, &[2], &[Value::Int(1), Value::Int(3)]).is_err());
    assert!(check_output_exact("null", &tensor, &[1, 2], &[Value::Int(1), Value::Int(2)]).is_err());
}
