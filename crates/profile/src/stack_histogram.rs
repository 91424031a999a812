//! Histograms of LRU stack depth, the common output of [`crate::ExactLru`] and
//! [`crate::ShardsProfiler`], and their conversion into curves.
//!
//! The depth of a reuse is the space an LRU cache needs for it to hit: in objects, the distinct
//! keys touched since the key's previous access plus the key itself; in bytes, their sizes plus
//! the key's own size. A request hits in a cache of size `c` iff its depth is at most `c`, so a
//! cold access never hits. Weights are accesses scaled by the inverse sampling rate at the time
//! they were recorded; the miss ratio is the weight of deeper-than-`c` and cold accesses over the
//! requests, with reuse weights rescaled by [`reuse_scale`].

use crate::histogram::LogHistogram;
use crate::mrc::{Mrc, MrcPoint, MrcQuery, SizeUnit};

/// How a sampled histogram reconciles its recorded access weight with the request count.
///
/// A spatial sample of keys records `S` accesses where `R * N` were expected (`N` requests,
/// rate `R`); the two differ mostly by whether a few hot keys fell in the sample. Every curve
/// point is an estimate of the misses `X(c) = sum_i x_i(c)` (key `i` misses `x_i(c)` times in a
/// cache of `c`, its cold miss included) from the sampled keys; the adjustments differ in how
/// they use the one total known exactly, the requests `N = sum_i a_i`:
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Adjustment {
    /// Regression (GREG) estimator `X^ - b (S / R - N)` with `b = sum x_i a_i / sum a_i^2`
    /// estimated from the sample: SHARDS-adj where the sampled misses are not tied to the
    /// access volume (large caches), the ratio estimator where they are proportional to it
    /// (small caches, or traces whose keys are all alike). `a_i x_i` is accumulated without
    /// knowing `a_i` in advance by weighting the `n`-th access of a key by `2 (n - 1)`, whose
    /// sum over a key's reuses is `a_i (a_i - 1)` and whose mean over a key's reuses is `a_i`.
    #[default]
    Regression,
    /// SHARDS-adj (Waldspurger et al., FAST'15): the difference between the expected and the
    /// recorded access weight is added to the first histogram bucket (the shortest depth or
    /// reuse time, a hit at every size), so a miss ratio is weighted misses over requests:
    /// the Horvitz-Thompson estimator `X^ / N` (the regression with `b = 0`).
    ShardsAdj,
    /// Estimated cold misses kept, sampled reuses rescaled to fill the rest of the requests
    /// (see [`reuse_scale`]); the estimator this crate used before.
    ScaleReuses,
    /// Plain SHARDS: weighted misses over the recorded access weight, `X^ / (S / R)` (ratio
    /// estimator).
    None,
}

/// The weighted sums a curve point is estimated from.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tally {
    /// `sum x_i / R` over sampled keys: misses at this size, cold ones included.
    pub(crate) misses: f64,
    /// `sum a_i x_i / R`, estimated (see [`Adjustment::Regression`]).
    pub(crate) key_weighted_misses: f64,
    /// Cold part of `misses` (sampled distinct keys, weighted).
    pub(crate) cold: f64,
    /// `S / R`: weight of all recorded accesses.
    pub(crate) access_weight: f64,
    /// `sum a_i^2 / R` over sampled keys.
    pub(crate) access_sq_weight: f64,
    /// `N`: requests, sampled or not.
    pub(crate) requests: u64,
}

impl Adjustment {
    /// The miss ratio that `tally` estimates.
    pub(crate) fn miss_ratio(self, tally: &Tally) -> f64 {
        if tally.requests == 0 || tally.access_weight <= 0.0 {
            return 1.0;
        }
        let requests = tally.requests as f64;
        match self {
            Self::ShardsAdj => tally.misses / requests,
            Self::None => tally.misses / tally.access_weight,
            Self::ScaleReuses => {
                let scale = reuse_scale(tally.requests, tally.cold, tally.access_weight);
                (tally.cold + scale * (tally.misses - tally.cold)) / requests
            }
            Self::Regression => {
                let slope = if tally.access_sq_weight > 0.0 {
                    (tally.key_weighted_misses / tally.access_sq_weight).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                (tally.misses - slope * (tally.access_weight - requests)) / requests
            }
        }
    }
}

/// Factor that scales sampled reuse weights so that estimated cold accesses plus reuses equal
/// the requests: the number of sampled keys (cold accesses) has a small relative variance, the
/// access volume of the few hot keys that happen to be sampled a large one, so the curve keeps
/// the estimated cold misses and the *shape* of the sampled reuses. Exactly 1 when unsampled.
pub(crate) fn reuse_scale(requests: u64, cold_weight: f64, access_weight: f64) -> f64 {
    let reuse_weight = access_weight - cold_weight;
    if reuse_weight <= 0.0 {
        return 1.0;
    }
    ((requests as f64 - cold_weight) / reuse_weight).max(0.0)
}

/// Weighted stack-depth histograms in objects and in bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct StackDistanceHistogram {
    object_depths: LogHistogram,
    byte_depths: LogHistogram,
    /// The same depths, each reuse weighted `2 (n - 1)` times its weight for the key's `n`-th
    /// access (see [`Adjustment::Regression`]).
    key_weighted_object_depths: LogHistogram,
    key_weighted_byte_depths: LogHistogram,
    /// `sum a_i^2` weighted: each key's `n`-th access adds `(2 n - 1)` times its weight.
    access_sq_weight: f64,
    /// Weight of all recorded accesses, cold ones included.
    access_weight: f64,
    /// Requests behind the histogram, sampled or not.
    requests: u64,
    /// Estimated distinct objects and their bytes (the working set at the largest size).
    distinct_objects: f64,
    distinct_bytes: f64,
    /// How the curve reconciles sampled weight with requests (irrelevant when exact).
    adjustment: Adjustment,
    /// Whether weights are sampled; exact histograms skip the regression's extra histograms.
    sampled: bool,
}

impl StackDistanceHistogram {
    pub(crate) fn new(object_sub_bucket_bits: u32, byte_sub_bucket_bits: u32) -> Self {
        Self {
            object_depths: LogHistogram::new(object_sub_bucket_bits),
            byte_depths: LogHistogram::new(byte_sub_bucket_bits),
            key_weighted_object_depths: LogHistogram::new(object_sub_bucket_bits),
            key_weighted_byte_depths: LogHistogram::new(byte_sub_bucket_bits),
            access_sq_weight: 0.0,
            access_weight: 0.0,
            requests: 0,
            distinct_objects: 0.0,
            distinct_bytes: 0.0,
            adjustment: Adjustment::default(),
            sampled: false,
        }
    }

    /// A histogram for a sampled profiler (keeps what [`Adjustment::Regression`] needs).
    pub(crate) fn sampled(object_sub_bucket_bits: u32, byte_sub_bucket_bits: u32) -> Self {
        Self {
            sampled: true,
            ..Self::new(object_sub_bucket_bits, byte_sub_bucket_bits)
        }
    }

    /// The same histogram, read with another [`Adjustment`].
    pub fn with_adjustment(mut self, adjustment: Adjustment) -> Self {
        self.adjustment = adjustment;
        self
    }

    pub(crate) fn set_adjustment(&mut self, adjustment: Adjustment) {
        self.adjustment = adjustment;
    }

    /// Counts one request, sampled or not.
    pub(crate) fn count_request(&mut self) {
        self.requests += 1;
    }

    pub(crate) fn record_cold(&mut self, weight: f64, size_bytes: u32) {
        self.access_weight += weight;
        self.access_sq_weight += weight;
        self.distinct_objects += weight;
        self.distinct_bytes += weight * f64::from(size_bytes);
    }

    /// Records a reuse at the given depths (already scaled to the whole key population), the
    /// key's `accesses`-th access (at least 2).
    pub(crate) fn record_reuse(
        &mut self,
        weight: f64,
        accesses: u32,
        object_depth: f64,
        byte_depth: f64,
    ) {
        let n = f64::from(accesses.max(2));
        self.access_weight += weight;
        self.access_sq_weight += weight * (2.0 * n - 1.0);
        let (object_depth, byte_depth) = (object_depth.round() as u64, byte_depth.round() as u64);
        self.object_depths.add(object_depth, weight);
        self.byte_depths.add(byte_depth, weight);
        if self.sampled {
            let pair_weight = weight * 2.0 * (n - 1.0);
            self.key_weighted_object_depths
                .add(object_depth, pair_weight);
            self.key_weighted_byte_depths.add(byte_depth, pair_weight);
        }
    }

    /// Corrects the working-set estimate when a key's size changed (exact mode only).
    pub(crate) fn adjust_distinct_bytes(&mut self, delta_bytes: f64) {
        self.distinct_bytes += delta_bytes;
    }

    /// Adds another histogram (another shard of the same partition) to this one.
    pub fn merge(&mut self, other: &Self) {
        self.object_depths.merge(&other.object_depths);
        self.byte_depths.merge(&other.byte_depths);
        self.key_weighted_object_depths
            .merge(&other.key_weighted_object_depths);
        self.key_weighted_byte_depths
            .merge(&other.key_weighted_byte_depths);
        self.access_sq_weight += other.access_sq_weight;
        self.access_weight += other.access_weight;
        self.requests += other.requests;
        self.distinct_objects += other.distinct_objects;
        self.distinct_bytes += other.distinct_bytes;
    }

    /// Weight of all recorded accesses (requests, for an exact profiler).
    pub fn access_weight(&self) -> f64 {
        self.access_weight
    }

    /// Estimated working-set size in `unit`.
    pub fn working_set(&self, unit: SizeUnit) -> f64 {
        match unit {
            SizeUnit::Objects => self.distinct_objects,
            SizeUnit::Bytes => self.distinct_bytes,
        }
    }

    /// The LRU miss-ratio curve at the sizes `query` asks for.
    pub fn mrc(&self, query: &MrcQuery) -> Mrc {
        let (depths, key_weighted) = match query.unit {
            SizeUnit::Objects => (&self.object_depths, &self.key_weighted_object_depths),
            SizeUnit::Bytes => (&self.byte_depths, &self.key_weighted_byte_depths),
        };
        let key_weighted_total = key_weighted.total_weight();
        let max_size = self.working_set(query.unit).round() as u64;
        let points = query
            .sizes(max_size)
            .into_iter()
            .map(|size| {
                let tally = Tally {
                    misses: self.access_weight - depths.weight_at_most(size as f64),
                    key_weighted_misses: self.access_weight + key_weighted_total
                        - key_weighted.weight_at_most(size as f64),
                    cold: self.distinct_objects,
                    access_weight: self.access_weight,
                    access_sq_weight: self.access_sq_weight,
                    requests: self.requests,
                };
                let miss_ratio = self.adjustment.miss_ratio(&tally);
                MrcPoint { size, miss_ratio }
            })
            .collect();
        Mrc::from_points(query.unit, points)
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.object_depths.memory_bytes()
            + self.byte_depths.memory_bytes()
            + self.key_weighted_object_depths.memory_bytes()
            + self.key_weighted_byte_depths.memory_bytes()
    }
}
