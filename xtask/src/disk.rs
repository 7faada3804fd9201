//! Free disk space where the build writes, reported by `cargo xtask test` so that a run that
//! fills the disk says so plainly (a CI run once failed deep inside the linker that way).

use std::path::Path;
use std::process::Command;

use crate::process;

/// What a cold `cargo xtask test` writes under `target/` (measured on a clean clone).
pub const COLD_BUILD_GIB: f64 = 8.0;

/// Free space, in GiB, on the file system holding `path`; `None` where `df` cannot tell.
pub fn free_gib(path: &Path) -> Option<f64> {
    // POSIX `df -P -k`: one header line, then `filesystem blocks used available ...` in KiB.
    let output = process::stdout_of(Command::new("df").arg("-P").arg("-k").arg(path)).ok()?;
    let available_kib: f64 = output
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(available_kib / (1024.0 * 1024.0))
}

/// A line for the log: the free space, with a warning when a cold build may not fit.
pub fn report(path: &Path) -> String {
    match free_gib(path) {
        Some(free) if free < COLD_BUILD_GIB => format!(
            "{free:.1} GiB free under {} -- WARNING: a cold build writes about \
             {COLD_BUILD_GIB:.0} GiB there",
            path.display()
        ),
        Some(free) => format!("{free:.1} GiB free under {}", path.display()),
        None => format!("free space under {} unknown (df failed)", path.display()),
    }
}
