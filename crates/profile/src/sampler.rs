//! Spatially hashed sampling of keys (SHARDS): a key is sampled iff its re-mixed hash is at most
//! a threshold, so either every access to a key is seen or none is, and the sampled keys are a
//! uniform random subset of rate `(threshold + 1) / 2^64`.
//!
//! In fixed-size mode the sampler also bounds the number of sampled keys (SHARDS-adj, Waldspurger
//! et al. FAST'15 §4.3): once more than `max_keys` are tracked it evicts the key with the largest
//! mixed hash and lowers the threshold below it, so that key and every key above it are never
//! sampled again. The threshold only ever decreases.

use std::collections::BinaryHeap;

use crate::keymap::mix64;

/// 2^64 as a float, the size of the hash space.
const HASH_SPACE: f64 = 18_446_744_073_709_551_616.0;

/// How a sampled profiler chooses keys.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplingConfig {
    /// Sample a fixed fraction `rate` in (0, 1] of the keys.
    FixedRate {
        /// The fraction of keys sampled, in (0, 1].
        rate: f64,
    },
    /// Start at `initial_rate` and lower the rate so at most `max_keys` keys are tracked.
    FixedSize {
        /// Most keys tracked at once (at least 1).
        max_keys: usize,
        /// The fraction of keys sampled at first, in (0, 1].
        initial_rate: f64,
    },
}

/// Decides which keys are sampled, and (fixed-size) which sampled key to stop tracking.
#[derive(Debug, Clone)]
pub struct SpatialSampler {
    seed: u64,
    /// Sample iff `mix(key_hash ^ seed) <= threshold`.
    threshold: u64,
    max_keys: Option<usize>,
    /// Mixed hashes of tracked keys, largest on top (fixed-size mode only).
    tracked: BinaryHeap<u64>,
}

impl SpatialSampler {
    /// `seed` decorrelates the sample from other uses of the same key hash (e.g. hash-table
    /// bucket bits, or a second profiler that must sample different keys).
    pub fn new(config: SamplingConfig, seed: u64) -> Self {
        let (rate, max_keys) = match config {
            SamplingConfig::FixedRate { rate } => (rate, None),
            SamplingConfig::FixedSize {
                max_keys,
                initial_rate,
            } => (initial_rate, Some(max_keys.max(1))),
        };
        assert!(
            rate > 0.0 && rate <= 1.0,
            "sampling rate {rate} not in (0, 1]"
        );
        let threshold = ((rate * HASH_SPACE) - 1.0).clamp(0.0, u64::MAX as f64) as u64;
        Self {
            seed,
            threshold,
            max_keys,
            tracked: BinaryHeap::new(),
        }
    }

    /// The key's mixed hash if it is sampled. One mix and one compare.
    #[inline]
    pub fn sample(&self, key_hash: u64) -> Option<u64> {
        let mixed = mix64(key_hash ^ self.seed);
        (mixed <= self.threshold).then_some(mixed)
    }

    /// Current fraction of keys sampled.
    pub fn rate(&self) -> f64 {
        (self.threshold as f64 + 1.0) / HASH_SPACE
    }

    /// Registers a newly tracked key; in fixed-size mode returns the mixed hash of the key to
    /// stop tracking when the bound is exceeded (possibly the new key itself).
    pub fn admit(&mut self, mixed_hash: u64) -> Option<u64> {
        self.max_keys?;
        self.tracked.push(mixed_hash);
        self.evict_over_bound()
    }

    /// Lowers the fixed-size bound to `max_keys` (at least 1); keys over it leave through
    /// [`SpatialSampler::evict_over_bound`]. No effect in fixed-rate mode or above the bound in force.
    pub fn lower_max_keys(&mut self, max_keys: usize) {
        if let Some(bound) = self.max_keys.as_mut() {
            *bound = (*bound).min(max_keys.max(1));
        }
    }

    /// The mixed hash of one tracked key to stop tracking while more are tracked than the bound
    /// allows (the largest, lowering the threshold below it as [`SpatialSampler::admit`] does).
    pub fn evict_over_bound(&mut self) -> Option<u64> {
        let max_keys = self.max_keys?;
        if self.tracked.len() <= max_keys {
            return None;
        }
        let evicted = self.tracked.pop()?;
        self.threshold = evicted.saturating_sub(1);
        Some(evicted)
    }

    /// Heap bytes the tracked-key heap holds (0 in fixed-rate mode).
    pub fn memory_bytes(&self) -> usize {
        self.tracked.capacity() * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rate_samples_about_the_rate_and_whole_keys() {
        let sampler = SpatialSampler::new(SamplingConfig::FixedRate { rate: 0.1 }, 42);
        let sampled = (0..100_000u64)
            .filter(|&k| sampler.sample(k).is_some())
            .count();
        assert!((9_000..11_000).contains(&sampled), "{sampled}");
        assert_eq!(sampler.sample(5).is_some(), sampler.sample(5).is_some());
        assert!((sampler.rate() - 0.1).abs() < 1e-9);
        let all = SpatialSampler::new(SamplingConfig::FixedRate { rate: 1.0 }, 0);
        assert!((0..1000u64).all(|k| all.sample(k).is_some()));
    }

    #[test]
    fn fixed_size_keeps_the_smallest_hashes_and_lowers_the_rate() {
        let config = SamplingConfig::FixedSize {
            max_keys: 100,
            initial_rate: 1.0,
        };
        let mut sampler = SpatialSampler::new(config, 7);
        let mut tracked = std::collections::BTreeSet::new();
        for key in 0..10_000u64 {
            if let Some(mixed) = sampler.sample(key) {
                tracked.insert(mixed);
                if let Some(evicted) = sampler.admit(mixed) {
                    tracked.remove(&evicted);
                }
            }
            assert!(tracked.len() <= 100);
        }
        let mut all: Vec<u64> = (0..10_000u64).map(|k| mix64(k ^ 7)).collect();
        all.sort_unstable();
        assert_eq!(tracked.into_iter().collect::<Vec<_>>(), all[..100].to_vec());
        assert!((sampler.rate() - 0.01).abs() < 0.005, "{}", sampler.rate());
    }
}
