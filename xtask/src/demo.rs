//! `cargo xtask demo`: the main job on the default Vulkan device (lavapipe when there is no
//! GPU), after making sure the system packages it builds against are installed.

use anyhow::Result;
use clap::Args;

use crate::{example, setup};

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Arguments after `--` go to the demo example unchanged.
    #[arg(last = true)]
    pub example_arguments: Vec<String>,
}

pub fn run(args: &DemoArgs) -> Result<()> {
    setup::ensure_system_packages()?;
    example::run("demo", &args.example_arguments)
}
