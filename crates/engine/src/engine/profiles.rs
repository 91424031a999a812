//! The online miss-ratio curves: each shard profiles its hash partition of every partition's keys;
//! merging the shards' reuse-time histogram yields the curve of the whole class (or pool).
//!
//! Invariants: a merged histogram reports the lowest sampling rate among the shards it came from;
//! shards are read one lock at a time.

use mrcache_profile::{Mrc, MrcQuery, ReuseTimeHistogram, ReuseTimeMethod};

use super::Engine;
use crate::geometry::ClassId;
use crate::layout::AnyShard;
use crate::shard::Part;

/// One class's online miss-ratio curve.
#[derive(Clone, Debug)]
pub struct ClassMrc {
    /// The class.
    pub class: ClassId,
    /// Uses of the class the profilers saw (hits and stores).
    pub requests: u64,
    /// The lowest current sampling rate among the shards' profilers of this class.
    pub sampling_rate: f64,
    /// Miss ratio against the class's size in items.
    pub curve: Mrc,
}

/// One class's reuse-time histogram, merged across shards.
#[derive(Clone, Debug)]
pub struct ClassHistogram {
    /// The class.
    pub class: ClassId,
    /// The lowest current sampling rate among the shards' profilers of this class.
    pub sampling_rate: f64,
    /// Reuse times of the class's sampled keys, over all shards (and pools).
    pub histogram: ReuseTimeHistogram,
}

impl Engine {
    /// The online miss-ratio curve of every profiled class (or of `class` only), in items, merged across
    /// shards (each shard profiles a hash partition of the keys; `ReuseTimeHistogram::merge` yields the
    /// whole class's curve). Evaluated at `query`'s sizes (in items).
    pub fn mrc(&self, class: Option<ClassId>, query: &MrcQuery) -> Vec<ClassMrc> {
        self.reuse_histograms(class)
            .into_iter()
            .map(|h| ClassMrc {
                class: h.class,
                requests: h.histogram.requests(),
                sampling_rate: h.sampling_rate,
                curve: h.histogram.mrc(ReuseTimeMethod::Aet, query),
            })
            .collect()
    }

    /// The reuse-time histogram of every profiled class (or of `class` only), merged across shards and
    /// tenant pools: what `mrc` draws its curves from. A policy that wants the curve of a window keeps the
    /// previous snapshot and takes `ReuseTimeHistogram::since`.
    pub fn reuse_histograms(&self, class: Option<ClassId>) -> Vec<ClassHistogram> {
        self.reuse_histograms_in(None, class)
    }

    /// As `reuse_histograms`, for the classes of one tenant pool (`Some(pool)`) or of all (`None`).
    pub fn reuse_histograms_in(
        &self,
        pool: Option<usize>,
        class: Option<ClassId>,
    ) -> Vec<ClassHistogram> {
        let classes: Vec<ClassId> = match class {
            Some(c) => vec![c],
            None => self.geometry.classes().map(|(c, _)| c).collect(),
        };
        let pools = match pool {
            Some(p) => p..p + 1,
            None => 0..self.globals.pools.len(),
        };
        let mut out = Vec::new();
        for c in classes {
            let parts: Vec<usize> = pools.clone().map(|p| Part::new(p, c).index()).collect();
            let merged = self.merge_histograms(|shard| {
                parts
                    .iter()
                    .filter_map(|&i| {
                        let h = shard.profilers().histogram(i)?;
                        Some((h, shard.profilers().sampling_rate(i).unwrap_or(1.0)))
                    })
                    .collect()
            });
            if let Some((histogram, sampling_rate)) = merged {
                out.push(ClassHistogram {
                    class: c,
                    sampling_rate,
                    histogram,
                });
            }
        }
        out
    }

    /// The reuse-time histogram of a whole tenant pool (all its classes, sizes in bytes), merged across
    /// shards, with the lowest sampling rate among them; `None` with a single pool (no pool profilers)
    /// or before the pool was used.
    pub fn pool_histogram(&self, pool: usize) -> Option<(ReuseTimeHistogram, f64)> {
        self.merge_histograms(|shard| shard.pool_histogram(pool).into_iter().collect())
    }

    /// Merges what `pick` takes from each shard (histograms and their sampling rates), one shard lock
    /// at a time; the rate is the lowest seen.
    fn merge_histograms(
        &self,
        pick: impl Fn(&AnyShard) -> Vec<(ReuseTimeHistogram, f64)>,
    ) -> Option<(ReuseTimeHistogram, f64)> {
        let mut merged: Option<ReuseTimeHistogram> = None;
        let mut rate = 1.0f64;
        for shard in self.shards.iter() {
            for (h, r) in pick(&shard.lock()) {
                rate = rate.min(r);
                match &mut merged {
                    Some(m) => m.merge(&h),
                    None => merged = Some(h),
                }
            }
        }
        merged.map(|m| (m, rate))
    }
}
