//! Child processes: every command xtask runs on the user's behalf is echoed first, so a CI
//! log shows exactly what ran and can be replayed by hand.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use anyhow::{Context, Result, bail};

/// The workspace root. xtask sits one directory below it, and every path this binary
/// prints or writes is anchored here rather than at the caller's working directory.
///
/// Read at run time (`cargo run` sets `CARGO_MANIFEST_DIR` for the program), not compile
/// time: the loopback fleet builds other checkouts of this workspace into the same target
/// folder, so the xtask binary cargo runs may have been compiled from a checkout that is gone
/// by now (CI failed that way).
pub fn workspace_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir
        .parent()
        .map_or_else(|| Path::new(".").to_path_buf(), Path::to_path_buf)
}

/// The command as a shell user would type it, with the environment variables it sets.
pub fn command_line(command: &Command) -> String {
    let environment = command.get_envs().filter_map(|(key, value)| {
        value.map(|value| {
            format!(
                "{}={}",
                key.to_string_lossy(),
                shell_word(&value.to_string_lossy())
            )
        })
    });
    let program = std::iter::once(command.get_program().to_string_lossy().into_owned());
    let arguments = command
        .get_args()
        .map(|argument| shell_word(&argument.to_string_lossy()));
    environment
        .chain(program)
        .chain(arguments)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Quotes a word only when a shell would split or expand it, to keep echoed lines readable.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Echoes and runs the command with inherited standard streams; returns its exit status.
pub fn status(command: &mut Command) -> Result<ExitStatus> {
    println!("$ {}", command_line(command));
    command
        .status()
        .with_context(|| format!("cannot start `{}`", command_line(command)))
}

/// Echoes and runs the command; a non-zero exit is an error.
pub fn run(command: &mut Command) -> Result<()> {
    let exit_status = status(command)?;
    if !exit_status.success() {
        bail!("`{}` failed ({exit_status})", command_line(command));
    }
    Ok(())
}

/// Runs the command silently and returns its standard output; a non-zero exit is an error
/// that carries the command's standard error.
pub fn stdout_of(command: &mut Command) -> Result<String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start `{}`", command_line(command)))?;
    if !output.status.success() {
        bail!(
            "`{}` failed ({}): {}",
            command_line(command),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether a program can be found on PATH, so optional checks can be skipped with a reason.
pub fn program_exists(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|directory| directory.join(program).is_file())
    })
}
