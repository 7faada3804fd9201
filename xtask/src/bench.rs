//! `cargo xtask bench`: the `bench` example (see example.rs for its crate), which prints one JSON line per
//! measurement in the format of peers/README.md. xtask only forwards the workload filter and
//! keeps a copy of the lines, so the example stays a plain stdout writer.

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
    /// Arguments after `--` go to the bench example unchanged.
    #[arg(last = true)]
    pub example_arguments: Vec<String>,
}

pub fn run(args: &BenchArgs) -> Result<()> {
    let mut arguments = Vec::new();
    if !args.only.is_empty() {
        arguments.extend(["--only".to_owned(), args.only.join(",")]);
    }
    arguments.extend(args.example_arguments.iter().cloned());
    let Some(out) = &args.out else {
        return example::run("bench", &arguments);
    };

    let mut out_file =
        File::create(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut command = example::command("bench", &arguments)?;
    println!("$ {} > {}", process::command_line(&command), out.display());
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot start the bench example")?;
    let stdout = child
        .stdout
        .take()
        .context("the bench example has no stdout pipe")?;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        writeln!(out_file, "{line}")?;
    }
    let exit_status = child.wait()?;
    if !exit_status.success() {
        bail!(
            "the bench example failed ({exit_status}); lines so far are in {}",
            out.display()
        );
    }
    Ok(())
}
