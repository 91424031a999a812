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
    /// Weight of all recorded accesses, cold ones included.
    access_weight: f64,
    /// Requests behind the histogram, sampled or not.
    requests: u64,
    /// Estimated distinct objects and their bytes (the working set at the largest size).
    distinct_objects: f64,
    distinct_bytes: f64,
}

impl StackDistanceHistogram {
    pub(crate) fn new(object_sub_bucket_bits: u32, byte_sub_bucket_bits: u32) -> Self {
        Self {
            object_depths: LogHistogram::new(object_sub_bucket_bits),
            byte_depths: LogHistogram::new(byte_sub_bucket_bits),
            access_weight: 0.0,
            requests: 0,
            distinct_objects: 0.0,
            distinct_bytes: 0.0,
        }
    }

    /// Counts one request, sampled or not.
    pub(crate) fn count_request(&mut self) {
        self.requests += 1;
    }

    pub(crate) fn record_cold(&mut self, weight: f64, size_bytes: u32) {
        self.access_weight += weight;
        self.distinct_objects += weight;
        self.distinct_bytes += weight * f64::from(size_bytes);
    }

    /// Records a reuse at the given depths (already scaled to the whole key population).
    pub(crate) fn record_reuse(&mut self, weight: f64, object_depth: f64, byte_depth: f64) {
        self.access_weight += weight;
        self.object_depths.add(object_depth.round() as u64, weight);
        self.byte_depths.add(byte_depth.round() as u64, weight);
    }

    /// Corrects the working-set estimate when a key's size changed (exact mode only).
    pub(crate) fn adjust_distinct_bytes(&mut self, delta_bytes: f64) {
        self.distinct_bytes += delta_bytes;
    }

    /// Adds another histogram (another shard of the same partition) to this one.
    pub fn merge(&mut self, other: &Self) {
        self.object_depths.merge(&other.object_depths);
        self.byte_depths.merge(&other.byte_depths);
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
        let depths = match query.unit {
            SizeUnit::Objects => &self.object_depths,
            SizeUnit::Bytes => &self.byte_depths,
        };
        let max_size = self.working_set(query.unit).round() as u64;
        let reuse_scale = reuse_scale(self.requests, self.distinct_objects, self.access_weight);
        let points = query
            .sizes(max_size)
            .into_iter()
            .map(|size| {
                let miss_ratio = match self.requests {
                    0 => 1.0,
                    requests => {
                        1.0 - depths.weight_at_most(size as f64) * reuse_scale / requests as f64
                    }
                };
                MrcPoint { size, miss_ratio }
            })
            .collect();
        Mrc::from_points(query.unit, points)
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.object_depths.memory_bytes() + self.byte_depths.memory_bytes()
    }
}
