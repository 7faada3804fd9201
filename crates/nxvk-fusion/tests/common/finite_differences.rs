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
    typed_loss_graph(DType::F64, shapes, loss_of, with_gradients)
}

/// [`loss_graph`] with parameters of the float `dtype`.
pub fn typed_loss_graph(
    dtype: DType,
    shapes: &[&[usize]],
    loss_of: &dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId,
    with_gradients: bool,
) -> Graph {
    let mut builder = GraphBuilder::new();
    let parameters: Vec<NodeId> = shapes
        .iter()
        .map(|shape| builder.parameter(dtype, shape).unwrap())
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

/// The c128 value `re + i im` of two f64 nodes (complex operands built from real parameters,
/// so finite differences move each part separately).
pub fn complex_of(builder: &mut GraphBuilder, re: NodeId, im: NodeId) -> NodeId {
    let re = builder.as_type(re, DType::C128).unwrap();
    let im = builder.as_type(im, DType::C128).unwrap();
    let bytes = [0f64.to_le_bytes(), 1f64.to_le_bytes()].concat();
    let i = builder.constant_bytes(DType::C128, &[], &bytes).unwrap();
    let rotated = builder
        .binary(nxvk_kernels::BinaryOp::Multiply, im, i)
        .unwrap();
    builder
        .binary(nxvk_kernels::BinaryOp::Add, re, rotated)
        .unwrap()
}

/// `value` rounded to the float `dtype` (f16, bf16, f32 or f64), as f64.
pub fn rounded_to(dtype: DType, value: f64) -> f64 {
    match dtype {
        DType::F16 => nxvk_core::f16::from_f64(value).to_f64(),
        DType::BF16 => nxvk_core::bf16::from_f64(value).to_f64(),
        DType::F32 => value as f32 as f64,
        _ => value,
    }
}

/// The first loss or gradient element where the graph of `low_of` built with `dtype`
/// parameters disagrees with the graph of `reference_of` in f64 at the same point (`values`
/// rounded to `dtype` first) by more than `tolerance * (1 + |f64 value|)`, described; `None`
/// when all agree. The f64 gradients are the reference (the f64 tests of the same losses check
/// them against central differences). Equal functions check a precision; different ones make
/// a null arm.
pub fn low_precision_failure(
    dtype: DType,
    shapes: &[&[usize]],
    low_of: &dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId,
    reference_of: &dyn Fn(&mut GraphBuilder, &[NodeId]) -> NodeId,
    values: &[Vec<f64>],
    tolerance: f64,
) -> Option<String> {
    let runner = Runner::new();
    let rounded: Vec<Vec<f64>> = values
        .iter()
        .map(|data| data.iter().map(|&value| rounded_to(dtype, value)).collect())
        .collect();
    let tensors = |as_dtype: DType| -> Vec<Tensor> {
        rounded
            .iter()
            .zip(shapes)
            .map(|(data, shape)| {
                let exact = runner.tensor(shape, data);
                nxvk_kernels::as_type(&exact, as_dtype).unwrap()
            })
            .collect()
    };
    let as_f64 = |tensor: &Tensor| -> Vec<f64> {
        nxvk_kernels::as_type(tensor, DType::F64)
            .unwrap()
            .to_vec()
            .unwrap()
    };
    let low = runner.run(
        &typed_loss_graph(dtype, shapes, low_of, true),
        &tensors(dtype),
    );
    let high = runner.run(
        &loss_graph(shapes, reference_of, true),
        &tensors(DType::F64),
    );
    for (output, (low, high)) in low.iter().zip(&high).enumerate() {
        assert_eq!(
            low.dtype(),
            dtype,
            "output {output} keeps the parameters' dtype"
        );
        let (low, high) = (as_f64(low), as_f64(high));
        for (element, (&got, &wanted)) in low.iter().zip(&high).enumerate() {
            // A NaN fails the comparison.
            let close = (got - wanted).abs() <= tolerance * (1.0 + wanted.abs());
            if !close {
                let what = if output == 0 {
                    "the loss".to_owned()
                } else {
                    format!("parameter {} element {element}", output - 1)
                };
                return Some(format!("{dtype}: {what}: {got} against f64 {wanted}"));
            }
        }
    }
    None
}
