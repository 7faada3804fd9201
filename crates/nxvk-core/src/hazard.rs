//! Which dispatches need a barrier before them.
//!
//! Kernels reach memory through device addresses, so no descriptor tells Vulkan (or vulkano)
//! what they touch: the stream declares each dispatch's reads and writes and this tracker turns
//! them into barriers. Within one command buffer, a dispatch that reads or writes a buffer
//! written since the last barrier (read-after-write, write-after-write), or writes one read
//! since then (write-after-read), gets one global memory barrier first. Independent dispatches
//! run back to back with none. Tracking is by buffer identity, so a buffer that the pool hands
//! out again is still the same buffer here.

use std::collections::HashSet;

#[derive(Debug, Default)]
pub(crate) struct HazardTracker {
    read_since_barrier: HashSet<u64>,
    written_since_barrier: HashSet<u64>,
}

impl HazardTracker {
    /// Records one command's accesses; returns true when a barrier must precede it.
    pub(crate) fn access(&mut self, reads: &[u64], writes: &[u64]) -> bool {
        let needs_barrier = reads
            .iter()
            .chain(writes)
            .any(|id| self.written_since_barrier.contains(id))
            || writes.iter().any(|id| self.read_since_barrier.contains(id));
        if needs_barrier {
            self.clear();
        }
        self.read_since_barrier.extend(reads);
        self.written_since_barrier.extend(writes);
        needs_barrier
    }

    /// Forgets everything, after a barrier that covers all earlier commands.
    pub(crate) fn clear(&mut self) {
        self.read_since_barrier.clear();
        self.written_since_barrier.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::HazardTracker;

    #[test]
    fn barriers_only_where_data_depends() {
        let mut tracker = HazardTracker::default();
        assert!(!tracker.access(&[1, 2], &[3]), "first use");
        assert!(
            !tracker.access(&[1], &[4]),
            "independent: shares only a read"
        );
        assert!(tracker.access(&[3], &[5]), "read after write");
        assert!(
            !tracker.access(&[1], &[6]),
            "after the barrier 1 is only read"
        );
        assert!(tracker.access(&[7], &[1]), "write after read");
        assert!(tracker.access(&[], &[1]), "write after write");
    }
}
