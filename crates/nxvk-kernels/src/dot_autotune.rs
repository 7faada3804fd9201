//! The GEMM autotuner: which tile configuration `dot` uses, per device, dtype and size bucket.
//!
//! Policy: problems of at least [`AUTOTUNE_MIN_MULTIPLY_ADDS`] multiply-adds race every
//! candidate configuration the device can run ([`candidates`]) on the first call of their
//! [`TuneKey`], on the call's own operands (best of two GPU-timed runs each; the default
//! first, and alone when one of its runs exceeds [`RACE_RUN_BUDGET`]), and remember the
//! winner. Smaller problems, devices whose queue cannot write timestamps, and
//! `NXVK_AUTOTUNE=off` use [`default_config`] (smaller problems are launch-bound: a race would
//! cost more than it could win). Choices are kept in memory and persisted beside the driver's
//! pipeline cache (same device UUID and driver version in the name, so another device or
//! driver never reads them) as a small text file:
//!
//! ```text
//! nxvk-gemm-tune 3 checksum=<16 hex digits: FNV-1a 64 of the lines below>
//! f32 m=13 n=13 k=13 batched=0 conv=0 128x128x8/8x8
//! ```
//!
//! Keys are log2 buckets of M, N and K (rounded up) plus whether the problem is batched and
//! whether it is a convolution. A file
//! that is malformed or whose checksum disagrees is ignored with a warning and rewritten at the
//! next race. Plain text rather than JSON keeps the crate free of a serialisation dependency
//! for eight fields.

use crate::codegen::storage_bytes;
use crate::dot_codegen::{TileConfig, gemm_accumulator};
use crate::op_table::Elem;
use nxvk_core::{Capabilities, Device, Result};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// Problems below this many multiply-adds never race.
pub const AUTOTUNE_MIN_MULTIPLY_ADDS: u64 = 1 << 24;

/// A race is skipped (the default kept and remembered) when one run of the default takes
/// longer than this.
pub const RACE_RUN_BUDGET: Duration = Duration::from_millis(250);

/// The environment variable that turns racing off (`NXVK_AUTOTUNE=off`).
pub const AUTOTUNE_ENV: &str = "NXVK_AUTOTUNE";

/// The tuning file's first word and version. The version changes with the tiled template
/// (3: the written-out block of 8-byte accumulators, `dot_registers.rs`), so choices raced with another
/// template are raced again.
const HEADER: &str = "nxvk-gemm-tune 3";

/// What a tuning decision is remembered by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TuneKey {
    pub input: Elem,
    /// ceil(log2(M)), ceil(log2(N)), ceil(log2(K)).
    pub m_bucket: u32,
    pub n_bucket: u32,
    pub k_bucket: u32,
    pub batched: bool,
    /// The problem is a convolution (its B operand is gathered, which tunes differently).
    pub convolution: bool,
}

impl TuneKey {
    /// The key of a problem of `batches` products of M x K by K x N.
    pub fn of(input: Elem, batches: usize, m: usize, n: usize, k: usize) -> TuneKey {
        let bucket = |size: usize| size.max(1).next_power_of_two().trailing_zeros();
        TuneKey {
            input,
            m_bucket: bucket(m),
            n_bucket: bucket(n),
            k_bucket: bucket(k),
            batched: batches > 1,
            convolution: false,
        }
    }

    /// The same key, marked as a convolution's implicit GEMM or not.
    pub fn for_convolution(self, convolution: bool) -> TuneKey {
        TuneKey {
            convolution,
            ..self
        }
    }

    fn to_text(self) -> String {
        format!(
            "{} m={} n={} k={} batched={} conv={}",
            self.input.name(),
            self.m_bucket,
            self.n_bucket,
            self.k_bucket,
            u8::from(self.batched),
            u8::from(self.convolution)
        )
    }
}

/// Remembered choices, with their text form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TuneTable {
    pub choices: BTreeMap<TuneKey, TileConfig>,
}

fn fnv1a64(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

impl TuneTable {
    /// The file's text: header with checksum, one line per choice.
    pub fn to_text(&self) -> String {
        let body: String = self
            .choices
            .iter()
            .map(|(key, config)| format!("{} {}\n", key.to_text(), config.label()))
            .collect();
        format!("{HEADER} checksum={:016x}\n{body}", fnv1a64(&body))
    }

    /// Parses [`TuneTable::to_text`]'s format; the reason when the text is not a valid table.
    pub fn from_text(text: &str) -> std::result::Result<TuneTable, String> {
        let (header, body) = text.split_once('\n').ok_or("no header line")?;
        let checksum = header
            .strip_prefix(HEADER)
            .and_then(|rest| rest.trim().strip_prefix("checksum="))
            .ok_or("not an nxvk GEMM tuning file of this version")?;
        if checksum != format!("{:016x}", fnv1a64(body)) {
            return Err("checksum mismatch".into());
        }
        let mut choices = BTreeMap::new();
        for line in body.lines() {
            let (key, config) = parse_line(line).ok_or_else(|| format!("bad line {line:?}"))?;
            choices.insert(key, config);
        }
        Ok(TuneTable { choices })
    }
}

fn parse_line(line: &str) -> Option<(TuneKey, TileConfig)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [elem, m, n, k, batched, convolution, config] = fields[..] else {
        return None;
    };
    let number = |field: &str, name: &str| -> Option<u32> {
        field.strip_prefix(name)?.strip_prefix('=')?.parse().ok()
    };
    let key = TuneKey {
        input: Elem::ALL.iter().copied().find(|e| e.name() == elem)?,
        m_bucket: number(m, "m")?,
        n_bucket: number(n, "n")?,
        k_bucket: number(k, "k")?,
        batched: number(batched, "batched")? == 1,
        convolution: number(convolution, "conv")? == 1,
    };
    Some((key, TileConfig::parse(config)?))
}

/// Where the choices of `device` are kept: beside its pipeline cache file.
pub fn tune_file_path(device: &Device) -> PathBuf {
    device.pipeline_cache_path().with_extension("gemm-tune.txt")
}

/// Reads a tuning file; a missing file is an empty table, an invalid one is ignored (warned).
pub fn load_table(path: &Path) -> TuneTable {
    let Ok(text) = std::fs::read_to_string(path) else {
        return TuneTable::default();
    };
    TuneTable::from_text(&text).unwrap_or_else(|reason| {
        eprintln!(
            "nxvk: ignoring GEMM tuning file {}: {reason}",
            path.display()
        );
        TuneTable::default()
    })
}

/// Writes a tuning file atomically enough for a cache: a temporary file renamed over it.
pub fn save_table(path: &Path, table: &TuneTable) -> Result<()> {
    let io_error = |source| nxvk_core::Error::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(io_error)?;
    }
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, table.to_text()).map_err(io_error)?;
    std::fs::rename(&temporary, path).map_err(io_error)
}

/// False when `NXVK_AUTOTUNE=off` (or `0`, `false`).
pub fn autotune_enabled() -> bool {
    !matches!(
        std::env::var(AUTOTUNE_ENV).as_deref().map(str::trim),
        Ok("off" | "0" | "false")
    )
}

const fn tile(tile_m: u32, tile_n: u32, tile_k: u32, thread_m: u32, thread_n: u32) -> TileConfig {
    TileConfig {
        tile_m,
        tile_n,
        tile_k,
        thread_m,
        thread_n,
    }
}

/// Every configuration the tuner knows, smallest first.
const ALL_CONFIGS: [TileConfig; 6] = [
    tile(32, 32, 8, 2, 2),
    tile(64, 64, 8, 4, 4),
    tile(64, 128, 8, 4, 8),
    tile(128, 64, 8, 8, 4),
    tile(128, 128, 8, 8, 8),
    tile(128, 128, 16, 8, 8),
];

/// The configurations `capabilities` can run for `input` (workgroup size and shared memory).
pub fn candidates(input: Elem, capabilities: &Capabilities) -> Vec<TileConfig> {
    let accumulator_bytes = storage_bytes(gemm_accumulator(input));
    ALL_CONFIGS
        .into_iter()
        .filter(|config| {
            config.invocations() <= capabilities.max_workgroup_invocations
                && config.invocations() <= capabilities.max_workgroup_size[0]
                && config.shared_bytes(accumulator_bytes) <= capabilities.max_shared_memory_bytes
        })
        .collect()
}

/// The configuration used without a race: bigger tiles for bigger outputs, so that small
/// outputs still spread over many workgroups. (8-byte accumulators were held to 4x4 blocks
/// while looped blocks of 32 or more doubles spilled, 1.0-1.1 TFLOP/s for dgemm 4096 on the
/// H200; written out (`dot_registers.rs`) the 128x128/8x8 tile runs 17.5 against the 4x4
/// block's 14.9.)
pub fn default_config(batches: usize, m: usize, n: usize) -> TileConfig {
    let outputs = batches.saturating_mul(m).saturating_mul(n);
    if outputs >= 1 << 20 {
        ALL_CONFIGS[4]
    } else if outputs >= 1 << 16 {
        ALL_CONFIGS[1]
    } else {
        ALL_CONFIGS[0]
    }
}

type Tables = Mutex<HashMap<PathBuf, TuneTable>>;

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The configuration for a problem: remembered, raced now, or the default. `time` runs the
/// problem once with a configuration and returns its GPU time.
pub(crate) fn choose(
    device: &Device,
    key: TuneKey,
    multiply_adds: u64,
    default: TileConfig,
    mut time: impl FnMut(TileConfig) -> Result<Duration>,
) -> TileConfig {
    let usable = candidates(key.input, device.capabilities());
    let raceable = autotune_enabled()
        && multiply_adds >= AUTOTUNE_MIN_MULTIPLY_ADDS
        && device.capabilities().timestamp_period_ns.is_some()
        && usable.len() > 1;
    if !raceable {
        return default;
    }
    let path = tune_file_path(device);
    {
        let mut tables = tables().lock().unwrap_or_else(|poison| poison.into_inner());
        let table = tables
            .entry(path.clone())
            .or_insert_with(|| load_table(&path));
        if let Some(&config) = table.choices.get(&key).filter(|c| usable.contains(c)) {
            return config;
        }
    }
    // The default runs first: when one run already exceeds the budget (a slow device, a huge
    // problem), racing every candidate would cost many times that, and a slow candidate
    // could even run into the device timeout; the default is remembered instead.
    let first = time(default).ok();
    let over_budget = first.is_none_or(|first| first > RACE_RUN_BUDGET);
    let mut best: Option<(Duration, TileConfig)> = first.map(|first| {
        // Best of two, as for the challengers, unless the race is off.
        let second = (!over_budget).then(|| time(default).ok()).flatten();
        (second.map_or(first, |second| second.min(first)), default)
    });
    let challengers = usable.into_iter().filter(|&config| config != default);
    for config in challengers.take_while(|_| !over_budget) {
        // A candidate that fails (say a driver that cannot build it) just drops out.
        let timed = (0..2)
            .map(|_| time(config))
            .collect::<Result<Vec<Duration>>>();
        if let Some(fastest) = timed.ok().and_then(|times| times.into_iter().min())
            && best.is_none_or(|(best_time, _)| fastest < best_time)
        {
            best = Some((fastest, config));
        }
    }
    let Some((_, winner)) = best else {
        return default;
    };
    let mut tables = tables().lock().unwrap_or_else(|poison| poison.into_inner());
    let table = tables.entry(path.clone()).or_default();
    table.choices.insert(key, winner);
    // Other processes on the same device may have saved choices since this one loaded the
    // file: keep theirs too, so concurrent processes do not erase each other's races.
    for (other_key, other_choice) in load_table(&path).choices {
        table.choices.entry(other_key).or_insert(other_choice);
    }
    if let Err(error) = save_table(&path, table) {
        eprintln!("nxvk: could not save GEMM tuning file: {error}");
    }
    winner
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_round_trip_and_reject_tampering() {
        let mut table = TuneTable::default();
        table
            .choices
            .insert(TuneKey::of(Elem::F32, 1, 8192, 8192, 8192), ALL_CONFIGS[4]);
        table
            .choices
            .insert(TuneKey::of(Elem::BF16, 4, 100, 3, 70_000), ALL_CONFIGS[0]);
        let text = table.to_text();
        assert_eq!(TuneTable::from_text(&text), Ok(table));
        let tampered = text.replace("128x128x8/8x8", "64x64x8/4x4");
        assert_eq!(
            TuneTable::from_text(&tampered),
            Err("checksum mismatch".into())
        );
        assert!(TuneTable::from_text("garbage").is_err());
    }

    #[test]
    fn configs_parse_and_are_well_formed() {
        for config in ALL_CONFIGS {
            assert!(config.is_well_formed(), "{config:?}");
            assert_eq!(TileConfig::parse(&config.label()), Some(config));
        }
        assert_eq!(TileConfig::parse("128x128x8/3x8"), None);
        assert_eq!(TileConfig::parse("128x128/8x8"), None);
        assert_eq!(TuneKey::of(Elem::F32, 1, 1000, 1, 0).m_bucket, 10);
    }
}
