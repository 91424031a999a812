//! What a shard reports: its counters (global, per partition, per tenant), per-class snapshots of one
//! pool or of all, and the idle bytes a tenant arbiter asks about.
//!
//! Invariants: `stats reset` zeroes counters but not state: items, bytes and pages survive it. Reads
//! are bounded: `snapshot` is O(classes x pools), `idle_bytes` inspects at most `max_items` items per
//! partition.

use super::{Part, Shard, PART_STRIDE};
use crate::geometry::ClassId;
use crate::item::NIL;
use crate::stats::{ClassCounters, ClassSnapshot};
use crate::tenant::TenantId;
use crate::Clock;

impl Shard {
    #[inline]
    pub(crate) fn class_counters_mut(&mut self, part: Part) -> &mut ClassCounters {
        &mut self.part_state(part).counters
    }

    /// The partition a store of `tenant` in `class` goes to.
    #[inline]
    pub(crate) fn part_for(&self, tenant: TenantId, class: ClassId) -> Part {
        Part::new(self.globals.pools.pool_of(tenant), class)
    }

    /// Every class of this shard: of one pool, or summed over all pools (`None`).
    pub(crate) fn snapshot(&self, clock: Clock, pool: Option<usize>) -> Vec<ClassSnapshot> {
        let pools = match pool {
            Some(p) => p..p + 1,
            None => 0..self.globals.pools.len(),
        };
        self.geometry
            .classes()
            .map(|(id, g)| {
                let mut snap = ClassSnapshot {
                    class: id,
                    chunk_size_bytes: g.chunk_size_bytes,
                    chunks_per_page: g.chunks_per_page,
                    total_pages: 0,
                    used_chunks: 0,
                    free_chunks: 0,
                    items: 0,
                    requested_bytes: 0,
                    tail_age_secs: 0,
                    counters: ClassCounters::default(),
                };
                for p in pools.clone() {
                    let c = &self.parts[Part::new(p, id).index()];
                    let uncarved = c
                        .carve
                        .map_or(0, |(_, next)| g.chunks_per_page - next as usize);
                    let tail_age_secs = if c.lru_tail == NIL {
                        0
                    } else {
                        clock.now.saturating_sub(self.item(c.lru_tail).atime())
                    };
                    snap.absorb(&ClassSnapshot {
                        total_pages: c.pages.len(),
                        used_chunks: c.items,
                        free_chunks: c.free_chunks + uncarved,
                        items: c.items,
                        requested_bytes: c.requested_bytes,
                        tail_age_secs,
                        counters: c.counters.clone(),
                        ..snap
                    });
                }
                snap
            })
            .collect()
    }

    /// Bytes of `pool`'s items not accessed within `idle_secs` of `clock.now`, found by walking each of
    /// its LRUs from the tail; at most `max_items` items per partition are inspected. Returns
    /// `(idle bytes, all bytes)` of the pool in this shard.
    pub(crate) fn idle_bytes(
        &self,
        pool: usize,
        idle_secs: u32,
        clock: Clock,
        max_items: usize,
    ) -> (u64, u64) {
        let (mut idle, mut all) = (0u64, 0u64);
        let base = pool * PART_STRIDE;
        for c in &self.parts[base..base + PART_STRIDE] {
            all += c.requested_bytes;
            let mut h = c.lru_tail;
            for _ in 0..max_items {
                if h == NIL {
                    break;
                }
                let it = self.item(h);
                if clock.now.saturating_sub(it.atime()) < idle_secs {
                    break;
                }
                idle +=
                    self.geometry
                        .item_total_bytes(it.key_len(), it.client_flags(), it.value_len())
                        as u64;
                h = self.prev(h);
            }
        }
        (idle, all)
    }

    pub(crate) fn reset_counters(&mut self) {
        self.meters.reset_counters();
        for c in &mut self.parts {
            c.counters = ClassCounters::default();
        }
    }
}
