//! What a log shard reports and the bounded maintenance it does: the one-class snapshot `stats slabs`
//! shows, idle bytes for the idle-memory tax, the reaper, shrinking after `cache_memlimit`, the warm
//! restart walk and restore, and the invariant checker.
//!
//! Invariants: `reap` inspects at most `max_items` records per call, resuming where it stopped;
//! `shrink_to_budget` frees at most `max_pages` segments; `walk_live` inspects at most `max_chunks`
//! records per call; `check_invariants` is O(records) and for tests only.

use super::{prefix_len, read_prefix, LogShard, LOG_CLASS};
use crate::item::bits;
use crate::shard::{hash_key, AllocError, Violation, WalkPosition};
use crate::stats::{ClassCounters, ClassSnapshot};
use crate::tenant::Key;
use crate::{Clock, SavedItem};

impl LogShard {
    /// The log as one class (class 1), of one pool or of all (`None`): its pages are the segments, its
    /// chunk the mean record (so `chunks_per_page` is the items a segment holds on average, which is
    /// what an arbiter converts a curve in items to pages with), its used chunks the items.
    pub(crate) fn snapshot(&self, clock: Clock, pool: Option<usize>) -> Vec<ClassSnapshot> {
        let pools = match pool {
            Some(p) => p..p + 1,
            None => 0..self.pools.len(),
        };
        let (items, live, segments) = pools.clone().fold((0, 0, 0), |(i, l, s), p| {
            let pl = &self.pools[p];
            (i + pl.items, l + pl.live_bytes, s + self.segments_of(p))
        });
        let chunk_size_bytes = (live as usize)
            .checked_div(items)
            .map_or(self.seg_bytes, |mean| mean.max(1));
        let chunks_per_page = (self.seg_bytes / chunk_size_bytes).max(1);
        let mut snap = ClassSnapshot {
            class: LOG_CLASS,
            chunk_size_bytes,
            chunks_per_page,
            total_pages: segments,
            used_chunks: items,
            free_chunks: (segments * chunks_per_page).saturating_sub(items),
            items: 0,
            requested_bytes: 0,
            tail_age_secs: 0,
            counters: ClassCounters::default(),
        };
        for p in pools {
            let pl = &self.pools[p];
            snap.items += pl.items;
            snap.requested_bytes += pl.requested_bytes;
            snap.tail_age_secs = snap.tail_age_secs.max(
                self.oldest_atime(p)
                    .map_or(0, |a| clock.now.saturating_sub(a)),
            );
            snap.counters.add(&pl.counters);
        }
        vec![snap]
    }

    /// The access time of the first live item of `pool`'s oldest segments (memcached's `age`).
    fn oldest_atime(&self, pool: usize) -> Option<u32> {
        self.slots_of(pool)
            .flat_map(|slot| self.records(slot))
            .map(|(h, _)| self.item(h))
            .find(|it| it.has(bits::LINKED))
            .map(|it| it.atime())
    }

    /// The segments that hold `pool`'s records, oldest first: the inputs and outputs of a pass over
    /// it, its full queue, its head.
    fn slots_of(&self, pool: usize) -> impl Iterator<Item = u32> + '_ {
        let pass = self.pass.as_ref().filter(|p| p.victim() == pool);
        let (inputs, outputs) = pass.map_or((&[][..], &[][..]), |p| p.segments());
        let pl = &self.pools[pool];
        (inputs.iter().chain(outputs))
            .chain(&pl.probation)
            .chain(&pl.full)
            .chain(&pl.tail)
            .chain(&pl.head)
            .chain(&pl.probation_head)
            .copied()
    }

    /// The records of segment `slot`: handle and record bytes, front to back.
    fn records(&self, slot: u32) -> impl Iterator<Item = (u32, usize)> + '_ {
        let seg = self.seg(slot as usize);
        let mut off = 0;
        std::iter::from_fn(move || {
            if off >= seg.used {
                return None;
            }
            let rec = prefix_len(read_prefix(&seg.mem, off));
            let h = self.handle(slot, off);
            off += rec;
            Some((h, rec))
        })
    }

    /// `(idle, all)` bytes of `pool` here: all its items' bytes, and those of items not accessed within
    /// `idle_secs`, found among at most `max_items` records of its oldest segments.
    pub(crate) fn idle_bytes(
        &self,
        pool: usize,
        idle_secs: u32,
        clock: Clock,
        max_items: usize,
    ) -> (u64, u64) {
        let pl = &self.pools[pool];
        let mut idle = 0u64;
        let mut budget = max_items;
        for slot in self.slots_of(pool) {
            for (h, _) in self.records(slot) {
                if budget == 0 {
                    return (idle, pl.requested_bytes);
                }
                budget -= 1;
                let it = self.item(h);
                if it.has(bits::LINKED) && clock.now.saturating_sub(it.atime()) >= idle_secs {
                    idle += self.accounted(it) as u64;
                }
            }
        }
        (idle, pl.requested_bytes)
    }

    pub(crate) fn reset_counters(&mut self) {
        self.meters.reset_counters();
        for p in &mut self.pools {
            p.counters = ClassCounters::default();
        }
    }

    /// Unlinks expired and flushed items, inspecting at most `max_items` records from where the last
    /// call stopped (segment slots in order, wrapping). Returns how many it removed.
    pub(crate) fn reap(&mut self, clock: Clock, max_items: usize) -> usize {
        let mut reaped = 0;
        let (mut slot, mut off) = self.reap_at;
        // Every record inspected and every segment slot passed costs one unit: bounded work.
        let mut budget = max_items;
        while budget > 0 && !self.segs.is_empty() {
            budget -= 1;
            if slot as usize >= self.segs.len() {
                (slot, off) = (0, 0);
            }
            let used = self.segs[slot as usize].as_ref().map_or(0, |s| s.used);
            if off >= used {
                (slot, off) = (slot + 1, 0);
                continue;
            }
            let h = self.handle(slot, off);
            off += prefix_len(read_prefix(&self.seg(slot as usize).mem, off));
            if self.item(h).has(bits::LINKED) && self.is_dead(h, clock) {
                self.unlink(h, hash_key(self.item(h).tenant_key()));
                reaped += 1;
            }
        }
        self.reap_at = (slot, off);
        self.meters.counters.expired_reaped += reaped as u64;
        reaped
    }

    /// Frees segments while the engine is over its limit (after `cache_memlimit` lowered it): a
    /// cleaning pass of the pool holding the most, its freed segment given back. At most `max_pages`.
    pub(crate) fn shrink_to_budget(&mut self, max_pages: usize, clock: Clock) -> usize {
        let mut given = 0;
        if max_pages > 0 && self.globals.budget.over_limit() {
            // The pass under way first: its segment is the cheapest to free.
            if let Some((victim, slot)) = self.finish(clock) {
                self.release(slot, victim);
                given += 1;
            }
        }
        while given < max_pages && self.globals.budget.over_limit() {
            let Some(victim) = (0..self.pools.len())
                .filter(|&p| self.cleanable(p))
                .max_by_key(|&p| self.segments_of(p))
            else {
                break;
            };
            let Some(slot) = self.clean(victim, clock) else {
                break;
            };
            self.release(slot, victim);
            given += 1;
        }
        given
    }

    /// Calls `f` on each live item from `from` (segment slot, byte offset) on, inspecting at most
    /// `max_chunks` records. Returns where to resume, or `None` when the last segment is done.
    pub(crate) fn walk_live(
        &self,
        from: WalkPosition,
        max_chunks: usize,
        clock: Clock,
        mut f: impl FnMut(&SavedItem<'_>),
    ) -> Option<WalkPosition> {
        let mut at = from;
        let mut budget = max_chunks.max(1);
        while (at.slot as usize) < self.segs.len() {
            let used = self.segs[at.slot as usize].as_ref().map_or(0, |s| s.used);
            while (at.chunk as usize) < used {
                if budget == 0 {
                    return Some(at);
                }
                budget -= 1;
                let off = at.chunk as usize;
                let h = self.handle(at.slot, off);
                at.chunk += prefix_len(read_prefix(&self.seg(at.slot as usize).mem, off)) as u32;
                let it = self.item(h);
                if !it.has(bits::LINKED) || self.is_dead(h, clock) {
                    continue;
                }
                f(&SavedItem::of(it));
            }
            at = WalkPosition {
                slot: at.slot + 1,
                chunk: 0,
            };
        }
        None
    }

    /// Stores a saved item with its CAS, times and marks, replacing any item of its key; not a request,
    /// so not profiled.
    pub(crate) fn restore(
        &mut self,
        item: &SavedItem<'_>,
        hash: u64,
        clock: Clock,
    ) -> Result<(), AllocError> {
        let h = self.place(
            item.key,
            hash,
            item.client_flags,
            item.value.len(),
            true,
            clock,
        )?;
        item.write_to(self.item_mut(h));
        self.link_written(hash, h, item.cas);
        Ok(())
    }

    /// Walks every segment and checks the module invariants; returns the segments each pool holds here.
    pub(crate) fn check_invariants(&self) -> Result<Vec<usize>, Violation> {
        let bad = |what: String| Err(Violation::Log(what));
        let mut held = vec![0usize; self.pools.len()];
        let mut linked = 0usize;
        let mut pool_items = vec![0usize; self.pools.len()];
        let mut pool_live = vec![0u64; self.pools.len()];
        let mut owners = vec![None; self.segs.len()];
        for (p, held) in held.iter_mut().enumerate() {
            for slot in self.slots_of(p) {
                if owners[slot as usize].replace(p).is_some() {
                    return bad(format!("segment {slot} listed twice"));
                }
            }
            *held = self.segments_of(p);
        }
        for (slot, seg) in self.segs.iter().enumerate() {
            let Some(seg) = seg else {
                if !self.free_slots.contains(&(slot as u32)) {
                    return bad(format!("empty slot {slot} not free"));
                }
                continue;
            };
            if self.spares.contains(&(slot as u32)) {
                if owners[slot].is_some() || seg.used != 0 || seg.items != 0 {
                    return bad(format!("spare segment {slot} in use"));
                }
                continue;
            }
            let cleaning = self
                .pass
                .as_ref()
                .is_some_and(|p| p.segments().0.contains(&(slot as u32)));
            if seg.cleaning != cleaning {
                return bad(format!("segment {slot}: marked cleaning {}", seg.cleaning));
            }
            if owners[slot] != Some(seg.pool) {
                return bad(format!(
                    "segment {slot} of pool {} not listed by it",
                    seg.pool
                ));
            }
            let (mut items, mut live, mut end) = (0usize, 0usize, 0usize);
            for (h, rec) in self.records(slot as u32) {
                end += rec;
                if rec == 0 || end > self.seg_bytes {
                    return bad(format!("segment {slot}: bad record at {h:#x}"));
                }
                let it = self.item(h);
                if super::record_bytes(it.key_len(), it.value_len()) > rec {
                    return bad(format!("item {h:#x} overruns its record"));
                }
                if !it.has(bits::LINKED) {
                    continue;
                }
                items += 1;
                live += rec;
                let key: Key<'_> = it.tenant_key();
                if self.index_find(key, hash_key(key)) != Some(h) {
                    return bad(format!("live item {h:#x} not indexed at its place"));
                }
            }
            if end != seg.used || items != seg.items || live != seg.live {
                return bad(format!(
                    "segment {slot}: records end {end}/{}, items {items}/{}, live {live}/{}",
                    seg.used, seg.items, seg.live
                ));
            }
            linked += items;
            pool_items[seg.pool] += items;
            pool_live[seg.pool] += live as u64;
        }
        for (p, pl) in self.pools.iter().enumerate() {
            if pl.items != pool_items[p] || pl.live_bytes != pool_live[p] {
                return bad(format!(
                    "pool {p}: items or live bytes disagree with its segments"
                ));
            }
        }
        self.meters.check_linked(linked, self.index.len())?;
        Ok(held)
    }
}
