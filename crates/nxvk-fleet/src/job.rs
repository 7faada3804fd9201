//! The job list run on every host by `nxvk-fleet test`, and the parsing of its output.
//!
//! Policy: [`default_jobs`] is the one place the production job list is written; a fleet
//! file's `[[jobs]]` replaces it as a whole (the loopback fleet uses that for cheap CI jobs).
//! A job with `requires` runs only where that program is on the host's `PATH`.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::FleetError;
use crate::transport::{CommandSpec, Transport, shell_quote};

/// What a job checks; decides which numbers are read from its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    /// Property tests: `test result:` lines are counted.
    Property,
    /// The strict-mode coverage check: fallbacks are counted from its JSON lines.
    Coverage,
    /// The Elixir test suite.
    Elixir,
    /// Anything else (sanity checks); only the exit status counts.
    Check,
}

/// One entry of the job list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Short name for tables and results.
    pub name: String,
    /// What the job checks.
    #[serde(default = "default_kind")]
    pub kind: JobKind,
    /// Shell command, run in the checkout (or in `cwd` below it).
    pub command: String,
    /// Folder relative to the checkout.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Program that must exist on the host, else the job is skipped.
    #[serde(default)]
    pub requires: Option<String>,
}

fn default_kind() -> JobKind {
    JobKind::Check
}

/// The production job list: property tests, the strict-mode coverage check, the Elixir suite.
pub fn default_jobs() -> Vec<JobSpec> {
    let job =
        |name: &str, kind, command: &str, cwd: Option<&str>, requires: Option<&str>| JobSpec {
            name: name.to_owned(),
            kind,
            command: command.to_owned(),
            cwd: cwd.map(str::to_owned),
            requires: requires.map(str::to_owned),
        };
    vec![
        job(
            "core-properties",
            JobKind::Property,
            "cargo test -p nxvk-core --release",
            None,
            None,
        ),
        job(
            "kernel-properties",
            JobKind::Property,
            "cargo test -p nxvk-kernels --release",
            None,
            None,
        ),
        job(
            "strict-coverage",
            JobKind::Coverage,
            "cargo xtask coverage --strict --json",
            None,
            None,
        ),
        job(
            "elixir",
            JobKind::Elixir,
            "mix test",
            Some("elixir"),
            Some("elixir"),
        ),
    ]
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Exit status 0.
    Passed,
    /// Non-zero exit status.
    Failed,
    /// `requires` was not found on the host.
    Skipped,
    /// The job ran past the host's command timeout and was abandoned.
    TimedOut,
    /// The job could not run to completion (lost connection, ...).
    Error,
}

/// One job's result, as written to the per-host JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// What it checks.
    pub kind: JobKind,
    /// The command that ran.
    pub command: String,
    /// How it ended.
    pub status: JobStatus,
    /// Exit status when it finished.
    pub exit_code: Option<i32>,
    /// Tests passed, from `test result:` lines.
    pub tests_passed: u64,
    /// Tests failed, from `test result:` lines.
    pub tests_failed: u64,
    /// Host fallbacks reported by the coverage check.
    pub fallbacks: u64,
    /// Wall time in seconds.
    pub duration_s: f64,
    /// The error when `status` is `error`.
    pub error: Option<String>,
    /// The last lines of stdout and stderr, for diagnosis.
    pub output_tail: String,
}

/// Lines of output kept in [`JobResult::output_tail`].
const TAIL_LINES: usize = 40;

/// Runs one job in `checkout` with `env`; a transport error becomes `JobStatus::TimedOut`
/// or `JobStatus::Error` in the result, never a panic or a hang.
pub fn run_job(
    transport: &mut dyn Transport,
    job: &JobSpec,
    checkout: &str,
    env: &std::collections::BTreeMap<String, String>,
    timeout: std::time::Duration,
) -> JobResult {
    let started = Instant::now();
    let mut result = JobResult {
        name: job.name.clone(),
        kind: job.kind,
        command: job.command.clone(),
        status: JobStatus::Error,
        exit_code: None,
        tests_passed: 0,
        tests_failed: 0,
        fallbacks: 0,
        duration_s: 0.0,
        error: None,
        output_tail: String::new(),
    };
    let cwd = match &job.cwd {
        Some(folder) => format!("{}/{folder}", checkout.trim_end_matches('/')),
        None => checkout.to_owned(),
    };
    let outcome = (|| -> Result<(), FleetError> {
        if let Some(program) = &job.requires {
            let probe = format!("command -v {}", shell_quote(program));
            let spec = CommandSpec {
                script: &probe,
                cwd: None,
                env,
                timeout,
            };
            if !transport.run(&spec)?.success() {
                result.status = JobStatus::Skipped;
                return Ok(());
            }
        }
        let spec = CommandSpec {
            script: &job.command,
            cwd: Some(&cwd),
            env,
            timeout,
        };
        let output = transport.run(&spec)?;
        let combined = format!("{}\n{}", output.stdout, output.stderr);
        let (passed, failed) = count_tests(&combined);
        result.tests_passed = passed;
        result.tests_failed = failed;
        if job.kind == JobKind::Coverage {
            result.fallbacks = count_fallbacks(&output.stdout);
        }
        result.exit_code = Some(output.exit_code);
        result.status = if output.success() {
            JobStatus::Passed
        } else {
            JobStatus::Failed
        };
        result.output_tail = tail(&combined, TAIL_LINES);
        Ok(())
    })();
    if let Err(error) = outcome {
        let timed_out = matches!(error, FleetError::CommandTimeout { .. });
        result.status = if timed_out {
            JobStatus::TimedOut
        } else {
            JobStatus::Error
        };
        result.error = Some(error.to_string());
    }
    result.duration_s = started.elapsed().as_secs_f64();
    result
}

/// Sums cargo's `test result: ok. 12 passed; 0 failed; ...` lines.
pub fn count_tests(output: &str) -> (u64, u64) {
    let mut passed = 0;
    let mut failed = 0;
    for line in output
        .lines()
        .filter(|line| line.trim_start().starts_with("test result:"))
    {
        for part in line.split([';', '.']) {
            let mut words = part.split_whitespace();
            if let (Some(number), Some(label)) = (words.next(), words.next())
                && let Ok(number) = number.parse::<u64>()
            {
                match label {
                    "passed" => passed += number,
                    "failed" => failed += number,
                    _ => {}
                }
            }
        }
    }
    (passed, failed)
}

/// Counts fallbacks in the coverage check's JSON lines: a `"fallbacks": N` field is added,
/// and each object with `"status": "fallback"` counts one.
pub fn count_fallbacks(stdout: &str) -> u64 {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line.trim()).ok())
        .map(|value| {
            if let Some(count) = value.get("fallbacks").and_then(serde_json::Value::as_u64) {
                count
            } else {
                u64::from(
                    value.get("status").and_then(serde_json::Value::as_str) == Some("fallback"),
                )
            }
        })
        .sum()
}

/// The last `count` lines of `text`.
pub fn tail(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_cargo_test_lines() {
        let output = "running 3\ntest result: ok. 3 passed; 0 failed; 1 ignored; 0 measured\n\
                      test result: FAILED. 10 passed; 2 failed; 0 ignored\n";
        assert_eq!(count_tests(output), (13, 2));
        assert_eq!(count_tests("nothing here"), (0, 0));
    }

    #[test]
    fn counts_fallbacks_from_json_lines() {
        let output = "{\"op\":\"add\",\"status\":\"gpu\"}\n{\"op\":\"fft\",\"status\":\"fallback\"}\nnoise\n{\"fallbacks\":4}\n";
        assert_eq!(count_fallbacks(output), 5);
    }

    #[test]
    fn default_job_table_has_the_required_entries() {
        let commands: Vec<_> = default_jobs().into_iter().map(|job| job.command).collect();
        assert!(commands.contains(&"cargo test -p nxvk-core --release".to_owned()));
        assert!(commands.contains(&"cargo test -p nxvk-kernels --release".to_owned()));
        assert!(commands.contains(&"cargo xtask coverage --strict --json".to_owned()));
        let elixir = default_jobs()
            .into_iter()
            .find(|job| job.kind == JobKind::Elixir)
            .unwrap();
        assert_eq!(
            (elixir.cwd.as_deref(), elixir.requires.as_deref()),
            (Some("elixir"), Some("elixir"))
        );
    }

    #[test]
    fn run_job_counts_fails_and_skips_on_a_local_host() {
        let mut transport = crate::transport::LocalTransport::new("here");
        let env = std::collections::BTreeMap::new();
        let timeout = std::time::Duration::from_secs(10);
        let failing = JobSpec {
            name: "failing".to_owned(),
            kind: JobKind::Property,
            command: "echo 'test result: FAILED. 2 passed; 1 failed; 0 ignored'; exit 101"
                .to_owned(),
            cwd: None,
            requires: None,
        };
        let result = run_job(&mut transport, &failing, "/", &env, timeout);
        assert_eq!(
            (result.status, result.exit_code),
            (JobStatus::Failed, Some(101))
        );
        assert_eq!((result.tests_passed, result.tests_failed), (2, 1));
        let skipped = JobSpec {
            requires: Some("no-such-program-nxvk".to_owned()),
            ..failing
        };
        assert_eq!(
            run_job(&mut transport, &skipped, "/", &env, timeout).status,
            JobStatus::Skipped
        );
    }

    #[test]
    fn tail_keeps_last_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
    }
}
