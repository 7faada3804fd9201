//! Row programs (`row_program.rs`): softmax, log_softmax, layer norm, multi-output and random
//! chains of row reductions against the eager op-by-op oracle; dispatch counts with the row
//! inside and outside the registers' cap and with the knob off; the plan cache.

mod common;

use common::{SplitMix, agree, device, eager, random_input, serial, values_of};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{Graph, GraphBuilder, NodeId, PlanCache, PlanOptions};
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak, UnaryOp};
use proptest::prelude::*;

fn dispatches() -> u64 {
    device().counters().dispatches
}

fn without_row_programs() -> PlanOptions {
    PlanOptions {
        row_programs: false,
        ..PlanOptions::default()
    }
}

/// `op` over the last axis of `x` (a rank-2 value), kept as a column.
fn row_fold(builder: &mut GraphBuilder, op: ReduceOp, x: NodeId) -> NodeId {
    builder
        .reduce(op, x, Some(&[1]), true, TieBreak::Low)
        .unwrap()
}

/// Softmax over the last axis of `dtype[rows, columns]` (`normalised`), log_softmax
/// (`logarithm`: x - max - log(sum(exp(x - max)))), or both as two outputs sharing the row
/// maximum and sum.
fn softmax_outputs(
    dtype: DType,
    rows: usize,
    columns: usize,
    normalised: bool,
    logarithm: bool,
) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(dtype, &[rows, columns]).unwrap();
    let max = row_fold(&mut builder, ReduceOp::ReduceMax, x);
    let shifted = builder.binary(BinaryOp::Subtract, x, max).unwrap();
    let exp = builder.unary(UnaryOp::Exp, shifted).unwrap();
    let sum = row_fold(&mut builder, ReduceOp::Sum, exp);
    let mut outputs = Vec::new();
    if normalised {
        outputs.push(builder.binary(BinaryOp::Divide, exp, sum).unwrap());
    }
    if logarithm {
        let log_sum = builder.unary(UnaryOp::Log, sum).unwrap();
        outputs.push(
            builder
                .binary(BinaryOp::Subtract, shifted, log_sum)
                .unwrap(),
        );
    }
    builder.finish(&outputs).unwrap()
}

fn softmax(dtype: DType, rows: usize, columns: usize) -> Graph {
    softmax_outputs(dtype, rows, columns, true, false)
}

/// Layer norm over the last axis with per-column gamma and beta, as Nx writes it: mean, then
/// the variance of the centred row, then `(x - mean) * rsqrt(var + eps) * gamma + beta`.
fn layer_norm(dtype: DType, rows: usize, columns: usize) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(dtype, &[rows, columns]).unwrap();
    let gamma = builder.parameter(dtype, &[columns]).unwrap();
    let beta = builder.parameter(dtype, &[columns]).unwrap();
    let length = builder.constant(dtype, columns as f64).unwrap();
    let sum = row_fold(&mut builder, ReduceOp::Sum, x);
    let mean = builder.binary(BinaryOp::Divide, sum, length).unwrap();
    let centred = builder.binary(BinaryOp::Subtract, x, mean).unwrap();
    let square = builder
        .binary(BinaryOp::Multiply, centred, centred)
        .unwrap();
    let square_sum = row_fold(&mut builder, ReduceOp::Sum, square);
    let variance = builder
        .binary(BinaryOp::Divide, square_sum, length)
        .unwrap();
    let epsilon = builder.constant(dtype, 1e-5).unwrap();
    let shifted = builder.binary(BinaryOp::Add, variance, epsilon).unwrap();
    let scale = builder.unary(UnaryOp::Rsqrt, shifted).unwrap();
    let normal = builder.binary(BinaryOp::Multiply, centred, scale).unwrap();
    let scaled = builder.binary(BinaryOp::Multiply, normal, gamma).unwrap();
    let out = builder.binary(BinaryOp::Add, scaled, beta).unwrap();
    builder.finish(&[out]).unwrap()
}

/// The relative error allowed for results whose sums fold in another order than eager's.
fn sum_tolerance(dtype: DType) -> f32 {
    match dtype {
        DType::F64 => 1e-9,
        DType::F16 => 4e-3,
        DType::BF16 => 3e-2,
        _ => 1e-5,
    }
}

/// Inputs for `graph`'s parameters, random with NaN and infinities among them.
fn inputs_for(graph: &Graph, seed: u64) -> Vec<Tensor> {
    let mut random = SplitMix(seed);
    graph
        .parameters()
        .iter()
        .map(|parameter| random_input(&mut random, parameter.dtype, &parameter.shape))
        .collect()
}

/// Runs `graph` under `options` (once to plan and compile, once counted): the results, the
/// dispatches and packet dispatches of the counted run.
fn run_counted(
    graph: &Graph,
    inputs: &[&Tensor],
    options: PlanOptions,
) -> (Vec<Tensor>, u64, u64, PlanCache) {
    let cache = PlanCache::with_options(&device(), options);
    cache.run(graph, inputs).unwrap();
    let packets_before = cache.counters().packet_dispatches;
    let before = dispatches();
    let results = cache.run(graph, inputs).unwrap();
    let used = dispatches() - before;
    let packets = cache.counters().packet_dispatches - packets_before;
    (results, used, packets, cache)
}

/// Checks every result of `graph` on `inputs` against the eager oracle within `tolerance`.
fn assert_agrees(graph: &Graph, inputs: &[&Tensor], results: &[Tensor], tolerance: f32) {
    let expected = eager(graph, inputs);
    assert_eq!(results.len(), expected.len());
    for (result, expected) in results.iter().zip(&expected) {
        assert_eq!(result.dtype(), expected.dtype());
        assert_eq!(result.shape(), expected.shape());
        let (a, b) = (values_of(result), values_of(expected));
        let first_difference = a
            .iter()
            .zip(&b)
            .position(|(x, y)| !agree(&[*x], &[*y], tolerance));
        assert!(
            agree(&a, &b, tolerance),
            "{:?}: first difference at {first_difference:?}",
            result.shape()
        );
    }
}

/// Softmax of rows that fit is one dispatch (packet path when rows hold whole packets) and
/// agrees with eager over row lengths around the packet, subgroup and workgroup sizes, one
/// row and many, and the largest row the registers hold.
#[test]
fn softmax_is_one_dispatch_that_agrees_with_eager() {
    let _serial = serial();
    let shapes = [
        (1, 1),
        (3, 5),
        (7, 37),
        (5, 64),
        (33, 8),
        (2, 1000),
        (3, 4096),
        (1, 4097),
        (2, 8192),
    ];
    for (rows, columns) in shapes {
        let graph = softmax(DType::F32, rows, columns);
        let plan = PlanCache::new(&device()).plan(&graph).unwrap();
        assert_eq!(
            (plan.stages().len(), plan.row_programs()),
            (1, 1),
            "[{rows}, {columns}]"
        );
        let inputs = inputs_for(&graph, (rows * columns) as u64);
        let inputs: Vec<&Tensor> = inputs.iter().collect();
        let (results, used, packets, _) = run_counted(&graph, &inputs, PlanOptions::default());
        assert_eq!(used, 1, "[{rows}, {columns}]");
        assert_eq!(packets, u64::from(columns % 4 == 0), "[{rows}, {columns}]");
        assert_agrees(&graph, &inputs, &results, sum_tolerance(DType::F32));
    }
}

/// Null arm of the dispatch counts: the knob off keeps today's three dispatches, and so does
/// a row longer than the registers hold; both agree with eager too.
#[test]
fn the_knob_off_and_rows_past_the_cap_keep_the_multi_dispatch_plan() {
    let _serial = serial();
    for (rows, columns) in [(3, 64), (2, 8200)] {
        let graph = softmax(DType::F32, rows, columns);
        let inputs = inputs_for(&graph, columns as u64);
        let inputs: Vec<&Tensor> = inputs.iter().collect();
        let (off, used_off, _, _) = run_counted(&graph, &inputs, without_row_programs());
        let (on, used_on, _, cache) = run_counted(&graph, &inputs, PlanOptions::default());
        assert!(used_off >= 3, "[{rows}, {columns}] took {used_off}");
        let fits = columns <= 8192;
        assert_eq!(used_on, if fits { 1 } else { used_off });
        assert_eq!(
            cache.plan(&graph).unwrap().row_programs(),
            usize::from(fits)
        );
        assert_agrees(&graph, &inputs, &off, sum_tolerance(DType::F32));
        assert_agrees(&graph, &inputs, &on, sum_tolerance(DType::F32));
    }
}

/// A row program whose only reduction is a maximum is bit-exact with eager: x - max(x),
/// max(x) / x, and the divisions by the row's shared maximum x / max(x) and
/// (x - max(x)) / (max(x) + 1), every float dtype, NaN and infinities included, with the
/// shared-divisor division on and off.
#[test]
fn a_max_row_program_is_bit_exact() {
    let _serial = serial();
    for shared_divisors in [false, true] {
        let options = PlanOptions {
            shared_divisors,
            ..PlanOptions::default()
        };
        max_row_program_is_bit_exact(options);
    }
}

fn max_row_program_is_bit_exact(options: PlanOptions) {
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        for (rows, columns) in [(5, 7), (4, 64), (3, 1001)] {
            let mut builder = GraphBuilder::new();
            let x = builder.parameter(dtype, &[rows, columns]).unwrap();
            let max = row_fold(&mut builder, ReduceOp::ReduceMax, x);
            let shifted = builder.binary(BinaryOp::Subtract, x, max).unwrap();
            let ratio = builder.binary(BinaryOp::Divide, max, x).unwrap();
            // Divisions by the row's maximum take the shared-divisor path (one reciprocal
            // per row) where the option is on, which must round exactly as the eager
            // division does.
            let scaled = builder.binary(BinaryOp::Divide, x, max).unwrap();
            let one = builder.constant(dtype, 1.0).unwrap();
            let offset = builder.binary(BinaryOp::Add, max, one).unwrap();
            let shifted_scaled = builder.binary(BinaryOp::Divide, shifted, offset).unwrap();
            let graph = builder
                .finish(&[shifted, ratio, scaled, shifted_scaled])
                .unwrap();
            let inputs = inputs_for(&graph, columns as u64);
            let inputs: Vec<&Tensor> = inputs.iter().collect();
            let (results, used, _, _) = run_counted(&graph, &inputs, options);
            assert_eq!(used, 1);
            let expected = eager(&graph, &inputs);
            for (result, expected) in results.iter().zip(&expected) {
                assert_eq!(
                    result.to_bytes().unwrap(),
                    expected.to_bytes().unwrap(),
                    "{dtype} [{rows}, {columns}] {options:?}"
                );
            }
        }
    }
}

/// Softmax, log_softmax and layer norm in every float dtype: one dispatch each, equal to
/// eager to the sum tolerance of the dtype.
#[test]
fn softmax_log_softmax_and_layer_norm_in_every_float_dtype() {
    let _serial = serial();
    for dtype in [DType::F32, DType::F64, DType::F16, DType::BF16] {
        for (rows, columns) in [(3, 17), (2, 2050)] {
            let graphs = [
                softmax(dtype, rows, columns),
                softmax_outputs(dtype, rows, columns, false, true),
                layer_norm(dtype, rows, columns),
            ];
            for graph in graphs {
                let inputs = inputs_for(&graph, (rows + columns) as u64);
                let inputs: Vec<&Tensor> = inputs.iter().collect();
                let (results, used, _, _) = run_counted(&graph, &inputs, PlanOptions::default());
                assert_eq!(used, 1, "{dtype} [{rows}, {columns}]");
                assert_agrees(&graph, &inputs, &results, sum_tolerance(dtype));
            }
        }
    }
}

/// f32 layer norm over rows of 8192: three leaves of 384 bytes per invocation in a team of
/// 256, so the team doubles into a workgroup of 512 (`WIDE_TEAM_LEAF_BYTES`). One dispatch,
/// equal to eager.
#[test]
fn a_widened_team_agrees_with_eager() {
    let _serial = serial();
    let graph = layer_norm(DType::F32, 3, 8192);
    let inputs = inputs_for(&graph, 8192);
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    let (results, used, _, _) = run_counted(&graph, &inputs, PlanOptions::default());
    assert_eq!(used, 1);
    assert_agrees(&graph, &inputs, &results, sum_tolerance(DType::F32));
}

/// Softmax and log_softmax as two outputs share one stage; without subgroup shuffles (the
/// shared-memory tree) the program agrees too.
#[test]
fn two_outputs_share_one_program_on_either_fold() {
    let _serial = serial();
    let graph = softmax_outputs(DType::F32, 9, 300, true, true);
    let inputs = inputs_for(&graph, 9);
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    let shared_memory = PlanOptions {
        subgroup_row_folds: false,
        ..PlanOptions::default()
    };
    for options in [PlanOptions::default(), shared_memory] {
        let (results, used, packets, _) = run_counted(&graph, &inputs, options);
        assert_eq!((used, packets), (1, 1));
        assert_agrees(&graph, &inputs, &results, sum_tolerance(DType::F32));
    }
}

/// Empty tensors (no rows, or rows of no elements) run without a row program and return
/// empty results.
#[test]
fn empty_rows_and_no_rows_give_empty_results() {
    let _serial = serial();
    for (rows, columns) in [(0, 5), (3, 0)] {
        // No maximum over an empty axis: exp(x) / sum(exp(x)).
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[rows, columns]).unwrap();
        let exp = builder.unary(UnaryOp::Exp, x).unwrap();
        let sum = row_fold(&mut builder, ReduceOp::Sum, exp);
        let out = builder.binary(BinaryOp::Divide, exp, sum).unwrap();
        let graph = builder.finish(&[out]).unwrap();
        let inputs = inputs_for(&graph, 1);
        let inputs: Vec<&Tensor> = inputs.iter().collect();
        let cache = PlanCache::new(&device());
        assert_eq!(cache.plan(&graph).unwrap().row_programs(), 0);
        let results = cache.run(&graph, &inputs).unwrap();
        assert_eq!(results[0].shape(), [rows, columns]);
        assert_agrees(&graph, &inputs, &results, 0.0);
    }
}

/// A second run with new data plans and compiles nothing.
#[test]
fn a_cached_row_program_is_reused() {
    let _serial = serial();
    let graph = layer_norm(DType::F32, 6, 100);
    let cache = PlanCache::new(&device());
    let first = inputs_for(&graph, 1);
    cache
        .run(&graph, &first.iter().collect::<Vec<_>>())
        .unwrap();
    let device_before = device().counters();
    let second = inputs_for(&graph, 2);
    let second: Vec<&Tensor> = second.iter().collect();
    let results = cache.run(&graph, &second).unwrap();
    let counters = cache.counters();
    assert_eq!((counters.traces, counters.cache_hits), (1, 1));
    assert_eq!(
        device().counters().pipeline_builds,
        device_before.pipeline_builds
    );
    assert_agrees(&graph, &second, &results, sum_tolerance(DType::F32));
}

/// Null arm of the comparison: softmax against a graph that normalises by the row maximum
/// instead of the sum does not agree.
#[test]
fn the_comparison_rejects_a_wrong_row_program() {
    let _serial = serial();
    let graph = softmax(DType::F32, 4, 40);
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[4, 40]).unwrap();
    let max = row_fold(&mut builder, ReduceOp::ReduceMax, x);
    let shifted = builder.binary(BinaryOp::Subtract, x, max).unwrap();
    let exp = builder.unary(UnaryOp::Exp, shifted).unwrap();
    let wrong_fold = row_fold(&mut builder, ReduceOp::ReduceMax, exp);
    let out = builder.binary(BinaryOp::Divide, exp, wrong_fold).unwrap();
    let wrong = builder.finish(&[out]).unwrap();
    let x = Tensor::from_slice(
        &device(),
        &[4, 40],
        &(0..160).map(|i| (i % 13) as f32 / 4.0).collect::<Vec<_>>(),
    )
    .unwrap();
    let results = PlanCache::new(&device()).run(&wrong, &[&x]).unwrap();
    let expected = eager(&graph, &[&x]);
    assert!(!agree(
        &values_of(&results[0]),
        &values_of(&expected[0]),
        sum_tolerance(DType::F32)
    ));
}

/// A random row program over f32[rows, length] with a per-column leaf: one to three
/// reductions, each over an elementwise prologue of the previous row value; sums fold
/// non-negative terms and are followed by a division (softmax-like), so the reassociated sum's
/// error stays relative; maxima and minima combine with the per-column leaf freely.
fn random_row_program(seed: u64, dtype: DType, rows: usize, length: usize) -> Graph {
    let mut random = SplitMix(seed);
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(dtype, &[rows, length]).unwrap();
    let per_column = builder.parameter(dtype, &[length]).unwrap();
    let mut value = x;
    for _ in 0..1 + random.below(3) {
        if random.below(2) == 0 {
            let unary = random.pick(&[UnaryOp::Exp, UnaryOp::Sigmoid, UnaryOp::Abs]);
            let terms = builder.unary(unary, value).unwrap();
            let sum = row_fold(&mut builder, ReduceOp::Sum, terms);
            value = builder.binary(BinaryOp::Divide, terms, sum).unwrap();
        } else {
            let unary = random.pick(&[UnaryOp::Tanh, UnaryOp::Negate, UnaryOp::Floor]);
            let shaped = builder.unary(unary, value).unwrap();
            let binary = random.pick(&[BinaryOp::Add, BinaryOp::Multiply, BinaryOp::Max]);
            let combined = builder.binary(binary, shaped, per_column).unwrap();
            let op = random.pick(&[ReduceOp::ReduceMax, ReduceOp::ReduceMin]);
            let folded = row_fold(&mut builder, op, combined);
            value = builder
                .binary(BinaryOp::Subtract, combined, folded)
                .unwrap();
        }
    }
    let mut outputs = vec![value];
    if random.below(2) == 0 {
        outputs.push(builder.unary(UnaryOp::Exp, value).unwrap());
    }
    builder.finish(&outputs).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    /// Random row programs over row lengths 1..5000 and odd row counts, every float dtype:
    /// one dispatch, equal to eager to the dtype's sum tolerance.
    #[test]
    fn random_row_programs_equal_eager(
        seed in any::<u64>(),
        length in 1usize..5000,
        rows in 1usize..8,
        dtype in prop::sample::select(vec![DType::F32, DType::F64, DType::F16, DType::BF16]),
    ) {
        let _serial = serial();
        let graph = random_row_program(seed, dtype, rows, length);
        let inputs = inputs_for(&graph, seed);
        let inputs: Vec<&Tensor> = inputs.iter().collect();
        let (results, used, _, _) = run_counted(&graph, &inputs, PlanOptions::default());
        prop_assert_eq!(used, 1);
        assert_agrees(&graph, &inputs, &results, sum_tolerance(dtype));
    }
}

/// A plan compiled for the packet path runs leaves that miss the packet conditions (a
/// transposed view) through its generic variant, compiled on that first such run only; both
/// paths agree with eager and with each other bit for bit.
#[test]
fn a_view_input_takes_the_generic_variant_compiled_once() {
    let _serial = serial();
    let (rows, columns) = (6, 64);
    let graph = softmax(DType::F32, rows, columns);
    let stored = inputs_for(&softmax(DType::F32, columns, rows), 11).remove(0);
    let transposed = stored.transpose(&[1, 0]).unwrap();
    let dense = nxvk_kernels::movement::contiguous(&transposed).unwrap();
    let cache = PlanCache::new(&device());
    let builds = || device().counters().pipeline_builds;
    let packets = |cache: &PlanCache| cache.counters().packet_dispatches;

    let before = builds();
    let on_packets = cache.run(&graph, &[&dense]).unwrap();
    assert_eq!(packets(&cache), 1, "a dense input takes the packet path");
    let planned = builds() - before;
    assert!(
        planned <= 1,
        "planning builds the packet variant only ({planned})"
    );

    let before = builds();
    let on_view = cache.run(&graph, &[&transposed]).unwrap();
    assert_eq!(
        packets(&cache),
        1,
        "a transposed view misses the packet path"
    );
    assert!(builds() - before <= 1, "the generic variant is built once");
    let before = builds();
    let again = cache.run(&graph, &[&transposed]).unwrap();
    assert_eq!(builds() - before, 0, "and not again");

    assert_agrees(&graph, &[&dense], &on_packets, sum_tolerance(DType::F32));
    for results in [&on_view, &again] {
        assert_eq!(
            results[0].to_bytes().unwrap(),
            on_packets[0].to_bytes().unwrap()
        );
    }
}
