//! The crate examples that `demo`, `bench` and `coverage` wrap, run in release mode.
//!
//! Which crate holds each example is decided here alone: `demo` (training on the digits) lives
//! in nxvk-fusion, `coverage` in the kernel catalog; `bench` runs two: `bench_kernels` in the
//! kernel catalog (eager workloads) and `bench_fusion` in the fusion planner (planned
//! workloads). Their names differ so that cargo's example outputs do not collide.

use std::process::Command;

use anyhow::{Result, bail};

use crate::process;

/// The package that holds example `name` (for `bench`, see [`BENCH_EXAMPLES`]).
fn package_of(name: &str) -> &'static str {
    match name {
        "coverage" => "nxvk-kernels",
        "demo" => "nxvk-fusion",
        _ => "nxvk-core",
    }
}

/// The (package, example) pairs that `cargo xtask bench` runs, in this order.
pub const BENCH_EXAMPLES: &[(&str, &str)] = &[
    ("nxvk-kernels", "bench_kernels"),
    ("nxvk-fusion", "bench_fusion"),
];

/// Whether `package` has an example called `name` (a single file or a folder).
pub fn exists(package: &str, name: &str) -> bool {
    let examples = process::workspace_root()
        .join("crates")
        .join(package)
        .join("examples");
    examples.join(format!("{name}.rs")).is_file() || examples.join(name).join("main.rs").is_file()
}

/// `cargo run --release -p PACKAGE --example NAME -- ARGUMENTS`, after checking the
/// example exists so that a missing one fails with a sentence rather than cargo's error
/// after a long dependency build.
pub fn command(name: &str, arguments: &[String]) -> Result<Command> {
    command_in(package_of(name), name, arguments)
}

/// [`command`] for an example of a named package.
pub fn command_in(package: &str, name: &str, arguments: &[String]) -> Result<Command> {
    if !exists(package, name) {
        bail!(
            "the {package} example `{name}` does not exist yet (expected crates/{package}/examples/{name}.rs)"
        );
    }
    let mut command = Command::new("cargo");
    command
        .current_dir(process::workspace_root())
        .args(["run", "--release", "-p", package, "--example", name, "--"])
        .args(arguments);
    Ok(command)
}

/// Runs the example with inherited streams; its failure is this command's failure.
pub fn run(name: &str, arguments: &[String]) -> Result<()> {
    process::run(&mut command(name, arguments)?)
}
