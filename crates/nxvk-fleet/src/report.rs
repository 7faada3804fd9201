//! Per-host results of `nxvk-fleet test`: the JSON files and the summary table.
//!
//! Layout: `<results>/<commit>/<host>.json`, one file per host per commit, overwritten by a
//! re-run of the same commit.

use std::path::{Path, PathBuf};

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::{Deserialize, Serialize};

use crate::error::FleetError;
use crate::job::{JobResult, JobStatus};

/// How a host's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostStatus {
    /// Every job passed or was skipped.
    Passed,
    /// A job failed or could not run.
    Failed,
    /// The host could not be reached (refused, timed out, no route).
    Unreachable,
    /// The host was reached but set-up failed (authentication, host key, shipping).
    Error,
}

/// One host's result file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostReport {
    /// Host name from the fleet file.
    pub host: String,
    /// The commit tested.
    pub commit: String,
    /// Overall status.
    pub status: HostStatus,
    /// Vulkan driver, from `vulkaninfo --summary` when available.
    pub driver: Option<String>,
    /// Vulkan device name, likewise.
    pub device: Option<String>,
    /// Tests passed over all jobs.
    pub passed: u64,
    /// Tests failed over all jobs.
    pub failed: u64,
    /// Host fallbacks counted by the coverage check.
    pub fallbacks: u64,
    /// Wall time for the host in seconds.
    pub duration_s: f64,
    /// Per-job results.
    pub jobs: Vec<JobResult>,
    /// Errors that stopped or marred the run.
    pub errors: Vec<String>,
}

impl HostReport {
    /// A report with no jobs yet.
    pub fn new(host: &str, commit: &str) -> HostReport {
        HostReport {
            host: host.to_owned(),
            commit: commit.to_owned(),
            status: HostStatus::Passed,
            driver: None,
            device: None,
            passed: 0,
            failed: 0,
            fallbacks: 0,
            duration_s: 0.0,
            jobs: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// Adds a job's numbers and lowers the status if it did not pass.
    pub fn add_job(&mut self, job: JobResult) {
        self.passed += job.tests_passed;
        self.failed += job.tests_failed;
        self.fallbacks += job.fallbacks;
        if matches!(
            job.status,
            JobStatus::Failed | JobStatus::TimedOut | JobStatus::Error
        ) {
            self.status = HostStatus::Failed;
            self.errors.push(match &job.error {
                Some(error) => format!("job `{}`: {error}", job.name),
                None => format!("job `{}` exited with {:?}", job.name, job.exit_code),
            });
        }
        self.jobs.push(job);
    }

    /// Writes `<results>/<commit>/<host>.json` and returns its path.
    pub fn write(&self, results: &Path) -> Result<PathBuf, FleetError> {
        let path = results
            .join(&self.commit)
            .join(format!("{}.json", self.host));
        write_json(&path, self)?;
        Ok(path)
    }
}

/// Writes pretty JSON to `path`, creating its folder.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), FleetError> {
    let write_error = |source| FleetError::WriteResult {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(write_error)?;
    }
    let text = serde_json::to_string_pretty(value).map_err(|error| write_error(error.into()))?;
    std::fs::write(path, text + "\n").map_err(write_error)
}

/// Reads driver and device from `vulkaninfo --summary` (first GPU listed).
pub fn parse_vulkaninfo_summary(text: &str) -> (Option<String>, Option<String>) {
    let field = |key: &str| {
        text.lines().find_map(|line| {
            let (name, value) = line.split_once('=')?;
            (name.trim() == key).then(|| value.trim().to_owned())
        })
    };
    let driver = match (field("driverName"), field("driverInfo")) {
        (Some(name), Some(info)) => Some(format!("{name} {info}")),
        (name, info) => name.or(info),
    };
    (driver, field("deviceName"))
}

/// The summary table printed after a fleet test.
pub fn summary_table(reports: &[HostReport]) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header([
        "host",
        "status",
        "driver",
        "device",
        "passed",
        "failed",
        "fallbacks",
        "duration",
    ]);
    for report in reports {
        table.add_row([
            report.host.clone(),
            format!("{:?}", report.status).to_lowercase(),
            report.driver.clone().unwrap_or_else(|| "-".to_owned()),
            report.device.clone().unwrap_or_else(|| "-".to_owned()),
            report.passed.to_string(),
            report.failed.to_string(),
            report.fallbacks.to_string(),
            format!("{:.1} s", report.duration_s),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vulkaninfo_summary() {
        let text = "Devices:\n========\nGPU0:\n\tdeviceName         = llvmpipe (LLVM 15.0.6, 256 bits)\n\
                    \tdriverName         = llvmpipe\n\tdriverInfo         = Mesa 22.3.6 (LLVM 15.0.6)\n";
        let (driver, device) = parse_vulkaninfo_summary(text);
        assert_eq!(
            driver.as_deref(),
            Some("llvmpipe Mesa 22.3.6 (LLVM 15.0.6)")
        );
        assert_eq!(device.as_deref(), Some("llvmpipe (LLVM 15.0.6, 256 bits)"));
        assert_eq!(parse_vulkaninfo_summary("no vulkan"), (None, None));
    }

    #[test]
    fn writes_results_by_commit_and_host_and_tabulates() {
        let folder = tempfile::tempdir().unwrap();
        let mut report = HostReport::new("h1", "abc");
        report.status = HostStatus::Unreachable;
        report.errors.push("connection refused".to_owned());
        let path = report.write(folder.path()).unwrap();
        assert_eq!(path, folder.path().join("abc").join("h1.json"));
        let back: HostReport =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(back.status, HostStatus::Unreachable);
        let table = summary_table(&[report]).to_string();
        assert!(
            table.contains("unreachable") && table.contains("fallbacks"),
            "{table}"
        );
    }
}
