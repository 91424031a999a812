//! The intrusive lists of a partition: its LRU (most recently used at the head, the next victim at the
//! tail) and its free list. Both thread through the same `[prev, next]` pair of each chunk, kept in the
//! dense `links` array beside its page, so relinking a hit never touches its neighbours' items.
//!
//! Invariants:
//! - A chunk is on at most one list: the LRU while its item is `LINKED`, the free list while `FREE`.
//! - Each list is consistent in both directions and ends in `NIL`; `lru_tail` is the LRU's last node
//!   and `free_chunks` counts the free list.

use super::{Part, Shard};
use crate::item::{bits, NIL};

impl Shard {
    #[inline]
    pub(super) fn links(&self, h: u32) -> [u32; 2] {
        let page = self.pages[(h >> self.chunk_bits) as usize]
            .as_ref()
            .expect("held page");
        page.links[(h & ((1 << self.chunk_bits) - 1)) as usize]
    }

    #[inline]
    pub(super) fn links_mut(&mut self, h: u32) -> &mut [u32; 2] {
        let mask = (1 << self.chunk_bits) - 1;
        let page = self.pages[(h >> self.chunk_bits) as usize]
            .as_mut()
            .expect("held page");
        &mut page.links[(h & mask) as usize]
    }

    #[inline]
    pub(super) fn prev(&self, h: u32) -> u32 {
        self.links(h)[0]
    }

    #[inline]
    pub(super) fn next(&self, h: u32) -> u32 {
        self.links(h)[1]
    }

    #[inline]
    pub(super) fn set_prev(&mut self, h: u32, to: u32) {
        self.links_mut(h)[0] = to;
    }

    #[inline]
    pub(super) fn set_next(&mut self, h: u32, to: u32) {
        self.links_mut(h)[1] = to;
    }

    #[inline]
    pub(super) fn lru_push_head(&mut self, part: Part, h: u32) {
        let head = self.parts[part.index()].lru_head;
        *self.links_mut(h) = [NIL, head];
        if head != NIL {
            self.set_prev(head, h);
        }
        let c = self.part_state(part);
        c.lru_head = h;
        if c.lru_tail == NIL {
            c.lru_tail = h;
        }
    }

    #[inline]
    pub(super) fn lru_unlink(&mut self, part: Part, h: u32) {
        let [prev, next] = self.links(h);
        if prev != NIL {
            self.set_next(prev, next);
        } else {
            self.part_state(part).lru_head = next;
        }
        if next != NIL {
            self.set_prev(next, prev);
        } else {
            self.part_state(part).lru_tail = prev;
        }
    }

    #[inline]
    pub(super) fn free_push(&mut self, part: Part, h: u32) {
        let head = self.parts[part.index()].free_head;
        self.item_mut(h).set_bits(bits::FREE);
        *self.links_mut(h) = [NIL, head];
        if head != NIL {
            self.set_prev(head, h);
        }
        let c = self.part_state(part);
        c.free_head = h;
        c.free_chunks += 1;
    }

    #[inline]
    pub(super) fn free_unlink(&mut self, part: Part, h: u32) {
        let [prev, next] = self.links(h);
        if prev != NIL {
            self.set_next(prev, next);
        } else {
            self.part_state(part).free_head = next;
        }
        if next != NIL {
            self.set_prev(next, prev);
        }
        self.item_mut(h).set_bits(0);
        self.part_state(part).free_chunks -= 1;
    }
}
