//! `cargo xtask bench`: the benchmark examples in `example::BENCH_EXAMPLES`, run
//! one after the other; each prints one JSON line per measurement in the format of
//! peers/README.md. xtask only forwards the workload filter and keeps a copy of the lines, so
//! the examples stay plain stdout writers.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Stdio;

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::{example, process};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Comma-separated workload names to run (default: all).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Also write the JSON lines to this file (stdout still shows them).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Arguments after `--` go to every bench example unchanged.
    #[arg(last = true)]
    pub example_arguments: Vec<String>,
}

pub fn run(args: &BenchArgs) -> Result<()> {
    let mut arguments = Vec::new();
    if !args.only.is_empty() {
        arguments.extend(["--only".to_owned(), args.only.join(",")]);
    }
    arguments.extend(args.example_arguments.iter().cloned());
    let mut out_file = match &args.out {
        Some(out) => {
            Some(File::create(out).with_context(|| format!("cannot create {}", out.display()))?)
        }
        None => None,
    };
    for &(package, name) in example::BENCH_EXAMPLES {
        if example::exists(package, name) {
            run_one(package, name, &arguments, out_file.as_mut())?;
        }
    }
    Ok(())
}

/// Runs one benchmark example, echoing its lines and copying them to `out_file`.
fn run_one(
    package: &str,
    name: &str,
    arguments: &[String],
    out_file: Option<&mut File>,
) -> Result<()> {
    let mut command = example::command_in(package, name, arguments)?;
    let Some(out_file) = out_file else {
        return process::run(&mut command);
    };
    println!("$ {}", process::command_line(&command));
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start the {package} example {name}"))?;
    let stdout = child
        .stdout
        .take()
        .context("the benchmark example has no stdout pipe")?;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        writeln!(out_file, "{line}")?;
    }
    let exit_status = child.wait()?;
    if !exit_status.success() {
        bail!("the {package} example {name} failed ({exit_status}); lines so far were written");
    }
    Ok(())
}
