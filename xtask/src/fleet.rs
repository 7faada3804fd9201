//! `cargo xtask fleet-test`: forwards to `nxvk-fleet test` (crates/nxvk-fleet).
//!
//! xtask must build before libssh2's C dependencies exist, so it does not link nxvk-fleet:
//! it runs `cargo run --release -p nxvk-fleet -- test ...` as a child process.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;
use clap::Args;

use crate::process::{run, workspace_root};

/// Options shared by `fleet-test` and `race`, forwarded as they are.
#[derive(Debug, Args)]
pub struct FleetOptions {
    /// Use a throwaway loopback fleet (sshd on 127.0.0.1, cheap CI jobs) instead of fleet.toml.
    #[arg(long, conflicts_with = "config")]
    pub loopback: bool,
    /// Fleet file (default: fleet.toml at the repository root).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Comma-separated host names to use (default: all).
    #[arg(long)]
    pub hosts: Option<String>,
    /// Results root; files go to <results>/<commit>/ (default: target/fleet-results).
    #[arg(long)]
    pub results: Option<PathBuf>,
    /// Accept and record unknown host keys even for hosts whose policy is strict.
    #[arg(long)]
    pub accept_new_host_keys: bool,
}

impl FleetOptions {
    /// The options as nxvk-fleet arguments.
    pub fn arguments(&self) -> Vec<String> {
        let mut arguments = Vec::new();
        if self.loopback {
            arguments.push("--loopback".to_owned());
        }
        if let Some(config) = &self.config {
            arguments.extend(["--config".to_owned(), config.display().to_string()]);
        }
        if let Some(hosts) = &self.hosts {
            arguments.extend(["--hosts".to_owned(), hosts.clone()]);
        }
        if let Some(results) = &self.results {
            arguments.extend(["--results".to_owned(), results.display().to_string()]);
        }
        if self.accept_new_host_keys {
            arguments.push("--accept-new-host-keys".to_owned());
        }
        arguments
    }
}

/// Arguments of `cargo xtask fleet-test`.
#[derive(Debug, Args)]
pub struct FleetTestArgs {
    #[command(flatten)]
    pub fleet: FleetOptions,
}

/// Runs `nxvk-fleet <subcommand> <arguments>` through cargo; a non-zero exit is an error.
pub fn run_nxvk_fleet(subcommand: &str, arguments: &[String]) -> Result<()> {
    let mut command = Command::new("cargo");
    command
        .current_dir(workspace_root())
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "nxvk-fleet",
            "--",
            subcommand,
        ])
        .args(arguments);
    run(&mut command)
}

pub fn run_fleet_test(args: &FleetTestArgs) -> Result<()> {
    run_nxvk_fleet("test", &args.fleet.arguments())
}
