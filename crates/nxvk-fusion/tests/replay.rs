//! Plan replay: from the third run on, a plan's recorded command buffer is submitted again
//! with new inputs and outputs. Replayed results against the same plans run stage by stage
//! (bit for bit: the same kernels), the counters that prove nothing was recorded again, the
//! layouts that fall back, and the plans replay refuses.

mod common;

use common::{SplitMix, bit_equal, device, random_graph, random_input, serial, softmax_of};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{CAPTURE_ATTEMPTS, Graph, GraphBuilder, PlanCache, PlanOptions, ReplayStatus};
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak, UnaryOp};
use proptest::prelude::*;

fn replaying() -> PlanCache {
    PlanCache::with_options(&device(), PlanOptions::default()).with_replay(true)
}

fn stage_by_stage() -> PlanCache {
    PlanCache::with_options(&device(), PlanOptions::default()).with_replay(false)
}

/// softmax(x) over the last axis and sigmoid(x * a), two outputs of one plan.
fn softmax_and_chain(rows: usize, columns: usize) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[rows, columns]).unwrap();
    let a = builder.parameter(DType::F32, &[]).unwrap();
    let softmax = softmax_of(&mut builder, x);
    let scaled = builder.binary(BinaryOp::Multiply, x, a).unwrap();
    let chain = builder.unary(UnaryOp::Sigmoid, scaled).unwrap();
    builder.finish(&[softmax, chain]).unwrap()
}

fn inputs(seed: u64, rows: usize, columns: usize) -> Vec<Tensor> {
    let mut random = SplitMix(seed);
    vec![
        random_input(&mut random, DType::F32, &[rows, columns]),
        Tensor::from_slice(&device(), &[], &[0.25f32 + seed as f32]).unwrap(),
    ]
}

fn run(cache: &PlanCache, graph: &Graph, inputs: &[Tensor]) -> Vec<Tensor> {
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    cache.run(graph, &inputs).unwrap()
}

fn all_bit_equal(a: &[Tensor], b: &[Tensor]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| bit_equal(a, b))
}

#[test]
fn plans_replay_from_their_third_run_and_match_stage_by_stage() {
    let _serial = serial();
    let graph = softmax_and_chain(6, 37);
    let cache = replaying();
    let reference = stage_by_stage();
    let mut results = Vec::new();
    for seed in 0..6 {
        let inputs = inputs(seed, 6, 37);
        let replayed = run(&cache, &graph, &inputs);
        let expected = run(&reference, &graph, &inputs);
        assert!(all_bit_equal(&replayed, &expected), "run {seed}");
        results.push(replayed);
    }
    assert_eq!(cache.replay_status(&graph).unwrap(), ReplayStatus::Ready);
    assert_eq!(cache.counters().replays, 4);
    // Null arm: every run's inputs give other results, so a replay that kept an earlier run's
    // inputs or outputs would have failed the comparison.
    for (index, result) in results.iter().enumerate() {
        for earlier in &results[..index] {
            assert!(!bit_equal(&result[0], &earlier[0]) && !bit_equal(&result[1], &earlier[1]));
        }
    }
}

#[test]
fn a_replay_records_nothing() {
    let _serial = serial();
    let graph = softmax_and_chain(5, 64);
    let cache = replaying();
    for seed in 0..2 {
        run(&cache, &graph, &inputs(seed, 5, 64));
    }
    let before = device().counters();
    let replayed = run(&cache, &graph, &inputs(9, 5, 64));
    let after = device().counters();
    assert_eq!(after.replays - before.replays, 1);
    let dispatched = after.dispatches - before.dispatches;
    assert!(dispatched >= 1);
    assert_eq!(
        after.replayed_dispatches - before.replayed_dispatches,
        dispatched
    );
    let expected = run(&stage_by_stage(), &graph, &inputs(9, 5, 64));
    assert!(all_bit_equal(&replayed, &expected));
    // Null arm: a run stage by stage records its dispatches.
    let before = device().counters();
    run(&stage_by_stage(), &graph, &inputs(9, 5, 64));
    let after = device().counters();
    assert_eq!(after.replayed_dispatches, before.replayed_dispatches);
    assert!(after.dispatches > before.dispatches);
}

#[test]
fn outputs_dropped_between_runs_are_not_handed_out_again() {
    let _serial = serial();
    let graph = softmax_and_chain(3, 8);
    let cache = replaying();
    let mut kept = Vec::new();
    for seed in 0..5 {
        // The first two runs' outputs are dropped at once: without pinning, the second run
        // would reuse the first run's buffers and the comparison could not tell them apart.
        let outputs = run(&cache, &graph, &inputs(seed, 3, 8));
        if seed >= 2 {
            kept.push((seed, outputs));
        }
    }
    assert_eq!(cache.replay_status(&graph).unwrap(), ReplayStatus::Ready);
    for (seed, outputs) in &kept {
        let expected = run(&stage_by_stage(), &graph, &inputs(*seed, 3, 8));
        assert!(all_bit_equal(outputs, &expected), "run {seed}");
    }
}

#[test]
fn inputs_laid_out_otherwise_run_stage_by_stage() {
    let _serial = serial();
    let graph = softmax_and_chain(4, 4);
    let cache = replaying();
    for seed in 0..3 {
        run(&cache, &graph, &inputs(seed, 4, 4));
    }
    assert_eq!(cache.counters().replays, 1);
    let [x, a] = &inputs(7, 4, 4)[..] else {
        unreachable!()
    };
    let transposed = x.transpose(&[1, 0]).unwrap();
    let result = run(&cache, &graph, &[transposed.clone(), a.clone()]);
    assert_eq!(cache.counters().replay_misses, 1);
    assert_eq!(cache.counters().replays, 1);
    let expected = run(&stage_by_stage(), &graph, &[transposed, a.clone()]);
    assert!(all_bit_equal(&result, &expected));
}

#[test]
fn poisoned_outputs_are_poisoned_before_each_replay() {
    let _serial = serial();
    nxvk_kernels::set_output_poison(Some(0x7FC0_DEAD));
    let graph = softmax_and_chain(7, 33);
    let cache = replaying();
    let mut replays = 0;
    for seed in 0..4 {
        let replayed = run(&cache, &graph, &inputs(seed, 7, 33));
        let expected = run(&stage_by_stage(), &graph, &inputs(seed, 7, 33));
        assert!(all_bit_equal(&replayed, &expected), "run {seed}");
        replays = cache.counters().replays;
    }
    nxvk_kernels::set_output_poison(None);
    assert_eq!(replays, 2);
}

/// A training loop's shape: the same weights every run and each run's output fed back as
/// the next input. The second captured run reads copies of both, so the comparison still
/// tells their address words; replays then patch in the same weights each time.
#[test]
fn fixed_weights_and_fed_back_outputs_replay() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[8, 12]).unwrap();
    let w = builder.parameter(DType::F32, &[8, 12]).unwrap();
    let product = builder.binary(BinaryOp::Multiply, x, w).unwrap();
    let next = builder.unary(UnaryOp::Tanh, product).unwrap();
    let total = builder
        .reduce(ReduceOp::Sum, next, Some(&[1]), false, TieBreak::Low)
        .unwrap();
    let graph = builder.finish(&[next, total]).unwrap();
    let mut random = SplitMix(41);
    let w = random_input(&mut random, DType::F32, &[8, 12]);
    let start = random_input(&mut random, DType::F32, &[8, 12]);
    let cache = replaying();
    let reference = stage_by_stage();
    let (mut x, mut expected_x) = (start.clone(), start);
    for step in 0..6 {
        let replayed = cache.run(&graph, &[&x, &w]).unwrap();
        let expected = reference.run(&graph, &[&expected_x, &w]).unwrap();
        assert!(all_bit_equal(&replayed, &expected), "step {step}");
        assert!(!bit_equal(&replayed[0], &x), "step {step} changed nothing");
        x = replayed[0].clone();
        expected_x = expected[0].clone();
    }
    assert_eq!(cache.replay_status(&graph).unwrap(), ReplayStatus::Ready);
    assert_eq!(cache.counters().replays, 4);
}

/// x * t for a literal t (a constant tensor in the graph) that a transpose materialises: the
/// plan uploads it on its first run only, so later runs upload nothing and replay.
#[test]
fn literals_are_uploaded_once_and_replay() {
    let _serial = serial();
    let values: Vec<f32> = (0..12).map(|value| value as f32 - 5.5).collect();
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[4, 3]).unwrap();
    let literal = builder.literal(DType::F32, &[3, 4], &bytes).unwrap();
    let transposed = builder.transpose(literal, &[1, 0]).unwrap();
    let out = builder.binary(BinaryOp::Multiply, x, transposed).unwrap();
    let graph = builder.finish(&[out]).unwrap();
    let cache = replaying();
    let mut uploads = Vec::new();
    for seed in 0..5 {
        let x = random_input(&mut SplitMix(seed), DType::F32, &[4, 3]);
        let before = device().counters().bytes_uploaded;
        let replayed = cache.run(&graph, &[&x]).unwrap();
        uploads.push(device().counters().bytes_uploaded - before);
        let expected = stage_by_stage().run(&graph, &[&x]).unwrap();
        assert!(all_bit_equal(&replayed, &expected), "run {seed}");
    }
    // Null arm: the first run uploads the literal.
    assert!(uploads[0] >= bytes.len() as u64, "{uploads:?}");
    assert_eq!(uploads[1..], [0, 0, 0, 0], "{uploads:?}");
    assert_eq!(cache.replay_status(&graph).unwrap(), ReplayStatus::Ready);
    assert!(cache.counters().replays >= 1);
}

/// relu(x . w) + x . w: the GEMM is an eager kernel that takes its operands' addresses in
/// push constants, so it is recorded afresh on each replay between the recorded parts.
#[test]
fn an_eager_kernel_reading_inputs_replays_between_recorded_parts() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[9, 16]).unwrap();
    let w = builder.parameter(DType::F32, &[16, 5]).unwrap();
    let product = builder
        .dot(x, w, nxvk_fusion::DotAxes::matrix_product())
        .unwrap();
    let zero = builder.constant(DType::F32, 0.0).unwrap();
    let relu = builder.binary(BinaryOp::Max, product, zero).unwrap();
    let out = builder.binary(BinaryOp::Add, relu, product).unwrap();
    let graph = builder.finish(&[out, product]).unwrap();
    let cache = replaying();
    let mut results: Vec<Vec<Tensor>> = Vec::new();
    for seed in 0..5u64 {
        let mut random = SplitMix(seed + 100);
        let inputs = vec![
            random_input(&mut random, DType::F32, &[9, 16]),
            random_input(&mut random, DType::F32, &[16, 5]),
        ];
        let replayed = run(&cache, &graph, &inputs);
        let expected = run(&stage_by_stage(), &graph, &inputs);
        assert!(all_bit_equal(&replayed, &expected), "run {seed}");
        assert!(
            results
                .iter()
                .all(|earlier| !bit_equal(&earlier[0], &replayed[0]))
        );
        results.push(replayed);
    }
    assert_eq!(cache.replay_status(&graph).unwrap(), ReplayStatus::Ready);
    assert_eq!(cache.counters().replays, 3);
}

/// A chain of dependent GEMMs, each an eager kernel reading a weight through push constants:
/// all of them are live dispatches of one part, so the replay itself must place the barriers
/// between them (the H200 raced without them, where lavapipe ran the dispatches in order).
/// A chain needs a barrier before each step whatever buffers it uses, so the replay's count
/// can be compared with the run's (in general it cannot: a run that reuses buffers by
/// liveness needs barriers a replay, whose intermediates are all distinct, does not).
#[test]
fn dependent_live_dispatches_are_ordered_as_in_the_run() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let mut h = builder.parameter(DType::F64, &[4, 6]).unwrap();
    for _ in 0..3 {
        let w = builder.parameter(DType::F64, &[6, 6]).unwrap();
        h = builder
            .dot(h, w, nxvk_fusion::DotAxes::matrix_product())
            .unwrap();
    }
    let graph = builder.finish(&[h]).unwrap();
    let inputs = |seed: u64| -> Vec<Tensor> {
        let mut random = SplitMix(seed);
        std::iter::once(random_input(&mut random, DType::F64, &[4, 6]))
            .chain((0..3).map(|_| random_input(&mut random, DType::F64, &[6, 6])))
            .collect()
    };
    let cache = replaying();
    for seed in 0..2 {
        run(&cache, &graph, &inputs(seed));
    }
    let barriers = |cache: &PlanCache| {
        let before = device().counters().barriers;
        let result = run(cache, &graph, &inputs(7));
        (device().counters().barriers - before, result)
    };
    let (replayed, result) = barriers(&cache);
    assert_eq!(cache.counters().replays, 1);
    let reference = stage_by_stage();
    run(&reference, &graph, &inputs(7));
    let (ordered, expected) = barriers(&reference);
    // Null arm: run stage by stage, the chain needs a barrier before each dependent GEMM.
    assert!(ordered >= 3, "{ordered} barriers stage by stage");
    assert!(
        replayed >= ordered,
        "replay {replayed} barriers, the run {ordered}"
    );
    assert!(all_bit_equal(&result, &expected));
}

/// while (i < 3) i = i + 1: the loop reads its predicate back, which replay cannot repeat.
#[test]
fn a_loop_that_reads_its_predicate_back_is_refused_with_the_reason() {
    let _serial = serial();
    let condition = {
        let mut builder = GraphBuilder::new();
        let i = builder.parameter(DType::S32, &[]).unwrap();
        let three = builder.constant(DType::S32, 3.0).unwrap();
        let less = builder.binary(BinaryOp::Less, i, three).unwrap();
        builder.finish(&[less]).unwrap()
    };
    let body = {
        let mut builder = GraphBuilder::new();
        let i = builder.parameter(DType::S32, &[]).unwrap();
        let one = builder.constant(DType::S32, 1.0).unwrap();
        let next = builder.binary(BinaryOp::Add, i, one).unwrap();
        builder.finish(&[next]).unwrap()
    };
    let mut builder = GraphBuilder::new();
    let start = builder.parameter(DType::S32, &[]).unwrap();
    let looped = builder.while_loop(&[start], condition, body).unwrap();
    let out = builder.elem(looped, 0).unwrap();
    let graph = builder.finish(&[out]).unwrap();
    let cache = replaying();
    for start in 0..(CAPTURE_ATTEMPTS + 2) as i32 {
        let x = Tensor::from_slice(&device(), &[], &[start]).unwrap();
        let result = cache.run(&graph, &[&x]).unwrap();
        assert_eq!(result[0].to_vec::<i32>().unwrap(), vec![start.max(3)]);
    }
    assert_eq!(
        cache.replay_status(&graph).unwrap(),
        ReplayStatus::Refused("the run read data back to the host".into())
    );
    assert_eq!(cache.counters().replays, 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Random graphs of five dtypes: four runs on new inputs, each bit-equal to the plan run
    /// stage by stage, the last two replayed.
    #[test]
    fn random_graphs_replay_bit_for_bit(seed in any::<u64>(), steps in 1usize..10) {
        let _serial = serial();
        for dtype in [DType::F32, DType::S32, DType::F16, DType::U8, DType::F64] {
            let (graph, shapes) = random_graph(seed, dtype, steps);
            let cache = replaying();
            let reference = stage_by_stage();
            for run_index in 0..4u64 {
                let mut random = SplitMix(seed ^ (run_index + 1).wrapping_mul(0x9E37_79B9));
                let inputs: Vec<Tensor> = shapes
                    .iter()
                    .map(|shape| random_input(&mut random, dtype, shape))
                    .collect();
                let replayed = run(&cache, &graph, &inputs);
                let expected = run(&reference, &graph, &inputs);
                prop_assert!(all_bit_equal(&replayed, &expected), "{:?} run {}", graph, run_index);
            }
            // Every node kind these graphs use replays.
            prop_assert_eq!(cache.replay_status(&graph).unwrap(), ReplayStatus::Ready);
            prop_assert_eq!(cache.counters().replays, 2);
        }
    }
}
