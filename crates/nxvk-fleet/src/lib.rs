//! nxvk-fleet: runs nxvk's tests and performance-knob races on a fleet of hosts.
//!
//! It reads `fleet.toml`, reaches each host over SSH (libssh2) or locally, ships the local
//! `HEAD` as a git bundle, runs a job list or an A/B race there, and writes JSON results,
//! tables and an SVG chart here. It is not a CI service and links no GPU library: it only
//! runs commands. Invariant: every host is handled in its own thread and every network or
//! process operation has a timeout, so an unreachable, slow or failing host is reported
//! with its error and never hangs or aborts the run of the other hosts.

mod chart;
mod config;
mod decision;
mod error;
mod fleet_test;
mod job;
mod loopback;
mod progress;
mod race;
mod report;
mod selftest_bench;
mod ship;
mod transport;

pub use chart::{RatioBar, ratio_chart_svg};
pub use config::{
    FleetConfig, HostConfig, HostKeyPolicy, Identity, KnownHosts, LoadPolicy, MIN_REPLICATES,
    TransportKind,
};
pub use decision::{
    ArmStats, Better, Comparison, Decision, HostEvidence, MIN_MARGIN, Outcome, arm_stats, compare,
    decide,
};
pub use error::FleetError;
pub use fleet_test::{FleetTestOptions, run_fleet_test};
pub use job::{JobKind, JobResult, JobSpec, JobStatus, default_jobs};
pub use loopback::{
    LOOPBACK_BENCH_COMMAND, LOOPBACK_JOBS, LoopbackFleet, LoopbackOptions, SELF_TEST_JOBS,
    UNREACHABLE_HOST, check_outcome, self_test_bench_command,
};
pub use progress::progress_enabled;
pub use race::{
    KNOBS, Knob, RaceOptions, RaceReport, find_knob, knob_env_name, race_table, run_race,
};
pub use report::{HostReport, HostStatus, summary_table};
pub use selftest_bench::loopback_bench_lines;
pub use ship::{CommitBundle, head_commit, repository_root};
pub use transport::{
    CommandOutput, CommandSpec, LocalTransport, SshOptions, SshTransport, Transport, connect,
};
