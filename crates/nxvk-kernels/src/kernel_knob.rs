//! The catalog's kernel variants: each a knob `NXVK_KNOB_<NAME>=on|off`, read once when a
//! device opens (nxvk-core's `Knobs::variant`), whose default ships only after a race
//! (DESIGN.md, decision 9): on where it won, gated by a device property where it won on one
//! class of device only. A variant must compute what the default computes within the same
//! tests, so the test binaries run with the knob on as they do with it off.

use nxvk_core::{Device, DeviceKind};
use std::collections::BTreeSet;
use std::sync::Mutex;

/// A kernel variant and its knob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KernelKnob {
    /// `NXVK_KNOB_FFT_ROW_PASS`: c64 rows of 2^12 to 2^14 in one dispatch, the whole row in
    /// one workgroup's registers (`fft_row.rs`), instead of the four-step pair of passes. On
    /// for GPUs, off for CPU drivers.
    FftRowPass,
    /// `NXVK_KNOB_SORT_ONESWEEP`: radix passes that rank, look back and scatter in one
    /// dispatch each after one histogram of every pass's digits (`sort_radix.rs`), instead of
    /// count, scan and scatter per pass. Off: it lost its race.
    SortOnesweep,
    /// `NXVK_KNOB_COOPMAT_STAGED`: the f16 cooperative-matrix GEMM stages 128x128x32 tiles in
    /// shared memory (`dot_cooperative.rs`) instead of loading fragments from the operands.
    /// On: it won its race (only devices with f16 cooperative matrices run either kernel).
    CoopmatStaged,
    /// `NXVK_KNOB_F32_MATH_VIA_F64`: f32 log, tanh, sigmoid, erf and the other refined helpers
    /// (codegen.rs, `F64_REFINED_HELPERS`) compute in f64 and round once (1 ulp), instead of
    /// in f32 alone (3 to 7 ulps). Off, opt-in: it lost its race on the H200 (devices without
    /// shaderFloat64 take the f32 forms whatever it says).
    F32MathViaF64,
}

impl KernelKnob {
    /// The knob's name in `NXVK_KNOB_<NAME>`, lowercase.
    fn name(self) -> &'static str {
        match self {
            KernelKnob::FftRowPass => "fft_row_pass",
            KernelKnob::SortOnesweep => "sort_onesweep",
            KernelKnob::CoopmatStaged => "coopmat_staged",
            KernelKnob::F32MathViaF64 => "f32_math_via_f64",
        }
    }

    /// Whether the variant runs on a device of `kind` when the environment does not say: the
    /// races' verdicts (docs/BENCHMARKS.md, fifth session).
    fn default_on(self, kind: DeviceKind) -> bool {
        match self {
            // fft_c64_1Kx16K: the H200 took 0.150 ms against the four-step pair's 0.204;
            // lavapipe, a CPU driver, a median of 1.83 s against 1.68.
            KernelKnob::FftRowPass => kind != DeviceKind::Cpu,
            // sort_f32_16M on the H200: 2.76 ms against 1.81 (fifth session); 2.33 against
            // 1.356, sort_f64_16M 11.07 against 2.43, with keys-alone items (fifteenth).
            KernelKnob::SortOnesweep => false,
            // hgemm_8192 on the H200: 36.5 TFLOP/s against 33.1 (sixth session).
            KernelKnob::CoopmatStaged => true,
            // On the H200 (seventh session): chain_f32_256M 1.145-1.164 ms against 0.750,
            // log_softmax_f32_8Kx8K 0.355-0.359 against 0.313.
            KernelKnob::F32MathViaF64 => false,
        }
    }

    /// Whether the variant is on for `device`: `on` or `off` from the environment, else the
    /// default (a malformed value is reported once per process and ignored).
    pub(crate) fn is_on(self, device: &Device) -> bool {
        self.is_on_for(
            device.knobs().variant(self.name()),
            device.capabilities().device_kind,
        )
    }

    /// [`KernelKnob::is_on`] for the knob's value (`None`: not set) on a device of `kind`.
    fn is_on_for(self, value: Option<&str>, kind: DeviceKind) -> bool {
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
                self.default_on(kind)
            }
            None => self.default_on(kind),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `on` and `off` choose on any device; anything else, or nothing, keeps the default.
    #[test]
    fn values_choose_the_variant() {
        for knob in [
            KernelKnob::FftRowPass,
            KernelKnob::SortOnesweep,
            KernelKnob::CoopmatStaged,
            KernelKnob::F32MathViaF64,
        ] {
            for kind in [DeviceKind::Discrete, DeviceKind::Cpu] {
                assert!(knob.is_on_for(Some("on"), kind));
                assert!(!knob.is_on_for(Some("off"), kind));
                assert_eq!(knob.is_on_for(Some("yes"), kind), knob.default_on(kind));
                assert_eq!(knob.is_on_for(None, kind), knob.default_on(kind));
            }
        }
    }

    /// The row FFT is on for GPUs of every kind and off for CPU drivers; onesweep is off; the
    /// staged cooperative-matrix GEMM is on; f32 math through f64 is off.
    #[test]
    fn defaults_follow_the_races() {
        for kind in [
            DeviceKind::Discrete,
            DeviceKind::Integrated,
            DeviceKind::Virtual,
        ] {
            assert!(KernelKnob::FftRowPass.is_on_for(None, kind));
        }
        assert!(!KernelKnob::FftRowPass.is_on_for(None, DeviceKind::Cpu));
        assert!(!KernelKnob::SortOnesweep.is_on_for(None, DeviceKind::Discrete));
        assert!(KernelKnob::CoopmatStaged.is_on_for(None, DeviceKind::Discrete));
        assert!(!KernelKnob::F32MathViaF64.is_on_for(None, DeviceKind::Discrete));
    }
}
