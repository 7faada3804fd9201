//! Reverse-mode gradients against central finite differences, in f64 on the device.
//!
//! Random graphs are built from a menu of differentiable steps (unary functions, binary ops
//! with broadcasting, views, reductions, dot); the loss is the sum of the last value. The
//! gradient graph's result for every parameter element is compared with
//! (loss(x + h) - loss(x - h)) / 2h computed by running the forward graph. Null arms show the
//! comparison rejects a wrong derivative.
//!
//! Each conv option (strides, padding, dilations, feature and batch groups, permutations)
//! and each data-movement, indexing, scan, window and sort family has its own check on fixed
//! values (ties and repeated indices placed on purpose where the rule defines them), a
//! property over random values, and a null arm.

mod common;
#[path = "common/finite_differences.rs"]
mod finite_differences;

use finite_differences::{
    Runner, check_against_finite_differences, deterministic_values, finite_difference_failure,
    loss_graph,
};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{DotAxes, Graph, GraphBuilder, IndexedUpdate, NodeId, STOP_GRAD, gradients};
use nxvk_kernels::sort::Direction;
use nxvk_kernels::{
    BinaryOp, ConvOptions, ReduceOp, ScanOp, TieBreak, UnaryOp, WindowOp, WindowOptions,
};
use proptest::prelude::*;

/// Parameter shapes of every random graph: a matrix, a vector that broadcasts against its rows,
/// and a matrix to multiply it with.
const SHAPES: [&[usize]; 3] = [&[2, 3], &[3], &[3, 2]];

/// One step of a random graph, applied to the current value `v` (shape [2, 3] throughout).
#[derive(Debug, Clone, Copy)]
enum Step {
    Unary(UnaryOp),
    /// `v op p1` with the vector parameter broadcast over rows.
    WithVector(BinaryOp),
    /// `v / (p1^2 + 1)`: division kept away from zero.
    SafeDivide,
    /// `log(v^2 + 1)`.
    SafeLog,
    /// `sqrt(v^2 + 1)`.
    SafeSqrt,
    /// `(v^2 + 1) ^ p1`: pow with a positive base.
    SafePow,
    /// transpose to [3, 2], add p2, transpose back.
    TransposeAddMatrix,
    /// `v - reduce(v, axis 1)` broadcast back (sum or max).
    RowReduce(ReduceOp),
    /// `dot(v, p2)` [2, 2], then `dot(that, p0)` back to [2, 3].
    DotRoundTrip,
    /// reshape to [3, 2] and back through a different grouping: [6] then [2, 3].
    Reshapes,
}

fn steps() -> impl Strategy<Value = Step> {
    use UnaryOp as U;
    prop_oneof![
        prop::sample::select(vec![
            U::Exp,
            U::Tanh,
            U::Sigmoid,
            U::Sin,
            U::Cos,
            U::Atan,
            U::Negate,
            U::Asinh,
            U::Erf,
        ])
        .prop_map(Step::Unary),
        prop::sample::select(vec![
            BinaryOp::Add,
            BinaryOp::Subtract,
            BinaryOp::Multiply,
            BinaryOp::Max,
            BinaryOp::Min,
            BinaryOp::Atan2,
        ])
        .prop_map(Step::WithVector),
        Just(Step::SafeDivide),
        Just(Step::SafeLog),
        Just(Step::SafeSqrt),
        Just(Step::SafePow),
        Just(Step::TransposeAddMatrix),
        prop::sample::select(vec![ReduceOp::Sum, ReduceOp::ReduceMax]).prop_map(Step::RowReduce),
        Just(Step::DotRoundTrip),
        Just(Step::Reshapes),
    ]
}

fn square_plus_one(builder: &mut GraphBuilder, value: NodeId) -> NodeId {
    let square = builder.binary(BinaryOp::Multiply, value, value).unwrap();
    let one = builder.constant(DType::F64, 1.0).unwrap();
    builder.binary(BinaryOp::Add, square, one).unwrap()
}

fn matmul(builder: &mut GraphBuilder, left: NodeId, right: NodeId) -> NodeId {
    let axes = DotAxes::matrix_product();
    builder.dot(left, right, axes).unwrap()
}

fn apply(builder: &mut GraphBuilder, step: Step, value: NodeId, parameters: &[NodeId]) -> NodeId {
    let (matrix, vector, other) = (parameters[0], parameters[1], parameters[2]);
    match step {
        Step::Unary(op) => builder.unary(op, value).unwrap(),
        Step::WithVector(op) => builder.binary(op, value, vector).unwrap(),
        Step::SafeDivide => {
            let denominator = square_plus_one(builder, vector);
            builder
                .binary(BinaryOp::Divide, value, denominator)
                .unwrap()
        }
        Step::SafeLog => {
            let shifted = square_plus_one(builder, value);
            builder.unary(UnaryOp::Log, shifted).unwrap()
        }
        Step::SafeSqrt => {
            let shifted = square_plus_one(builder, value);
            builder.unary(UnaryOp::Sqrt, shifted).unwrap()
        }
        Step::SafePow => {
            let base = square_plus_one(builder, value);
            builder.binary(BinaryOp::Pow, base, vector).unwrap()
        }
        Step::TransposeAddMatrix => {
            let transposed = builder.transpose(value, &[1, 0]).unwrap();
            let sum = builder.binary(BinaryOp::Add, transposed, other).unwrap();
            builder.transpose(sum, &[1, 0]).unwrap()
        }
        Step::RowReduce(op) => {
            let reduced = builder
                .reduce(op, value, Some(&[1]), true, TieBreak::Low)
                .unwrap();
            builder.binary(BinaryOp::Subtract, value, reduced).unwrap()
        }
        Step::DotRoundTrip => {
            let product = matmul(builder, value, other);
            matmul(builder, product, matrix)
        }
        Step::Reshapes => {
            let flat = builder.reshape(value, &[6]).unwrap();
            let regrouped = builder.reshape(flat, &[3, 2]).unwrap();
            builder.reshape(regrouped, &[2, 3]).unwrap()
        }
    }
}

/// The forward graph (output: the loss) and the gradient graph (outputs: the loss, then the
/// gradient of each parameter).
fn graphs(steps: &[Step]) -> (Graph, Graph) {
    let value_of = |builder: &mut GraphBuilder, parameters: &[NodeId]| {
        steps.iter().fold(parameters[0], |value, &step| {
            apply(builder, step, value, parameters)
        })
    };
    (
        loss_graph(&SHAPES, &value_of, false),
        loss_graph(&SHAPES, &value_of, true),
    )
}

/// Largest violation of |analytic - numeric| <= 1e-6 + 1e-5 |numeric| over all parameter
/// elements, as (excess, parameter, element); `None` when all agree.
fn worst_disagreement(
    runner: &Runner,
    forward: &Graph,
    gradient_graph: &Graph,
    values: &[Vec<f64>],
) -> Option<(f64, usize, usize)> {
    let tensors: Vec<Tensor> = values
        .iter()
        .zip(SHAPES)
        .map(|(data, shape)| runner.tensor(shape, data))
        .collect();
    let outputs = runner.run(gradient_graph, &tensors);
    let mut worst: Option<(f64, usize, usize)> = None;
    for (parameter, data) in values.iter().enumerate() {
        let analytic: Vec<f64> = outputs[1 + parameter].to_vec().unwrap();
        for element in 0..data.len() {
            let step = 1e-5 * data[element].abs().max(1.0);
            let loss_at = |offset: f64| {
                let mut shifted = values.to_vec();
                shifted[parameter][element] += offset;
                let inputs: Vec<Tensor> = shifted
                    .iter()
                    .zip(SHAPES)
                    .map(|(data, shape)| runner.tensor(shape, data))
                    .collect();
                runner.run(forward, &inputs)[0].to_vec::<f64>().unwrap()[0]
            };
            let numeric = (loss_at(step) - loss_at(-step)) / (2.0 * step);
            let excess = (analytic[element] - numeric).abs() - (1e-6 + 1e-5 * numeric.abs());
            if excess > 0.0 && worst.is_none_or(|(previous, _, _)| excess > previous) {
                worst = Some((excess, parameter, element));
            }
        }
    }
    worst
}

fn parameter_values() -> impl Strategy<Value = Vec<Vec<f64>>> {
    SHAPES
        .iter()
        .map(|shape| prop::collection::vec(-1.5f64..1.5, shape.iter().product::<usize>()))
        .collect::<Vec<_>>()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn gradients_match_finite_differences(
        steps in prop::collection::vec(steps(), 1..5),
        values in parameter_values(),
    ) {
        let runner = Runner::new();
        let (forward, gradient_graph) = graphs(&steps);
        let worst = worst_disagreement(&runner, &forward, &gradient_graph, &values);
        prop_assert!(worst.is_none(), "steps {steps:?}: worst disagreement {worst:?}");
    }
}

/// Null arm: the gradient of `sin` checked against the loss of `cos` must be rejected.
#[test]
fn a_wrong_derivative_is_rejected() {
    let runner = Runner::new();
    let (_, sin_gradients) = graphs(&[Step::Unary(UnaryOp::Sin)]);
    let (cos_forward, _) = graphs(&[Step::Unary(UnaryOp::Cos)]);
    let values = vec![
        vec![0.3, -0.7, 1.1, 0.2, -1.3, 0.9],
        vec![0.5; 3],
        vec![0.25; 6],
    ];
    assert!(worst_disagreement(&runner, &cos_forward, &sin_gradients, &values).is_some());
}

#[test]
fn batched_dot_with_permuted_contraction_has_the_right_gradients() {
    // left [batch 2, k 3, m 2], right [k 3, batch 2, n 4]: batch axes 0/1, contract 1/0.
    check_against_finite_differences(&[&[2, 3, 2], &[3, 2, 4]], |builder, parameters| {
        let axes = DotAxes {
            contract_left: vec![1],
            batch_left: vec![0],
            contract_right: vec![0],
            batch_right: vec![1],
        };
        let product = builder.dot(parameters[0], parameters[1], axes).unwrap();
        builder.unary(UnaryOp::Sin, product).unwrap()
    });
}

fn conv_loss(options: ConvOptions) -> impl Fn(&mut GraphBuilder, &[NodeId]) -> NodeId {
    move |builder, parameters| {
        let output = builder
            .conv(parameters[0], parameters[1], options.clone())
            .unwrap();
        builder.unary(UnaryOp::Sin, output).unwrap()
    }
}

#[test]
fn conv_gradients_with_strides_and_uneven_padding() {
    let options = ConvOptions {
        strides: vec![2, 1],
        padding: vec![(1, 0), (1, 2)],
        ..ConvOptions::default()
    };
    check_against_finite_differences(&[&[2, 2, 5, 4], &[3, 2, 3, 2]], conv_loss(options));
}

#[test]
fn conv_gradients_with_kernel_dilation_and_cropping() {
    let options = ConvOptions {
        strides: vec![1, 2],
        padding: vec![(2, -1), (0, 1)],
        kernel_dilation: vec![2, 1],
        ..ConvOptions::default()
    };
    check_against_finite_differences(&[&[1, 3, 7, 5], &[2, 3, 2, 3]], conv_loss(options));
}

#[test]
fn reverse_passes_the_gradient_back_reversed() {
    check_against_finite_differences(&[&[2, 3], &[3]], |builder, parameters| {
        let reversed = builder.reverse(parameters[0], &[0, 1]).unwrap();
        let weighted = builder
            .binary(BinaryOp::Multiply, reversed, parameters[1])
            .unwrap();
        builder.unary(UnaryOp::Tanh, weighted).unwrap()
    });
}

#[test]
fn grouped_conv_gradients_match_finite_differences() {
    // 4 channels in 2 groups, 6 filters (3 per group), with strides and padding.
    let options = ConvOptions {
        strides: vec![2],
        padding: vec![(1, 0)],
        feature_group_size: 2,
        ..ConvOptions::default()
    };
    check_against_finite_differences(&[&[2, 4, 5], &[6, 2, 3]], conv_loss(options));
    // 2-d, 3 groups of 2 channels, one filter each, with kernel dilation and padding.
    let options = ConvOptions {
        padding: vec![(0, 1), (1, 1)],
        kernel_dilation: vec![1, 2],
        feature_group_size: 3,
        ..ConvOptions::default()
    };
    check_against_finite_differences(&[&[1, 6, 5, 4], &[3, 2, 2, 2]], conv_loss(options));
}

fn input_dilated(dilation: usize) -> ConvOptions {
    ConvOptions {
        strides: vec![1, 2],
        padding: vec![(1, -1), (2, 0)],
        input_dilation: vec![dilation, 1],
        feature_group_size: 2,
        ..ConvOptions::default()
    }
}

/// Channels-last convolutions (Axon's layout): input [batch, spatial..., channels], kernel
/// [spatial..., channels, filters], output [batch, spatial..., filters], plus a rotation.
#[test]
fn permuted_conv_gradients_match_finite_differences() {
    let channels_last = ConvOptions {
        strides: vec![2, 1],
        padding: vec![(1, 0), (0, 1)],
        input_permutation: Some(vec![0, 3, 1, 2]),
        kernel_permutation: Some(vec![3, 2, 0, 1]),
        output_permutation: Some(vec![0, 3, 1, 2]),
        ..ConvOptions::default()
    };
    check_against_finite_differences(&[&[2, 5, 4, 3], &[2, 2, 3, 4]], conv_loss(channels_last));
    let rotated = ConvOptions {
        input_permutation: Some(vec![1, 2, 0]),
        kernel_permutation: Some(vec![2, 0, 1]),
        output_permutation: Some(vec![2, 0, 1]),
        feature_group_size: 2,
        ..ConvOptions::default()
    };
    check_against_finite_differences(&[&[5, 2, 4], &[2, 3, 4]], conv_loss(rotated));
}

/// Null arm for permutations: a kernel read with its spatial axes swapped is a different
/// function, and its gradient must be rejected.
#[test]
fn a_wrong_permuted_conv_gradient_is_rejected() {
    let reading = |kernel_permutation: Vec<usize>| ConvOptions {
        input_permutation: Some(vec![0, 3, 1, 2]),
        kernel_permutation: Some(kernel_permutation),
        ..ConvOptions::default()
    };
    let failure = finite_difference_failure(
        &[&[1, 4, 4, 2], &[2, 2, 2, 3]],
        &conv_loss(reading(vec![3, 2, 0, 1])),
        &conv_loss(reading(vec![3, 2, 1, 0])),
        &deterministic_values(&[&[1, 4, 4, 2], &[2, 2, 2, 3]]),
    );
    assert!(
        failure.is_some(),
        "null arm: the kernel's reading must matter"
    );
}

#[test]
fn input_dilated_conv_gradients_match_finite_differences() {
    check_against_finite_differences(&[&[2, 4, 3, 4], &[2, 2, 2, 3]], conv_loss(input_dilated(2)));
    let failure = finite_difference_failure(
        &[&[2, 4, 3, 4], &[2, 2, 2, 3]],
        &conv_loss(input_dilated(2)),
        &conv_loss(input_dilated(1)),
        &deterministic_values(&[&[2, 4, 3, 4], &[2, 2, 2, 3]]),
    );
    assert!(failure.is_some(), "null arm: the dilation must matter");
}

/// Null arm for groups: the gradient of the grouped conv checked against a forward pass that
/// sees the channel groups in the other order must be rejected.
#[test]
fn a_wrong_grouped_conv_gradient_is_rejected() {
    let grouped = ConvOptions {
        feature_group_size: 2,
        ..ConvOptions::default()
    };
    let forward = move |builder: &mut GraphBuilder, parameters: &[NodeId]| {
        let swapped = builder.reverse(parameters[0], &[1]).unwrap();
        conv_loss(grouped.clone())(builder, &[swapped, parameters[1]])
    };
    let gradient = conv_loss(ConvOptions {
        feature_group_size: 2,
        ..ConvOptions::default()
    });
    let failure = finite_difference_failure(
        &[&[1, 4, 4], &[2, 2, 2]],
        &forward,
        &gradient,
        &deterministic_values(&[&[1, 4, 4], &[2, 2, 2]]),
    );
    assert!(
        failure.is_some(),
        "null arm: groups must see their own channels"
    );
}

fn batch_grouped(reversed_batch: bool) -> Loss {
    Box::new(move |builder, parameters| {
        let input = if reversed_batch {
            builder.reverse(parameters[0], &[0]).unwrap()
        } else {
            parameters[0]
        };
        let options = ConvOptions {
            padding: vec![(1, 0)],
            batch_group_size: 2,
            ..ConvOptions::default()
        };
        conv_loss(options)(builder, &[input, parameters[1]])
    })
}

/// Batch groups (4 images in 2 blocks, 6 filters: 3 per block), and a null arm that sees the
/// blocks the other way round.
#[test]
fn batch_grouped_conv_gradients_match_finite_differences() {
    check_against_finite_differences(&[&[4, 2, 5], &[6, 2, 3]], batch_grouped(false));
    // 2-d, 3 blocks, with strides and both dilations.
    let options = ConvOptions {
        strides: vec![1, 2],
        input_dilation: vec![1, 2],
        kernel_dilation: vec![2, 1],
        batch_group_size: 3,
        ..ConvOptions::default()
    };
    check_against_finite_differences(&[&[3, 2, 5, 4], &[3, 2, 2, 2]], conv_loss(options));
    let failure = finite_difference_failure(
        &[&[4, 2, 5], &[6, 2, 3]],
        &*batch_grouped(true),
        &*batch_grouped(false),
        &deterministic_values(&[&[4, 2, 5], &[6, 2, 3]]),
    );
    assert!(
        failure.is_some(),
        "null arm: the blocks must meet their own filters"
    );
}

#[test]
fn stop_grad_blocks_the_gradient() {
    let runner = Runner::new();
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F64, &[3]).unwrap();
    let stopped = builder.metadata(x, STOP_GRAD).unwrap();
    let product = builder.binary(BinaryOp::Multiply, x, stopped).unwrap();
    let loss = builder
        .reduce(ReduceOp::Sum, product, None, false, TieBreak::Low)
        .unwrap();
    let gradient = gradients(&mut builder, loss, &[x]).unwrap();
    let graph = builder.finish(&gradient).unwrap();
    let values = [0.5, -2.0, 3.0];
    let result: Vec<f64> = runner.run(&graph, &[runner.tensor(&[3], &values)])[0]
        .to_vec()
        .unwrap();
    // d/dx (x * c) with c = x held constant is c, not 2x.
    assert_eq!(result, values);
}

#[test]
fn gradient_requests_that_cannot_be_answered_are_errors() {
    let mut builder = GraphBuilder::new();
    let x = builder.parameter(DType::F32, &[4]).unwrap();
    let counts = builder.parameter(DType::S32, &[4]).unwrap();
    let pooled = builder
        .window(WindowOp::Product, x, &[2], WindowOptions::default())
        .unwrap();
    let loss = builder
        .reduce(ReduceOp::Sum, pooled, None, false, TieBreak::Low)
        .unwrap();
    let unsupported = gradients(&mut builder, loss, &[x]).unwrap_err().to_string();
    assert!(unsupported.contains("window_product"), "{unsupported}");
    let integer = gradients(&mut builder, loss, &[counts])
        .unwrap_err()
        .to_string();
    assert!(integer.contains("floating-point"), "{integer}");
    let vector_loss = gradients(&mut builder, x, &[x]).unwrap_err().to_string();
    assert!(vector_loss.contains("one-element"), "{vector_loss}");
}

/// Nx's tie rule for max/min: the operand equal to the result takes the gradient, and equal
/// operands share it (so `max(x, 0)` passes half at exactly 0).
#[test]
fn max_and_min_split_the_gradient_on_ties() {
    let runner = Runner::new();
    for op in [BinaryOp::Max, BinaryOp::Min] {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F64, &[4]).unwrap();
        let y = builder.parameter(DType::F64, &[4]).unwrap();
        let extreme = builder.binary(op, x, y).unwrap();
        let loss = builder
            .reduce(ReduceOp::Sum, extreme, None, false, TieBreak::Low)
            .unwrap();
        let grads = gradients(&mut builder, loss, &[x, y]).unwrap();
        let graph = builder.finish(&grads).unwrap();
        let outputs = runner.run(
            &graph,
            &[
                runner.tensor(&[4], &[1.0, 2.0, 0.0, -3.0]),
                runner.tensor(&[4], &[2.0, 1.0, 0.0, -3.0]),
            ],
        );
        let (dx, dy): (Vec<f64>, Vec<f64>) =
            (outputs[0].to_vec().unwrap(), outputs[1].to_vec().unwrap());
        let (x_wins, y_wins) = if op == BinaryOp::Max {
            (1.0, 0.0)
        } else {
            (0.0, 1.0)
        };
        assert_eq!(dx, [y_wins, x_wins, 0.5, 0.5], "{op:?}");
        assert_eq!(dy, [x_wins, y_wins, 0.5, 0.5], "{op:?}");
    }
}

/// `remainder(x, y)^2` (`floored`: with the remainder of floor division, `x - floor(x / y) y`,
/// built from other ops: the null arm's different function).
fn squared_remainder(floored: bool) -> Loss {
    Box::new(move |builder, p| {
        let value = if floored {
            let quotient = builder.binary(BinaryOp::Divide, p[0], p[1]).unwrap();
            let floor = builder.unary(UnaryOp::Floor, quotient).unwrap();
            let multiple = builder.binary(BinaryOp::Multiply, floor, p[1]).unwrap();
            builder.binary(BinaryOp::Subtract, p[0], multiple).unwrap()
        } else {
            builder.binary(BinaryOp::Remainder, p[0], p[1]).unwrap()
        };
        builder.binary(BinaryOp::Multiply, value, value).unwrap()
    })
}

#[test]
fn remainder_gradients_follow_the_truncated_quotient() {
    // Quotients of both signs, none near an integer (where the remainder jumps).
    let values = vec![vec![5.3, -5.3, 2.2, -7.9], vec![2.0, 2.0, -1.5, -3.1]];
    let shapes: &[&[usize]] = &[&[4], &[4]];
    let right = squared_remainder(false);
    let failure = finite_difference_failure(shapes, &right, &right, &values);
    assert!(failure.is_none(), "{failure:?}");
    // Null arm: floor division's remainder differs where x / y < 0.
    let floored = squared_remainder(true);
    assert!(finite_difference_failure(shapes, &floored, &right, &values).is_some());
}

// --- Data movement, indexing, scans, windows and sort (rules in autodiff/movement.rs) ---

/// `sin(value)`: keeps every output's gradient distinct, so a misplaced one shows.
fn sin(builder: &mut GraphBuilder, value: NodeId) -> NodeId {
    builder.unary(UnaryOp::Sin, value).unwrap()
}

/// An s32 literal of `shape`.
fn indices(builder: &mut GraphBuilder, shape: &[usize], values: &[i32]) -> NodeId {
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|value| value.to_le_bytes())
        .collect();
    builder.literal(DType::S32, shape, &bytes).unwrap()
}

/// One loss per family member, and a wrong partner for the family's null arm.
type Loss = Box<dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId>;

fn strided_slice(strides: [usize; 2]) -> Loss {
    Box::new(move |builder, parameters| {
        let part = builder
            .slice(parameters[0], &[1, 0], &[4, 4], &strides)
            .unwrap();
        sin(builder, part)
    })
}

fn padded(config: [(i64, i64, usize); 2]) -> Loss {
    Box::new(move |builder, parameters| {
        let value = builder.reshape(parameters[1], &[]).unwrap();
        let padded = builder.pad(parameters[0], value, &config).unwrap();
        sin(builder, padded)
    })
}

#[test]
fn slice_pad_concatenate_and_put_slice_gradients_match_finite_differences() {
    check_against_finite_differences(&[&[5, 4]], strided_slice([2, 3]));
    // Negative low padding crops, interior padding spreads; the pad value gets the rest.
    check_against_finite_differences(&[&[3, 2], &[1]], padded([(1, -1, 1), (-1, 2, 2)]));
    check_against_finite_differences(&[&[2, 3], &[2, 1], &[2, 2]], |builder, parameters| {
        let joined = builder.concatenate(parameters, 1).unwrap();
        sin(builder, joined)
    });
    // The start 5 is clamped to 1, as Nx clamps.
    check_against_finite_differences(&[&[4, 3], &[2, 2]], |builder, parameters| {
        let written = builder
            .put_slice(parameters[0], &[1, 5], parameters[1])
            .unwrap();
        sin(builder, written)
    });
}

#[test]
fn a_wrong_slice_or_pad_gradient_is_rejected() {
    let failure = finite_difference_failure(
        &[&[5, 4]],
        &*strided_slice([2, 3]),
        &*strided_slice([1, 3]),
        &deterministic_values(&[&[5, 4]]),
    );
    assert!(failure.is_some(), "null arm: strides must matter");
    let failure = finite_difference_failure(
        &[&[3, 2], &[1]],
        &*padded([(1, -1, 1), (-1, 2, 2)]),
        &*padded([(1, -1, 0), (-1, 2, 2)]),
        &deterministic_values(&[&[3, 2], &[1]]),
    );
    assert!(failure.is_some(), "null arm: interior padding must matter");
}

fn gathered(rows: [i32; 6]) -> Loss {
    Box::new(move |builder, parameters| {
        let at = indices(builder, &[3, 2], &rows);
        let picked = builder.gather(parameters[0], at, None).unwrap();
        sin(builder, picked)
    })
}

#[test]
fn gather_take_and_take_along_axis_gradients_match_finite_differences() {
    // Row [0, 1] is gathered twice: its gradients add up.
    check_against_finite_differences(&[&[4, 3]], gathered([0, 1, 3, 2, 0, 1]));
    check_against_finite_differences(&[&[4, 3, 2]], |builder, parameters| {
        let at = indices(builder, &[2, 1], &[3, 0]);
        let picked = builder.gather(parameters[0], at, Some(&[1])).unwrap();
        sin(builder, picked)
    });
    check_against_finite_differences(&[&[3, 4, 2]], |builder, parameters| {
        let at = indices(builder, &[2, 2], &[2, 0, 2, 3]);
        let taken = builder.take(parameters[0], at, 1).unwrap();
        sin(builder, taken)
    });
    check_against_finite_differences(&[&[3, 4]], |builder, parameters| {
        let at = indices(builder, &[3, 2], &[3, 3, 0, 1, 2, 0]);
        let taken = builder.take_along_axis(parameters[0], at, 1).unwrap();
        sin(builder, taken)
    });
}

fn indexed(update: IndexedUpdate, rows: [i32; 4]) -> Loss {
    Box::new(move |builder, parameters| {
        let at = indices(builder, &[2, 2], &rows);
        let written = builder
            .indexed(update, parameters[0], at, parameters[1], None)
            .unwrap();
        sin(builder, written)
    })
}

#[test]
fn indexed_add_and_put_gradients_match_finite_differences() {
    // indexed_add with a repeated position: both updates reach it.
    check_against_finite_differences(&[&[4, 3], &[2]], indexed(IndexedUpdate::Add, [1, 2, 1, 2]));
    // indexed_put with distinct positions (repeated ones follow Nx's rule: see the docs).
    check_against_finite_differences(&[&[4, 3], &[2]], indexed(IndexedUpdate::Put, [1, 2, 3, 0]));
    // A window update on the free axis.
    check_against_finite_differences(&[&[4, 3], &[2, 2]], |builder, parameters| {
        let at = indices(builder, &[2, 1], &[3, 1]);
        let written = builder
            .indexed(IndexedUpdate::Add, parameters[0], at, parameters[1], None)
            .unwrap();
        sin(builder, written)
    });
}

#[test]
fn a_wrong_indexing_gradient_is_rejected() {
    let failure = finite_difference_failure(
        &[&[4, 3]],
        &*gathered([0, 1, 3, 2, 0, 1]),
        &*gathered([0, 1, 3, 2, 0, 2]),
        &deterministic_values(&[&[4, 3]]),
    );
    assert!(
        failure.is_some(),
        "null arm: gathered positions must matter"
    );
    let failure = finite_difference_failure(
        &[&[4, 3], &[2]],
        &*indexed(IndexedUpdate::Put, [1, 2, 3, 0]),
        &*indexed(IndexedUpdate::Add, [1, 2, 3, 0]),
        &deterministic_values(&[&[4, 3], &[2]]),
    );
    assert!(
        failure.is_some(),
        "null arm: put must zero the target's written gradient"
    );
}

fn scanned(op: ScanOp, axis: usize, reverse: bool) -> Loss {
    Box::new(move |builder, parameters| {
        // Products see x^2 + 1 (never zero, where the rule is undefined).
        let input = if op == ScanOp::Product {
            square_plus_one(builder, parameters[0])
        } else {
            parameters[0]
        };
        let scanned = builder.cumulative(op, input, axis, reverse).unwrap();
        sin(builder, scanned)
    })
}

#[test]
fn cumulative_gradients_match_finite_differences() {
    for op in ScanOp::ALL {
        for (axis, reverse) in [(1, false), (0, true), (1, true)] {
            check_against_finite_differences(&[&[3, 5]], scanned(op, axis, reverse));
        }
    }
}

/// cumulative_product at zeros: one zero (its gradient is the product of the others) and two
/// zeros in a line (the later one's gradient is zero while the first is still zero).
#[test]
fn cumulative_product_gradients_are_exact_at_zeros() {
    let loss = scanned(ScanOp::Product, 1, false);
    let raw = |builder: &mut GraphBuilder, parameters: &[NodeId]| {
        let scanned = builder
            .cumulative(ScanOp::Product, parameters[0], 1, false)
            .unwrap();
        sin(builder, scanned)
    };
    let values = vec![vec![
        0.5, 0.0, 1.5, -2.0, 0.0, 0.0, 1.1, 0.7, 0.0, -0.9, 1.3, 0.6,
    ]];
    for reverse in [false, true] {
        let reversed = move |builder: &mut GraphBuilder, parameters: &[NodeId]| {
            let scanned = builder
                .cumulative(ScanOp::Product, parameters[0], 1, reverse)
                .unwrap();
            sin(builder, scanned)
        };
        let failure = finite_difference_failure(&[&[2, 6]], &reversed, &reversed, &values);
        assert!(failure.is_none(), "reverse {reverse}: {failure:?}");
    }
    // Null arm: the x^2 + 1 variant's gradient is not the raw product's.
    assert!(finite_difference_failure(&[&[2, 6]], &raw, &*loss, &values).is_some());
}

#[test]
fn a_wrong_cumulative_gradient_is_rejected() {
    for op in ScanOp::ALL {
        let failure = finite_difference_failure(
            &[&[3, 5]],
            &*scanned(op, 1, false),
            &*scanned(op, 1, true),
            &deterministic_values(&[&[3, 5]]),
        );
        assert!(
            failure.is_some(),
            "null arm: {op:?}'s direction must matter"
        );
    }
}

fn windowed(op: WindowOp) -> Loss {
    Box::new(move |builder, parameters| {
        let options = WindowOptions {
            strides: vec![2, 1],
            padding: vec![(1, 0), (0, 2)],
            window_dilations: vec![1, 2],
        };
        let pooled = builder.window(op, parameters[0], &[2, 2], options).unwrap();
        sin(builder, pooled)
    })
}

#[test]
fn window_gradients_match_finite_differences() {
    for op in [WindowOp::Sum, WindowOp::Max, WindowOp::Min] {
        let loss = windowed(op);
        let failure = finite_difference_failure(
            &[&[5, 4]],
            &*loss,
            &*loss,
            &deterministic_values(&[&[5, 4]]),
        );
        assert!(failure.is_none(), "{op:?}: {failure:?}");
    }
}

#[test]
fn a_wrong_window_gradient_is_rejected() {
    let failure = finite_difference_failure(
        &[&[5, 4]],
        &*windowed(WindowOp::Max),
        &*windowed(WindowOp::Min),
        &deterministic_values(&[&[5, 4]]),
    );
    assert!(
        failure.is_some(),
        "null arm: max and min pick different elements"
    );
}

fn sorted(direction: Direction) -> Loss {
    Box::new(move |builder, parameters| {
        let sorted = builder.sort(parameters[0], 1, direction, None).unwrap();
        // Position-dependent weights, so the permutation matters.
        let weights = builder.iota(DType::F64, &[3, 4], None).unwrap();
        builder.binary(BinaryOp::Multiply, sorted, weights).unwrap()
    })
}

#[test]
fn sort_gradients_match_finite_differences() {
    check_against_finite_differences(&[&[3, 4]], sorted(Direction::Ascending));
    check_against_finite_differences(&[&[3, 4]], sorted(Direction::Descending));
    let failure = finite_difference_failure(
        &[&[3, 4]],
        &*sorted(Direction::Ascending),
        &*sorted(Direction::Descending),
        &deterministic_values(&[&[3, 4]]),
    );
    assert!(failure.is_some(), "null arm: the direction must matter");
}

/// One member of each new family, for the random-input property below: (name, parameter
/// shapes, loss).
fn family_members() -> Vec<(&'static str, Vec<Vec<usize>>, Loss)> {
    vec![
        ("strided slice", vec![vec![5, 4]], strided_slice([2, 3])),
        (
            "pad",
            vec![vec![3, 2], vec![1]],
            padded([(1, -1, 1), (-1, 2, 2)]),
        ),
        ("gather", vec![vec![4, 3]], gathered([0, 1, 3, 2, 0, 1])),
        (
            "indexed_put",
            vec![vec![4, 3], vec![2]],
            indexed(IndexedUpdate::Put, [1, 2, 3, 0]),
        ),
        (
            "cumulative_max",
            vec![vec![3, 5]],
            scanned(ScanOp::Max, 1, true),
        ),
        (
            "cumulative_product",
            vec![vec![3, 5]],
            scanned(ScanOp::Product, 0, false),
        ),
        ("window_sum", vec![vec![5, 4]], windowed(WindowOp::Sum)),
        ("window_min", vec![vec![5, 4]], windowed(WindowOp::Min)),
        ("sort", vec![vec![3, 4]], sorted(Direction::Descending)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// The families' rules on random inputs (ties between random f64 values are not
    /// expected; the tie conventions are stated in autodiff/movement.rs).
    #[test]
    fn family_gradients_match_finite_differences_on_random_inputs(
        member in 0usize..9,
        seed in prop::collection::vec(-1.5f64..1.5, 20),
    ) {
        let members = family_members();
        let (name, shapes, loss) = &members[member % members.len()];
        let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let values: Vec<Vec<f64>> = shapes
            .iter()
            .enumerate()
            .map(|(parameter, shape)| {
                (0..shape.iter().product::<usize>())
                    .map(|i| seed[(i + 11 * parameter) % seed.len()] + i as f64 * 1e-3)
                    .collect()
            })
            .collect();
        let failure = finite_difference_failure(&shapes, &**loss, &**loss, &values);
        prop_assert!(failure.is_none(), "{name}: {failure:?}");
    }
}
