//! How commands reach a host: the [`Transport`] trait and its two implementations.
//!
//! Policy: every command runs through `sh -c` on the host with an explicit environment and
//! working folder, and every call is bounded by a timeout; a transport never blocks forever.
//! Remote paths starting with `~/` mean the remote user's home.

mod local;
mod ssh;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

pub use local::LocalTransport;
pub use ssh::{SshOptions, SshTransport};

use crate::config::{HostConfig, TransportKind};
use crate::error::FleetError;

/// One command to run on a host.
#[derive(Debug, Clone)]
pub struct CommandSpec<'a> {
    /// Shell script, run with `sh -c`.
    pub script: &'a str,
    /// Working folder on the host (`~/` allowed); `None` keeps the transport's default.
    pub cwd: Option<&'a str>,
    /// Variables exported before the script runs.
    pub env: &'a BTreeMap<String, String>,
    /// Longest time the command may run.
    pub timeout: Duration,
}

/// What a finished command left behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// Exit status (`-1` when the process died from a signal).
    pub exit_code: i32,
    /// Everything written to stdout, lossily decoded.
    pub stdout: String,
    /// Everything written to stderr, lossily decoded.
    pub stderr: String,
}

impl CommandOutput {
    /// True when the command exited with status 0.
    pub fn success(&self) -> bool {
        self.exit_code == 0
    }
}

/// A connection to one host.
pub trait Transport: Send + std::fmt::Debug {
    /// The host's name from the fleet file.
    fn host_name(&self) -> &str;
    /// Runs a command to completion or until its timeout.
    fn run(&mut self, command: &CommandSpec<'_>) -> Result<CommandOutput, FleetError>;
    /// Copies a local file to `remote_path` (its folder must exist).
    fn upload(&mut self, local_path: &Path, remote_path: &str) -> Result<(), FleetError>;
}

/// Opens the transport a host entry asks for.
pub fn connect(host: &HostConfig, options: &SshOptions) -> Result<Box<dyn Transport>, FleetError> {
    match host.transport {
        TransportKind::Local => Ok(Box::new(LocalTransport::new(&host.name))),
        TransportKind::Ssh => Ok(Box::new(SshTransport::connect(host, options)?)),
    }
}

/// Quotes a word for a POSIX shell (single quotes, embedded quotes escaped).
pub fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Quotes a remote path, keeping a leading `~/` as `"$HOME"/` so the remote shell expands it.
pub fn shell_path(path: &str) -> String {
    match path.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", shell_quote(rest)),
        None if path == "~" => "\"$HOME\"".to_owned(),
        None => shell_quote(path),
    }
}

/// The full `sh` script for a command: `cd`, exports, then the script in its own `sh -c`.
///
/// Values are double-quoted so that `$HOME` and `$PATH` expand on the host (documented in
/// FLEET.md); `"`, `\` and `` ` `` are escaped.
pub fn compose_script(command: &CommandSpec<'_>) -> String {
    let mut script = String::new();
    if let Some(cwd) = command.cwd {
        script.push_str(&format!("cd {} && ", shell_path(cwd)));
    }
    for (name, value) in command.env {
        let escaped = value
            .replace('\\', r"\\")
            .replace('"', "\\\"")
            .replace('`', "\\`");
        script.push_str(&format!("export {name}=\"{escaped}\" && "));
    }
    script.push_str(&format!("exec sh -c {}", shell_quote(command.script)));
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_single_quotes_and_home() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_path("~/a b"), "\"$HOME\"/'a b'");
        assert_eq!(shell_path("/abs"), "'/abs'");
    }

    #[test]
    fn composed_script_exports_then_runs() {
        let env = BTreeMap::from([("A".to_owned(), "x\"y".to_owned())]);
        let spec = CommandSpec {
            script: "echo $A",
            cwd: Some("/tmp"),
            env: &env,
            timeout: Duration::from_secs(1),
        };
        assert_eq!(
            compose_script(&spec),
            "cd '/tmp' && export A=\"x\\\"y\" && exec sh -c 'echo $A'"
        );
    }
}
