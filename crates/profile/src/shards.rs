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
use crate::stack_histogram::{Adjustment, StackDistanceHistogram};
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
    /// An empty profiler sampling keys as `config` says; `seed` decorrelates its sample from other
    /// uses of the key hash (see `SpatialSampler::new`).
    pub fn new(config: SamplingConfig, seed: u64) -> Self {
        Self {
            sampler: SpatialSampler::new(config, seed),
            stack: LruStack::default(),
            histogram: StackDistanceHistogram::sampled(
                SAMPLED_SUB_BUCKET_BITS,
                SAMPLED_SUB_BUCKET_BITS,
            ),
            requests: 0,
        }
    }

    /// Reads the curve with `adjustment` instead of the default ([`Adjustment::Regression`]).
    pub fn with_adjustment(mut self, adjustment: Adjustment) -> Self {
        self.histogram.set_adjustment(adjustment);
        self
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
                accesses,
            } => {
                let object_depth = keys_above as f64 / rate + 1.0;
                let byte_depth = bytes_above as f64 / rate + f64::from(size_bytes);
                self.histogram
                    .record_reuse(weight, accesses, object_depth, byte_depth);
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
    use crate::mrc::{mean_absolute_error, SizeUnit};
    use crate::sampler::SpatialSampler;
    use crate::test_support::skewed_trace;

    #[test]
    fn full_rate_equals_exact() {
        let trace = skewed_trace(20_000, 1);
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
        let trace = skewed_trace(200_000, 1);
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
        let trace = skewed_trace(50_000, 1);
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

    /// Miss ratio of `profiler` read with `adjustment` at `size` objects.
    fn ratio_at(profiler: &ShardsProfiler, adjustment: Adjustment, size: u64) -> f64 {
        let query = MrcQuery::exactly(SizeUnit::Objects, &[size]);
        profiler
            .histogram()
            .clone()
            .with_adjustment(adjustment)
            .mrc(&query)
            .miss_ratio_at(size as f64)
    }

    /// One hot key (every other request, depth 2) interleaved with a cyclic scan of 10,000
    /// keys (depth 10,001): the exact miss ratio at 1,000 objects is 0.5 (every scan access
    /// misses, the hot key misses once).
    fn hot_key_and_scan() -> (u64, Vec<u64>) {
        const HOT: u64 = 1 << 40;
        let trace = (0..50_000u64).flat_map(|i| [HOT, i % 10_000]).collect();
        (HOT, trace)
    }

    #[test]
    fn shards_adj_does_not_depend_on_whether_the_hot_key_was_sampled() {
        let (hot, trace) = hot_key_and_scan();
        let config = SamplingConfig::FixedRate { rate: 0.01 };
        let mut seen = [false; 2];
        for seed in 0..500u64 {
            let hot_sampled = SpatialSampler::new(config, seed).sample(hot).is_some();
            if seen[usize::from(hot_sampled)] {
                continue;
            }
            seen[usize::from(hot_sampled)] = true;
            let mut profiler = ShardsProfiler::new(config, seed);
            trace.iter().for_each(|&key| profiler.record(key, 1));
            // SHARDS-adj: sampled misses over requests, the scan's half whatever the hot key.
            let adjusted = ratio_at(&profiler, Adjustment::ShardsAdj, 1000);
            assert!((adjusted - 0.5).abs() < 0.1, "seed {seed}: {adjusted}");
            // Plain SHARDS divides by the sampled accesses, which the hot key decides: 1.0
            // without it (every sampled access is a scan miss), about 0.01 with it.
            let plain = ratio_at(&profiler, Adjustment::None, 1000);
            let expected = if hot_sampled { 0.01 } else { 1.0 };
            assert!((plain - expected).abs() < 0.02, "seed {seed}: {plain}");
            if hot_sampled {
                // The hot key's accesses dwarf its misses: the regression is SHARDS-adj.
                let regression = ratio_at(&profiler, Adjustment::Regression, 1000);
                assert!(
                    (regression - adjusted).abs() < 0.01,
                    "{regression} {adjusted}"
                );
            }
        }
        assert_eq!(seen, [true, true], "no seed sampled the hot key");
    }

    #[test]
    fn regression_is_exact_when_misses_follow_accesses() {
        // Every key twice in a row (the corda trace's shape): miss ratio 0.5 at every size.
        // SHARDS-adj counts sampled keys, so it errs by their binomial noise; the regression
        // sees misses proportional to accesses and cancels that noise exactly.
        let trace: Vec<u64> = (0..20_000u64).flat_map(|k| [k, k]).collect();
        let config = SamplingConfig::FixedRate { rate: 0.01 };
        let mut worst_adjusted = 0.0f64;
        for seed in 0..10 {
            let mut profiler = ShardsProfiler::new(config, seed);
            trace.iter().for_each(|&key| profiler.record(key, 1));
            for size in [1, 100, 10_000] {
                let regression = ratio_at(&profiler, Adjustment::Regression, size);
                assert!((regression - 0.5).abs() < 1e-9, "seed {seed}: {regression}");
                let adjusted = ratio_at(&profiler, Adjustment::ShardsAdj, size);
                worst_adjusted = worst_adjusted.max((adjusted - 0.5).abs());
            }
        }
        assert!(worst_adjusted > 1e-4, "{worst_adjusted}");
    }
}
