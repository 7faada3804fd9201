//! The CPU reference for the demo's first training step: the same networks, forward and
//! backward by hand in f64, so the GPU's first loss and gradients can be checked against
//! numbers computed without any of nxvk's code.

/// A dense row-major array with its shape.
#[derive(Debug, Clone)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f64>,
}

impl Array {
    pub fn new(shape: &[usize], data: Vec<f64>) -> Array {
        assert_eq!(
            shape.iter().product::<usize>(),
            data.len(),
            "shape and data disagree"
        );
        Array {
            shape: shape.to_vec(),
            data,
        }
    }

    pub fn zeros(shape: &[usize]) -> Array {
        Array::new(shape, vec![0.0; shape.iter().product()])
    }
}

/// `x[m][k] * w[k][n]`.
fn matmul(x: &Array, w: &Array) -> Array {
    let (m, k, n) = (x.shape[0], x.shape[1], w.shape[1]);
    let mut out = Array::zeros(&[m, n]);
    for row in 0..m {
        for inner in 0..k {
            let left = x.data[row * k + inner];
            for column in 0..n {
                out.data[row * n + column] += left * w.data[inner * n + column];
            }
        }
    }
    out
}

fn transpose(x: &Array) -> Array {
    let (m, n) = (x.shape[0], x.shape[1]);
    let mut out = Array::zeros(&[n, m]);
    for row in 0..m {
        for column in 0..n {
            out.data[column * m + row] = x.data[row * n + column];
        }
    }
    out
}

fn add_row(x: &mut Array, bias: &Array) {
    let n = bias.data.len();
    for (index, value) in x.data.iter_mut().enumerate() {
        *value += bias.data[index % n];
    }
}

fn column_sums(x: &Array) -> Array {
    let n = x.shape[1];
    let mut out = Array::zeros(&[n]);
    for (index, value) in x.data.iter().enumerate() {
        out.data[index % n] += value;
    }
    out
}

fn relu(x: &Array) -> Array {
    Array::new(&x.shape, x.data.iter().map(|&v| v.max(0.0)).collect())
}

/// The ReLU backward of `max(x, 0)` under Nx's tie rule: the gradient where the
/// pre-activation was positive, half of it where it was exactly 0, else 0.
fn relu_backward(gradient: &Array, pre_activation: &Array) -> Array {
    let data = gradient
        .data
        .iter()
        .zip(&pre_activation.data)
        .map(|(&g, &x)| {
            if x > 0.0 {
                g
            } else if x == 0.0 {
                g / 2.0
            } else {
                0.0
            }
        })
        .collect();
    Array::new(&gradient.shape, data)
}

/// Mean softmax cross-entropy of `logits[b][classes]` against integer labels, and its
/// gradient with respect to the logits.
fn cross_entropy(logits: &Array, labels: &[usize]) -> (f64, Array) {
    let (batch, classes) = (logits.shape[0], logits.shape[1]);
    let mut gradient = Array::zeros(&logits.shape);
    let mut loss = 0.0;
    for row in 0..batch {
        let values = &logits.data[row * classes..(row + 1) * classes];
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = values.iter().map(|&v| (v - max).exp()).sum();
        let log_total = total.ln() + max;
        loss += log_total - values[labels[row]];
        for (class, &value) in values.iter().enumerate() {
            let probability = (value - log_total).exp();
            let target = if class == labels[row] { 1.0 } else { 0.0 };
            gradient.data[row * classes + class] = (probability - target) / batch as f64;
        }
    }
    (loss / batch as f64, gradient)
}

/// A dense layer's parameters.
#[derive(Debug, Clone)]
pub struct Dense {
    pub weight: Array,
    pub bias: Array,
}

/// The loss of one batch and the gradient of every parameter, in the order given.
#[derive(Debug)]
pub struct StepReference {
    pub loss: f64,
    pub gradients: Vec<Array>,
}

/// The MLP `x -> relu(x W1 + b1) -> ... -> x Wn + bn` on `inputs[b][features]`.
pub fn mlp_step(layers: &[Dense], inputs: &Array, labels: &[usize]) -> StepReference {
    // Forward, keeping each layer's input and pre-activation.
    let mut layer_inputs = Vec::new();
    let mut pre_activations = Vec::new();
    let mut value = inputs.clone();
    for (index, layer) in layers.iter().enumerate() {
        let mut pre = matmul(&value, &layer.weight);
        add_row(&mut pre, &layer.bias);
        layer_inputs.push(value);
        value = if index + 1 < layers.len() {
            relu(&pre)
        } else {
            pre.clone()
        };
        pre_activations.push(pre);
    }
    let (loss, mut gradient) = cross_entropy(&value, labels);
    // Backward, last layer first.
    let mut gradients = Vec::new();
    for (index, layer) in layers.iter().enumerate().rev() {
        if index + 1 < layers.len() {
            gradient = relu_backward(&gradient, &pre_activations[index]);
        }
        gradients.push(column_sums(&gradient));
        gradients.push(matmul(&transpose(&layer_inputs[index]), &gradient));
        gradient = matmul(&gradient, &transpose(&layer.weight));
    }
    gradients.reverse();
    StepReference { loss, gradients }
}

/// A 2-D convolution's geometry (NCHW input, OIHW kernel, square stride and padding).
#[derive(Debug, Clone, Copy)]
pub struct ConvGeometry {
    pub stride: usize,
    pub padding: usize,
}

fn conv_output_side(side: usize, kernel: usize, geometry: ConvGeometry) -> usize {
    (side + 2 * geometry.padding - kernel) / geometry.stride + 1
}

/// Visits every (output, input, kernel) index triple of a convolution that touches the
/// unpadded input, so forward and both backward passes share one loop nest.
fn conv_visit(
    input_shape: &[usize],
    kernel_shape: &[usize],
    geometry: ConvGeometry,
    mut visit: impl FnMut(usize, usize, usize),
) -> Vec<usize> {
    let (batch, in_channels, height, width) = (
        input_shape[0],
        input_shape[1],
        input_shape[2],
        input_shape[3],
    );
    let (out_channels, kernel_h, kernel_w) = (kernel_shape[0], kernel_shape[2], kernel_shape[3]);
    let out_h = conv_output_side(height, kernel_h, geometry);
    let out_w = conv_output_side(width, kernel_w, geometry);
    for b in 0..batch {
        for o in 0..out_channels {
            for y in 0..out_h {
                for x in 0..out_w {
                    let output_index = ((b * out_channels + o) * out_h + y) * out_w + x;
                    for c in 0..in_channels {
                        for ky in 0..kernel_h {
                            for kx in 0..kernel_w {
                                let (Some(iy), Some(ix)) = (
                                    (y * geometry.stride + ky).checked_sub(geometry.padding),
                                    (x * geometry.stride + kx).checked_sub(geometry.padding),
                                ) else {
                                    continue;
                                };
                                if iy >= height || ix >= width {
                                    continue;
                                }
                                let input_index =
                                    ((b * in_channels + c) * height + iy) * width + ix;
                                let kernel_index =
                                    ((o * in_channels + c) * kernel_h + ky) * kernel_w + kx;
                                visit(output_index, input_index, kernel_index);
                            }
                        }
                    }
                }
            }
        }
    }
    vec![batch, out_channels, out_h, out_w]
}

fn conv_forward(input: &Array, kernel: &Array, bias: &Array, geometry: ConvGeometry) -> Array {
    let mut sums = Vec::new();
    let shape = conv_visit(&input.shape, &kernel.shape, geometry, |out, inp, ker| {
        if sums.len() <= out {
            sums.resize(out + 1, 0.0);
        }
        sums[out] += input.data[inp] * kernel.data[ker];
    });
    let mut output = Array::zeros(&shape);
    let plane = shape[2] * shape[3];
    for (index, value) in output.data.iter_mut().enumerate() {
        *value = sums.get(index).copied().unwrap_or(0.0) + bias.data[(index / plane) % shape[1]];
    }
    output
}

/// Gradients of a convolution's input, kernel and bias from its output gradient.
fn conv_backward(
    input: &Array,
    kernel: &Array,
    output_gradient: &Array,
    geometry: ConvGeometry,
) -> (Array, Array, Array) {
    let mut input_gradient = Array::zeros(&input.shape);
    let mut kernel_gradient = Array::zeros(&kernel.shape);
    conv_visit(&input.shape, &kernel.shape, geometry, |out, inp, ker| {
        input_gradient.data[inp] += output_gradient.data[out] * kernel.data[ker];
        kernel_gradient.data[ker] += output_gradient.data[out] * input.data[inp];
    });
    let channels = output_gradient.shape[1];
    let plane = output_gradient.shape[2] * output_gradient.shape[3];
    let mut bias_gradient = Array::zeros(&[channels]);
    for (index, value) in output_gradient.data.iter().enumerate() {
        bias_gradient.data[(index / plane) % channels] += value;
    }
    (input_gradient, kernel_gradient, bias_gradient)
}

/// A convolution layer's parameters.
#[derive(Debug, Clone)]
pub struct Conv {
    pub kernel: Array,
    pub bias: Array,
    pub geometry: ConvGeometry,
}

/// The CNN `x -> relu(conv1) -> relu(conv2) -> flatten -> dense` on `inputs[b][1][8][8]`;
/// gradients in the order conv1 kernel, conv1 bias, conv2 kernel, conv2 bias, dense weight,
/// dense bias.
pub fn cnn_step(
    convs: &[Conv; 2],
    dense: &Dense,
    inputs: &Array,
    labels: &[usize],
) -> StepReference {
    let pre_1 = conv_forward(inputs, &convs[0].kernel, &convs[0].bias, convs[0].geometry);
    let act_1 = relu(&pre_1);
    let pre_2 = conv_forward(&act_1, &convs[1].kernel, &convs[1].bias, convs[1].geometry);
    let act_2 = relu(&pre_2);
    let batch = inputs.shape[0];
    let flat = Array::new(&[batch, act_2.data.len() / batch], act_2.data.clone());
    let mut logits = matmul(&flat, &dense.weight);
    add_row(&mut logits, &dense.bias);
    let (loss, logits_gradient) = cross_entropy(&logits, labels);

    let dense_weight = matmul(&transpose(&flat), &logits_gradient);
    let dense_bias = column_sums(&logits_gradient);
    let flat_gradient = matmul(&logits_gradient, &transpose(&dense.weight));
    let act_2_gradient = Array::new(&act_2.shape, flat_gradient.data);
    let pre_2_gradient = relu_backward(&act_2_gradient, &pre_2);
    let (act_1_gradient, kernel_2, bias_2) =
        conv_backward(&act_1, &convs[1].kernel, &pre_2_gradient, convs[1].geometry);
    let pre_1_gradient = relu_backward(&act_1_gradient, &pre_1);
    let (_, kernel_1, bias_1) =
        conv_backward(inputs, &convs[0].kernel, &pre_1_gradient, convs[0].geometry);
    StepReference {
        loss,
        gradients: vec![kernel_1, bias_1, kernel_2, bias_2, dense_weight, dense_bias],
    }
}
