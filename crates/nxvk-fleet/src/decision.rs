//! Statistics of race arms and the decision rule of DESIGN.md decision 9.
//!
//! A **win** of arm B over arm A on one (host, workload) needs both:
//! - a margin: B's median better than A's by more than [`MIN_MARGIN`] (2 %), and
//! - separation: B's whole range (min..max) on the better side of A's whole range.
//!
//! With 5 replicates per arm, separated ranges happen by chance with probability
//! 2/252 (under 1 %) when the arms are the same, so a null arm is not declared a win.
//! Rejected alternative: comparing medians only, which declares noise a win about half the time.
//!
//! The knob decision over hosts: B wins on every host -> **on**; B wins on every host of
//! some classes and on no host of the others -> **gated** by a measured device property that
//! separates those classes; otherwise -> **off, opt-in**. (Benchmark-only wins need
//! application measurements this tool does not take; see FLEET.md.)

use serde::{Deserialize, Serialize};

/// Smallest relative improvement of the medians that can count as a win.
pub const MIN_MARGIN: f64 = 0.02;

/// Which direction of a benchmark value is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Throughput-like values.
    Higher,
    /// Time-like values.
    Lower,
}

/// Summary statistics of one arm's samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ArmStats {
    /// Number of samples.
    pub count: usize,
    /// Median.
    pub median: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// First quartile (linear interpolation).
    pub q1: f64,
    /// Third quartile (linear interpolation).
    pub q3: f64,
}

/// Quantile `fraction` of sorted samples, interpolating linearly between neighbours.
fn quantile(sorted: &[f64], fraction: f64) -> f64 {
    let position = fraction * (sorted.len() - 1) as f64;
    let lower = position.floor() as usize;
    let upper = position.ceil() as usize;
    sorted[lower] + (sorted[upper] - sorted[lower]) * (position - lower as f64)
}

/// Statistics of `samples`, or `None` when there are none (NaNs are dropped).
pub fn arm_stats(samples: &[f64]) -> Option<ArmStats> {
    let mut sorted: Vec<f64> = samples
        .iter()
        .copied()
        .filter(|value| !value.is_nan())
        .collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    Some(ArmStats {
        count: sorted.len(),
        median: quantile(&sorted, 0.5),
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        q1: quantile(&sorted, 0.25),
        q3: quantile(&sorted, 0.75),
    })
}

/// The verdict on one (host, workload).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// B is better beyond margin and spread.
    BWins,
    /// A is better beyond margin and spread.
    AWins,
    /// Neither: within noise or margin.
    NoDifference,
}

/// The comparison of two arms on one (host, workload).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Arm A statistics.
    pub arm_a: ArmStats,
    /// Arm B statistics.
    pub arm_b: ArmStats,
    /// Median of B over median of A.
    pub ratio_b_over_a: f64,
    /// Relative improvement of B's median over A's (positive = B better).
    pub improvement: f64,
    /// The verdict.
    pub outcome: Outcome,
}

/// Compares arm B against arm A.
pub fn compare(arm_a: ArmStats, arm_b: ArmStats, better: Better) -> Comparison {
    let signed = |value: f64| {
        if better == Better::Lower {
            -value
        } else {
            value
        }
    };
    let improvement = signed(arm_b.median - arm_a.median) / arm_a.median.abs();
    // In "higher is better" terms: B's worst beats A's best, or the other way round.
    let (a_low, a_high) = if better == Better::Lower {
        (-arm_a.max, -arm_a.min)
    } else {
        (arm_a.min, arm_a.max)
    };
    let (b_low, b_high) = if better == Better::Lower {
        (-arm_b.max, -arm_b.min)
    } else {
        (arm_b.min, arm_b.max)
    };
    let outcome = if improvement > MIN_MARGIN && b_low > a_high {
        Outcome::BWins
    } else if improvement < -MIN_MARGIN && a_low > b_high {
        Outcome::AWins
    } else {
        Outcome::NoDifference
    };
    Comparison {
        arm_a,
        arm_b,
        ratio_b_over_a: arm_b.median / arm_a.median,
        improvement,
        outcome,
    }
}

/// One host's comparisons, per workload.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostEvidence {
    /// Host name.
    pub host: String,
    /// The host's `class` tag.
    pub class: String,
    /// `(workload, comparison)` pairs.
    pub comparisons: Vec<(String, Comparison)>,
}

impl HostEvidence {
    /// B wins on this host: it wins at least one workload and loses none.
    pub fn b_wins(&self) -> bool {
        let any_win = self
            .comparisons
            .iter()
            .any(|(_, comparison)| comparison.outcome == Outcome::BWins);
        let any_loss = self
            .comparisons
            .iter()
            .any(|(_, comparison)| comparison.outcome == Outcome::AWins);
        any_win && !any_loss
    }
}

/// What the race says to ship.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "kebab-case")]
pub enum Decision {
    /// B wins everywhere: make B the default.
    On,
    /// B wins on these classes only: gate it by a measured device property separating them.
    Gated {
        /// Classes where B won on every host.
        classes: Vec<String>,
    },
    /// B never wins (or wins inconsistently): keep A, offer B as opt-in.
    OffOptIn {
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for Decision {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decision::On => write!(
                formatter,
                "on: arm B wins on every host; make it the default"
            ),
            Decision::Gated { classes } => write!(
                formatter,
                "gated: arm B wins only on class(es) {}; gate it by a measured device property, not a device name",
                classes.join(", ")
            ),
            Decision::OffOptIn { reason } => write!(formatter, "off, opt-in: {reason}"),
        }
    }
}

/// Applies the decision rule to the evidence of all hosts that completed the race.
pub fn decide(evidence: &[HostEvidence]) -> Decision {
    if evidence.is_empty() {
        return Decision::OffOptIn {
            reason: "no host completed the race".to_owned(),
        };
    }
    if evidence.iter().all(HostEvidence::b_wins) {
        return Decision::On;
    }
    let mut classes: Vec<&str> = evidence.iter().map(|host| host.class.as_str()).collect();
    classes.sort_unstable();
    classes.dedup();
    let mut winning = Vec::new();
    let mut mixed = Vec::new();
    for class in classes {
        let hosts: Vec<&HostEvidence> =
            evidence.iter().filter(|host| host.class == class).collect();
        let wins = hosts.iter().filter(|host| host.b_wins()).count();
        if wins == hosts.len() {
            winning.push(class.to_owned());
        } else if wins > 0 {
            mixed.push(class.to_owned());
        }
    }
    match (winning.is_empty(), mixed.is_empty()) {
        (true, true) => Decision::OffOptIn {
            reason: "arm B never wins beyond margin and spread".to_owned(),
        },
        (false, true) => Decision::Gated { classes: winning },
        (_, false) => Decision::OffOptIn {
            reason: format!(
                "arm B wins on some hosts of class(es) {} but not others",
                mixed.join(", ")
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(samples: &[f64]) -> ArmStats {
        arm_stats(samples).unwrap()
    }

    fn host(name: &str, class: &str, arm_a: &[f64], arm_b: &[f64]) -> HostEvidence {
        HostEvidence {
            host: name.to_owned(),
            class: class.to_owned(),
            comparisons: vec![(
                "w".to_owned(),
                compare(stats(arm_a), stats(arm_b), Better::Lower),
            )],
        }
    }

    const SLOW: [f64; 5] = [100.0, 101.0, 99.0, 102.0, 100.5];
    const FAST: [f64; 5] = [90.0, 91.0, 89.5, 90.5, 92.0];

    #[test]
    fn median_quartiles_and_range() {
        let stats = stats(&[5.0, 1.0, 3.0, 2.0, 4.0]);
        assert_eq!(
            (stats.median, stats.min, stats.max, stats.q1, stats.q3),
            (3.0, 1.0, 5.0, 2.0, 4.0)
        );
        assert_eq!(arm_stats(&[1.0, 2.0, 3.0, 4.0]).unwrap().median, 2.5);
        assert!(arm_stats(&[]).is_none());
        assert!(arm_stats(&[f64::NAN]).is_none());
    }

    #[test]
    fn clear_win_loss_and_direction() {
        assert_eq!(
            compare(stats(&SLOW), stats(&FAST), Better::Lower).outcome,
            Outcome::BWins
        );
        assert_eq!(
            compare(stats(&FAST), stats(&SLOW), Better::Lower).outcome,
            Outcome::AWins
        );
        // For throughput, the larger numbers win.
        assert_eq!(
            compare(stats(&FAST), stats(&SLOW), Better::Higher).outcome,
            Outcome::BWins
        );
        let comparison = compare(stats(&SLOW), stats(&FAST), Better::Lower);
        assert!((comparison.ratio_b_over_a - 0.905).abs() < 0.01);
    }

    #[test]
    fn null_arm_is_not_a_win() {
        // The same distribution in both arms, interleaved: medians differ by noise only.
        let arm_a = [100.0, 97.0, 103.0, 99.0, 101.5];
        let arm_b = [98.0, 102.0, 100.5, 96.5, 103.5];
        let comparison = compare(stats(&arm_a), stats(&arm_b), Better::Lower);
        assert_eq!(comparison.outcome, Outcome::NoDifference);
        assert_eq!(
            decide(&[host("h", "c", &arm_a, &arm_b)]),
            Decision::OffOptIn {
                reason: "arm B never wins beyond margin and spread".to_owned()
            }
        );
    }

    #[test]
    fn separated_but_below_margin_is_not_a_win() {
        let arm_a = [100.0, 100.1, 100.2, 100.1, 100.0];
        let arm_b = [99.0, 99.1, 99.2, 99.1, 99.0];
        assert_eq!(
            compare(stats(&arm_a), stats(&arm_b), Better::Lower).outcome,
            Outcome::NoDifference
        );
    }

    #[test]
    fn big_median_gap_with_overlapping_spread_is_not_a_win() {
        let arm_a = [100.0, 100.0, 100.0, 100.0, 80.0];
        let arm_b = [90.0, 90.0, 90.0, 90.0, 120.0];
        assert_eq!(
            compare(stats(&arm_a), stats(&arm_b), Better::Lower).outcome,
            Outcome::NoDifference
        );
    }

    #[test]
    fn decision_rule_over_classes() {
        let everywhere = [
            host("a", "nvidia", &SLOW, &FAST),
            host("b", "lavapipe", &SLOW, &FAST),
        ];
        assert_eq!(decide(&everywhere), Decision::On);

        let one_class = [
            host("a", "nvidia", &SLOW, &FAST),
            host("a2", "nvidia", &SLOW, &FAST),
            host("b", "lavapipe", &SLOW, &SLOW),
        ];
        assert_eq!(
            decide(&one_class),
            Decision::Gated {
                classes: vec!["nvidia".to_owned()]
            }
        );

        let mixed = [
            host("a", "nvidia", &SLOW, &FAST),
            host("a2", "nvidia", &SLOW, &SLOW),
        ];
        assert!(matches!(decide(&mixed), Decision::OffOptIn { .. }));

        let never = [host("a", "nvidia", &FAST, &SLOW)];
        assert!(matches!(decide(&never), Decision::OffOptIn { .. }));
        assert!(matches!(decide(&[]), Decision::OffOptIn { .. }));
    }

    #[test]
    fn a_loss_on_another_workload_cancels_a_win() {
        let mut evidence = host("a", "c", &SLOW, &FAST);
        evidence.comparisons.push((
            "w2".to_owned(),
            compare(stats(&FAST), stats(&SLOW), Better::Lower),
        ));
        assert!(!evidence.b_wins());
    }
}
