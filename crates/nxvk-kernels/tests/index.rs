//! Indexing against host index arithmetic: gather (with axes), take, take_along_axis,
//! indexed_put and indexed_add over every byte-sized dtype (complex included), every integer
//! index dtype, strided views as operands, empty and rank-0 cases, and out-of-range indices
//! (clamped). Gathers and puts move bits and compare exactly; integer adds are exact; float
//! adds compare within a tolerance (their atomic order varies).

mod common;

use common::*;
use nxvk_core::{DType, Tensor};
use nxvk_kernels::index;
use nxvk_kernels::reference::{self, Value};
use nxvk_kernels::{BinaryOp, types};
use proptest::prelude::*;

fn value_dtypes() -> Vec<DType> {
    let mut dtypes: Vec<DType> = nxvk_kernels::ops::native_dtypes().collect();
    dtypes.extend([DType::C64, DType::C128]);
    dtypes
}

const INDEX_DTYPES: [DType; 8] = [
    DType::S8,
    DType::S16,
    DType::S32,
    DType::S64,
    DType::U8,
    DType::U16,
    DType::U32,
    DType::U64,
];

/// An index tensor of `shape` with values in [-2, bound + 2) (out of range on both sides),
/// stored as `dtype`; returns it and its stored values clamped into [0, bound).
fn make_indices(
    dtype: DType,
    shape: &[usize],
    bound: usize,
    rng: &mut SplitMix,
) -> (Tensor, Vec<usize>) {
    let n: usize = shape.iter().product();
    let values: Vec<Value> = (0..n)
        .map(|_| {
            let raw = rng.below(bound as u64 + 4) as i128 - 2;
            reference::round_to(Value::Int(raw), dtype)
        })
        .collect();
    let tensor =
        Tensor::from_bytes(&device(), dtype, shape, &reference::encode(dtype, &values)).unwrap();
    let clamped = values
        .iter()
        .map(|value| match value {
            Value::Int(stored) => (*stored).clamp(0, bound.max(1) as i128 - 1) as usize,
            _ => unreachable!("integer indices"),
        })
        .collect();
    (tensor, clamped)
}

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<usize>,
    view: ViewKind,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(1usize..5, 1..=3),
        any_view_kind(),
        any::<u64>(),
    )
        .prop_map(|(shape, view, seed)| Case { shape, view, seed })
}

fn check_gathers(case: &Case, dtype: DType, rng: &mut SplitMix) -> Result<(), String> {
    let device = device();
    let shape = &case.shape[..];
    let rank = shape.len();
    let (input, values) = make_input(&device, dtype, shape, case.view, Domain::Wide, rng);
    let index_dtype = INDEX_DTYPES[rng.below(8) as usize];

    // take along a random axis, with indices of rank 0 to 2 (sizes may be 0).
    let axis = rng.below(rank as u64) as usize;
    let index_shape: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(4) as usize).collect();
    let (indices, clamped) = make_indices(index_dtype, &index_shape, shape[axis], rng);
    let output = index::take(&input, &indices, axis).map_err(|error| error.to_string())?;
    let mut take_shape = shape[..axis].to_vec();
    take_shape.extend(&index_shape);
    take_shape.extend(&shape[axis + 1..]);
    let want: Vec<Value> = (0..take_shape.iter().product())
        .map(|element| {
            let at = coordinates(&take_shape, element);
            let index_rank = index_shape.len();
            let chosen = clamped[linear(&index_shape, &at[axis..axis + index_rank])];
            let mut source = at[..axis].to_vec();
            source.push(chosen);
            source.extend(&at[axis + index_rank..]);
            values[linear(shape, &source)]
        })
        .collect();
    check_output_exact(
        &format!("take axis {axis} indices {index_shape:?} {index_dtype}"),
        &output,
        &take_shape,
        &want,
    )?;

    // gather on a random increasing set of axes.
    let axes: Vec<usize> = (0..rank).filter(|_| rng.below(2) == 0).collect();
    let depth = axes.len();
    if depth > 0 {
        let rows: Vec<usize> = (0..rng.below(3)).map(|_| rng.below(4) as usize).collect();
        let mut index_shape = rows.clone();
        index_shape.push(depth);
        let n_rows: usize = rows.iter().product();
        let mut raw = Vec::new();
        let mut chosen = Vec::new();
        for _ in 0..n_rows {
            for &axis in &axes {
                let (_, clamped) = make_indices(index_dtype, &[1], shape[axis], rng);
                chosen.push(clamped[0]);
                raw.push(clamped[0]);
            }
        }
        // Out-of-range values are covered by take; here rows hold valid, clamped values
        // interleaved with deliberately far ones on the first axis.
        if let Some(first) = raw.first_mut() {
            *first += 1000;
        }
        let stored: Vec<Value> = raw
            .iter()
            .map(|&value| reference::round_to(Value::Int(value as i128), index_dtype))
            .collect();
        for (position, value) in stored.iter().enumerate() {
            if let Value::Int(stored) = value {
                let axis = axes[position % depth];
                chosen[position] = (*stored).clamp(0, shape[axis] as i128 - 1) as usize;
            }
        }
        let indices = Tensor::from_bytes(
            &device,
            index_dtype,
            &index_shape,
            &reference::encode(index_dtype, &stored),
        )
        .unwrap();
        let output = index::gather(&input, &indices, Some(&axes)).map_err(|e| e.to_string())?;
        let free: Vec<usize> = (0..rank).filter(|axis| !axes.contains(axis)).collect();
        let mut gather_shape = rows.clone();
        gather_shape.extend(free.iter().map(|&axis| shape[axis]));
        let want: Vec<Value> = (0..gather_shape.iter().product())
            .map(|element| {
                let at = coordinates(&gather_shape, element);
                let row = linear(&rows, &at[..rows.len()]);
                let mut source = vec![0; rank];
                for (position, &axis) in axes.iter().enumerate() {
                    source[axis] = chosen[row * depth + position];
                }
                for (offset, &axis) in free.iter().enumerate() {
                    source[axis] = at[rows.len() + offset];
                }
                values[linear(shape, &source)]
            })
            .collect();
        check_output_exact(
            &format!("gather axes {axes:?} rows {rows:?} {index_dtype}"),
            &output,
            &gather_shape,
            &want,
        )?;
    }

    // take_along_axis with indices as large as the input on the other axes, or smaller.
    let along_shape: Vec<usize> = (0..rank)
        .map(|other| {
            if other == axis {
                rng.below(4) as usize
            } else {
                shape[other] - rng.below(2).min(shape[other] as u64 - 1) as usize
            }
        })
        .collect();
    let (indices, clamped) = make_indices(index_dtype, &along_shape, shape[axis], rng);
    let output =
        index::take_along_axis(&input, &indices, axis).map_err(|error| error.to_string())?;
    let want: Vec<Value> = (0..along_shape.iter().product())
        .map(|element| {
            let mut at = coordinates(&along_shape, element);
            at[axis] = clamped[element];
            values[linear(shape, &at)]
        })
        .collect();
    check_output_exact(
        &format!("take_along_axis {axis} {along_shape:?} {index_dtype}"),
        &output,
        &along_shape,
        &want,
    )
}

/// Where a scatter writes: the target's shape, the indexed axes, each row's clamped
/// coordinates on them, and the update window.
#[derive(Clone, Copy)]
struct Geometry<'a> {
    shape: &'a [usize],
    axes: &'a [usize],
    rows: &'a [Vec<usize>],
    window: &'a [usize],
}

/// The host scatter: rows in order, put (last wins) or add in the result type.
fn scatter_reference(
    add: bool,
    dtype: DType,
    target: &[Value],
    geometry: &Geometry<'_>,
    updates: &[Value],
) -> Vec<Value> {
    let Geometry {
        shape,
        axes,
        rows,
        window,
    } = *geometry;
    let mut result = target.to_vec();
    let free: Vec<usize> = (0..shape.len())
        .filter(|axis| !axes.contains(axis))
        .collect();
    let window_count: usize = window.iter().product();
    for (row, chosen) in rows.iter().enumerate() {
        for element in 0..window_count {
            let at = coordinates(window, element);
            let mut destination = vec![0; shape.len()];
            for (position, &axis) in axes.iter().enumerate() {
                destination[axis] = chosen[position];
            }
            for (offset, &axis) in free.iter().enumerate() {
                destination[axis] = at[offset];
            }
            let slot = linear(shape, &destination);
            let update = updates[row * window_count + element];
            result[slot] = if add {
                let sum = reference::binary(BinaryOp::Add, dtype, result[slot], update).unwrap();
                reference::round_to(sum, dtype)
            } else {
                update
            };
        }
    }
    result
}

fn check_scatters(case: &Case, dtype: DType, rng: &mut SplitMix) -> Result<(), String> {
    let device = device();
    let shape = &case.shape[..];
    let rank = shape.len();
    // Finite, modest values: float sums of repeated indices then compare within rounding.
    let domain = if dtype.is_float() || dtype.is_complex() {
        Domain::Moderate
    } else {
        Domain::Wide
    };
    let (target, target_values) = make_input(&device, dtype, shape, case.view, domain, rng);
    let index_dtype = INDEX_DTYPES[rng.below(8) as usize];
    let mut axes: Vec<usize> = (0..rank).filter(|_| rng.below(2) == 0).collect();
    if axes.is_empty() {
        axes.push(rng.below(rank as u64) as usize);
    }
    let depth = axes.len();
    let n_rows = rng.below(6) as usize;
    let free: Vec<usize> = (0..rank).filter(|axis| !axes.contains(axis)).collect();
    let window: Vec<usize> = free
        .iter()
        .map(|&axis| shape[axis] - rng.below(2).min(shape[axis] as u64 - 1) as usize)
        .collect();
    // Few distinct positions, so rows repeat indices; some are out of range.
    let mut stored = Vec::new();
    let mut rows = Vec::new();
    for _ in 0..n_rows {
        let mut chosen = Vec::new();
        for &axis in &axes {
            let raw = rng.below(shape[axis].min(2) as u64 + 2) as i128 - 1;
            let value = reference::round_to(Value::Int(raw), index_dtype);
            if let Value::Int(stored_value) = value {
                chosen.push(stored_value.clamp(0, shape[axis] as i128 - 1) as usize);
            }
            stored.push(value);
        }
        rows.push(chosen);
    }
    let indices = Tensor::from_bytes(
        &device,
        index_dtype,
        &[n_rows, depth],
        &reference::encode(index_dtype, &stored),
    )
    .unwrap();
    let update_dtype = if rng.below(4) == 0 && dtype.is_integer() {
        DType::S8
    } else {
        dtype
    };
    let mut update_shape = vec![n_rows];
    update_shape.extend(&window);
    // Contiguous updates, sometimes a view that starts past its buffer's first element.
    let (updates, update_values) = if rng.below(2) == 0 {
        make_input(
            &device,
            update_dtype,
            &update_shape,
            ViewKind::Contiguous,
            domain,
            rng,
        )
    } else {
        let mut longer = update_shape.clone();
        longer[0] += 1;
        let (base, values) = make_input(
            &device,
            update_dtype,
            &longer,
            ViewKind::Contiguous,
            domain,
            rng,
        );
        let mut starts = vec![0; longer.len()];
        starts[0] = 1;
        let skipped: usize = longer[1..].iter().product();
        (
            base.slice(&starts, &update_shape).unwrap(),
            values[skipped..].to_vec(),
        )
    };
    let result_dtype = types::merge(dtype, update_dtype);
    let cast = |values: &[Value]| -> Vec<Value> {
        values
            .iter()
            .map(|&value| reference::round_to(value, result_dtype))
            .collect()
    };
    let (target_cast, updates_cast) = (cast(&target_values), cast(&update_values));

    let geometry = Geometry {
        shape,
        axes: &axes,
        rows: &rows,
        window: &window,
    };
    let output = index::indexed_put(&target, &indices, &updates, Some(&axes))
        .map_err(|error| error.to_string())?;
    let want = scatter_reference(false, result_dtype, &target_cast, &geometry, &updates_cast);
    check_output_exact(
        &format!("indexed_put axes {axes:?} rows {rows:?} {index_dtype}"),
        &output,
        shape,
        &want,
    )?;

    let output = index::indexed_add(&target, &indices, &updates, Some(&axes))
        .map_err(|error| error.to_string())?;
    let want = scatter_reference(true, result_dtype, &target_cast, &geometry, &updates_cast);
    let tolerance = if result_dtype.is_integer() {
        Tolerance::Exact
    } else {
        // Up to five addends of magnitude 64 or less, in any order: a rounding of the type
        // at 320 per addition.
        let absolute = match result_dtype {
            DType::F16 => 1.5,
            DType::BF16 => 10.0,
            DType::F32 | DType::C64 => 3e-4,
            _ => 1e-12,
        };
        Tolerance::Ulps { ulps: 8, absolute }
    };
    check_output(
        &format!("indexed_add axes {axes:?} rows {rows:?} {index_dtype}"),
        &output,
        shape,
        &want,
        tolerance,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases_or(24), max_shrink_iters: 32, ..ProptestConfig::default() })]

    #[test]
    fn gathers_match_the_host(case in case()) {
        let mut rng = SplitMix(case.seed);
        for dtype in value_dtypes() {
            if let Err(why) = check_gathers(&case, dtype, &mut rng) {
                prop_assert!(false, "{:?}: {}", case, why);
            }
        }
    }

    #[test]
    fn scatters_match_the_host(case in case()) {
        let mut rng = SplitMix(case.seed);
        for dtype in value_dtypes() {
            if let Err(why) = check_scatters(&case, dtype, &mut rng) {
                prop_assert!(false, "{:?}: {}", case, why);
            }
        }
    }
}

/// Nx's documented examples, and a rank-0 gather result.
#[test]
fn nx_examples() {
    let device = device();
    let t = Tensor::from_slice(&device, &[2, 3], &[1i32, 2, 3, 4, 5, 6]).unwrap();
    let indices = Tensor::from_slice(&device, &[4, 1], &[1i64, 0, 2, 1]).unwrap();
    let output = index::gather(&t, &indices, Some(&[1])).unwrap();
    assert_eq!(output.shape(), &[4, 2]);
    assert_eq!(
        output.to_vec::<i32>().unwrap(),
        vec![2, 5, 1, 4, 3, 6, 2, 5]
    );

    let cube =
        Tensor::from_slice(&device, &[2, 2, 2], &[1i32, 2, 11, 12, 101, 102, 111, 112]).unwrap();
    let indices = Tensor::from_slice(&device, &[3, 3], &[0i32, 0, 0, 0, 1, 1, 1, 1, 1]).unwrap();
    let output = index::gather(&cube, &indices, None).unwrap();
    assert_eq!(output.to_vec::<i32>().unwrap(), vec![1, 12, 112]);
    let single = Tensor::from_slice(&device, &[3], &[1u8, 0, 1]).unwrap();
    let output = index::gather(&cube, &single, None).unwrap();
    assert_eq!(output.shape(), &[] as &[usize]);
    assert_eq!(output.to_vec::<i32>().unwrap(), vec![102]);

    // indexed_add of Nx's docs: repeated rows add up.
    let target = Tensor::from_slice(&device, &[1, 2, 3], &[0i32, 1, 2, 3, 4, 5]).unwrap();
    let indices = Tensor::from_slice(
        &device,
        &[5, 3],
        &[0i32, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 2, 0, 1, 2],
    )
    .unwrap();
    let updates = Tensor::from_slice(&device, &[5], &[1i32, 3, 1, -2, 5]).unwrap();
    let output = index::indexed_add(&target, &indices, &updates, None).unwrap();
    assert_eq!(output.to_vec::<i32>().unwrap(), vec![2, 1, 0, 3, 7, 10]);

    // indexed_put: the last of repeated rows wins.
    let target = Tensor::from_slice(&device, &[3], &[0.0f32; 3]).unwrap();
    let indices = Tensor::from_slice(&device, &[4, 1], &[1i32, 1, 2, 1]).unwrap();
    let updates = Tensor::from_slice(&device, &[4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let output = index::indexed_put(&target, &indices, &updates, None).unwrap();
    assert_eq!(output.to_vec::<f32>().unwrap(), vec![0.0, 4.0, 3.0]);
}

/// Bad operands are errors, never panics.
#[test]
fn bad_operands_are_errors() {
    let device = device();
    let t = Tensor::from_slice(&device, &[2, 2], &[1i32, 2, 3, 4]).unwrap();
    let float_indices = Tensor::from_slice(&device, &[1, 1], &[0.0f32]).unwrap();
    assert!(index::gather(&t, &float_indices, None).is_err());
    let scalar = Tensor::from_slice(&device, &[], &[0i32]).unwrap();
    assert!(index::gather(&t, &scalar, None).is_err());
    let deep = Tensor::from_slice(&device, &[1, 3], &[0i32, 0, 0]).unwrap();
    assert!(index::gather(&t, &deep, None).is_err());
    assert!(index::take(&t, &scalar, 2).is_err());
    let empty_axis = Tensor::zeros(&device, DType::F32, &[0, 2]).unwrap();
    let one = Tensor::from_slice(&device, &[1], &[0i32]).unwrap();
    assert!(index::take(&empty_axis, &one, 0).is_err());
    let updates = Tensor::from_slice(&device, &[1, 3], &[1i32, 2, 3]).unwrap();
    let rows = Tensor::from_slice(&device, &[1, 1], &[0i32]).unwrap();
    assert!(index::indexed_put(&t, &rows, &updates, None).is_err());
    let sub_byte = Tensor::zeros(&device, DType::U4, &[4]).unwrap();
    assert!(index::take(&sub_byte, &one, 0).is_err());
}

/// Null arm: the comparison rejects a wrong element, and a reference that skips clamping
/// disagrees with the GPU on an out-of-range index.
#[test]
fn compare_rejects_wrong_results() {
    let device = device();
    let t = Tensor::from_slice(&device, &[3], &[10i32, 20, 30]).unwrap();
    let indices = Tensor::from_slice(&device, &[2], &[-5i32, 7]).unwrap();
    let output = index::take(&t, &indices, 0).unwrap();
    assert!(
        check_output_exact("clamped", &output, &[2], &[Value::Int(10), Value::Int(30)]).is_ok()
    );
    // Wrapping (Python-style) negative indices would pick 20 for -5 mod 3 = 1.
    assert!(
        check_output_exact("wrapped", &output, &[2], &[Value::Int(20), Value::Int(30)]).is_err()
    );
    assert!(
        check_output_exact("shape", &output, &[1, 2], &[Value::Int(10), Value::Int(30)]).is_err()
    );
    let floats = Tensor::from_slice(&device, &[1], &[1.0f32]).unwrap();
    let near = Tolerance::Ulps {
        ulps: 8,
        absolute: 1e-9,
    };
    assert!(check_output("far", &floats, &[1], &[Value::Float(1.001)], near).is_err());
}
