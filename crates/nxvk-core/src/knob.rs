//! Performance knobs: named switches whose defaults are chosen by `cargo xtask race`.
//!
//! Each knob reads `NXVK_KNOB_<NAME>` once when a device is opened, so a race can run the same
//! benchmark binary with arm A and arm B by environment alone (DESIGN.md, decision 9). The
//! device layer's own knobs are typed fields; every other `NXVK_KNOB_*` value is kept by name
//! in [`Knobs::variants`] for the kernel crates, which alone know what their variants mean.

use std::collections::BTreeMap;
use std::time::Duration;

/// The knob names the device layer reads itself.
const DEVICE_KNOBS: [&str; 2] = ["SUBMIT_THRESHOLD", "POOL_BYTES"];

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
    /// Every other `NXVK_KNOB_<NAME>=<value>`, by lowercase name: kernel variants such as
    /// `fft_row_pass` or `sort_onesweep`, whose meaning and defaults live with their kernels.
    pub variants: BTreeMap<String, String>,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            submit_threshold: 64,
            pool_bytes: None,
            timeout: Duration::from_secs(120),
            variants: BTreeMap::new(),
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
            variants: variants_of(std::env::vars()),
        }
    }

    /// The value of the kernel variant `name` (lowercase, as in `NXVK_KNOB_<NAME>`), when the
    /// environment set it.
    pub fn variant(&self, name: &str) -> Option<&str> {
        self.variants.get(name).map(String::as_str)
    }

    /// These knobs with the kernel variant `name` set to `value`, whatever the environment
    /// said: for a process that opens a device per arm of a variant (tests comparing them).
    pub fn with_variant(mut self, name: &str, value: &str) -> Self {
        self.variants.insert(name.to_owned(), value.to_owned());
        self
    }
}

/// The kernel variants among environment variables: every `NXVK_KNOB_<NAME>` the device layer
/// does not read itself, by lowercase name, its value trimmed.
fn variants_of(variables: impl Iterator<Item = (String, String)>) -> BTreeMap<String, String> {
    variables
        .filter_map(|(variable, value)| {
            let name = variable.strip_prefix("NXVK_KNOB_")?;
            (!DEVICE_KNOBS.contains(&name)).then(|| (name.to_lowercase(), value.trim().to_owned()))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_variant_sets_one_variant() {
        let knobs = Knobs::default().with_variant("fft_row_pass", "off");
        assert_eq!(knobs.variant("fft_row_pass"), Some("off"));
        assert_eq!(knobs.variant("sort_onesweep"), None);
    }

    /// Kernel variants are every other `NXVK_KNOB_*`, lowercase and trimmed; the device
    /// layer's own knobs and unrelated variables are not among them (the null arm).
    #[test]
    fn variants_are_the_other_knobs() {
        let variables = [
            ("NXVK_KNOB_FFT_ROW_PASS", " on "),
            ("NXVK_KNOB_SUBMIT_THRESHOLD", "16"),
            ("NXVK_TIMEOUT_MS", "5"),
            ("PATH", "/bin"),
        ]
        .map(|(variable, value)| (variable.to_owned(), value.to_owned()));
        let knobs = Knobs {
            variants: variants_of(variables.into_iter()),
            ..Knobs::default()
        };
        assert_eq!(knobs.variant("fft_row_pass"), Some("on"));
        assert_eq!(knobs.variants.len(), 1, "{:?}", knobs.variants);
        assert_eq!(knobs.variant("submit_threshold"), None);
    }
}
