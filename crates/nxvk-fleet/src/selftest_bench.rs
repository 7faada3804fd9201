//! The loopback self-test benchmark (`nxvk-fleet loopback-bench`): NOT a real benchmark.
//!
//! It exists so that the loopback CI fleet can exercise the whole race machinery (knob
//! environment, ABBA order, parsing, statistics, decision, chart) in milliseconds and
//! deterministically: each workload reports 100 us, or 90 us when any `NXVK_KNOB_*` variable
//! holds a value other than `default` or `off`. A race on it therefore always decides "on".

use serde_json::json;

/// Value printed when no knob is switched on.
const BASELINE_US: f64 = 100.0;
/// Value printed when a knob is switched on.
const SWITCHED_ON_US: f64 = 90.0;

/// The JSON lines for `workloads` given the process environment `variables`.
pub fn loopback_bench_lines(workloads: &[String], variables: &[(String, String)]) -> Vec<String> {
    let switched_on = variables.iter().any(|(name, value)| {
        name.starts_with("NXVK_KNOB_") && value != "default" && value != "off"
    });
    let value = if switched_on {
        SWITCHED_ON_US
    } else {
        BASELINE_US
    };
    workloads
        .iter()
        .map(|workload| {
            json!({"name": workload, "value": value, "unit": "us", "better": "lower", "impl": "loopback-selftest"})
                .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_follows_the_knob_environment() {
        let workloads = vec!["w".to_owned()];
        let off = loopback_bench_lines(
            &workloads,
            &[("NXVK_KNOB_CSE".to_owned(), "off".to_owned())],
        );
        let on = loopback_bench_lines(&workloads, &[("NXVK_KNOB_CSE".to_owned(), "on".to_owned())]);
        assert!(
            off[0].contains("100.0") && on[0].contains("90.0"),
            "{off:?} {on:?}"
        );
        assert!(on[0].contains("\"better\":\"lower\""));
    }
}
