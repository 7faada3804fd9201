//! Device-resident constant tables: data a kernel family reads on every call (FFT twiddles,
//! Bluestein chirps and their spectra) that the host builds once, uploads once and the device
//! keeps, so that a repeated call uploads nothing.
//!
//! Policy: a table is found by a key its caller names, which must spell out everything the
//! contents depend on (op, length, precision, direction); the device is implicit, since each
//! device generation owns its own tables. The cache keeps at most [`RESIDENT_TABLE_BYTES`],
//! evicting the least recently used tables first, but never the table just requested: one
//! table larger than the budget is rebuilt on every call that needs it rather than refused.
//!
//! The cache holds raw buffers, not [`crate::DeviceBuffer`]s, because a `DeviceBuffer` holds
//! its device: a device holding its own `DeviceBuffer`s would never be dropped. The handles it
//! gives out do not return their memory to the pool; an evicted table is freed once the last
//! handle and the last batch using it are gone.

use crate::memory::RawBuffer;
use std::collections::HashMap;
use std::sync::Arc;

/// Bytes of resident tables one device keeps (twiddle tables are a few KiB; a Bluestein
/// spectrum of a length near 2^20 takes 32 MiB in c128).
pub const RESIDENT_TABLE_BYTES: u64 = 64 << 20;

#[derive(Debug, Default)]
pub(crate) struct ResidentTables {
    entries: HashMap<String, ResidentEntry>,
    bytes: u64,
    /// Increases by one per lookup; an entry's `last_use` orders evictions.
    clock: u64,
}

#[derive(Debug)]
struct ResidentEntry {
    buffer: Arc<RawBuffer>,
    last_use: u64,
}

impl ResidentTables {
    /// The table under `key`, marked as just used.
    pub(crate) fn get(&mut self, key: &str) -> Option<Arc<RawBuffer>> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(key).map(|entry| {
            entry.last_use = clock;
            entry.buffer.clone()
        })
    }

    /// Keeps `buffer` under `key`, then evicts the least recently used other tables while the
    /// cache exceeds its budget.
    pub(crate) fn insert(&mut self, key: String, buffer: Arc<RawBuffer>) {
        self.clock += 1;
        self.bytes += buffer.size();
        let replaced = self.entries.insert(
            key.clone(),
            ResidentEntry {
                buffer,
                last_use: self.clock,
            },
        );
        if let Some(replaced) = replaced {
            self.bytes -= replaced.buffer.size();
        }
        while self.bytes > RESIDENT_TABLE_BYTES {
            let oldest = self
                .entries
                .iter()
                .filter(|(other, _)| **other != key)
                .min_by_key(|(_, entry)| entry.last_use)
                .map(|(other, _)| other.clone());
            let Some(oldest) = oldest else { break };
            if let Some(evicted) = self.entries.remove(&oldest) {
                self.bytes -= evicted.buffer.size();
            }
        }
    }
}
