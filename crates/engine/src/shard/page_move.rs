//! Moving one page from a slab class to another (or back to the page budget): the mechanism every
//! allocation policy drives.
//!
//! The page's live items are relocated into other chunks of the same class; when the class has no free
//! chunk, its least recently used item (outside the moving page) is evicted to make room. So a class that
//! gives up a page loses exactly its coldest page-worth of items, which is what its miss-ratio curve
//! predicts. Work is bounded by one page: at most `chunks_per_page` relocations, under the shard's lock.
//!
//! A move that takes a class's last page to another class of the same pool records the receiver: should
//! the class store again, its first page comes back from there (`Shard::first_page_donor`). A receiver
//! that later gives away a page it cannot spare passes the record on to that page's receiver.

use super::{Page, PageMoveOutcome, Part, Shard, PART_STRIDE};
use crate::item::{bits, stored_bytes, NIL};

/// What a page move does with the page's live items.
#[derive(Copy, Clone, PartialEq, Eq)]
enum Keep {
    /// Relocate them into the class's other chunks (evicting its coldest items for room).
    Relocate,
    /// Evict them all (Twemcache's slab eviction).
    Nothing,
}

/// How `relocate` placed one item of a moving page.
enum Relocation {
    IntoFreeChunk,
    /// Into the chunk of the class's coldest item, which was evicted.
    OverColdestItem,
    /// Not moved: the item is among the coldest and is evicted by the caller.
    Coldest,
}

impl Shard {
    /// Records that `receiver`, of `src`'s pool, took a page from `src`, which holds `left` pages now.
    /// An emptied `src` is owed its first page by `receiver`; a `src` that could not spare the page
    /// passes on what it owed, so an emptied class's first page comes from the class the move
    /// favoured, not from a bystander (the largest class, whose coldest page-worth of items would be
    /// lost for a move it had no part in). Invariant: only a partition with no page is owed one.
    fn record_loan(&mut self, src: Part, receiver: Part, left: usize) {
        if left == 0 {
            self.parts[src.index()].lent_to = Some(receiver);
        }
        if left < 2 {
            let base = src.pool() * PART_STRIDE;
            for c in &mut self.parts[base..base + PART_STRIDE] {
                if c.lent_to == Some(src) {
                    c.lent_to = Some(receiver);
                }
            }
        }
    }

    /// Pages `part` holds in this shard.
    pub(crate) fn part_pages(&self, part: Part) -> usize {
        self.parts[part.index()].pages.len()
    }

    /// Moves one page from `src` to `dst`: the page's live items are relocated into free chunks of `src`
    /// elsewhere, making room by evicting `src`'s least recently used items, so the class loses exactly its
    /// coldest page-worth of items. `dst` may be `None` to give the page back to the budget.
    /// Work is bounded by one page: at most `chunks_per_page` relocations.
    pub(crate) fn move_page(
        &mut self,
        src: Part,
        dst: impl Into<Option<Part>>,
    ) -> Option<PageMoveOutcome> {
        let slot = *self.parts[src.index()].pages.first()?;
        Some(self.move_slot(src, slot, dst.into(), Keep::Relocate))
    }

    /// Twemcache's random slab eviction: a page drawn uniformly from the pages of `dst`'s pool in this
    /// shard, whatever their class, loses everything it holds and goes to `dst`. `None` if the shard holds no page.
    pub(crate) fn evict_random_page(&mut self, dst: Part) -> Option<PageMoveOutcome> {
        let held = self.pages.len() - self.free_slots.len();
        if held == 0 {
            return None;
        }
        // xorshift64*: randomness is the shard's own, seeded at creation, so runs are reproducible.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let draw = self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let start = (draw % self.pages.len() as u64) as usize;
        let slot = (0..self.pages.len())
            .map(|i| (start + i) % self.pages.len())
            .find(|&i| {
                self.pages[i]
                    .as_ref()
                    .is_some_and(|p| p.part.pool() == dst.pool())
            })? as u32;
        let src = self.pages[slot as usize].as_ref().expect("held page").part;
        let moved = self.move_slot(src, slot, Some(dst), Keep::Nothing);
        let c = self.part_state(src);
        c.counters.moves_evicted -= moved.evicted as u64;
        c.counters.evicted += moved.evicted as u64;
        Some(moved)
    }

    /// Moves page `slot` of `src` to `dst` (or back to the budget), keeping its items by relocation or
    /// evicting them all.
    fn move_slot(
        &mut self,
        src: Part,
        slot: u32,
        dst: Option<Part>,
        keep: Keep,
    ) -> PageMoveOutcome {
        let chunks_per_page = self.geom(src).chunks_per_page as u32;
        let carved = match self.parts[src.index()].carve {
            Some((s, next)) if s == slot => {
                self.part_state(src).carve = None;
                next
            }
            _ => chunks_per_page,
        };
        let mut moved = PageMoveOutcome {
            rescued: 0,
            evicted: 0,
        };
        // Free chunks of the page leave the free list first, so rescues never land in the page itself.
        for i in 0..carved {
            let h = slot << self.chunk_bits | i;
            if self.item(h).has(bits::FREE) {
                self.free_unlink(src, h);
            }
        }
        for i in 0..carved {
            let h = slot << self.chunk_bits | i;
            if !self.item(h).has(bits::LINKED) {
                continue;
            }
            let how = match keep {
                Keep::Relocate => self.relocate(src, slot, h),
                Keep::Nothing => Relocation::Coldest,
            };
            match how {
                Relocation::IntoFreeChunk => moved.rescued += 1,
                Relocation::OverColdestItem => {
                    moved.rescued += 1;
                    moved.evicted += 1;
                }
                Relocation::Coldest => {
                    self.remember_evicted(h);
                    self.unlink(h);
                    self.free_unlink(src, h);
                    moved.evicted += 1;
                }
            }
        }
        let c = self.part_state(src);
        c.pages.retain(|&s| s != slot);
        c.counters.moves_rescued += moved.rescued as u64;
        c.counters.moves_evicted += moved.evicted as u64;
        let left = c.pages.len();
        if keep == Keep::Relocate {
            if let Some(receiver) = dst.filter(|d| d.pool() == src.pool()) {
                self.record_loan(src, receiver, left);
            }
        }
        self.meters.counters.slabs_moved += 1;
        self.globals.pools.lost(src.pool());
        match dst {
            Some(dst) => {
                self.pages[slot as usize]
                    .as_mut()
                    .expect("held page")
                    .mem
                    .fill(0);
                self.assign_page(slot, dst);
            }
            None => {
                self.pages[slot as usize] = None;
                self.free_slots.push(slot);
                self.globals.budget.give_back();
            }
        }
        moved
    }

    /// Copies linked item `h` (in page `moving`) into another chunk of `class`, evicting the class's LRU tail
    /// if no chunk is free, unless the tail is in the moving page (then `h` itself is evicted by the caller).
    fn relocate(&mut self, part: Part, moving: u32, h: u32) -> Relocation {
        let (target, how) = match self.take_free_chunk(part) {
            Some(t) => (t, Relocation::IntoFreeChunk),
            None => {
                let tail = self.parts[part.index()].lru_tail;
                if tail == h || tail == NIL || tail >> self.chunk_bits == moving {
                    // The tail lives in the moving page: evicting `h` costs the class no warmer item.
                    return Relocation::Coldest;
                }
                self.remember_evicted(tail);
                (
                    self.unlink_and_take(part, tail),
                    Relocation::OverColdestItem,
                )
            }
        };
        let size = self.geom(part).chunk_size_bytes;
        let bytes = stored_bytes(self.item(h).key_len(), self.item(h).value_len()).min(size);
        let (src_page, dst_page) = (h >> self.chunk_bits, target >> self.chunk_bits);
        let mask = (1u32 << self.chunk_bits) - 1;
        let (src_at, dst_at) = ((h & mask) as usize * size, (target & mask) as usize * size);
        if src_page == dst_page {
            let mem = &mut self.pages[src_page as usize]
                .as_mut()
                .expect("held page")
                .mem;
            mem.copy_within(src_at..src_at + bytes, dst_at);
        } else {
            let (a, b) = two_pages(&mut self.pages, src_page as usize, dst_page as usize);
            b.mem[dst_at..dst_at + bytes].copy_from_slice(&a.mem[src_at..src_at + bytes]);
        }
        // The copy takes the original's place in the index and the LRU.
        let [prev, next] = self.links(h);
        *self.links_mut(target) = [prev, next];
        if prev != NIL {
            self.set_next(prev, target);
        } else {
            self.part_state(part).lru_head = target;
        }
        if next != NIL {
            self.set_prev(next, target);
        } else {
            self.part_state(part).lru_tail = target;
        }
        self.index_repoint(h, target);
        self.item_mut(h).set_bits(0);
        how
    }
}

/// Mutable references to two distinct pages.
fn two_pages(pages: &mut [Option<Page>], a: usize, b: usize) -> (&mut Page, &mut Page) {
    assert_ne!(a, b);
    if a < b {
        let (lo, hi) = pages.split_at_mut(b);
        (
            lo[a].as_mut().expect("held page"),
            hi[0].as_mut().expect("held page"),
        )
    } else {
        let (lo, hi) = pages.split_at_mut(a);
        (
            hi[0].as_mut().expect("held page"),
            lo[b].as_mut().expect("held page"),
        )
    }
}
