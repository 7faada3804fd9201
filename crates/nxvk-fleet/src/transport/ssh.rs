//! The SSH transport over libssh2 (the `ssh2` crate).
//!
//! Policy: the host key is checked against the configured known_hosts file before any
//! authentication; an unknown key is refused unless the host's policy or the caller accepts
//! new keys, and a changed key is always refused. The TCP connect is bounded by
//! `TcpStream::connect_timeout`, each libssh2 call by the session timeout, and command output
//! is read in non-blocking mode against a deadline, so a silent host cannot hang the run.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use ssh2::{CheckResult, KnownHostFileKind, Session};

use super::{CommandOutput, CommandSpec, Transport, compose_script};
use crate::config::{HostConfig, HostKeyPolicy, Identity};
use crate::error::FleetError;

/// Choices the command line can make over the fleet file.
#[derive(Debug, Clone, Copy, Default)]
pub struct SshOptions {
    /// Accept (and record) unknown host keys even where the host's policy is strict.
    pub accept_new_host_keys: bool,
}

/// An authenticated SSH session to one host.
pub struct SshTransport {
    host_name: String,
    session: Session,
    /// Bound for each libssh2 call of an upload (the host's command timeout).
    transfer_timeout: Duration,
    /// Set when a command timed out: the session is left non-blocking and refuses further
    /// use, because closing the abandoned channel would wait for the remote command to end.
    abandoned: bool,
}

impl std::fmt::Debug for SshTransport {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SshTransport")
            .field("host_name", &self.host_name)
            .finish_non_exhaustive()
    }
}

/// Expands a leading `~/` in a local path with this machine's `$HOME`.
fn expand_local_home(path: &Path) -> PathBuf {
    match (path.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => path.to_owned(),
    }
}

/// libssh2's scp does not expand `~`; SSH sessions start in the home folder, so drop it.
fn transfer_path(remote_path: &str) -> &str {
    remote_path.strip_prefix("~/").unwrap_or(remote_path)
}

fn millis(duration: Duration) -> u32 {
    u32::try_from(duration.as_millis()).unwrap_or(u32::MAX)
}

impl SshTransport {
    /// Connects, checks the host key and authenticates.
    pub fn connect(host: &HostConfig, options: &SshOptions) -> Result<SshTransport, FleetError> {
        let host_name = host.name.clone();
        let address = host.address.clone().unwrap_or_default();
        let display_address = format!("{address}:{}", host.port);
        let timeout = host.connect_timeout();
        let socket_addresses: Vec<_> = (address.as_str(), host.port)
            .to_socket_addrs()
            .map_err(|source| FleetError::Connect {
                host: host_name.clone(),
                address: display_address.clone(),
                source,
            })?
            .collect();
        let mut last_error = None;
        let mut stream = None;
        for socket_address in &socket_addresses {
            match TcpStream::connect_timeout(socket_address, timeout) {
                Ok(connected) => {
                    stream = Some(connected);
                    break;
                }
                Err(error) => last_error = Some(error),
            }
        }
        let stream = match (stream, last_error) {
            (Some(stream), _) => stream,
            (None, Some(error))
                if matches!(error.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) =>
            {
                return Err(FleetError::ConnectTimeout {
                    host: host_name,
                    address: display_address,
                    timeout,
                });
            }
            (None, error) => {
                let source =
                    error.unwrap_or_else(|| std::io::Error::new(ErrorKind::NotFound, "no address"));
                return Err(FleetError::Connect {
                    host: host_name,
                    address: display_address,
                    source,
                });
            }
        };
        let ssh_error = |stage: &'static str| {
            let host = host_name.clone();
            move |source| FleetError::Ssh {
                host,
                stage,
                source,
            }
        };
        let mut session = Session::new().map_err(ssh_error("session set-up"))?;
        session.set_timeout(millis(timeout));
        session.set_tcp_stream(stream);
        session.handshake().map_err(ssh_error("handshake"))?;

        let accept_new =
            options.accept_new_host_keys || host.known_hosts.policy == HostKeyPolicy::AcceptNew;
        check_host_key(&session, host, &display_address, accept_new)?;

        let user = host.user_name();
        match &host.identity {
            Identity::Agent => session
                .userauth_agent(&user)
                .map_err(ssh_error("agent authentication"))?,
            Identity::File(path) => session
                .userauth_pubkey_file(&user, None, &expand_local_home(path), None)
                .map_err(ssh_error("key-file authentication"))?,
        }
        Ok(SshTransport {
            host_name,
            session,
            transfer_timeout: host.command_timeout(),
            abandoned: false,
        })
    }

    fn ssh_error(&self, stage: &'static str) -> impl FnOnce(ssh2::Error) -> FleetError + '_ {
        move |source| FleetError::Ssh {
            host: self.host_name.clone(),
            stage,
            source,
        }
    }

    fn refuse_if_abandoned(&self) -> Result<(), FleetError> {
        if self.abandoned {
            return Err(FleetError::Io {
                host: self.host_name.clone(),
                action: "reusing an SSH session abandoned after a command timeout (reconnect)"
                    .to_owned(),
                source: std::io::Error::from(ErrorKind::BrokenPipe),
            });
        }
        Ok(())
    }

    fn io_error(&self, action: &str) -> impl FnOnce(std::io::Error) -> FleetError + '_ {
        let action = action.to_owned();
        move |source| FleetError::Io {
            host: self.host_name.clone(),
            action,
            source,
        }
    }
}

/// Checks the server's key against known_hosts, recording it when `accept_new` allows.
fn check_host_key(
    session: &Session,
    host: &HostConfig,
    display_address: &str,
    accept_new: bool,
) -> Result<(), FleetError> {
    let host_name = host.name.clone();
    let address = host.address.clone().unwrap_or_default();
    let known_hosts_path = expand_local_home(&host.known_hosts.path);
    let ssh_error = |stage: &'static str| {
        let host = host_name.clone();
        move |source| FleetError::Ssh {
            host,
            stage,
            source,
        }
    };
    let (key, key_type) = session.host_key().ok_or_else(|| FleetError::Ssh {
        host: host_name.clone(),
        stage: "host key exchange",
        source: ssh2::Error::unknown(),
    })?;
    let mut known_hosts = session
        .known_hosts()
        .map_err(ssh_error("known_hosts set-up"))?;
    if known_hosts_path.exists() {
        known_hosts
            .read_file(&known_hosts_path, KnownHostFileKind::OpenSSH)
            .map_err(ssh_error("reading known_hosts"))?;
    }
    match known_hosts.check_port(&address, host.port, key) {
        CheckResult::Match => Ok(()),
        CheckResult::Mismatch => Err(FleetError::HostKeyMismatch {
            host: host_name,
            address: display_address.to_owned(),
            known_hosts: known_hosts_path,
        }),
        CheckResult::NotFound | CheckResult::Failure if !accept_new => {
            Err(FleetError::UnknownHostKey {
                host: host_name,
                address: display_address.to_owned(),
                known_hosts: known_hosts_path,
            })
        }
        CheckResult::NotFound | CheckResult::Failure => {
            // OpenSSH writes non-standard ports as `[address]:port`; libssh2 reads it back that way.
            let entry_name = if host.port == 22 {
                address.clone()
            } else {
                format!("[{address}]:{}", host.port)
            };
            known_hosts
                .add(&entry_name, key, "added by nxvk-fleet", key_type.into())
                .map_err(ssh_error("recording the new host key"))?;
            if let Some(parent) = known_hosts_path.parent() {
                std::fs::create_dir_all(parent).map_err(|source| FleetError::Io {
                    host: host_name.clone(),
                    action: format!("creating {}", parent.display()),
                    source,
                })?;
            }
            known_hosts
                .write_file(&known_hosts_path, KnownHostFileKind::OpenSSH)
                .map_err(ssh_error("writing known_hosts"))?;
            eprintln!(
                "[{host_name}] accepted new host key for {display_address} into {}",
                known_hosts_path.display()
            );
            Ok(())
        }
    }
}

impl Transport for SshTransport {
    fn host_name(&self) -> &str {
        &self.host_name
    }

    fn run(&mut self, command: &CommandSpec<'_>) -> Result<CommandOutput, FleetError> {
        self.refuse_if_abandoned()?;
        let deadline = Instant::now() + command.timeout;
        self.session.set_blocking(true);
        self.session.set_timeout(millis(command.timeout));
        let mut channel = self
            .session
            .channel_session()
            .map_err(self.ssh_error("opening a channel"))?;
        channel
            .exec(&compose_script(command))
            .map_err(self.ssh_error("exec"))?;

        // Read stdout and stderr alternately without blocking: reading one to its end first
        // could deadlock once the other fills the channel window.
        self.session.set_blocking(false);
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut buffer = [0u8; 16 * 1024];
        loop {
            let mut progressed = false;
            for to_stderr in [false, true] {
                let read = if to_stderr {
                    channel.stderr().read(&mut buffer)
                } else {
                    channel.read(&mut buffer)
                };
                match read {
                    Ok(0) => {}
                    Ok(count) => {
                        progressed = true;
                        let sink = if to_stderr { &mut stderr } else { &mut stdout };
                        sink.extend_from_slice(&buffer[..count]);
                    }
                    Err(error) if error.kind() == ErrorKind::WouldBlock => {}
                    Err(error) => {
                        self.session.set_blocking(true);
                        return Err(self.io_error("reading command output")(error));
                    }
                }
            }
            if channel.eof() && !progressed {
                break;
            }
            if Instant::now() >= deadline {
                // Stay non-blocking: freeing the channel (now) and the session (with the
                // transport) must not wait for the remote command. Closing the TCP connection
                // makes sshd hang up on it.
                self.abandoned = true;
                return Err(FleetError::CommandTimeout {
                    host: self.host_name.clone(),
                    command: command.script.to_owned(),
                    timeout: command.timeout,
                });
            }
            if !progressed {
                thread::sleep(Duration::from_millis(5));
            }
        }
        self.session.set_blocking(true);
        channel
            .wait_close()
            .map_err(self.ssh_error("closing the channel"))?;
        let exit_code = channel
            .exit_status()
            .map_err(self.ssh_error("reading the exit status"))?;
        Ok(CommandOutput {
            exit_code,
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        })
    }

    fn upload(&mut self, local_path: &Path, remote_path: &str) -> Result<(), FleetError> {
        self.refuse_if_abandoned()?;
        let action = format!("uploading {} to {remote_path}", local_path.display());
        let mut file = std::fs::File::open(local_path).map_err(self.io_error(&action))?;
        let size = file.metadata().map_err(self.io_error(&action))?.len();
        self.session.set_blocking(true);
        self.session.set_timeout(millis(self.transfer_timeout));
        let mut channel = self
            .session
            .scp_send(Path::new(transfer_path(remote_path)), 0o644, size, None)
            .map_err(self.ssh_error("scp start"))?;
        std::io::copy(&mut file, &mut channel).map_err(self.io_error(&action))?;
        channel.flush().map_err(self.io_error(&action))?;
        channel
            .send_eof()
            .map_err(self.ssh_error("scp end of file"))?;
        channel
            .wait_eof()
            .map_err(self.ssh_error("scp end of file"))?;
        channel.close().map_err(self.ssh_error("scp close"))?;
        channel.wait_close().map_err(self.ssh_error("scp close"))?;
        Ok(())
    }
}
