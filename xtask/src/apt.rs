//! The Debian/Ubuntu system packages that building and testing nxvk needs, checked with
//! dpkg-query and installed with apt-get when xtask runs as root.

use std::collections::BTreeSet;
use std::process::Command;

use anyhow::{Result, bail};

use crate::os_release::OsRelease;
use crate::process;

/// Each required package and why nxvk needs it (docs/BUILDING.md repeats these reasons).
pub const REQUIRED_PACKAGES: &[(&str, &str)] = &[
    (
        "mesa-vulkan-drivers",
        "lavapipe, the CPU Vulkan driver every test can run on",
    ),
    (
        "libvulkan-dev",
        "the Vulkan loader that vulkano opens at run time",
    ),
    (
        "vulkan-tools",
        "vulkaninfo, to check which driver a run uses",
    ),
    (
        "g++",
        "the glslang crate compiles its bundled glslang 16 with a C++17 compiler",
    ),
    ("pkg-config", "finds OpenSSL for ssh2 (nxvk-fleet)"),
    ("libssl-dev", "OpenSSL headers for ssh2's bundled libssh2"),
    ("zlib1g-dev", "zlib headers for ssh2's bundled libssh2"),
    (
        "openssh-server",
        "the loopback fleet runs sshd on this machine",
    ),
    (
        "openssh-client",
        "ssh-keygen for the loopback fleet's throwaway keys",
    ),
    ("git", "fleet hosts check out the commit under test"),
    ("elixir", "the Nx backend in elixir/ and its mix tests"),
    ("erlang-dev", "erl_nif.h for the NIF"),
    ("erlang-nox", "the BEAM that loads the NIF"),
];

/// Installs the missing required packages, or explains how to when xtask cannot.
pub fn ensure_system_packages(os: &OsRelease) -> Result<()> {
    if !os.is_debian_like() {
        println!(
            "setup: {} is not Debian or Ubuntu; install the equivalent packages listed in docs/BUILDING.md",
            os.pretty_name()
        );
        return Ok(());
    }
    let missing = missing_packages()?;
    if missing.is_empty() {
        println!(
            "setup: all {} required system packages are installed",
            REQUIRED_PACKAGES.len()
        );
        return Ok(());
    }
    println!("setup: missing system packages: {}", missing.join(" "));
    if !is_root()? {
        bail!(
            "cannot install packages without root; run:\n  sudo sh -c 'apt-get update && \
             DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {}'\n\
             then run this command again",
            missing.join(" ")
        );
    }
    let before = installed_package_set()?;
    process::run(Command::new("apt-get").arg("update"))?;
    process::run(
        Command::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "--no-install-recommends"])
            .args(&missing),
    )?;
    let still_missing = missing_packages()?;
    if !still_missing.is_empty() {
        bail!(
            "apt-get succeeded but these packages are still not installed: {}",
            still_missing.join(" ")
        );
    }
    let dependencies: Vec<String> = installed_package_set()?
        .difference(&before)
        .filter(|package| {
            !missing
                .iter()
                .any(|requested| *requested == package_name(package))
        })
        .cloned()
        .collect();
    println!("setup: installed {}", missing.join(" "));
    if !dependencies.is_empty() {
        println!(
            "setup: installed as their dependencies: {}",
            dependencies.join(" ")
        );
    }
    Ok(())
}

/// The required packages that dpkg does not list as fully installed.
fn missing_packages() -> Result<Vec<&'static str>> {
    let mut missing = Vec::new();
    for &(package, _) in REQUIRED_PACKAGES {
        // dpkg-query exits non-zero for a package it has never heard of: that is "missing" too.
        let output = Command::new("dpkg-query")
            .args(["-W", "-f=${Status}", package])
            .output()?;
        if String::from_utf8_lossy(&output.stdout).trim() != "install ok installed" {
            missing.push(package);
        }
    }
    Ok(missing)
}

/// Every installed package as `name:architecture`, to report what apt pulled in.
fn installed_package_set() -> Result<BTreeSet<String>> {
    let listing = process::stdout_of(
        Command::new("dpkg-query")
            .args(["-W", "-f=${db:Status-Abbrev} ${Package}:${Architecture}\n"]),
    )?;
    Ok(listing
        .lines()
        .filter_map(|line| line.strip_prefix("ii "))
        .map(|package| package.trim().to_owned())
        .collect())
}

fn package_name(package_with_architecture: &str) -> &str {
    package_with_architecture
        .split(':')
        .next()
        .unwrap_or(package_with_architecture)
}

fn is_root() -> Result<bool> {
    Ok(process::stdout_of(Command::new("id").arg("-u"))?.trim() == "0")
}
