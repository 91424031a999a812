//! The shard's invariant checker: walks every list and table and checks the module invariants of
//! `shard`. O(items + chunks); for tests, the simulator and debugging, never the request path.

use super::{hash_key, Part, Shard};
use crate::item::{bits, NIL};

impl Shard {
    /// Walks every structure and checks the module invariants; O(items + chunks). For tests and debugging.
    /// Returns the pages each pool holds in this shard.
    pub(crate) fn check_invariants(&self) -> Result<Vec<usize>, String> {
        let mut linked = 0;
        let mut pages_held = 0;
        let mut pool_pages = vec![0usize; self.globals.pools.len()];
        for (i, c) in self.parts.iter().enumerate() {
            let part = Part::from_index(i);
            if c.pages.is_empty() && c.items == 0 && c.free_chunks == 0 {
                continue;
            }
            pool_pages[part.pool()] += c.pages.len();
            let g = self.geom(part);
            // LRU: consistent in both directions, every item linked, indexed and of this partition.
            let (mut n, mut prev, mut h) = (0, NIL, c.lru_head);
            while h != NIL {
                let it = self.item(h);
                if self.prev(h) != prev || !it.has(bits::LINKED) || it.has(bits::FREE) {
                    return Err(format!("{:?}: bad LRU node {h:#x}", part));
                }
                if self.part_of(h) != part
                    || self.index_find(it.tenant_key(), hash_key(it.tenant_key())) != Some(h)
                {
                    return Err(format!("{:?}: LRU item {h:#x} not indexed here", part));
                }
                n += 1;
                prev = h;
                h = self.next(h);
            }
            if prev != c.lru_tail || n != c.items {
                return Err(format!(
                    "{:?}: LRU count {n} vs {} or bad tail",
                    part, c.items
                ));
            }
            let (mut free, mut fprev, mut f) = (0, NIL, c.free_head);
            while f != NIL {
                let it = self.item(f);
                if self.prev(f) != fprev || !it.has(bits::FREE) || self.part_of(f) != part {
                    return Err(format!("{:?}: bad free node {f:#x}", part));
                }
                free += 1;
                fprev = f;
                f = self.next(f);
            }
            if free != c.free_chunks {
                return Err(format!("{:?}: free list {free} vs {}", part, c.free_chunks));
            }
            let uncarved = c
                .carve
                .map_or(0, |(_, next)| g.chunks_per_page - next as usize);
            if c.items + c.free_chunks + uncarved != c.pages.len() * g.chunks_per_page {
                return Err(format!(
                    "{:?}: {} items + {} free + {uncarved} uncarved != {} pages",
                    part,
                    c.items,
                    c.free_chunks,
                    c.pages.len()
                ));
            }
            for &slot in &c.pages {
                if self.pages[slot as usize].as_ref().map(|p| p.part) != Some(part) {
                    return Err(format!("{part:?}: page {slot} not of it"));
                }
            }
            linked += c.items;
            pages_held += c.pages.len();
        }
        if linked != self.index.len() {
            return Err(format!(
                "{linked} linked items but {} indexed",
                self.index.len()
            ));
        }
        let tenant_items: u64 = self.tenants.iter().map(|t| t.items).sum();
        if tenant_items != linked as u64 {
            return Err(format!(
                "{linked} linked items but tenants count {tenant_items}"
            ));
        }
        if pages_held != self.pages.len() - self.free_slots.len() {
            return Err("page table and class page lists disagree".into());
        }
        Ok(pool_pages)
    }
}
