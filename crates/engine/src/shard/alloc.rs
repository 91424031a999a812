//! Allocation: where a partition's next chunk comes from, and how pages are taken from the budget and
//! carved into chunks.
//!
//! In order (`alloc`): a free chunk, a carved chunk, a new page from the budget, Twemcache's random page
//! (when on), an expired tail item, a page from a pool above its target (when this pool is below its
//! own), a page granted from another class of its pool (`grants`), the LRU tail evicted, and lastly a
//! partition's first page (from a donor or over the limit).
//!
//! Invariants:
//! - A page is taken from the `PageBudget` only through `add_page` (within the limit) or
//!   `add_page_unbudgeted` (a first page beyond it, recorded so that it is given back first, and
//!   refused once the first pages past the limit reach `PageBudget`'s first-page allowance).
//! - A partition carves one page at a time: starting a new carve puts the uncarved rest of the old page
//!   on the free list, so no chunk is lost.
//! - Once memory is full, an expired or flushed item among the class's last `RECLAIM_SEARCH_DEPTH` LRU
//!   items is reused before any live item is evicted or any page is taken from another pool (memcached's
//!   tail check on every allocation; the maintenance reaper clears expired items deeper in the LRU).
//! - A granted page (`grants`) is taken only where the class would otherwise evict a live item, and only
//!   from a donor that holds a page in this shard; it moves as any page move does (`move_page`).
//! - Under fixed caps (`set_page_caps`) allocation never gives a partition a page past its cap (only an
//!   explicit page move can), but for a first page where `set_first_pages_under_caps` keeps that rule.

use super::{AllocError, Page, Part, Shard};
use crate::globals::Evicted;
use crate::item::{bits, NIL};
use crate::tenant::TenantId;
use crate::Clock;

/// How many LRU tail items an allocation inspects for an expired one before evicting (memcached's 5 tries).
const RECLAIM_SEARCH_DEPTH: usize = 5;

impl Shard {
    /// Fixes the most pages each class (by index) may take; `None` returns to demand filling. Classes
    /// over their cap keep their pages until moved; a class at its cap evicts from its own LRU.
    pub(crate) fn set_page_caps(&mut self, caps: Option<Vec<usize>>) {
        self.page_caps = caps;
    }

    /// Under caps, whether a class with no page gets its first page as demand filling gives it.
    pub(crate) fn set_first_pages_under_caps(&mut self, on: bool) {
        self.first_pages_under_caps = on;
    }

    pub(super) fn below_cap(&self, part: Part) -> bool {
        self.page_caps.as_ref().is_none_or(|caps| {
            self.parts[part.index()].pages.len()
                < caps.get(part.class().index()).copied().unwrap_or(0)
        })
    }

    /// A chunk for an item of `total_bytes` (accounted size, `Geometry::item_total_bytes`) of `tenant`,
    /// in the partition of its pool and class: a free chunk, a carved chunk, a new page, an expired tail
    /// item, a page from a pool above its target (when this pool is below its own), or the LRU tail
    /// evicted. The chunk is not linked; the caller writes and links it at once (`write_and_link`).
    pub(crate) fn alloc(
        &mut self,
        total_bytes: usize,
        tenant: TenantId,
        clock: Clock,
    ) -> Result<(Part, u32), AllocError> {
        let class = self
            .geometry
            .class_for(total_bytes)
            .ok_or(AllocError::TooLarge)?;
        let part = Part::new(self.globals.pools.pool_of(tenant), class);
        if let Some(h) = self.take_free_chunk(part) {
            return Ok((part, h));
        }
        if self.add_page(part) {
            let h = self.take_free_chunk(part).expect("a new page has chunks");
            return Ok((part, h));
        }
        if self.globals.random_page_eviction() && self.evict_when_full && self.below_cap(part) {
            // Twemcache: expired items first, then a random page of any class, emptied.
            if let Some(h) = self.reclaim(part, clock) {
                return Ok((part, h));
            }
            if self.evict_random_page(part).is_some() {
                if let Some(h) = self.take_free_chunk(part) {
                    return Ok((part, h));
                }
            }
        }
        // Memory is full. An expired or flushed item at the class's LRU tail is reused first (memcached
        // checks its tail before it evicts): an item nobody can read never costs a live item its place,
        // neither one of this class nor one of another pool's page.
        if let Some(h) = self.reclaim(part, clock) {
            return Ok((part, h));
        }
        // A page another partition owes this one is taken at the allocation that needs it.
        if self.evict_when_full && self.below_cap(part) {
            if let Some(donor) = self.owed_page(part) {
                self.move_page(donor, part);
                if let Some(h) = self.take_free_chunk(part) {
                    return Ok((part, h));
                }
            }
        }
        if let Some(h) = self.evict_tail(part, clock) {
            return Ok((part, h));
        }
        // A partition with no page yet may get its first page (as memcached gives every class one),
        // from the partition that took its last page by a move (if it has one to spare), else from the
        // largest partition of its own pool, else from another pool's memory above its
        // reserve, else over the limit (within the first-page allowance), else, once that is spent
        // (only with pages of `-I` above 1 MiB), from the pool's coldest partition, as a slab reassign
        // would. Not under a fixed allocation, where the caps decide every page, unless the caps keep
        // this rule (`set_first_pages_under_caps`).
        if self.parts[part.index()].pages.is_empty()
            && (self.page_caps.is_none() || self.first_pages_under_caps)
        {
            let may_grow = self.globals.pools.may_grow(part.pool());
            match self.first_page_donor(part, may_grow) {
                Some(donor) => {
                    self.move_page(donor, part);
                }
                None if may_grow && !self.add_page_unbudgeted(part) => {
                    if let Some(donor) = self.coldest_part_of(part.pool()) {
                        self.move_page(donor, part);
                    }
                }
                None => {}
            }
            if let Some(h) = self.take_free_chunk(part) {
                return Ok((part, h));
            }
        }
        self.part_state(part).counters.outofmemory += 1;
        Err(AllocError::OutOfMemory)
    }

    /// Where `part`, full and about to evict, takes a page from instead: when its pool is below its
    /// target, the pool furthest above its own (so targets are reached one page per allocation that
    /// needs it); else a donor that granted it pages (`grants`: a paced policy's move) and holds
    /// one in this shard, whose grant the page is taken from.
    fn owed_page(&self, part: Part) -> Option<Part> {
        let pool = part.pool();
        if self.globals.pools.below_target(pool) {
            if let Some(donor) = self.over_target_donor(pool) {
                return Some(donor);
            }
        }
        let has_page = |src| self.part_pages(Part::new(pool, src)) > 0;
        let src = self.globals.grants.take(pool, part.class(), has_page)?;
        Some(Part::new(pool, src))
    }

    #[inline]
    pub(super) fn take_free_chunk(&mut self, part: Part) -> Option<u32> {
        let head = self.parts[part.index()].free_head;
        if head != NIL {
            self.free_unlink(part, head);
            return Some(head);
        }
        let chunks_per_page = self.geom(part).chunks_per_page as u32;
        let c = self.part_state(part);
        let (slot, next) = c.carve?;
        c.carve = (next + 1 < chunks_per_page).then_some((slot, next + 1));
        Some(slot << self.chunk_bits | next)
    }

    /// An expired or flushed item among the class's LRU tail, unlinked, its chunk taken.
    pub(super) fn reclaim(&mut self, part: Part, clock: Clock) -> Option<u32> {
        let mut h = self.parts[part.index()].lru_tail;
        for _ in 0..RECLAIM_SEARCH_DEPTH {
            if h == NIL {
                break;
            }
            if self.is_dead(h, clock) {
                let fetched = self.item(h).has(bits::FETCHED);
                self.part_state(part).counters.count_reclaim(fetched);
                return Some(self.unlink_and_take(part, h));
            }
            h = self.prev(h);
        }
        None
    }

    /// The class's LRU tail evicted, its chunk taken (unless `-M`).
    pub(super) fn evict_tail(&mut self, part: Part, clock: Clock) -> Option<u32> {
        if !self.evict_when_full {
            return None;
        }
        let tail = self.parts[part.index()].lru_tail;
        if tail == NIL {
            return None;
        }
        let (expiry, atime, fetched) = {
            let it = self.item(tail);
            (it.expiry(), it.atime(), it.has(bits::FETCHED))
        };
        self.part_state(part)
            .counters
            .count_eviction(expiry, atime, fetched, clock.now);
        self.remember_evicted(tail);
        if let Some(observe) = self.globals.eviction_observer() {
            observe(&Evicted::of(self.item(tail), part.class(), clock.now));
        }
        Some(self.unlink_and_take(part, tail))
    }

    /// Takes a page from the budget for `class`, if the budget allows.
    pub(super) fn add_page(&mut self, part: Part) -> bool {
        if !self.below_cap(part)
            || !self.globals.pools.may_grow(part.pool())
            || self.pages.len() - self.free_slots.len() >= self.max_pages()
            || !self.globals.budget.try_take()
        {
            return false;
        }
        self.install_page(part);
        true
    }

    /// A first page beyond the limit, within the budget's first-page allowance: the budget records it,
    /// so it is given back first. Past the allowance nothing is taken (false).
    pub(super) fn add_page_unbudgeted(&mut self, part: Part) -> bool {
        let taken = self.globals.budget.try_take_first_page();
        if taken {
            self.install_page(part);
        }
        taken
    }

    pub(super) fn install_page(&mut self, part: Part) {
        let page = Page {
            mem: vec![0u8; self.geometry.page_size_bytes()].into_boxed_slice(),
            links: Vec::new(),
            part,
            chunk_size_bytes: self.geom(part).chunk_size_bytes,
        };
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.pages[slot as usize] = Some(page);
                slot
            }
            None => {
                self.pages.push(Some(page));
                (self.pages.len() - 1) as u32
            }
        };
        self.assign_page(slot, part);
    }

    /// Gives page `slot` to `part` (counted in its pool) and starts carving it.
    pub(super) fn assign_page(&mut self, slot: u32, part: Part) {
        let g = self.geom(part);
        self.globals.pools.gained(part.pool());
        let page = self.pages[slot as usize].as_mut().expect("held page");
        page.part = part;
        page.chunk_size_bytes = g.chunk_size_bytes;
        page.links.clear();
        page.links.resize(g.chunks_per_page, [NIL, NIL]);
        let c = self.part_state(part);
        c.pages.push(slot);
        c.lent_to = None;
        // A class carves one page at a time; an older partly carved page keeps its uncarved tail unused.
        if let Some((old, next)) = c.carve.replace((slot, 0)) {
            self.abandon_carve(part, old, next);
        }
    }

    /// Puts the uncarved rest of a page on the free list, so no chunk is lost when a new carve starts.
    pub(super) fn abandon_carve(&mut self, part: Part, slot: u32, next: u32) {
        let chunks_per_page = self.geom(part).chunks_per_page as u32;
        for i in next..chunks_per_page {
            self.free_push(part, slot << self.chunk_bits | i);
        }
    }
}
