//! Performance knobs: named switches whose defaults are chosen by `cargo xtask race`.
//!
//! Each knob reads `NXVK_KNOB_<NAME>` once when a device is opened, so a race can run the same
//! benchmark binary with arm A and arm B by environment alone (DESIGN.md, decision 9).

use std::time::Duration;

/// The device layer's knobs and limits, fixed for the life of one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Knobs {
    /// Dispatches recorded into one command buffer before it is submitted without waiting
    /// (`NXVK_KNOB_SUBMIT_THRESHOLD`). Larger batches cost less CPU; smaller ones start the GPU
    /// sooner. 64 won the race on both devices measured (small_op_chain_us, docs/BENCHMARKS.md):
    /// H200 2.26 us/op against 5.3-6.8 at 256; lavapipe 26.7 against 31.4.
    pub submit_threshold: u32,
    /// Most bytes the buffer pool keeps cached (`NXVK_KNOB_POOL_BYTES`); `None` means an eighth
    /// of the device-local heap, at most 4 GiB.
    pub pool_bytes: Option<u64>,
    /// How long a wait for GPU work may take before it is an error (`NXVK_TIMEOUT_MS`).
    pub timeout: Duration,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            submit_threshold: 64,
            pool_bytes: None,
            timeout: Duration::from_secs(120),
        }
    }
}

impl Knobs {
    /// Defaults overridden by the environment; malformed values are ignored with a warning on
    /// stderr rather than failing device creation.
    pub fn from_env() -> Self {
        let defaults = Knobs::default();
        Knobs {
            submit_threshold: env_number("NXVK_KNOB_SUBMIT_THRESHOLD")
                .map(|value| value.clamp(1, 1 << 20) as u32)
                .unwrap_or(defaults.submit_threshold),
            pool_bytes: env_number("NXVK_KNOB_POOL_BYTES").or(defaults.pool_bytes),
            timeout: env_number("NXVK_TIMEOUT_MS")
                .map(Duration::from_millis)
                .unwrap_or(defaults.timeout),
        }
    }
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse() {
        Ok(value) => Some(value),
        Err(_) => {
            eprintln!("nxvk: ignoring {name}={text:?}: not a whole number");
            None
        }
    }
}
