//! Fused plans against op-by-op eager execution through nxvk-kernels: random graphs, dispatch
//! counts, the plan cache, views, multi-output graphs, the CSE knob, cond and while.

mod common;

use common::{
    SplitMix, agree, device, eager, random_graph, random_input, serial, softmax_of, values_of,
};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{Graph, GraphBuilder, Op, PlanCache, PlanOptions};
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak, UnaryOp, as_type, binary, movement, unary};
use proptest::prelude::*;

/// The graph's reductions that a fused kernel may fold in another order than the catalog's.
fn reassociates(graph: &Graph) -> bool {
    graph.nodes().iter().any(|node| {
        matches!(
            node.op,
            Op::Reduce {
                op: ReduceOp::Sum | ReduceOp::Product | ReduceOp::ReduceMax | ReduceOp::ReduceMin,
                ..
            }
        )
    })
}

/// The device's dispatch count (callers hold [`serial`]).
fn dispatches() -> u64 {
    device().counters().dispatches
}

/// sigmoid(x * a + 1.5), `a` a scalar parameter.
fn chain(n: usize) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[n]).unwrap();
    let a = builder.parameter(DType::F32, &[]).unwrap();
    let scaled = builder.binary(BinaryOp::Multiply, x, a).unwrap();
    let constant = builder.constant(DType::F32, 1.5).unwrap();
    let shifted = builder.binary(BinaryOp::Add, scaled, constant).unwrap();
    let out = builder.unary(UnaryOp::Sigmoid, shifted).unwrap();
    builder.finish(&[out]).unwrap()
}

/// Softmax over the last axis of f32[rows, columns].
fn softmax(rows: usize, columns: usize) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[rows, columns]).unwrap();
    let out = softmax_of(&mut builder, x);
    builder.finish(&[out]).unwrap()
}

fn cache() -> PlanCache {
    PlanCache::with_options(&device(), PlanOptions::default())
}

#[test]
fn an_elementwise_chain_is_one_dispatch_and_matches_eager_bit_for_bit() {
    let _serial = serial();
    let graph = chain(1000);
    let mut random = SplitMix(7);
    let x = random_input(&mut random, DType::F32, &[1000]);
    let a = Tensor::from_slice(&device(), &[], &[0.75f32]).unwrap();
    let cache = cache();
    cache.run(&graph, &[&x, &a]).unwrap();
    let before = dispatches();
    let fused = cache.run(&graph, &[&x, &a]).unwrap();
    assert_eq!(dispatches() - before, 1);
    // Null arm of the thousand-op chain's: a short chain takes the packet path.
    assert_eq!(cache.counters().packet_dispatches, 2);
    let expected = eager(&graph, &[&x, &a]);
    assert!(agree(&values_of(&fused[0]), &values_of(&expected[0]), 0.0));
}

/// Null arm of the dispatch count: the same chain op by op takes one dispatch per op.
#[test]
fn the_same_chain_op_by_op_takes_three_dispatches() {
    let _serial = serial();
    let graph = chain(64);
    let x = random_input(&mut SplitMix(1), DType::F32, &[64]);
    let a = Tensor::from_slice(&device(), &[], &[2.0f32]).unwrap();
    let before = dispatches();
    eager(&graph, &[&x, &a]);
    assert!(dispatches() - before >= 3);
}

/// Null arm of the comparison: one changed bit is caught, and a NaN against a number too.
#[test]
fn the_comparison_rejects_a_perturbed_result() {
    let _serial = serial();
    let values = [1.0f32, -0.0, f32::NAN, 3.5];
    let mut perturbed = values;
    perturbed[3] = f32::from_bits(values[3].to_bits() ^ 1);
    assert!(agree(&values, &values, 0.0));
    assert!(!agree(&perturbed, &values, 0.0));
    let mut nan = values;
    nan[0] = f32::NAN;
    assert!(!agree(&nan, &values, 1e-3));
    assert!(!agree(&values[..3], &values, 0.0));
}

#[test]
fn softmax_takes_at_most_three_dispatches() {
    let _serial = serial();
    let graph = softmax(6, 37);
    let x = random_input(&mut SplitMix(3), DType::F32, &[6, 37]);
    let cache = cache();
    cache.run(&graph, &[&x]).unwrap();
    let before = dispatches();
    let fused = cache.run(&graph, &[&x]).unwrap();
    let used = dispatches() - before;
    assert!(used <= 3, "softmax took {used} dispatches");
    let expected = eager(&graph, &[&x]);
    assert!(agree(&values_of(&fused[0]), &values_of(&expected[0]), 1e-5));
}

#[test]
fn a_second_run_with_new_data_plans_and_compiles_nothing() {
    let _serial = serial();
    let graph = softmax(4, 9);
    let cache = cache();
    let first = random_input(&mut SplitMix(11), DType::F32, &[4, 9]);
    cache.run(&graph, &[&first]).unwrap();
    let counters = cache.counters();
    assert_eq!((counters.traces, counters.cache_hits), (1, 0));
    assert!(counters.codegens >= 1);
    let device_before = device().counters();
    let second = random_input(&mut SplitMix(12), DType::F32, &[4, 9]);
    let result = cache.run(&graph, &[&second]).unwrap();
    let after = cache.counters();
    let device_after = device().counters();
    assert_eq!(after.traces, 1);
    assert_eq!(after.codegens, counters.codegens);
    assert_eq!(after.cache_hits, 1);
    assert_eq!(device_after.pipeline_builds, device_before.pipeline_builds);
    assert_eq!(device_after.shader_compiles, device_before.shader_compiles);
    let expected = eager(&graph, &[&second]);
    assert!(agree(
        &values_of(&result[0]),
        &values_of(&expected[0]),
        1e-5
    ));
    // Null arm: a graph of other shapes is a miss.
    let other = softmax(5, 9);
    let third = random_input(&mut SplitMix(13), DType::F32, &[5, 9]);
    cache.run(&other, &[&third]).unwrap();
    assert_eq!(cache.counters().traces, 2);
}

#[test]
fn encoded_graphs_hit_the_cache_without_decoding() {
    let _serial = serial();
    let graph = chain(16);
    let bytes = nxvk_fusion::encode(&graph);
    let cache = cache();
    let x = random_input(&mut SplitMix(5), DType::F32, &[16]);
    let a = Tensor::from_slice(&device(), &[], &[1.25f32]).unwrap();
    let first = cache.run_encoded(&bytes, &[&x, &a]).unwrap();
    let second = cache.run_encoded(&bytes, &[&x, &a]).unwrap();
    assert_eq!(cache.counters().traces, 1);
    assert_eq!(cache.counters().cache_hits, 1);
    assert!(agree(&values_of(&first[0]), &values_of(&second[0]), 0.0));
    let mut damaged = bytes.clone();
    damaged[8] = 9;
    assert!(cache.run_encoded(&damaged, &[&x, &a]).is_err());
}

#[test]
fn views_of_inputs_never_copy() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[3, 4]).unwrap();
    let transposed = builder.transpose(x, &[1, 0]).unwrap();
    let reshaped = builder.reshape(x, &[12]).unwrap();
    let graph = builder.finish(&[transposed, reshaped]).unwrap();
    let values: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let x = Tensor::from_slice(&device(), &[3, 4], &values).unwrap();
    let cache = cache();
    let before = dispatches();
    let out = cache.run(&graph, &[&x]).unwrap();
    assert_eq!(dispatches() - before, 0);
    assert_eq!(out[0].shape(), &[4, 3]);
    assert_eq!(out[0].to_vec::<f32>().unwrap()[..4], [0.0, 4.0, 8.0, 1.0]);
    assert_eq!(out[1].to_vec::<f32>().unwrap(), values);
}

#[test]
fn outputs_of_one_shape_share_one_kernel() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[50]).unwrap();
    let exp = builder.unary(UnaryOp::Exp, x).unwrap();
    let one = builder.constant(DType::F32, 1.0).unwrap();
    let plus = builder.binary(BinaryOp::Add, exp, one).unwrap();
    let graph = builder.finish(&[exp, plus]).unwrap();
    let x = random_input(&mut SplitMix(9), DType::F32, &[50]);
    let cache = cache();
    let plan = cache.plan(&graph).unwrap();
    assert_eq!(plan.stages().len(), 1);
    let before = dispatches();
    let out = cache.run(&graph, &[&x]).unwrap();
    assert_eq!(dispatches() - before, 1);
    let expected = eager(&graph, &[&x]);
    for (fused, expected) in out.iter().zip(&expected) {
        assert!(agree(&values_of(fused), &values_of(expected), 0.0));
    }
}

/// Narrow and mixed types: each value is rounded where the eager path stores it.
#[test]
fn mixed_dtypes_round_like_the_eager_path() {
    let _serial = serial();
    for (left, right) in [
        (DType::F16, DType::F32),
        (DType::BF16, DType::S8),
        (DType::S8, DType::U8),
        (DType::F64, DType::S32),
        (DType::U16, DType::F16),
    ] {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(left, &[40]).unwrap();
        let y = builder.parameter(right, &[40]).unwrap();
        let product = builder.binary(BinaryOp::Multiply, x, y).unwrap();
        let sum = builder.binary(BinaryOp::Add, product, x).unwrap();
        let negated = builder.unary(UnaryOp::Negate, sum).unwrap();
        let cast = builder.as_type(negated, left).unwrap();
        let low = builder.constant(left, -3.0).unwrap();
        let high = builder.constant(left, 5.0).unwrap();
        let clipped = builder.clip(cast, low, high).unwrap();
        let graph = builder.finish(&[negated, clipped]).unwrap();
        let mut random = SplitMix(21);
        let x = random_input(&mut random, left, &[40]);
        let y = random_input(&mut random, right, &[40]);
        let cache = cache();
        let plan = cache.plan(&graph).unwrap();
        let before = dispatches();
        let fused = cache.run(&graph, &[&x, &y]).unwrap();
        assert_eq!(
            dispatches() - before,
            1,
            "{left} x {right}: {:?}",
            plan.stages()
        );
        assert_eq!(
            fused[0].to_bytes().unwrap(),
            eager_clip_reference(&graph, &x, &y, 0),
            "{left} x {right}"
        );
        assert_eq!(
            fused[1].to_bytes().unwrap(),
            eager_clip_reference(&graph, &x, &y, 1),
            "{left} x {right}"
        );
    }
}

/// Output `output` of the mixed-dtype graph, op by op (clip as max then min).
fn eager_clip_reference(graph: &Graph, x: &Tensor, y: &Tensor, output: usize) -> Vec<u8> {
    let dtype = x.dtype();
    let negated = unary(
        UnaryOp::Negate,
        &binary(BinaryOp::Add, &binary(BinaryOp::Multiply, x, y).unwrap(), x).unwrap(),
    )
    .unwrap();
    if output == 0 {
        assert_eq!(negated.dtype(), graph.output_types()[0].dtype);
        return negated.to_bytes().unwrap();
    }
    // The bounds as the graph holds them (Rust's saturating conversion of -3.0 and 5.0).
    let bounds: Vec<Tensor> = graph
        .nodes()
        .iter()
        .filter_map(|node| match &node.op {
            Op::Constant { element } => {
                Some(Tensor::from_bytes(&device(), dtype, &[], element).unwrap())
            }
            _ => None,
        })
        .collect();
    let cast = as_type(&negated, dtype).unwrap();
    let raised = binary(BinaryOp::Max, &cast, &bounds[0]).unwrap();
    binary(BinaryOp::Min, &raised, &bounds[1])
        .unwrap()
        .to_bytes()
        .unwrap()
}

#[test]
fn cross_stage_cse_writes_a_shared_value_once_and_agrees() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[8, 16]).unwrap();
    let exp = builder.unary(UnaryOp::Exp, x).unwrap();
    let sum = builder
        .reduce(ReduceOp::Sum, exp, Some(&[1]), false, TieBreak::Low)
        .unwrap();
    let two = builder.constant(DType::F32, 2.0).unwrap();
    let doubled = builder.binary(BinaryOp::Multiply, exp, two).unwrap();
    let graph = builder.finish(&[sum, doubled]).unwrap();
    let x = random_input(&mut SplitMix(17), DType::F32, &[8, 16]);
    let off = PlanCache::with_options(
        &device(),
        PlanOptions {
            cross_stage_cse: false,
            ..PlanOptions::default()
        },
    );
    let on = PlanCache::with_options(
        &device(),
        PlanOptions {
            cross_stage_cse: true,
            ..PlanOptions::default()
        },
    );
    assert_eq!(off.plan(&graph).unwrap().stages().len(), 2);
    assert_eq!(on.plan(&graph).unwrap().stages().len(), 3);
    let (a, b) = (
        off.run(&graph, &[&x]).unwrap(),
        on.run(&graph, &[&x]).unwrap(),
    );
    for (a, b) in a.iter().zip(&b) {
        assert!(agree(&values_of(a), &values_of(b), 1e-5));
    }
}

#[test]
fn while_and_cond_run_their_graphs_from_the_executor() {
    let _serial = serial();
    let scalar_step = |op: BinaryOp, by: f64| {
        let mut inner = GraphBuilder::new();
        let v = inner.parameter(DType::F32, &[]).unwrap();
        let c = inner.constant(DType::F32, by).unwrap();
        let r = inner.binary(op, v, c).unwrap();
        inner.finish(&[r]).unwrap()
    };
    let below = |limit: f64| {
        let mut inner = GraphBuilder::new();
        let v = inner.parameter(DType::F32, &[]).unwrap();
        let c = inner.constant(DType::F32, limit).unwrap();
        let r = inner.binary(BinaryOp::Less, v, c).unwrap();
        inner.finish(&[r]).unwrap()
    };
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[]).unwrap();
    let looped = builder
        .while_loop(&[x], below(10.0), scalar_step(BinaryOp::Add, 1.0))
        .unwrap();
    let counted = builder.elem(looped, 0).unwrap();
    let chosen = builder
        .cond(
            &[counted],
            vec![nxvk_fusion::CondClause {
                predicate: below(5.0).into(),
                body: scalar_step(BinaryOp::Multiply, 100.0).into(),
            }],
            scalar_step(BinaryOp::Multiply, -1.0),
        )
        .unwrap();
    let result = builder.elem(chosen, 0).unwrap();
    let graph = builder.finish(&[result]).unwrap();
    let cache = cache();
    let run = |start: f32| {
        let x = Tensor::from_slice(&device(), &[], &[start]).unwrap();
        cache.run(&graph, &[&x]).unwrap()[0]
            .to_vec::<f32>()
            .unwrap()[0]
    };
    assert_eq!(run(0.0), -10.0);
    assert_eq!(run(12.5), -12.5);
    // Null arm: the cond's first branch is reachable and gives a different answer.
    let mut inner = GraphBuilder::new();
    let v = inner.parameter(DType::F32, &[]).unwrap();
    let clause = cache.run(
        &below(5.0),
        &[&Tensor::from_slice(&device(), &[], &[1.0f32]).unwrap()],
    );
    assert_eq!(clause.unwrap()[0].to_vec::<u8>().unwrap(), [1]);
    let _ = inner.finish(&[v]);
}

/// A dot inside a plan runs the catalog's GEMM, then an elementwise stage: the plan's result
/// equals the eager dot followed by the eager add, bit for bit.
#[test]
fn dot_runs_in_a_plan_and_feeds_an_elementwise_stage() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let a = builder.parameter(DType::F32, &[2, 3]).unwrap();
    let b = builder.parameter(DType::F32, &[3]).unwrap();
    let dot = builder
        .dot(a, b, nxvk_fusion::DotAxes::matrix_product())
        .unwrap();
    let one = builder.constant(DType::F32, 1.0).unwrap();
    let shifted = builder.binary(BinaryOp::Add, dot, one).unwrap();
    let graph = builder.finish(&[shifted]).unwrap();
    let a = Tensor::from_slice(&device(), &[2, 3], &[1.0f32, 2.0, 3.0, -4.0, 0.5, 8.0]).unwrap();
    let b = Tensor::from_slice(&device(), &[3], &[0.25f32, -1.0, 2.0]).unwrap();
    let planned: Vec<f32> = cache().run(&graph, &[&a, &b]).unwrap()[0].to_vec().unwrap();
    let eager_dot = nxvk_kernels::dot(&a, &[1], &[], &b, &[0], &[]).unwrap();
    let eager_one = Tensor::from_slice(&device(), &[], &[1.0f32]).unwrap();
    let eager: Vec<f32> = nxvk_kernels::binary(BinaryOp::Add, &eager_dot, &eager_one)
        .unwrap()
        .to_vec()
        .unwrap();
    assert_eq!(planned, eager);
    assert_eq!(planned, [5.25, 15.5]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    #[test]
    fn random_graphs_fused_equal_eager(seed in any::<u64>(), steps in 1usize..14) {
        let _serial = serial();
        for dtype in [DType::F32, DType::S32, DType::F16, DType::BF16, DType::U8, DType::S64, DType::F64] {
            let (graph, shapes) = random_graph(seed, dtype, steps);
            let mut random = SplitMix(seed ^ 0x5EED);
            let inputs: Vec<Tensor> = shapes
                .iter()
                .map(|shape| random_input(&mut random, dtype, shape))
                .collect();
            let inputs: Vec<&Tensor> = inputs.iter().collect();
            let fused = cache().run(&graph, &inputs).unwrap();
            let expected = eager(&graph, &inputs);
            let tolerance = if reassociates(&graph) { 1e-5 } else { 0.0 };
            for (fused, expected) in fused.iter().zip(&expected) {
                prop_assert_eq!(fused.shape(), expected.shape());
                prop_assert_eq!(fused.dtype(), expected.dtype());
                let (a, b) = (values_of(fused), values_of(expected));
                prop_assert!(agree(&a, &b, tolerance), "{:?}\nfused {:?}\neager {:?}", graph, a, b);
            }
        }
    }
}

#[test]
fn inputs_of_other_types_or_count_are_errors_naming_the_plan() {
    let _serial = serial();
    let graph = chain(8);
    let cache = cache();
    let x = Tensor::zeros(&device(), DType::F32, &[8]).unwrap();
    let wrong_shape = Tensor::zeros(&device(), DType::F32, &[9]).unwrap();
    let wrong_dtype = Tensor::zeros(&device(), DType::F64, &[]).unwrap();
    let a = Tensor::zeros(&device(), DType::F32, &[]).unwrap();
    for inputs in [
        vec![&x],
        vec![&wrong_shape, &a],
        vec![&x, &wrong_dtype],
        vec![&x, &a, &a],
    ] {
        let error = cache.run(&graph, &inputs).unwrap_err().to_string();
        assert!(error.contains("run plan"), "{error}");
    }
    assert!(cache.run(&graph, &[&x, &a]).is_ok());
}

/// A 1000-op chain is one kernel, bit-exact with 1000 eager dispatches.
#[test]
fn a_thousand_op_chain_is_one_dispatch() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let mut y = builder.parameter(DType::F32, &[16]).unwrap();
    for step in 0..1000 {
        let op = if step % 2 == 0 {
            UnaryOp::Sigmoid
        } else {
            UnaryOp::Negate
        };
        y = builder.unary(op, y).unwrap();
    }
    let graph = builder.finish(&[y]).unwrap();
    let x = random_input(&mut SplitMix(23), DType::F32, &[16]);
    let cache = cache();
    cache.plan(&graph).unwrap();
    let before = dispatches();
    let fused = cache.run(&graph, &[&x]).unwrap();
    assert_eq!(dispatches() - before, 1);
    // Arithmetic-bound: generated without the packet path (its code would be copied per lane).
    assert_eq!(cache.counters().packet_dispatches, 0);
    let expected = eager(&graph, &[&x]);
    assert!(agree(&values_of(&fused[0]), &values_of(&expected[0]), 0.0));
}

/// A full reduction of many elements is left to the catalog's split kernel (FIXME: measure
/// where the fused prologue stops paying, by a race).
#[test]
fn a_long_full_reduction_keeps_the_catalog_kernel() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[8192]).unwrap();
    let exp = builder.unary(UnaryOp::Exp, x).unwrap();
    let sum = builder
        .reduce(ReduceOp::Sum, exp, None, false, TieBreak::Low)
        .unwrap();
    let graph = builder.finish(&[sum]).unwrap();
    let plan = cache().plan(&graph).unwrap();
    assert_eq!(plan.stages().len(), 2);
    assert_eq!(plan.fused_kernels(), 1);
}

/// Inputs that are strided views: read through their strides, and reshaped through a copy
/// where the layout cannot express the reshape.
#[test]
fn strided_inputs_are_read_through_their_layout() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[4, 3]).unwrap();
    let exp = builder.unary(UnaryOp::Exp, x).unwrap();
    let flat = builder.reshape(x, &[12]).unwrap();
    let negated = builder.unary(UnaryOp::Negate, flat).unwrap();
    let graph = builder.finish(&[exp, negated]).unwrap();
    let values: Vec<f32> = (0..12).map(|v| v as f32 / 4.0).collect();
    let stored = Tensor::from_slice(&device(), &[3, 4], &values).unwrap();
    let transposed = stored.transpose(&[1, 0]).unwrap();
    assert!(!transposed.layout().is_contiguous());
    let dense = movement::contiguous(&transposed).unwrap();
    let cache = cache();
    let from_view = cache.run(&graph, &[&transposed]).unwrap();
    let from_dense = cache.run(&graph, &[&dense]).unwrap();
    let expected = eager(&graph, &[&dense]);
    for ((view, dense), expected) in from_view.iter().zip(&from_dense).zip(&expected) {
        assert!(agree(&values_of(view), &values_of(expected), 0.0));
        assert!(agree(&values_of(dense), &values_of(expected), 0.0));
    }
}

/// f64 transcendentals (the catalog's f64 library) fuse and agree with eager bit for bit, and
/// so do the f32 ops that compute in f64 (pow, sin).
#[test]
fn f64_library_ops_fuse_bit_exactly() {
    let _serial = serial();
    for dtype in [DType::F64, DType::F32] {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(dtype, &[64]).unwrap();
        let sine = builder.unary(UnaryOp::Sin, x).unwrap();
        let exp = builder.unary(UnaryOp::Exp, sine).unwrap();
        let power = builder.binary(BinaryOp::Pow, exp, x).unwrap();
        let graph = builder.finish(&[power]).unwrap();
        let values: Vec<f64> = (0..64).map(|i| (i as f64 - 31.5) * 0.37).collect();
        let x = as_type(
            &Tensor::from_slice(&device(), &[64], &values).unwrap(),
            dtype,
        )
        .unwrap();
        let fused = cache().run(&graph, &[&x]).unwrap().remove(0);
        let eager = binary(
            BinaryOp::Pow,
            &unary(UnaryOp::Exp, &unary(UnaryOp::Sin, &x).unwrap()).unwrap(),
            &x,
        )
        .unwrap();
        assert_eq!(
            fused.to_bytes().unwrap(),
            eager.to_bytes().unwrap(),
            "{dtype:?}"
        );
    }
}

/// `tensor`'s values seen from element 1 of a one-longer buffer: the same data at an address
/// no packet is aligned to, which keeps a fused kernel on its generic path.
fn shifted_by_one_element(tensor: &Tensor) -> Tensor {
    let bytes = tensor.to_bytes().unwrap();
    let element_bytes = bytes.len() / tensor.shape().iter().product::<usize>().max(1);
    let longer: Vec<u8> = vec![0; element_bytes].into_iter().chain(bytes).collect();
    let count = tensor.shape().iter().product::<usize>() + 1;
    let longer = Tensor::from_bytes(&device(), tensor.dtype(), &[count], &longer).unwrap();
    let shape = tensor.shape().to_vec();
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    let layout = nxvk_core::Layout::from_parts(shape, strides, 1).unwrap();
    let shifted = Tensor::from_parts(longer.buffer().clone(), layout, tensor.dtype()).unwrap();
    assert_eq!(shifted.to_bytes().unwrap(), tensor.to_bytes().unwrap());
    shifted
}

/// Runs `graph` on `inputs` with `options` twice: as given (aligned fresh tensors) and with the first input
/// shifted off packet alignment. Returns both results and whether each run took the packet
/// path, after checking each against the op-by-op oracle (to `tolerance`; 0 = bit for bit,
/// NaN payloads included, unless the graph reduces, whose NaN may come from another operand).
fn run_both_paths(
    graph: &Graph,
    inputs: &[&Tensor],
    tolerance: f32,
    options: PlanOptions,
) -> [(Vec<Tensor>, bool); 2] {
    let expected = eager(graph, inputs);
    let shifted = shifted_by_one_element(inputs[0]);
    let mut shifted_inputs = inputs.to_vec();
    shifted_inputs[0] = &shifted;
    [inputs.to_vec(), shifted_inputs].map(|inputs| {
        let cache = PlanCache::with_options(&device(), options);
        let fused = cache.run(graph, &inputs).unwrap();
        let packet = cache.counters().packet_dispatches > 0;
        for (fused, expected) in fused.iter().zip(&expected) {
            assert_eq!(fused.dtype(), expected.dtype());
            let (a, b) = (values_of(fused), values_of(expected));
            assert!(
                agree(&a, &b, tolerance),
                "{graph:?}\nfused {a:?}\neager {b:?}"
            );
            if tolerance == 0.0 && !reassociates(graph) {
                assert_eq!(fused.to_bytes().unwrap(), expected.to_bytes().unwrap());
            }
        }
        (fused, packet)
    })
}

/// max(x * s + 1.5, x) with `s` a scalar parameter: a streamed leaf, a scalar leaf and a
/// constant.
fn scaled_max(dtype: DType, length: usize) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(dtype, &[length]).unwrap();
    let s = builder.parameter(dtype, &[]).unwrap();
    let scaled = builder.binary(BinaryOp::Multiply, x, s).unwrap();
    let constant = builder.constant(dtype, 1.5).unwrap();
    let shifted = builder.binary(BinaryOp::Add, scaled, constant).unwrap();
    let out = builder.binary(BinaryOp::Max, shifted, x).unwrap();
    builder.finish(&[out]).unwrap()
}

/// The packet path of elementwise kernels: every dtype class, lengths around the packet
/// size, a broadcast scalar; equal to eager and to the generic path bit for bit. Null arm: a
/// streamed leaf off packet alignment takes the generic path.
#[test]
fn the_packet_path_equals_eager_and_the_generic_path_bit_for_bit() {
    let _serial = serial();
    let dtypes = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::F64,
        DType::S8,
        DType::U8,
        DType::S16,
        DType::U32,
        DType::S64,
    ];
    for dtype in dtypes {
        for length in [1, 3, 4, 7, 8, 33, 1001] {
            let graph = scaled_max(dtype, length);
            let mut random = SplitMix(length as u64);
            let x = random_input(&mut random, dtype, &[length]);
            let s = random_input(&mut random, dtype, &[]);
            let [(packet, took_packet), (generic, took_generic)] =
                run_both_paths(&graph, &[&x, &s], 0.0, PlanOptions::default());
            assert!(took_packet, "{dtype} x {length}");
            // One element is read like a scalar, whatever its address.
            assert_eq!(took_generic, length == 1, "{dtype} x {length}");
            assert_eq!(
                packet[0].to_bytes().unwrap(),
                generic[0].to_bytes().unwrap()
            );
            // The knob keeps aligned leaves on the generic path.
            let packets_off = PlanOptions {
                packet_path: false,
                ..PlanOptions::default()
            };
            let [(off, took_packet), _] = run_both_paths(&graph, &[&x, &s], 0.0, packets_off);
            assert!(!took_packet);
            assert_eq!(off[0].to_bytes().unwrap(), packet[0].to_bytes().unwrap());
        }
    }
}

/// Several outputs of different types in one packet kernel, and an input that is a strided
/// view (the generic path), agree with eager.
#[test]
fn packet_kernels_with_several_output_types_equal_eager() {
    let _serial = serial();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F16, &[6, 10]).unwrap();
    let exp = builder.unary(UnaryOp::Exp, x).unwrap();
    let wide = builder.as_type(exp, DType::F64).unwrap();
    let less = builder.binary(BinaryOp::Less, x, exp).unwrap();
    let graph = builder.finish(&[wide, less, exp]).unwrap();
    let x = random_input(&mut SplitMix(31), DType::F16, &[6, 10]);
    let [(_, took_packet), (_, took_generic)] =
        run_both_paths(&graph, &[&x], 0.0, PlanOptions::default());
    assert!(took_packet && !took_generic);
}

/// Softmax's normaliser shape: per-row values broadcast along rows of a multiple of four
/// elements take the packet path (rows of the last axis); rows of seven do not.
#[test]
fn row_constant_leaves_take_the_packet_path() {
    let _serial = serial();
    for (columns, packet_expected) in [(8, true), (12, true), (7, false)] {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[5, columns]).unwrap();
        let per_row = builder.parameter(DType::F32, &[5, 1]).unwrap();
        let per_column = builder.parameter(DType::F32, &[columns]).unwrap();
        let shifted = builder.binary(BinaryOp::Subtract, x, per_row).unwrap();
        let exp = builder.unary(UnaryOp::Exp, shifted).unwrap();
        let scaled = builder.binary(BinaryOp::Multiply, exp, per_column).unwrap();
        let out = builder.binary(BinaryOp::Divide, scaled, per_row).unwrap();
        let graph = builder.finish(&[out]).unwrap();
        let mut random = SplitMix(columns as u64);
        let x = random_input(&mut random, DType::F32, &[5, columns]);
        let per_row = random_input(&mut random, DType::F32, &[5, 1]);
        let per_column = random_input(&mut random, DType::F32, &[columns]);
        let [(packet, took_packet), (generic, took_generic)] = run_both_paths(
            &graph,
            &[&x, &per_row, &per_column],
            0.0,
            PlanOptions::default(),
        );
        assert_eq!(took_packet, packet_expected, "{columns} columns");
        assert!(!took_generic);
        assert_eq!(
            packet[0].to_bytes().unwrap(),
            generic[0].to_bytes().unwrap()
        );
    }
}

/// `op` over the last axis of `f(x) = x * 2 - y` with `y` per row, f32[rows, length].
fn row_reduction(op: ReduceOp, dtype: DType, rows: usize, length: usize) -> Graph {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(dtype, &[rows, length]).unwrap();
    let y = builder.parameter(dtype, &[rows, 1]).unwrap();
    let two = builder.constant(dtype, 2.0).unwrap();
    let doubled = builder.binary(BinaryOp::Multiply, x, two).unwrap();
    let shifted = builder.binary(BinaryOp::Subtract, doubled, y).unwrap();
    let reduced = builder
        .reduce(op, shifted, Some(&[1]), false, TieBreak::Low)
        .unwrap();
    builder.finish(&[reduced]).unwrap()
}

/// The fused row template (subgroup teams for short rows, workgroup teams for long ones, the
/// packet path where rows are aligned) against the catalog's reductions: max and min exactly
/// (NaN wins), sums to the reassociation tolerance. Row lengths around the packet and
/// subgroup sizes, one row and many; a row of 4097 leaves the packet path.
#[test]
fn fused_row_reductions_equal_the_catalog_over_row_lengths() {
    row_reductions_equal_the_catalog(PlanOptions::default());
}

/// The same through the shared-memory tree, the fold of devices without subgroup shuffles.
#[test]
fn shared_memory_row_folds_equal_the_catalog_over_row_lengths() {
    row_reductions_equal_the_catalog(PlanOptions {
        subgroup_row_folds: false,
        ..PlanOptions::default()
    });
}

fn row_reductions_equal_the_catalog(options: PlanOptions) {
    let _serial = serial();
    let cases = [
        (ReduceOp::ReduceMax, DType::F32),
        (ReduceOp::Sum, DType::F32),
        (ReduceOp::ReduceMin, DType::F64),
        (ReduceOp::Sum, DType::S32),
        (ReduceOp::ReduceMax, DType::F16),
    ];
    for (op, dtype) in cases {
        let mut shapes = vec![
            (300, 1),
            (40, 7),
            (40, 8),
            (9, 33),
            (2, 3000),
            (3, 4096),
            (1, 4096),
        ];
        // Rows past the short-row limit fuse only when there are many.
        if dtype == DType::F32 {
            shapes.push((1024, 4097));
        }
        for (rows, length) in shapes {
            let graph = row_reduction(op, dtype, rows, length);
            let plan = PlanCache::with_options(&device(), options)
                .plan(&graph)
                .unwrap();
            assert_eq!(plan.stages().len(), 1, "{op:?} {dtype} [{rows}, {length}]");
            let mut random = SplitMix((rows * length) as u64);
            let x = random_input(&mut random, dtype, &[rows, length]);
            let y = random_input(&mut random, dtype, &[rows, 1]);
            let tolerance = if op == ReduceOp::Sum { 1e-5 } else { 0.0 };
            let before = dispatches();
            let [(_, took_packet), (_, took_generic)] =
                run_both_paths(&graph, &[&x, &y], tolerance, options);
            assert!(dispatches() > before);
            let aligned_rows = length % 4 == 0 || rows == 1;
            assert_eq!(
                took_packet, aligned_rows,
                "{op:?} {dtype} [{rows}, {length}]"
            );
            assert!(!took_generic);
        }
    }
}

/// Softmax over rows long enough for workgroup teams, aligned (packet path in all three
/// kernels) or not: three dispatches without row programs (`tests/row_program.rs` has the
/// one-kernel plan), equal to eager to the sum tolerance.
#[test]
fn long_row_softmax_takes_three_dispatches_on_either_path() {
    let _serial = serial();
    for columns in [4096, 4095] {
        let graph = softmax(3, columns);
        let x = random_input(&mut SplitMix(columns as u64), DType::F32, &[3, columns]);
        let cache = PlanCache::with_options(
            &device(),
            PlanOptions {
                row_programs: false,
                ..PlanOptions::default()
            },
        );
        cache.run(&graph, &[&x]).unwrap();
        let before = dispatches();
        let packets_before = cache.counters().packet_dispatches;
        let fused = cache.run(&graph, &[&x]).unwrap();
        assert_eq!(dispatches() - before, 3);
        let packet_dispatches = cache.counters().packet_dispatches - packets_before;
        assert_eq!(packet_dispatches, if columns % 4 == 0 { 3 } else { 0 });
        let expected = eager(&graph, &[&x]);
        assert!(agree(&values_of(&fused[0]), &values_of(&expected[0]), 1e-5));
    }
}
