//! Gradient checks against central finite differences, shared by the autodiff test binaries
//! (included with `#[path]`: each binary also declares `mod common`).
// Each test binary uses part of this module.
#![allow(dead_code)]

use crate::common;
use nxvk_core::{DType, Tensor};
use nxvk_fusion::{Graph, GraphBuilder, NodeId, PlanCache, gradients};
use nxvk_kernels::{ReduceOp, TieBreak};

/// Runs graphs on the test device through one plan cache (finite differences rerun the same
/// forward graph many times).
pub struct Runner {
    cache: PlanCache,
}

impl Runner {
    pub fn new() -> Self {
        Runner {
            cache: PlanCache::new(&common::device()),
        }
    }

    pub fn tensor(&self, shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_slice(self.cache.device(), shape, values).unwrap()
    }

    pub fn run(&self, graph: &Graph, inputs: &[Tensor]) -> Vec<Tensor> {
        let inputs: Vec<&Tensor> = inputs.iter().collect();
        self.cache.run(graph, &inputs).unwrap()
    }
}

/// Checks the gradients of `sum(loss_of(parameters))` for parameters of `shapes` (f64,
/// deterministic values) against central differences, element by element.
pub fn check_against_finite_differences(
    shapes: &[&[usize]],
    loss_of: impl Fn(&mut GraphBuilder, &[NodeId]) -> NodeId,
) {
    let values = deterministic_values(shapes);
    if let Some(failure) = finite_difference_failure(shapes, &loss_of, &loss_of, &values) {
        panic!("{failure}");
    }
}

/// The graph of `sum(loss_of(parameters))` for f64 parameters of `shapes` (output: the loss),
/// followed by the gradient of each parameter when `with_gradients`.
pub fn loss_graph(
    shapes: &[&[usize]],
    loss_of: &dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId,
    with_gradients: bool,
) -> Graph {
    let mut builder = GraphBuilder::new();
    let parameters: Vec<NodeId> = shapes
        .iter()
        .map(|shape| builder.parameter(DType::F64, shape).unwrap())
        .collect();
    let value = loss_of(&mut builder, &parameters);
    let loss = builder
        .reduce(ReduceOp::Sum, value, None, false, TieBreak::Low)
        .unwrap();
    let mut outputs = vec![loss];
    if with_gradients {
        outputs.extend(gradients(&mut builder, loss, &parameters).unwrap());
    }
    builder.finish(&outputs).unwrap()
}

/// Fixed, distinct parameter values for `shapes`.
pub fn deterministic_values(shapes: &[&[usize]]) -> Vec<Vec<f64>> {
    shapes
        .iter()
        .enumerate()
        .map(|(parameter, shape)| {
            (0..shape.iter().product::<usize>())
                .map(|i| ((i * 7 + parameter * 3) as f64 * 0.37).sin())
                .collect()
        })
        .collect()
}

/// The first parameter element where the gradient of `sum(gradient_of(parameters))`
/// disagrees with central differences of `sum(forward_of(parameters))` at `values`,
/// described; `None` when all agree. (Equal functions check a rule; different ones make a
/// null arm.)
pub fn finite_difference_failure(
    shapes: &[&[usize]],
    forward_of: &dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId,
    gradient_of: &dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId,
    values: &[Vec<f64>],
) -> Option<String> {
    let runner = Runner::new();
    let (forward, gradient_graph) = (
        loss_graph(shapes, forward_of, false),
        loss_graph(shapes, gradient_of, true),
    );
    let tensors = |values: &[Vec<f64>]| -> Vec<Tensor> {
        values
            .iter()
            .zip(shapes)
            .map(|(data, shape)| runner.tensor(shape, data))
            .collect()
    };
    let outputs = runner.run(&gradient_graph, &tensors(values));
    for (parameter, shape) in shapes.iter().enumerate() {
        assert_eq!(outputs[1 + parameter].shape(), *shape);
        let analytic: Vec<f64> = outputs[1 + parameter].to_vec().unwrap();
        for element in 0..values[parameter].len() {
            let loss_at = |offset: f64| {
                let mut shifted = values.to_vec();
                shifted[parameter][element] += offset;
                runner.run(&forward, &tensors(&shifted))[0]
                    .to_vec::<f64>()
                    .unwrap()[0]
            };
            // A step relative to the value, so large entries (a shifted diagonal) are moved
            // by more than their rounding.
            let step = 1e-6 * values[parameter][element].abs().max(1.0);
            let numeric = (loss_at(step) - loss_at(-step)) / (2.0 * step);
            if (analytic[element] - numeric).abs() > 1e-5 * (1.0 + numeric.abs()) {
                return Some(format!(
                    "parameter {parameter} element {element}: {} against {numeric}",
                    analytic[element]
                ));
            }
        }
    }
    None
}
