//! The cleaner (Memshare §3, Algorithm 1): which pool gives up memory (`victims`, by need), and one
//! cleaning pass over its oldest full segments (`clean`).
//!
//! A pass takes the `k` oldest full segments of the victim pool (`k = clean_segments`, fewer if it has
//! fewer), drops dead items (expired, flushed, overwritten), ranks the live ones by the pool's ranking
//! function, packs the highest ranked into `k - 1` segments and evicts the rest (into the pool's shadow
//! queue). Survivors are assembled in a scratch buffer, written back over the first `k - 1` input
//! segments, and the index is repointed; the last input segment comes out empty and is returned. The
//! rewritten segments rejoin the back of the pool's queue, so a survivor gets another whole round.
//!
//! Segments are owned by one pool, so Memshare's per-item choice by need reduces to choosing the victim
//! pool by need; its random half of the segment choice is replaced by taking the oldest segments,
//! which in a log are also the lowest ranked by LRU.
//!
//! Invariants: a pass copies at most `k - 1` segments of records and touches only the victim's input
//! segments; under `-M` it evicts nothing live (it gives up when the survivors would not fit); a pool
//! at or below its reserve is never a victim for another pool.

use super::{prefix_freq, prefix_len, read_prefix, LogShard, LEN_BITS};
use crate::config::Ranking;
use crate::item::bits;
use crate::pool::UNLIMITED;
use crate::shard::hash_key;
use crate::Clock;

/// A live record of a pass: where it is, its size, key hash, last access and access count.
struct Candidate {
    h: u32,
    rec: usize,
    hash: u64,
    atime: u32,
    freq: u32,
}

/// A candidate's rank in a pass: higher survives. Memshare's `rank(t, f)` of the last access time `t` and
/// the access count `f` for LRU, LFU and SLRU. `Density` is hits per byte, `(f + 1) / rec` for a record
/// of `rec` bytes (in units of 2^-32), except that an item unused for more than `STALE_LIFETIMES` of the
/// pool's cleaning cycles (`lifetime`: how long the pass's oldest input segment waited in the queue,
/// at least 1 s) ranks last: the size and the count decide among the items in use, and a small item
/// popular in a past phase, whose count has decayed to nothing, does not keep its place for its size.
fn rank(ranking: Ranking, c: &Candidate, lifetime: u32, now: u32) -> u64 {
    match ranking {
        Ranking::Lru => c.atime as u64,
        Ranking::Lfu => (c.freq as u64) << 32 | c.atime as u64,
        Ranking::Slru => u64::from(c.freq >= 1) << 32 | c.atime as u64,
        Ranking::Density if now.saturating_sub(c.atime) > STALE_LIFETIMES * lifetime.max(1) => 0,
        Ranking::Density => ((c.freq as u64 + 1) << 32) / c.rec as u64,
    }
}

/// Cleaning cycles without a use after which `Density` ranks an item last.
const STALE_LIFETIMES: u32 = 8;

impl LogShard {
    /// The pools that may give `pool` a segment, best first. A pool at its cap cleans only itself.
    /// With targets set (an arbiter runs), by need: target bytes over the bytes the pool holds here,
    /// lowest first (Memshare's `need`); a pool without a target never gives to another. Without
    /// targets, `pool` itself, then the others by the bytes they hold. Pools at or below their
    /// reserve never give to another.
    pub(super) fn victims(&self, pool: usize) -> Vec<usize> {
        let table = &self.globals.pools;
        let cleanable = |q: usize| !self.pools[q].full.is_empty();
        if !table.may_grow(pool) {
            return if cleanable(pool) {
                vec![pool]
            } else {
                Vec::new()
            };
        }
        let n = self.pools.len();
        let targets: Vec<usize> = (0..n).map(|q| table.snapshot(q).target).collect();
        let any_target = targets.iter().any(|&t| t != UNLIMITED);
        let mut order: Vec<(f64, usize)> = (0..n)
            .filter(|&q| cleanable(q) && (q == pool || table.above_reserve(q) > 0))
            .map(|q| {
                let live = self.pools[q].live_bytes.max(1) as f64;
                let key = if any_target {
                    match targets[q] {
                        UNLIMITED if q == pool => f64::MAX,
                        UNLIMITED => f64::INFINITY,
                        t => (t as f64 * self.seg_bytes as f64 / self.shards as f64) / live,
                    }
                } else if q == pool {
                    f64::NEG_INFINITY
                } else {
                    -live
                };
                (key, q)
            })
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1 != pool).cmp(&(b.1 != pool))));
        order
            .into_iter()
            .filter(|&(key, q)| q == pool || key.is_finite() || !any_target)
            .map(|(_, q)| q)
            .collect()
    }

    /// One cleaning pass over `victim`'s oldest full segments; returns the segment it emptied (still
    /// counted in `victim`), or `None` when it has none or, under `-M`, its survivors would not fit.
    pub(super) fn clean(&mut self, victim: usize, clock: Clock) -> Option<u32> {
        let k = self.clean_segments.min(self.pools[victim].full.len());
        if k == 0 {
            return None;
        }
        let inputs: Vec<u32> = self.pools[victim].full.iter().take(k).copied().collect();
        let ranking = self.pools[victim].ranking;
        let mut cands = Vec::new();
        for &slot in &inputs {
            let used = self.seg(slot as usize).used;
            let mut off = 0;
            while off < used {
                let p = read_prefix(&self.seg(slot as usize).mem, off);
                let h = self.handle(slot, off);
                let rec = prefix_len(p);
                off += rec;
                let it = self.item(h);
                if !it.has(bits::LINKED) {
                    continue;
                }
                let hash = hash_key(it.tenant_key());
                if self.is_dead(h, clock) {
                    let fetched = it.has(bits::FETCHED);
                    self.pools[victim].counters.count_reclaim(fetched);
                    self.unlink(h, hash);
                    continue;
                }
                cands.push(Candidate {
                    h,
                    rec,
                    hash,
                    atime: it.atime(),
                    freq: prefix_freq(p),
                });
            }
        }
        let lifetime = clock.now.saturating_sub(self.seg(inputs[0] as usize).born);
        // Plan: the highest ranked first (ties in the inputs' order), packed into k - 1 output segments:
        // each candidate's output segment and offset, or `None` to evict it.
        let mut order: Vec<(u64, u32)> = (cands.iter().enumerate())
            .map(|(i, c)| (rank(ranking, c, lifetime, clock.now), i as u32))
            .collect();
        order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let outs = k - 1;
        let mut used = vec![0usize; outs];
        let mut cur = 0;
        let mut dest: Vec<Option<(usize, usize)>> = vec![None; cands.len()];
        let mut evicting = 0;
        for &(_, i) in &order {
            let rec = cands[i as usize].rec;
            if outs > 0 && used[cur] + rec > self.seg_bytes && cur + 1 < outs {
                cur += 1;
            }
            if outs > 0 && used[cur] + rec <= self.seg_bytes {
                dest[i as usize] = Some((cur, used[cur]));
                used[cur] += rec;
            } else {
                evicting += 1;
            }
        }
        if !self.evict_when_full && evicting > 0 {
            return None;
        }
        // The plan is carried out in the inputs' order (the candidates'), so that the records are read
        // front to back, not in rank order.
        for (c, _) in cands.iter().zip(&dest).filter(|(_, d)| d.is_none()) {
            let (expiry, atime, fetched) = {
                let it = self.item(c.h);
                (it.expiry(), it.atime(), it.has(bits::FETCHED))
            };
            self.pools[victim]
                .counters
                .count_eviction(expiry, atime, fetched, clock.now);
            self.remember_evicted(c.h, c.hash);
            self.unlink(c.h, c.hash);
        }
        // Survivors are copied out, written back, then repointed (`KeyIndex::repoint` matches whole
        // entries, so new handles that equal old ones of survivors not yet repointed do no harm).
        let seg_bytes = self.seg_bytes;
        if self.scratch.len() < outs * seg_bytes {
            self.scratch.resize(outs * seg_bytes, 0);
        }
        let mut items = vec![0usize; outs];
        for (c, &(out, at)) in cands
            .iter()
            .zip(&dest)
            .filter_map(|(c, d)| Some((c, d.as_ref()?)))
        {
            items[out] += 1;
            let (slot, off) = self.split(c.h);
            let src = &self.segs[slot].as_ref().expect("input segment").mem[off..off + c.rec];
            let dst = &mut self.scratch[out * seg_bytes + at..out * seg_bytes + at + c.rec];
            dst.copy_from_slice(src);
            if matches!(ranking, Ranking::Lfu | Ranking::Density) {
                // Age the count: popularity that is not renewed fades.
                let p = u32::from_le_bytes(dst[..4].try_into().unwrap());
                let halved = (prefix_freq(p) / 2) << LEN_BITS | (p & ((1 << LEN_BITS) - 1));
                dst[..4].copy_from_slice(&halved.to_le_bytes());
            }
        }
        for out in 0..outs {
            let slot = inputs[out] as usize;
            let n = used[out];
            let scratch = &self.scratch[out * seg_bytes..out * seg_bytes + n];
            let seg = self.segs[slot].as_mut().expect("input segment");
            seg.mem[..n].copy_from_slice(scratch);
            seg.used = n;
            seg.live = n;
            seg.items = items[out];
            seg.born = clock.now;
        }
        for (c, &(out, at)) in cands
            .iter()
            .zip(&dest)
            .filter_map(|(c, d)| Some((c, d.as_ref()?)))
        {
            let new = self.handle(inputs[out], at);
            self.index.repoint(c.hash, c.h, new);
        }
        let freed = inputs[k - 1];
        {
            let seg = self.seg_mut(freed as usize);
            seg.used = 0;
            seg.live = 0;
            seg.items = 0;
        }
        self.pools[victim].full.drain(..k);
        // Lower-ranked outputs first, so they come up for cleaning first.
        for out in (0..outs).rev() {
            if used[out] > 0 {
                self.pools[victim].full.push_back(inputs[out]);
            } else {
                self.release(inputs[out], victim);
            }
        }
        self.cleaned_bytes += used.iter().sum::<usize>() as u64;
        self.clean_passes += 1;
        Some(freed)
    }
}
