//! Slices and put_slices whose starts are nodes (Nx's tensor starts): through a plan they
//! compute what the eager oracle computes (starts read back, clamped on the host, then the
//! static catalog path) on random graphs, and what host index arithmetic gives on random
//! shapes, strides and starts of every integer type (negative, past the end and the types'
//! extremes, u64 above 2^63 included), empty windows, and starts computed inside the graph.
//! The starts are never read back during a run, and a plan is keyed by shapes and types: new
//! start values neither re-plan nor compile. Null arms show each comparison can fail.

mod common;

use common::slice_graphs::{
    START_DTYPES, integer_value, random_inputs, random_slice_graph, random_start, start_tensor,
};
use common::{SplitMix, device, eager, same, serial};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{GraphBuilder, Op, PlanCache, SliceStart, encode};
use nxvk_kernels::reference::integer_limits;
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak};
use proptest::prelude::*;

/// Row-major coordinates of element `index` of `shape`.
fn coordinates(shape: &[usize], mut index: usize) -> Vec<usize> {
    let mut at = vec![0; shape.len()];
    for axis in (0..shape.len()).rev() {
        at[axis] = index % shape[axis];
        index /= shape[axis];
    }
    at
}

/// Row-major position of `at` in `shape`.
fn position(shape: &[usize], at: &[usize]) -> usize {
    at.iter()
        .zip(shape)
        .fold(0, |position, (&coordinate, &size)| {
            position * size + coordinate
        })
}

/// Nx's clamp of a start into `0..=size - length`.
fn clamp(start: i128, size: usize, length: usize) -> usize {
    start.clamp(0, (size - length) as i128) as usize
}

/// Host slice of `values` (of `shape`) at already clamped `starts`.
fn host_slice(
    values: &[f64],
    shape: &[usize],
    starts: &[usize],
    lengths: &[usize],
    strides: &[usize],
) -> Vec<f64> {
    let result: Vec<usize> = lengths
        .iter()
        .zip(strides)
        .map(|(&length, &stride)| length.div_ceil(stride))
        .collect();
    (0..result.iter().product())
        .map(|index| {
            let at: Vec<usize> = coordinates(&result, index)
                .iter()
                .enumerate()
                .map(|(axis, &coordinate)| starts[axis] + coordinate * strides[axis])
                .collect();
            values[position(shape, &at)]
        })
        .collect()
}

/// Host put_slice of `update` (of `lengths`) into `values` at already clamped `starts`.
fn host_put_slice(
    values: &[f64],
    shape: &[usize],
    starts: &[usize],
    update: &[f64],
    lengths: &[usize],
) -> Vec<f64> {
    let mut result = values.to_vec();
    for (index, &value) in update.iter().enumerate() {
        let at: Vec<usize> = coordinates(lengths, index)
            .iter()
            .zip(starts)
            .map(|(&coordinate, &start)| start + coordinate)
            .collect();
        result[position(shape, &at)] = value;
    }
    result
}

fn f64_values(tensor: &Tensor) -> Vec<f64> {
    nxvk_kernels::as_type(tensor, DType::F64)
        .unwrap()
        .to_vec::<f64>()
        .unwrap()
}

/// A data tensor of `dtype` holding `values` (small integers: exact in every dtype).
fn data(dtype: DType, shape: &[usize], values: &[f64]) -> Tensor {
    let floats = Tensor::from_slice(&device(), shape, values).unwrap();
    nxvk_kernels::as_type(&floats, dtype).unwrap()
}

/// Distinct small values for `shape`.
fn counting(shape: &[usize]) -> Vec<f64> {
    (0..shape.iter().product::<usize>())
        .map(|index| index as f64 - 7.0)
        .collect()
}

/// One axis's start for a test: static, or a rank-0 parameter of a dtype.
#[derive(Debug, Clone, Copy)]
enum TestStart {
    Static(i64),
    Parameter(DType, i128),
}

/// Runs `slice(x, starts, lengths, strides)` and `put_slice(x, starts, update)` as plans, the
/// starts' parameters given their values, and checks both against the host; returns the
/// slice's result.
fn check_against_host(
    cache: &PlanCache,
    dtype: DType,
    shape: &[usize],
    starts: &[TestStart],
    lengths: &[usize],
    strides: &[usize],
) -> Result<Tensor, String> {
    let values = counting(shape);
    let x = data(dtype, shape, &values);
    let update_values: Vec<f64> = (0..lengths.iter().product::<usize>())
        .map(|index| 20.0 + index as f64)
        .collect();
    let update = data(dtype, lengths, &update_values);
    let start_inputs: Vec<Tensor> = starts
        .iter()
        .filter_map(|start| match *start {
            TestStart::Static(_) => None,
            TestStart::Parameter(dtype, value) => Some(start_tensor(dtype, value)),
        })
        .collect();
    let clamped: Vec<usize> = starts
        .iter()
        .enumerate()
        .map(|(axis, start)| {
            let value = match *start {
                TestStart::Static(value) => i128::from(value),
                TestStart::Parameter(_, value) => value,
            };
            clamp(value, shape[axis], lengths[axis])
        })
        .collect();
    let mut builder = GraphBuilder::new();
    let x_node = builder.parameter(dtype, shape).unwrap();
    let update_node = builder.parameter(dtype, lengths).unwrap();
    let nodes: Vec<SliceStart> = starts
        .iter()
        .map(|start| match *start {
            TestStart::Static(value) => SliceStart::Static(value),
            TestStart::Parameter(dtype, _) => {
                SliceStart::Node(builder.parameter(dtype, &[]).unwrap())
            }
        })
        .collect();
    let sliced = builder
        .dynamic_slice(x_node, &nodes, lengths, strides)
        .map_err(|error| error.to_string())?;
    let put = builder
        .dynamic_put_slice(x_node, &nodes, update_node)
        .map_err(|error| error.to_string())?;
    let graph = builder.finish(&[sliced, put]).unwrap();
    let mut inputs = vec![&x, &update];
    inputs.extend(start_inputs.iter());
    let results = cache
        .run(&graph, &inputs)
        .map_err(|error| error.to_string())?;
    let want = host_slice(&values, shape, &clamped, lengths, strides);
    if f64_values(&results[0]) != want {
        return Err(format!(
            "slice of {shape:?} at {starts:?} (clamped {clamped:?}) {lengths:?} {strides:?}: {:?}, want {want:?}",
            f64_values(&results[0])
        ));
    }
    let want = host_put_slice(&values, shape, &clamped, &update_values, lengths);
    if f64_values(&results[1]) != want {
        return Err(format!(
            "put_slice into {shape:?} at {starts:?} (clamped {clamped:?}): {:?}, want {want:?}",
            f64_values(&results[1])
        ));
    }
    Ok(results[0].clone())
}

/// A random start: static (-4 to 7), or a parameter of a random integer type.
fn random_test_start(random: &mut SplitMix) -> TestStart {
    if random.below(3) == 0 {
        TestStart::Static(random.below(12) as i64 - 4)
    } else {
        let dtype = random.pick(&START_DTYPES);
        TestStart::Parameter(dtype, random_start(random, dtype).1)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Random graphs (starts static, parameters of every integer type, or an argmax computed in
    /// the graph; a slice or put_slice; maybe an elementwise user): the plan's output is the
    /// eager oracle's, byte for byte.
    #[test]
    fn random_dynamic_slice_graphs_fused_equal_eager(seed in any::<u64>()) {
        let _serial = serial();
        let cache = PlanCache::new(&device());
        let graph = random_slice_graph(seed);
        let inputs = random_inputs(&graph, &mut SplitMix(seed ^ 0x9e37_79b9));
        let inputs: Vec<&Tensor> = inputs.iter().collect();
        let fused = cache.run(&graph, &inputs).unwrap();
        let expected = eager(&graph, &inputs);
        prop_assert!(same(&fused[0], &expected[0]), "seed {seed}: {:?}", graph.nodes());
    }

    /// Random shapes (empty axes included), lengths, strides and starts against host index
    /// arithmetic, in three data dtypes.
    #[test]
    fn dynamic_slices_match_host_index_arithmetic(seed in any::<u64>()) {
        let _serial = serial();
        let cache = PlanCache::new(&device());
        let mut random = SplitMix(seed);
        let dtype = random.pick(&[DType::F32, DType::F64, DType::S32]);
        let rank = 1 + random.below(3);
        let shape: Vec<usize> = (0..rank).map(|_| random.below(6)).collect();
        let lengths: Vec<usize> = shape.iter().map(|&size| random.below(size + 1)).collect();
        let strides: Vec<usize> = (0..rank).map(|_| 1 + random.below(3)).collect();
        let mut starts: Vec<TestStart> = (0..rank).map(|_| random_test_start(&mut random)).collect();
        // At least one node start, so the dynamic nodes (not their static forms) are built.
        if starts.iter().all(|start| matches!(start, TestStart::Static(_))) {
            starts[0] = TestStart::Parameter(DType::S32, -2);
        }
        check_against_host(&cache, dtype, &shape, &starts, &lengths, &strides)
            .map_err(TestCaseError::fail)?;
    }
}

/// Every integer start type at its extremes and around the valid range, on both axes.
#[test]
fn rank_zero_starts_of_every_integer_type_clamp_as_nx_does() {
    let _serial = serial();
    let cache = PlanCache::new(&device());
    for dtype in START_DTYPES {
        let (min, max) = integer_limits(dtype);
        for value in [min, -1, 0, 1, 2, 3, 4, 200, max] {
            let value = value.clamp(min, max);
            let starts = [TestStart::Parameter(dtype, value), TestStart::Static(1)];
            check_against_host(&cache, DType::F32, &[5, 4], &starts, &[2, 3], &[1, 2]).unwrap();
            let starts = [TestStart::Static(-9), TestStart::Parameter(dtype, value)];
            check_against_host(&cache, DType::S32, &[5, 4], &starts, &[3, 2], &[2, 1]).unwrap();
        }
    }
}

/// Empty windows (a zero length, an empty axis) and empty updates.
#[test]
fn empty_slices_and_updates() {
    let _serial = serial();
    let cache = PlanCache::new(&device());
    let cases: [(&[usize], &[usize]); 3] =
        [(&[4, 3], &[0, 2]), (&[0, 3], &[0, 3]), (&[2, 5], &[2, 0])];
    for (shape, lengths) in cases {
        let starts = [
            TestStart::Parameter(DType::U8, 7),
            TestStart::Parameter(DType::S64, -3),
        ];
        let sliced =
            check_against_host(&cache, DType::F32, shape, &starts, lengths, &[1, 2]).unwrap();
        assert_eq!(sliced.n_elements(), 0);
    }
}

/// The start of a row window is the argmax of a vector minus one, computed in the graph (an s64
/// node, -1 when the maximum comes first): the window follows the data, clamped.
#[test]
fn starts_computed_inside_the_graph() {
    let _serial = serial();
    let cache = PlanCache::new(&device());
    let mut builder = GraphBuilder::new();
    let matrix = builder.parameter(DType::F32, &[4, 3]).unwrap();
    let vector = builder.parameter(DType::F32, &[5]).unwrap();
    let position = builder
        .reduce(ReduceOp::ArgMax, vector, None, false, TieBreak::Low)
        .unwrap();
    let one = builder.constant(DType::S64, 1.0).unwrap();
    let start = builder.binary(BinaryOp::Subtract, position, one).unwrap();
    let starts = [SliceStart::Node(start), SliceStart::Static(1)];
    let window = builder
        .dynamic_slice(matrix, &starts, &[2, 2], &[1, 1])
        .unwrap();
    let graph = builder.finish(&[window]).unwrap();
    let values = counting(&[4, 3]);
    let m = Tensor::from_slice(
        &device(),
        &[4, 3],
        &values.iter().map(|&v| v as f32).collect::<Vec<_>>(),
    )
    .unwrap();
    // Maximum at 0 (start -1 -> 0), 2 (start 1), 4 (start 3 -> 2).
    for (maximum_at, clamped) in [(0usize, 0usize), (2, 1), (4, 2)] {
        let mut v = vec![0.0f32; 5];
        v[maximum_at] = 9.0;
        let v = Tensor::from_slice(&device(), &[5], &v).unwrap();
        let result = cache.run(&graph, &[&m, &v]).unwrap();
        let want = host_slice(&values, &[4, 3], &[clamped, 1], &[2, 2], &[1, 1]);
        assert_eq!(f64_values(&result[0]), want, "maximum at {maximum_at}");
        // Null arm: the window at the unshifted argmax is another one where it clamps apart.
        let unshifted = clamp(maximum_at as i128, 4, 2);
        let other = host_slice(&values, &[4, 3], &[unshifted, 1], &[2, 2], &[1, 1]);
        assert_eq!(f64_values(&result[0]) != other, unshifted != clamped);
    }
}

/// The plan is keyed by shapes and types: a run with other start values finds the plan, plans
/// and compiles nothing, reads nothing back while it runs, and computes the new window.
#[test]
fn new_start_values_hit_the_plan_cache_and_stay_on_the_device() {
    let _serial = serial();
    let cache = PlanCache::new(&device());
    let build = |lengths: &[usize]| {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[6, 5]).unwrap();
        let row = builder.parameter(DType::S32, &[]).unwrap();
        let column = builder.parameter(DType::U16, &[]).unwrap();
        let starts = [SliceStart::Node(row), SliceStart::Node(column)];
        let window = builder.dynamic_slice(x, &starts, lengths, &[1, 1]).unwrap();
        let doubled = builder.binary(BinaryOp::Add, window, window).unwrap();
        builder.finish(&[doubled]).unwrap()
    };
    let graph = build(&[2, 3]);
    let bytes = encode(&graph);
    let values = counting(&[6, 5]);
    let x = Tensor::from_slice(
        &device(),
        &[6, 5],
        &values.iter().map(|&v| v as f32).collect::<Vec<_>>(),
    )
    .unwrap();
    let run = |row: i128, column: i128| {
        let (row, column) = (
            start_tensor(DType::S32, row),
            start_tensor(DType::U16, column),
        );
        cache
            .run_encoded(&bytes, &[&x, &row, &column])
            .unwrap()
            .remove(0)
    };
    let window = |row: usize, column: usize| -> Vec<f64> {
        host_slice(&values, &[6, 5], &[row, column], &[2, 3], &[1, 1])
            .iter()
            .map(|value| 2.0 * value)
            .collect()
    };
    assert_eq!(f64_values(&run(1, 0)), window(1, 0));
    let first = cache.counters();
    assert_eq!((first.traces, first.cache_hits), (1, 0));
    let device_before = device().counters();
    let second = run(-4, 9);
    let device_after = device().counters();
    let after = cache.counters();
    assert_eq!(after.traces, 1, "a new start value re-planned");
    assert_eq!(after.codegens, first.codegens);
    assert_eq!(after.cache_hits, 1);
    assert_eq!(device_after.pipeline_builds, device_before.pipeline_builds);
    assert_eq!(device_after.shader_compiles, device_before.shader_compiles);
    // Only the inputs' uploads happened: nothing was read back before the result.
    assert_eq!(
        device_after.bytes_downloaded,
        device_before.bytes_downloaded
    );
    assert_eq!(f64_values(&second), window(0, 2));
    // Null arms: the old window is not the new one, and other lengths are another plan.
    assert_ne!(f64_values(&second), window(1, 0));
    let other = encode(&build(&[3, 3]));
    let (row, column) = (start_tensor(DType::S32, 0), start_tensor(DType::U16, 0));
    cache.run_encoded(&other, &[&x, &row, &column]).unwrap();
    assert_eq!(cache.counters().traces, 2);
}

/// Bad starts are errors naming the op, shapes and dtypes; all-static starts build the static
/// nodes at clamped starts; node starts keep the static ones clamped.
/// An axis longer than `i64::MAX` (declared only by a damaged encoding; the decoder's
/// proptest found it) clamps static starts into its span instead of panicking on a negative
/// bound.
#[test]
fn a_start_on_an_axis_past_i64_max_clamps_without_panicking() {
    let mut builder = GraphBuilder::new();
    // Empty, so its size does not overflow.
    let huge = builder.parameter(DType::U8, &[0, usize::MAX - 1]).unwrap();
    for start in [i64::MIN, -5, 0, i64::MAX] {
        let starts = [SliceStart::Static(0), SliceStart::Static(start)];
        let slice = builder.dynamic_slice(huge, &starts, &[0, 1], &[1, 1]);
        assert!(slice.is_ok(), "start {start}: {slice:?}");
    }
}

#[test]
fn the_builder_checks_starts_and_normalises_static_ones() {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[4, 3]).unwrap();
    let patch = builder.parameter(DType::F32, &[2, 2]).unwrap();
    let float_start = builder.parameter(DType::F32, &[]).unwrap();
    let vector_start = builder.parameter(DType::S32, &[1]).unwrap();
    let narrow_start = builder.parameter(DType::S4, &[]).unwrap();
    let start = builder.parameter(DType::U64, &[]).unwrap();
    let node = SliceStart::Node;
    for (bad, what) in [
        (float_start, "float"),
        (vector_start, "rank 1"),
        (narrow_start, "sub-byte"),
    ] {
        let error = builder
            .dynamic_slice(x, &[node(bad), SliceStart::Static(0)], &[2, 2], &[1, 1])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("slice") && error.contains("axis 0"),
            "{what}: {error}"
        );
        assert!(error.contains("[4, 3]"), "{what}: {error}");
        let error = builder
            .dynamic_put_slice(x, &[SliceStart::Static(0), node(bad)], patch)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("put_slice") && error.contains("axis 1"),
            "{what}: {error}"
        );
    }
    let shape_errors = [
        builder.dynamic_slice(x, &[node(start)], &[2, 2], &[1, 1]),
        builder.dynamic_slice(x, &[node(start), node(start)], &[5, 2], &[1, 1]),
        builder.dynamic_slice(x, &[node(start), node(start)], &[2, 2], &[0, 1]),
        builder.dynamic_put_slice(x, &[node(start)], patch),
        builder.dynamic_put_slice(patch, &[node(start), node(start)], x),
    ];
    for result in shape_errors {
        assert!(result.is_err());
    }
    let doubles = builder.parameter(DType::F64, &[2, 2]).unwrap();
    assert!(
        builder
            .dynamic_put_slice(x, &[node(start), node(start)], doubles)
            .is_err(),
        "dtype mismatch"
    );

    let all_static = [SliceStart::Static(9), SliceStart::Static(-2)];
    let sliced = builder
        .dynamic_slice(x, &all_static, &[2, 2], &[1, 1])
        .unwrap();
    let put = builder.dynamic_put_slice(x, &all_static, patch).unwrap();
    let mixed = [node(start), SliceStart::Static(7)];
    let dynamic = builder.dynamic_slice(x, &mixed, &[2, 2], &[1, 2]).unwrap();
    let graph = builder.finish(&[sliced, put, dynamic]).unwrap();
    assert!(matches!(&graph.node(sliced).op, Op::Slice { starts, .. } if starts == &[2, 0]));
    assert!(matches!(&graph.node(put).op, Op::PutSlice { starts, .. } if starts == &[2, 0]));
    assert!(matches!(
        &graph.node(dynamic).op,
        Op::DynamicSlice { starts, .. } if starts == &[node(start), SliceStart::Static(1)]
    ));
    assert_eq!(graph.node(dynamic).ty.tensor().unwrap().shape, [2, 1]);
    assert_eq!(graph.node(dynamic).op.operands(), [x, start]);
}

/// Null arm of the host comparison: a result checked against other starts is rejected.
#[test]
fn the_host_comparison_rejects_another_window() {
    let _serial = serial();
    let cache = PlanCache::new(&device());
    let starts = [TestStart::Parameter(DType::S8, 1), TestStart::Static(0)];
    let result =
        check_against_host(&cache, DType::F32, &[4, 3], &starts, &[2, 3], &[1, 1]).unwrap();
    let other = host_slice(&counting(&[4, 3]), &[4, 3], &[2, 0], &[2, 3], &[1, 1]);
    assert_ne!(f64_values(&result), other);
    // The oracle's read-back of a start keeps a u64 above 2^63 exact.
    assert_eq!(
        integer_value(&start_tensor(DType::U64, (1 << 63) + 5)),
        (1 << 63) + 5
    );
}
