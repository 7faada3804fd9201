//! The loopback CI fleet: a throwaway sshd on 127.0.0.1 and a generated fleet file whose
//! hosts are this machine under different Vulkan drivers, plus one unreachable host.
//!
//! Policy: nothing of the machine's own SSH set-up is read or changed (keys, config and
//! known_hosts live in a temporary folder; only `/run/sshd`, which sshd needs as root, may be
//! created). sshd runs in the foreground (`-D`) as our child and is stopped by its PID in
//! [`LoopbackFleet::stop`], which `Drop` also calls, so an error path cannot leave it running.
//! The run passes only if the real hosts pass AND the unreachable host is reported unreachable.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::config::FleetConfig;
use crate::error::FleetError;
use crate::report::HostStatus;
use crate::transport::shell_quote;

/// The CI job list of the loopback fleet as (name, kind, command): the quick core property
/// tests, the elementwise kernel properties and the strict-mode coverage check, each on the
/// host's own driver. (The production list, `job::default_jobs`, runs whole suites in release.)
pub const LOOPBACK_JOBS: &[(&str, &str, &str)] = &[
    (
        "core-properties",
        "property",
        "cargo test -p nxvk-core --test round_trip --test views --test many_dispatches",
    ),
    (
        "kernel-properties",
        "property",
        "cargo test -p nxvk-kernels --test elementwise",
    ),
    (
        "strict-coverage",
        "coverage",
        "cargo xtask coverage --strict --json",
    ),
];

/// The job list of the crate's own end-to-end test: checks that need no Cargo workspace.
pub const SELF_TEST_JOBS: &[(&str, &str, &str)] = &[(
    "toolchain-and-commit",
    "check",
    "cargo --version && git rev-parse HEAD",
)];

/// The real benchmark command for races on the loopback fleet (lavapipe-sized workloads).
pub const LOOPBACK_BENCH_COMMAND: &str = "cargo xtask bench --only {workloads} -- --quick";

/// Name of the host with a port nothing listens on.
pub const UNREACHABLE_HOST: &str = "loopback-unreachable";

/// The system Mesa lavapipe manifest, used for both hosts when `NXVK_TEST_ICDS` is unset.
const SYSTEM_LAVAPIPE_ICD: &str = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";

/// How long sshd may take to start listening.
const SSHD_START_TIMEOUT: Duration = Duration::from_secs(10);

/// Per-command limit of the loopback hosts: a cold release build plus a job.
const LOOPBACK_COMMAND_TIMEOUT_S: u64 = 1800;

/// What the loopback fleet needs from its caller.
#[derive(Debug, Clone)]
pub struct LoopbackOptions {
    /// `CARGO_TARGET_DIR` for the hosts, so remote builds reuse the local compiled deps.
    pub target_dir: PathBuf,
    /// Race benchmark command (`{workloads}` is replaced by the workload list).
    pub bench_command: String,
    /// Jobs as (name, kind, command): [`LOOPBACK_JOBS`] for CI, cheaper ones in self-tests.
    pub jobs: &'static [(&'static str, &'static str, &'static str)],
    /// ICD manifests for the two hosts, normally from `NXVK_TEST_ICDS`.
    pub icds: Option<String>,
}

/// A running loopback sshd and its fleet file.
#[derive(Debug)]
pub struct LoopbackFleet {
    folder: tempfile::TempDir,
    sshd: Option<Child>,
    /// The port sshd listens on.
    pub port: u16,
    /// The generated fleet file.
    pub config_path: PathBuf,
    /// The generated fleet, parsed.
    pub config: FleetConfig,
    /// Things the user should know (e.g. which ICDs were used).
    pub notes: Vec<String>,
}

fn loopback_error(message: impl Into<String>) -> FleetError {
    FleetError::Loopback {
        message: message.into(),
    }
}

fn free_port() -> Result<u16, FleetError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|error| loopback_error(format!("no free port: {error}")))?;
    listener
        .local_addr()
        .map(|address| address.port())
        .map_err(|error| loopback_error(error.to_string()))
}

fn keygen(path: &Path) -> Result<(), FleetError> {
    let status = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "nxvk-fleet-loopback",
            "-f",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .map_err(|error| loopback_error(format!("running ssh-keygen: {error}")))?;
    if status.success() {
        Ok(())
    } else {
        Err(loopback_error(format!(
            "ssh-keygen failed for {}",
            path.display()
        )))
    }
}

fn write(path: &Path, text: &str) -> Result<(), FleetError> {
    std::fs::write(path, text).map_err(|source| FleetError::WriteResult {
        path: path.to_owned(),
        source,
    })
}

fn read(path: &Path) -> Result<String, FleetError> {
    std::fs::read_to_string(path)
        .map_err(|error| loopback_error(format!("reading {}: {error}", path.display())))
}

fn current_user() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "root".to_owned())
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

impl LoopbackFleet {
    /// Starts sshd and writes the fleet file.
    pub fn start(options: &LoopbackOptions) -> Result<LoopbackFleet, FleetError> {
        let folder = tempfile::Builder::new()
            .prefix("nxvk-fleet-loopback-")
            .tempdir()
            .map_err(|error| loopback_error(format!("creating a temporary folder: {error}")))?;
        let path = |name: &str| folder.path().join(name);
        keygen(&path("host_key"))?;
        keygen(&path("client_key"))?;
        write(&path("authorized_keys"), &read(&path("client_key.pub"))?)?;
        let port = free_port()?;
        // sshd refuses to start as root without its privilege-separation folder; ignoring the
        // error is right for non-root users, who do not need it.
        let _ = std::fs::create_dir_all("/run/sshd");
        let sshd_config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile {pid}\n\
             AuthorizedKeysFile {authorized}\nStrictModes no\nPubkeyAuthentication yes\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             PermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\nLogLevel ERROR\n",
            host_key = path("host_key").display(),
            pid = path("sshd.pid").display(),
            authorized = path("authorized_keys").display(),
        );
        write(&path("sshd_config"), &sshd_config)?;
        let log = std::fs::File::create(path("sshd.log"))
            .map_err(|error| loopback_error(format!("creating sshd.log: {error}")))?;
        let child = Command::new("/usr/sbin/sshd")
            .arg("-D")
            .arg("-e")
            .arg("-f")
            .arg(path("sshd_config"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|error| loopback_error(format!("starting /usr/sbin/sshd: {error}")))?;
        let mut fleet = LoopbackFleet {
            folder,
            sshd: Some(child),
            port,
            config_path: PathBuf::new(),
            config: FleetConfig::parse("", Path::new("(empty)"))?,
            notes: Vec::new(),
        };
        fleet.wait_for_sshd()?;
        fleet.write_fleet_file(options)?;
        Ok(fleet)
    }

    /// The temporary folder holding keys, config, logs and the remote checkouts.
    pub fn folder(&self) -> &Path {
        self.folder.path()
    }

    fn wait_for_sshd(&mut self) -> Result<(), FleetError> {
        let started = Instant::now();
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        loop {
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            let exited = self
                .sshd
                .as_mut()
                .and_then(|child| child.try_wait().ok().flatten());
            if exited.is_some() || started.elapsed() > SSHD_START_TIMEOUT {
                let log = read(&self.folder.path().join("sshd.log")).unwrap_or_default();
                self.stop();
                return Err(loopback_error(format!(
                    "sshd did not start listening on port {}: {log}",
                    self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn write_fleet_file(&mut self, options: &LoopbackOptions) -> Result<(), FleetError> {
        let folder = self.folder.path().to_owned();
        let host_key = read(&folder.join("host_key.pub"))?;
        let mut key_fields = host_key.split_whitespace();
        let (Some(key_type), Some(key_base64)) = (key_fields.next(), key_fields.next()) else {
            return Err(loopback_error("unreadable host_key.pub"));
        };
        let known_hosts = folder.join("known_hosts");
        write(
            &known_hosts,
            &format!("[127.0.0.1]:{} {key_type} {key_base64}\n", self.port),
        )?;

        let icds: Vec<String> = match options.icds.as_deref().filter(|icds| !icds.is_empty()) {
            Some(icds) => icds.split(':').map(str::to_owned).collect(),
            None => {
                self.notes.push(format!(
                    "NXVK_TEST_ICDS is unset: both loopback hosts use {SYSTEM_LAVAPIPE_ICD} (one driver, not two)"
                ));
                vec![SYSTEM_LAVAPIPE_ICD.to_owned()]
            }
        };
        let second_icd = icds.get(1).unwrap_or(&icds[0]).clone();
        let user = current_user();
        let path_variable =
            std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".to_owned());
        let unreachable_port = free_port()?;
        let mut text = format!(
            "# Generated by nxvk-fleet's loopback module for one CI run; do not edit.\n\
             # sshd on 127.0.0.1:{port}, keys and known_hosts in {folder}.\n\n",
            port = self.port,
            folder = folder.display()
        );
        // A job's command includes its cold release build of the kernel catalog (the hosts
        // share one target folder, so one host waits for the other's build): 600 s was too
        // tight on a loaded 2-core machine (the coverage job timed out in a CI run).
        for (name, icd) in [
            ("loopback-mesa22", &icds[0]),
            ("loopback-mesa25", &second_icd),
        ] {
            text.push_str(&format!(
                "[[hosts]]\nname = \"{name}\"\ntransport = \"ssh\"\naddress = \"127.0.0.1\"\nport = {port}\n\
                 user = {user}\nidentity = {{ file = {identity} }}\n\
                 known_hosts = {{ policy = \"strict\", path = {known_hosts} }}\n\
                 checkout = {checkout}\nconnect_timeout_s = 5\ncommand_timeout_s = {LOOPBACK_COMMAND_TIMEOUT_S}\n\
                 tags = {{ class = \"lavapipe\", arch = \"x86_64\" }}\n\
                 env = {{ VK_ICD_FILENAMES = {icd}, CARGO_TARGET_DIR = {target}, PATH = {path} }}\n\n",
                port = self.port,
                user = toml_string(&user),
                identity = toml_string(&folder.join("client_key").to_string_lossy()),
                known_hosts = toml_string(&known_hosts.to_string_lossy()),
                checkout = toml_string(&folder.join("checkouts").join(name).to_string_lossy()),
                icd = toml_string(icd),
                target = toml_string(&options.target_dir.to_string_lossy()),
                path = toml_string(&path_variable),
            ));
        }
        text.push_str(&format!(
            "[[hosts]]\nname = \"{UNREACHABLE_HOST}\"\naddress = \"127.0.0.1\"\nport = {unreachable_port}\n\
             user = {user}\nidentity = {{ file = {identity} }}\n\
             known_hosts = {{ policy = \"strict\", path = {known_hosts} }}\nconnect_timeout_s = 2\n\
             tags = {{ class = \"lavapipe\", arch = \"x86_64\" }}\n\n",
            user = toml_string(&user),
            identity = toml_string(&folder.join("client_key").to_string_lossy()),
            known_hosts = toml_string(&known_hosts.to_string_lossy()),
        ));
        for (name, kind, command) in options.jobs {
            text.push_str(&format!(
                "[[jobs]]\nname = \"{name}\"\nkind = \"{kind}\"\ncommand = {}\n\n",
                toml_string(command)
            ));
        }
        text.push_str(&format!(
            "[race]\nbench_command = {}\nreplicates = 5\nload_policy = \"warn\"\n",
            toml_string(&options.bench_command)
        ));
        self.config_path = folder.join("fleet.loopback.toml");
        write(&self.config_path, &text)?;
        self.config = FleetConfig::load(&self.config_path)?;
        Ok(())
    }

    /// Stops sshd by its PID (idempotent).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.sshd.take() {
            // sshd -D exits on SIGKILL like on SIGTERM for our purposes: nothing to flush.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for LoopbackFleet {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The loopback benchmark command that runs this very binary's self-test benchmark.
pub fn self_test_bench_command(executable: &Path) -> String {
    format!(
        "{} loopback-bench --only {{workloads}}",
        shell_quote(&executable.to_string_lossy())
    )
}

/// Checks a loopback run: every real host passed and the unreachable host was unreachable.
pub fn check_outcome(statuses: &[(String, HostStatus)]) -> Result<(), String> {
    let mut problems = Vec::new();
    for (host, status) in statuses {
        let expected = if host == UNREACHABLE_HOST {
            HostStatus::Unreachable
        } else {
            HostStatus::Passed
        };
        if *status != expected {
            problems.push(format!(
                "host `{host}` is {status:?}, expected {expected:?}"
            ));
        }
    }
    if !statuses.iter().any(|(host, _)| host == UNREACHABLE_HOST) {
        problems.push(format!("host `{UNREACHABLE_HOST}` was not run"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_needs_passes_and_a_reported_unreachable_host() {
        let good = [
            ("a".to_owned(), HostStatus::Passed),
            (UNREACHABLE_HOST.to_owned(), HostStatus::Unreachable),
        ];
        assert!(check_outcome(&good).is_ok());
        let unreachable_passed = [
            ("a".to_owned(), HostStatus::Passed),
            (UNREACHABLE_HOST.to_owned(), HostStatus::Passed),
        ];
        assert!(check_outcome(&unreachable_passed).is_err());
        let real_failed = [
            ("a".to_owned(), HostStatus::Failed),
            (UNREACHABLE_HOST.to_owned(), HostStatus::Unreachable),
        ];
        assert!(check_outcome(&real_failed).is_err());
        assert!(check_outcome(&[("a".to_owned(), HostStatus::Passed)]).is_err());
    }
}
