//! Gradients of window_scatter_max/min against central finite differences, in f64 on the
//! device: overlapping windows, strides, padding (where the init value can win a window and
//! the scatter drops the source), and ties (the last extreme of a window takes the source).

mod common;
#[path = "common/finite_differences.rs"]
mod finite_differences;

use finite_differences::{Runner, finite_difference_failure};
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{GraphBuilder, NodeId, gradients};
use nxvk_kernels::{BinaryOp, ReduceOp, ScatterSelect, TieBreak, WindowOptions};
use proptest::prelude::*;

type Loss = Box<dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId>;

/// The input of every check, [5, 4], scattered with windows [3, 2]; strides [2, 1] and
/// padding [(1, 0), (0, 1)] make windows overlap and reach into the padding.
const INPUT: &[usize] = &[5, 4];
const WINDOW: &[usize] = &[3, 2];
const POOLED: &[usize] = &[2, 4];

fn options() -> WindowOptions {
    WindowOptions {
        strides: vec![2, 1],
        padding: vec![(1, 0), (0, 1)],
        window_dilations: Vec::new(),
    }
}

/// `v / (v^2 + 1)`: the loss applied to the scatter's output, so that the output gradient
/// differs between positions (arithmetic only: f64 transcendentals compile slowly on
/// lavapipe).
fn bump(builder: &mut GraphBuilder, value: NodeId) -> NodeId {
    let square = builder.binary(BinaryOp::Multiply, value, value).unwrap();
    let one = builder.constant(DType::F64, 1.0).unwrap();
    let denominator = builder.binary(BinaryOp::Add, square, one).unwrap();
    builder
        .binary(BinaryOp::Divide, value, denominator)
        .unwrap()
}

/// `bump(window_scatter(select, input, source, init))`, the input given by `input` (a
/// parameter, or a literal the gradient does not see).
fn scattered(select: ScatterSelect, input: Option<Vec<f64>>) -> Loss {
    Box::new(move |builder, parameters| {
        let (x, rest) = match &input {
            None => (parameters[0], &parameters[1..]),
            Some(values) => {
                let bytes: Vec<u8> = values
                    .iter()
                    .flat_map(|value| value.to_le_bytes())
                    .collect();
                (
                    builder.literal(DType::F64, INPUT, &bytes).unwrap(),
                    parameters,
                )
            }
        };
        let output = builder
            .window_scatter(select, x, rest[0], rest[1], WINDOW, options())
            .unwrap();
        bump(builder, output)
    })
}

const WITH_INPUT: &[&[usize]] = &[INPUT, POOLED, &[]];
const WITHOUT_INPUT: &[&[usize]] = &[POOLED, &[]];

/// Distinct input values; below the init value near the top and right edges, so padding wins
/// some windows there.
fn distinct_input() -> Vec<f64> {
    (0..20).map(|i| ((i * 7) % 20) as f64 * 0.1 - 1.2).collect()
}

/// Input values with ties inside windows: each row holds one value twice or three times.
fn tied_input() -> Vec<f64> {
    vec![
        0.5, 0.5, -0.3, 0.5, //
        -1.0, 0.2, 0.2, -1.0, //
        0.7, -0.4, 0.7, 0.7, //
        0.1, 0.1, 0.1, -0.2, //
        -0.6, 0.9, -0.6, 0.9,
    ]
}

fn source_and_init() -> Vec<Vec<f64>> {
    let source = (0..8).map(|i| (i as f64 * 0.61).sin()).collect();
    vec![source, vec![0.05]]
}

#[test]
fn window_scatter_gradients_match_finite_differences() {
    for select in [ScatterSelect::Max, ScatterSelect::Min] {
        let loss = scattered(select, None);
        let mut values = vec![distinct_input()];
        values.extend(source_and_init());
        let failure = finite_difference_failure(WITH_INPUT, &loss, &loss, &values);
        assert!(failure.is_none(), "{select:?}: {failure:?}");
    }
}

#[test]
fn a_window_won_by_the_padding_passes_no_gradient_to_its_source() {
    // Max over the distinct input: the top-right windows hold only values below the init
    // value (0.05) besides padding, so the padding wins them and their source is dropped.
    let runner = Runner::new();
    let mut builder = GraphBuilder::new();
    let parameters: Vec<NodeId> = WITH_INPUT
        .iter()
        .map(|shape| builder.parameter(DType::F64, shape).unwrap())
        .collect();
    let value = scattered(ScatterSelect::Max, None)(&mut builder, &parameters);
    let loss = builder
        .reduce(ReduceOp::Sum, value, None, false, TieBreak::Low)
        .unwrap();
    let gradient = gradients(&mut builder, loss, &parameters[1..2]).unwrap();
    let graph = builder.finish(&gradient).unwrap();
    let mut values = vec![distinct_input()];
    values.extend(source_and_init());
    let inputs: Vec<Tensor> = values
        .iter()
        .zip(WITH_INPUT)
        .map(|(data, shape)| runner.tensor(shape, data))
        .collect();
    let source_gradient: Vec<f64> = runner.run(&graph, &inputs)[0].to_vec().unwrap();
    let dropped = source_gradient
        .iter()
        .filter(|&&value| value == 0.0)
        .count();
    assert!(
        dropped > 0 && dropped < source_gradient.len(),
        "{source_gradient:?}"
    );
}

#[test]
fn window_scatter_ties_go_to_the_last_extreme() {
    for select in [ScatterSelect::Max, ScatterSelect::Min] {
        let loss = scattered(select, Some(tied_input()));
        let failure = finite_difference_failure(WITHOUT_INPUT, &loss, &loss, &source_and_init());
        assert!(failure.is_none(), "{select:?}: {failure:?}");
    }
}

#[test]
fn a_gradient_that_breaks_ties_the_other_way_is_rejected() {
    // Null arm: the gradient's input makes the first of each tie win (nudged by 1e-3, which
    // moves no other choice), the forward's keeps the ties.
    let mut first_wins = tied_input();
    for index in [0, 5, 8, 12, 17] {
        first_wins[index] += 1e-3;
    }
    let failure = finite_difference_failure(
        WITHOUT_INPUT,
        &scattered(ScatterSelect::Max, Some(tied_input())),
        &scattered(ScatterSelect::Max, Some(first_wins)),
        &source_and_init(),
    );
    assert!(
        failure.is_some(),
        "null arm: the first of a tie took the source"
    );
}

fn random_values() -> impl Strategy<Value = Vec<Vec<f64>>> {
    WITH_INPUT
        .iter()
        .map(|shape| prop::collection::vec(-1.5f64..1.5, shape.iter().product::<usize>()))
        .collect::<Vec<_>>()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn window_scatter_gradients_match_on_random_values(
        values in random_values(),
        maximum in any::<bool>(),
    ) {
        let select = if maximum { ScatterSelect::Max } else { ScatterSelect::Min };
        let loss = scattered(select, None);
        let failure = finite_difference_failure(WITH_INPUT, &loss, &loss, &values);
        prop_assert!(failure.is_none(), "{select:?}: {failure:?}");
    }
}

/// `bump(window_scatter_max(x, source, init))` over an input of `shape` with `window` and
/// `padding` (no strides).
fn scattered_over(
    shape: &'static [usize],
    window: &'static [usize],
    padding: Vec<(i64, i64)>,
) -> Loss {
    Box::new(move |builder, parameters| {
        let options = WindowOptions {
            padding: padding.clone(),
            ..WindowOptions::default()
        };
        let output = builder
            .window_scatter(
                ScatterSelect::Max,
                parameters[0],
                parameters[1],
                parameters[2],
                window,
                options,
            )
            .unwrap();
        assert_eq!(
            builder.type_of(output).unwrap().tensor().unwrap().shape,
            shape
        );
        bump(builder, output)
    })
}

#[test]
fn rank_zero_and_empty_inputs_scatter_with_their_gradients() {
    // Rank 0: one window, the one element; the source lands on it.
    let loss = scattered_over(&[], &[], Vec::new());
    let failure = finite_difference_failure(
        &[&[], &[], &[]],
        &loss,
        &loss,
        &[vec![0.3], vec![0.8], vec![-0.2]],
    );
    assert!(failure.is_none(), "rank 0: {failure:?}");
    // An empty input whose padding makes two windows: both select padding, so the sources
    // are dropped (a zero gradient) and only the init value matters.
    let loss = scattered_over(&[0, 3], &[1, 2], vec![(1, 0), (0, 0)]);
    let failure = finite_difference_failure(
        &[&[0, 3], &[1, 2], &[]],
        &loss,
        &loss,
        &[Vec::new(), vec![0.4, -0.9], vec![0.25]],
    );
    assert!(failure.is_none(), "empty: {failure:?}");
}
