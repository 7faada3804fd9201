//! `cargo xtask coverage`: the op x dtype matrix (gpu / fallback / unsupported), printed by
//! the nxvk-kernels `coverage` example from the op table.

use anyhow::Result;
use clap::Args;

use crate::example;

#[derive(Debug, Args)]
pub struct CoverageArgs {
    /// Print the matrix as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Exit non-zero if any op x dtype outside the allowlist falls back to the host.
    #[arg(long)]
    pub strict: bool,
}

pub fn run(args: &CoverageArgs) -> Result<()> {
    let flags = [(args.json, "--json"), (args.strict, "--strict")];
    let arguments: Vec<String> = flags
        .iter()
        .filter(|(set, _)| *set)
        .map(|(_, flag)| (*flag).to_owned())
        .collect();
    example::run("coverage", &arguments)
}
