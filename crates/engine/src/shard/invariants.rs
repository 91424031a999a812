//! The shard's invariant checker: walks every list and table and checks the module invariants of
//! `shard`. O(items + chunks); for tests, the simulator and debugging, never the request path.
//!
//! A broken invariant is reported as a `Violation` naming the structure and the partition;
//! `Engine::check_invariants` wraps it with the shard's number in an `InvariantError`, beside the
//! engine-wide checks (pool table and page budget against the pages the shards hold).

use super::{hash_key, Part, Shard};
use crate::geometry::ClassId;
use crate::item::{bits, NIL};

/// A partition named for a report: slab class `class` of tenant pool `pool`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// The tenant pool (0 unless tenants have pools of their own).
    pub pool: usize,
    /// The slab class.
    pub class: ClassId,
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "pool {} class {}", self.pool, self.class.0)
    }
}

impl From<Part> for Partition {
    fn from(part: Part) -> Partition {
        Partition {
            pool: part.pool(),
            class: part.class(),
        }
    }
}

/// A broken invariant of one shard. Handles are printed in hex (`page_slot << chunk_bits | chunk`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// An LRU node whose back link is wrong, or whose item is not linked, or is free.
    #[error("{part}: bad LRU node {handle:#x}")]
    BadLruNode {
        /// The partition whose LRU it is.
        part: Partition,
        /// The node.
        handle: u32,
    },
    /// An item on a partition's LRU that lies in another partition's page or is not in the index.
    #[error("{part}: LRU item {handle:#x} not indexed here")]
    LruItemNotIndexed {
        /// The partition whose LRU it is.
        part: Partition,
        /// The item.
        handle: u32,
    },
    /// The LRU's length differs from the partition's item count, or its tail is not its last node.
    #[error("{part}: LRU count {walked} vs {items} or bad tail")]
    LruCount {
        /// The partition.
        part: Partition,
        /// Nodes found walking the LRU.
        walked: usize,
        /// The partition's item count.
        items: usize,
    },
    /// A free-list node whose back link is wrong, whose chunk is not free, or of another partition.
    #[error("{part}: bad free node {handle:#x}")]
    BadFreeNode {
        /// The partition whose free list it is.
        part: Partition,
        /// The node.
        handle: u32,
    },
    /// The free list's length differs from the partition's free chunk count.
    #[error("{part}: free list {walked} vs {free_chunks}")]
    FreeCount {
        /// The partition.
        part: Partition,
        /// Nodes found walking the free list.
        walked: usize,
        /// The partition's free chunk count.
        free_chunks: usize,
    },
    /// Items, free and uncarved chunks do not add up to the chunks of the partition's pages.
    #[error("{part}: {items} items + {free_chunks} free + {uncarved} uncarved != {pages} pages")]
    ChunkCount {
        /// The partition.
        part: Partition,
        /// Linked items.
        items: usize,
        /// Free chunks.
        free_chunks: usize,
        /// Chunks past the carve cursor.
        uncarved: usize,
        /// Pages the partition holds.
        pages: usize,
    },
    /// A page listed by a partition that the page table gives to another (or to none).
    #[error("{part}: page {slot} not of it")]
    ForeignPage {
        /// The partition that lists it.
        part: Partition,
        /// The page slot.
        slot: u32,
    },
    /// The index holds a different number of entries than the partitions have linked items.
    #[error("{linked} linked items but {indexed} indexed")]
    IndexCount {
        /// Linked items over all partitions.
        linked: usize,
        /// Index entries.
        indexed: usize,
    },
    /// The tenants' item counts do not add up to the linked items.
    #[error("{linked} linked items but tenants count {tenant_items}")]
    TenantItems {
        /// Linked items over all partitions.
        linked: usize,
        /// Items counted over all tenants.
        tenant_items: u64,
    },
    /// The page table holds a different number of pages than the partitions list.
    #[error("page table and class page lists disagree")]
    PageTable,
    /// The log layout's segments, records, index or accounting disagree (the message says where).
    #[error("log: {0}")]
    Log(String),
}

/// A broken invariant found by `Engine::check_invariants`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InvariantError {
    /// Inside one shard.
    #[error("shard {shard}: {violation}")]
    Shard {
        /// The shard's number.
        shard: usize,
        /// What is wrong in it.
        violation: Violation,
    },
    /// The shards hold a different number of a pool's pages than the pool table counts.
    #[error("pool {pool}: shards hold {held} pages, the pool table says {counted}")]
    PoolPages {
        /// The pool.
        pool: usize,
        /// Its pages summed over the shards.
        held: usize,
        /// Its pages by the pool table.
        counted: usize,
    },
    /// The shards hold a different number of pages than the page budget counts as in use.
    #[error("shards hold {held} pages, budget says {in_use}")]
    BudgetPages {
        /// Pages summed over the shards.
        held: usize,
        /// Pages in use by the budget.
        in_use: usize,
    },
}

impl Shard {
    /// Walks every structure and checks the module invariants; O(items + chunks). For tests and debugging.
    /// Returns the pages each pool holds in this shard.
    pub(crate) fn check_invariants(&self) -> Result<Vec<usize>, Violation> {
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
            let named = Partition::from(part);
            // LRU: consistent in both directions, every item linked, indexed and of this partition.
            let (mut n, mut prev, mut h) = (0, NIL, c.lru_head);
            while h != NIL {
                let it = self.item(h);
                if self.prev(h) != prev || !it.has(bits::LINKED) || it.has(bits::FREE) {
                    return Err(Violation::BadLruNode {
                        part: named,
                        handle: h,
                    });
                }
                if self.part_of(h) != part
                    || self.index_find(it.tenant_key(), hash_key(it.tenant_key())) != Some(h)
                {
                    return Err(Violation::LruItemNotIndexed {
                        part: named,
                        handle: h,
                    });
                }
                n += 1;
                prev = h;
                h = self.next(h);
            }
            if prev != c.lru_tail || n != c.items {
                return Err(Violation::LruCount {
                    part: named,
                    walked: n,
                    items: c.items,
                });
            }
            let (mut free, mut fprev, mut f) = (0, NIL, c.free_head);
            while f != NIL {
                let it = self.item(f);
                if self.prev(f) != fprev || !it.has(bits::FREE) || self.part_of(f) != part {
                    return Err(Violation::BadFreeNode {
                        part: named,
                        handle: f,
                    });
                }
                free += 1;
                fprev = f;
                f = self.next(f);
            }
            if free != c.free_chunks {
                return Err(Violation::FreeCount {
                    part: named,
                    walked: free,
                    free_chunks: c.free_chunks,
                });
            }
            let uncarved = c
                .carve
                .map_or(0, |(_, next)| g.chunks_per_page - next as usize);
            if c.items + c.free_chunks + uncarved != c.pages.len() * g.chunks_per_page {
                return Err(Violation::ChunkCount {
                    part: named,
                    items: c.items,
                    free_chunks: c.free_chunks,
                    uncarved,
                    pages: c.pages.len(),
                });
            }
            for &slot in &c.pages {
                if self.pages[slot as usize].as_ref().map(|p| p.part) != Some(part) {
                    return Err(Violation::ForeignPage { part: named, slot });
                }
            }
            linked += c.items;
            pages_held += c.pages.len();
        }
        self.meters.check_linked(linked, self.index.len())?;
        if pages_held != self.pages.len() - self.free_slots.len() {
            return Err(Violation::PageTable);
        }
        Ok(pool_pages)
    }
}
