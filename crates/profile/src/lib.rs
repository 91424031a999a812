//! Miss-ratio-curve (MRC) profilers for mrcache, free of I/O and deterministic.
//!
//! The crate owns the per-access measurement of locality and its conversion to curves:
//!
//! * [`ExactLru`]: exact LRU stack distances (the reference, `O(log n)` per access).
//! * [`ShardsProfiler`]: SHARDS, stack distances of a spatially hashed sample of keys.
//! * [`ReuseTimeProfiler`]: a sampled [`ReuseTimeHistogram`], turned into a curve by the
//!   footprint theory (LAMA eq. 1-2) or by average eviction time (AET, mPart eq. 2.2-2.3); its
//!   [`Footprint`] `fp(w)` also predicts how demand fills memory (LAMA eq. 6).
//!
//! Every profiler is fed through the one narrow [`AccessObserver`] interface with the 64-bit
//! key hash the engine already computed, keeps memory bounded by its configuration, and reports
//! what it holds with [`MrcProfiler::memory_bytes`]. Curves are [`Mrc`] values in objects or in
//! bytes, evaluated where a [`MrcQuery`] asks.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod exact;
mod fenwick;
mod histogram;
mod keymap;
mod mrc;
mod reuse_curve;
mod reuse_time;
mod sampler;
mod shards;
mod stack;
mod stack_histogram;
#[cfg(test)]
mod test_support;

pub use exact::ExactLru;
pub use keymap::{KeyHasher, KeyMap};
pub use mrc::{mean_absolute_error, Mrc, MrcPoint, MrcQuery, SizeUnit};
pub use reuse_curve::Footprint;
pub use reuse_time::{ReuseTimeHistogram, ReuseTimeMethod, ReuseTimeProfiler};
pub use sampler::{SamplingConfig, SpatialSampler};
pub use shards::ShardsProfiler;
pub use stack_histogram::{Adjustment, StackDistanceHistogram};

/// The per-access input of every profiler: the engine calls it once per request of the partition
/// the profiler watches.
///
/// `key_hash` is a well-mixed 64-bit hash of the key (the engine's xxh3); profilers treat two
/// accesses with equal hashes as the same key. `size_bytes` is the object's size at this access
/// (key plus value as the engine counts it); key-only traces pass a constant.
pub trait AccessObserver {
    /// Records one access. Must be cheap when the key is not sampled.
    fn record(&mut self, key_hash: u64, size_bytes: u32);
}

/// A profiler that can turn what it observed into a miss-ratio curve.
pub trait MrcProfiler: AccessObserver {
    /// The curve of the accesses recorded so far, evaluated at the sizes `query` asks for.
    fn mrc(&self, query: &MrcQuery) -> Mrc;
    /// Heap bytes held by the profiler's data structures (capacity, not length).
    fn memory_bytes(&self) -> usize;
    /// Accesses recorded so far, sampled or not.
    fn requests(&self) -> u64;
    /// The current sampling rate in (0, 1]; 1 for exact profilers.
    fn sampling_rate(&self) -> f64;
}
