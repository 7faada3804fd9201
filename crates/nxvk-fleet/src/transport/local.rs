//! The local transport: `sh -c` on this machine, killed when its timeout passes.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::{CommandOutput, CommandSpec, Transport, compose_script};
use crate::error::FleetError;

/// Runs commands on this machine.
#[derive(Debug)]
pub struct LocalTransport {
    host_name: String,
}

impl LocalTransport {
    /// A transport for the host entry named `host_name`.
    pub fn new(host_name: &str) -> LocalTransport {
        LocalTransport {
            host_name: host_name.to_owned(),
        }
    }

    fn io_error(&self, action: &str, source: std::io::Error) -> FleetError {
        FleetError::Io {
            host: self.host_name.clone(),
            action: action.to_owned(),
            source,
        }
    }
}

/// Expands a leading `~/` with this machine's `$HOME`.
fn expand_home(path: &str) -> String {
    match (path.strip_prefix("~/"), std::env::var("HOME")) {
        (Some(rest), Ok(home)) => format!("{home}/{rest}"),
        _ => path.to_owned(),
    }
}

fn drain<R: Read + Send + 'static>(mut reader: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        // A read error only truncates the captured output; the exit status still tells the story.
        let _ = reader.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

impl Transport for LocalTransport {
    fn host_name(&self) -> &str {
        &self.host_name
    }

    fn run(&mut self, command: &CommandSpec<'_>) -> Result<CommandOutput, FleetError> {
        // The same composed script as over SSH, so both transports treat cwd/env alike.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(compose_script(command))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| self.io_error("starting sh", source))?;
        let stdout = drain(child.stdout.take().expect("stdout is piped"));
        let stderr = drain(child.stderr.take().expect("stderr is piped"));
        let deadline = Instant::now() + command.timeout;
        let status = loop {
            match child
                .try_wait()
                .map_err(|source| self.io_error("waiting for a command", source))?
            {
                Some(status) => break status,
                None if Instant::now() >= deadline => {
                    // Killing `sh` closes the pipes only if its children die too; they usually
                    // share the pipes, so the drain threads are not joined after a timeout.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(FleetError::CommandTimeout {
                        host: self.host_name.clone(),
                        command: command.script.to_owned(),
                        timeout: command.timeout,
                    });
                }
                None => thread::sleep(Duration::from_millis(10)),
            }
        };
        Ok(CommandOutput {
            exit_code: status.code().unwrap_or(-1),
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        })
    }

    fn upload(&mut self, local_path: &Path, remote_path: &str) -> Result<(), FleetError> {
        std::fs::copy(local_path, expand_home(remote_path))
            .map(drop)
            .map_err(|source| {
                self.io_error(
                    &format!("copying {} to {remote_path}", local_path.display()),
                    source,
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn runs_with_env_and_cwd() {
        let env = BTreeMap::from([("NXVK_FLEET_TEST".to_owned(), "42".to_owned())]);
        let spec = CommandSpec {
            script: "echo $NXVK_FLEET_TEST; pwd; echo err >&2; exit 3",
            cwd: Some("/"),
            env: &env,
            timeout: Duration::from_secs(10),
        };
        let output = LocalTransport::new("here").run(&spec).unwrap();
        assert_eq!(output.exit_code, 3);
        assert_eq!(output.stdout, "42\n/\n");
        assert_eq!(output.stderr, "err\n");
    }

    #[test]
    fn timeout_is_an_error_not_a_hang() {
        let env = BTreeMap::new();
        let spec = CommandSpec {
            script: "exec sleep 30",
            cwd: None,
            env: &env,
            timeout: Duration::from_millis(200),
        };
        let started = Instant::now();
        let error = LocalTransport::new("here").run(&spec).unwrap_err();
        assert!(
            matches!(error, FleetError::CommandTimeout { .. }),
            "{error}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
