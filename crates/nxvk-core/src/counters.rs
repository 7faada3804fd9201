//! Counters of what the device layer did: dispatches, submits, bytes moved, pool traffic,
//! pipeline builds, resident tables and host fallbacks by (op, dtype). Shared by every device
//! generation of a context, so a rebuild after a lost device does not reset them.

use crate::DType;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Counters {
    pub(crate) dispatches: AtomicU64,
    pub(crate) barriers: AtomicU64,
    pub(crate) submits: AtomicU64,
    pub(crate) bytes_uploaded: AtomicU64,
    pub(crate) bytes_downloaded: AtomicU64,
    pub(crate) pool_hits: AtomicU64,
    pub(crate) pool_misses: AtomicU64,
    pub(crate) pool_evictions: AtomicU64,
    pub(crate) pipeline_builds: AtomicU64,
    pub(crate) pipeline_cache_hits: AtomicU64,
    pub(crate) shader_compiles: AtomicU64,
    pub(crate) device_rebuilds: AtomicU64,
    pub(crate) device_bytes_live: AtomicU64,
    pub(crate) resident_table_builds: AtomicU64,
    pub(crate) resident_table_hits: AtomicU64,
    pub(crate) replays: AtomicU64,
    pub(crate) replayed_dispatches: AtomicU64,
    host_fallbacks: Mutex<BTreeMap<(String, DType), u64>>,
}

/// A consistent-enough copy of the counters at one moment (each counter is read atomically).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    pub dispatches: u64,
    pub barriers: u64,
    pub submits: u64,
    pub bytes_uploaded: u64,
    pub bytes_downloaded: u64,
    pub pool_hits: u64,
    pub pool_misses: u64,
    pub pool_evictions: u64,
    pub pipeline_builds: u64,
    pub pipeline_cache_hits: u64,
    pub shader_compiles: u64,
    pub device_rebuilds: u64,
    /// Bytes of device-local buffers that exist now, in use or cached in the pool.
    pub device_bytes_live: u64,
    /// Resident tables built and uploaded, and requests served by one already on the device.
    pub resident_table_builds: u64,
    pub resident_table_hits: u64,
    /// Captured command buffers submitted again ([`crate::Replay`]), and the dispatches they
    /// held (also counted in `dispatches`, though none of them was recorded again).
    pub replays: u64,
    pub replayed_dispatches: u64,
    /// Host fallbacks taken, by (op, dtype).
    pub host_fallbacks: BTreeMap<(String, DType), u64>,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, amount: u64) {
        counter.fetch_add(amount, Ordering::Relaxed);
    }

    pub(crate) fn record_fallback(&self, op: &str, dtype: DType) {
        *self
            .host_fallbacks
            .lock()
            .entry((op.to_owned(), dtype))
            .or_default() += 1;
    }

    pub fn snapshot(&self) -> CounterSnapshot {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CounterSnapshot {
            dispatches: read(&self.dispatches),
            barriers: read(&self.barriers),
            submits: read(&self.submits),
            bytes_uploaded: read(&self.bytes_uploaded),
            bytes_downloaded: read(&self.bytes_downloaded),
            pool_hits: read(&self.pool_hits),
            pool_misses: read(&self.pool_misses),
            pool_evictions: read(&self.pool_evictions),
            pipeline_builds: read(&self.pipeline_builds),
            pipeline_cache_hits: read(&self.pipeline_cache_hits),
            shader_compiles: read(&self.shader_compiles),
            device_rebuilds: read(&self.device_rebuilds),
            device_bytes_live: read(&self.device_bytes_live),
            resident_table_builds: read(&self.resident_table_builds),
            resident_table_hits: read(&self.resident_table_hits),
            replays: read(&self.replays),
            replayed_dispatches: read(&self.replayed_dispatches),
            host_fallbacks: self.host_fallbacks.lock().clone(),
        }
    }
}

impl CounterSnapshot {
    /// Total host fallbacks over all ops and dtypes.
    pub fn total_host_fallbacks(&self) -> u64 {
        self.host_fallbacks.values().sum()
    }
}
