//! Appending: a record goes to the end of its pool's head segment; a full head joins the pool's full
//! queue and a new head comes from, in order, the page budget (while memory is free and the pool is
//! below its cap), the cleaning pass under way (finished now; its segment goes to this pool if its
//! victim may give to it, else back to the budget), a whole cleaning pass now (a segment freed from the
//! pool of lowest need), or, for a pool that holds no segment in this shard at all, one page over the
//! limit (as the slab layout gives a first page). A pool that took a cleaned segment or the budget's
//! last page starts the next pass at once, and every append advances it a step (`LogShard::step`).
//!
//! Invariants: a segment is taken from the budget only here or over the limit for a first segment; it
//! is counted in its pool (`PoolTable::gained`) as it becomes a head.

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
        // The pass never touches a head, so the new record is not moved by its step.
        self.step(rec, clock);
        Ok(self.handle(slot, off))
    }

    /// An empty segment for `pool`, counted in it.
    fn new_segment(&mut self, pool: usize, clock: Clock) -> Result<u32, AllocError> {
        if let Some(slot) = self.take_from_budget(pool) {
            if self.globals.budget.in_use() >= self.globals.budget.limit() {
                // That was the last page: the next segment will be cleaned.
                self.begin_for(pool, clock);
            }
            return Ok(slot);
        }
        // Memory is full: the cleaner frees a segment of the pool of lowest need (under `-M` only by
        // compaction, never evicting a live item). First the pass under way, if its victim may give
        // to `pool`; otherwise its segment goes back to the budget.
        if let Some((victim, slot)) = self.finish(clock) {
            if self.victims(pool).contains(&victim) {
                return Ok(self.cleaned_for(pool, victim, slot, clock));
            }
            self.release(slot, victim);
            if let Some(slot) = self.take_from_budget(pool) {
                return Ok(slot);
            }
        }
        for victim in self.victims(pool) {
            if let Some(slot) = self.clean(victim, clock) {
                return Ok(self.cleaned_for(pool, victim, slot, clock));
            }
        }
        if self.segments_of(pool) == 0
            && self.addressable()
            && self.globals.budget.try_take_first_page()
        {
            // A pool with no segment here gets one over the limit (within the first-page allowance the
            // slab layout's first pages share), given back first when shrinking.
            return Ok(self.install(pool));
        }
        self.pools[pool].counters.outofmemory += 1;
        Err(AllocError::OutOfMemory)
    }

    /// A segment from the page budget, if `pool` may grow and memory is free.
    fn take_from_budget(&mut self, pool: usize) -> Option<u32> {
        let fits = self.globals.pools.may_grow(pool) && self.addressable();
        (fits && self.globals.budget.try_take()).then(|| self.install(pool))
    }

    /// `pool` takes the segment a pass over `victim` emptied, and the next pass starts.
    fn cleaned_for(&mut self, pool: usize, victim: usize, slot: u32, clock: Clock) -> u32 {
        self.give_segment(slot, victim, pool);
        self.begin_for(pool, clock);
        slot
    }

    /// Segments this shard holds (the cleaner's spares and outputs are beside the budget).
    pub(super) fn held_segments(&self) -> usize {
        let outputs = self.pass.as_ref().map_or(0, |p| p.segments().1.len());
        self.segs.len() - self.free_slots.len() - self.spares.len() - outputs
    }

    /// Whether one more held segment still leaves slots for the cleaner's spares within what a handle
    /// can address.
    fn addressable(&self) -> bool {
        self.held_segments() + self.clean_segments - 1 < self.max_pages()
    }

    /// Segments `pool` holds here: its head, its full queue and the inputs of a pass over it.
    pub(super) fn segments_of(&self, pool: usize) -> usize {
        let cleaning = (self.pass.as_ref())
            .filter(|p| p.victim() == pool)
            .map_or(0, |p| p.segments().0.len());
        self.pools[pool].segments() + cleaning
    }

    /// A fresh segment of memory for `pool` (the budget already counts it).
    fn install(&mut self, pool: usize) -> u32 {
        self.globals.pools.gained(pool);
        let seg = self.new_seg(pool);
        self.install_slot(seg)
    }

    /// A fresh segment of `pool`, not yet in a slot.
    pub(super) fn new_seg(&self, pool: usize) -> Segment {
        Segment {
            mem: vec![0u8; self.seg_bytes].into_boxed_slice(),
            used: 0,
            live: 0,
            items: 0,
            pool,
            born: 0,
            cleaning: false,
        }
    }

    /// Puts `seg` in a free slot.
    pub(super) fn install_slot(&mut self, seg: Segment) -> u32 {
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
