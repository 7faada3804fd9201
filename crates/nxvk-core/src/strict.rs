//! Strict mode: what happens when an op has no GPU path and would run on the host.
//!
//! A host fallback is always counted, by (op, dtype). `Allow` runs it silently (still
//! counted), `Warn` also prints one line per (op, dtype) the first time, `Raise` refuses it
//! with an error naming the op, dtype and shapes. The process-wide default comes from
//! `NXVK_STRICT=allow|warn|raise` (allow when unset); [`set_strict`] overrides it.

use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strict {
    Allow,
    Warn,
    Raise,
}

const UNSET: u8 = u8::MAX;
static OVERRIDE: AtomicU8 = AtomicU8::new(UNSET);

impl Strict {
    fn from_env() -> Strict {
        match std::env::var("NXVK_STRICT").as_deref().map(str::trim) {
            Ok("raise") => Strict::Raise,
            Ok("warn") => Strict::Warn,
            _ => Strict::Allow,
        }
    }

    fn code(self) -> u8 {
        self as u8
    }
}

/// The strict mode in force for this process.
pub fn strict() -> Strict {
    match OVERRIDE.load(Ordering::Relaxed) {
        0 => Strict::Allow,
        1 => Strict::Warn,
        2 => Strict::Raise,
        _ => Strict::from_env(),
    }
}

/// Overrides `NXVK_STRICT` for the whole process (`None` returns to the environment's value).
pub fn set_strict(mode: Option<Strict>) {
    OVERRIDE.store(mode.map_or(UNSET, Strict::code), Ordering::Relaxed);
}
