//! The folder for nxvk's on-disk caches (pipeline caches, SPIR-V): `NXVK_CACHE_DIR` if set,
//! else `$XDG_CACHE_HOME/nxvk`, else `~/.cache/nxvk`, else the system temp folder.

use crate::{Error, Result};
use std::path::{Path, PathBuf};

pub fn default_cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NXVK_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("nxvk");
    }
    if let Some(home) = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE")) {
        return PathBuf::from(home).join(".cache").join("nxvk");
    }
    std::env::temp_dir().join("nxvk")
}

/// Writes `bytes` to `path` atomically: a reader sees the old file or the new one, never half.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let io_error = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(folder).map_err(io_error)?;
    let mut file = tempfile::NamedTempFile::new_in(folder).map_err(io_error)?;
    std::io::Write::write_all(&mut file, bytes).map_err(io_error)?;
    file.persist(path).map_err(|error| io_error(error.error))?;
    Ok(())
}
