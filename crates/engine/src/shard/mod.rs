//! One shard: a hash index over items stored in slab pages, with one exact LRU per partition.
//!
//! A partition (`Part`) is one slab class of one tenant pool (`pool`): pages belong to partitions, and
//! each partition has its own free list and LRU. With one pool (the default) partitions are exactly
//! memcached's slab classes.
//!
//! A shard is single-threaded (`&mut self`); the `Engine` puts each behind its own lock and routes keys to
//! shards by hash. Everything here is deterministic: time comes in as a `Clock`, nothing reads the wall clock.
//!
//! Invariants:
//! - Every chunk of every page this shard holds is in exactly one state: uncarved (past its class's carve
//!   cursor), free (on the class's free list, `FREE` bit), or linked (in the index and the class LRU, `LINKED`).
//! - A page belongs to exactly one partition; `parts[p].pages` lists the page slots of partition `p`, and
//!   the pool table's `held` of each pool counts its partitions' pages over all shards.
//! - Pages are taken from the engine-wide `PageBudget` and returned to it when released, so the sum of pages
//!   over all shards never exceeds the limit, except for first pages (see `alloc`).
//! - Handles are `page_slot << chunk_bits | chunk_index`; a handle is valid while its page is held.
//!
//! Files, one concern each: `index` (the hash index), `lists` (LRU and free lists), `items` (link,
//! unlink, lookup), `alloc` (chunks and pages), `donor` (who gives a page), `page_move` (moving one),
//! `shadow` (Memshare's shadow queue), `meters` (counters, profilers and shadow queues, shared with
//! the log layout), `maintenance` (reaping, shrinking), `restart` (walking live
//! items and restoring saved ones, for a warm restart), `snapshot` (counters and class snapshots)
//! and `invariants` (the checker of all of the above).

use std::sync::Arc;

use crate::geometry::{ClassGeometry, ClassId, Geometry};
use crate::globals::Globals;
use crate::item::{Item, ItemMut, NIL};
use crate::profiling::ShardProfiling;
use crate::stats::ClassCounters;

mod alloc;
mod donor;
mod index;
mod invariants;
mod items;
mod lists;
mod maintenance;
mod meters;
mod page_move;
mod restart;
mod shadow;
mod snapshot;

pub(crate) use index::{hash_key, KeyIndex};
pub use invariants::{InvariantError, Partition, Violation};
pub(crate) use meters::ShardMeters;
pub(crate) use restart::WalkPosition;
pub(crate) use shadow::ShadowQueue;

/// Partition numbers leave room for every slab class memcached allows (63) in each pool.
pub(crate) const PART_STRIDE: usize = 64;

/// A partition: slab class `class` of tenant pool `pool`, numbered `pool * 64 + class index`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Part(u32);

impl Part {
    pub(crate) fn new(pool: usize, class: ClassId) -> Part {
        Part((pool * PART_STRIDE + class.index()) as u32)
    }

    fn from_index(index: usize) -> Part {
        Part(index as u32)
    }

    #[inline]
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    #[inline]
    pub(crate) fn pool(self) -> usize {
        self.0 as usize / PART_STRIDE
    }

    #[inline]
    pub(crate) fn class(self) -> ClassId {
        ClassId::from_index(self.0 as usize % PART_STRIDE)
    }
}

/// One page of a shard: its chunks' bytes, their list links, and the partition that holds it.
struct Page {
    mem: Box<[u8]>,
    /// `[prev, next]` of each chunk: its neighbours in the class LRU while linked, in the free list while
    /// free. Dense, so the neighbours of a hit are found without touching their items.
    links: Vec<[u32; 2]>,
    part: Part,
    chunk_size_bytes: usize,
}

/// One partition (a slab class of a pool) within a shard: its pages, free chunks and LRU.
#[derive(Default)]
struct ClassState {
    pages: Vec<u32>,
    free_head: u32,
    free_chunks: usize,
    /// The page being carved into chunks and the next chunk index in it.
    carve: Option<(u32, u32)>,
    /// Most recently used.
    lru_head: u32,
    /// Least recently used: the next victim.
    lru_tail: u32,
    items: usize,
    requested_bytes: u64,
    counters: ClassCounters,
    /// The partition of the same pool that took this partition's last page by a page move (or took a
    /// page from that one when it could spare none), while this one has none: its first page comes back
    /// from there (`Shard::first_page_donor`).
    lent_to: Option<Part>,
}

impl ClassState {
    fn new() -> ClassState {
        ClassState {
            free_head: NIL,
            lru_head: NIL,
            lru_tail: NIL,
            ..Default::default()
        }
    }
}

/// Why an allocation failed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The item is larger than `-I`.
    TooLarge,
    /// No memory and eviction is off (`-M`), or nothing could be evicted.
    OutOfMemory,
}

/// Why a lookup found nothing.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Miss {
    /// No item of that key.
    Absent,
    /// The item's expiry passed; it was unlinked on the way (lazy expiry).
    Expired,
    /// A `flush_all` of its tenant took effect after it was stored; it was unlinked on the way.
    Flushed,
}

/// What moving one page between partitions did (`Engine::move_page`): items relocated, and items
/// evicted (from the page or, to make room for relocations, from the partition's LRU tail). Not to be
/// confused with `mrcache_policy::PageMove`, a move the optimizer plans.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PageMoveOutcome {
    /// Live items of the page copied into other chunks of their partition.
    pub rescued: usize,
    /// Items evicted by the move.
    pub evicted: usize,
}

/// One hash partition of the key space: its index, pages and partitions. Single-threaded; see the
/// module invariants.
pub(crate) struct Shard {
    geometry: Arc<Geometry>,
    globals: Arc<Globals>,
    evict_when_full: bool,
    chunk_bits: u32,
    index: KeyIndex,
    pages: Vec<Option<Page>>,
    free_slots: Vec<u32>,
    /// Indexed by `Part::index`: `PART_STRIDE` per pool.
    parts: Vec<ClassState>,
    /// Counters, profilers and shadow queues, as the log layout keeps them.
    pub(crate) meters: ShardMeters,
    /// Most pages each class may hold in this shard (a fixed allocation), or `None` for demand filling.
    page_caps: Option<Vec<usize>>,
    /// Under caps, whether a class with no page still gets its first page as under demand filling
    /// (memcached's rule) instead of storing nothing until a cap gives it one.
    first_pages_under_caps: bool,
    /// State of the random page choice of `evict_random_page`.
    rng: u64,
}

#[inline]
fn chunk_of(pages: &[Option<Page>], chunk_bits: u32, h: u32) -> &[u8] {
    let page = pages[(h >> chunk_bits) as usize]
        .as_ref()
        .expect("handle to a held page");
    let at = (h & ((1 << chunk_bits) - 1)) as usize * page.chunk_size_bytes;
    &page.mem[at..at + page.chunk_size_bytes]
}

#[inline]
fn chunk_of_mut(pages: &mut [Option<Page>], chunk_bits: u32, h: u32) -> &mut [u8] {
    let page = pages[(h >> chunk_bits) as usize]
        .as_mut()
        .expect("handle to a held page");
    let at = (h & ((1 << chunk_bits) - 1)) as usize * page.chunk_size_bytes;
    &mut page.mem[at..at + page.chunk_size_bytes]
}

impl Shard {
    pub(crate) fn new(
        geometry: Arc<Geometry>,
        globals: Arc<Globals>,
        evict_when_full: bool,
        profiling: &ShardProfiling,
        seed: u64,
    ) -> Shard {
        let max_chunks = geometry
            .classes()
            .map(|(_, c)| c.chunks_per_page)
            .max()
            .unwrap_or(1);
        let chunk_bits = usize::BITS - (max_chunks - 1).max(1).leading_zeros();
        let pools = globals.pools.len();
        let parts: Vec<ClassState> = (0..pools * PART_STRIDE)
            .map(|_| ClassState::new())
            .collect();
        Shard {
            geometry,
            globals,
            evict_when_full,
            chunk_bits,
            index: KeyIndex::default(),
            pages: Vec::new(),
            free_slots: Vec::new(),
            meters: ShardMeters::new(profiling, pools),
            parts,
            page_caps: None,
            first_pages_under_caps: false,
            rng: seed | 1,
        }
    }

    /// Most pages one shard can address.
    pub(crate) fn max_pages(&self) -> usize {
        1usize << (32 - self.chunk_bits)
    }

    #[inline]
    fn chunk(&self, h: u32) -> &[u8] {
        chunk_of(&self.pages, self.chunk_bits, h)
    }

    #[inline]
    fn chunk_mut(&mut self, h: u32) -> &mut [u8] {
        chunk_of_mut(&mut self.pages, self.chunk_bits, h)
    }

    #[inline]
    pub(crate) fn item(&self, h: u32) -> Item<'_> {
        Item(self.chunk(h))
    }

    #[inline]
    pub(crate) fn item_mut(&mut self, h: u32) -> ItemMut<'_> {
        ItemMut(self.chunk_mut(h))
    }

    #[inline]
    fn part_of(&self, h: u32) -> Part {
        self.pages[(h >> self.chunk_bits) as usize]
            .as_ref()
            .expect("held page")
            .part
    }

    #[inline]
    fn geom(&self, part: Part) -> ClassGeometry {
        self.geometry.class(part.class())
    }

    #[inline]
    fn part_state(&mut self, part: Part) -> &mut ClassState {
        &mut self.parts[part.index()]
    }

    pub(crate) fn class_of_item(&self, h: u32) -> ClassId {
        self.part_of(h).class()
    }

    pub(crate) fn part_of_item(&self, h: u32) -> Part {
        self.part_of(h)
    }

    /// Number of linked items.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// The hash index of the linked items (an item walk steps through its buckets).
    pub(crate) fn index(&self) -> &KeyIndex {
        &self.index
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub(crate) fn globals(&self) -> &Globals {
        &self.globals
    }
}
