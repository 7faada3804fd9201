//! The nxvk-kernels examples that `demo`, `bench` and `coverage` wrap, run in release mode.

use std::process::Command;

use anyhow::{Result, bail};

use crate::process;

/// `cargo run --release -p nxvk-kernels --example NAME -- ARGUMENTS`, after checking the
/// example exists so that a missing one fails with a sentence rather than cargo's error
/// after a long dependency build.
pub fn command(name: &str, arguments: &[String]) -> Result<Command> {
    let workspace_root = process::workspace_root();
    let examples = workspace_root.join("crates/nxvk-kernels/examples");
    let single_file = examples.join(format!("{name}.rs"));
    let directory = examples.join(name).join("main.rs");
    if !single_file.is_file() && !directory.is_file() {
        bail!(
            "the nxvk-kernels example `{name}` does not exist yet (expected {}); it is part of \
             the kernels work, not of xtask",
            single_file.display()
        );
    }
    let mut command = Command::new("cargo");
    command
        .current_dir(&workspace_root)
        .args([
            "run",
            "--release",
            "-p",
            "nxvk-kernels",
            "--example",
            name,
            "--",
        ])
        .args(arguments);
    Ok(command)
}

/// Runs the example with inherited streams; its failure is this command's failure.
pub fn run(name: &str, arguments: &[String]) -> Result<()> {
    process::run(&mut command(name, arguments)?)
}
