//! `nxvk-fleet race NAME`: interleaved A/B replicates of a performance knob on every host.
//!
//! Policy: a knob is set per process through `NXVK_KNOB_<NAME>` (never by editing code or
//! config on the host); arms run in ABBA order so that drift (thermal, caches, other load)
//! hits both arms alike; the host's load is checked before the first run; the decision
//! rule lives in [`crate::decision`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde::{Deserialize, Serialize};

use crate::chart::{RatioBar, ratio_chart_svg};
use crate::config::{FleetConfig, HostConfig, LoadPolicy};
use crate::decision::{Better, Comparison, Decision, HostEvidence, arm_stats, compare, decide};
use crate::error::FleetError;
use crate::progress::{FleetProgress, HostProgress};
use crate::report::{HostStatus, write_json};
use crate::ship::CommitBundle;
use crate::transport::{CommandSpec, SshOptions, Transport, connect};

/// A named performance switch and the two values a race compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knob {
    /// Name used on the command line and in `NXVK_KNOB_<NAME>`.
    pub name: &'static str,
    /// The baseline value.
    pub arm_a: &'static str,
    /// The challenger value.
    pub arm_b: &'static str,
    /// Benchmark workloads (names of `cargo xtask bench`) the knob affects.
    pub workloads: &'static [&'static str],
    /// What the knob does.
    pub about: &'static str,
}

/// The knob table: every performance switch that ships must be raced from here.
pub const KNOBS: &[Knob] = &[
    Knob {
        name: "submit_threshold",
        arm_a: "default",
        arm_b: "256",
        workloads: &["small_op_chain_us"],
        about: "dispatches recorded before a command buffer is submitted",
    },
    Knob {
        name: "cse",
        arm_a: "off",
        arm_b: "on",
        workloads: &["chain_f32_256M", "softmax_f32_8Kx8K"],
        about: "common-subexpression elimination across fusion stages",
    },
    Knob {
        name: "packets",
        arm_a: "on",
        arm_b: "off",
        workloads: &["chain_f32_256M", "softmax_f32_8Kx8K"],
        about: "fused kernels read and write four-element packets where the leaves allow it",
    },
    Knob {
        name: "row_fold",
        arm_a: "subgroup",
        arm_b: "shared",
        workloads: &["softmax_f32_8Kx8K"],
        about: "fused row reductions fold by subgroup shuffles or by a shared-memory tree",
    },
    Knob {
        name: "row_program",
        arm_a: "on",
        arm_b: "off",
        workloads: &[
            "softmax_f32_8Kx8K",
            "log_softmax_f32_8Kx8K",
            "layer_norm_f32_8Kx8K",
        ],
        about: "row reductions and the elementwise outputs that read them in one kernel per row",
    },
    Knob {
        name: "fft_row_pass",
        arm_a: "off",
        arm_b: "on",
        workloads: &["fft_c64_1Kx16K"],
        about: "c64 rows of 2^12 to 2^14 in one workgroup pass instead of the four-step pair",
    },
    Knob {
        name: "sort_onesweep",
        arm_a: "off",
        arm_b: "on",
        workloads: &["sort_f32_16M", "sort_f32_4Kx4K"],
        about: "radix passes that rank, look back and scatter in one dispatch each",
    },
    Knob {
        name: "coopmat_staged",
        arm_a: "on",
        arm_b: "off",
        workloads: &["hgemm_8192"],
        about: "the f16 cooperative-matrix GEMM staging its tiles in shared memory",
    },
    Knob {
        name: "coopmat2_tile",
        arm_a: "off",
        arm_b: "on",
        workloads: &["hgemm_8104", "bf16gemm_8104"],
        about: "f16/bf16 GEMMs off the cooperative kernel's tile on VK_NV_cooperative_matrix2's workgroup-scope matrices instead of the tiled template",
    },
    Knob {
        name: "f32_math_via_f64",
        arm_a: "off",
        arm_b: "on",
        workloads: &["chain_f32_256M", "small_op_chain_us"],
        about: "f32 log, tanh, sigmoid, erf, ... computed in f64 and rounded once",
    },
    Knob {
        name: "gemm_epilogue",
        arm_a: "off",
        arm_b: "on",
        workloads: &["gemm_bias_relu_f32_4096", "mlp_step_f32_b256"],
        about: "a dot's or conv's elementwise consumer applied in the GEMM's store",
    },
    Knob {
        name: "shared_divisor",
        arm_a: "on",
        arm_b: "off",
        workloads: &["softmax_f32_8Kx8K", "layer_norm_f32_8Kx8K"],
        about: "row programs divide by a row-shared divisor through its f64 reciprocal",
    },
    Knob {
        name: "plan_replay",
        arm_a: "off",
        arm_b: "on",
        workloads: &[
            "small_mlp_us@plan",
            "small_op_chain_us@plan",
            "mlp_step_f32_b256",
        ],
        about: "a cached plan's first run recorded once and submitted again from its third run",
    },
];

/// Looks a knob up by name.
pub fn find_knob(name: &str) -> Result<&'static Knob, FleetError> {
    KNOBS
        .iter()
        .find(|knob| knob.name == name)
        .ok_or_else(|| FleetError::UnknownKnob {
            name: name.to_owned(),
            known: KNOBS
                .iter()
                .map(|knob| knob.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The environment variable carrying a knob: `NXVK_KNOB_<UPPERCASE_NAME>`.
pub fn knob_env_name(name: &str) -> String {
    format!("NXVK_KNOB_{}", name.to_uppercase())
}

/// One arm of a race.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Arm {
    /// The baseline.
    A,
    /// The challenger.
    B,
}

/// The run order: ABBA repeated, i.e. replicate `r` runs A then B when `r` is even, B then A otherwise.
pub fn arm_order(replicates: usize) -> Vec<Arm> {
    (0..replicates)
        .flat_map(|replicate| {
            if replicate % 2 == 0 {
                [Arm::A, Arm::B]
            } else {
                [Arm::B, Arm::A]
            }
        })
        .collect()
}

/// One line of benchmark output (`peers/README.md` format).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchLine {
    /// Workload name.
    pub name: String,
    /// Measured value.
    pub value: f64,
    /// Unit of `value`.
    pub unit: String,
    /// Which direction is better.
    pub better: Better,
    /// Implementation that produced it (`nxvk`, `torch`, ...).
    #[serde(rename = "impl", default)]
    pub implementation: String,
}

/// The benchmark lines in `stdout`; other lines are ignored.
pub fn parse_bench_lines(stdout: &str) -> Vec<BenchLine> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line.trim()).ok())
        .collect()
}

/// The 1-minute load from `/proc/loadavg` (`0.42 0.30 ...`) or `uptime` (`load average(s): 0.42, ...`).
pub fn parse_load(text: &str) -> Option<f64> {
    let rest = match text.find("load average") {
        Some(position) => text[position..].split_once(':')?.1,
        None => text,
    };
    rest.split_whitespace()
        .next()?
        .trim_end_matches(',')
        .parse()
        .ok()
}

/// Samples of one workload on one host.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WorkloadSamples {
    /// Unit of the values.
    pub unit: String,
    /// Direction, from the benchmark's lines (`None` until a line arrives).
    pub better: Option<Better>,
    /// Arm A values in run order.
    pub arm_a: Vec<f64>,
    /// Arm B values in run order.
    pub arm_b: Vec<f64>,
}

/// One host's part of a race.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostRace {
    /// Host name.
    pub host: String,
    /// The host's class tag.
    pub class: String,
    /// `passed` when all replicates ran.
    pub status: HostStatus,
    /// Load per core measured before the race.
    pub load_per_core: Option<f64>,
    /// Samples by workload.
    pub samples: BTreeMap<String, WorkloadSamples>,
    /// What went wrong, if anything.
    pub errors: Vec<String>,
}

/// The race's result file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RaceReport {
    /// Knob name.
    pub knob: String,
    /// Arm A value.
    pub arm_a: String,
    /// Arm B value.
    pub arm_b: String,
    /// The commit raced.
    pub commit: String,
    /// Replicates per arm per host.
    pub replicates: usize,
    /// Every host, including the unreachable.
    pub hosts: Vec<HostRace>,
    /// The comparisons of the hosts that completed.
    pub evidence: Vec<HostEvidence>,
    /// The decision.
    pub decision: Decision,
}

/// Settings of one race.
#[derive(Debug, Clone)]
pub struct RaceOptions {
    /// Replicates per arm per host.
    pub replicates: usize,
    /// Highest load per core at which a host may race.
    pub max_load_per_core: f64,
    /// Refuse or warn above the limit.
    pub load_policy: LoadPolicy,
    /// Results root.
    pub results: PathBuf,
    /// SSH choices from the command line.
    pub ssh: SshOptions,
}

/// Runs the race for `knob` on `hosts` and writes `race-<knob>.json` and `.svg`.
pub fn run_race(
    config: &FleetConfig,
    hosts: &[HostConfig],
    knob: &Knob,
    bundle: &CommitBundle,
    options: &RaceOptions,
) -> Result<(RaceReport, PathBuf), FleetError> {
    let progress = FleetProgress::from_environment();
    let host_races: Vec<HostRace> = std::thread::scope(|scope| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|host| {
                let host_progress = progress.host(&host.name);
                scope.spawn(move || race_host(config, host, knob, bundle, options, &host_progress))
            })
            .collect();
        handles
            .into_iter()
            .zip(hosts)
            .map(|(handle, host)| {
                handle.join().unwrap_or_else(|_| HostRace {
                    host: host.name.clone(),
                    class: host.class().to_owned(),
                    status: HostStatus::Error,
                    load_per_core: None,
                    samples: BTreeMap::new(),
                    errors: vec!["the host's worker thread panicked".to_owned()],
                })
            })
            .collect()
    });
    let evidence: Vec<HostEvidence> = host_races
        .iter()
        .filter(|race| race.status == HostStatus::Passed)
        .map(host_evidence)
        .collect();
    let report = RaceReport {
        knob: knob.name.to_owned(),
        arm_a: knob.arm_a.to_owned(),
        arm_b: knob.arm_b.to_owned(),
        commit: bundle.commit.clone(),
        replicates: options.replicates,
        hosts: host_races,
        decision: decide(&evidence),
        evidence,
    };
    let folder = options.results.join(&bundle.commit);
    let json_path = folder.join(format!("race-{}.json", knob.name));
    write_json(&json_path, &report)?;
    let svg_path = folder.join(format!("race-{}.svg", knob.name));
    let title = format!(
        "{}: B ({}) / A ({}) median ratio",
        knob.name, knob.arm_b, knob.arm_a
    );
    std::fs::write(
        &svg_path,
        ratio_chart_svg(&title, &chart_bars(&report.evidence)),
    )
    .map_err(|source| FleetError::WriteResult {
        path: svg_path.clone(),
        source,
    })?;
    Ok((report, json_path))
}

fn host_evidence(race: &HostRace) -> HostEvidence {
    let comparisons = race
        .samples
        .iter()
        .filter_map(|(workload, samples)| {
            let comparison: Comparison = compare(
                arm_stats(&samples.arm_a)?,
                arm_stats(&samples.arm_b)?,
                samples.better.unwrap_or(Better::Lower),
            );
            Some((workload.clone(), comparison))
        })
        .collect();
    HostEvidence {
        host: race.host.clone(),
        class: race.class.clone(),
        comparisons,
    }
}

/// One bar per (host, workload).
pub fn chart_bars(evidence: &[HostEvidence]) -> Vec<RatioBar> {
    evidence
        .iter()
        .flat_map(|host| {
            host.comparisons
                .iter()
                .map(|(workload, comparison)| RatioBar {
                    label: format!("{} / {workload}", host.host),
                    ratio: comparison.ratio_b_over_a,
                    outcome: comparison.outcome,
                })
        })
        .collect()
}

fn race_host(
    config: &FleetConfig,
    host: &HostConfig,
    knob: &Knob,
    bundle: &CommitBundle,
    options: &RaceOptions,
    progress: &HostProgress,
) -> HostRace {
    let mut race = HostRace {
        host: host.name.clone(),
        class: host.class().to_owned(),
        status: HostStatus::Passed,
        load_per_core: None,
        samples: BTreeMap::new(),
        errors: Vec::new(),
    };
    progress.step("connecting");
    let result = connect(host, &options.ssh).and_then(|mut transport| {
        progress.step("shipping the commit");
        bundle.ship(transport.as_mut(), &host.checkout, host.command_timeout())?;
        progress.step("checking load");
        race.load_per_core = check_load(transport.as_mut(), host, options)?;
        run_replicates(
            transport.as_mut(),
            config,
            host,
            knob,
            options,
            progress,
            &mut race.samples,
        )
    });
    if let Err(error) = result {
        race.status = if error.is_unreachable() {
            HostStatus::Unreachable
        } else {
            HostStatus::Error
        };
        race.errors.push(error.to_string());
    }
    progress.finish(&format!("{:?}", race.status));
    race
}

/// Reads load and core count; refuses or warns above the limit per the load policy.
fn check_load(
    transport: &mut dyn Transport,
    host: &HostConfig,
    options: &RaceOptions,
) -> Result<Option<f64>, FleetError> {
    let no_env = BTreeMap::new();
    let timeout = host
        .connect_timeout()
        .max(std::time::Duration::from_secs(10));
    let load_script = "cat /proc/loadavg 2>/dev/null || uptime";
    let cores_script =
        "getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null || sysctl -n hw.ncpu";
    let load = parse_load(
        &transport
            .run(&CommandSpec {
                script: load_script,
                cwd: None,
                env: &no_env,
                timeout,
            })?
            .stdout,
    );
    let cores: Option<f64> = transport
        .run(&CommandSpec {
            script: cores_script,
            cwd: None,
            env: &no_env,
            timeout,
        })?
        .stdout
        .trim()
        .parse()
        .ok();
    let (Some(load), Some(cores)) = (load, cores) else {
        eprintln!(
            "[{}] warning: could not read the load; racing anyway",
            host.name
        );
        return Ok(None);
    };
    let load_per_core = load / cores.max(1.0);
    if load_per_core > options.max_load_per_core {
        match options.load_policy {
            LoadPolicy::Refuse => {
                return Err(FleetError::Overloaded {
                    host: host.name.clone(),
                    load_per_core,
                    limit: options.max_load_per_core,
                });
            }
            LoadPolicy::Warn => eprintln!(
                "[{}] warning: load {load_per_core:.2} per core exceeds {:.2}; results may be noisy",
                host.name, options.max_load_per_core
            ),
        }
    }
    Ok(Some(load_per_core))
}

fn run_replicates(
    transport: &mut dyn Transport,
    config: &FleetConfig,
    host: &HostConfig,
    knob: &Knob,
    options: &RaceOptions,
    progress: &HostProgress,
    samples: &mut BTreeMap<String, WorkloadSamples>,
) -> Result<(), FleetError> {
    let template = host
        .bench_command
        .as_deref()
        .unwrap_or(&config.race.bench_command);
    let command = template.replace("{workloads}", &knob.workloads.join(","));
    let order = arm_order(options.replicates);
    for (run_index, arm) in order.iter().enumerate() {
        progress.step(&format!(
            "run {}/{} arm {arm:?}",
            run_index + 1,
            order.len()
        ));
        let mut env = host.env.clone();
        let value = if *arm == Arm::A {
            knob.arm_a
        } else {
            knob.arm_b
        };
        env.insert(knob_env_name(knob.name), value.to_owned());
        let spec = CommandSpec {
            script: &command,
            cwd: Some(&host.checkout),
            env: &env,
            timeout: host.command_timeout(),
        };
        let output = transport.run(&spec)?;
        if !output.success() {
            return Err(FleetError::CommandFailed {
                host: host.name.clone(),
                command,
                exit_code: output.exit_code,
                stderr: crate::job::tail(&output.stderr, 20),
            });
        }
        let lines = parse_bench_lines(&output.stdout);
        let seen: BTreeSet<&str> = lines.iter().map(|line| line.name.as_str()).collect();
        if let Some(missing) = knob
            .workloads
            .iter()
            .find(|workload| !seen.contains(**workload))
        {
            return Err(FleetError::CommandFailed {
                host: host.name.clone(),
                command,
                exit_code: 0,
                stderr: format!("the benchmark printed no line for workload `{missing}`"),
            });
        }
        for line in lines
            .into_iter()
            .filter(|line| knob.workloads.contains(&line.name.as_str()))
        {
            let entry = samples.entry(line.name).or_default();
            entry.unit = line.unit;
            entry.better = Some(line.better);
            match arm {
                Arm::A => entry.arm_a.push(line.value),
                Arm::B => entry.arm_b.push(line.value),
            }
        }
    }
    Ok(())
}

/// The per-host, per-workload table printed after a race.
pub fn race_table(report: &RaceReport) -> Table {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    table.set_header([
        "host",
        "class",
        "workload",
        "A median [min..max]",
        "B median [min..max]",
        "B/A",
        "outcome",
    ]);
    for evidence in &report.evidence {
        for (workload, comparison) in &evidence.comparisons {
            let arm = |stats: &crate::decision::ArmStats| {
                format!("{:.4} [{:.4}..{:.4}]", stats.median, stats.min, stats.max)
            };
            table.add_row([
                evidence.host.clone(),
                evidence.class.clone(),
                workload.clone(),
                arm(&comparison.arm_a),
                arm(&comparison.arm_b),
                format!("{:.4}", comparison.ratio_b_over_a),
                format!("{:?}", comparison.outcome),
            ]);
        }
    }
    for race in report
        .hosts
        .iter()
        .filter(|race| race.status != HostStatus::Passed)
    {
        table.add_row([
            race.host.clone(),
            race.class.clone(),
            "-".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            "-".to_owned(),
            format!("{:?}: {}", race.status, race.errors.join("; ")),
        ]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knob_table_and_env_names() {
        assert_eq!(
            knob_env_name("submit_threshold"),
            "NXVK_KNOB_SUBMIT_THRESHOLD"
        );
        assert_eq!(
            find_knob("cse").unwrap().workloads,
            ["chain_f32_256M", "softmax_f32_8Kx8K"]
        );
        assert!(
            find_knob("nope")
                .unwrap_err()
                .to_string()
                .contains("submit_threshold")
        );
    }

    #[test]
    fn order_is_abba() {
        assert_eq!(
            arm_order(3),
            [Arm::A, Arm::B, Arm::B, Arm::A, Arm::A, Arm::B]
        );
        let order = arm_order(5);
        assert_eq!(order.iter().filter(|arm| **arm == Arm::A).count(), 5);
    }

    #[test]
    fn parses_bench_lines_and_load() {
        let stdout = "building...\n{\"name\":\"w\",\"value\":1.5,\"unit\":\"us\",\"better\":\"lower\",\"impl\":\"nxvk\"}\n";
        let lines = parse_bench_lines(stdout);
        assert_eq!(lines.len(), 1);
        assert_eq!((lines[0].value, lines[0].better), (1.5, Better::Lower));
        assert_eq!(parse_load("0.42 0.30 0.20 1/123 456\n"), Some(0.42));
        assert_eq!(
            parse_load(" 10:00  up 3 days, 2 users, load averages: 1.25 1.00 0.90"),
            Some(1.25)
        );
        assert_eq!(
            parse_load(" 10:00:00 up 1 day,  load average: 0.05, 0.10, 0.15"),
            Some(0.05)
        );
        assert_eq!(parse_load("garbage"), None);
    }
}
