//! The shard's invariant checker: walks every list and table and checks the module invariants of
//! `shard`. O(items + chunks); for tests, the simulator and debugging, never the request path.

use super::{hash_key, Shard};
use crate::geometry::ClassId;
use crate::item::{bits, NIL};

impl Shard {
    /// Walks every structure and checks the module invariants; O(items + chunks). For tests and debugging.
    pub(crate) fn check_invariants(&self) -> Result<usize, String> {
        let mut linked = 0;
        let mut pages_held = 0;
        for (i, c) in self.classes.iter().enumerate() {
            let class = ClassId::from_index(i);
            let g = self.geometry.class(class);
            // LRU: consistent in both directions, every item linked, indexed and of this class.
            let (mut n, mut prev, mut h) = (0, NIL, c.lru_head);
            while h != NIL {
                let it = self.item(h);
                if self.prev(h) != prev || !it.has(bits::LINKED) || it.has(bits::FREE) {
                    return Err(format!("class {}: bad LRU node {h:#x}", class.0));
                }
                if self.class_of(h) != class
                    || self.index_find(it.tenant_key(), hash_key(it.tenant_key())) != Some(h)
                {
                    return Err(format!(
                        "class {}: LRU item {h:#x} not indexed here",
                        class.0
                    ));
                }
                n += 1;
                prev = h;
                h = self.next(h);
            }
            if prev != c.lru_tail || n != c.items {
                return Err(format!(
                    "class {}: LRU count {n} vs {} or bad tail",
                    class.0, c.items
                ));
            }
            let (mut free, mut fprev, mut f) = (0, NIL, c.free_head);
            while f != NIL {
                let it = self.item(f);
                if self.prev(f) != fprev || !it.has(bits::FREE) || self.class_of(f) != class {
                    return Err(format!("class {}: bad free node {f:#x}", class.0));
                }
                free += 1;
                fprev = f;
                f = self.next(f);
            }
            if free != c.free_chunks {
                return Err(format!(
                    "class {}: free list {free} vs {}",
                    class.0, c.free_chunks
                ));
            }
            let uncarved = c
                .carve
                .map_or(0, |(_, next)| g.chunks_per_page - next as usize);
            if c.items + c.free_chunks + uncarved != c.pages.len() * g.chunks_per_page {
                return Err(format!(
                    "class {}: {} items + {} free + {uncarved} uncarved != {} pages",
                    class.0,
                    c.items,
                    c.free_chunks,
                    c.pages.len()
                ));
            }
            for &slot in &c.pages {
                if self.pages[slot as usize].as_ref().map(|p| p.class) != Some(class) {
                    return Err(format!("class {}: page {slot} not of this class", class.0));
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
        Ok(pages_held)
    }
}
