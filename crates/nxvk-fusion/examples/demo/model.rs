//! The demo's networks as graphs: one training-step graph (forward, loss, gradients by
//! `nxvk_fusion::gradients`, SGD update) and one prediction graph per network.

use nxvk_core::{DType, Error, Result};
use nxvk_fusion::{DotAxes, Graph, GraphBuilder, NodeId, STOP_GRAD, gradients};
use nxvk_kernels::{BinaryOp, ConvOptions, ReduceOp, TieBreak, UnaryOp};

/// Which network a [`Network`] is (the CPU reference of the first step differs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Architecture {
    Mlp,
    Cnn,
}

/// The shapes of a network's parameters, in the order the step graph takes and returns them.
#[derive(Debug, Clone)]
pub struct Network {
    pub name: &'static str,
    pub architecture: Architecture,
    pub parameter_shapes: Vec<Vec<usize>>,
    /// The shape of one batch of inputs (batch first).
    pub input_shape: Vec<usize>,
    forward: fn(&mut GraphBuilder, NodeId, &[NodeId]) -> Result<NodeId>,
}

/// A multilayer perceptron with ReLU between layers; `widths` are the input width, the hidden
/// widths and the number of classes (the demo's is [64, 128, 10]).
pub fn mlp(batch: usize, widths: &[usize]) -> Network {
    let parameter_shapes = widths
        .windows(2)
        .flat_map(|pair| [vec![pair[0], pair[1]], vec![pair[1]]])
        .collect();
    Network {
        name: "mlp",
        architecture: Architecture::Mlp,
        parameter_shapes,
        input_shape: vec![batch, widths[0]],
        forward: mlp_forward,
    }
}

/// `x W + b` for `x[batch][in]` and `W[in][out]`.
fn dense(
    builder: &mut GraphBuilder,
    input: NodeId,
    weight: NodeId,
    bias: NodeId,
) -> Result<NodeId> {
    let product = builder.dot(input, weight, DotAxes::matrix_product())?;
    builder.binary(BinaryOp::Add, product, bias)
}

fn relu(builder: &mut GraphBuilder, input: NodeId) -> Result<NodeId> {
    let zero = builder.constant(DType::F32, 0.0)?;
    builder.binary(BinaryOp::Max, input, zero)
}

fn mlp_forward(builder: &mut GraphBuilder, input: NodeId, parameters: &[NodeId]) -> Result<NodeId> {
    let layers = parameters.len() / 2;
    let mut value = input;
    for layer in 0..layers {
        value = dense(
            builder,
            value,
            parameters[2 * layer],
            parameters[2 * layer + 1],
        )?;
        if layer + 1 < layers {
            value = relu(builder, value)?;
        }
    }
    Ok(value)
}

/// Filters of the CNN's two convolutions.
pub const CNN_FILTERS: [usize; 2] = [8, 16];
/// Each convolution's stride (3x3 kernels, padding 1): 8x8 -> 8x8 -> 4x4.
pub const CNN_STRIDES: [usize; 2] = [1, 2];

/// A LeNet-style CNN: conv 3x3 (8 filters) + ReLU, conv 3x3 stride 2 (16 filters) + ReLU,
/// then a dense layer from the 16x4x4 features to `classes` classes, on 8x8 single-channel
/// images.
pub fn cnn(batch: usize, classes: usize) -> Network {
    let [first, second] = CNN_FILTERS;
    Network {
        name: "cnn",
        architecture: Architecture::Cnn,
        parameter_shapes: vec![
            vec![first, 1, 3, 3],
            vec![first],
            vec![second, first, 3, 3],
            vec![second],
            vec![second * 16, classes],
            vec![classes],
        ],
        input_shape: vec![batch, 1, 8, 8],
        forward: cnn_forward,
    }
}

impl Network {
    /// The number of classes: the width of the last bias.
    pub fn classes(&self) -> usize {
        self.parameter_shapes.last().map_or(0, |shape| shape[0])
    }
}

/// The shape of tensor node `id`.
fn shape_of(builder: &GraphBuilder, id: NodeId) -> Result<Vec<usize>> {
    match builder.type_of(id).and_then(|ty| ty.tensor()) {
        Some(tensor) => Ok(tensor.shape.clone()),
        None => Err(Error::BadOperands {
            op: "demo model",
            shapes: Vec::new(),
            dtypes: Vec::new(),
            detail: format!("node {} is not a tensor", id.index()),
        }),
    }
}

/// conv (3x3, padding 1, `stride`) + bias + ReLU on `input[batch][channels][h][w]`.
fn conv_relu(
    builder: &mut GraphBuilder,
    input: NodeId,
    kernel: NodeId,
    bias: NodeId,
    stride: usize,
) -> Result<NodeId> {
    let options = ConvOptions {
        strides: vec![stride, stride],
        padding: vec![(1, 1), (1, 1)],
        ..ConvOptions::default()
    };
    let output = builder.conv(input, kernel, options)?;
    let shape = shape_of(builder, output)?;
    let bias = builder.broadcast(bias, &shape, &[1])?;
    let biased = builder.binary(BinaryOp::Add, output, bias)?;
    relu(builder, biased)
}

fn cnn_forward(builder: &mut GraphBuilder, input: NodeId, parameters: &[NodeId]) -> Result<NodeId> {
    let first = conv_relu(builder, input, parameters[0], parameters[1], CNN_STRIDES[0])?;
    let second = conv_relu(builder, first, parameters[2], parameters[3], CNN_STRIDES[1])?;
    let batch = shape_of(builder, input)?[0];
    let features = builder.reshape(second, &[batch, CNN_FILTERS[1] * 16])?;
    dense(builder, features, parameters[4], parameters[5])
}

/// Mean softmax cross-entropy of `logits[batch][classes]` against one-hot `targets`, with the
/// row maximum subtracted first (held constant to the gradient: it cancels exactly).
fn cross_entropy(
    builder: &mut GraphBuilder,
    logits: NodeId,
    targets: NodeId,
    batch: usize,
) -> Result<NodeId> {
    let row_max = builder.reduce(ReduceOp::ReduceMax, logits, Some(&[1]), true, TieBreak::Low)?;
    let row_max = builder.metadata(row_max, STOP_GRAD)?;
    let shifted = builder.binary(BinaryOp::Subtract, logits, row_max)?;
    let exponentials = builder.unary(UnaryOp::Exp, shifted)?;
    let totals = builder.reduce(ReduceOp::Sum, exponentials, Some(&[1]), true, TieBreak::Low)?;
    let log_totals = builder.unary(UnaryOp::Log, totals)?;
    let log_probabilities = builder.binary(BinaryOp::Subtract, shifted, log_totals)?;
    let picked = builder.binary(BinaryOp::Multiply, targets, log_probabilities)?;
    let total = builder.reduce(ReduceOp::Sum, picked, None, false, TieBreak::Low)?;
    let scale = builder.constant(DType::F32, -1.0 / batch as f64)?;
    builder.binary(BinaryOp::Multiply, total, scale)
}

/// The training step: inputs are the parameters, a batch of inputs, its one-hot targets and
/// the learning rate (f32 scalar); outputs are the loss, the gradients, then the updated
/// parameters (all in parameter order).
pub fn training_step(network: &Network) -> Result<Graph> {
    let mut builder = GraphBuilder::new();
    let parameters = network
        .parameter_shapes
        .iter()
        .map(|shape| builder.parameter(DType::F32, shape))
        .collect::<Result<Vec<_>>>()?;
    let batch = network.input_shape[0];
    let input = builder.parameter(DType::F32, &network.input_shape)?;
    let targets = builder.parameter(DType::F32, &[batch, network.classes()])?;
    let learning_rate = builder.parameter(DType::F32, &[])?;
    let logits = (network.forward)(&mut builder, input, &parameters)?;
    let loss = cross_entropy(&mut builder, logits, targets, batch)?;
    let grads = gradients(&mut builder, loss, &parameters)?;
    let mut outputs = vec![loss];
    outputs.extend(&grads);
    for (&parameter, &gradient) in parameters.iter().zip(&grads) {
        let step = builder.binary(BinaryOp::Multiply, gradient, learning_rate)?;
        outputs.push(builder.binary(BinaryOp::Subtract, parameter, step)?);
    }
    builder.finish(&outputs)
}

/// The prediction graph for `batch` rows: inputs are the parameters and the rows; the output
/// is the predicted class per row (argmax of the logits).
pub fn prediction(network: &Network, batch: usize) -> Result<Graph> {
    let mut builder = GraphBuilder::new();
    let parameters = network
        .parameter_shapes
        .iter()
        .map(|shape| builder.parameter(DType::F32, shape))
        .collect::<Result<Vec<_>>>()?;
    let mut input_shape = network.input_shape.clone();
    input_shape[0] = batch;
    let input = builder.parameter(DType::F32, &input_shape)?;
    let logits = (network.forward)(&mut builder, input, &parameters)?;
    let classes = builder.reduce(ReduceOp::ArgMax, logits, Some(&[1]), false, TieBreak::Low)?;
    builder.finish(&[classes])
}
