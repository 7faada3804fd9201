//! Benchmarks of fused plans, one JSON line per workload in the format of the peers' README
//! (`{"name","value","unit","better","impl"}`), with the same `--only a,b` and `--quick`
//! arguments as nxvk-kernels' bench_kernels (the harness in nxvk-kernels' examples/bench_harness).
//!
//! - `chain_f32_256M`: sigmoid(x * a + 1.5) over 2^28 f32 as one plan (one fused kernel);
//!   `a` is a full tensor like x, as in the torch peer (`torch_peer.py`'s `w_chain`), so both
//!   sides move the same three streams.
//! - `softmax_f32_8Kx8K`: softmax over the last axis of f32[8192, 8192] as one plan: one row
//!   program (`row_program.rs`: the max, the sum of exp(x - max) and the divide on chip), or
//!   with `NXVK_KNOB_ROW_PROGRAM=off` a max reduction, a sum reduction with the exp as its
//!   prologue and an elementwise divide.
//! - `log_softmax_f32_8Kx8K`: x - max - log(sum(exp(x - max))) over the last axis of
//!   f32[8192, 8192], the same plans.
//! - `layer_norm_f32_8Kx8K`: layer norm over the last axis of f32[8192, 8192] with per-column
//!   gamma and beta (mean, variance of the centred row, `(x - mean) * rsqrt(var + 1e-5) *
//!   gamma + beta`): one row program, or two fused row reductions and an elementwise stage.
//! - `gemm_bias_relu_f32_4096`: relu(x . w + b) for x, w f32[4096, 4096] and b f32[4096] as
//!   one plan: one GEMM whose store adds the bias and takes the max with 0
//!   (`gemm_epilogue.rs`), or with `NXVK_KNOB_GEMM_EPILOGUE=off` the GEMM and an elementwise
//!   kernel over its product; `--quick` runs 512.
//! - `mlp_step_f32_b256`: one SGD step (forward, softmax cross-entropy, gradients by
//!   `nxvk_fusion::gradients`, update) of an MLP 784-1024-1024-10 with ReLU on a batch of 256,
//!   as one plan (the demo's model code), GPU time; like the torch peer's `w_mlp`.
//! - `small_op_chain_us@plan`: 1000 dependent sigmoids on f32[1024] as one plan and one sync,
//!   wall time per op (the plan is compiled before timing, as a cached plan would be).
//! - `small_mlp_us@plan`: 16 layers of tanh(h . w_i + b_i) on h f32[32, 256], w_i
//!   f32[256, 256] (a small model's inference, where the host's share of a run shows), as one
//!   plan: wall time per run to the synchronisation, median of 21 after 4 warm-up runs (the
//!   first two of which capture the plan for replay when `plan_replay` is on).
//! - `reduce_fun_add_f32_256M`: Nx's `reduce(x, 0, &add/2)` over all of 2^28 f32 with the
//!   reducer as a function graph (`reducer.rs`: two chunked passes); torch's peer is `sum`.
//! - `reduce_fun_add_rows_f32_8Kx8K`: the same reducer over the last axis of f32[8192, 8192]
//!   (one workgroup per row).
//! - `window_reduce_fun_max_f32_256M`: `window_reduce(x, -inf, {2, 2}, strides: [2, 2],
//!   &max/2)` over f32[16384, 16384] (a 2x2 max pool); torch's peer is `max_pool2d`.
//! - `conv_pool_grad_f32_b64`: loss = sum(tanh(window_max(conv(x, k), 2x2, stride 2))) on
//!   x f32[64, 32, 32, 32], k f32[64, 32, 3, 3] (padding 1), and its gradients with respect
//!   to x and k (window_scatter_max, two convs), as one plan, GPU time.
//! - `embedding_grad_f32_64Kx64`: loss = sum(sin(take(table, ids, axis 0))) for a table
//!   f32[65536, 64] and 16384 ids (repeats included), and the table's gradient (an
//!   indexed_add of the rows), as one plan, GPU time.
//! - `while_rnn_grad_f32_b64_h512_t16@wall`: loss = sum(h_16) for `h = tanh(dot(h, w))` run
//!   16 times by a `while` node (state: h f32[64, 512], w f32[512, 512], an s32 counter), and
//!   the gradients with respect to h_0 and w (`autodiff/control.rs`: a counting loop, then
//!   the body replayed from h_0 before each of the 16 vector-Jacobian products, 136 body
//!   runs in all), wall time to the read-back: the loops read their predicates back. Torch's
//!   backward through 16 unrolled steps keeps every state (16 body runs forward, 16 back).
//! - `cholesky_solve_grad_f32_b256x64`: s = m m^T + 64 I for m f32[256, 64, 64], l =
//!   cholesky(s), x = l^-T l^-1 b for b f32[256, 64, 16] (two triangular solves), loss =
//!   sum(x * x), and its gradients with respect to m and b, as one plan, GPU time.
//! - `fft_grad_f32_4Kx1K`: loss = sum(real(fft(x)) * w + imag(fft(x)) * v) along the last
//!   axis of x f32[4096, 1024] (c64 spectrum), and its gradients with respect to x, w and v,
//!   as one plan, GPU time.
//!
//! GPU-side workloads are timed with GPU timestamps (median of 20 after at least 300 ms of
//! warm-up, which brings the GPU's clocks up). `--quick` runs smaller sizes under the same
//! names (the `cse` race passes `--only chain_f32_256M,softmax_f32_8Kx8K -- --quick`), so
//! lavapipe can run it; its figures are for regressions only.

// The demo's model code, so the benchmark times the same graphs the demo trains; the bench
// uses only the MLP, hence `dead_code`.
#[path = "demo/model.rs"]
#[allow(dead_code)]
mod model;

use nxvk_core::{DType, Device, Result, Tensor};
use nxvk_fusion::{DotAxes, Graph, GraphBuilder, NodeId, PlanCache, gradients};
use nxvk_kernels::{
    BinaryOp, ConvOptions, ReduceOp, TieBreak, TriangularSolveOptions, UnaryOp, WindowOp,
    WindowOptions,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

// The harness shared with nxvk-kernels' bench_kernels; this bench uses only part of it,
// hence `dead_code`.
#[path = "../../nxvk-kernels/examples/bench_harness/mod.rs"]
#[allow(dead_code)]
mod bench_harness;
use bench_harness::{
    Arguments, Record, Workload, gpu_median, open_context, random_f32_tensor, run_workloads,
    wall_median,
};

fn main() {
    let arguments = Arguments::from_command_line();
    let quick = arguments.quick;
    let context = open_context();
    let device = context.device().expect("device");
    let cache = PlanCache::new(&device);
    eprintln!("{{\"plan_options\": \"{:?}\"}}", cache.options());
    let bench = Bench {
        device,
        cache,
        quick,
    };

    let chain_elements = if quick { 1 << 22 } else { 1 << 28 };
    let softmax_side = if quick { 1 << 10 } else { 1 << 13 };
    let mlp_batch = if quick { 16 } else { 256 };
    let gemm_side = if quick { 512 } else { 4096 };
    let workloads: Vec<(String, Workload<Bench>)> = vec![
        (
            "chain_f32_256M".into(),
            Box::new(move |b| b.chain(chain_elements)),
        ),
        (
            "softmax_f32_8Kx8K".into(),
            Box::new(move |b| b.softmax(softmax_side)),
        ),
        (
            "log_softmax_f32_8Kx8K".into(),
            Box::new(move |b| b.log_softmax(softmax_side)),
        ),
        (
            "layer_norm_f32_8Kx8K".into(),
            Box::new(move |b| b.layer_norm(softmax_side)),
        ),
        (
            "gemm_bias_relu_f32_4096".into(),
            Box::new(move |b| b.gemm_bias_relu(gemm_side)),
        ),
        (
            "mlp_step_f32_b256".into(),
            Box::new(move |b| b.mlp_step(mlp_batch)),
        ),
        (
            "small_op_chain_us@plan".into(),
            Box::new(|b| b.small_op_chain()),
        ),
        ("small_mlp_us@plan".into(), Box::new(|b| b.small_mlp())),
        (
            "reduce_fun_add_f32_256M".into(),
            Box::new(move |b| b.reduce_fun(&[chain_elements], &[0])),
        ),
        (
            "reduce_fun_add_rows_f32_8Kx8K".into(),
            Box::new(move |b| b.reduce_fun(&[softmax_side, softmax_side], &[1])),
        ),
        (
            "window_reduce_fun_max_f32_256M".into(),
            Box::new(move |b| b.window_reduce_fun(softmax_side * 2)),
        ),
        (
            "conv_pool_grad_f32_b64".into(),
            Box::new(move |b| b.conv_pool_grad(if quick { (2, 8) } else { (64, 32) })),
        ),
        (
            "embedding_grad_f32_64Kx64".into(),
            Box::new(move |b| {
                b.embedding_grad(if quick {
                    (1024, 16, 512)
                } else {
                    (65536, 64, 16384)
                })
            }),
        ),
        (
            "while_rnn_grad_f32_b64_h512_t16@wall".into(),
            Box::new(move |b| b.while_rnn_grad(if quick { (4, 32, 4) } else { (64, 512, 16) })),
        ),
        (
            "cholesky_solve_grad_f32_b256x64".into(),
            Box::new(move |b| b.cholesky_solve_grad(if quick { (4, 16) } else { (256, 64) })),
        ),
        (
            "fft_grad_f32_4Kx1K".into(),
            Box::new(move |b| b.fft_grad(if quick { (64, 256) } else { (4096, 1024) })),
        ),
    ];
    run_workloads(&arguments, &bench, workloads);
    eprintln!("{{\"fusion_counters\": {:?}}}", bench.cache.counters());
    eprintln!("{{\"counters\": {:?}}}", context.counters());
}

struct Bench {
    device: Arc<Device>,
    cache: PlanCache,
    quick: bool,
}

impl Bench {
    fn tensor(&self, shape: &[usize], seed: u64) -> Result<Tensor> {
        random_f32_tensor(&self.device, shape, seed)
    }

    /// Median GPU time of the plan of `graph` on `inputs`.
    fn plan_median(&self, graph: &Graph, inputs: &[&Tensor]) -> Result<Duration> {
        self.cache.plan(graph)?;
        gpu_median(&self.device, self.quick, || {
            self.cache.run(graph, inputs).map(drop)
        })
    }

    fn chain(&self, elements: usize) -> Result<Record> {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[elements])?;
        let a = builder.parameter(DType::F32, &[elements])?;
        let scaled = builder.binary(BinaryOp::Multiply, x, a)?;
        let constant = builder.constant(DType::F32, 1.5)?;
        let shifted = builder.binary(BinaryOp::Add, scaled, constant)?;
        let out = builder.unary(UnaryOp::Sigmoid, shifted)?;
        let graph = builder.finish(&[out])?;
        let x = self.tensor(&[elements], 1)?;
        let a = self.tensor(&[elements], 2)?;
        Ok(Record::milliseconds(self.plan_median(&graph, &[&x, &a])?))
    }

    /// A reducer function graph: `op` of two f32 scalars.
    fn scalar_function(op: BinaryOp) -> Result<Graph> {
        let mut builder = GraphBuilder::new();
        let a = builder.parameter(DType::F32, &[])?;
        let b = builder.parameter(DType::F32, &[])?;
        let result = builder.binary(op, a, b)?;
        builder.finish(&[result])
    }

    /// `reduce(x, 0, &add/2)` over `axes` of f32 `shape`.
    fn reduce_fun(&self, shape: &[usize], axes: &[usize]) -> Result<Record> {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, shape)?;
        let zero = builder.constant(DType::F32, 0.0)?;
        let add = Self::scalar_function(BinaryOp::Add)?;
        let out = builder.reduce_with(x, zero, add, Some(axes), false)?;
        let graph = builder.finish(&[out])?;
        let x = self.tensor(shape, 6)?;
        Ok(Record::milliseconds(self.plan_median(&graph, &[&x])?))
    }

    /// A 2x2, stride-2 max pool of f32[side, side] through `window_reduce` with `max`.
    fn window_reduce_fun(&self, side: usize) -> Result<Record> {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[side, side])?;
        let low = builder.constant(DType::F32, f64::NEG_INFINITY)?;
        let max = Self::scalar_function(BinaryOp::Max)?;
        let options = nxvk_kernels::WindowOptions {
            strides: vec![2, 2],
            ..Default::default()
        };
        let out = builder.window_reduce_with(x, low, max, &[2, 2], options)?;
        let graph = builder.finish(&[out])?;
        let x = self.tensor(&[side, side], 7)?;
        Ok(Record::milliseconds(self.plan_median(&graph, &[&x])?))
    }

    /// Softmax (or log_softmax) over the last axis of f32[side, side].
    fn softmax_graph(side: usize, log: bool) -> Result<Graph> {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[side, side])?;
        let max = builder.reduce(ReduceOp::ReduceMax, x, Some(&[1]), true, TieBreak::Low)?;
        let shifted = builder.binary(BinaryOp::Subtract, x, max)?;
        let exp = builder.unary(UnaryOp::Exp, shifted)?;
        let sum = builder.reduce(ReduceOp::Sum, exp, Some(&[1]), true, TieBreak::Low)?;
        let out = if log {
            let log_sum = builder.unary(UnaryOp::Log, sum)?;
            builder.binary(BinaryOp::Subtract, shifted, log_sum)?
        } else {
            builder.binary(BinaryOp::Divide, exp, sum)?
        };
        builder.finish(&[out])
    }

    fn softmax(&self, side: usize) -> Result<Record> {
        let graph = Self::softmax_graph(side, false)?;
        let x = self.tensor(&[side, side], 3)?;
        Ok(Record::milliseconds(self.plan_median(&graph, &[&x])?))
    }

    fn log_softmax(&self, side: usize) -> Result<Record> {
        let graph = Self::softmax_graph(side, true)?;
        let x = self.tensor(&[side, side], 3)?;
        Ok(Record::milliseconds(self.plan_median(&graph, &[&x])?))
    }

    /// Layer norm over the last axis of f32[side, side] with gamma and beta of f32[side].
    fn layer_norm(&self, side: usize) -> Result<Record> {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[side, side])?;
        let gamma = builder.parameter(DType::F32, &[side])?;
        let beta = builder.parameter(DType::F32, &[side])?;
        let length = builder.constant(DType::F32, side as f64)?;
        let sum = builder.reduce(ReduceOp::Sum, x, Some(&[1]), true, TieBreak::Low)?;
        let mean = builder.binary(BinaryOp::Divide, sum, length)?;
        let centred = builder.binary(BinaryOp::Subtract, x, mean)?;
        let square = builder.binary(BinaryOp::Multiply, centred, centred)?;
        let square_sum = builder.reduce(ReduceOp::Sum, square, Some(&[1]), true, TieBreak::Low)?;
        let variance = builder.binary(BinaryOp::Divide, square_sum, length)?;
        let epsilon = builder.constant(DType::F32, 1e-5)?;
        let shifted = builder.binary(BinaryOp::Add, variance, epsilon)?;
        let scale = builder.unary(UnaryOp::Rsqrt, shifted)?;
        let normal = builder.binary(BinaryOp::Multiply, centred, scale)?;
        let scaled = builder.binary(BinaryOp::Multiply, normal, gamma)?;
        let out = builder.binary(BinaryOp::Add, scaled, beta)?;
        let graph = builder.finish(&[out])?;
        let x = self.tensor(&[side, side], 3)?;
        let gamma = self.tensor(&[side], 4)?;
        let beta = self.tensor(&[side], 5)?;
        Ok(Record::milliseconds(
            self.plan_median(&graph, &[&x, &gamma, &beta])?,
        ))
    }

    /// relu(x . w + b) on f32[side, side] operands, b of shape [side] (a GEMM epilogue with
    /// `NXVK_KNOB_GEMM_EPILOGUE=on`, a GEMM and an elementwise kernel with it off).
    fn gemm_bias_relu(&self, side: usize) -> Result<Record> {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[side, side])?;
        let w = builder.parameter(DType::F32, &[side, side])?;
        let bias = builder.parameter(DType::F32, &[side])?;
        let product = builder.dot(x, w, DotAxes::matrix_product())?;
        let shifted = builder.binary(BinaryOp::Add, product, bias)?;
        let zero = builder.constant(DType::F32, 0.0)?;
        let out = builder.binary(BinaryOp::Max, shifted, zero)?;
        let graph = builder.finish(&[out])?;
        let x = self.tensor(&[side, side], 6)?;
        let w = self.tensor(&[side, side], 7)?;
        let bias = self.tensor(&[side], 8)?;
        Ok(Record::milliseconds(
            self.plan_median(&graph, &[&x, &w, &bias])?,
        ))
    }

    /// One training step of the MLP 784-1024-1024-10 on `batch` rows, learning rate 0.01.
    fn mlp_step(&self, batch: usize) -> Result<Record> {
        let network = model::mlp(batch, &[784, 1024, 1024, 10]);
        let graph = model::training_step(&network)?;
        let mut inputs = network
            .parameter_shapes
            .iter()
            .enumerate()
            .map(|(index, shape)| self.tensor(shape, 10 + index as u64))
            .collect::<Result<Vec<_>>>()?;
        inputs.push(self.tensor(&network.input_shape, 5)?);
        let mut targets = vec![0.0f32; batch * 10];
        for row in 0..batch {
            targets[row * 10 + row % 10] = 1.0;
        }
        inputs.push(Tensor::from_slice(&self.device, &[batch, 10], &targets)?);
        inputs.push(Tensor::from_slice(&self.device, &[], &[0.01f32])?);
        let inputs: Vec<&Tensor> = inputs.iter().collect();
        Ok(Record::milliseconds(self.plan_median(&graph, &inputs)?))
    }

    /// 1000 dependent sigmoids on f32[1024] as one plan, one sync: wall time per op.
    fn small_op_chain(&self) -> Result<Record> {
        const OPS: usize = 1000;
        let mut builder = GraphBuilder::new();
        let mut y = builder.parameter(DType::F32, &[1024])?;
        for _ in 0..OPS {
            y = builder.unary(UnaryOp::Sigmoid, y)?;
        }
        let graph = builder.finish(&[y])?;
        let x = self.tensor(&[1024], 4)?;
        self.cache.plan(&graph)?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            self.cache.run(&graph, &[&x])?;
            self.device.synchronize()?;
            Ok(start.elapsed())
        };
        Ok(Record::microseconds_per_op(wall_median(1, 5, once)?, OPS))
    }

    fn small_mlp(&self) -> Result<Record> {
        const LAYERS: usize = 16;
        const WIDTH: usize = 256;
        let mut builder = GraphBuilder::new();
        let mut h = builder.parameter(DType::F32, &[32, WIDTH])?;
        let mut weights = Vec::new();
        for layer in 0..LAYERS {
            let w = builder.parameter(DType::F32, &[WIDTH, WIDTH])?;
            let b = builder.parameter(DType::F32, &[WIDTH])?;
            weights.push(self.tensor(&[WIDTH, WIDTH], 10 + layer as u64)?);
            weights.push(self.tensor(&[WIDTH], 100 + layer as u64)?);
            let product = builder.dot(h, w, DotAxes::matrix_product())?;
            let biased = builder.binary(BinaryOp::Add, product, b)?;
            h = builder.unary(UnaryOp::Tanh, biased)?;
        }
        let graph = builder.finish(&[h])?;
        let x = self.tensor(&[32, WIDTH], 3)?;
        let inputs: Vec<&Tensor> = std::iter::once(&x).chain(&weights).collect();
        self.cache.plan(&graph)?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            self.cache.run(&graph, &inputs)?;
            self.device.synchronize()?;
            Ok(start.elapsed())
        };
        Ok(Record::microseconds_per_op(wall_median(4, 21, once)?, 1))
    }

    /// Forward and backward of conv 3x3 then 2x2 max pooling on `batch` images of `channels`
    /// channels (32x32 when full size), twice as many filters.
    fn conv_pool_grad(&self, (batch, channels): (usize, usize)) -> Result<Record> {
        let side = if self.quick { 16 } else { 32 };
        let input_shape = [batch, channels, side, side];
        let kernel_shape = [2 * channels, channels, 3, 3];
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &input_shape)?;
        let k = builder.parameter(DType::F32, &kernel_shape)?;
        let options = ConvOptions {
            padding: vec![(1, 1), (1, 1)],
            ..ConvOptions::default()
        };
        let features = builder.conv(x, k, options)?;
        let pooling = WindowOptions {
            strides: vec![1, 1, 2, 2],
            ..WindowOptions::default()
        };
        let pooled = builder.window(WindowOp::Max, features, &[1, 1, 2, 2], pooling)?;
        let activated = builder.unary(UnaryOp::Tanh, pooled)?;
        let loss = builder.reduce(ReduceOp::Sum, activated, None, false, TieBreak::Low)?;
        let grads = gradients(&mut builder, loss, &[x, k])?;
        let graph = builder.finish(&[loss, grads[0], grads[1]])?;
        let x = self.tensor(&input_shape, 6)?;
        let k = self.tensor(&kernel_shape, 7)?;
        Ok(Record::milliseconds(self.plan_median(&graph, &[&x, &k])?))
    }

    /// Forward and backward of `steps` steps of `h = tanh(dot(h, w))` in a `while` node over
    /// `batch` rows of `width` units (the gradient rematerialises the loop's states).
    fn while_rnn_grad(&self, (batch, width, steps): (usize, usize, usize)) -> Result<Record> {
        let state_parameters = |builder: &mut GraphBuilder| -> Result<Vec<NodeId>> {
            Ok(vec![
                builder.parameter(DType::F32, &[batch, width])?,
                builder.parameter(DType::F32, &[width, width])?,
                builder.parameter(DType::S32, &[])?,
            ])
        };
        let mut condition = GraphBuilder::new();
        let state = state_parameters(&mut condition)?;
        let limit = condition.constant(DType::S32, steps as f64)?;
        let running = condition.binary(BinaryOp::Less, state[2], limit)?;
        let condition = condition.finish(&[running])?;
        let mut body = GraphBuilder::new();
        let state = state_parameters(&mut body)?;
        let axes = DotAxes::matrix_product();
        let product = body.dot(state[0], state[1], axes)?;
        let next = body.unary(UnaryOp::Tanh, product)?;
        let one = body.constant(DType::S32, 1.0)?;
        let counted = body.binary(BinaryOp::Add, state[2], one)?;
        let body = body.finish(&[next, state[1], counted])?;

        let mut builder = GraphBuilder::new();
        let h = builder.parameter(DType::F32, &[batch, width])?;
        let w = builder.parameter(DType::F32, &[width, width])?;
        let zero = builder.constant(DType::S32, 0.0)?;
        let looped = builder.while_loop(&[h, w, zero], condition, body)?;
        let last = builder.elem(looped, 0)?;
        let loss = builder.reduce(ReduceOp::Sum, last, None, false, TieBreak::Low)?;
        let grads = gradients(&mut builder, loss, &[h, w])?;
        let graph = builder.finish(&[loss, grads[0], grads[1]])?;
        let h = self.tensor(&[batch, width], 9)?;
        // Weights scaled to about 1 / sqrt(width) so tanh stays out of saturation.
        let w = self.tensor(&[width, width], 10)?;
        let scale = Tensor::from_slice(&self.device, &[], &[1.0f32 / (width as f32).sqrt()])?;
        let w = nxvk_kernels::ops::multiply(&w, &scale)?;
        self.cache.plan(&graph)?;
        let once = || -> Result<Duration> {
            let start = Instant::now();
            let outputs = self.cache.run(&graph, &[&h, &w])?;
            outputs[0].to_vec::<f32>()?;
            Ok(start.elapsed())
        };
        Ok(Record::milliseconds(wall_median(1, 5, once)?))
    }

    /// Forward and backward of an embedding lookup: `ids` rows of a `rows` x `width` table.
    fn embedding_grad(&self, (rows, width, ids): (usize, usize, usize)) -> Result<Record> {
        let mut builder = GraphBuilder::new();
        let table = builder.parameter(DType::F32, &[rows, width])?;
        let positions = builder.parameter(DType::S32, &[ids])?;
        let looked_up = builder.take(table, positions, 0)?;
        let activated = builder.unary(UnaryOp::Sin, looked_up)?;
        let loss = builder.reduce(ReduceOp::Sum, activated, None, false, TieBreak::Low)?;
        let grads = gradients(&mut builder, loss, &[table])?;
        let graph = builder.finish(&[loss, grads[0]])?;
        let table = self.tensor(&[rows, width], 8)?;
        // Ids spread over the table with repeats (a Zipf-like head is not modelled).
        let positions: Vec<i32> = (0..ids).map(|i| ((i * 7919) % rows) as i32).collect();
        let positions = Tensor::from_slice(&self.device, &[ids], &positions)?;
        Ok(Record::milliseconds(
            self.plan_median(&graph, &[&table, &positions])?,
        ))
    }

    /// Forward and backward of a batched Cholesky solve of `batch` systems of order `n`.
    fn cholesky_solve_grad(&self, (batch, n): (usize, usize)) -> Result<Record> {
        let columns = 16;
        let mut builder = GraphBuilder::new();
        let m = builder.parameter(DType::F32, &[batch, n, n])?;
        let b = builder.parameter(DType::F32, &[batch, n, columns])?;
        let axes = DotAxes {
            contract_left: vec![2],
            batch_left: vec![0],
            contract_right: vec![2],
            batch_right: vec![0],
        };
        let gram = builder.dot(m, m, axes)?;
        let rows = builder.iota(DType::S32, &[n, n], Some(0))?;
        let cols = builder.iota(DType::S32, &[n, n], Some(1))?;
        let diagonal = builder.binary(BinaryOp::Equal, rows, cols)?;
        let diagonal = builder.as_type(diagonal, DType::F32)?;
        let shift = builder.constant(DType::F32, n as f64)?;
        let shift = builder.binary(BinaryOp::Multiply, diagonal, shift)?;
        let s = builder.binary(BinaryOp::Add, gram, shift)?;
        let l = builder.cholesky(s)?;
        let y = builder.triangular_solve(l, b, TriangularSolveOptions::default())?;
        let transposed = TriangularSolveOptions {
            transpose_a: true,
            ..TriangularSolveOptions::default()
        };
        let x = builder.triangular_solve(l, y, transposed)?;
        let square = builder.binary(BinaryOp::Multiply, x, x)?;
        let loss = builder.reduce(ReduceOp::Sum, square, None, false, TieBreak::Low)?;
        let grads = gradients(&mut builder, loss, &[m, b])?;
        let graph = builder.finish(&[loss, grads[0], grads[1]])?;
        let m = self.tensor(&[batch, n, n], 9)?;
        let b = self.tensor(&[batch, n, columns], 10)?;
        Ok(Record::milliseconds(self.plan_median(&graph, &[&m, &b])?))
    }

    /// Forward and backward of a weighted spectrum: the fft of `rows` signals of `length`.
    fn fft_grad(&self, (rows, length): (usize, usize)) -> Result<Record> {
        let mut builder = GraphBuilder::new();
        let x = builder.parameter(DType::F32, &[rows, length])?;
        let w = builder.parameter(DType::F32, &[rows, length])?;
        let v = builder.parameter(DType::F32, &[rows, length])?;
        let spectrum = builder.fft(x, false, None, 1)?;
        let real = builder.unary(UnaryOp::Real, spectrum)?;
        let imag = builder.unary(UnaryOp::Imag, spectrum)?;
        let real = builder.binary(BinaryOp::Multiply, real, w)?;
        let imag = builder.binary(BinaryOp::Multiply, imag, v)?;
        let sum = builder.binary(BinaryOp::Add, real, imag)?;
        let loss = builder.reduce(ReduceOp::Sum, sum, None, false, TieBreak::Low)?;
        let grads = gradients(&mut builder, loss, &[x, w, v])?;
        let graph = builder.finish(&[loss, grads[0], grads[1], grads[2]])?;
        let inputs = [
            self.tensor(&[rows, length], 11)?,
            self.tensor(&[rows, length], 12)?,
            self.tensor(&[rows, length], 13)?,
        ];
        let inputs: Vec<&Tensor> = inputs.iter().collect();
        Ok(Record::milliseconds(self.plan_median(&graph, &inputs)?))
    }
}
