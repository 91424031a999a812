//! Reuse-time histogram → miss-ratio curve, by footprint (LAMA eq. 1-2) and by AET (mPart
//! eq. 2.2-2.3).
//!
//! Both work on the log-linear buckets of [`ReuseTimeHistogram`]: quantities are exact at bucket
//! boundaries and interpolated linearly inside a bucket (times below 128 have their own bucket,
//! so short reuses are exact). Sampled weights are reconciled with the request count by the
//! histogram's [`crate::Adjustment`] (the regression estimator by default).
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

/// Miss-ratio curve by the footprint theory.
pub(crate) fn footprint_mrc(histogram: &ReuseTimeHistogram, query: &MrcQuery) -> Mrc {
    if histogram.access_weight <= 0.0 {
        return Mrc::from_points(query.unit, Vec::new());
    }
    let n = histogram.clock_ticks as f64;
    let buckets = histogram
        .reuse_times
        .bucket_count()
        .max(histogram.first_access_times.bucket_count())
        .max(histogram.reverse_last_access_times.bucket_count());
    let reuse = Suffix::new(&histogram.reuse_times, buckets);
    let first = Suffix::new(&histogram.first_access_times, buckets);
    let last = Suffix::new(&histogram.reverse_last_access_times, buckets);
    let distinct = histogram.distinct_weight;
    let times = &histogram.reuse_times;

    // footprints[k] = fp(low_k - 1), for k = 1..=buckets (bucket 0 holds time 0, unused).
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
    let ge = |k: usize| if k <= 1 { 1.0 } else { tail(k) };
    let mut objects = vec![0.0; buckets + 1];
    for k in 1..buckets {
        let width = times.bucket_width(k) as f64;
        let (low, next) = (ge(k), ge(k + 1));
        let area = width * low + (next - low) * (width - 1.0) / 2.0;
        objects[k + 1] = objects[k] + area * accesses_per_tick;
    }
    let cold_ratio = tail(buckets);
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
