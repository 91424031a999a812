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
//! (bounded by the bucket resolution, `TIME_SUB_BUCKET_BITS`). All of them together stay within 1% of
//! `-m` or 4 MiB, whichever is more (at most an eighth of `-m`; `profile_budget_bytes`), divided among
//! the profilers that exist: a profiler is created on its class's first use, and
//! each creation lowers every profiler's key bound to an equal share of the budget
//! (`ProfilingConfig::keys_per_profiler`), so a workload that uses three classes gets three large
//! samples rather than three of the forty-odd shares a static division would reserve. A profiler over
//! its lowered bound retires a few keys on each of its class's accesses (`SHRINK_STEPS`), so the work
//! is spread over the request path and the budget holds again after a few hundred of them. The number
//! of profilers is capped so that each keeps at least `MIN_KEYS_PER_PROFILER` keys: from `-m 32` every
//! class of one shard is profiled; with less memory or many shards the first classes used are, and the
//! others report no curve. `memory_bytes` reports what they hold.
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
/// And at most this many: a larger sample adds little accuracy (fixed-size SHARDS is accurate with a
/// few thousand keys), and the bound caps the key table a profiler rebuilds, on one request, when it
/// has shrunk to a lowered bound (`ReuseTimeProfiler::shrink`: about a millisecond at this size).
const MAX_KEYS_PER_PROFILER: usize = 1 << 16;
/// Keys a profiler over its bound retires per access of its class: the bound falls when another
/// profiler is created, and retiring the excess a little at a time keeps any one request's work small.
const SHRINK_STEPS: usize = 16;
/// Reuse times in buckets 2^-4 (6%) of their value wide: far finer than a page of any class, and the
/// five time histograms of a profiler then stay under 40 KB for any 32-bit time.
const TIME_SUB_BUCKET_BITS: u32 = 4;
/// Worst-case bytes of one profiler besides its keys (time histograms and sampler).
const FIXED_BYTES_PER_PROFILER: usize = 40 * 1024;
/// Share of `-m` all profilers may use together, by default.
pub const PROFILE_MEMORY_SHARE: f64 = 0.01;
/// Bytes the profilers may use together however small the share makes them, up to
/// `1 / PROFILE_FLOOR_MAX_FRACTION` of `-m` ([`profile_budget_bytes`]). 1% of a `-m 32` cache is 335 KB:
/// six profilers of 256 keys, so most classes of a real workload would have no curve, where this
/// floor gives every class one (a profiler's least is 52 KB). It is what memcached 1.6 itself spends
/// beyond `-m` on its hash table at about 250,000 items; above `-m 400` the share is larger.
pub const PROFILE_MEMORY_FLOOR_BYTES: usize = 4 << 20;
/// The floor takes at most this fraction of `-m`, so a cache of a few MiB stays mostly cache.
pub const PROFILE_FLOOR_MAX_FRACTION: usize = 8;

/// Bytes all profilers may hold together for a memory limit and share: `memory_share` of it, or
/// [`PROFILE_MEMORY_FLOOR_BYTES`] where that is more, within an eighth of the memory.
pub fn profile_budget_bytes(memory_limit_bytes: u64, memory_share: f64) -> usize {
    let memory = usize::try_from(memory_limit_bytes).unwrap_or(usize::MAX);
    let share = (memory as f64 * memory_share) as usize;
    share.max(PROFILE_MEMORY_FLOOR_BYTES.min(memory / PROFILE_FLOOR_MAX_FRACTION))
}
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
    /// Bytes all profilers together may hold.
    pub budget_bytes: usize,
    /// Profilers the whole engine may hold (classes x shards when memory allows), each with at least
    /// `MIN_KEYS_PER_PROFILER` keys.
    pub max_profilers: usize,
    /// Seed of the profilers' samplers, so runs are reproducible.
    pub seed: u64,
}

impl ProfilingConfig {
    /// Profilers counted so that together they fit in `budget_bytes` ([`profile_budget_bytes`]): every
    /// one of `classes * shards` if each can hold at least `MIN_KEYS_PER_PROFILER` keys, else as many
    /// as fit.
    pub fn for_budget(budget: usize, classes: usize, shards: usize, sample_rate: f64) -> Self {
        let all = classes.max(1) * shards.max(1);
        let min_profiler = FIXED_BYTES_PER_PROFILER + MIN_KEYS_PER_PROFILER * BYTES_PER_TRACKED_KEY;
        ProfilingConfig {
            sample_rate,
            budget_bytes: budget,
            max_profilers: all.min(budget / min_profiler),
            seed: 0x6d72_6361_6368_6521,
        }
    }

    /// The key bound of each profiler while `live` of them exist: an equal share of the budget, less
    /// the share's fixed cost, within `[MIN_KEYS_PER_PROFILER, MAX_KEYS_PER_PROFILER]`.
    pub fn keys_per_profiler(&self, live: usize) -> usize {
        ((self.budget_bytes / live.max(1)).saturating_sub(FIXED_BYTES_PER_PROFILER)
            / BYTES_PER_TRACKED_KEY)
            .clamp(MIN_KEYS_PER_PROFILER, MAX_KEYS_PER_PROFILER)
    }

    /// Bytes all profilers may hold in the worst case (all of them, each at its bound).
    #[cfg(test)]
    fn worst_case_bytes(&self) -> usize {
        let live = self.max_profilers;
        live * (FIXED_BYTES_PER_PROFILER + self.keys_per_profiler(live) * BYTES_PER_TRACKED_KEY)
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
    profilers: Vec<Option<Profiler>>,
    /// Profilers created by all shards, against `max_profilers`.
    created: Arc<AtomicUsize>,
    /// `created` when this shard last lowered its profilers' bounds.
    seen_created: usize,
}

/// One partition's profiler, and whether it still holds keys over its bound.
struct Profiler {
    profiler: ReuseTimeProfiler,
    shrinking: bool,
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
            seen_created: 0,
        }
    }

    /// Records one use of class `index` by the key with `hash`, of `size_bytes`.
    #[inline]
    pub(crate) fn record(&mut self, index: usize, hash: u64, size_bytes: usize) {
        let Some(config) = self.config else { return };
        if self.profilers[index].is_none() {
            let Ok(before) = self.created.fetch_update(Relaxed, Relaxed, |n| {
                (n < config.max_profilers).then_some(n + 1)
            }) else {
                return;
            };
            self.profilers[index] = Some(Profiler {
                profiler: ReuseTimeProfiler::new(
                    ReuseTimeMethod::Aet,
                    SamplingConfig::FixedSize {
                        max_keys: config.keys_per_profiler(before + 1),
                        initial_rate: config.sample_rate,
                    },
                    config.seed,
                )
                .with_time_resolution(TIME_SUB_BUCKET_BITS),
                shrinking: false,
            });
        }
        // Another profiler was created (here or in another shard): every one here gets the new,
        // lower share of the budget.
        let created = self.created.load(Relaxed);
        if created != self.seen_created {
            self.seen_created = created;
            let keys = config.keys_per_profiler(created);
            for p in self.profilers.iter_mut().flatten() {
                p.profiler.lower_max_keys(keys);
                p.shrinking = true;
            }
        }
        let Some(p) = &mut self.profilers[index] else {
            return;
        };
        if p.shrinking {
            p.shrinking = !p.profiler.shrink(SHRINK_STEPS);
        }
        p.profiler.record(hash, size_bytes as u32);
    }

    pub(crate) fn histogram(&self, index: usize) -> Option<ReuseTimeHistogram> {
        self.profilers[index]
            .as_ref()
            .map(|p| p.profiler.histogram())
    }

    pub(crate) fn sampling_rate(&self, index: usize) -> Option<f64> {
        self.profilers[index]
            .as_ref()
            .map(|p| p.profiler.sampling_rate())
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.profilers
            .iter()
            .flatten()
            .map(|p| p.profiler.memory_bytes())
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
    fn small_caches_get_the_floor_and_every_class_a_profiler() {
        const MIB: usize = 1 << 20;
        // 1% where that is more than 4 MiB; the floor below, within an eighth of the memory.
        let budget = |mib: u64, share| profile_budget_bytes(mib << 20, share);
        assert_eq!(budget(1024, 0.01), 10_737_418);
        assert_eq!(budget(64, 0.01), 4 * MIB);
        assert_eq!(budget(32, 0.01), 4 * MIB);
        assert_eq!(budget(16, 0.01), 2 * MIB);
        assert_eq!(budget(2, 0.01), MIB / 4);
        // A larger share wins over the floor (the simulator's 10%).
        assert_eq!(budget(64, 0.1), 6_710_886);
        // memcached's 42 classes at -m 32, one shard: every class can have its profiler.
        let config = ProfilingConfig::for_budget(budget(32, 0.01), 42, 1, 1.0);
        assert_eq!(config.max_profilers, 42);
    }

    #[test]
    fn profilers_fit_their_memory_share() {
        for memory in [1u64 << 20, 64 << 20, 1 << 30, 64 << 30] {
            for (classes, shards) in [(1, 1), (42, 1), (42, 16), (42 * 64, 64)] {
                let budget = profile_budget_bytes(memory, 0.01);
                let config = ProfilingConfig::for_budget(budget, classes, shards, 0.01);
                assert!(
                    config.worst_case_bytes() <= budget,
                    "{memory} bytes, {classes} classes x {shards} shards: {config:?}"
                );
                assert!(config.max_profilers <= classes * shards);
                // However many exist, each at its bound: within the budget, and fewer profilers
                // hold no fewer keys each.
                let mut last = usize::MAX;
                for live in 1..=config.max_profilers.min(200) {
                    let keys = config.keys_per_profiler(live);
                    let bytes = live * (FIXED_BYTES_PER_PROFILER + keys * BYTES_PER_TRACKED_KEY);
                    assert!(
                        bytes <= budget,
                        "{live} profilers of {keys} keys: {bytes} B"
                    );
                    assert!((MIN_KEYS_PER_PROFILER..=MAX_KEYS_PER_PROFILER).contains(&keys));
                    assert!(keys <= last);
                    last = keys;
                }
            }
        }
    }
}
