//! Progress display: one indicatif spinner per host on a terminal, plain lines elsewhere.
//!
//! Policy: bars only when stderr is a terminal and `CI` is not set ([`progress_enabled`]
//! decides from both, so the rule is testable); otherwise each step is one stderr line,
//! which keeps CI logs readable.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// True when progress bars should be drawn.
pub fn progress_enabled(stderr_is_terminal: bool, ci_is_set: bool) -> bool {
    stderr_is_terminal && !ci_is_set
}

/// Progress for a whole fleet run.
#[derive(Debug, Clone)]
pub struct FleetProgress {
    bars: Option<MultiProgress>,
}

/// Progress of one host.
#[derive(Debug, Clone)]
pub struct HostProgress {
    host: String,
    bar: Option<ProgressBar>,
}

impl FleetProgress {
    /// Decides from this process's stderr and environment.
    pub fn from_environment() -> FleetProgress {
        let enabled = progress_enabled(
            std::io::stderr().is_terminal(),
            std::env::var_os("CI").is_some(),
        );
        FleetProgress {
            bars: enabled.then(MultiProgress::new),
        }
    }

    /// A handle for `host`.
    pub fn host(&self, host: &str) -> HostProgress {
        let bar = self.bars.as_ref().map(|bars| {
            let bar = bars.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {prefix:<20} {elapsed:>4} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(host.to_owned());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        HostProgress {
            host: host.to_owned(),
            bar,
        }
    }
}

impl HostProgress {
    /// Shows the step the host is on.
    pub fn step(&self, message: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(message.to_owned()),
            None => eprintln!("[{}] {message}", self.host),
        }
    }

    /// Shows the host's final state.
    pub fn finish(&self, message: &str) {
        match &self.bar {
            Some(bar) => bar.finish_with_message(message.to_owned()),
            None => eprintln!("[{}] {message}", self.host),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::progress_enabled;

    #[test]
    fn bars_only_on_a_terminal_outside_ci() {
        assert!(progress_enabled(true, false));
        assert!(!progress_enabled(true, true));
        assert!(!progress_enabled(false, false));
        assert!(!progress_enabled(false, true));
    }
}
