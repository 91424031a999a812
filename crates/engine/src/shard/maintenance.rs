//! Background maintenance of a shard, each call bounded: reaping expired and flushed items from the
//! LRU tails, and giving pages back to the budget after `cache_memlimit` lowered the limit.
//!
//! Invariants: `reap` inspects at most `max_items` items per partition; `shrink_to_budget` moves at most
//! `max_pages` pages and stops as soon as the engine is within its limit.

use super::{Part, Shard};
use crate::item::NIL;
use crate::Clock;

impl Shard {
    /// Unlinks up to `max_items` expired or flushed items, walking each class LRU from its tail.
    /// Returns how many were removed. Bounded work: at most `max_items` inspections per class. Counts
    /// each class's inspections and removals as memcached's crawler does (`crawler_items_checked`,
    /// `crawler_reclaimed`).
    pub(crate) fn reap(&mut self, clock: Clock, max_items: usize) -> usize {
        let mut reaped = 0;
        for i in 0..self.parts.len() {
            let mut h = self.parts[i].lru_tail;
            let (mut checked, mut here) = (0u64, 0u64);
            for _ in 0..max_items {
                if h == NIL {
                    break;
                }
                let prev = self.prev(h);
                checked += 1;
                if self.is_dead(h, clock) {
                    self.unlink(h);
                    here += 1;
                }
                h = prev;
            }
            let counters = &mut self.parts[i].counters;
            counters.crawler_items_checked += checked;
            counters.crawler_reclaimed += here;
            reaped += here as usize;
        }
        self.meters.counters.expired_reaped += reaped as u64;
        reaped
    }

    /// Gives back pages while the engine holds more than its limit (after `cache_memlimit` lowered it):
    /// each time from the partition with the most pages. At most `max_pages` moves.
    pub(crate) fn shrink_to_budget(&mut self, max_pages: usize) -> usize {
        let mut given = 0;
        while given < max_pages && self.globals.budget.over_limit() {
            let Some((i, _)) = self
                .parts
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.pages.is_empty())
                .max_by_key(|(_, c)| c.pages.len())
            else {
                break;
            };
            self.move_page(Part::from_index(i), None);
            given += 1;
        }
        given
    }
}
