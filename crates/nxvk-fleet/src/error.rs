//! The crate's one error type. Every variant names the host (or file) it is about, so a
//! fleet run can print errors from several hosts side by side without losing track.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;

/// Everything that can go wrong while reading the fleet file, reaching a host or running a job.
#[derive(Debug, Error)]
pub enum FleetError {
    // --- Configuration ---
    /// The fleet file could not be read from disk.
    #[error("cannot read fleet file {file}: {source}")]
    ConfigRead { file: PathBuf, source: io::Error },
    /// The fleet file is not valid TOML, or a top-level section is malformed.
    #[error("{file}: {message}")]
    ConfigSyntax { file: PathBuf, message: String },
    /// One host entry has a missing, unknown or invalid field.
    #[error("{file}: host `{host}`, field `{field}`: {message}")]
    ConfigField {
        file: PathBuf,
        host: String,
        field: String,
        message: String,
    },
    /// `--hosts` named a host that the fleet file does not define.
    #[error("no host named `{name}` in the fleet file (known: {known})")]
    UnknownHost { name: String, known: String },

    // --- Reaching a host ---
    /// The TCP connection was refused, reset or could not be routed.
    #[error("host `{host}`: unreachable: cannot connect to {address}: {source}")]
    Connect {
        host: String,
        address: String,
        source: io::Error,
    },
    /// The TCP connection did not complete within the host's connect timeout.
    #[error("host `{host}`: unreachable: connecting to {address} timed out after {timeout:?}")]
    ConnectTimeout {
        host: String,
        address: String,
        timeout: Duration,
    },
    /// An SSH protocol step (handshake, authentication, channel, transfer) failed.
    #[error("host `{host}`: SSH {stage} failed: {source}")]
    Ssh {
        host: String,
        stage: &'static str,
        source: ssh2::Error,
    },
    /// The host key is not in known_hosts and the policy does not accept new keys.
    #[error(
        "host `{host}`: host key of {address} is not in {known_hosts} and the policy is strict \
         (set known_hosts.policy = \"accept-new\" or pass --accept-new-host-keys)"
    )]
    UnknownHostKey {
        host: String,
        address: String,
        known_hosts: PathBuf,
    },
    /// The host key differs from the one recorded in known_hosts: never accepted.
    #[error("host `{host}`: host key of {address} does NOT match the one in {known_hosts}")]
    HostKeyMismatch {
        host: String,
        address: String,
        known_hosts: PathBuf,
    },

    // --- Running things ---
    /// A command ran longer than the host's command timeout and was abandoned.
    #[error("host `{host}`: command timed out after {timeout:?}: {command}")]
    CommandTimeout {
        host: String,
        command: String,
        timeout: Duration,
    },
    /// A command that must succeed (shipping the commit, a probe) exited non-zero.
    #[error("host `{host}`: `{command}` exited with status {exit_code}: {stderr}")]
    CommandFailed {
        host: String,
        command: String,
        exit_code: i32,
        stderr: String,
    },
    /// A local or remote I/O operation failed.
    #[error("host `{host}`: I/O error while {action}: {source}")]
    Io {
        host: String,
        action: String,
        source: io::Error,
    },
    /// A local `git` command failed (no commit yet, not a repository, ...).
    #[error("local `git {arguments}` failed: {message}")]
    Git { arguments: String, message: String },
    /// A result file could not be written.
    #[error("cannot write {path}: {source}")]
    WriteResult { path: PathBuf, source: io::Error },

    // --- Races ---
    /// `race NAME` named a knob that is not in the knob table.
    #[error("unknown knob `{name}` (known: {known})")]
    UnknownKnob { name: String, known: String },
    /// The host is too busy for a fair benchmark and the load policy refuses.
    #[error(
        "host `{host}`: load {load_per_core:.2} per core exceeds the limit {limit:.2}; refusing to race"
    )]
    Overloaded {
        host: String,
        load_per_core: f64,
        limit: f64,
    },

    // --- Loopback fleet ---
    /// The throwaway loopback sshd could not be set up.
    #[error("loopback sshd: {message}")]
    Loopback { message: String },
}

impl FleetError {
    /// True when the host could not be reached at all (as opposed to failing once reached).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            FleetError::Connect { .. } | FleetError::ConnectTimeout { .. }
        )
    }
}
