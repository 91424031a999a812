//! Reuse-time histogram → miss-ratio curve, by footprint (LAMA eq. 1-2) and by AET (mPart
//! eq. 2.2-2.3).
//!
//! Both work on the log-linear buckets of [`ReuseTimeHistogram`]: quantities are exact at bucket
//! boundaries and interpolated linearly inside a bucket (times below 128 have their own bucket,
//! so short reuses are exact). Sampled weights are reconciled with the request count by the
//! histogram's [`crate::Adjustment`] (the regression estimator by default). A window's AET curve
//! continues the reuse-time tail past the window's horizon (`TailExtension`).
//! A reuse of time `t` has `t - 1` accesses strictly between its two accesses, so with footprint
//! it hits a cache of `x` objects iff `fp(t - 1) < x`; with AET it hits iff `t <= AET(x)`, where
//! the sum of `P(reuse time >= j)` over `j = 1..=AET(x)` equals `x`.

use crate::histogram::LogHistogram;
use crate::mrc::{Mrc, MrcPoint, MrcQuery, SizeUnit};
use crate::reuse_time::ReuseTimeHistogram;
use crate::stack_histogram::Tally;

/// Per-bucket suffix sums of weights and of `value * weight`: index `k` covers buckets `>= k`.
struct Suffix {
    weights: Vec<f64>,
    value_sums: Vec<f64>,
}

impl Suffix {
    fn new(histogram: &LogHistogram, buckets: usize) -> Self {
        let mut weights = vec![0.0; buckets + 1];
        let mut value_sums = vec![0.0; buckets + 1];
        for k in (0..buckets).rev() {
            weights[k] = weights[k + 1] + histogram.weight(k);
            value_sums[k] = value_sums[k + 1] + histogram.value_sum(k);
        }
        Self {
            weights,
            value_sums,
        }
    }

    /// `sum over values v > low_k - 1 of (v - w) * weight`, for `w = low_k - 1`.
    fn excess_over(&self, k: usize, w: f64) -> f64 {
        (self.value_sums[k] - w * self.weights[k]).max(0.0)
    }
}

/// Converts a byte size to objects by the mean object size; objects pass through.
fn size_in_objects(histogram: &ReuseTimeHistogram, unit: SizeUnit, size: u64) -> f64 {
    match unit {
        SizeUnit::Objects => size as f64,
        SizeUnit::Bytes => size as f64 / histogram.mean_object_size_bytes().max(1.0),
    }
}

/// Sizes to evaluate and the working set (distinct data, scaled to the requests) in `unit`.
fn query_sizes(histogram: &ReuseTimeHistogram, query: &MrcQuery) -> Vec<u64> {
    let distinct_objects = histogram.distinct_weight;
    let working_set = match query.unit {
        SizeUnit::Objects => distinct_objects,
        SizeUnit::Bytes => distinct_objects * histogram.mean_object_size_bytes(),
    };
    query.sizes(working_set.round() as u64)
}

/// LAMA eq. 1 at the reuse-time bucket boundaries: `footprints[k] = fp(low_k - 1)` for
/// `k = 1..=buckets`, made monotone by a running maximum; `footprints[buckets + 1]` is the
/// distinct data (every window at least as long as the trace). Index 0 is unused.
fn footprints(histogram: &ReuseTimeHistogram) -> Vec<f64> {
    let n = histogram.clock_ticks as f64;
    let buckets = footprint_buckets(histogram);
    let reuse = Suffix::new(&histogram.reuse_times, buckets);
    let first = Suffix::new(&histogram.first_access_times, buckets);
    let last = Suffix::new(&histogram.reverse_last_access_times, buckets);
    let distinct = histogram.distinct_weight;
    let times = &histogram.reuse_times;
    let mut footprints = vec![0.0; buckets + 2];
    let mut running_max = 0.0f64;
    for (k, footprint) in footprints.iter_mut().enumerate().take(buckets + 1).skip(1) {
        let w = (times.bucket_low(k) - 1) as f64;
        let value = if w >= n {
            distinct
        } else {
            // Unscaled: the footprint is estimated from whole sampled keys, whose first, last
            // and reuse intervals tile the trace, so the sums stay consistent with `distinct`.
            let excess = first.excess_over(k, w) + last.excess_over(k, w) + reuse.excess_over(k, w);
            distinct - excess / (n - w + 1.0)
        };
        running_max = running_max.max(value.clamp(0.0, distinct));
        *footprint = running_max;
    }
    footprints[buckets + 1] = distinct;
    footprints
}

/// Buckets the footprint is evaluated over: enough for the longest time of any of its inputs.
fn footprint_buckets(histogram: &ReuseTimeHistogram) -> usize {
    histogram
        .reuse_times
        .bucket_count()
        .max(histogram.first_access_times.bucket_count())
        .max(histogram.reverse_last_access_times.bucket_count())
}

/// The footprint function of the histogram's trace (see [`Footprint`]).
pub(crate) fn footprint(histogram: &ReuseTimeHistogram) -> Footprint {
    let distinct = histogram.distinct_weight;
    let mut points = vec![(0.0, 0.0)];
    if histogram.clock_ticks > 0 {
        let values = footprints(histogram);
        let buckets = values.len() - 2;
        let n = histogram.clock_ticks as f64;
        for (k, &items) in values.iter().enumerate().take(buckets + 1).skip(1) {
            let w = (histogram.reuse_times.bucket_low(k) - 1) as f64;
            if w > 0.0 && w < n {
                points.push((w, items));
            }
        }
        points.push((n, distinct));
    }
    Footprint { points, distinct }
}

/// `fp(w)`: the average number of distinct data in a window of `w` consecutive accesses of one
/// trace (LAMA eq. 1, Xiang et al.'s formula), as a monotone table.
///
/// Exact at the reuse-time histogram's bucket boundaries (times below 128, then every 0.8%),
/// read by linear interpolation between them; `fp(0) = 0`, and every window at least as long as
/// the trace holds all of its distinct data. Windows are counted in the trace's own accesses.
#[derive(Debug, Clone, PartialEq)]
pub struct Footprint {
    /// `(window, items)`, windows strictly increasing from 0, items non-decreasing.
    points: Vec<(f64, f64)>,
    distinct: f64,
}

impl Footprint {
    /// Average distinct data in a window of `window_accesses` accesses.
    pub fn at(&self, window_accesses: f64) -> f64 {
        if window_accesses <= 0.0 {
            return 0.0;
        }
        let after = self.points.partition_point(|&(w, _)| w <= window_accesses);
        if after >= self.points.len() {
            return self.distinct;
        }
        let (w0, fp0) = self.points[after - 1];
        let (w1, fp1) = self.points[after];
        fp0 + (fp1 - fp0) * (window_accesses - w0) / (w1 - w0)
    }

    /// Distinct data of the whole trace: the footprint of any window at least as long.
    pub fn distinct(&self) -> f64 {
        self.distinct
    }

    /// The table's `(window, items)` points, from `(0, 0)` to `(trace length, distinct)`.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }
}

/// Miss-ratio curve by the footprint theory.
pub(crate) fn footprint_mrc(histogram: &ReuseTimeHistogram, query: &MrcQuery) -> Mrc {
    if histogram.access_weight <= 0.0 {
        return Mrc::from_points(query.unit, Vec::new());
    }
    let buckets = footprint_buckets(histogram);
    let times = &histogram.reuse_times;
    let footprints = footprints(histogram);

    let key_weighted_total = histogram.key_weighted_reuse_times.total_weight();
    let points = query_sizes(histogram, query)
        .into_iter()
        .map(|size| {
            let x = size_in_objects(histogram, query.unit, size);
            // Last boundary k with fp(low_k - 1) < x: reuses up to bucket k - 1 all hit.
            // Weighted hits, and the same with reuses weighted by their key's accesses.
            let (hits, key_weighted_hits) =
                match footprints[1..=buckets].partition_point(|&fp| fp < x) {
                    0 => (0.0, 0.0),
                    count => {
                        let k = count; // footprints index of the last boundary below x
                        let boundary = (times.bucket_low(k) - 1) as f64;
                        let below = times.weight_at_most(boundary);
                        let key_weighted = &histogram.key_weighted_reuse_times;
                        let key_weighted_below = key_weighted.weight_at_most(boundary);
                        let (low_fp, high_fp) = (footprints[k], footprints[k + 1]);
                        let width = times.bucket_width(k) as f64;
                        let fraction = if high_fp > low_fp {
                            ((x - low_fp) / (high_fp - low_fp) * width)
                                .ceil()
                                .min(width)
                                / width
                        } else {
                            1.0
                        };
                        (
                            below + times.weight(k) * fraction,
                            key_weighted_below + key_weighted.weight(k) * fraction,
                        )
                    }
                };
            let tally = Tally {
                misses: histogram.access_weight - hits,
                key_weighted_misses: histogram.access_weight + key_weighted_total
                    - key_weighted_hits,
                cold: histogram.distinct_weight,
                access_weight: histogram.access_weight,
                access_sq_weight: histogram.access_sq_weight,
                requests: histogram.requests,
            };
            let miss_ratio = histogram.adjustment.miss_ratio(&tally);
            MrcPoint { size, miss_ratio }
        })
        .collect();
    Mrc::from_points(query.unit, points)
}

/// The continuation of a window's tail ends at this multiple of its horizon; beyond, the curve is flat.
const TAIL_EXTENSION_SPAN: u64 = 4;
/// The tail's slope is read over the reuse times from this fraction of the horizon up to it.
const TAIL_SLOPE_FROM: u64 = 4;
/// Windows whose horizon is shorter than this are not extended (too few reuse times to read a slope).
const MIN_HORIZON_TICKS: u64 = 1024;
/// Steepest slope the continuation takes (a survival function falling as `t^-2`).
const MAX_TAIL_EXPONENT: f64 = 2.0;

/// A continuation of a window's `P(reuse time >= t)` beyond its horizon, the profiler's age when the
/// window began.
///
/// A window's accesses show reuse times up to the profiler's age and no longer: an access whose key
/// the profiler has not seen is counted as cold, whether the key is new or was last used before the
/// profiler began. Up to the horizon the window's tail is exact; beyond, it is biased up, flat at the
/// cold share, so a large allocation looks worth nothing until the cache's history is as long as its
/// eviction time (ETC Zipf 0.9 at 256 MiB, 1/4 scale: class 1's window curve flat beyond 17 pages at 5M
/// requests, where the upper bound holds 23). Assuming the traffic stationary, the tail goes on as it
/// fell over the last two octaves before the horizon: `P(t) = P(h) (t / h)^-b`, `b` the log-log slope
/// between `h / 4` and `h`, up to four times the horizon and never above what the window shows. Cold
/// shares that do not fall (new keys, scans) give a flat slope and change nothing.
struct TailExtension {
    /// Buckets past this one take the lower of what the window shows and the continuation.
    first_bucket: usize,
    /// The continuation ends here; beyond, the curve is flat.
    last_bucket: usize,
    horizon: f64,
    at_horizon: f64,
    exponent: f64,
}

impl TailExtension {
    /// The continuation for a window whose observed tail is `observed(k) = P(reuse time >= low_k)`;
    /// `None` for a profiler's whole life (no horizon), a short window or a tail that does not fall.
    fn of(histogram: &ReuseTimeHistogram, observed: &dyn Fn(usize) -> f64) -> Option<Self> {
        let horizon = histogram.horizon_ticks;
        if horizon < MIN_HORIZON_TICKS {
            return None;
        }
        let times = &histogram.reuse_times;
        let first_bucket = times.bucket_of(horizon);
        let slope_bucket = times.bucket_of(horizon / TAIL_SLOPE_FROM);
        let (at_horizon, at_slope) = (observed(first_bucket), observed(slope_bucket));
        if at_horizon <= 0.0 || at_slope <= at_horizon {
            return None;
        }
        let (h, from) = (
            times.bucket_low(first_bucket) as f64,
            times.bucket_low(slope_bucket) as f64,
        );
        let exponent = ((at_slope / at_horizon).ln() / (h / from).ln()).min(MAX_TAIL_EXPONENT);
        Some(TailExtension {
            first_bucket,
            last_bucket: times.bucket_of(horizon.saturating_mul(TAIL_EXTENSION_SPAN)),
            horizon: h,
            at_horizon,
            exponent,
        })
    }

    /// `P(reuse time >= t)` by the continuation, for `t` past the horizon.
    fn at(&self, t: u64) -> f64 {
        self.at_horizon * (t as f64 / self.horizon).powf(-self.exponent)
    }
}

/// Miss-ratio curve by average eviction time.
pub(crate) fn aet_mrc(histogram: &ReuseTimeHistogram, query: &MrcQuery) -> Mrc {
    if histogram.access_weight <= 0.0 || histogram.clock_ticks == 0 {
        return Mrc::from_points(query.unit, Vec::new());
    }
    let times = &histogram.reuse_times;
    let buckets = times.bucket_count();
    let reuse = Suffix::new(times, buckets);
    let cold = histogram.distinct_weight;
    // Requests per clock tick: 1 for one profiler, about the shard count after a merge.
    let accesses_per_tick = histogram.requests as f64 / histogram.clock_ticks as f64;
    // ge[k] = P(reuse time >= low_k); objects[k] = sum over j = 1..low_k - 1 of P(time >= j).
    // Reuse times are at least 1, so P(time >= 1) = 1; beyond, the adjustment decides the
    // denominator (SHARDS-adj: the discrepancy is reuses of time 1, so it counts only here).
    let adjustment = histogram.adjustment;
    let key_weighted = Suffix::new(&histogram.key_weighted_reuse_times, buckets);
    // P(time >= low_k) from the weight of reuses at least that long (`k = buckets`: none).
    let tail = |k: usize| {
        let k = k.min(buckets);
        adjustment.miss_ratio(&Tally {
            misses: cold + reuse.weights[k],
            // A key's cold access counts as its one infinitely long reuse, weighted `a_i`.
            key_weighted_misses: histogram.access_weight + key_weighted.weights[k],
            cold,
            access_weight: histogram.access_weight,
            access_sq_weight: histogram.access_sq_weight,
            requests: histogram.requests,
        })
    };
    let observed = |k: usize| if k <= 1 { 1.0 } else { tail(k) };
    let extension = TailExtension::of(histogram, &observed);
    let buckets = extension
        .as_ref()
        .map_or(buckets, |e| buckets.max(e.last_bucket));
    let ge_values: Vec<f64> = (0..=buckets + 1)
        .map(|k| {
            let value = observed(k);
            match &extension {
                Some(e) if k > e.first_bucket => {
                    value.min(e.at(times.bucket_low(k.min(e.last_bucket))))
                }
                _ => value,
            }
        })
        .collect();
    let ge = |k: usize| ge_values[k.min(buckets + 1)];
    let mut objects = vec![0.0; buckets + 1];
    for k in 1..buckets {
        let width = times.bucket_width(k) as f64;
        let (low, next) = (ge(k), ge(k + 1));
        let area = width * low + (next - low) * (width - 1.0) / 2.0;
        objects[k + 1] = objects[k] + area * accesses_per_tick;
    }
    let cold_ratio = ge(buckets);
    let points = query_sizes(histogram, query)
        .into_iter()
        .map(|size| {
            let x = size_in_objects(histogram, query.unit, size);
            // First boundary whose cumulative object count reaches x.
            let reach = objects[1..].partition_point(|&filled| filled < x) + 1;
            let miss_ratio = if reach > buckets {
                cold_ratio
            } else {
                // AET(x) lies in bucket `reach - 1`.
                let k = (reach - 1).max(1);
                let width = times.bucket_width(k) as f64;
                let (low, next) = (ge(k), ge(k + 1));
                if width <= 1.0 {
                    next
                } else {
                    let area = objects[k + 1] - objects[k];
                    let fraction = if area > 0.0 {
                        (x - objects[k]) / area
                    } else {
                        1.0
                    };
                    low + (next - low) * ((fraction * width + 1.0) / width).min(1.0)
                }
            };
            MrcPoint { size, miss_ratio }
        })
        .collect();
    Mrc::from_points(query.unit, points)
}

#[cfg(test)]
mod tests {
    use crate::mrc::{MrcQuery, SizeUnit};
    use crate::test_support::{miss_ratios, skewed_trace};
    use crate::{AccessObserver, ExactLru, ReuseTimeMethod, ReuseTimeProfiler, SamplingConfig};

    /// A window of a stationary skewed trace whose reuse times outrun the profiler's age: accesses
    /// 20k–60k, horizon 20k (the slowest keys come back every ~150k accesses). The long-run curve is
    /// exact LRU over accesses 1.0M–1.1M of the same trace, a cache with a far longer history.
    #[test]
    fn a_windows_tail_goes_on_past_its_horizon_towards_the_long_run_curve() {
        let trace = skewed_trace(1_100_000, 11);
        let sizes: Vec<u64> = vec![2_000, 5_000, 10_000, 20_000, 30_000, 40_000];
        let config = SamplingConfig::FixedRate { rate: 1.0 };
        let mut profiler = ReuseTimeProfiler::new(ReuseTimeMethod::Aet, config, 5);
        let mut exact = ExactLru::new();
        let mut before = None;
        let mut window = None;
        let mut misses = vec![0u64; sizes.len()];
        for (i, &key) in trace.iter().enumerate() {
            match i {
                20_000 => before = Some(profiler.histogram()),
                60_000 => window = Some(profiler.histogram().since(before.as_ref().unwrap())),
                _ => {}
            }
            if i < 60_000 {
                profiler.record(key, 1);
            }
            let depth = exact.record_depth(key, 1);
            if i >= 1_000_000 {
                for (m, &x) in misses.iter_mut().zip(&sizes) {
                    *m += u64::from(depth.is_none_or(|d| d > x));
                }
            }
        }
        let window = window.unwrap();
        assert_eq!(window.horizon_ticks, 20_000);
        let query = MrcQuery::exactly(SizeUnit::Objects, &sizes);
        let extended = miss_ratios(&window.mrc(ReuseTimeMethod::Aet, &query));
        let flat = miss_ratios(
            &window
                .clone()
                .as_observed()
                .mrc(ReuseTimeMethod::Aet, &query),
        );
        let long_run: Vec<f64> = misses.iter().map(|&m| m as f64 / 100_000.0).collect();
        eprintln!("extended {extended:.4?}\nflat     {flat:.4?}\nlong run {long_run:.4?}");
        for i in 0..sizes.len() {
            assert!(extended[i] <= flat[i] + 1e-12, "size {}: raised", sizes[i]);
        }
        // Never further from the long-run curve, and where the window's eviction time is past its
        // horizon, closer: the continuation is cautious (four horizons at most, the slope of the last
        // two octaves), so at 40k objects it recovers a part of the gap, not all of it.
        for i in 0..sizes.len() {
            let (e, f) = (extended[i] - long_run[i], flat[i] - long_run[i]);
            assert!(e.abs() <= f.abs() + 1e-12, "size {}: further", sizes[i]);
        }
        let last = sizes.len() - 1;
        assert!(
            extended[last] - long_run[last] < 0.95 * (flat[last] - long_run[last]),
            "at {} objects: extended {} flat {} long run {}",
            sizes[last],
            extended[last],
            flat[last],
            long_run[last]
        );
        // A profiler's whole life has no horizon: nothing to extend.
        let whole = profiler.histogram();
        assert_eq!(whole.horizon_ticks, 0);
    }

    /// Keys that never come back (a scan) keep a cold share that does not fall: no continuation.
    #[test]
    fn a_tail_that_does_not_fall_is_not_extended() {
        let config = SamplingConfig::FixedRate { rate: 1.0 };
        let mut profiler = ReuseTimeProfiler::new(ReuseTimeMethod::Aet, config, 5);
        for key in 0..50_000u64 {
            profiler.record(key, 1);
        }
        let before = profiler.histogram();
        for key in 50_000..100_000u64 {
            profiler.record(key, 1);
        }
        let window = profiler.histogram().since(&before);
        let query = MrcQuery::exactly(SizeUnit::Objects, &[1_000, 100_000]);
        assert_eq!(
            miss_ratios(&window.mrc(ReuseTimeMethod::Aet, &query)),
            vec![1.0, 1.0]
        );
    }

    fn footprint_of(trace: &[u64]) -> super::Footprint {
        let config = SamplingConfig::FixedRate { rate: 1.0 };
        let mut profiler = ReuseTimeProfiler::new(ReuseTimeMethod::Footprint, config, 3);
        for &key in trace {
            profiler.record(key, 1);
        }
        profiler.histogram().footprint()
    }

    /// Distinct keys per window of `w`, averaged over all `n - w + 1` windows.
    fn brute_force(trace: &[u64], w: usize) -> f64 {
        let windows = trace.len() - w + 1;
        let total: usize = (0..windows)
            .map(|s| {
                let mut keys = trace[s..s + w].to_vec();
                keys.sort_unstable();
                keys.dedup();
                keys.len()
            })
            .sum();
        total as f64 / windows as f64
    }

    #[test]
    fn cyclic_trace_matches_lama_table_1() {
        let trace: Vec<u64> = (0..300).map(|i| i % 3).collect();
        let fp = footprint_of(&trace);
        for (w, expected) in [(0.0, 0.0), (1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (50.0, 3.0)] {
            assert!((fp.at(w) - expected).abs() < 1e-9, "fp({w}) = {}", fp.at(w));
        }
        assert_eq!(fp.distinct(), 3.0);
        assert_eq!(fp.at(1e9), 3.0);
    }

    #[test]
    fn equals_the_average_over_all_windows() {
        let trace = skewed_trace(2_000, 4);
        let fp = footprint_of(&trace);
        // Windows below 128 are exact bucket boundaries; longer ones are interpolated.
        for w in [1usize, 2, 7, 50, 127, 128] {
            let exact = brute_force(&trace, w);
            assert!(
                (fp.at(w as f64) - exact).abs() < 1e-6,
                "w {w}: {} vs {exact}",
                fp.at(w as f64)
            );
        }
        for w in [300usize, 1_000, 1_999, 2_000] {
            let exact = brute_force(&trace, w);
            let relative = (fp.at(w as f64) - exact).abs() / exact;
            assert!(relative < 2e-3, "w {w}: {} vs {exact}", fp.at(w as f64));
        }
        let points = fp.points();
        assert!(points
            .windows(2)
            .all(|p| p[0].0 < p[1].0 && p[0].1 <= p[1].1));
    }
}
