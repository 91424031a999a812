//! The exact LRU profiler: every access's stack depth, in `O(log k)` for `k` live keys.
//!
//! This is the reference the sampled profilers are judged against. It reproduces the shared
//! reference curves exactly: a request hits a cache of `c` objects iff fewer than `c` distinct
//! keys were touched since its previous access; first accesses miss. Object depths below 2^20
//! are counted exactly (bucketed with 1e-6 relative width above); byte depths with 0.1%
//! relative bucket width. Memory grows with the number of distinct keys, not with requests.

use crate::mrc::{Mrc, MrcQuery};
use crate::stack::{LruStack, StackAccess};
use crate::stack_histogram::StackDistanceHistogram;
use crate::{AccessObserver, MrcProfiler};

/// Object depths below 2^20 (a million distinct keys) fall in buckets of width one.
const EXACT_OBJECT_BITS: u32 = 20;
/// Byte depths in buckets at most 2^-10 (0.1%) of their value wide.
const EXACT_BYTE_BITS: u32 = 10;

/// Exact LRU stack-distance profiler.
#[derive(Debug, Clone)]
pub struct ExactLru {
    stack: LruStack,
    histogram: StackDistanceHistogram,
    requests: u64,
}

impl Default for ExactLru {
    fn default() -> Self {
        Self::new()
    }
}

impl ExactLru {
    /// An empty profiler: no keys seen, no requests.
    pub fn new() -> Self {
        Self {
            stack: LruStack::default(),
            histogram: StackDistanceHistogram::new(EXACT_OBJECT_BITS, EXACT_BYTE_BITS),
            requests: 0,
        }
    }

    /// The depth histogram so far (mergeable with other shards' histograms).
    pub fn histogram(&self) -> &StackDistanceHistogram {
        &self.histogram
    }

    /// Distinct keys seen.
    pub fn distinct_keys(&self) -> usize {
        self.stack.len()
    }
}

impl ExactLru {
    /// Records one access like [`AccessObserver::record`] and returns its LRU depth in objects
    /// (the smallest cache that hits it), or `None` for a first access. Accuracy studies use it
    /// to attribute misses to keys.
    pub fn record_depth(&mut self, key_hash: u64, size_bytes: u32) -> Option<u64> {
        self.requests += 1;
        self.histogram.count_request();
        let bytes_before = self.stack.total_bytes();
        match self.stack.access(key_hash, size_bytes) {
            StackAccess::Cold => {
                self.histogram.record_cold(1.0, size_bytes);
                None
            }
            StackAccess::Reuse {
                keys_above,
                bytes_above,
                accesses,
            } => {
                let object_depth = (keys_above + 1) as f64;
                let byte_depth = (bytes_above + u64::from(size_bytes)) as f64;
                self.histogram
                    .record_reuse(1.0, accesses, object_depth, byte_depth);
                let resized = self.stack.total_bytes() as f64 - bytes_before as f64;
                if resized != 0.0 {
                    self.histogram.adjust_distinct_bytes(resized);
                }
                Some(keys_above + 1)
            }
        }
    }
}

impl AccessObserver for ExactLru {
    fn record(&mut self, key_hash: u64, size_bytes: u32) {
        self.record_depth(key_hash, size_bytes);
    }
}

impl MrcProfiler for ExactLru {
    fn mrc(&self, query: &MrcQuery) -> Mrc {
        self.histogram.mrc(query)
    }

    fn memory_bytes(&self) -> usize {
        self.stack.memory_bytes() + self.histogram.memory_bytes()
    }

    fn requests(&self) -> u64 {
        self.requests
    }

    fn sampling_rate(&self) -> f64 {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mrc::SizeUnit;
    use crate::test_support::miss_ratios;

    fn curve(trace: &[u64], unit: SizeUnit, sizes: &[u64]) -> Vec<f64> {
        let mut profiler = ExactLru::new();
        for &key in trace {
            profiler.record(key, 10);
        }
        miss_ratios(&profiler.mrc(&MrcQuery::exactly(unit, sizes)))
    }

    #[test]
    fn cyclic_trace_hits_only_when_the_cycle_fits() {
        let trace: Vec<u64> = (0..300).map(|i| i % 3).collect();
        let ratios = curve(&trace, SizeUnit::Objects, &[1, 2, 3, 4]);
        assert_eq!(ratios[0], 1.0);
        assert_eq!(ratios[1], 1.0);
        assert!(
            (ratios[2] - 0.01).abs() < 1e-12,
            "only the 3 cold misses remain"
        );
        assert_eq!(ratios[2], ratios[3]);
        let bytes = curve(&trace, SizeUnit::Bytes, &[29, 30]);
        assert_eq!(bytes[0], 1.0);
        assert!((bytes[1] - 0.01).abs() < 1e-12);
    }

    #[test]
    fn immediate_reuse_gives_a_flat_curve() {
        // Every reuse is immediate (like the corda trace): one slot catches all of them.
        let trace: Vec<u64> = (0..100).flat_map(|k| [k, k]).collect();
        let ratios = curve(&trace, SizeUnit::Objects, &[1, 10, 100]);
        assert!(
            ratios.iter().all(|&r| (r - 0.5).abs() < 1e-12),
            "{ratios:?}"
        );
    }

    #[test]
    fn empty_profiler_misses_everything() {
        let profiler = ExactLru::new();
        let curve = profiler.mrc(&MrcQuery::new(SizeUnit::Objects));
        assert!(curve.points().is_empty());
        assert_eq!(curve.miss_ratio_at(10.0), 1.0);
        assert_eq!(profiler.requests(), 0);
        assert!(profiler.memory_bytes() > 0);
    }
}
