//! The running operating system, read from /etc/os-release, which decides whether xtask
//! may install packages with apt and whether the backports driver exists for it.

use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct OsRelease {
    fields: HashMap<String, String>,
}

impl OsRelease {
    /// Reads /etc/os-release; an absent file (macOS, Windows) reads as an unknown system.
    pub fn read() -> Self {
        let text = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
        Self::parse(&text)
    }

    fn parse(text: &str) -> Self {
        let fields = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(key, value)| {
                (
                    key.trim().to_owned(),
                    value.trim().trim_matches(['"', '\'']).to_owned(),
                )
            })
            .collect();
        Self { fields }
    }

    fn field(&self, key: &str) -> &str {
        self.fields.get(key).map_or("", String::as_str)
    }

    /// A human name for messages, e.g. "Debian GNU/Linux 12 (bookworm)".
    pub fn pretty_name(&self) -> &str {
        match self.field("PRETTY_NAME") {
            "" => std::env::consts::OS,
            name => name,
        }
    }

    pub fn is_debian(&self) -> bool {
        self.field("ID") == "debian"
    }

    /// Debian and its derivatives (Ubuntu, Mint, ...), where apt and dpkg manage packages.
    pub fn is_debian_like(&self) -> bool {
        std::iter::once(self.field("ID"))
            .chain(self.field("ID_LIKE").split_whitespace())
            .any(|id| id == "debian" || id == "ubuntu")
    }

    /// The release code name, e.g. "bookworm".
    pub fn codename(&self) -> &str {
        self.field("VERSION_CODENAME")
    }
}

#[cfg(test)]
mod tests {
    use super::OsRelease;

    #[test]
    fn ubuntu_counts_as_debian_like_but_not_debian() {
        let os = OsRelease::parse("ID=ubuntu\nID_LIKE=debian\nVERSION_CODENAME=noble\n");
        assert!(os.is_debian_like());
        assert!(!os.is_debian());
        assert_eq!(os.codename(), "noble");
    }

    #[test]
    fn quoted_values_are_unquoted() {
        let os = OsRelease::parse("PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n");
        assert_eq!(os.pretty_name(), "Debian GNU/Linux 12 (bookworm)");
        assert!(os.is_debian());
    }
}
