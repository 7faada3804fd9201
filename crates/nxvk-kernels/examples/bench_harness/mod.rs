//! The harness both benchmark examples share: nxvk-kernels' `bench_kernels` (eager
//! workloads) and nxvk-fusion's `bench_fusion` (planned workloads), which includes this file
//! by `#[path]`. It parses `--quick`, `--only a,b` and `--profile`, times work (GPU medians
//! after warm-up, wall-clock medians), makes the seeded inputs, and prints one JSON line per
//! workload in the format of the peers' README (`{"name","value","unit","better","impl"}`).
//! With `--profile`, each GPU-timed workload also runs once more with every dispatch timed,
//! and its time per kernel goes to stderr (`{"profile": ...}` lines, before the workload's
//! own line).
//!
//! A file included by path rather than a dev-dependency crate: it needs nothing but nxvk-core
//! and std, and a crate of its own would add a workspace member and a package to build for
//! about a hundred lines. Not every example uses every function (hence the `dead_code`
//! allowances at the two `mod` lines).

use nxvk_core::{Context, Device, Result, Tensor};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The command-line arguments of a benchmark example.
pub struct Arguments {
    /// Smaller sizes (the workload names say which where they differ), so lavapipe can run
    /// the bench as a regression check; fewer repeats and no minimum warm-up time.
    pub quick: bool,
    /// Workloads to run (empty: all); `name` also selects every `name@variant`.
    only: Vec<String>,
}

impl Arguments {
    /// `--quick` and `--only a,b` from the process's arguments (`--profile` is read where
    /// work is timed); anything else is ignored.
    pub fn from_command_line() -> Arguments {
        let arguments: Vec<String> = std::env::args().skip(1).collect();
        let quick = arguments.iter().any(|argument| argument == "--quick");
        let only = arguments
            .iter()
            .position(|argument| argument == "--only")
            .and_then(|index| arguments.get(index + 1))
            .map(|list| list.split(',').map(str::to_owned).collect())
            .unwrap_or_default();
        Arguments { quick, only }
    }

    /// Whether workload `name` was asked for.
    pub fn wants(&self, name: &str) -> bool {
        self.only.is_empty()
            || self
                .only
                .iter()
                .any(|wanted| name == wanted || name.starts_with(&format!("{wanted}@")))
    }
}

/// The context of the device nxvk picks (`NXVK_DEVICE`), its summary printed on stderr.
pub fn open_context() -> Context {
    let context = Context::new().expect("a Vulkan device");
    eprintln!("{{\"device\": {:?}}}", context.capabilities().summary());
    context
}

/// One workload's figure.
pub struct Record {
    pub value: f64,
    pub unit: &'static str,
    pub better: &'static str,
}

impl Record {
    pub fn gigabytes_per_second(bytes: f64, time: Duration) -> Record {
        Record {
            value: bytes / time.as_secs_f64() / 1e9,
            unit: "GB/s",
            better: "higher",
        }
    }

    pub fn teraflops(flops: f64, time: Duration) -> Record {
        Record {
            value: flops / time.as_secs_f64() / 1e12,
            unit: "TFLOP/s",
            better: "higher",
        }
    }

    pub fn milliseconds(time: Duration) -> Record {
        Record {
            value: time.as_secs_f64() * 1e3,
            unit: "ms",
            better: "lower",
        }
    }

    pub fn microseconds(time: Duration) -> Record {
        Record {
            value: time.as_secs_f64() * 1e6,
            unit: "us",
            better: "lower",
        }
    }

    /// `time` spent on `ops` operations, per operation.
    pub fn microseconds_per_op(time: Duration, ops: usize) -> Record {
        Record {
            value: time.as_secs_f64() * 1e6 / ops as f64,
            unit: "us/op",
            better: "lower",
        }
    }
}

/// One benchmark: runs on the example's bench state `B` and returns its figure.
pub type Workload<B> = Box<dyn Fn(&B) -> Result<Record>>;

/// Runs the wanted workloads in order, printing one JSON line each (an error line where one
/// fails, so one failure does not hide the other figures).
pub fn run_workloads<B>(arguments: &Arguments, bench: &B, workloads: Vec<(String, Workload<B>)>) {
    for (name, workload) in workloads {
        if !arguments.wants(&name) {
            continue;
        }
        match workload(bench) {
            Ok(record) => println!(
                "{{\"name\": \"{name}\", \"value\": {:.4}, \"unit\": \"{}\", \"better\": \"{}\", \"impl\": \"nxvk\"}}",
                record.value, record.unit, record.better
            ),
            Err(error) => println!(
                "{{\"name\": \"{name}\", \"error\": {:?}, \"impl\": \"nxvk\"}}",
                error.to_string()
            ),
        }
    }
}

/// Least time each GPU-timed workload runs before it is measured.
const WARM_UP: Duration = Duration::from_millis(300);

pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Whether `--profile` was given.
fn profile_requested() -> bool {
    std::env::args().any(|argument| argument == "--profile")
}

/// Runs `run` once with its dispatches timed and prints its time per kernel on stderr.
fn print_dispatch_profile(device: &Device, run: impl Fn() -> Result<()>) -> Result<()> {
    let profile = device.profile_dispatches(run)?;
    for (kernel, dispatches, time) in profile.by_kernel() {
        eprintln!(
            "{{\"profile\": {{\"kernel\": {kernel:?}, \"dispatches\": {dispatches}, \"ms\": {:.4}}}}}",
            time.as_secs_f64() * 1e3
        );
    }
    if profile.untimed > 0 {
        eprintln!(
            "{{\"profile\": {{\"untimed_dispatches\": {}}}}}",
            profile.untimed
        );
    }
    Ok(())
}

/// Median GPU time of `run` (which records work on `device`), after warm-up runs.
pub fn gpu_median(device: &Device, quick: bool, run: impl Fn() -> Result<()>) -> Result<Duration> {
    let (warm, repeats) = if quick { (1, 5) } else { (3, 20) };
    // Warm up for at least WARM_UP too: an idle H200 sits at 345 MHz, and a few milliseconds
    // of work do not bring its clocks up (add ran at 1.3-4.4 TB/s without).
    let start = Instant::now();
    let mut runs = 0;
    while runs < warm || (!quick && start.elapsed() < WARM_UP) {
        device.gpu_time(&run)?;
        runs += 1;
    }
    let samples = (0..repeats)
        .map(|_| device.gpu_time(&run))
        .collect::<Result<Vec<_>>>()?;
    if profile_requested() {
        print_dispatch_profile(device, &run)?;
    }
    Ok(median(samples))
}

/// Median wall time of `once` over `repeats` runs after `warm` unmeasured ones.
pub fn wall_median(
    warm: usize,
    repeats: usize,
    once: impl Fn() -> Result<Duration>,
) -> Result<Duration> {
    for _ in 0..warm {
        once()?;
    }
    let samples = (0..repeats).map(|_| once()).collect::<Result<Vec<_>>>()?;
    Ok(median(samples))
}

/// `n` values in [0, 1) from a xorshift generator seeded with `seed` (reproducible inputs).
pub fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

/// An f32 tensor of `shape` holding [`random_f32`] values from `seed`.
pub fn random_f32_tensor(device: &Arc<Device>, shape: &[usize], seed: u64) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    Tensor::from_slice(device, shape, &random_f32(n, seed))
}
