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

/// Segments a pool must hold in a shard before new keys go on probation (`on_probation`) and its
/// main queue is swept under the clock.
pub(super) const MIN_PROBATION_SEGMENTS: usize = 8;

impl LogShard {
    /// Room for a record of `rec` bytes at the end of `pool`'s head segment, or its probation head;
    /// returns its handle. The record's prefix is written; the caller writes the item.
    pub(super) fn append(
        &mut self,
        pool: usize,
        rec: usize,
        probation: bool,
        clock: Clock,
    ) -> Result<u32, AllocError> {
        let head = |s: &LogShard| {
            let p = &s.pools[pool];
            if probation {
                p.probation_head
            } else {
                p.head
            }
        };
        if head(self).is_none_or(|slot| self.seg(slot as usize).used + rec > self.seg_bytes) {
            self.retire_head(pool, probation);
            let slot = self.new_segment(pool, clock)?;
            let seg = self.seg_mut(slot as usize);
            seg.born = clock.now;
            seg.probation = probation;
            let p = &mut self.pools[pool];
            *(if probation {
                &mut p.probation_head
            } else {
                &mut p.head
            }) = Some(slot);
        }
        let slot = head(self).expect("a head segment");
        let seg = self.seg_mut(slot as usize);
        let off = seg.used;
        seg.used += rec;
        seg.mem[off..off + 4].copy_from_slice(&super::make_prefix(rec, 0).to_le_bytes());
        // The pass never touches a head, so the new record is not moved by its step.
        self.step(rec, clock);
        Ok(self.handle(slot, off))
    }

    /// A full head joins the back of its queue. A probation head joins the main queue instead while
    /// memory is free and the probationary queue holds its share (as S3-FIFO inserts into its main
    /// queue until the cache is full): probation starts when memory runs out, not before.
    fn retire_head(&mut self, pool: usize, probation: bool) {
        let p = &mut self.pools[pool];
        let Some(old) = (if probation {
            p.probation_head.take()
        } else {
            p.head.take()
        }) else {
            return;
        };
        let to_main = !probation
            || (self.globals.budget.in_use() < self.globals.budget.limit()
                && self.pools[pool].probation.len() + 1 > self.probation_target(pool));
        self.seg_mut(old as usize).probation = !to_main;
        let p = &mut self.pools[pool];
        if to_main {
            p.full.push_back(old);
        } else {
            p.probation.push_back(old);
        }
    }

    /// Segments `pool`'s probationary queue may hold here: its share of the pool's segments, at
    /// least one (0 without probation).
    pub(super) fn probation_target(&self, pool: usize) -> usize {
        if self.probation_share <= 0.0 {
            return 0;
        }
        ((self.segments_of(pool) as f64 * self.probation_share).round() as usize).max(1)
    }

    /// Whether a key `pool` does not know goes on probation: with probation on, once the pool holds
    /// `MIN_PROBATION_SEGMENTS` here (a probationary queue takes a head of its own, and with a
    /// handful of segments it would leave too few to clean).
    pub(super) fn on_probation(&self, pool: usize) -> bool {
        self.probation_share > 0.0 && self.segments_of(pool) >= MIN_PROBATION_SEGMENTS
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
            probation: false,
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
