//! The fleet file (`fleet.toml`): hosts, optional job list and race settings.
//!
//! Policy: every field has a documented default except a host's `name` (and `address` for
//! SSH hosts); unknown fields are errors, so a typo never silently falls back to a default.
//! Errors name the file, the host and the field (`hosts[2].port` becomes host `mac-247`,
//! field `port`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::FleetError;
use crate::job::JobSpec;

/// The whole fleet file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetConfig {
    /// The hosts, in the order the summary prints them.
    #[serde(default)]
    pub hosts: Vec<HostConfig>,
    /// Job list overriding [`crate::job::default_jobs`] when non-empty.
    #[serde(default)]
    pub jobs: Vec<JobSpec>,
    /// Race settings.
    #[serde(default)]
    pub race: RaceSettings,
}

/// How a host is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// SSH through libssh2 (the `ssh2` crate).
    Ssh,
    /// This machine, through `sh -c`.
    Local,
}

/// How the SSH client authenticates.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Identity {
    /// `identity = "agent"`: keys from the running ssh-agent (`SSH_AUTH_SOCK`).
    Agent,
    /// `identity = { file = "~/.ssh/id_ed25519" }`: a private key file (no passphrase).
    File(PathBuf),
}

/// What to do with a host key that known_hosts does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostKeyPolicy {
    /// Refuse unknown hosts (the default).
    Strict,
    /// Record an unknown host's key in known_hosts and continue; a changed key is still refused.
    AcceptNew,
}

/// The known_hosts file and the policy for unknown keys.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnownHosts {
    /// Policy for keys not in the file.
    #[serde(default = "default_policy")]
    pub policy: HostKeyPolicy,
    /// The OpenSSH-format known_hosts file.
    #[serde(default = "default_known_hosts_path")]
    pub path: PathBuf,
}

impl Default for KnownHosts {
    fn default() -> Self {
        KnownHosts {
            policy: default_policy(),
            path: default_known_hosts_path(),
        }
    }
}

/// One host of the fleet.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// Unique name, used in results paths and tables.
    pub name: String,
    /// `ssh` (default) or `local`.
    #[serde(default = "default_transport")]
    pub transport: TransportKind,
    /// Host name or IP address (SSH only).
    #[serde(default)]
    pub address: Option<String>,
    /// SSH port.
    #[serde(default = "default_port")]
    pub port: u16,
    /// SSH user; defaults to `$USER`.
    #[serde(default)]
    pub user: Option<String>,
    /// Key file or agent; defaults to the agent.
    #[serde(default = "default_identity")]
    pub identity: Identity,
    /// known_hosts file and policy.
    #[serde(default)]
    pub known_hosts: KnownHosts,
    /// Folder on the host holding the git checkout (`~/` means the remote home).
    #[serde(default = "default_checkout")]
    pub checkout: String,
    /// Environment for every job (values may use `$HOME`, `$PATH`: the remote shell expands them).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Free-form tags; `class` groups hosts for the race decision rule, `arch` is informative.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Seconds allowed for TCP connect + SSH handshake.
    #[serde(default = "default_connect_timeout_s")]
    pub connect_timeout_s: u64,
    /// Seconds allowed for any single command (build + test included).
    #[serde(default = "default_command_timeout_s")]
    pub command_timeout_s: u64,
    /// Benchmark command for races on this host, overriding `[race] bench_command`.
    #[serde(default)]
    pub bench_command: Option<String>,
}

impl HostConfig {
    /// The `class` tag, or `unclassified`.
    pub fn class(&self) -> &str {
        self.tags
            .get("class")
            .map_or("unclassified", String::as_str)
    }

    /// Connect timeout as a [`Duration`].
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_secs(self.connect_timeout_s)
    }

    /// Command timeout as a [`Duration`].
    pub fn command_timeout(&self) -> Duration {
        Duration::from_secs(self.command_timeout_s)
    }

    /// The SSH user: the configured one or the local `$USER` (`root` when unset).
    pub fn user_name(&self) -> String {
        self.user
            .clone()
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_else(|| "root".to_owned())
    }
}

/// Whether an overloaded host stops the race or only prints a warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadPolicy {
    /// Refuse to race on a host above the limit (the default).
    Refuse,
    /// Print a warning and race anyway.
    Warn,
}

/// The `[race]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RaceSettings {
    /// Benchmark command; `{workloads}` is replaced by the comma-separated workload names.
    #[serde(default = "default_bench_command")]
    pub bench_command: String,
    /// Replicates per arm per host (at least 5).
    #[serde(default = "default_replicates")]
    pub replicates: usize,
    /// Highest 1-minute load average per core at which a race may start.
    #[serde(default = "default_max_load_per_core")]
    pub max_load_per_core: f64,
    /// What happens above the limit.
    #[serde(default = "default_load_policy")]
    pub load_policy: LoadPolicy,
}

impl Default for RaceSettings {
    fn default() -> Self {
        RaceSettings {
            bench_command: default_bench_command(),
            replicates: default_replicates(),
            max_load_per_core: default_max_load_per_core(),
            load_policy: default_load_policy(),
        }
    }
}

/// The smallest number of replicates a race accepts.
pub const MIN_REPLICATES: usize = 5;

fn default_policy() -> HostKeyPolicy {
    HostKeyPolicy::Strict
}
fn default_known_hosts_path() -> PathBuf {
    PathBuf::from("~/.ssh/known_hosts")
}
fn default_transport() -> TransportKind {
    TransportKind::Ssh
}
fn default_port() -> u16 {
    22
}
fn default_identity() -> Identity {
    Identity::Agent
}
fn default_checkout() -> String {
    "~/nxvk-fleet/checkout".to_owned()
}
fn default_connect_timeout_s() -> u64 {
    10
}
fn default_command_timeout_s() -> u64 {
    3600
}
fn default_bench_command() -> String {
    "cargo xtask bench --only {workloads}".to_owned()
}
fn default_replicates() -> usize {
    MIN_REPLICATES
}
fn default_max_load_per_core() -> f64 {
    0.5
}
fn default_load_policy() -> LoadPolicy {
    LoadPolicy::Refuse
}

impl FleetConfig {
    /// Reads and checks a fleet file.
    pub fn load(file: &Path) -> Result<FleetConfig, FleetError> {
        let text = std::fs::read_to_string(file).map_err(|source| FleetError::ConfigRead {
            file: file.to_owned(),
            source,
        })?;
        FleetConfig::parse(&text, file)
    }

    /// Parses and checks fleet-file text; `file` is only used in error messages.
    pub fn parse(text: &str, file: &Path) -> Result<FleetConfig, FleetError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|error| FleetError::ConfigSyntax {
                file: file.to_owned(),
                message: error.to_string(),
            })?;
        let host_names = raw_host_names(&table);
        let config: FleetConfig = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|error| {
                locate_error(
                    file,
                    &host_names,
                    &error.path().to_string(),
                    error.inner().to_string(),
                )
            })?;
        config.validate(file)?;
        Ok(config)
    }

    /// Checks what serde cannot: required-by-transport fields, unique names, sane numbers.
    fn validate(&self, file: &Path) -> Result<(), FleetError> {
        let field_error = |host: &str, field: &str, message: &str| FleetError::ConfigField {
            file: file.to_owned(),
            host: host.to_owned(),
            field: field.to_owned(),
            message: message.to_owned(),
        };
        let mut seen = std::collections::BTreeSet::new();
        for host in &self.hosts {
            if host.name.is_empty() {
                return Err(field_error("#?", "name", "must not be empty"));
            }
            if !seen.insert(host.name.as_str()) {
                return Err(field_error(&host.name, "name", "is used by two hosts"));
            }
            if host.transport == TransportKind::Ssh
                && host.address.as_deref().is_none_or(str::is_empty)
            {
                return Err(field_error(
                    &host.name,
                    "address",
                    "is required when transport = \"ssh\"",
                ));
            }
            if host.connect_timeout_s == 0 {
                return Err(field_error(
                    &host.name,
                    "connect_timeout_s",
                    "must be at least 1",
                ));
            }
            if host.command_timeout_s == 0 {
                return Err(field_error(
                    &host.name,
                    "command_timeout_s",
                    "must be at least 1",
                ));
            }
            if host.checkout.is_empty() {
                return Err(field_error(&host.name, "checkout", "must not be empty"));
            }
        }
        if self.race.replicates < MIN_REPLICATES {
            return Err(FleetError::ConfigSyntax {
                file: file.to_owned(),
                message: format!("race.replicates must be at least {MIN_REPLICATES}"),
            });
        }
        Ok(())
    }

    /// The hosts named in `names` (all hosts when `names` is empty), in fleet-file order.
    pub fn select_hosts(&self, names: &[String]) -> Result<Vec<HostConfig>, FleetError> {
        for name in names {
            if !self.hosts.iter().any(|host| &host.name == name) {
                let known = self
                    .hosts
                    .iter()
                    .map(|host| host.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(FleetError::UnknownHost {
                    name: name.clone(),
                    known,
                });
            }
        }
        Ok(self
            .hosts
            .iter()
            .filter(|host| names.is_empty() || names.contains(&host.name))
            .cloned()
            .collect())
    }
}

/// Host names by position, read before typed parsing so that errors can name the host.
fn raw_host_names(table: &toml::Table) -> Vec<String> {
    let Some(toml::Value::Array(hosts)) = table.get("hosts") else {
        return Vec::new();
    };
    hosts
        .iter()
        .enumerate()
        .map(
            |(index, host)| match host.get("name").and_then(toml::Value::as_str) {
                Some(name) => name.to_owned(),
                None => format!("#{}", index + 1),
            },
        )
        .collect()
}

/// Turns a serde path like `hosts[2].known_hosts.policy` into host + field.
fn locate_error(file: &Path, host_names: &[String], path: &str, message: String) -> FleetError {
    if let Some(rest) = path.strip_prefix("hosts[")
        && let Some((index, field)) = rest.split_once(']')
        && let Ok(index) = index.parse::<usize>()
    {
        let host = host_names
            .get(index)
            .cloned()
            .unwrap_or_else(|| format!("#{}", index + 1));
        let field = field.trim_start_matches('.');
        // A missing field is reported against the host itself; serde names it in the message.
        let field = if field.is_empty() { "(entry)" } else { field };
        return FleetError::ConfigField {
            file: file.to_owned(),
            host,
            field: field.to_owned(),
            message,
        };
    }
    FleetError::ConfigSyntax {
        file: file.to_owned(),
        message: format!("{path}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FleetConfig, FleetError> {
        FleetConfig::parse(text, Path::new("test-fleet.toml"))
    }

    #[test]
    fn minimal_host_gets_documented_defaults() {
        let config = parse("[[hosts]]\nname = \"a\"\naddress = \"a.lan\"\n").unwrap();
        let host = &config.hosts[0];
        assert_eq!(host.transport, TransportKind::Ssh);
        assert_eq!(host.port, 22);
        assert_eq!(host.identity, Identity::Agent);
        assert_eq!(host.known_hosts, KnownHosts::default());
        assert_eq!(host.known_hosts.policy, HostKeyPolicy::Strict);
        assert_eq!(host.connect_timeout_s, 10);
        assert_eq!(host.command_timeout_s, 3600);
        assert_eq!(host.class(), "unclassified");
        assert!(config.jobs.is_empty());
        assert_eq!(config.race.replicates, MIN_REPLICATES);
        assert_eq!(config.race.load_policy, LoadPolicy::Refuse);
    }

    #[test]
    fn full_host_parses() {
        let text = r#"
            [[hosts]]
            name = "b"
            address = "10.0.0.2"
            port = 2222
            user = "ci"
            identity = { file = "/keys/id" }
            known_hosts = { policy = "accept-new", path = "/kh" }
            checkout = "/srv/nxvk"
            connect_timeout_s = 3
            command_timeout_s = 60
            bench_command = "true"
            env = { VK_ICD_FILENAMES = "/x.json" }
            tags = { class = "gpu", arch = "aarch64" }

            [[hosts]]
            name = "here"
            transport = "local"

            [[jobs]]
            name = "check"
            command = "cargo --version"

            [race]
            replicates = 7
            load_policy = "warn"
        "#;
        let config = parse(text).unwrap();
        let host = &config.hosts[0];
        assert_eq!(host.identity, Identity::File(PathBuf::from("/keys/id")));
        assert_eq!(host.known_hosts.policy, HostKeyPolicy::AcceptNew);
        assert_eq!(host.env["VK_ICD_FILENAMES"], "/x.json");
        assert_eq!(host.class(), "gpu");
        assert_eq!(config.hosts[1].transport, TransportKind::Local);
        assert_eq!(config.jobs[0].name, "check");
        assert_eq!(config.race.replicates, 7);
        assert_eq!(config.race.load_policy, LoadPolicy::Warn);
    }

    #[test]
    fn bad_field_names_file_host_and_field() {
        let text = "[[hosts]]\nname = \"ok\"\naddress = \"x\"\n[[hosts]]\nname = \"mac-247\"\naddress = \"y\"\nport = \"twenty-two\"\n";
        let message = parse(text).unwrap_err().to_string();
        assert!(message.contains("test-fleet.toml"), "{message}");
        assert!(message.contains("mac-247"), "{message}");
        assert!(message.contains("`port`"), "{message}");
    }

    #[test]
    fn unknown_field_and_bad_policy_are_errors() {
        let message = parse("[[hosts]]\nname = \"h\"\naddress = \"x\"\nprot = 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("host `h`") && message.contains("prot"),
            "{message}"
        );
        let message = parse(
            "[[hosts]]\nname = \"h\"\naddress = \"x\"\nknown_hosts = { policy = \"yolo\" }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("known_hosts.policy"), "{message}");
    }

    #[test]
    fn ssh_host_without_address_is_an_error() {
        let message = parse("[[hosts]]\nname = \"h\"\n").unwrap_err().to_string();
        assert!(message.contains("host `h`, field `address`"), "{message}");
    }

    #[test]
    fn duplicate_names_zero_timeouts_and_few_replicates_are_errors() {
        assert!(parse("[[hosts]]\nname=\"h\"\ntransport=\"local\"\n[[hosts]]\nname=\"h\"\ntransport=\"local\"\n").is_err());
        assert!(
            parse("[[hosts]]\nname=\"h\"\ntransport=\"local\"\ncommand_timeout_s=0\n").is_err()
        );
        assert!(parse("[race]\nreplicates = 2\n").is_err());
    }

    #[test]
    fn syntax_error_names_the_file() {
        let message = parse("[[hosts]\nname=").unwrap_err().to_string();
        assert!(message.starts_with("test-fleet.toml"), "{message}");
    }

    #[test]
    fn select_hosts_checks_names() {
        let config = parse("[[hosts]]\nname=\"a\"\ntransport=\"local\"\n[[hosts]]\nname=\"b\"\ntransport=\"local\"\n").unwrap();
        assert_eq!(config.select_hosts(&[]).unwrap().len(), 2);
        assert_eq!(config.select_hosts(&["b".to_owned()]).unwrap()[0].name, "b");
        assert!(config.select_hosts(&["c".to_owned()]).is_err());
    }

    #[test]
    fn repository_fleet_file_parses() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fleet.toml");
        let config = FleetConfig::load(&file).unwrap();
        let names: Vec<_> = config.hosts.iter().map(|host| host.name.as_str()).collect();
        assert_eq!(names, ["super-io", "mac-248", "mac-247", "jake-desktop"]);
    }
}
