//! Mesa's `mesa-vulkan-drivers` from bookworm-backports, downloaded with a private apt
//! configuration and unpacked with `dpkg -x`: the system's apt sources, lists and package
//! cache stay untouched, and nothing is installed.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::process;

/// The release whose backports carry the newer Mesa (25.x on Debian 12).
pub const BASE_SUITE: &str = "bookworm";
const BACKPORTS_SUITE: &str = "bookworm-backports";
const PACKAGE: &str = "mesa-vulkan-drivers";
const FALLBACK_MIRROR: &str = "http://deb.debian.org/debian";
const DEBIAN_KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// Downloads the backports package into `apt_directory` and unpacks it into `destination`
/// (which must not exist yet); returns the package version.
pub fn download_and_unpack(apt_directory: &Path, destination: &Path) -> Result<String> {
    let apt = PrivateApt::create(apt_directory)?;
    let mirror = debian_mirror();
    let signed_by = if Path::new(DEBIAN_KEYRING).is_file() {
        format!("[signed-by={DEBIAN_KEYRING}] ")
    } else {
        String::new()
    };
    std::fs::write(
        &apt.source_list,
        format!("deb {signed_by}{mirror} {BACKPORTS_SUITE} main\n"),
    )?;
    println!("setup: downloading {PACKAGE} from {mirror} {BACKPORTS_SUITE}");
    process::run(apt.command().arg("update"))?;

    // `apt-get download` writes into its working directory; start it empty so that the
    // one .deb found afterwards is the one just downloaded.
    if apt.downloads.exists() {
        std::fs::remove_dir_all(&apt.downloads)?;
    }
    std::fs::create_dir_all(&apt.downloads)?;
    process::run(
        apt.command()
            .current_dir(&apt.downloads)
            .arg("download")
            .arg(format!("{PACKAGE}/{BACKPORTS_SUITE}")),
    )?;
    let package_file = single_deb(&apt.downloads)?;
    let version = process::stdout_of(
        Command::new("dpkg-deb")
            .arg("-f")
            .arg(&package_file)
            .arg("Version"),
    )?
    .trim()
    .to_owned();
    process::run(
        Command::new("dpkg")
            .arg("-x")
            .arg(&package_file)
            .arg(destination),
    )?;
    Ok(version)
}

/// apt-get pointed at its own sources list, index lists and caches under one directory.
struct PrivateApt {
    source_list: PathBuf,
    lists: PathBuf,
    cache: PathBuf,
    archives: PathBuf,
    downloads: PathBuf,
}

impl PrivateApt {
    fn create(directory: &Path) -> Result<Self> {
        let apt = Self {
            source_list: directory.join("sources.list"),
            lists: directory.join("lists"),
            cache: directory.join("cache"),
            archives: directory.join("archives"),
            downloads: directory.join("downloads"),
        };
        // apt refuses to run unless each of these has a `partial` subdirectory.
        for required in [&apt.lists, &apt.archives] {
            std::fs::create_dir_all(required.join("partial"))
                .with_context(|| format!("cannot create {}", required.display()))?;
        }
        std::fs::create_dir_all(&apt.cache)?;
        Ok(apt)
    }

    /// `apt-get` with every path that it would write, or read sources from, redirected here.
    /// Dir::Cache matters as much as the lists: otherwise apt would rebuild the system's
    /// /var/cache/apt/pkgcache.bin from our one-suite view.
    fn command(&self) -> Command {
        let mut command = Command::new("apt-get");
        command
            .arg("-q")
            .arg("-o")
            .arg(format!(
                "Dir::Etc::SourceList={}",
                self.source_list.display()
            ))
            .args(["-o", "Dir::Etc::SourceParts=/dev/null"])
            .arg("-o")
            .arg(format!("Dir::State::Lists={}", self.lists.display()))
            .arg("-o")
            .arg(format!("Dir::Cache={}", self.cache.display()))
            .arg("-o")
            .arg(format!("Dir::Cache::archives={}", self.archives.display()))
            .args(["-o", "Acquire::Languages=none"])
            // As root, apt downloads as the unprivileged `_apt` user, which cannot write into
            // the caller's tree and would warn; the package is still checked against the
            // signed index. Without root, apt ignores this option.
            .args(["-o", "APT::Sandbox::User=root"]);
        command
    }
}

fn single_deb(directory: &Path) -> Result<PathBuf> {
    let debs: Vec<PathBuf> = std::fs::read_dir(directory)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "deb"))
        .collect();
    match debs.as_slice() {
        [deb] => Ok(deb.clone()),
        _ => bail!(
            "expected one .deb in {} after apt-get download, found {}",
            directory.display(),
            debs.len()
        ),
    }
}

/// The mirror the system already uses for bookworm (a local or snapshot mirror may be the
/// only one reachable), else Debian's redirector.
fn debian_mirror() -> String {
    let one_line_files =
        std::iter::once(PathBuf::from("/etc/apt/sources.list")).chain(files_ending_in(".list"));
    let from_one_line = one_line_files
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .find_map(|text| mirror_in_one_line_format(&text));
    from_one_line
        .or_else(|| {
            files_ending_in(".sources")
                .filter_map(|path| std::fs::read_to_string(path).ok())
                .find_map(|text| mirror_in_deb822_format(&text))
        })
        .unwrap_or_else(|| FALLBACK_MIRROR.to_owned())
}

fn files_ending_in(suffix: &str) -> impl Iterator<Item = PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir("/etc/apt/sources.list.d")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    paths.sort();
    paths.into_iter()
}

/// `deb [options] URI SUITE COMPONENTS...` lines.
fn mirror_in_one_line_format(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        if words.next() != Some("deb") {
            return None;
        }
        // Options may span several words (`[arch=amd64 signed-by=...]`); the URI is the first
        // word with a scheme.
        let mut words = words.skip_while(|word| !word.contains("://"));
        let uri = words.next()?;
        (words.next()? == BASE_SUITE).then(|| uri.trim_end_matches('/').to_owned())
    })
}

/// deb822 stanzas: `Types: deb`, `URIs: ...`, `Suites: ...`, separated by blank lines.
fn mirror_in_deb822_format(text: &str) -> Option<String> {
    text.split("\n\n").find_map(|stanza| {
        let field = |name: &str| {
            stanza
                .lines()
                .filter(|line| !line.starts_with('#'))
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':').map(str::trim))
        };
        let is_binary = field("Types")?.split_whitespace().any(|kind| kind == "deb");
        let has_base_suite = field("Suites")?
            .split_whitespace()
            .any(|suite| suite == BASE_SUITE);
        let uri = field("URIs")?.split_whitespace().next()?;
        (is_binary && has_base_suite).then(|| uri.trim_end_matches('/').to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::{mirror_in_deb822_format, mirror_in_one_line_format};

    #[test]
    fn one_line_sources_skip_other_suites_and_options() {
        let text = "# comment\ndeb http://security.debian.org/ bookworm-security main\n\
                    deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian/ bookworm main\n";
        assert_eq!(
            mirror_in_one_line_format(text).as_deref(),
            Some("http://mirror.example/debian")
        );
    }

    #[test]
    fn deb822_sources_match_the_stanza_that_lists_bookworm() {
        let text = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n\
                    URIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n\
                    Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n";
        assert_eq!(
            mirror_in_deb822_format(text).as_deref(),
            Some("http://deb.debian.org/debian")
        );
        assert_eq!(
            mirror_in_deb822_format("Types: deb\nURIs: http://x/\nSuites: trixie\n"),
            None
        );
    }
}
