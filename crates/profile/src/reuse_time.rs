//! Sampled reuse times (mPart §3.1) and the [`ReuseTimeHistogram`] they build.
//!
//! The profiler's logical clock counts every recorded access; a sampled key's reuse time is the
//! clock difference between two of its accesses, so reuse times are exact even when only a
//! fraction of keys is sampled. Besides reuse times the histogram keeps what the footprint
//! formula (LAMA eq. 1) needs: each datum's first access time `f_i` and reverse last access time
//! `l_i = n + 1 - x_i`. All counts are weighted by the inverse sampling rate at the time.
//! A fixed-size profiler retires keys the sampler drops; their last access is kept only as a
//! log-bucketed time, taken as the datum's last access (an approximation that matters only for
//! windows as long as the trace).

use crate::histogram::LogHistogram;
use crate::keymap::{key_map_memory_bytes, KeyMap};
use crate::mrc::{Mrc, MrcQuery};
use crate::reuse_curve::{self, Footprint};
use crate::sampler::{SamplingConfig, SpatialSampler};
use crate::stack_histogram::Adjustment;
use crate::{AccessObserver, MrcProfiler};

/// Reuse times in buckets at most 2^-7 (0.8%) of their value wide; times below 128 are exact.
pub(crate) const TIME_SUB_BUCKET_BITS: u32 = 7;

/// How a [`ReuseTimeHistogram`] becomes a curve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReuseTimeMethod {
    /// Footprint theory, Xiang et al. HOTL (LAMA eq. 1-2).
    Footprint,
    /// Average eviction time, Hu et al. (mPart eq. 2.2-2.3).
    Aet,
}

/// Weighted reuse-time statistics of one partition; a snapshot, mergeable across shards.
#[derive(Debug, Clone, PartialEq)]
pub struct ReuseTimeHistogram {
    /// Length `n` of the logical clock the times were measured on.
    pub(crate) clock_ticks: u64,
    /// For a window ([`Self::since`]): the profiler's clock when the window began, the longest reuse
    /// time every access of the window could have shown (its horizon); 0 for a profiler's whole life.
    pub(crate) horizon_ticks: u64,
    /// Requests behind this histogram, sampled or not (sums over merged shards).
    pub(crate) requests: u64,
    pub(crate) reuse_times: LogHistogram,
    /// Reuse times again, the `n`-th access of a key weighted `2 (n - 1)` times (for
    /// [`Adjustment::Regression`]).
    pub(crate) key_weighted_reuse_times: LogHistogram,
    pub(crate) first_access_times: LogHistogram,
    pub(crate) reverse_last_access_times: LogHistogram,
    /// Weight of sampled accesses, cold ones included.
    pub(crate) access_weight: f64,
    /// `sum a_i^2` over sampled keys, weighted.
    pub(crate) access_sq_weight: f64,
    /// Weight of sampled distinct keys (first accesses), and of their sizes in bytes.
    pub(crate) distinct_weight: f64,
    pub(crate) distinct_bytes_weight: f64,
    /// How the curve reconciles sampled weight with requests.
    pub(crate) adjustment: Adjustment,
}

impl ReuseTimeHistogram {
    fn empty() -> Self {
        Self::empty_with(TIME_SUB_BUCKET_BITS)
    }

    fn empty_with(time_sub_bucket_bits: u32) -> Self {
        Self {
            clock_ticks: 0,
            horizon_ticks: 0,
            requests: 0,
            reuse_times: LogHistogram::new(time_sub_bucket_bits),
            key_weighted_reuse_times: LogHistogram::new(time_sub_bucket_bits),
            first_access_times: LogHistogram::new(time_sub_bucket_bits),
            reverse_last_access_times: LogHistogram::new(time_sub_bucket_bits),
            access_weight: 0.0,
            access_sq_weight: 0.0,
            distinct_weight: 0.0,
            distinct_bytes_weight: 0.0,
            adjustment: Adjustment::default(),
        }
    }

    /// The same histogram, read with another [`Adjustment`].
    pub fn with_adjustment(mut self, adjustment: Adjustment) -> Self {
        self.adjustment = adjustment;
        self
    }

    /// Adds the histogram of another shard of the same partition. Shards must see comparable
    /// shares of the partition's traffic (keys spread by hash): times stay per-shard clock ticks,
    /// the clock is the longer of the two, and the curve's sizes are the whole partition's.
    pub fn merge(&mut self, other: &Self) {
        self.clock_ticks = self.clock_ticks.max(other.clock_ticks);
        self.horizon_ticks = self.horizon_ticks.max(other.horizon_ticks);
        self.requests += other.requests;
        self.reuse_times.merge(&other.reuse_times);
        self.key_weighted_reuse_times
            .merge(&other.key_weighted_reuse_times);
        self.access_sq_weight += other.access_sq_weight;
        self.first_access_times.merge(&other.first_access_times);
        self.reverse_last_access_times
            .merge(&other.reverse_last_access_times);
        self.access_weight += other.access_weight;
        self.distinct_weight += other.distinct_weight;
        self.distinct_bytes_weight += other.distinct_bytes_weight;
    }

    /// What was recorded between `earlier` and `self`, two snapshots of the same profiler (or of the
    /// same merge of shards), as a histogram of its own: the window's accesses by reuse time, its
    /// first-seen keys as cold accesses. Reuse times may reach back before the window, so a window
    /// shorter than the longest reuse still sees long reuses, up to `earlier`'s clock (the window's
    /// horizon, beyond which the AET curve continues the tail: `reuse_curve::TailExtension`). Valid
    /// for the AET curve, which needs only reuse times and cold accesses; the footprint's first and
    /// last access times have no meaning for a window, and the result keeps `self`'s.
    pub fn since(&self, earlier: &Self) -> Self {
        let mut window = self.clone();
        window.clock_ticks = self.clock_ticks.saturating_sub(earlier.clock_ticks);
        window.horizon_ticks = earlier.clock_ticks;
        window.requests = self.requests.saturating_sub(earlier.requests);
        window.reuse_times.subtract(&earlier.reuse_times);
        window
            .key_weighted_reuse_times
            .subtract(&earlier.key_weighted_reuse_times);
        window.access_weight = (self.access_weight - earlier.access_weight).max(0.0);
        window.access_sq_weight = (self.access_sq_weight - earlier.access_sq_weight).max(0.0);
        window.distinct_weight = (self.distinct_weight - earlier.distinct_weight).max(0.0);
        window.distinct_bytes_weight =
            (self.distinct_bytes_weight - earlier.distinct_bytes_weight).max(0.0);
        window
    }

    /// The same window without its horizon: its AET curve as observed, flat past the longest reuse
    /// it could show, rather than continued (`reuse_curve::TailExtension`).
    pub fn as_observed(mut self) -> Self {
        self.horizon_ticks = 0;
        self
    }

    /// Requests behind this histogram.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Estimated mean size of a distinct object, used to turn object curves into byte curves.
    pub fn mean_object_size_bytes(&self) -> f64 {
        if self.distinct_weight > 0.0 {
            self.distinct_bytes_weight / self.distinct_weight
        } else {
            0.0
        }
    }

    /// The footprint `fp(w)` of the trace behind this histogram (LAMA eq. 1), in the profiler's
    /// clock ticks (its own accesses) and weighted items. Exact where every key is sampled.
    pub fn footprint(&self) -> Footprint {
        reuse_curve::footprint(self)
    }

    /// Length `n` of the trace (the profiler's clock) the times were measured on.
    pub fn clock_ticks(&self) -> u64 {
        self.clock_ticks
    }

    /// The curve by `method` at the sizes `query` asks for. Byte curves scale the object curve
    /// by the mean distinct-object size.
    pub fn mrc(&self, method: ReuseTimeMethod, query: &MrcQuery) -> Mrc {
        match method {
            ReuseTimeMethod::Footprint => reuse_curve::footprint_mrc(self, query),
            ReuseTimeMethod::Aet => reuse_curve::aet_mrc(self, query),
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.reuse_times.memory_bytes()
            + self.first_access_times.memory_bytes()
            + self.reverse_last_access_times.memory_bytes()
    }
}

#[derive(Debug, Clone, Copy)]
struct KeyState {
    last_access_tick: u64,
    /// Accesses to the key since it was first sampled.
    accesses: u32,
}

/// Sampled reuse-time profiler with a bounded key table.
#[derive(Debug, Clone)]
pub struct ReuseTimeProfiler {
    method: ReuseTimeMethod,
    sampler: SpatialSampler,
    keys: KeyMap<KeyState>,
    /// Everything but the live keys' last accesses, which `histogram` adds on demand.
    recorded: ReuseTimeHistogram,
    /// Last access ticks of keys the fixed-size sampler dropped.
    retired_last_access_ticks: LogHistogram,
}

impl ReuseTimeProfiler {
    /// `method` is the conversion [`MrcProfiler::mrc`] uses; the histogram supports both.
    pub fn new(method: ReuseTimeMethod, config: SamplingConfig, seed: u64) -> Self {
        Self {
            method,
            sampler: SpatialSampler::new(config, seed),
            keys: KeyMap::default(),
            recorded: ReuseTimeHistogram::empty(),
            retired_last_access_ticks: LogHistogram::new(TIME_SUB_BUCKET_BITS),
        }
    }

    /// Buckets times `2^-bits` of their value wide instead of the default 2^-7 (0.8%). Coarser buckets
    /// hold less memory: each of the profiler's five time histograms has about
    /// `(log2(longest time) - bits + 1) * 2^bits` buckets of 16 bytes, so 4 bits (6% wide) stays under
    /// 8 KB per histogram for 32-bit times where 7 bits needs about 52 KB. Call before recording.
    pub fn with_time_resolution(mut self, sub_bucket_bits: u32) -> Self {
        assert_eq!(
            self.recorded.requests, 0,
            "set the resolution before recording"
        );
        let adjustment = self.recorded.adjustment;
        self.recorded = ReuseTimeHistogram::empty_with(sub_bucket_bits);
        self.recorded.adjustment = adjustment;
        self.retired_last_access_ticks = LogHistogram::new(sub_bucket_bits);
        self
    }

    /// Reads curves with `adjustment` instead of the default ([`Adjustment::Regression`]).
    pub fn with_adjustment(mut self, adjustment: Adjustment) -> Self {
        self.recorded.adjustment = adjustment;
        self
    }

    /// A snapshot of the statistics so far, with every datum's reverse last access time.
    pub fn histogram(&self) -> ReuseTimeHistogram {
        let mut snapshot = self.recorded.clone();
        let end = snapshot.clock_ticks + 1;
        let live_weight = 1.0 / self.sampler.rate();
        for state in self.keys.values() {
            snapshot
                .reverse_last_access_times
                .add(end - state.last_access_tick, live_weight);
        }
        for index in 0..self.retired_last_access_ticks.bucket_count() {
            let weight = self.retired_last_access_ticks.weight(index);
            if weight > 0.0 {
                let mean_tick = self.retired_last_access_ticks.value_sum(index) / weight;
                let reverse = (end as f64 - mean_tick).round().max(1.0) as u64;
                snapshot.reverse_last_access_times.add(reverse, weight);
            }
        }
        snapshot
    }

    /// Keys currently tracked.
    pub fn tracked_keys(&self) -> usize {
        self.keys.len()
    }

    /// Stops tracking the key of mixed hash `evicted`, keeping its last access as a retired one of
    /// `weight` (the inverse of the rate at which it was sampled).
    fn retire(&mut self, evicted: u64, weight: f64) {
        if let Some(state) = self.keys.remove(&evicted) {
            self.retired_last_access_ticks
                .add(state.last_access_tick, weight);
        }
    }

    /// Lowers a fixed-size profiler's key bound to `max_keys`; the keys over it leave by
    /// [`ReuseTimeProfiler::shrink`], a few at a time.
    pub fn lower_max_keys(&mut self, max_keys: usize) {
        self.sampler.lower_max_keys(max_keys);
    }

    /// Retires at most `steps` keys over the bound (the sampler's largest, lowering its rate as it
    /// does on admission); returns whether the profiler is within its bound. Once it is, the key
    /// table's spare capacity is released, so its memory follows the bound down.
    pub fn shrink(&mut self, steps: usize) -> bool {
        for _ in 0..steps {
            let weight = 1.0 / self.sampler.rate();
            let Some(evicted) = self.sampler.evict_over_bound() else {
                self.keys.shrink_to_fit();
                return true;
            };
            self.retire(evicted, weight);
        }
        false
    }
}

impl AccessObserver for ReuseTimeProfiler {
    #[inline]
    fn record(&mut self, key_hash: u64, size_bytes: u32) {
        self.recorded.clock_ticks += 1;
        self.recorded.requests += 1;
        let Some(mixed) = self.sampler.sample(key_hash) else {
            return;
        };
        let now = self.recorded.clock_ticks;
        let rate = self.sampler.rate();
        let weight = 1.0 / rate;
        let recorded = &mut self.recorded;
        recorded.access_weight += weight;
        if let Some(state) = self.keys.get_mut(&mixed) {
            let reuse_time = now - state.last_access_tick;
            state.accesses = state.accesses.saturating_add(1);
            let n = f64::from(state.accesses);
            recorded.reuse_times.add(reuse_time, weight);
            recorded
                .key_weighted_reuse_times
                .add(reuse_time, weight * 2.0 * (n - 1.0));
            recorded.access_sq_weight += weight * (2.0 * n - 1.0);
            state.last_access_tick = now;
            return;
        }
        recorded.access_sq_weight += weight;
        recorded.first_access_times.add(now, weight);
        recorded.distinct_weight += weight;
        recorded.distinct_bytes_weight += weight * f64::from(size_bytes);
        self.keys.insert(
            mixed,
            KeyState {
                last_access_tick: now,
                accesses: 1,
            },
        );
        if let Some(evicted) = self.sampler.admit(mixed) {
            self.retire(evicted, weight);
        }
    }
}

impl MrcProfiler for ReuseTimeProfiler {
    fn mrc(&self, query: &MrcQuery) -> Mrc {
        self.histogram().mrc(self.method, query)
    }

    fn memory_bytes(&self) -> usize {
        key_map_memory_bytes(&self.keys)
            + self.recorded.memory_bytes()
            + self.retired_last_access_ticks.memory_bytes()
            + self.sampler.memory_bytes()
    }

    fn requests(&self) -> u64 {
        self.recorded.requests
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
    use crate::test_support::{miss_ratios, skewed_trace};

    const METHODS: [ReuseTimeMethod; 2] = [ReuseTimeMethod::Footprint, ReuseTimeMethod::Aet];

    fn full_rate(method: ReuseTimeMethod) -> ReuseTimeProfiler {
        ReuseTimeProfiler::new(method, SamplingConfig::FixedRate { rate: 1.0 }, 1)
    }

    fn ratios(profiler: &ReuseTimeProfiler, sizes: &[u64]) -> Vec<f64> {
        miss_ratios(&profiler.mrc(&MrcQuery::exactly(SizeUnit::Objects, sizes)))
    }

    #[test]
    fn a_window_since_a_snapshot_sees_only_the_new_pattern() {
        let mut profiler = full_rate(ReuseTimeMethod::Aet);
        for i in 0..30_000u64 {
            profiler.record(i % 3, 1);
        }
        let before = profiler.histogram();
        for i in 0..30_000u64 {
            profiler.record(1_000 + i % 100, 1);
        }
        let window = profiler.histogram().since(&before);
        assert_eq!(window.requests(), 30_000);
        let curve = miss_ratios(&window.mrc(
            ReuseTimeMethod::Aet,
            &MrcQuery::exactly(SizeUnit::Objects, &[3, 50, 100, 200]),
        ));
        // The whole run's curve would drop at 3 objects; the window's stays high until 100.
        assert!(curve[0] > 0.95 && curve[1] > 0.95, "{curve:?}");
        assert!(curve[2] < 0.05 && curve[3] < 0.05, "{curve:?}");
        let whole = ratios(&profiler, &[3, 50]);
        assert!(whole[0] < 0.6, "{whole:?}");
    }

    #[test]
    fn cyclic_trace_gives_the_step_curve() {
        for method in METHODS {
            let mut profiler = full_rate(method);
            for i in 0..30_000u64 {
                profiler.record(i % 3, 1);
            }
            let curve = ratios(&profiler, &[1, 2, 3, 10]);
            assert!(curve[0] > 0.99 && curve[1] > 0.99, "{method:?} {curve:?}");
            assert!(curve[2] < 0.01 && curve[3] < 0.01, "{method:?} {curve:?}");
        }
    }

    #[test]
    fn immediate_reuse_gives_a_flat_curve() {
        for method in METHODS {
            let mut profiler = full_rate(method);
            for key in 0..10_000u64 {
                profiler.record(key, 1);
                profiler.record(key, 1);
            }
            let curve = ratios(&profiler, &[1, 100, 10_000]);
            assert!(
                curve.iter().all(|r| (r - 0.5).abs() < 1e-9),
                "{method:?} {curve:?}"
            );
        }
    }

    #[test]
    fn sampled_curves_track_exact_lru() {
        let trace = skewed_trace(300_000, 5);
        let mut exact = ExactLru::new();
        let config = SamplingConfig::FixedRate { rate: 0.1 };
        let mut profilers = METHODS.map(|m| ReuseTimeProfiler::new(m, config, 11));
        let bounded = SamplingConfig::FixedSize {
            max_keys: 1000,
            initial_rate: 1.0,
        };
        let mut small = ReuseTimeProfiler::new(ReuseTimeMethod::Aet, bounded, 11);
        for &key in &trace {
            exact.record(key, 64);
            small.record(key, 64);
            profilers.iter_mut().for_each(|p| p.record(key, 64));
        }
        assert!(small.tracked_keys() <= 1000);
        for unit in [SizeUnit::Objects, SizeUnit::Bytes] {
            let query = MrcQuery::new(unit);
            let reference = exact.mrc(&query);
            for profiler in profilers.iter().chain([&small]) {
                let error = mean_absolute_error(&reference, &profiler.mrc(&query));
                // 10% fixed rate; the 1000-key bound ends near a 2% rate, hence a wider margin.
                let bound = if profiler.tracked_keys() <= 1000 {
                    0.05
                } else {
                    0.02
                };
                assert!(error < bound, "{:?} {unit:?}: {error}", profiler.method);
            }
        }
    }

    #[test]
    fn merged_shards_match_the_whole_partition() {
        let trace = skewed_trace(200_000, 8);
        let config = SamplingConfig::FixedRate { rate: 1.0 };
        let mut whole = ExactLru::new();
        let mut shards = [0, 1].map(|_| ReuseTimeProfiler::new(ReuseTimeMethod::Aet, config, 2));
        for &key in &trace {
            whole.record(key, 1);
            shards[(mix64(key) & 1) as usize].record(key, 1);
        }
        let mut merged = shards[0].histogram();
        merged.merge(&shards[1].histogram());
        assert_eq!(merged.requests(), whole.requests());
        // Per-shard clocks tick half as fast; the merge must still give whole-partition sizes.
        let query = MrcQuery::new(SizeUnit::Objects);
        let reference = whole.mrc(&query);
        for method in METHODS {
            let error = mean_absolute_error(&reference, &merged.mrc(method, &query));
            // Footprint's boundary terms use per-shard clocks, so its merge is the rougher one.
            let bound = if method == ReuseTimeMethod::Aet {
                0.02
            } else {
                0.04
            };
            assert!(error < bound, "{method:?}: {error}");
        }
    }

    #[test]
    fn adjustments_of_reuse_times_follow_the_shards_ones() {
        // Immediate reuse only: 0.5 at every size. The regression cancels the noise in the
        // number of sampled keys; SHARDS-adj keeps it; both give 0.5 unsampled.
        let trace: Vec<u64> = (0..20_000u64).flat_map(|k| [k, k]).collect();
        let config = SamplingConfig::FixedRate { rate: 0.01 };
        for seed in 0..5 {
            let mut profiler = ReuseTimeProfiler::new(ReuseTimeMethod::Aet, config, seed);
            trace.iter().for_each(|&key| profiler.record(key, 1));
            let histogram = profiler.histogram();
            let sampled_keys = histogram.distinct_weight * 0.01;
            for method in METHODS {
                let at = |adjustment| {
                    let query = MrcQuery::exactly(SizeUnit::Objects, &[1, 1000]);
                    let curve = histogram
                        .clone()
                        .with_adjustment(adjustment)
                        .mrc(method, &query);
                    curve
                        .points()
                        .iter()
                        .map(|p| p.miss_ratio)
                        .collect::<Vec<_>>()
                };
                for ratio in at(Adjustment::Regression) {
                    assert!(
                        (ratio - 0.5).abs() < 1e-9,
                        "{method:?} seed {seed}: {ratio}"
                    );
                }
                // SHARDS-adj: sampled keys over requests, k / (R N), k the sampled keys.
                let expected = sampled_keys / 0.01 / 40_000.0;
                for ratio in at(Adjustment::ShardsAdj) {
                    assert!(
                        (ratio - expected).abs() < 1e-9,
                        "{method:?}: {ratio} {expected}"
                    );
                }
            }
        }
    }
}
