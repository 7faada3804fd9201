//! `cargo xtask setup`: make this machine able to build and test nxvk. Idempotent: a second
//! run changes nothing and says so in a line per part.

use anyhow::Result;
use clap::Args;

use crate::drivers::{self, IcdFiles};
use crate::os_release::OsRelease;
use crate::{apt, process};

#[derive(Debug, Args)]
pub struct SetupArgs {
    /// Stop after the system packages (skip the second Vulkan driver and the driver check).
    #[arg(long)]
    pub system_packages_only: bool,
}

pub fn run(args: &SetupArgs) -> Result<()> {
    if args.system_packages_only {
        ensure_system_packages()
    } else {
        ensure_all().map(drop)
    }
}

/// The system packages (apt on Debian/Ubuntu; guidance elsewhere).
pub fn ensure_system_packages() -> Result<()> {
    apt::ensure_system_packages(&OsRelease::read())
}

/// Everything: system packages, the second driver, and a vulkaninfo check of both drivers.
/// Returns the ICD files that the test steps pin.
pub fn ensure_all() -> Result<IcdFiles> {
    let workspace_root = process::workspace_root();
    let os = OsRelease::read();
    apt::ensure_system_packages(&os)?;
    drivers::ensure_second_driver(&workspace_root, &os)?;
    let icds = drivers::installed_icds(&workspace_root);
    drivers::verify(&icds)?;
    Ok(icds)
}
