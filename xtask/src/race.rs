//! `cargo xtask race NAME`: forwards to `nxvk-fleet race NAME` (crates/nxvk-fleet), which
//! races a knob's two arms across the fleet and prints DESIGN.md decision 9's verdict.

use anyhow::Result;
use clap::Args;

use crate::fleet::{FleetOptions, run_nxvk_fleet};

/// Arguments of `cargo xtask race`.
#[derive(Debug, Args)]
pub struct RaceArgs {
    /// Knob name from nxvk-fleet's knob table (e.g. submit_threshold, cse).
    pub name: String,
    /// Replicates per arm per host (at least 5; default from the fleet file).
    #[arg(long)]
    pub replicates: Option<usize>,
    /// Highest 1-minute load per core at which a host may race (default from the fleet file).
    #[arg(long)]
    pub max_load: Option<f64>,
    /// Race on overloaded hosts with a warning instead of refusing.
    #[arg(long)]
    pub ignore_load: bool,
    #[command(flatten)]
    pub fleet: FleetOptions,
}

pub fn run(args: &RaceArgs) -> Result<()> {
    let mut arguments = vec![args.name.clone()];
    if let Some(replicates) = args.replicates {
        arguments.extend(["--replicates".to_owned(), replicates.to_string()]);
    }
    if let Some(max_load) = args.max_load {
        arguments.extend(["--max-load".to_owned(), max_load.to_string()]);
    }
    if args.ignore_load {
        arguments.push("--ignore-load".to_owned());
    }
    arguments.extend(args.fleet.arguments());
    run_nxvk_fleet("race", &arguments)
}
