//! `cargo xtask test`: the whole suite, as CI runs it. Runs set-up first, then every step of
//! [`STEPS`] with a header and its duration, carries on past a failure, and ends with a
//! summary table; the exit status is non-zero if any step failed.
//!
//! Policy on drivers: the workspace tests are pinned to the system lavapipe and the core suite
//! runs again on the second driver (Mesa 25 lavapipe), so a GPU machine's real driver does not
//! change what a CI result means unless `--any-driver` asks for it. Every step sees
//! `NXVK_TEST_ICDS` (the available ICD files, `:`-separated) for tests that compare drivers.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use clap::builder::PossibleValuesParser;

use crate::drivers::{self, IcdFiles};
use crate::{disk, process, setup};

#[derive(Debug, Args)]
pub struct TestArgs {
    /// Skip this step (repeatable).
    #[arg(long, value_name = "STEP", value_parser = step_names())]
    pub skip: Vec<String>,
    /// Run only this step (repeatable).
    #[arg(long, value_name = "STEP", value_parser = step_names())]
    pub only: Vec<String>,
    /// Let the workspace tests use whichever driver the Vulkan loader picks (a GPU's, say)
    /// instead of the system lavapipe.
    #[arg(long)]
    pub any_driver: bool,
}

/// The environment variable through which tests find every driver the set-up provides.
const TEST_ICDS_VARIABLE: &str = "NXVK_TEST_ICDS";

/// Which Vulkan driver a step is pinned to through VK_ICD_FILENAMES.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Driver {
    /// The step runs no Vulkan code, or chooses drivers itself (the fleet pins per host).
    Unpinned,
    /// The system lavapipe, unless `--any-driver`.
    System,
    /// The backports Mesa 25 lavapipe; the step is skipped where it is unavailable.
    Second,
}

#[derive(Debug)]
struct Step {
    name: &'static str,
    program: &'static str,
    arguments: &'static [&'static str],
    /// Relative to the workspace root.
    directory: &'static str,
    driver: Driver,
    /// The step is skipped, with a reason, until this file (relative to the root) exists.
    requires_file: Option<&'static str>,
}

/// The GPU wait limit the suite runs under unless the caller set one. lavapipe builds a
/// shader's machine code at its first dispatch, inside the wait, and a wait of
/// `gradients_match_finite_differences` (large fused f64 gradient kernels) ran past the
/// 120 s default on the 2-core CI machine (tenth session). A hang still ends as an error.
const TIMEOUT_VARIABLE: &str = "NXVK_TIMEOUT_MS";
const TEST_TIMEOUT_MS: &str = "600000";

const LOOPBACK_FLEET: &str = "crates/nxvk-fleet/src/loopback.rs";

const STEPS: &[Step] = &[
    Step {
        name: "fmt",
        program: "cargo",
        arguments: &["fmt", "--all", "--", "--check"],
        directory: ".",
        driver: Driver::Unpinned,
        requires_file: None,
    },
    Step {
        name: "clippy",
        program: "cargo",
        arguments: &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        directory: ".",
        driver: Driver::Unpinned,
        requires_file: None,
    },
    Step {
        name: "test",
        program: "cargo",
        arguments: &["test", "--workspace"],
        directory: ".",
        driver: Driver::System,
        requires_file: None,
    },
    Step {
        name: "core-second-driver",
        program: "cargo",
        arguments: &["test", "-p", "nxvk-core"],
        directory: ".",
        driver: Driver::Second,
        requires_file: None,
    },
    Step {
        name: "mix",
        program: "mix",
        arguments: &["test"],
        directory: "elixir",
        driver: Driver::System,
        requires_file: Some("elixir/mix.exs"),
    },
    Step {
        name: "fleet-test",
        program: "cargo",
        arguments: &["xtask", "fleet-test", "--loopback"],
        directory: ".",
        driver: Driver::Unpinned,
        requires_file: Some(LOOPBACK_FLEET),
    },
    Step {
        name: "race",
        program: "cargo",
        arguments: &["xtask", "race", "cse", "--loopback", "--replicates", "5"],
        directory: ".",
        driver: Driver::Unpinned,
        requires_file: Some(LOOPBACK_FLEET),
    },
];

/// Lets clap reject unknown step names and list the known ones in `--help`.
fn step_names() -> PossibleValuesParser {
    PossibleValuesParser::new(STEPS.iter().map(|step| step.name))
}

#[derive(Debug)]
enum Outcome {
    Passed,
    Failed(String),
    Skipped(String),
}

pub fn run(args: &TestArgs) -> Result<()> {
    let icds = setup::ensure_all()?;
    let workspace_root = process::workspace_root();
    let test_icds = [&icds.system, &icds.second]
        .into_iter()
        .flatten()
        .map(|path| path.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(":");

    println!("disk: {}", disk::report(&workspace_root));
    let mut results = Vec::new();
    for (index, step) in STEPS.iter().enumerate() {
        let started = Instant::now();
        println!("\n==> [{}/{}] {}", index + 1, STEPS.len(), step.name);
        let outcome = match command_for(step, args, &icds, &workspace_root) {
            Err(reason) => Outcome::Skipped(reason),
            Ok(mut command) => {
                command.env(TEST_ICDS_VARIABLE, &test_icds);
                if std::env::var_os(TIMEOUT_VARIABLE).is_none() {
                    command.env(TIMEOUT_VARIABLE, TEST_TIMEOUT_MS);
                }
                match process::status(&mut command) {
                    Ok(exit_status) if exit_status.success() => Outcome::Passed,
                    Ok(exit_status) => Outcome::Failed(exit_status.to_string()),
                    Err(error) => Outcome::Failed(format!("{error:#}")),
                }
            }
        };
        let seconds = started.elapsed().as_secs_f64();
        match &outcome {
            Outcome::Passed => println!("==> {}: ok in {seconds:.1} s", step.name),
            Outcome::Failed(why) => println!(
                "==> {}: FAILED in {seconds:.1} s ({why}; disk: {})",
                step.name,
                disk::report(&workspace_root)
            ),
            Outcome::Skipped(why) => println!("==> {}: skipped: {why}", step.name),
        }
        results.push((step.name, outcome, seconds));
    }

    print_summary(&results);
    println!("disk: {}", disk::report(&workspace_root));
    let failed: Vec<&str> = results
        .iter()
        .filter(|(_, outcome, _)| matches!(outcome, Outcome::Failed(_)))
        .map(|(name, ..)| *name)
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} of {} steps failed: {}",
            failed.len(),
            STEPS.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

/// The command for a step, or why it does not run here.
fn command_for(
    step: &Step,
    args: &TestArgs,
    icds: &IcdFiles,
    workspace_root: &Path,
) -> Result<Command, String> {
    if args.skip.iter().any(|name| name == step.name) {
        return Err("--skip".to_owned());
    }
    if !args.only.is_empty() && !args.only.iter().any(|name| name == step.name) {
        return Err("not in --only".to_owned());
    }
    if let Some(file) = step.requires_file
        && !workspace_root.join(file).is_file()
    {
        return Err(format!("{file} does not exist yet"));
    }
    let mut command = Command::new(step.program);
    command
        .args(step.arguments)
        .current_dir(workspace_root.join(step.directory));
    match (step.driver, &icds.system, &icds.second) {
        (Driver::Unpinned, ..) => {}
        (Driver::System, _, _) if args.any_driver => {}
        (Driver::System, Some(system), _) => {
            drivers::pin_driver(&mut command, system);
        }
        (Driver::System, None, _) => {
            return Err(
                "no system lavapipe ICD under /usr/share/vulkan/icd.d (pass --any-driver)"
                    .to_owned(),
            );
        }
        (Driver::Second, _, Some(second)) => {
            drivers::pin_driver(&mut command, second);
        }
        (Driver::Second, _, None) => {
            return Err("the second driver is unavailable here (see setup above)".to_owned());
        }
    }
    Ok(command)
}

fn print_summary(results: &[(&str, Outcome, f64)]) {
    let name_width = results
        .iter()
        .map(|(name, ..)| name.len())
        .max()
        .unwrap_or(0)
        .max("step".len());
    println!(
        "\n{:<name_width$}  {:<7}  {:>7}",
        "step", "result", "seconds"
    );
    for (name, outcome, seconds) in results {
        let (result, seconds) = match outcome {
            Outcome::Passed => ("ok", format!("{seconds:.1}")),
            Outcome::Failed(_) => ("FAILED", format!("{seconds:.1}")),
            Outcome::Skipped(_) => ("skipped", "-".to_owned()),
        };
        println!("{name:<name_width$}  {result:<7}  {seconds:>7}");
    }
}
