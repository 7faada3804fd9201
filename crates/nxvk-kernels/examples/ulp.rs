//! Measures the ulp error of every transcendental against the host reference (the CPU's libm)
//! on f32 and f64, over seeded samples (edge values, then log-uniform magnitudes across each
//! op's domain), and prints a Markdown table: op, dtype, samples, max ulps, the bound
//! `accuracy::ulp_bound` states, and the worst input.
//!
//! `cargo run --release -p nxvk-kernels --example ulp -- [--samples N] [--seed S] [--op NAME]`
//! (default 2^20 samples per op). Exits with [`EXIT_BOUND_EXCEEDED`] when an op exceeds its bound.

use nxvk_core::{Context, DType};
use nxvk_kernels::accuracy::{MeasuredOp, measure, ulp_bound};
use nxvk_kernels::f32_math;
use std::process::ExitCode;

/// Exit code when a measured error exceeds its stated bound.
const EXIT_BOUND_EXCEEDED: u8 = 2;
/// Exit code when no device could be opened or a run failed.
const EXIT_DEVICE_ERROR: u8 = 3;

fn argument(name: &str) -> Option<String> {
    let arguments: Vec<String> = std::env::args().collect();
    arguments
        .iter()
        .position(|argument| argument == name)
        .and_then(|index| arguments.get(index + 1).cloned())
}

fn main() -> ExitCode {
    let n_samples = argument("--samples")
        .and_then(|value| value.parse().ok())
        .unwrap_or(1usize << 20);
    let seed = argument("--seed")
        .and_then(|value| value.parse().ok())
        .unwrap_or(0x5eed);
    let only = argument("--op");
    let device = match Context::new().and_then(|context| context.device()) {
        Ok(device) => device,
        Err(error) => {
            eprintln!("no device: {error}");
            return ExitCode::from(EXIT_DEVICE_ERROR);
        }
    };
    println!("| op | dtype | samples | max ulps | bound | worst input | gpu | reference |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut exceeded = false;
    for op in MeasuredOp::all() {
        if only.as_deref().is_some_and(|name| name != op.name()) {
            continue;
        }
        for dtype in [DType::F32, DType::F64] {
            match measure(&device, op, dtype, n_samples, seed) {
                Ok(result) => {
                    let bound = ulp_bound(op.name(), dtype, f32_math(&device));
                    exceeded |= result.max_ulps > bound;
                    println!(
                        "| {} | {dtype} | {} | {} | {bound} | {:?} | {:e} | {:e} |",
                        op.name(),
                        result.n_samples,
                        result.max_ulps,
                        result.worst_operands,
                        result.worst_actual,
                        result.worst_expected
                    );
                }
                Err(error) => {
                    eprintln!("{} {dtype}: {error}", op.name());
                    return ExitCode::from(EXIT_DEVICE_ERROR);
                }
            }
        }
    }
    if exceeded {
        ExitCode::from(EXIT_BOUND_EXCEEDED)
    } else {
        ExitCode::SUCCESS
    }
}
