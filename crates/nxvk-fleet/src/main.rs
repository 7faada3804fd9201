//! The `nxvk-fleet` command: `test`, `race`, and the loopback self-test benchmark.
//! This file only parses arguments, wires the library together and sets the exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use nxvk_fleet::{
    CommitBundle, FleetConfig, FleetTestOptions, HostStatus, LOOPBACK_BENCH_COMMAND, LOOPBACK_JOBS,
    LoadPolicy, LoopbackFleet, LoopbackOptions, MIN_REPLICATES, RaceOptions, SshOptions,
    check_outcome, find_knob, loopback_bench_lines, race_table, repository_root, run_fleet_test,
    run_race, summary_table,
};

/// Exit code when every host passed (and, in loopback mode, the unreachable host was reported).
const EXIT_ALL_PASSED: u8 = 0;
/// Exit code when a host failed, was unreachable or errored.
const EXIT_HOST_FAILED: u8 = 1;

#[derive(Debug, Parser)]
#[command(
    name = "nxvk-fleet",
    about = "Run nxvk's tests and knob races on the hosts of fleet.toml"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Ship HEAD to every host and run the job list (property tests, strict coverage, mix test).
    Test(TestArgs),
    /// Race a knob (arm A vs arm B) on every host and apply the decision rule.
    Race(RaceArgs),
    /// Self-test benchmark for the crate's own loopback tests: NOT a real benchmark.
    LoopbackBench(LoopbackBenchArgs),
}

#[derive(Debug, Args)]
struct FleetArgs {
    /// Fleet file (default: fleet.toml at the repository root).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Comma-separated host names to use (default: all).
    #[arg(long, value_delimiter = ',')]
    hosts: Vec<String>,
    /// Results root; files go to <results>/<commit>/ (default: target/fleet-results).
    #[arg(long)]
    results: Option<PathBuf>,
    /// Accept and record unknown host keys even for hosts whose policy is strict.
    #[arg(long)]
    accept_new_host_keys: bool,
    /// Use the throwaway loopback fleet (sshd on 127.0.0.1) instead of the fleet file.
    #[arg(long, conflicts_with = "config")]
    loopback: bool,
}

impl FleetArgs {
    /// `--results`, else target/fleet-results under the repository root.
    fn results_root(&self, root: &Path) -> PathBuf {
        self.results
            .clone()
            .unwrap_or_else(|| root.join("target/fleet-results"))
    }

    fn ssh_options(&self) -> SshOptions {
        SshOptions {
            accept_new_host_keys: self.accept_new_host_keys,
        }
    }
}

#[derive(Debug, Args)]
struct TestArgs {
    #[command(flatten)]
    fleet: FleetArgs,
}

#[derive(Debug, Args)]
struct RaceArgs {
    /// Knob name from the knob table (e.g. submit_threshold, cse).
    name: String,
    /// Replicates per arm per host (at least 5; default from the fleet file).
    #[arg(long)]
    replicates: Option<usize>,
    /// Highest 1-minute load per core at which a host may race (default from the fleet file).
    #[arg(long)]
    max_load: Option<f64>,
    /// Race on overloaded hosts with a warning instead of refusing.
    #[arg(long)]
    ignore_load: bool,
    #[command(flatten)]
    fleet: FleetArgs,
}

#[derive(Debug, Args)]
struct LoopbackBenchArgs {
    /// Comma-separated workload names to print.
    #[arg(long, value_delimiter = ',', required = true)]
    only: Vec<String>,
}

/// The fleet to use: the loopback one (kept alive by the returned guard) or the file's.
struct Fleet {
    config: FleetConfig,
    loopback: Option<LoopbackFleet>,
}

fn open_fleet(args: &FleetArgs, root: &Path) -> anyhow::Result<Fleet> {
    if args.loopback {
        let target_dir =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
        let options = LoopbackOptions {
            target_dir,
            bench_command: LOOPBACK_BENCH_COMMAND.to_owned(),
            jobs: LOOPBACK_JOBS,
            icds: std::env::var("NXVK_TEST_ICDS").ok(),
        };
        let loopback = LoopbackFleet::start(&options)?;
        for note in &loopback.notes {
            eprintln!("note: {note}");
        }
        eprintln!(
            "loopback fleet: sshd on 127.0.0.1:{}, fleet file {}",
            loopback.port,
            loopback.config_path.display()
        );
        Ok(Fleet {
            config: loopback.config.clone(),
            loopback: Some(loopback),
        })
    } else {
        let file = args
            .config
            .clone()
            .unwrap_or_else(|| root.join("fleet.toml"));
        Ok(Fleet {
            config: FleetConfig::load(&file)?,
            loopback: None,
        })
    }
}

fn exit_code(loopback: bool, statuses: &[(String, HostStatus)]) -> ExitCode {
    let ok = if loopback {
        check_outcome(statuses)
            .map_err(|problems| eprintln!("loopback run failed: {problems}"))
            .is_ok()
    } else {
        statuses
            .iter()
            .all(|(_, status)| *status == HostStatus::Passed)
    };
    ExitCode::from(if ok {
        EXIT_ALL_PASSED
    } else {
        EXIT_HOST_FAILED
    })
}

fn run_test(args: &TestArgs) -> anyhow::Result<ExitCode> {
    let root = repository_root(&std::env::current_dir()?)?;
    let fleet = open_fleet(&args.fleet, &root)?;
    let hosts = fleet.config.select_hosts(&args.fleet.hosts)?;
    let bundle = CommitBundle::create(&root)?;
    let options = FleetTestOptions {
        results: args.fleet.results_root(&root),
        ssh: args.fleet.ssh_options(),
    };
    let reports = run_fleet_test(&fleet.config, &hosts, &bundle, &options)?;
    println!("{}", summary_table(&reports));
    for report in reports.iter().filter(|report| !report.errors.is_empty()) {
        for error in &report.errors {
            println!("{}: {error}", report.host);
        }
    }
    println!(
        "results: {}",
        options.results.join(&bundle.commit).display()
    );
    let statuses: Vec<_> = reports
        .iter()
        .map(|report| (report.host.clone(), report.status))
        .collect();
    drop(fleet.loopback);
    Ok(exit_code(args.fleet.loopback, &statuses))
}

fn run_race_command(args: &RaceArgs) -> anyhow::Result<ExitCode> {
    let knob = find_knob(&args.name)?;
    let root = repository_root(&std::env::current_dir()?)?;
    let fleet = open_fleet(&args.fleet, &root)?;
    let hosts = fleet.config.select_hosts(&args.fleet.hosts)?;
    let replicates = args.replicates.unwrap_or(fleet.config.race.replicates);
    anyhow::ensure!(
        replicates >= MIN_REPLICATES,
        "--replicates must be at least {MIN_REPLICATES}"
    );
    let bundle = CommitBundle::create(&root)?;
    let options = RaceOptions {
        replicates,
        max_load_per_core: args.max_load.unwrap_or(fleet.config.race.max_load_per_core),
        load_policy: if args.ignore_load {
            LoadPolicy::Warn
        } else {
            fleet.config.race.load_policy
        },
        results: args.fleet.results_root(&root),
        ssh: args.fleet.ssh_options(),
    };
    println!(
        "race `{}`: A = {}, B = {} on {}",
        knob.name,
        knob.arm_a,
        knob.arm_b,
        knob.workloads.join(", ")
    );
    let (report, json_path) = run_race(&fleet.config, &hosts, knob, &bundle, &options)?;
    println!("{}", race_table(&report));
    println!("decision for `{}`: {}", knob.name, report.decision);
    println!("results: {} (chart: .svg beside it)", json_path.display());
    let statuses: Vec<_> = report
        .hosts
        .iter()
        .map(|host| (host.host.clone(), host.status))
        .collect();
    drop(fleet.loopback);
    Ok(exit_code(args.fleet.loopback, &statuses))
}

fn main() -> anyhow::Result<ExitCode> {
    match Cli::parse().command {
        Command::Test(args) => run_test(&args),
        Command::Race(args) => run_race_command(&args),
        Command::LoopbackBench(args) => {
            let variables: Vec<(String, String)> = std::env::vars().collect();
            for line in loopback_bench_lines(&args.only, &variables) {
                println!("{line}");
            }
            Ok(ExitCode::from(EXIT_ALL_PASSED))
        }
    }
}
