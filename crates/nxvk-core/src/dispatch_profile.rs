//! GPU time per dispatch, for finding where a workload's time goes (the benchmarks'
//! `--profile`): while [`Device::profile_dispatches`](crate::Device::profile_dispatches) runs,
//! every dispatch is recorded between two timestamps.
//!
//! A timestamp is written when all earlier commands have finished, so one dispatch's span
//! also holds the barrier before it; the spans of a run add up to about its GPU time. Only
//! the first [`PROFILED_DISPATCHES`] dispatches of a run are timed; the rest are counted.

use std::time::Duration;

/// Dispatches one profiled run times at most (two timestamps each).
pub const PROFILED_DISPATCHES: u32 = 4096;

/// The GPU time of one profiled dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchTime {
    pub kernel: String,
    pub time: Duration,
}

/// What [`Device::profile_dispatches`](crate::Device::profile_dispatches) measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DispatchProfile {
    /// In recording order.
    pub dispatches: Vec<DispatchTime>,
    /// Dispatches beyond [`PROFILED_DISPATCHES`], recorded without timestamps.
    pub untimed: usize,
}

impl DispatchProfile {
    /// Total time and dispatch count per kernel name, the most expensive first.
    pub fn by_kernel(&self) -> Vec<(String, usize, Duration)> {
        let mut totals: Vec<(String, usize, Duration)> = Vec::new();
        for dispatch in &self.dispatches {
            match totals
                .iter_mut()
                .find(|(name, ..)| *name == dispatch.kernel)
            {
                Some((_, count, time)) => {
                    *count += 1;
                    *time += dispatch.time;
                }
                None => totals.push((dispatch.kernel.clone(), 1, dispatch.time)),
            }
        }
        totals.sort_by_key(|total| std::cmp::Reverse(total.2));
        totals
    }
}

/// The profile being recorded: the timestamp pool and the kernels timed so far.
pub(crate) struct Recorder {
    pub(crate) query_pool: std::sync::Arc<vulkano::query::QueryPool>,
    pub(crate) kernels: Vec<String>,
    pub(crate) untimed: usize,
}

impl Recorder {
    /// The first of the two query indices for the next dispatch, of `kernel`; `None` (and
    /// counted) when the pool is full.
    pub(crate) fn next_slot(&mut self, kernel: &str) -> Option<u32> {
        let index = self.kernels.len() as u32;
        if index >= PROFILED_DISPATCHES {
            self.untimed += 1;
            return None;
        }
        self.kernels.push(kernel.to_owned());
        Some(2 * index)
    }

    /// The profile from the pool's `ticks` (two per timed dispatch), `period_ns` per tick.
    pub(crate) fn finish(self, ticks: &[u64], period_ns: f32) -> DispatchProfile {
        let dispatches = self
            .kernels
            .into_iter()
            .zip(ticks.chunks_exact(2))
            .map(|(kernel, pair)| DispatchTime {
                kernel,
                time: Duration::from_nanos(
                    (pair[1].saturating_sub(pair[0]) as f64 * f64::from(period_ns)) as u64,
                ),
            })
            .collect();
        DispatchProfile {
            dispatches,
            untimed: self.untimed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_per_kernel_are_sorted_by_time() {
        let dispatch = |kernel: &str, micros| DispatchTime {
            kernel: kernel.into(),
            time: Duration::from_micros(micros),
        };
        let profile = DispatchProfile {
            dispatches: vec![dispatch("a", 5), dispatch("b", 7), dispatch("a", 4)],
            untimed: 0,
        };
        assert_eq!(
            profile.by_kernel(),
            vec![
                ("a".to_owned(), 2, Duration::from_micros(9)),
                ("b".to_owned(), 1, Duration::from_micros(7)),
            ]
        );
    }
}
