//! The catalog's kernel variants: each a knob `NXVK_KNOB_<NAME>=on|off`, read once when a
//! device opens (nxvk-core's `Knobs::variant`), whose default ships only after a race
//! (DESIGN.md, decision 9). A variant must compute what the default computes within the same
//! tests, so the test binaries run with the knob on as they do with it off.

use nxvk_core::Device;
use std::collections::BTreeSet;
use std::sync::Mutex;

/// A kernel variant and its knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KernelKnob {
    /// `NXVK_KNOB_FFT_ROW_PASS`: c64 rows of 2^12 to 2^14 in one dispatch, the whole row in
    /// one workgroup's registers (`fft_row.rs`), instead of the four-step pair of passes. Off
    /// until raced on the H200.
    FftRowPass,
    /// `NXVK_KNOB_SORT_ONESWEEP`: radix passes that rank, look back and scatter in one
    /// dispatch each after one histogram of every pass's digits (`sort_radix.rs`), instead of
    /// count, scan and scatter per pass. Off until raced on the H200.
    SortOnesweep,
}

impl KernelKnob {
    /// The knob's name in `NXVK_KNOB_<NAME>`, lowercase.
    fn name(self) -> &'static str {
        match self {
            KernelKnob::FftRowPass => "fft_row_pass",
            KernelKnob::SortOnesweep => "sort_onesweep",
        }
    }

    /// Whether the variant runs when the environment does not say.
    fn default_on(self) -> bool {
        match self {
            KernelKnob::FftRowPass | KernelKnob::SortOnesweep => false,
        }
    }

    /// Whether the variant is on for `device`: `on` or `off` from the environment, else the
    /// default (a malformed value is reported once per process and ignored).
    pub(crate) fn is_on(self, device: &Device) -> bool {
        self.is_on_for(device.knobs().variant(self.name()))
    }

    /// [`KernelKnob::is_on`] for the knob's value (`None`: not set).
    fn is_on_for(self, value: Option<&str>) -> bool {
        match value {
            Some("on") => true,
            Some("off") => false,
            Some(other) => {
                static REPORTED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
                let first = REPORTED
                    .lock()
                    .map(|mut reported| reported.insert(self.name()))
                    .unwrap_or(false);
                if first {
                    eprintln!(
                        "nxvk: ignoring NXVK_KNOB_{}={other:?}: expected on or off",
                        self.name().to_uppercase()
                    );
                }
                self.default_on()
            }
            None => self.default_on(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `on` and `off` choose; anything else, or nothing, keeps the default (off for both).
    #[test]
    fn values_choose_the_variant() {
        for knob in [KernelKnob::FftRowPass, KernelKnob::SortOnesweep] {
            assert!(knob.is_on_for(Some("on")));
            assert!(!knob.is_on_for(Some("off")));
            assert!(!knob.is_on_for(Some("yes")));
            assert!(!knob.is_on_for(None));
        }
    }
}
