//! `cargo xtask`: set-up, test, demo, benchmark and fleet commands for nxvk.
//!
//! This binary links no GPU or shader library: it must build on a machine that has
//! neither Vulkan nor a C++ compiler yet, because installing them is one of its jobs.
//! Each subcommand lives in its own file; this file only parses and dispatches.

mod apt;
mod backports;
mod bench;
mod coverage;
mod demo;
mod disk;
mod drivers;
mod example;
mod fleet;
mod os_release;
mod process;
mod race;
mod setup;
mod test;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Set up, test, demo and benchmark nxvk")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Install what the machine lacks (apt packages, the second Mesa driver) and report it.
    Setup(setup::SetupArgs),
    /// Run the main job on the default Vulkan device (lavapipe when there is no GPU).
    Demo(demo::DemoArgs),
    /// Run the whole test suite, on every Vulkan driver the set-up provides.
    Test(test::TestArgs),
    /// Print benchmark JSON lines in the format of the peers' README.
    Bench(bench::BenchArgs),
    /// Print the op x dtype coverage matrix (gpu / fallback / unsupported).
    Coverage(coverage::CoverageArgs),
    /// Run the property tests and the strict-mode check on every host of fleet.toml.
    FleetTest(fleet::FleetTestArgs),
    /// Race a performance knob across the fleet and apply the decision rule.
    Race(race::RaceArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Setup(args) => setup::run(&args),
        Command::Demo(args) => demo::run(&args),
        Command::Test(args) => test::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Coverage(args) => coverage::run(&args),
        Command::FleetTest(args) => fleet::run_fleet_test(&args),
        Command::Race(args) => race::run(&args),
    }
}
