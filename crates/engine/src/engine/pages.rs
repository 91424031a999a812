//! Pages and memory: the page move every allocation policy drives (`move_page`, `slabs reassign`), page
//! moves granted ahead (`update_page_grants`), Twemcache's random page eviction, fixed class caps,
//! `cache_memlimit` and the reaper.
//!
//! Invariants: each call does bounded work (one page per move, `max_pages` per shrink,
//! `max_items_per_class` per reap) and takes the shard locks one at a time, never two at once.

use super::Engine;
use crate::geometry::ClassId;
use crate::grants::PageGrant;
use crate::shard::{PageMoveOutcome, Part};
use crate::Clock;

/// The result of a page move request (`slabs reassign`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReassignOutcome {
    /// A page moved (memcached replies `OK`).
    Moved {
        /// Items of the page relocated into other chunks of the source class.
        rescued: usize,
        /// Items the move evicted.
        evicted: usize,
    },
    /// The source class has fewer than two pages.
    NoSpare,
    /// Source and destination are the same class.
    Same,
    /// Either id is not a class of this engine.
    BadClass,
}

impl Engine {
    /// `slabs reassign src dst`: moves one page from class `src` to class `dst`, in the shard where `src`
    /// has the most pages. memcached's rule: the source needs at least two pages (in that shard). The
    /// server turns the command's numbers into classes; one this engine does not have is `BadClass`.
    pub fn reassign(&self, src: ClassId, dst: ClassId) -> ReassignOutcome {
        if !self.geometry.contains(src) || !self.geometry.contains(dst) {
            return ReassignOutcome::BadClass;
        }
        if src == dst {
            return ReassignOutcome::Same;
        }
        // memcached's rule: a source with fewer than two pages has none to spare. Per shard, so that a move
        // never empties a class in the shard it is taken from. The log's memory is in segments, not in
        // class pages (`part_pages` is 0 there): no class of it has a page to spare.
        let src_part = Part::new(0, src);
        let spare = self
            .shards
            .iter()
            .any(|s| s.lock().part_pages(src_part) >= 2);
        if !spare {
            return ReassignOutcome::NoSpare;
        }
        match self.move_page(src, Some(dst)) {
            Some(m) => ReassignOutcome::Moved {
                rescued: m.rescued,
                evicted: m.evicted,
            },
            None => ReassignOutcome::NoSpare,
        }
    }

    /// The mechanism every allocation policy drives: moves one page of class `src` to class `dst` of the
    /// default pool (pool 0: all memory, unless tenants have pools of their own), or back to the page
    /// budget when `dst` is `None`. See `move_page_in`.
    pub fn move_page(&self, src: ClassId, dst: Option<ClassId>) -> Option<PageMoveOutcome> {
        self.move_page_in(0, src, dst)
    }

    /// Moves one page of class `src` of tenant pool `pool` to its class `dst` (or back to the page budget
    /// when `dst` is `None`), in the shard where that partition holds the most pages. `None` if it has no
    /// page. Bounded work: one page, under one shard lock.
    pub fn move_page_in(
        &self,
        pool: usize,
        src: ClassId,
        dst: Option<ClassId>,
    ) -> Option<PageMoveOutcome> {
        if pool >= self.globals.pools.len() {
            return None;
        }
        let (src, dst) = (Part::new(pool, src), dst.map(|d| Part::new(pool, d)));
        let best = (0..self.shards.len()).max_by_key(|&i| self.shards[i].lock().part_pages(src))?;
        self.shards[best].lock().move_page(src, dst)
    }

    /// Runs `f` on the page grants of tenant pool `pool` (see [`PageGrant`]): pages of one class that
    /// another may take, each at the store that would otherwise evict one of its items, from the
    /// donor's pages in that store's shard (where it has none, the store evicts as usual). `f` may
    /// read, add, change or drop grants; spent and malformed ones (no page, or a class granted to
    /// itself) are dropped after it. Grants stand until taken or changed. `None` if there is no such
    /// pool. Takes the grants' lock only: `f` must not call into the engine.
    pub fn update_page_grants<R>(
        &self,
        pool: usize,
        f: impl FnOnce(&mut Vec<PageGrant>) -> R,
    ) -> Option<R> {
        self.globals.grants.update(pool, f)
    }

    /// Pages granted and not yet taken, over every pool.
    pub fn pages_granted(&self) -> usize {
        self.globals.grants.pages_granted()
    }

    /// Pages tenant pool `pool`'s grants have moved since the engine started (0 for no such pool).
    pub fn page_grants_made(&self, pool: usize) -> u64 {
        self.globals.grants.pages_made(pool)
    }

    /// Unlinks expired and flushed items, at most `max_items_per_class` inspections per class per shard,
    /// one shard lock at a time. Returns how many were removed.
    pub fn reap_expired(&self, clock: Clock, max_items_per_class: usize) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().reap(clock, max_items_per_class))
            .sum()
    }

    /// `cache_memlimit`: a new page limit; pages over it are given back (at most `max_pages_per_call`
    /// page moves now; call again until `pages_over_limit` is 0).
    pub fn set_memory_limit(&self, bytes: u64, max_pages_per_call: usize) {
        let pages = ((bytes / self.geometry.page_size_bytes() as u64) as usize).max(1);
        self.globals.budget.set_limit(pages);
        self.shrink_to_limit(max_pages_per_call);
    }

    /// Gives pages back while over the limit; at most `max_pages` page moves. Returns how many.
    pub fn shrink_to_limit(&self, max_pages: usize) -> usize {
        let mut given = 0;
        for shard in self.shards.iter() {
            if given >= max_pages || !self.globals.budget.over_limit() {
                break;
            }
            // No item counts as expired here: shrinking only frees memory.
            given += shard
                .lock()
                .shrink_to_budget(max_pages - given, Clock::logical(0));
        }
        given
    }

    /// Installs the function told of every eviction while `observe_evictions(true)` (memcached's `watch
    /// evictions`). It runs under the evicting shard's lock and must do no I/O and take no lock but a
    /// leaf one of its own. Only the first observer installed is kept; returns whether this one was.
    pub fn set_eviction_observer(&self, observer: crate::EvictionObserver) -> bool {
        self.globals.set_eviction_observer(observer)
    }

    /// Turns the eviction observer on or off.
    pub fn observe_evictions(&self, on: bool) {
        self.globals.observe_evictions(on);
    }

    /// Pages memory may hold now: `-m`, or what `cache_memlimit` last set.
    pub fn page_limit(&self) -> usize {
        self.globals.budget.limit()
    }

    /// Twemcache's random slab eviction on or off: when on, a class that needs a chunk and can get no new
    /// page empties a page drawn at random from all pages and takes it, instead of evicting its own LRU
    /// tail. Takes effect on the next allocation.
    pub fn set_random_page_eviction(&self, on: bool) {
        self.globals.set_random_page_eviction(on);
    }

    /// Fixes the most pages each class (indexed by `ClassId::index`) may hold, a fixed allocation such as
    /// LAMA's theoretical upper bound replays; `None` returns to memcached's demand filling. With several
    /// shards each gets `ceil(cap / shards)`. A class at its cap evicts from its own LRU; one with a cap of
    /// 0 stores nothing (`OutOfMemory`). Pages already held over a cap stay until moved.
    pub fn set_class_page_caps(&self, caps: Option<&[usize]>) {
        let n = self.shards.len();
        for shard in self.shards.iter() {
            shard
                .lock()
                .set_page_caps(caps.map(|c| c.iter().map(|&p| p.div_ceil(n)).collect()));
        }
    }

    /// Under caps (`set_class_page_caps`), whether a class with no page that needs one still gets its
    /// first page as demand filling gives it (from the class that took its last page, else the largest
    /// class of its pool, else beyond the limit within the first-page allowance), past a cap of 0. Off by default: a fixed allocation decides
    /// every page. On, caps behave as a moving policy's allocation does in a live server, where
    /// memcached's rule cannot be turned off.
    pub fn set_first_pages_under_caps(&self, on: bool) {
        for shard in self.shards.iter() {
            shard.lock().set_first_pages_under_caps(on);
        }
    }
}
