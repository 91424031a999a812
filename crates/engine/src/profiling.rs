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
//! Memory: each profiler is fixed-size (`max_keys`), and `ProfilingConfig::for_memory` sizes them so that
//! all of them together stay within 1% of `-m`; `memory_bytes` reports what they hold.
//!
//! Shards: keys are hash-partitioned, so each shard sees an independent 1/S share of the class's keys on
//! its own clock; `ReuseTimeHistogram::merge` combines them into the whole class's curve.

use mrcache_profile::{
    AccessObserver, MrcProfiler, ReuseTimeHistogram, ReuseTimeMethod, ReuseTimeProfiler,
    SamplingConfig,
};

/// Bytes a profiler spends per tracked key (key map entry plus its share of the table), for sizing.
const BYTES_PER_TRACKED_KEY: usize = 32;
/// Profilers track at least this many keys, whatever the memory.
const MIN_KEYS_PER_PROFILER: usize = 256;
/// Share of `-m` all profilers may use together.
pub const PROFILE_MEMORY_SHARE: f64 = 0.01;
/// Sampling rate before the key bound forces it lower: 1%, where the SHARDS family is accurate on large
/// working sets and the request-path cost is small.
pub const DEFAULT_SAMPLE_RATE: f64 = 0.01;

/// How the engine profiles.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ProfilingConfig {
    /// Initial sampling rate of every profiler.
    pub sample_rate: f64,
    /// Keys one profiler (one class in one shard) may track.
    pub max_keys_per_profiler: usize,
    pub seed: u64,
}

impl ProfilingConfig {
    /// Profilers sized so that `classes * shards` of them fit in 1% of `memory_limit_bytes`.
    pub fn for_memory(
        memory_limit_bytes: u64,
        classes: usize,
        shards: usize,
        sample_rate: f64,
    ) -> Self {
        let budget = (memory_limit_bytes as f64 * PROFILE_MEMORY_SHARE) as usize;
        let per_profiler = budget / (BYTES_PER_TRACKED_KEY * classes.max(1) * shards.max(1));
        ProfilingConfig {
            sample_rate,
            max_keys_per_profiler: per_profiler.max(MIN_KEYS_PER_PROFILER),
            seed: 0x6d72_6361_6368_6521,
        }
    }
}

/// The profilers of one shard, one per class, created on first use.
pub(crate) struct ClassProfilers {
    config: Option<ProfilingConfig>,
    profilers: Vec<Option<ReuseTimeProfiler>>,
}

impl ClassProfilers {
    pub(crate) fn new(config: Option<ProfilingConfig>, classes: usize) -> Self {
        ClassProfilers {
            config,
            profilers: (0..classes).map(|_| None).collect(),
        }
    }

    /// Records one use of class `index` by the key with `hash`, of `size_bytes`.
    #[inline]
    pub(crate) fn record(&mut self, index: usize, hash: u64, size_bytes: usize) {
        let Some(config) = self.config else { return };
        let profiler = self.profilers[index].get_or_insert_with(|| {
            ReuseTimeProfiler::new(
                ReuseTimeMethod::Aet,
                SamplingConfig::FixedSize {
                    max_keys: config.max_keys_per_profiler,
                    initial_rate: config.sample_rate,
                },
                config.seed,
            )
        });
        profiler.record(hash, size_bytes as u32);
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
