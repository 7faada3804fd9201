//! `cargo xtask demo`, nxvk's main job: trains networks on the 8x8 digits on the default
//! Vulkan device (lavapipe when there is no GPU; `NXVK_DEVICE` picks another).
//!
//! Each network is two graphs built with `nxvk_fusion::GraphBuilder`: a training step
//! (forward, softmax cross-entropy, gradients by `nxvk_fusion::gradients`, an SGD update) and a
//! prediction. Both are planned once and replayed for every batch. The first step's loss and
//! gradients are checked against a CPU reference written without nxvk (reference.rs); the run
//! fails if they disagree, and if the CNN's final test accuracy is below 95%. It prints loss
//! and test accuracy per epoch and writes a loss chart.
//!
//! Arguments: `--epochs N` (default 30), `--chart PATH` (default target/demo-loss.svg),
//! `--data PATH` (default: the repository's data/digits/digits.csv.gz).

mod chart;
mod digits;
mod model;
mod reference;

use anyhow::{Context as _, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use nxvk_core::{Context, Device, Tensor};
use nxvk_fusion::{Graph, PlanCache};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use chart::LossCurve;
use digits::{CLASSES, Digits, PIXELS};
use model::{Architecture, Network};

const BATCH: usize = 64;
const LEARNING_RATE: f32 = 0.1;
/// The MLP's layer widths: pixels, one hidden layer, classes.
const MLP_WIDTHS: [usize; 3] = [PIXELS, 128, CLASSES];
/// Test accuracy the CNN must reach, or the demo fails (the MLP's is reported only).
const ACCURACY_GOAL: f64 = 0.95;

#[derive(Debug)]
struct Arguments {
    epochs: usize,
    chart: PathBuf,
    data: PathBuf,
}

fn parse_arguments() -> Result<Arguments> {
    let mut arguments = Arguments {
        epochs: 30,
        chart: PathBuf::from("target/demo-loss.svg"),
        data: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/digits/digits.csv.gz"),
    };
    let mut words = std::env::args().skip(1);
    while let Some(word) = words.next() {
        let mut value = || {
            words
                .next()
                .with_context(|| format!("{word} needs a value"))
        };
        match word.as_str() {
            "--epochs" => arguments.epochs = value()?.parse().context("--epochs")?,
            "--chart" => arguments.chart = PathBuf::from(value()?),
            "--data" => arguments.data = PathBuf::from(value()?),
            other => {
                bail!("unknown argument {other:?} (expected --epochs N, --chart PATH, --data PATH)")
            }
        }
    }
    Ok(arguments)
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("demo: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let arguments = parse_arguments()?;
    let context = Context::new().context("no Vulkan device")?;
    println!("device: {}", context.capabilities().summary());
    let device = context.device()?;
    let plans = PlanCache::new(&device);
    let (train, test) = digits::split(&digits::load(&arguments.data)?);
    println!(
        "data: {} training and {} test images of 8x8 digits",
        train.len(),
        test.len()
    );

    let mut curves = Vec::new();
    let mut shortfalls = Vec::new();
    for network in [model::mlp(BATCH, &MLP_WIDTHS), model::cnn(BATCH, CLASSES)] {
        let (curve, accuracy) = train_network(&plans, &network, &train, &test, arguments.epochs)?;
        println!(
            "{}: final test accuracy {:.2}%",
            network.name,
            100.0 * accuracy
        );
        if network.architecture == Architecture::Cnn && accuracy < ACCURACY_GOAL {
            shortfalls.push(format!("{} reached {:.2}%", network.name, 100.0 * accuracy));
        }
        curves.push(curve);
    }
    chart::write_loss_chart(&arguments.chart, &curves)?;
    println!("loss chart: {}", arguments.chart.display());
    println!("device counters: {:?}", device.counters());
    println!("plan counters: {:?}", plans.counters());
    if !shortfalls.is_empty() {
        bail!(
            "below the {:.0}% accuracy goal: {}",
            100.0 * ACCURACY_GOAL,
            shortfalls.join(", ")
        );
    }
    Ok(())
}

/// splitmix64: a small seeded generator, so every run initialises and shuffles the same way.
#[derive(Debug)]
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn symmetric(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for index in (1..items.len()).rev() {
            items.swap(index, (self.next() % (index as u64 + 1)) as usize);
        }
    }
}

/// Inputs feeding each output unit: `W[in][out]` for dense layers, `K[out][in][h][w]` for
/// convolutions.
fn fan_in(shape: &[usize]) -> usize {
    let count: usize = shape.iter().product();
    match shape.len() {
        2 => count / shape[1].max(1),
        _ => count / shape[0].max(1),
    }
}

/// He-uniform weights (bound sqrt(6 / fan_in), for ReLU layers) and zero biases.
fn initial_parameters(network: &Network, random: &mut Random) -> Vec<Vec<f32>> {
    network
        .parameter_shapes
        .iter()
        .map(|shape| {
            let count: usize = shape.iter().product();
            if shape.len() == 1 {
                return vec![0.0; count];
            }
            let bound = (6.0 / fan_in(shape).max(1) as f64).sqrt();
            (0..count)
                .map(|_| (bound * random.symmetric()) as f32)
                .collect()
        })
        .collect()
}

/// One batch of rows as host vectors: inputs, one-hot targets, labels.
fn batch_of(data: &Digits, rows: &[usize]) -> (Vec<f32>, Vec<f32>, Vec<usize>) {
    let mut inputs = Vec::with_capacity(rows.len() * PIXELS);
    let mut targets = vec![0.0; rows.len() * CLASSES];
    let mut labels = Vec::with_capacity(rows.len());
    for (position, &row) in rows.iter().enumerate() {
        inputs.extend_from_slice(data.image(row));
        targets[position * CLASSES + data.labels[row]] = 1.0;
        labels.push(data.labels[row]);
    }
    (inputs, targets, labels)
}

fn upload(device: &Arc<Device>, shape: &[usize], values: &[f32]) -> Result<Tensor> {
    Ok(Tensor::from_slice(device, shape, values)?)
}

/// Runs `graph` through the plan cache (planned on first use, replayed after).
fn run_graph(plans: &PlanCache, graph: &Graph, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    Ok(plans.run(graph, &inputs)?)
}

fn train_network(
    plans: &PlanCache,
    network: &Network,
    train: &Digits,
    test: &Digits,
    epochs: usize,
) -> Result<(LossCurve, f64)> {
    let device = plans.device();
    let step_graph = model::training_step(network)?;
    let prediction_graph = model::prediction(network, test.len())?;
    let mut random = Random(0x6e78_766b);
    let initial = initial_parameters(network, &mut random);
    let mut parameters = network
        .parameter_shapes
        .iter()
        .zip(&initial)
        .map(|(shape, values)| upload(device, shape, values))
        .collect::<Result<Vec<_>>>()?;
    let learning_rate = upload(device, &[], &[LEARNING_RATE])?;
    let batches = train.len() / BATCH;
    let mut order: Vec<usize> = (0..train.len()).collect();
    let mut losses = Vec::new();
    let mut accuracy = 0.0;
    println!(
        "{}: {} parameters, batch {BATCH}, {batches} steps per epoch",
        network.name,
        initial.iter().map(Vec::len).sum::<usize>()
    );
    for epoch in 1..=epochs {
        random.shuffle(&mut order);
        let bar = ProgressBar::new(batches as u64).with_style(
            ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} loss {msg}")
                .expect("a valid template"),
        );
        bar.set_prefix(format!("{} epoch {epoch:>3}", network.name));
        let mut loss_sum = 0.0;
        for step in 0..batches {
            let rows = &order[step * BATCH..(step + 1) * BATCH];
            let (inputs, targets, labels) = batch_of(train, rows);
            let mut step_inputs: Vec<Tensor> = parameters.clone();
            step_inputs.push(upload(device, &network.input_shape, &inputs)?);
            step_inputs.push(upload(device, &[BATCH, CLASSES], &targets)?);
            step_inputs.push(learning_rate.clone());
            let outputs = run_graph(plans, &step_graph, &step_inputs)?;
            let loss = f64::from(outputs[0].to_vec::<f32>()?[0]);
            if epoch == 1 && step == 0 {
                check_first_step(network, &initial, &inputs, &labels, &outputs)?;
                bar.suspend(|| println!("{}: first step matches the CPU reference", network.name));
            }
            parameters = outputs[1 + parameters.len()..].to_vec();
            loss_sum += loss;
            bar.set_message(format!("{loss:.4}"));
            bar.inc(1);
        }
        bar.finish_and_clear();
        accuracy = test_accuracy(plans, &prediction_graph, &parameters, test)?;
        let mean_loss = loss_sum / batches as f64;
        losses.push(mean_loss);
        println!(
            "{} epoch {epoch:>3}: loss {mean_loss:.4}, test accuracy {:.2}%",
            network.name,
            100.0 * accuracy
        );
    }
    Ok((
        LossCurve {
            network: network.name,
            losses,
        },
        accuracy,
    ))
}

fn test_accuracy(
    plans: &PlanCache,
    graph: &Graph,
    parameters: &[Tensor],
    test: &Digits,
) -> Result<f64> {
    let rows: Vec<usize> = (0..test.len()).collect();
    let (inputs, _, labels) = batch_of(test, &rows);
    let mut graph_inputs = parameters.to_vec();
    let input_shape = &graph.parameters()[parameters.len()].shape;
    graph_inputs.push(upload(plans.device(), input_shape, &inputs)?);
    let predictions = run_graph(plans, graph, &graph_inputs)?[0].to_vec::<i64>()?;
    let correct = predictions
        .iter()
        .zip(&labels)
        .filter(|&(&predicted, &label)| predicted as usize == label)
        .count();
    Ok(correct as f64 / test.len() as f64)
}

/// Compares the first step's loss and gradients with the CPU reference; an error if any value
/// is off by more than 1e-4 + 1e-3 |reference| (f32 against f64, sums of up to 128 terms).
fn check_first_step(
    network: &Network,
    initial: &[Vec<f32>],
    inputs: &[f32],
    labels: &[usize],
    outputs: &[Tensor],
) -> Result<()> {
    let array = |shape: &[usize], values: &[f32]| {
        reference::Array::new(
            shape,
            values.iter().map(|&value| f64::from(value)).collect(),
        )
    };
    let shapes = &network.parameter_shapes;
    let parameter = |index: usize| array(&shapes[index], &initial[index]);
    let dense = |index: usize| reference::Dense {
        weight: parameter(index),
        bias: parameter(index + 1),
    };
    let batch_inputs = array(&network.input_shape, inputs);
    let expected = match network.architecture {
        Architecture::Mlp => {
            let layers: Vec<reference::Dense> = (0..shapes.len()).step_by(2).map(dense).collect();
            reference::mlp_step(&layers, &batch_inputs, labels)
        }
        Architecture::Cnn => {
            let conv = |index: usize, stride: usize| reference::Conv {
                kernel: parameter(index),
                bias: parameter(index + 1),
                geometry: reference::ConvGeometry { stride, padding: 1 },
            };
            let convs = [
                conv(0, model::CNN_STRIDES[0]),
                conv(2, model::CNN_STRIDES[1]),
            ];
            reference::cnn_step(&convs, &dense(4), &batch_inputs, labels)
        }
    };
    let close =
        |actual: f64, expected: f64| (actual - expected).abs() <= 1e-4 + 1e-3 * expected.abs();
    let loss = f64::from(outputs[0].to_vec::<f32>()?[0]);
    if !close(loss, expected.loss) {
        bail!(
            "{}: first-step loss {loss} differs from the CPU reference {}",
            network.name,
            expected.loss
        );
    }
    for (index, reference_gradient) in expected.gradients.iter().enumerate() {
        let actual = outputs[1 + index].to_vec::<f32>()?;
        if let Some((position, (&value, &wanted))) = actual
            .iter()
            .zip(&reference_gradient.data)
            .enumerate()
            .find(|(_, (value, wanted))| !close(f64::from(**value), **wanted))
        {
            bail!(
                "{}: first-step gradient of parameter {index} differs at element {position}: {value} against the CPU reference {wanted}",
                network.name
            );
        }
    }
    Ok(())
}
