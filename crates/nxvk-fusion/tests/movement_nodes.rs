//! The data-movement, indexing, scan, window, creation and sort nodes run through a plan
//! compute, byte for byte, what the eager catalog op of the same name computes on the same
//! tensors (the catalog's own tests hold those ops to host references), on random shapes
//! (empty and rank-0 where the op allows them), values and options, in f32, f64 and s32.
//! The builder's inferred type must match the eager result's. A null arm shows the
//! comparison rejects a different option.

mod common;

use common::same;

use nxvk_core::{DType, Tensor};
use nxvk_fusion::{GraphBuilder, IndexedUpdate, NodeId, PlanCache};
use nxvk_kernels::sort::Direction;
use nxvk_kernels::{ScanOp, ScatterSelect, WindowOp, WindowOptions, index, movement, sort};
use proptest::prelude::*;

/// A random tensor of `dtype` and `shape` (small integers, exact in every dtype).
fn tensor(random: &mut common::SplitMix, dtype: DType, shape: &[usize]) -> Tensor {
    let count: usize = shape.iter().product();
    let values: Vec<f64> = (0..count)
        .map(|_| (random.next() % 19) as f64 - 9.0)
        .collect();
    let device = common::device();
    match dtype {
        DType::F32 => {
            let values: Vec<f32> = values.iter().map(|&value| value as f32).collect();
            Tensor::from_slice(&device, shape, &values).unwrap()
        }
        DType::S32 => {
            let values: Vec<i32> = values.iter().map(|&value| value as i32).collect();
            Tensor::from_slice(&device, shape, &values).unwrap()
        }
        _ => Tensor::from_slice(&device, shape, &values).unwrap(),
    }
}

/// s32 indices in `0..bound` of `shape`.
fn positions(random: &mut common::SplitMix, shape: &[usize], bound: usize) -> Tensor {
    let count: usize = shape.iter().product();
    let values: Vec<i32> = (0..count)
        .map(|_| (random.next() % bound.max(1) as u64) as i32)
        .collect();
    Tensor::from_slice(&common::device(), shape, &values).unwrap()
}

/// Runs the one-node graph `build` makes over parameters typed like `inputs`, and checks its
/// output type against the builder's inferred type; returns the output.
fn planned(
    cache: &PlanCache,
    inputs: &[&Tensor],
    build: impl Fn(&mut GraphBuilder, &[NodeId]) -> NodeId,
) -> Tensor {
    common::planned_outputs(cache, inputs, |builder, parameters| {
        vec![build(builder, parameters)]
    })
    .remove(0)
}

const DTYPES: [DType; 3] = [DType::F32, DType::F64, DType::S32];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn nodes_compute_what_the_eager_ops_compute(
        seed in any::<u64>(),
        dtype_index in 0usize..3,
        shape in prop::collection::vec(0usize..4, 0..3),
        reverse in any::<bool>(),
    ) {
        let cache = PlanCache::new(&common::device());
        let mut random = common::SplitMix(seed);
        let dtype = DTYPES[dtype_index];
        let rank = shape.len();
        let x = tensor(&mut random, dtype, &shape);
        let direction = if reverse { Direction::Descending } else { Direction::Ascending };

        // pad (negative low/high crop; interior spreads), rank 0 included.
        let config: Vec<(i64, i64, usize)> = (0..rank)
            .map(|_| {
                let low = (random.next() % 3) as i64 - 1;
                (low, 1 - low, (random.next() % 2) as usize)
            })
            .collect();
        let value = tensor(&mut random, dtype, &[]);
        let eager = movement::pad(&x, &value, &config);
        if let Ok(eager) = eager {
            let result = planned(&cache, &[&x, &value], |b, p| b.pad(p[0], p[1], &config).unwrap());
            prop_assert!(same(&result, &eager), "pad {config:?}");
        }

        if rank == 0 {
            let result = planned(&cache, &[], |b, _| b.iota(dtype, &[], None).unwrap());
            let eager = nxvk_kernels::iota(&common::device(), dtype, &[], None).unwrap();
            prop_assert!(same(&result, &eager));
            return Ok(());
        }
        let axis = (random.next() as usize) % rank;

        // concatenate, put_slice, iota.
        let mut other_shape = shape.clone();
        other_shape[axis] = (random.next() % 3) as usize;
        let y = tensor(&mut random, dtype, &other_shape);
        let result = planned(&cache, &[&x, &y], |b, p| b.concatenate(&[p[0], p[1], p[0]], axis).unwrap());
        prop_assert!(same(&result, &movement::concatenate(&[&x, &y, &x], axis).unwrap()));
        let patch_shape: Vec<usize> = shape.iter().map(|&size| size.min(2)).collect();
        let patch = tensor(&mut random, dtype, &patch_shape);
        let starts: Vec<i64> = (0..rank).map(|_| (random.next() % 5) as i64 - 1).collect();
        let result = planned(&cache, &[&x, &patch], |b, p| b.put_slice(p[0], &starts, p[1]).unwrap());
        prop_assert!(same(&result, &movement::put_slice(&x, &starts, &patch).unwrap()));
        let iota_axis = reverse.then_some(axis);
        let result = planned(&cache, &[], |b, _| b.iota(dtype, &shape, iota_axis).unwrap());
        let eager = nxvk_kernels::iota(&common::device(), dtype, &shape, iota_axis).unwrap();
        prop_assert!(same(&result, &eager));

        // Scans, sort and argsort along `axis`.
        for op in ScanOp::ALL {
            let result = planned(&cache, &[&x], |b, p| b.cumulative(op, p[0], axis, reverse).unwrap());
            let eager = nxvk_kernels::cumulative(op, &x, axis, reverse).unwrap();
            prop_assert!(same(&result, &eager), "{op:?}");
        }
        if shape.iter().all(|&size| size > 0) {
            let result = planned(&cache, &[&x], |b, p| b.sort(p[0], axis, direction, None).unwrap());
            prop_assert!(same(&result, &sort::sort(&x, axis, direction).unwrap()));
            let result = planned(&cache, &[&x], |b, p| {
                b.sort(p[0], axis, direction, Some(DType::S32)).unwrap()
            });
            let eager = sort::argsort(&x, axis, direction, DType::S32).unwrap();
            prop_assert!(same(&result, &eager));
        }

        // Indexing, where the indexed axis is not empty.
        if shape[axis] > 0 {
            let taken = positions(&mut random, &[2, 1], shape[axis]);
            let result = planned(&cache, &[&x, &taken], |b, p| b.take(p[0], p[1], axis).unwrap());
            prop_assert!(same(&result, &index::take(&x, &taken, axis).unwrap()));
            let mut along_shape = shape.clone();
            along_shape[axis] = 3;
            let along = positions(&mut random, &along_shape, shape[axis]);
            let result = planned(&cache, &[&x, &along], |b, p| b.take_along_axis(p[0], p[1], axis).unwrap());
            prop_assert!(same(&result, &index::take_along_axis(&x, &along, axis).unwrap()));
            let rows = positions(&mut random, &[3, 1], shape[axis]);
            let result = planned(&cache, &[&x, &rows], |b, p| b.gather(p[0], p[1], Some(&[axis])).unwrap());
            prop_assert!(same(&result, &index::gather(&x, &rows, Some(&[axis])).unwrap()));
            let mut update_shape = vec![3];
            update_shape.extend((0..rank).filter(|&other| other != axis).map(|other| shape[other]));
            let updates = tensor(&mut random, dtype, &update_shape);
            // Distinct rows for put (which row wins a repeated position is the kernel's
            // choice); add takes the random, possibly repeated ones.
            let distinct: Vec<i32> = (0..3).map(|row| (row % shape[axis]) as i32).collect();
            let distinct = Tensor::from_slice(&common::device(), &[3, 1], &distinct).unwrap();
            for (update, at) in [(IndexedUpdate::Add, &rows), (IndexedUpdate::Put, &distinct)] {
                if update == IndexedUpdate::Put && shape[axis] < 3 {
                    continue;
                }
                let result = planned(&cache, &[&x, at, &updates], |b, p| {
                    b.indexed(update, p[0], p[1], p[2], Some(&[axis])).unwrap()
                });
                let eager = match update {
                    IndexedUpdate::Add => index::indexed_add(&x, at, &updates, Some(&[axis])),
                    IndexedUpdate::Put => index::indexed_put(&x, at, &updates, Some(&[axis])),
                };
                prop_assert!(same(&result, &eager.unwrap()), "{update:?}");
            }
        }

        // Windows over every axis (size 2 where it fits, padded by one at the low end).
        let window: Vec<usize> = shape.iter().map(|&size| size.clamp(1, 2)).collect();
        let options = WindowOptions {
            strides: vec![1; rank],
            padding: vec![(1, 0); rank],
            window_dilations: vec![],
        };
        for op in [WindowOp::Sum, WindowOp::Product, WindowOp::Max, WindowOp::Min] {
            let result = planned(&cache, &[&x], |b, p| b.window(op, p[0], &window, options.clone()).unwrap());
            let eager = nxvk_kernels::window_reduce(op, &x, &window, &options).unwrap();
            prop_assert!(same(&result, &eager), "{op:?}");
        }
        let pooled = nxvk_kernels::window_reduce(WindowOp::Max, &x, &window, &options).unwrap();
        let source = tensor(&mut random, dtype, pooled.shape());
        let init = tensor(&mut random, dtype, &[]);
        for select in [ScatterSelect::Max, ScatterSelect::Min] {
            let result = planned(&cache, &[&x, &source, &init], |b, p| {
                b.window_scatter(select, p[0], p[1], p[2], &window, options.clone()).unwrap()
            });
            let eager =
                nxvk_kernels::window_scatter(select, &x, &source, &init, &window, &options).unwrap();
            prop_assert!(same(&result, &eager), "{select:?}");
        }
    }
}

/// Null arm: the comparison tells a different option apart (cumulative_sum forwards against
/// backwards, on a line whose two directions differ).
#[test]
fn a_different_option_is_told_apart() {
    let cache = PlanCache::new(&common::device());
    let x = Tensor::from_slice(&common::device(), &[4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let result = planned(&cache, &[&x], |b, p| {
        b.cumulative(ScanOp::Sum, p[0], 0, false).unwrap()
    });
    let backwards = nxvk_kernels::cumulative(ScanOp::Sum, &x, 0, true).unwrap();
    assert!(!same(&result, &backwards));
    let forwards = nxvk_kernels::cumulative(ScanOp::Sum, &x, 0, false).unwrap();
    assert!(same(&result, &forwards));
}

/// window_scatter's type is Nx's: the merge of the source's and the init value's, here f64
/// over an f32 input (selected on the input converted to f64).
#[test]
fn window_scatter_takes_the_merged_type_of_source_and_init_value() {
    let cache = PlanCache::new(&common::device());
    let device = common::device();
    let x = Tensor::from_slice(&device, &[4], &[3.0f32, -1.0, 2.0, 5.0]).unwrap();
    let source = Tensor::from_slice(&device, &[2], &[0.25f64, 0.5]).unwrap();
    let init = Tensor::from_slice(&device, &[], &[1.0f64]).unwrap();
    let options = WindowOptions {
        strides: vec![2],
        ..WindowOptions::default()
    };
    let result = planned(&cache, &[&x, &source, &init], |b, p| {
        b.window_scatter(ScatterSelect::Max, p[0], p[1], p[2], &[2], options.clone())
            .unwrap()
    });
    assert_eq!(result.dtype(), DType::F64);
    assert_eq!(result.to_vec::<f64>().unwrap(), [1.25, 1.0, 1.0, 1.5]);
}
