//! Online miss-ratio curves: every slab class of every shard feeds a sampled reuse-time profiler on the
//! request path, and curves are merged across shards when someone asks.
//!
//! What is recorded: every LRU use of a class, i.e. a hit that bumps an item (get, gat, touch, meta hits)
//! and a store that links one. A GET miss followed by its SET (the lookaside pattern) is one use, as it is
//! one position change in the LRU. Misses that are never filled are not seen (their size, hence their
//! class, is unknown).
//!
//! Cost: a profiler exists only for classes that were used; an access whose key is not sampled costs one
//! hash mix and one compare (SHARDS-style spatial sampling on the key hash the engine already computed).
//! Memory: a profiler costs its tracked keys (fixed-size sampling bounds them) plus its time histograms
//! (bounded by the bucket resolution, `TIME_SUB_BUCKET_BITS`). `ProfilingConfig::for_memory` sizes both
//! and caps the number of profilers so that all of them together stay within 1% of `-m` in the worst
//! case: with a large `-m` every class of every shard is profiled; with a small one the first classes
//! used are, and the others report no curve. `memory_bytes` reports what they hold.
//!
//! Shards: keys are hash-partitioned, so each shard sees an independent 1/S share of the class's keys on
//! its own clock; `ReuseTimeHistogram::merge` combines them into the whole class's curve.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use mrcache_profile::{
    AccessObserver, MrcProfiler, ReuseTimeHistogram, ReuseTimeMethod, ReuseTimeProfiler,
    SamplingConfig,
};

/// Bytes a profiler spends per tracked key (key map entry plus its share of the table), for sizing.
const BYTES_PER_TRACKED_KEY: usize = 48;
/// Profilers track at least this many keys, whatever the memory.
const MIN_KEYS_PER_PROFILER: usize = 256;
/// Reuse times in buckets 2^-4 (6%) of their value wide: far finer than a page of any class, and the
/// five time histograms of a profiler then stay under 40 KB for any 32-bit time.
const TIME_SUB_BUCKET_BITS: u32 = 4;
/// Worst-case bytes of one profiler besides its keys (time histograms and sampler).
const FIXED_BYTES_PER_PROFILER: usize = 40 * 1024;
/// Share of `-m` all profilers may use together, by default.
pub const PROFILE_MEMORY_SHARE: f64 = 0.01;
/// Sampling rate before the key bound forces it lower: every key. A profiler then tracks all of a
/// class's keys while they fit its bound and lowers the rate only as far as the bound requires
/// (fixed-size SHARDS), so a small class gets an exact curve instead of a handful of samples and a
/// large one the densest sample its memory allows. The request-path cost stays bounded by the same
/// key bound (docs/results.md §5).
pub const DEFAULT_SAMPLE_RATE: f64 = 1.0;

/// How the engine profiles.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct ProfilingConfig {
    /// Initial sampling rate of every profiler.
    pub sample_rate: f64,
    /// Keys one profiler (one class in one shard) may track.
    pub max_keys_per_profiler: usize,
    /// Profilers the whole engine may hold (classes x shards when memory allows).
    pub max_profilers: usize,
    /// Seed of the profilers' samplers, so runs are reproducible.
    pub seed: u64,
}

impl ProfilingConfig {
    /// Profilers sized, and counted, so that together they fit in 1% of `memory_limit_bytes`: every one
    /// of `classes * shards` if it can hold at least `MIN_KEYS_PER_PROFILER` keys, else as many as fit.
    pub fn for_memory(
        memory_limit_bytes: u64,
        classes: usize,
        shards: usize,
        sample_rate: f64,
        memory_share: f64,
    ) -> Self {
        let budget = (memory_limit_bytes as f64 * memory_share) as usize;
        let all = classes.max(1) * shards.max(1);
        let min_profiler = FIXED_BYTES_PER_PROFILER + MIN_KEYS_PER_PROFILER * BYTES_PER_TRACKED_KEY;
        let (max_profilers, max_keys) = if budget / all >= min_profiler {
            (
                all,
                (budget / all - FIXED_BYTES_PER_PROFILER) / BYTES_PER_TRACKED_KEY,
            )
        } else {
            (budget / min_profiler, MIN_KEYS_PER_PROFILER)
        };
        ProfilingConfig {
            sample_rate,
            max_keys_per_profiler: max_keys,
            max_profilers,
            seed: 0x6d72_6361_6368_6521,
        }
    }

    /// Bytes all profilers may hold in the worst case.
    #[cfg(test)]
    fn worst_case_bytes(&self) -> usize {
        self.max_profilers
            * (FIXED_BYTES_PER_PROFILER + self.max_keys_per_profiler * BYTES_PER_TRACKED_KEY)
    }
}

/// What each shard is given to profile with: the per-partition profilers' sizing, and with several tenant
/// pools one whole-pool profiler each (its curve in bytes is the tenant's MRC), and the shadow queue
/// bytes of each pool in one shard. The counters of profilers created are shared by all shards.
#[derive(Clone, Debug, Default)]
pub(crate) struct ShardProfiling {
    pub classes: Option<ProfilingConfig>,
    pub classes_created: Arc<AtomicUsize>,
    pub pools: Option<ProfilingConfig>,
    pub pools_created: Arc<AtomicUsize>,
    pub shadow_bytes: Option<u64>,
}

/// The profilers of one shard, one per partition (or per pool), created on first use.
pub(crate) struct ClassProfilers {
    config: Option<ProfilingConfig>,
    profilers: Vec<Option<ReuseTimeProfiler>>,
    /// Profilers created by all shards, against `max_profilers`.
    created: Arc<AtomicUsize>,
}

impl ClassProfilers {
    pub(crate) fn new(
        config: Option<ProfilingConfig>,
        classes: usize,
        created: Arc<AtomicUsize>,
    ) -> Self {
        ClassProfilers {
            config,
            profilers: (0..classes).map(|_| None).collect(),
            created,
        }
    }

    /// Records one use of class `index` by the key with `hash`, of `size_bytes`.
    #[inline]
    pub(crate) fn record(&mut self, index: usize, hash: u64, size_bytes: usize) {
        let Some(config) = self.config else { return };
        let slot = &mut self.profilers[index];
        if slot.is_none() {
            let granted = self
                .created
                .fetch_update(Relaxed, Relaxed, |n| {
                    (n < config.max_profilers).then_some(n + 1)
                })
                .is_ok();
            if !granted {
                return;
            }
            *slot = Some(
                ReuseTimeProfiler::new(
                    ReuseTimeMethod::Aet,
                    SamplingConfig::FixedSize {
                        max_keys: config.max_keys_per_profiler,
                        initial_rate: config.sample_rate,
                    },
                    config.seed,
                )
                .with_time_resolution(TIME_SUB_BUCKET_BITS),
            );
        }
        if let Some(profiler) = slot {
            profiler.record(hash, size_bytes as u32);
        }
    }

    pub(crate) fn histogram(&self, index: usize) -> Option<ReuseTimeHistogram> {
        self.profilers[index].as_ref().map(|p| p.histogram())
    }

    pub(crate) fn sampling_rate(&self, index: usize) -> Option<f64> {
        self.profilers[index].as_ref().map(|p| p.sampling_rate())
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.profilers
            .iter()
            .flatten()
            .map(|p| p.memory_bytes())
            .sum()
    }

    pub(crate) fn enabled(&self) -> bool {
        self.config.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profilers_fit_their_memory_share() {
        for memory in [1u64 << 20, 64 << 20, 1 << 30, 64 << 30] {
            for (classes, shards) in [(1, 1), (42, 1), (42, 16), (42 * 64, 64)] {
                let config = ProfilingConfig::for_memory(memory, classes, shards, 0.01, 0.01);
                let budget = (memory as f64 * 0.01) as usize;
                assert!(
                    config.worst_case_bytes() <= budget,
                    "{memory} bytes, {classes} classes x {shards} shards: {config:?}"
                );
                assert!(config.max_profilers <= classes * shards);
            }
        }
    }
}
