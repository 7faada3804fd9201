//! The driver's pipeline cache, persisted per device and driver version.
//!
//! File layout (little-endian): the magic `NXVKPC01`, the device UUID (16 bytes), the driver
//! version, vendor id and device id (u32 each), the pipeline-cache UUID (16), the payload
//! length (u64), the payload's BLAKE3 hash (32), then the payload `vkGetPipelineCacheData`
//! returned. A file that is short, garbled, from another device or driver, or whose payload
//! header disagrees with the device is ignored (and replaced at the next save): drivers are
//! allowed to crash on bad cache data, so it never reaches them unchecked.

use crate::Capabilities;
use crate::Result;
use crate::cache_dir::write_atomically;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"NXVKPC01";
const HEADER_BYTES: usize = 8 + 16 + 4 + 4 + 4 + 16 + 8 + 32;

/// Where the cache of this device and driver lives under `cache_dir`.
pub(crate) fn cache_file_path(cache_dir: &Path, capabilities: &Capabilities) -> PathBuf {
    let uuid: String = capabilities
        .device_uuid
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    cache_dir
        .join("pipelines")
        .join(format!("{uuid}-{:08x}.bin", capabilities.driver_version))
}

/// What became of the pipeline cache file when a device opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineCacheLoad {
    /// No file yet (first run on this device and driver).
    Missing,
    /// The file was valid; this many bytes of driver data were handed to the driver.
    Loaded { bytes: usize },
    /// The file was ignored (it will be replaced at the next save), for this reason.
    Rejected { reason: String },
}

/// The payload of a valid cache file for this device (empty unless loaded), and what happened.
pub(crate) fn load(path: &Path, capabilities: &Capabilities) -> (Vec<u8>, PipelineCacheLoad) {
    let Ok(bytes) = std::fs::read(path) else {
        return (Vec::new(), PipelineCacheLoad::Missing);
    };
    match parse(&bytes, capabilities) {
        Ok(payload) => (
            payload.to_vec(),
            PipelineCacheLoad::Loaded {
                bytes: payload.len(),
            },
        ),
        Err(reason) => {
            eprintln!("nxvk: ignoring pipeline cache {}: {reason}", path.display());
            (Vec::new(), PipelineCacheLoad::Rejected { reason })
        }
    }
}

pub(crate) fn save(path: &Path, capabilities: &Capabilities, payload: &[u8]) -> Result<()> {
    let mut bytes = Vec::with_capacity(HEADER_BYTES + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&capabilities.device_uuid);
    bytes.extend_from_slice(&capabilities.driver_version.to_le_bytes());
    bytes.extend_from_slice(&capabilities.vendor_id.to_le_bytes());
    bytes.extend_from_slice(&capabilities.device_id.to_le_bytes());
    bytes.extend_from_slice(&capabilities.pipeline_cache_uuid);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(blake3::hash(payload).as_bytes());
    bytes.extend_from_slice(payload);
    write_atomically(path, &bytes)
}

fn parse<'a>(bytes: &'a [u8], capabilities: &Capabilities) -> Result<&'a [u8], String> {
    if bytes.len() < HEADER_BYTES {
        return Err(format!("{} bytes, shorter than the header", bytes.len()));
    }
    let (header, payload) = bytes.split_at(HEADER_BYTES);
    if &header[0..8] != MAGIC {
        return Err("not an nxvk pipeline cache".into());
    }
    let u32_at =
        |offset: usize| u32::from_le_bytes(header[offset..offset + 4].try_into().expect("4 bytes"));
    let same_device = header[8..24] == capabilities.device_uuid
        && u32_at(24) == capabilities.driver_version
        && u32_at(28) == capabilities.vendor_id
        && u32_at(32) == capabilities.device_id
        && header[36..52] == capabilities.pipeline_cache_uuid;
    if !same_device {
        return Err("written by another device or driver version".into());
    }
    let length = u64::from_le_bytes(header[52..60].try_into().expect("8 bytes"));
    if length != payload.len() as u64 {
        return Err(format!(
            "payload of {} bytes, header says {length}",
            payload.len()
        ));
    }
    if blake3::hash(payload).as_bytes() != &header[60..92] {
        return Err("payload checksum mismatch".into());
    }
    check_vulkan_header(payload, capabilities)?;
    Ok(payload)
}

/// The driver's own header (VkPipelineCacheHeaderVersionOne) must name this device.
fn check_vulkan_header(payload: &[u8], capabilities: &Capabilities) -> Result<(), String> {
    if payload.is_empty() {
        return Ok(());
    }
    if payload.len() < 32 {
        return Err("driver payload shorter than its header".into());
    }
    let u32_at = |offset: usize| {
        u32::from_le_bytes(payload[offset..offset + 4].try_into().expect("4 bytes"))
    };
    let matches = u32_at(0) >= 32
        && u32_at(4) == 1
        && u32_at(8) == capabilities.vendor_id
        && u32_at(12) == capabilities.device_id
        && payload[16..32] == capabilities.pipeline_cache_uuid;
    if matches {
        Ok(())
    } else {
        Err("driver payload header names another device".into())
    }
}
