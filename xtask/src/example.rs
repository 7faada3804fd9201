//! The crate examples that `demo`, `bench` and `coverage` wrap, run in release mode.
//!
//! Which crate holds each example is decided here alone: `demo` lives in nxvk-core until the
//! training demo takes it over; `bench` and `coverage` use the kernel catalog.

use std::process::Command;

use anyhow::{Result, bail};

use crate::process;

/// The package that holds example `name`.
fn package_of(name: &str) -> &'static str {
    match name {
        "coverage" | "bench" => "nxvk-kernels",
        _ => "nxvk-core",
    }
}

/// `cargo run --release -p PACKAGE --example NAME -- ARGUMENTS`, after checking the
/// example exists so that a missing one fails with a sentence rather than cargo's error
/// after a long dependency build.
pub fn command(name: &str, arguments: &[String]) -> Result<Command> {
    let workspace_root = process::workspace_root();
    let package = package_of(name);
    let examples = workspace_root.join("crates").join(package).join("examples");
    let single_file = examples.join(format!("{name}.rs"));
    let directory = examples.join(name).join("main.rs");
    if !single_file.is_file() && !directory.is_file() {
        bail!(
            "the {package} example `{name}` does not exist yet (expected {})",
            single_file.display()
        );
    }
    let mut command = Command::new("cargo");
    command
        .current_dir(&workspace_root)
        .args(["run", "--release", "-p", package, "--example", name, "--"])
        .args(arguments);
    Ok(command)
}

/// Runs the example with inherited streams; its failure is this command's failure.
pub fn run(name: &str, arguments: &[String]) -> Result<()> {
    process::run(&mut command(name, arguments)?)
}
