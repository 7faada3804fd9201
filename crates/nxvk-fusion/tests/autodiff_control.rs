//! Gradients through `block`, `cond` and `while` against central finite differences, in f64
//! on the device, and the errors of the ops Nx does not differentiate either.
//!
//! Each rule has a check on fixed values (chosen so that every branch runs, and a loop runs
//! zero times), a property over random values (different values take different branches or
//! loop a different number of times), and a null arm: the gradient of a different function
//! must be rejected by the same comparison.
//!
//! The f32 and f16 instances build the same losses with f32 (f16) parameters, the nested
//! graphs and constants in that dtype too, and compare the loss and its gradients with the f64
//! graph's at the same point (the values rounded to the dtype first), whose gradients the f64
//! checks hold to the finite differences. The fixed values keep every predicate and loop
//! condition well clear of its threshold (by at least 0.1, against f16's 1e-3 rounding), so
//! both precisions take the same branches and iteration counts.

mod common;
#[path = "common/finite_differences.rs"]
mod finite_differences;

use finite_differences::{
    Runner, check_against_finite_differences, complex_of, deterministic_values,
    finite_difference_failure, low_precision_failure,
};
use nxvk_core::DType;
use nxvk_fusion::{CondClause, Graph, GraphBuilder, NodeId, Op, STOP_GRAD, gradients};
use nxvk_kernels::{BinaryOp, ReduceOp, TieBreak, UnaryOp, WindowOp, WindowOptions};
use proptest::prelude::*;
use std::sync::Arc;

type Loss = Box<dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId>;

/// A nested graph over parameters of `types`, whose outputs `body` builds.
fn nested(
    types: &[(DType, &[usize])],
    body: impl FnOnce(&mut GraphBuilder, &[NodeId]) -> Vec<NodeId>,
) -> Graph {
    let mut builder = GraphBuilder::new();
    let parameters: Vec<NodeId> = types
        .iter()
        .map(|(dtype, shape)| builder.parameter(*dtype, shape).unwrap())
        .collect();
    let outputs = body(&mut builder, &parameters);
    builder.finish(&outputs).unwrap()
}

fn sum(builder: &mut GraphBuilder, value: NodeId) -> NodeId {
    builder
        .reduce(ReduceOp::Sum, value, None, false, TieBreak::Low)
        .unwrap()
}

fn scalar(builder: &mut GraphBuilder, dtype: DType, value: f64) -> NodeId {
    builder.constant(dtype, value).unwrap()
}

fn binary(builder: &mut GraphBuilder, op: BinaryOp, left: NodeId, right: NodeId) -> NodeId {
    builder.binary(op, left, right).unwrap()
}

/// `x / (x^2 + 1)`: a smooth, bounded function of arithmetic only (f64 transcendentals make
/// kernels that compile slowly on lavapipe).
fn bump(builder: &mut GraphBuilder, x: NodeId) -> NodeId {
    let square = binary(builder, BinaryOp::Multiply, x, x);
    let denominator = affine(builder, square, 1.0, 1.0);
    binary(builder, BinaryOp::Divide, x, denominator)
}

/// The dtype of the tensor node `value`.
fn dtype_of(builder: &GraphBuilder, value: NodeId) -> DType {
    builder.type_of(value).unwrap().tensor().unwrap().dtype
}

/// `value * factor + addend` with scalars of `value`'s dtype.
fn affine(builder: &mut GraphBuilder, value: NodeId, factor: f64, addend: f64) -> NodeId {
    let dtype = dtype_of(builder, value);
    let factor = scalar(builder, dtype, factor);
    let addend = scalar(builder, dtype, addend);
    let scaled = binary(builder, BinaryOp::Multiply, value, factor);
    binary(builder, BinaryOp::Add, scaled, addend)
}

/// The predicate graph `sum(x) op threshold` over (x [3], y [3], counts s64 [3]), x and y of
/// the float `dtype`.
fn sum_compared(dtype: DType, op: BinaryOp, threshold: f64) -> Graph {
    nested(&cond_inputs(dtype), |builder, inputs| {
        let total = sum(builder, inputs[0]);
        let threshold = scalar(builder, dtype, threshold);
        vec![binary(builder, op, total, threshold)]
    })
}

/// The cond's inputs: x [3] and y [3] of the float `dtype`, integer counts s64 [3].
fn cond_inputs(dtype: DType) -> [(DType, &'static [usize]); 3] {
    [(dtype, &[3]), (dtype, &[3]), (DType::S64, &[3])]
}

/// Branch bodies over (x, y, counts) giving (a float vector, the integer counts): each uses
/// the inputs differently; `variant` changes the first branch (for the null arm).
fn branch(dtype: DType, which: usize, variant: bool) -> Graph {
    nested(&cond_inputs(dtype), |builder, inputs| {
        let (x, y, counts) = (inputs[0], inputs[1], inputs[2]);
        let counts_float = builder.as_type(counts, dtype).unwrap();
        let value = match which {
            0 => {
                let product = binary(builder, BinaryOp::Multiply, x, y);
                let wave = if variant {
                    affine(builder, product, 0.5, 0.0)
                } else {
                    bump(builder, product)
                };
                binary(builder, BinaryOp::Add, wave, counts_float)
            }
            1 => {
                // y only: x gets no gradient in this branch.
                let square = binary(builder, BinaryOp::Multiply, y, y);
                affine(builder, square, -0.5, 1.0)
            }
            _ => {
                let square = binary(builder, BinaryOp::Multiply, x, x);
                let lifted = affine(builder, square, 1.0, 1.0);
                let bounded = bump(builder, y);
                let mixed = binary(builder, BinaryOp::Multiply, lifted, bounded);
                binary(builder, BinaryOp::Multiply, mixed, counts_float)
            }
        };
        vec![value, counts]
    })
}

/// A three-way cond over (x, y, counts = [1, 2, 3]): sum(x) > 0.5 takes branch 0, sum(x) <
/// -0.5 branch 1, else branch 2; the loss reads the float output twice and adds `x * y`
/// outside so every input also has a gradient from outside the cond. Of the parameters'
/// float dtype, as are the other losses here.
fn three_way_cond(variant: bool) -> Loss {
    Box::new(move |builder, parameters| {
        let dtype = dtype_of(builder, parameters[0]);
        let counts = builder.iota(DType::S64, &[3], None).unwrap();
        let clauses = vec![
            CondClause {
                predicate: Arc::new(sum_compared(dtype, BinaryOp::Greater, 0.5)),
                body: Arc::new(branch(dtype, 0, variant)),
            },
            CondClause {
                predicate: Arc::new(sum_compared(dtype, BinaryOp::Less, -0.5)),
                body: Arc::new(branch(dtype, 1, false)),
            },
        ];
        let chosen = builder
            .cond(
                &[parameters[0], parameters[1], counts],
                clauses,
                branch(dtype, 2, false),
            )
            .unwrap();
        let value = builder.elem(chosen, 0).unwrap();
        let again = builder.elem(chosen, 0).unwrap();
        let square = binary(builder, BinaryOp::Multiply, value, again);
        let outside = binary(builder, BinaryOp::Multiply, parameters[0], parameters[1]);
        binary(builder, BinaryOp::Add, square, outside)
    })
}

const PAIR: &[&[usize]] = &[&[3], &[3]];

#[test]
fn cond_gradients_follow_the_branch_that_ran() {
    let loss = three_way_cond(false);
    for x in [[0.9, 0.4, -0.2], [-0.8, -0.3, 0.1], [0.2, -0.1, 0.05]] {
        let values = vec![x.to_vec(), vec![0.3, -0.7, 1.1]];
        let failure = finite_difference_failure(PAIR, &loss, &loss, &values);
        assert!(failure.is_none(), "x {x:?}: {failure:?}");
    }
}

#[test]
fn a_wrong_cond_branch_gradient_is_rejected() {
    // Null arm: branch 0 differentiated as a different function than the one that ran.
    let values = vec![vec![0.9, 0.4, -0.2], vec![0.3, -0.7, 1.1]];
    let failure =
        finite_difference_failure(PAIR, &three_way_cond(false), &three_way_cond(true), &values);
    assert!(failure.is_some(), "null arm: the wrong branch rule passed");
}

fn float_vectors(count: usize, length: usize) -> impl Strategy<Value = Vec<Vec<f64>>> {
    prop::collection::vec(prop::collection::vec(-1.5f64..1.5, length), count)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn cond_gradients_match_finite_differences(values in float_vectors(2, 3)) {
        let loss = three_way_cond(false);
        let failure = finite_difference_failure(PAIR, &loss, &loss, &values);
        prop_assert!(failure.is_none(), "{failure:?}");
    }

    #[test]
    fn while_gradients_match_finite_differences(values in float_vectors(2, 3)) {
        let loss = growing_loop(false);
        let failure = finite_difference_failure(PAIR, &loss, &loss, &values);
        prop_assert!(failure.is_none(), "{failure:?}");
    }

    #[test]
    fn cond_inside_while_gradients_match_finite_differences(values in float_vectors(2, 3)) {
        let loss = loop_with_cond(false);
        let failure = finite_difference_failure(PAIR, &loss, &loss, &values);
        prop_assert!(failure.is_none(), "{failure:?}");
    }
}

/// The loops' state: x [3] and y [3] of the float `dtype`, an s64 step counter.
fn loop_state(dtype: DType) -> [(DType, &'static [usize]); 3] {
    [(dtype, &[3]), (dtype, &[3]), (DType::S64, &[])]
}

/// While `sum(x^2) < 4` and fewer than 6 steps: `x = 1.3 x + 0.2 bump(y)`, y unchanged, the
/// integer counter up by one (`variant`: 1.2 instead of 1.3 in the gradient's loop). The
/// iteration count depends on x (none when |x|^2 >= 4 to begin with).
fn growing_loop(variant: bool) -> Loss {
    Box::new(move |builder, parameters| {
        let dtype = dtype_of(builder, parameters[0]);
        let condition = nested(&loop_state(dtype), |builder, state| {
            let square = binary(builder, BinaryOp::Multiply, state[0], state[0]);
            let total = sum(builder, square);
            let four = scalar(builder, dtype, 4.0);
            let small = binary(builder, BinaryOp::Less, total, four);
            let six = scalar(builder, DType::S64, 6.0);
            let few = binary(builder, BinaryOp::Less, state[2], six);
            vec![binary(builder, BinaryOp::LogicalAnd, small, few)]
        });
        let body = nested(&loop_state(dtype), |builder, state| {
            let grown = affine(builder, state[0], if variant { 1.2 } else { 1.3 }, 0.0);
            let wave = bump(builder, state[1]);
            let nudge = affine(builder, wave, 0.2, 0.0);
            let next = binary(builder, BinaryOp::Add, grown, nudge);
            let one = scalar(builder, DType::S64, 1.0);
            vec![
                next,
                state[1],
                binary(builder, BinaryOp::Add, state[2], one),
            ]
        });
        let zero = scalar(builder, DType::S64, 0.0);
        let looped = builder
            .while_loop(&[parameters[0], parameters[1], zero], condition, body)
            .unwrap();
        let x = builder.elem(looped, 0).unwrap();
        let wave = bump(builder, x);
        binary(builder, BinaryOp::Multiply, wave, parameters[1])
    })
}

#[test]
fn while_gradients_replay_every_iteration() {
    let loss = growing_loop(false);
    // Several iterations, one, and none (|x|^2 >= 4 from the start).
    for x in [[0.1, -0.2, 0.15], [1.0, 1.0, -0.5], [1.5, -1.4, 0.3]] {
        let values = vec![x.to_vec(), vec![0.4, -0.6, 0.9]];
        let failure = finite_difference_failure(PAIR, &loss, &loss, &values);
        assert!(failure.is_none(), "x {x:?}: {failure:?}");
    }
}

#[test]
fn a_wrong_while_gradient_is_rejected() {
    let values = vec![vec![0.1, -0.2, 0.15], vec![0.4, -0.6, 0.9]];
    let failure =
        finite_difference_failure(PAIR, &growing_loop(false), &growing_loop(true), &values);
    assert!(failure.is_some(), "null arm: a wrong loop body passed");
}

/// Three steps of a loop whose body is a cond: `x = 0.8 x - 0.3 y` while sum(x) > 0, else `x =
/// bump(x) + y` (`variant`: + 0.5 y in the gradient's loop); y unchanged.
fn loop_with_cond(variant: bool) -> Loss {
    Box::new(move |builder, parameters| {
        let dtype = dtype_of(builder, parameters[0]);
        let inputs: &[(DType, &[usize])] = &[(dtype, &[3]), (dtype, &[3])];
        let positive = nested(inputs, |builder, state| {
            let total = sum(builder, state[0]);
            let zero = scalar(builder, dtype, 0.0);
            vec![binary(builder, BinaryOp::Greater, total, zero)]
        });
        let shrink = nested(inputs, |builder, state| {
            let scaled = affine(builder, state[0], 0.8, 0.0);
            let pulled = affine(builder, state[1], -0.3, 0.0);
            vec![binary(builder, BinaryOp::Add, scaled, pulled)]
        });
        let wave = nested(inputs, |builder, state| {
            let wave = bump(builder, state[0]);
            let pulled = affine(builder, state[1], if variant { 0.5 } else { 1.0 }, 0.0);
            vec![binary(builder, BinaryOp::Add, wave, pulled)]
        });
        let body = nested(&loop_state(dtype), |builder, state| {
            let clauses = vec![CondClause {
                predicate: Arc::new(positive),
                body: Arc::new(shrink),
            }];
            let chosen = builder.cond(&state[..2], clauses, wave).unwrap();
            let next = builder.elem(chosen, 0).unwrap();
            let one = scalar(builder, DType::S64, 1.0);
            vec![
                next,
                state[1],
                binary(builder, BinaryOp::Add, state[2], one),
            ]
        });
        let condition = nested(&loop_state(dtype), |builder, state| {
            let three = scalar(builder, DType::S64, 3.0);
            vec![binary(builder, BinaryOp::Less, state[2], three)]
        });
        let zero = scalar(builder, DType::S64, 0.0);
        let looped = builder
            .while_loop(&[parameters[0], parameters[1], zero], condition, body)
            .unwrap();
        let x = builder.elem(looped, 0).unwrap();
        binary(builder, BinaryOp::Multiply, x, x)
    })
}

#[test]
fn cond_inside_while_gradients_match_finite_differences_on_fixed_values() {
    let loss = loop_with_cond(false);
    check_against_finite_differences(PAIR, &loss);
    let failure = finite_difference_failure(
        PAIR,
        &loop_with_cond(false),
        &loop_with_cond(true),
        &deterministic_values(PAIR),
    );
    assert!(
        failure.is_some(),
        "null arm: a wrong branch inside the loop passed"
    );
}

/// A block whose default gives ((a^2 + 1) * b, a - b, the integer counts); the loss reads
/// the first output twice and the second once (`variant`: the gradient's block uses a^2 / 2
/// + 1).
fn blocked(variant: bool) -> Loss {
    Box::new(move |builder, parameters| {
        let dtype = dtype_of(builder, parameters[0]);
        let default = nested(&cond_inputs(dtype), |builder, inputs| {
            let (a, b) = (inputs[0], inputs[1]);
            let square = binary(builder, BinaryOp::Multiply, a, a);
            let lifted = affine(builder, square, if variant { 0.5 } else { 1.0 }, 1.0);
            let product = binary(builder, BinaryOp::Multiply, lifted, b);
            let difference = binary(builder, BinaryOp::Subtract, a, b);
            vec![product, difference, inputs[2]]
        });
        let counts = builder.iota(DType::S64, &[3], None).unwrap();
        let block = builder
            .block(
                "lifted_product",
                &[parameters[0], parameters[1], counts],
                default,
            )
            .unwrap();
        let (first, again, second) = (
            builder.elem(block, 0).unwrap(),
            builder.elem(block, 0).unwrap(),
            builder.elem(block, 1).unwrap(),
        );
        let square = binary(builder, BinaryOp::Multiply, first, again);
        let wave = bump(builder, second);
        binary(builder, BinaryOp::Add, square, wave)
    })
}

#[test]
fn block_gradients_flow_through_the_default_graph() {
    check_against_finite_differences(PAIR, blocked(false));
    let failure = finite_difference_failure(
        PAIR,
        &blocked(false),
        &blocked(true),
        &deterministic_values(PAIR),
    );
    assert!(failure.is_some(), "null arm: a wrong default passed");
}

#[test]
fn block_gradients_are_inlined_next_to_the_forward_block() {
    let mut builder = GraphBuilder::new();
    let parameters = [
        builder.parameter(DType::F64, &[3]).unwrap(),
        builder.parameter(DType::F64, &[3]).unwrap(),
    ];
    let value = blocked(false)(&mut builder, &parameters);
    let loss = sum(&mut builder, value);
    let gradient = gradients(&mut builder, loss, &parameters).unwrap();
    let graph = builder.finish(&gradient).unwrap();
    let blocks = graph
        .nodes()
        .iter()
        .filter(|node| matches!(node.op, Op::Block { .. }))
        .count();
    assert_eq!(
        blocks, 1,
        "only the forward block; its gradient is plain nodes"
    );
}

/// `x * stop_grad(reducer(x))`-style losses: the reduction is a constant to the gradient.
fn stopped_sum_times(builder: &mut GraphBuilder, x: NodeId, reduced: NodeId) -> NodeId {
    let stopped = builder.metadata(reduced, STOP_GRAD).unwrap();
    binary(builder, BinaryOp::Multiply, x, stopped)
}

/// A reducer function: `max(a, b)` on f64 scalars.
fn max_reducer() -> Graph {
    nested(
        &[(DType::F64, &[]), (DType::F64, &[])],
        |builder, inputs| vec![binary(builder, BinaryOp::Max, inputs[0], inputs[1])],
    )
}

/// The three ops Nx does not differentiate, applied to `x` [4].
fn not_differentiable(builder: &mut GraphBuilder, x: NodeId, which: usize) -> NodeId {
    let init = scalar(builder, DType::F64, -10.0);
    match which {
        0 => builder
            .reduce_with(x, init, max_reducer(), None, true)
            .unwrap(),
        1 => builder
            .window_reduce_with(x, init, max_reducer(), &[4], WindowOptions::default())
            .unwrap(),
        _ => builder
            .window(WindowOp::Product, x, &[4], WindowOptions::default())
            .unwrap(),
    }
}

#[test]
fn ops_nx_does_not_differentiate_are_named_errors_and_stop_grad_helps() {
    let runner = Runner::new();
    let values = [0.5, -2.0, 3.0, 1.5];
    for (which, name) in ["reduce", "window_reduce", "window_product"]
        .into_iter()
        .enumerate()
    {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F64, &[4]).unwrap();
        let reduced = not_differentiable(&mut builder, x, which);
        let plain = binary(&mut builder, BinaryOp::Multiply, x, reduced);
        let loss = sum(&mut builder, plain);
        let error = gradients(&mut builder, loss, &[x]).unwrap_err().to_string();
        assert!(
            error.contains(name) && error.contains("stop_grad") && error.contains("Nx"),
            "{error}"
        );
        assert!(!error.contains("yet"), "not a missing rule: {error}");

        let stopped = stopped_sum_times(&mut builder, x, reduced);
        let loss = sum(&mut builder, stopped);
        let gradient = gradients(&mut builder, loss, &[x]).unwrap();
        let graph = builder.finish(&[gradient[0], reduced]).unwrap();
        let outputs = runner.run(&graph, &[runner.tensor(&[4], &values)]);
        let gradient: Vec<f64> = outputs[0].to_vec().unwrap();
        let constant: Vec<f64> = outputs[1].to_vec().unwrap();
        // d/dx sum(x * c) with c held constant is c (broadcast): max(x) = 3 for reduce and
        // window_reduce, the product -4.5 for window_product.
        let expected = if which == 2 { -4.5 } else { 3.0 };
        assert_eq!(constant, [expected], "{name}");
        assert_eq!(gradient, [expected; 4], "{name}");
        assert_ne!(gradient, values, "null arm: not the identity");
    }
}

const SCALAR_EMPTY_VECTOR: &[&[usize]] = &[&[], &[0, 3], &[3]];

/// A cond over (a scalar s, an empty e [0, 3], a vector v [3]) whose predicate reads s, fed
/// to a block; the loss sums both outputs.
fn scalar_and_empty_through_cond_and_block(
    builder: &mut GraphBuilder,
    parameters: &[NodeId],
) -> NodeId {
    let dtype = dtype_of(builder, parameters[0]);
    let types: &[(DType, &[usize])] = &[(dtype, &[]), (dtype, &[0, 3]), (dtype, &[3])];
    let positive = nested(types, |builder, inputs| {
        let zero = scalar(builder, dtype, 0.0);
        vec![binary(builder, BinaryOp::Greater, inputs[0], zero)]
    });
    let scaled = nested(types, |builder, inputs| {
        let (s, e, v) = (inputs[0], inputs[1], inputs[2]);
        vec![
            binary(builder, BinaryOp::Multiply, s, v),
            binary(builder, BinaryOp::Multiply, e, v),
        ]
    });
    let damped = nested(types, |builder, inputs| {
        let (s, e, v) = (inputs[0], inputs[1], inputs[2]);
        let lifted = {
            let square = binary(builder, BinaryOp::Multiply, s, s);
            affine(builder, square, 1.0, 1.0)
        };
        vec![binary(builder, BinaryOp::Divide, v, lifted), e]
    });
    let clauses = vec![CondClause {
        predicate: Arc::new(positive),
        body: Arc::new(scaled),
    }];
    let chosen = builder.cond(parameters, clauses, damped).unwrap();
    let (vector, empty) = (
        builder.elem(chosen, 0).unwrap(),
        builder.elem(chosen, 1).unwrap(),
    );
    let default = nested(&[(dtype, &[3]), (dtype, &[0, 3])], |builder, inputs| {
        let square = binary(builder, BinaryOp::Multiply, inputs[0], inputs[0]);
        let total = sum(builder, inputs[1]);
        vec![binary(builder, BinaryOp::Add, square, total)]
    });
    let block = builder
        .block("square_plus_empty_sum", &[vector, empty], default)
        .unwrap();
    builder.elem(block, 0).unwrap()
}

#[test]
fn rank_zero_and_empty_values_pass_through_cond_and_block() {
    for s in [0.7, -0.4] {
        let mut values = deterministic_values(SCALAR_EMPTY_VECTOR);
        values[0] = vec![s];
        let loss = scalar_and_empty_through_cond_and_block;
        let failure = finite_difference_failure(SCALAR_EMPTY_VECTOR, &loss, &loss, &values);
        assert!(failure.is_none(), "s {s}: {failure:?}");
    }
}

/// While `x < 3`: `x = 1.5 x + 0.5` on a rank-0 state (3 iterations from 0.2, none from 3.5).
fn scalar_loop(builder: &mut GraphBuilder, parameters: &[NodeId]) -> NodeId {
    let dtype = dtype_of(builder, parameters[0]);
    let state: &[(DType, &[usize])] = &[(dtype, &[])];
    let condition = nested(state, |builder, x| {
        let three = scalar(builder, dtype, 3.0);
        vec![binary(builder, BinaryOp::Less, x[0], three)]
    });
    let body = nested(state, |builder, x| vec![affine(builder, x[0], 1.5, 0.5)]);
    let looped = builder.while_loop(parameters, condition, body).unwrap();
    let x = builder.elem(looped, 0).unwrap();
    binary(builder, BinaryOp::Multiply, x, x)
}

#[test]
fn a_rank_zero_loop_state_gets_its_gradient() {
    for x in [0.2, 3.5] {
        let failure = finite_difference_failure(&[&[]], &scalar_loop, &scalar_loop, &[vec![x]]);
        assert!(failure.is_none(), "x {x}: {failure:?}");
    }
}

/// Tolerances of the f32 and f16 instances, relative to `1 + |f64 value|`: 16 eps of the type
/// (f32: 1.9e-6; f16: 1.6e-2), against measured worst cases of 1.7e-7 (f32) and 7.6e-4 (f16)
/// on lavapipe over these cases (loops of up to five steps replayed by the rematerialisation,
/// squared losses).
const LOW_PRECISION: [(DType, f64); 2] = [(DType::F32, 1.9e-6), (DType::F16, 1.6e-2)];

/// One fixed-value case: (name, shapes, loss, values).
type Case = (&'static str, Vec<&'static [usize]>, Loss, Vec<Vec<f64>>);

/// Every fixed-value case of the rules above.
fn low_precision_cases() -> Vec<Case> {
    let y = vec![0.3, -0.7, 1.1];
    let mut cases: Vec<Case> = Vec::new();
    for x in [[0.9, 0.4, -0.2], [-0.8, -0.3, 0.1], [0.2, -0.1, 0.05]] {
        cases.push((
            "cond",
            PAIR.to_vec(),
            three_way_cond(false),
            vec![x.to_vec(), y.clone()],
        ));
    }
    for x in [[0.1, -0.2, 0.15], [1.0, 1.0, -0.5], [1.5, -1.4, 0.3]] {
        let values = vec![x.to_vec(), vec![0.4, -0.6, 0.9]];
        cases.push(("while", PAIR.to_vec(), growing_loop(false), values));
    }
    let values = deterministic_values(PAIR);
    cases.push((
        "cond inside while",
        PAIR.to_vec(),
        loop_with_cond(false),
        values.clone(),
    ));
    cases.push(("block", PAIR.to_vec(), blocked(false), values));
    for s in [0.7, -0.4] {
        let mut values = deterministic_values(SCALAR_EMPTY_VECTOR);
        values[0] = vec![s];
        let loss: Loss = Box::new(scalar_and_empty_through_cond_and_block);
        cases.push((
            "rank 0 and empty",
            SCALAR_EMPTY_VECTOR.to_vec(),
            loss,
            values,
        ));
    }
    for x in [0.2, 3.5] {
        let loss: Loss = Box::new(scalar_loop);
        cases.push(("rank-0 loop", vec![&[]], loss, vec![vec![x]]));
    }
    cases
}

#[test]
fn f32_and_f16_control_flow_gradients_match_f64() {
    for (dtype, tolerance) in LOW_PRECISION {
        for (name, shapes, loss, values) in low_precision_cases() {
            let failure = low_precision_failure(dtype, &shapes, &loss, &loss, &values, tolerance);
            assert!(failure.is_none(), "{name} {values:?}: {failure:?}");
        }
    }
}

/// Null arm: each rule's wrong variant in f32 (f16) against the right graph in f64 is
/// rejected at the same tolerance.
#[test]
fn wrong_f32_and_f16_control_flow_gradients_are_rejected() {
    let values = vec![vec![0.9, 0.4, -0.2], vec![0.3, -0.7, 1.1]];
    let loop_values = vec![vec![0.1, -0.2, 0.15], vec![0.4, -0.6, 0.9]];
    let deterministic = deterministic_values(PAIR);
    for (dtype, tolerance) in LOW_PRECISION {
        for (name, right, wrong, values) in [
            ("cond", three_way_cond(false), three_way_cond(true), &values),
            (
                "while",
                growing_loop(false),
                growing_loop(true),
                &loop_values,
            ),
            (
                "cond inside while",
                loop_with_cond(false),
                loop_with_cond(true),
                &deterministic,
            ),
            ("block", blocked(false), blocked(true), &deterministic),
        ] {
            let failure = low_precision_failure(dtype, PAIR, &wrong, &right, values, tolerance);
            assert!(failure.is_some(), "null arm: {dtype} {name} passed");
        }
    }
}

/// A complex state through `while` and then `cond`: z = re + i im; three steps of
/// `z = z w + 0.1` (w = 0.9 + 0.3i); then `z^2` when sum(real(z)) > 0, else `conj(z) z_0` (a
/// conjugating branch that also reads the initial value); the loss reads both parts
/// (`conjugate_branch` false: `z z_0` instead, for the null arm).
fn complex_state(conjugate_branch: bool) -> Loss {
    Box::new(move |builder, parameters| {
        let z = complex_of(builder, parameters[0], parameters[1]);
        let complex_scalar = |builder: &mut GraphBuilder, re: f64, im: f64| {
            let bytes = [re.to_le_bytes(), im.to_le_bytes()].concat();
            builder.constant_bytes(DType::C128, &[], &bytes).unwrap()
        };
        let state: &[(DType, &[usize])] = &[(DType::C128, &[3]), (DType::S64, &[])];
        let body = nested(state, |builder, state| {
            let w = complex_scalar(builder, 0.9, 0.3);
            let offset = complex_scalar(builder, 0.1, 0.0);
            let turned = binary(builder, BinaryOp::Multiply, state[0], w);
            let one = scalar(builder, DType::S64, 1.0);
            vec![
                binary(builder, BinaryOp::Add, turned, offset),
                binary(builder, BinaryOp::Add, state[1], one),
            ]
        });
        let condition = nested(state, |builder, state| {
            let three = scalar(builder, DType::S64, 3.0);
            vec![binary(builder, BinaryOp::Less, state[1], three)]
        });
        let zero = scalar(builder, DType::S64, 0.0);
        let looped = builder.while_loop(&[z, zero], condition, body).unwrap();
        let stepped = builder.elem(looped, 0).unwrap();
        let pair: &[(DType, &[usize])] = &[(DType::C128, &[3]), (DType::C128, &[3])];
        let positive = nested(pair, |builder, inputs| {
            let real = builder.unary(UnaryOp::Real, inputs[0]).unwrap();
            let total = sum(builder, real);
            let zero = scalar(builder, DType::F64, 0.0);
            vec![binary(builder, BinaryOp::Greater, total, zero)]
        });
        let squared = nested(pair, |builder, inputs| {
            vec![binary(builder, BinaryOp::Multiply, inputs[0], inputs[0])]
        });
        let mixed = nested(pair, |builder, inputs| {
            let first = if conjugate_branch {
                builder.unary(UnaryOp::Conjugate, inputs[0]).unwrap()
            } else {
                inputs[0]
            };
            vec![binary(builder, BinaryOp::Multiply, first, inputs[1])]
        });
        let clauses = vec![CondClause {
            predicate: Arc::new(positive),
            body: Arc::new(squared),
        }];
        let chosen = builder.cond(&[stepped, z], clauses, mixed).unwrap();
        let out = builder.elem(chosen, 0).unwrap();
        let real = builder.unary(UnaryOp::Real, out).unwrap();
        let imag = builder.unary(UnaryOp::Imag, out).unwrap();
        let square = binary(builder, BinaryOp::Multiply, real, real);
        binary(builder, BinaryOp::Add, square, imag)
    })
}

#[test]
fn complex_loop_and_cond_states_get_their_gradients() {
    let loss = complex_state(true);
    // sum(real(z)) after the loop: positive for the first values, negative for the second.
    for re in [[0.8, 0.5, -0.2], [-1.2, -0.9, 0.3]] {
        let values = vec![re.to_vec(), vec![0.3, -0.4, 0.6]];
        let failure = finite_difference_failure(PAIR, &loss, &loss, &values);
        assert!(failure.is_none(), "re {re:?}: {failure:?}");
    }
    // Null arm: the conjugating branch's gradient against a branch without the conjugation.
    let values = vec![vec![-1.2, -0.9, 0.3], vec![0.3, -0.4, 0.6]];
    let failure = finite_difference_failure(PAIR, &complex_state(false), &loss, &values);
    assert!(failure.is_some(), "null arm: a missing conjugation passed");
}
