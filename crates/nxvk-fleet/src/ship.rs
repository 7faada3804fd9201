//! Getting the local commit onto a host: `git bundle` here, upload, fetch and detach there.
//!
//! Policy: hosts never reach a git server; they receive exactly the local `HEAD` as a bundle
//! (full history, so the host needs no prior state) and check it out detached with
//! `--force`, discarding edits in the remote checkout but keeping untracked build outputs.
//! A repository without a commit is an error, not an empty ship.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::error::FleetError;
use crate::transport::{CommandSpec, Transport, shell_path, shell_quote};

/// A bundle of the local `HEAD`, ready to upload to any number of hosts.
#[derive(Debug)]
pub struct CommitBundle {
    /// Full commit hash of `HEAD`.
    pub commit: String,
    /// The bundle file (inside `_folder`).
    pub path: PathBuf,
    _folder: tempfile::TempDir,
}

fn git(repository: &Path, arguments: &[&str]) -> Result<String, FleetError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(repository)
        .args(arguments)
        .output()
        .map_err(|error| FleetError::Git {
            arguments: arguments.join(" "),
            message: error.to_string(),
        })?;
    if !output.status.success() {
        return Err(FleetError::Git {
            arguments: arguments.join(" "),
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The full hash of `HEAD` in `repository`.
pub fn head_commit(repository: &Path) -> Result<String, FleetError> {
    git(repository, &["rev-parse", "--verify", "HEAD^{commit}"]).map_err(|error| match error {
        FleetError::Git { arguments, message } => FleetError::Git {
            arguments,
            message: format!("{message} (the repository needs at least one commit to ship)"),
        },
        other => other,
    })
}

/// The top folder of the git work tree containing `folder`.
pub fn repository_root(folder: &Path) -> Result<PathBuf, FleetError> {
    git(folder, &["rev-parse", "--show-toplevel"]).map(PathBuf::from)
}

impl CommitBundle {
    /// Bundles `HEAD` of `repository` into a temporary folder.
    pub fn create(repository: &Path) -> Result<CommitBundle, FleetError> {
        let commit = head_commit(repository)?;
        let folder = tempfile::tempdir().map_err(|source| FleetError::Io {
            host: "localhost".to_owned(),
            action: "creating a folder for the bundle".to_owned(),
            source,
        })?;
        let path = folder.path().join(format!("nxvk-{commit}.bundle"));
        let path_text = path.to_string_lossy().into_owned();
        git(repository, &["bundle", "create", &path_text, "HEAD"])?;
        Ok(CommitBundle {
            commit,
            path,
            _folder: folder,
        })
    }

    /// Uploads the bundle next to `checkout` and checks the commit out there, detached.
    pub fn ship(
        &self,
        transport: &mut dyn Transport,
        checkout: &str,
        timeout: Duration,
    ) -> Result<(), FleetError> {
        let checkout = checkout.trim_end_matches('/');
        let remote_bundle = format!("{checkout}.bundle");
        let no_env = std::collections::BTreeMap::new();
        let run = |transport: &mut dyn Transport, script: &str| -> Result<(), FleetError> {
            let output = transport.run(&CommandSpec {
                script,
                cwd: None,
                env: &no_env,
                timeout,
            })?;
            if output.success() {
                Ok(())
            } else {
                Err(FleetError::CommandFailed {
                    host: transport.host_name().to_owned(),
                    command: script.to_owned(),
                    exit_code: output.exit_code,
                    stderr: output.stderr.trim().to_owned(),
                })
            }
        };
        run(transport, &format!("mkdir -p {}", shell_path(checkout)))?;
        transport.upload(&self.path, &remote_bundle)?;
        let checkout_quoted = shell_path(checkout);
        let script = format!(
            "cd {checkout_quoted} && (test -d .git || git init -q) && git fetch -q {bundle} HEAD \
             && git checkout -q --force --detach {commit} && test \"$(git rev-parse HEAD)\" = {commit}",
            bundle = shell_path(&remote_bundle),
            commit = shell_quote(&self.commit),
        );
        run(transport, &script)
    }
}
