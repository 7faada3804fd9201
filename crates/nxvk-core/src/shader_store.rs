//! Run-time shaders: GLSL compiled once, its SPIR-V checked and kept on disk under its
//! content hash, so a later process (or a later call) skips glslang.
//!
//! The key hashes the GLSL prelude, the source and this crate's version; a file on disk that
//! fails the structural check is recompiled and replaced, never handed to a driver.

use crate::Result;
use crate::cache_dir::write_atomically;
use crate::counters::Counters;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct ShaderStore {
    folder: PathBuf,
    compiled: Mutex<HashMap<blake3::Hash, Arc<[u32]>>>,
}

impl ShaderStore {
    pub(crate) fn new(cache_dir: &Path) -> Self {
        ShaderStore {
            folder: cache_dir.join("spirv"),
            compiled: Mutex::new(HashMap::new()),
        }
    }

    /// SPIR-V for the compute shader `body` (which follows [`nxvk_glsl::GLSL_PRELUDE`]).
    pub(crate) fn spirv(&self, counters: &Counters, name: &str, body: &str) -> Result<Arc<[u32]>> {
        let key = source_key(body);
        if let Some(words) = self.compiled.lock().get(&key) {
            return Ok(words.clone());
        }
        let path = self.folder.join(format!("{}.spv", key.to_hex()));
        let words: Arc<[u32]> = match read_checked(&path, name) {
            Some(words) => words.into(),
            None => {
                Counters::add(&counters.shader_compiles, 1);
                let (words, _) = nxvk_glsl::compile_compute(name, body)?;
                let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_le_bytes()).collect();
                // A cache that cannot be written only costs the next process a compile.
                if let Err(error) = write_atomically(&path, &bytes) {
                    eprintln!("nxvk: not caching SPIR-V: {error}");
                }
                words.into()
            }
        };
        self.compiled.lock().insert(key, words.clone());
        Ok(words)
    }
}

fn source_key(body: &str) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
    hasher.update(nxvk_glsl::GLSL_PRELUDE.as_bytes());
    hasher.update(nxvk_glsl::COMPILE_REVISION.as_bytes());
    hasher.update(body.as_bytes());
    hasher.finalize()
}

fn read_checked(path: &Path, name: &str) -> Option<Vec<u32>> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() % 4 != 0 {
        return None;
    }
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|chunk| u32::from_le_bytes(chunk.try_into().expect("chunks of 4")))
        .collect();
    nxvk_glsl::check_module(name, &words).ok().map(|_| words)
}
