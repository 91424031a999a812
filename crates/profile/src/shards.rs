//! SHARDS (Waldspurger et al., FAST'15): exact LRU stack depths of a spatially hashed sample of
//! keys, scaled up by the inverse sampling rate.
//!
//! Only sampled keys enter the stack, so a sampled reuse sees `d` sampled keys above it where
//! the whole trace has about `d / rate`. Depths are recorded as `d / rate + 1` objects and
//! `bytes_above / rate + size_bytes` bytes, weighted `1 / rate` (the rate in force at the
//! access). Depths below `1 / rate` are not resolved: a reuse with no sampled key above it
//! lands at depth 1 whatever its true depth. Memory is `O(rate * distinct keys)`, or `O(max_keys)` in fixed-size mode, where the
//! sampler's evictions also remove the key from the stack.

use crate::mrc::{Mrc, MrcQuery};
use crate::sampler::{SamplingConfig, SpatialSampler};
use crate::stack::{LruStack, StackAccess};
use crate::stack_histogram::StackDistanceHistogram;
use crate::{AccessObserver, MrcProfiler};

/// Sampled depths are already estimates; 2^-7 (0.8%) relative bucket width is well below
/// their sampling error and keeps the histograms a few tens of KiB.
const SAMPLED_SUB_BUCKET_BITS: u32 = 7;

/// Sampled stack-distance profiler.
#[derive(Debug, Clone)]
pub struct ShardsProfiler {
    sampler: SpatialSampler,
    stack: LruStack,
    histogram: StackDistanceHistogram,
    requests: u64,
}

impl ShardsProfiler {
    pub fn new(config: SamplingConfig, seed: u64) -> Self {
        Self {
            sampler: SpatialSampler::new(config, seed),
            stack: LruStack::default(),
            histogram: StackDistanceHistogram::new(
                SAMPLED_SUB_BUCKET_BITS,
                SAMPLED_SUB_BUCKET_BITS,
            ),
            requests: 0,
        }
    }

    /// The weighted depth histogram so far (mergeable with other shards' histograms).
    pub fn histogram(&self) -> &StackDistanceHistogram {
        &self.histogram
    }

    /// Keys currently tracked in the sampled stack.
    pub fn tracked_keys(&self) -> usize {
        self.stack.len()
    }
}

impl AccessObserver for ShardsProfiler {
    #[inline]
    fn record(&mut self, key_hash: u64, size_bytes: u32) {
        self.requests += 1;
        self.histogram.count_request();
        let Some(mixed) = self.sampler.sample(key_hash) else {
            return;
        };
        let rate = self.sampler.rate();
        let weight = 1.0 / rate;
        match self.stack.access(mixed, size_bytes) {
            StackAccess::Cold => {
                self.histogram.record_cold(weight, size_bytes);
                if let Some(evicted) = self.sampler.admit(mixed) {
                    self.stack.remove(evicted);
                }
            }
            StackAccess::Reuse {
                keys_above,
                bytes_above,
            } => {
                let object_depth = keys_above as f64 / rate + 1.0;
                let byte_depth = bytes_above as f64 / rate + f64::from(size_bytes);
                self.histogram
                    .record_reuse(weight, object_depth, byte_depth);
            }
        }
    }
}

impl MrcProfiler for ShardsProfiler {
    fn mrc(&self, query: &MrcQuery) -> Mrc {
        self.histogram.mrc(query)
    }

    fn memory_bytes(&self) -> usize {
        self.stack.memory_bytes() + self.histogram.memory_bytes() + self.sampler.memory_bytes()
    }

    fn requests(&self) -> u64 {
        self.requests
    }

    fn sampling_rate(&self) -> f64 {
        self.sampler.rate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exact::ExactLru;
    use crate::keymap::mix64;
    use crate::mrc::{mean_absolute_error, SizeUnit};

    /// A skewed synthetic trace: key = floor(u^3 * 50_000) for pseudo-random u.
    fn skewed_trace(requests: usize) -> Vec<u64> {
        let mut state = 1u64;
        (0..requests)
            .map(|_| {
                state = mix64(state);
                let u = (state >> 11) as f64 / (1u64 << 53) as f64;
                (u * u * u * 50_000.0) as u64
            })
            .collect()
    }

    #[test]
    fn full_rate_equals_exact() {
        let trace = skewed_trace(20_000);
        let mut exact = ExactLru::new();
        let mut sampled = ShardsProfiler::new(SamplingConfig::FixedRate { rate: 1.0 }, 3);
        for &key in &trace {
            exact.record(key, 100);
            sampled.record(key, 100);
        }
        let query = MrcQuery::new(SizeUnit::Objects);
        let error = mean_absolute_error(&exact.mrc(&query), &sampled.mrc(&query));
        assert!(error < 0.002, "{error}");
    }

    #[test]
    fn ten_percent_sample_is_close_and_fixed_size_is_bounded() {
        let trace = skewed_trace(200_000);
        let mut exact = ExactLru::new();
        let mut rate = ShardsProfiler::new(SamplingConfig::FixedRate { rate: 0.1 }, 3);
        let config = SamplingConfig::FixedSize {
            max_keys: 2000,
            initial_rate: 1.0,
        };
        let mut bounded = ShardsProfiler::new(config, 3);
        for &key in &trace {
            exact.record(key, 100);
            rate.record(key, 100);
            bounded.record(key, 100);
            assert!(bounded.tracked_keys() <= 2000);
        }
        for unit in [SizeUnit::Objects, SizeUnit::Bytes] {
            let query = MrcQuery::new(unit);
            let reference = exact.mrc(&query);
            let error = mean_absolute_error(&reference, &rate.mrc(&query));
            assert!(error < 0.02, "fixed rate {unit:?}: {error}");
            let error = mean_absolute_error(&reference, &bounded.mrc(&query));
            assert!(error < 0.03, "fixed size {unit:?}: {error}");
        }
        assert!(bounded.sampling_rate() < 0.1);
        assert!(rate.memory_bytes() < exact.memory_bytes());
    }

    #[test]
    fn histograms_of_two_shards_merge() {
        let trace = skewed_trace(50_000);
        let mut shards = [
            ShardsProfiler::new(SamplingConfig::FixedRate { rate: 0.5 }, 9),
            ShardsProfiler::new(SamplingConfig::FixedRate { rate: 0.5 }, 9),
        ];
        for &key in &trace {
            shards[(key % 2) as usize].record(key, 1);
        }
        let mut merged = shards[0].histogram().clone();
        merged.merge(shards[1].histogram());
        let total = shards[0].histogram().access_weight() + shards[1].histogram().access_weight();
        assert_eq!(merged.access_weight(), total);
    }
}
