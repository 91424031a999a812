//! Donor choice: which partition gives up a page when another needs one and memory is full.
//!
//! Three questions, each answered from this shard's partitions only (no other shard is locked):
//! the largest partition of a pool, the coldest one (oldest LRU tail) of a pool above its target, and
//! where a partition's first page comes from (first from the partition that took its last page, if
//! any). Pure reads: nothing here moves a page.
//!
//! Invariants: a donor always holds a page (at least two where it must keep one), and is never the
//! partition it gives to.

use super::{Part, Shard, PART_STRIDE};
use crate::item::NIL;

impl Shard {
    /// The partition of `pool` (in this shard) with the most pages, at least `min_pages`, other than
    /// `except`.
    pub(super) fn largest_part_of(
        &self,
        pool: usize,
        except: Part,
        min_pages: usize,
    ) -> Option<Part> {
        let base = pool * PART_STRIDE;
        self.parts[base..base + PART_STRIDE]
            .iter()
            .enumerate()
            .filter(|(i, c)| base + i != except.index() && c.pages.len() >= min_pages)
            .max_by_key(|(_, c)| c.pages.len())
            .map(|(i, _)| Part::from_index(base + i))
    }

    /// A page for a pool below its target: from the pool (other than `pool`) furthest above its own
    /// target that has a page in this shard, its partition whose LRU tail was used longest ago.
    pub(super) fn over_target_donor(&self, pool: usize) -> Option<Part> {
        let pools = &self.globals.pools;
        let mut donors: Vec<(usize, usize)> = (0..pools.len())
            .filter(|&p| p != pool)
            .map(|p| (pools.surplus(p), p))
            .filter(|&(surplus, _)| surplus > 0)
            .collect();
        donors.sort_unstable_by(|a, b| b.cmp(a));
        donors
            .into_iter()
            .find_map(|(_, p)| self.coldest_part_of(p))
    }

    /// The partition of `pool` in this shard, holding a page, whose LRU tail is the oldest (an empty
    /// LRU counts as oldest of all: its pages hold nothing).
    pub(super) fn coldest_part_of(&self, pool: usize) -> Option<Part> {
        let base = pool * PART_STRIDE;
        self.parts[base..base + PART_STRIDE]
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.pages.is_empty())
            .min_by_key(|(_, c)| {
                if c.lru_tail == NIL {
                    (0, usize::MAX - c.pages.len())
                } else {
                    (
                        self.item(c.lru_tail).atime() as u64 + 1,
                        usize::MAX - c.pages.len(),
                    )
                }
            })
            .map(|(i, _)| Part::from_index(base + i))
    }

    /// Where `part`'s first page comes from when memory is full: the partition that took its last page
    /// by a page move (or that took a page from that one when it had none to spare), if that one has a
    /// page to spare (a move that emptied a class is undone by the class's return, at the expense of the
    /// class it favoured, not of a bystander); else the largest
    /// partition of its own pool with a page to spare; if its pool may grow, a pool above its target,
    /// then a partition with a page to spare of any pool above its reserve and not below its target.
    /// `None` when none has one.
    pub(super) fn first_page_donor(&self, part: Part, may_grow: bool) -> Option<Part> {
        if let Some(borrower) = self.parts[part.index()].lent_to {
            if self.parts[borrower.index()].pages.len() >= 2 {
                return Some(borrower);
            }
        }
        if let Some(own) = self.largest_part_of(part.pool(), part, 2) {
            return Some(own);
        }
        if !may_grow {
            return None;
        }
        if let Some(donor) = self.over_target_donor(part.pool()) {
            return Some(donor);
        }
        let pools = &self.globals.pools;
        (0..pools.len())
            .filter(|&p| p != part.pool() && pools.above_reserve(p) > 0 && !pools.below_target(p))
            .filter_map(|p| self.largest_part_of(p, part, 2))
            .max_by_key(|p| self.parts[p.index()].pages.len())
    }
}
