//! Appending: a record goes to the end of its pool's head segment; a full head joins the pool's full
//! queue and a new head comes from, in order, the page budget (while memory is free and the pool is
//! below its cap), the cleaner (a segment freed from the pool of lowest need), or, for a pool that holds
//! no segment in this shard at all, one page over the limit (as the slab layout gives a first page).
//!
//! Invariants: a segment is taken from the budget only here (`take_new`) or over the limit for a first
//! segment; it is counted in its pool (`PoolTable::gained`) as it becomes a head.

use super::{LogShard, Segment};
use crate::shard::AllocError;
use crate::Clock;

impl LogShard {
    /// Room for a record of `rec` bytes at the end of `pool`'s head segment; returns its handle. The
    /// record's prefix is written; the caller writes the item.
    pub(super) fn append(
        &mut self,
        pool: usize,
        rec: usize,
        clock: Clock,
    ) -> Result<u32, AllocError> {
        let fits = |s: &LogShard| {
            s.pools[pool]
                .head
                .is_some_and(|slot| s.seg(slot as usize).used + rec <= s.seg_bytes)
        };
        if !fits(self) {
            if let Some(old) = self.pools[pool].head.take() {
                self.pools[pool].full.push_back(old);
            }
            let slot = self.new_segment(pool, clock)?;
            self.seg_mut(slot as usize).born = clock.now;
            self.pools[pool].head = Some(slot);
        }
        let slot = self.pools[pool].head.expect("a head segment");
        let seg = self.seg_mut(slot as usize);
        let off = seg.used;
        seg.used += rec;
        seg.mem[off..off + 4].copy_from_slice(&super::make_prefix(rec, 0).to_le_bytes());
        Ok(self.handle(slot, off))
    }

    /// An empty segment for `pool`, counted in it.
    fn new_segment(&mut self, pool: usize, clock: Clock) -> Result<u32, AllocError> {
        let pools = &self.globals.pools;
        if pools.may_grow(pool)
            && self.held_segments() < self.max_pages()
            && self.globals.budget.try_take()
        {
            return Ok(self.install(pool));
        }
        // Memory is full: the cleaner frees a segment of the pool of lowest need (under `-M` only by
        // compaction, never evicting a live item).
        for victim in self.victims(pool) {
            if let Some(slot) = self.clean(victim, clock) {
                self.give_segment(slot, victim, pool);
                return Ok(slot);
            }
        }
        if self.pools[pool].segments() == 0
            && self.held_segments() < self.max_pages()
            && self.globals.budget.try_take_first_page()
        {
            // A pool with no segment here gets one over the limit (within the first-page allowance the
            // slab layout's first pages share), given back first when shrinking.
            return Ok(self.install(pool));
        }
        self.pools[pool].counters.outofmemory += 1;
        Err(AllocError::OutOfMemory)
    }

    /// Segments this shard holds.
    pub(super) fn held_segments(&self) -> usize {
        self.segs.len() - self.free_slots.len()
    }

    /// A fresh segment of memory for `pool` (the budget already counts it).
    fn install(&mut self, pool: usize) -> u32 {
        self.globals.pools.gained(pool);
        let seg = Segment {
            mem: vec![0u8; self.seg_bytes].into_boxed_slice(),
            used: 0,
            live: 0,
            items: 0,
            pool,
            born: 0,
        };
        match self.free_slots.pop() {
            Some(slot) => {
                self.segs[slot as usize] = Some(seg);
                slot
            }
            None => {
                self.segs.push(Some(seg));
                (self.segs.len() - 1) as u32
            }
        }
    }

    /// A segment the cleaner emptied moves from pool `from` to pool `to`.
    fn give_segment(&mut self, slot: u32, from: usize, to: usize) {
        let seg = self.seg_mut(slot as usize);
        debug_assert!(seg.used == 0 && seg.items == 0);
        seg.pool = to;
        self.globals.pools.lost(from);
        self.globals.pools.gained(to);
    }

    /// Drops an emptied segment of `pool`: its memory and its page go back.
    pub(super) fn release(&mut self, slot: u32, pool: usize) {
        debug_assert!(self.seg(slot as usize).items == 0);
        self.segs[slot as usize] = None;
        self.free_slots.push(slot);
        self.globals.pools.lost(pool);
        self.globals.budget.give_back();
    }
}
