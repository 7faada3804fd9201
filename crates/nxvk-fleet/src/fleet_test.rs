//! `nxvk-fleet test`: ship the commit to every host in parallel, run the job list, report.
//!
//! Policy: hosts are independent; one host's failure (unreachable, refused key, failed job)
//! is recorded in its report and never stops or hangs the others. Every host gets a result
//! file, including the unreachable ones.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::config::{FleetConfig, HostConfig};
use crate::error::FleetError;
use crate::job::{JobSpec, JobStatus, default_jobs, run_job};
use crate::progress::{FleetProgress, HostProgress};
use crate::report::{HostReport, HostStatus, parse_vulkaninfo_summary};
use crate::ship::CommitBundle;
use crate::transport::{CommandSpec, SshOptions, Transport, connect};

/// Longest time the driver probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Settings of one fleet test run.
#[derive(Debug, Clone)]
pub struct FleetTestOptions {
    /// Results root; files go to `<results>/<commit>/<host>.json`.
    pub results: PathBuf,
    /// SSH choices from the command line.
    pub ssh: SshOptions,
}

/// Runs the fleet test on `hosts` with the commit in `bundle`; returns reports in host order.
pub fn run_fleet_test(
    config: &FleetConfig,
    hosts: &[HostConfig],
    bundle: &CommitBundle,
    options: &FleetTestOptions,
) -> Result<Vec<HostReport>, FleetError> {
    let jobs = if config.jobs.is_empty() {
        default_jobs()
    } else {
        config.jobs.clone()
    };
    let progress = FleetProgress::from_environment();
    let reports: Vec<HostReport> = std::thread::scope(|scope| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|host| {
                let host_progress = progress.host(&host.name);
                let jobs = &jobs;
                scope.spawn(move || test_host(host, jobs, bundle, &options.ssh, &host_progress))
            })
            .collect();
        handles
            .into_iter()
            .zip(hosts)
            .map(|(handle, host)| {
                handle.join().unwrap_or_else(|_| {
                    let mut report = HostReport::new(&host.name, &bundle.commit);
                    report.status = HostStatus::Error;
                    report
                        .errors
                        .push("the host's worker thread panicked".to_owned());
                    report
                })
            })
            .collect()
    });
    for report in &reports {
        report.write(&options.results)?;
    }
    Ok(reports)
}

fn test_host(
    host: &HostConfig,
    jobs: &[JobSpec],
    bundle: &CommitBundle,
    ssh: &SshOptions,
    progress: &HostProgress,
) -> HostReport {
    let started = Instant::now();
    let mut report = HostReport::new(&host.name, &bundle.commit);
    progress.step("connecting");
    match connect(host, ssh) {
        Err(error) => {
            report.status = if error.is_unreachable() {
                HostStatus::Unreachable
            } else {
                HostStatus::Error
            };
            report.errors.push(error.to_string());
        }
        Ok(mut transport) => {
            progress.step(&format!(
                "shipping {}",
                &bundle.commit[..bundle.commit.len().min(12)]
            ));
            match bundle.ship(transport.as_mut(), &host.checkout, host.command_timeout()) {
                Err(error) => {
                    report.status = HostStatus::Error;
                    report.errors.push(error.to_string());
                }
                Ok(()) => {
                    progress.step("probing the Vulkan driver");
                    (report.driver, report.device) = probe_driver(transport.as_mut(), host);
                    for job in jobs {
                        progress.step(&format!("job {}", job.name));
                        let result = run_job(
                            transport.as_mut(),
                            job,
                            &host.checkout,
                            &host.env,
                            host.command_timeout(),
                        );
                        let timed_out = result.status == JobStatus::TimedOut;
                        report.add_job(result);
                        // A timed-out command abandons its SSH session; the next job needs a new one.
                        if timed_out {
                            match connect(host, ssh) {
                                Ok(fresh) => transport = fresh,
                                Err(error) => {
                                    report
                                        .errors
                                        .push(format!("reconnecting after a timeout: {error}"));
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    report.duration_s = started.elapsed().as_secs_f64();
    progress.finish(&format!(
        "{:?}: {} passed, {} failed, {} fallbacks",
        report.status, report.passed, report.failed, report.fallbacks
    ));
    report
}

/// Driver and device from `vulkaninfo --summary` under the host's environment, if it runs.
fn probe_driver(
    transport: &mut dyn Transport,
    host: &HostConfig,
) -> (Option<String>, Option<String>) {
    let spec = CommandSpec {
        script: "vulkaninfo --summary 2>/dev/null",
        cwd: Some(&host.checkout),
        env: &host.env,
        timeout: PROBE_TIMEOUT.min(host.command_timeout()),
    };
    match transport.run(&spec) {
        Ok(output) if output.success() => parse_vulkaninfo_summary(&output.stdout),
        _ => (None, None),
    }
}
