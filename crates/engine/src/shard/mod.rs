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

use std::sync::Arc;

use hashbrown::HashTable;

use crate::geometry::{ClassGeometry, ClassId, Geometry};
use crate::globals::Globals;
use crate::item::{bits, Item, ItemMut, NIL};
use crate::profiling::{ClassProfilers, ShardProfiling};
use crate::stats::{ClassCounters, ClassSnapshot, GlobalCounters, TenantCounters};
use crate::tenant::{Key, TenantId};
use crate::Clock;
use shadow::ShadowQueue;

mod invariants;
mod page_move;
mod shadow;

/// How many LRU tail items an allocation inspects for an expired one before evicting (memcached's 5 tries).
const RECLAIM_SEARCH_DEPTH: usize = 5;

/// A 64-bit hash of a key in its tenant (`Key::hash`). Shards use the high half, the index the low half,
/// profilers the whole.
#[inline]
pub fn hash_key(key: Key<'_>) -> u64 {
    key.hash()
}

/// The index stores `tag << 32 | handle` where `tag` is the low 32 bits of the key hash; this spreads a tag
/// into the 64-bit hash the table probes with, so resizing never touches item memory.
#[inline]
fn spread(tag: u32) -> u64 {
    (tag as u64 | 1 << 32).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Partition numbers leave room for every slab class memcached allows (63) in each pool.
const PART_STRIDE: usize = 64;

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
    Absent,
    Expired,
    Flushed,
}

/// The outcome of moving one page between classes: items relocated, and items evicted (from the page or,
/// to make room for relocations, from the class's LRU tail).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PageMove {
    pub rescued: usize,
    pub evicted: usize,
}

pub struct Shard {
    geometry: Arc<Geometry>,
    globals: Arc<Globals>,
    evict_when_full: bool,
    chunk_bits: u32,
    index: HashTable<u64>,
    pages: Vec<Option<Page>>,
    free_slots: Vec<u32>,
    /// Indexed by `Part::index`: `PART_STRIDE` per pool.
    parts: Vec<ClassState>,
    pub(crate) profilers: ClassProfilers,
    /// One profiler per pool, over all its classes, in bytes (only with more than one pool).
    pub(crate) pool_profilers: Option<ClassProfilers>,
    /// Each pool's shadow queue of recently evicted keys (Memshare), when configured.
    shadows: Vec<ShadowQueue>,
    pub(crate) counters: GlobalCounters,
    /// Per-tenant counters, indexed by `TenantId::index`, grown on a tenant's first use here.
    tenants: Vec<TenantCounters>,
    /// Most pages each class may hold in this shard (a fixed allocation), or `None` for demand filling.
    page_caps: Option<Vec<usize>>,
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
            index: HashTable::new(),
            pages: Vec::new(),
            free_slots: Vec::new(),
            profilers: ClassProfilers::new(
                profiling.classes,
                parts.len(),
                profiling.classes_created.clone(),
            ),
            pool_profilers: profiling.pools.map(|config| {
                ClassProfilers::new(Some(config), pools, profiling.pools_created.clone())
            }),
            shadows: (0..pools)
                .map(|_| ShadowQueue::new(profiling.shadow_bytes))
                .collect(),
            parts,
            counters: GlobalCounters::default(),
            tenants: Vec::new(),
            page_caps: None,
            rng: seed | 1,
        }
    }

    /// Fixes the most pages each class (by index) may take; `None` returns to demand filling. Classes
    /// over their cap keep their pages until moved; a class at its cap evicts from its own LRU.
    pub(crate) fn set_page_caps(&mut self, caps: Option<Vec<usize>>) {
        self.page_caps = caps;
    }

    fn below_cap(&self, part: Part) -> bool {
        self.page_caps.as_ref().is_none_or(|caps| {
            self.parts[part.index()].pages.len()
                < caps.get(part.class().index()).copied().unwrap_or(0)
        })
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
    fn links(&self, h: u32) -> [u32; 2] {
        let page = self.pages[(h >> self.chunk_bits) as usize]
            .as_ref()
            .expect("held page");
        page.links[(h & ((1 << self.chunk_bits) - 1)) as usize]
    }

    #[inline]
    fn links_mut(&mut self, h: u32) -> &mut [u32; 2] {
        let mask = (1 << self.chunk_bits) - 1;
        let page = self.pages[(h >> self.chunk_bits) as usize]
            .as_mut()
            .expect("held page");
        &mut page.links[(h & mask) as usize]
    }

    #[inline]
    fn prev(&self, h: u32) -> u32 {
        self.links(h)[0]
    }

    #[inline]
    fn next(&self, h: u32) -> u32 {
        self.links(h)[1]
    }

    #[inline]
    fn set_prev(&mut self, h: u32, to: u32) {
        self.links_mut(h)[0] = to;
    }

    #[inline]
    fn set_next(&mut self, h: u32, to: u32) {
        self.links_mut(h)[1] = to;
    }

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

    fn part_state(&mut self, part: Part) -> &mut ClassState {
        &mut self.parts[part.index()]
    }

    // ----- index -----

    fn index_find(&self, key: Key<'_>, hash: u64) -> Option<u32> {
        let tag = hash as u32;
        let (pages, bits) = (&self.pages, self.chunk_bits);
        self.index
            .find(spread(tag), |&e| {
                (e >> 32) as u32 == tag && Item(chunk_of(pages, bits, e as u32)).tenant_key() == key
            })
            .map(|&e| e as u32)
    }

    fn index_insert(&mut self, hash: u64, h: u32) {
        let tag = hash as u32;
        self.index
            .insert_unique(spread(tag), (tag as u64) << 32 | h as u64, |&e| {
                spread((e >> 32) as u32)
            });
    }

    /// Points the index entry of the item at `old` to `new` (same key, relocated or replaced).
    fn index_repoint(&mut self, old: u32, new: u32) {
        let hash = hash_key(self.item(old).tenant_key());
        let tag = hash as u32;
        let entry = self
            .index
            .find_mut(spread(tag), |&e| e as u32 == old)
            .expect("linked item is indexed");
        *entry = (tag as u64) << 32 | new as u64;
    }

    fn index_remove(&mut self, h: u32) {
        let hash = hash_key(self.item(h).tenant_key());
        let tag = hash as u32;
        match self.index.find_entry(spread(tag), |&e| e as u32 == h) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => unreachable!("linked item is indexed"),
        }
    }

    // ----- intrusive lists (LRU and free list share the prev/next fields) -----

    fn lru_push_head(&mut self, part: Part, h: u32) {
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

    fn lru_unlink(&mut self, part: Part, h: u32) {
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

    fn free_push(&mut self, part: Part, h: u32) {
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

    fn free_unlink(&mut self, part: Part, h: u32) {
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

    // ----- link / unlink -----

    /// Links a freshly written chunk: index, LRU head, accounting, a new CAS.
    fn link(&mut self, part: Part, hash: u64, h: u32) -> u64 {
        let cas = self.globals.next_cas();
        let geometry = self.geometry.clone();
        let (requested, tenant) = {
            let mut it = self.item_mut(h);
            it.set_cas(cas);
            it.insert_bits(bits::LINKED);
            let v = it.view();
            (
                geometry.item_total_bytes(v.key_len(), v.client_flags(), v.value_len()),
                v.tenant(),
            )
        };
        let t = self.tenant_counters_mut(tenant);
        t.items += 1;
        t.bytes += requested as u64;
        self.index_insert(hash, h);
        self.lru_push_head(part, h);
        self.record_use(part, hash, requested);
        let c = self.part_state(part);
        c.items += 1;
        c.requested_bytes += requested as u64;
        self.counters.total_items += 1;
        cas
    }

    /// Removes a linked item from the index and LRU and frees its chunk.
    pub(crate) fn unlink(&mut self, h: u32) {
        let part = self.part_of(h);
        let (requested, tenant) = {
            let v = self.item(h);
            (
                self.geometry
                    .item_total_bytes(v.key_len(), v.client_flags(), v.value_len()),
                v.tenant(),
            )
        };
        let t = self.tenant_counters_mut(tenant);
        t.items -= 1;
        t.bytes -= requested as u64;
        self.index_remove(h);
        self.lru_unlink(part, h);
        let c = self.part_state(part);
        c.items -= 1;
        c.requested_bytes -= requested as u64;
        self.free_push(part, h);
    }

    /// Replaces linked `old` by freshly written `new` (same key): `new` takes a new CAS and the LRU head.
    fn replace(&mut self, hash: u64, old: u32, new: u32) -> u64 {
        self.unlink(old);
        self.link(self.part_of(new), hash, new)
    }

    /// Moves a linked item (of key hash `hash`) to the LRU head and records the access time and the use
    /// in the class profiler, without marking it fetched (memcached's `do_item_update`, used by `add` on an
    /// existing key).
    pub(crate) fn promote(&mut self, h: u32, hash: u64, now: u32) {
        let part = self.part_of(h);
        if self.parts[part.index()].lru_head != h {
            self.lru_unlink(part, h);
            self.lru_push_head(part, h);
        }
        self.item_mut(h).set_atime(now);
        if self.profilers.enabled() || self.pool_profilers.is_some() {
            let it = self.item(h);
            let size =
                self.geometry
                    .item_total_bytes(it.key_len(), it.client_flags(), it.value_len());
            self.record_use(part, hash, size);
        }
    }

    /// Feeds one use of partition `part` to its profiler and its pool's.
    #[inline]
    fn record_use(&mut self, part: Part, hash: u64, size_bytes: usize) {
        self.profilers.record(part.index(), hash, size_bytes);
        if let Some(pools) = &mut self.pool_profilers {
            pools.record(part.pool(), hash, size_bytes);
        }
    }

    /// Records a read: LRU head, access time, fetched bit, profiler.
    pub(crate) fn bump(&mut self, h: u32, hash: u64, now: u32) {
        self.promote(h, hash, now);
        self.item_mut(h).insert_bits(bits::FETCHED);
    }

    // ----- lookup -----

    /// Finds a live item. Expired and flushed items found on the way are unlinked (lazy expiry).
    pub(crate) fn find(&mut self, key: Key<'_>, hash: u64, clock: Clock) -> Result<u32, Miss> {
        let h = self.index_find(key, hash).ok_or(Miss::Absent)?;
        let it = self.item(h);
        if clock.is_expired(it.expiry()) {
            self.unlink(h);
            return Err(Miss::Expired);
        }
        if self
            .globals
            .is_flushed(key.tenant, it.atime(), it.cas(), clock.now)
        {
            self.unlink(h);
            return Err(Miss::Flushed);
        }
        Ok(h)
    }

    fn is_dead(&self, h: u32, clock: Clock) -> bool {
        let it = self.item(h);
        clock.is_expired(it.expiry())
            || self
                .globals
                .is_flushed(it.tenant(), it.atime(), it.cas(), clock.now)
    }

    // ----- allocation -----

    /// A chunk for an item of `total_bytes` (accounted size, `Geometry::item_total_bytes`) of `tenant`,
    /// in the partition of its pool and class: a free chunk, a carved chunk, a new page, a page from a
    /// pool above its target (when this pool is below its own), an expired tail item, or the LRU tail
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
        // Memory is full. A pool below its target takes a page from the pool furthest above its own, so
        // targets are reached one page per allocation that needs it.
        if self.evict_when_full
            && self.below_cap(part)
            && self.globals.pools.below_target(part.pool())
        {
            if let Some(donor) = self.over_target_donor(part.pool()) {
                self.move_page(donor, part);
                if let Some(h) = self.take_free_chunk(part) {
                    return Ok((part, h));
                }
            }
        }
        if let Some(h) = self.reclaim_or_evict(part, clock) {
            return Ok((part, h));
        }
        // A partition with no page yet may get its first page (as memcached gives every class one),
        // from the largest partition of its own pool, else from another pool's memory above its
        // reserve, else over the limit. Not under a fixed allocation: the caps decide every page.
        if self.parts[part.index()].pages.is_empty() && self.page_caps.is_none() {
            let may_grow = self.globals.pools.may_grow(part.pool());
            match self.first_page_donor(part, may_grow) {
                Some(donor) => {
                    self.move_page(donor, part);
                }
                None if may_grow => self.add_page_unbudgeted(part),
                None => {}
            }
            if let Some(h) = self.take_free_chunk(part) {
                return Ok((part, h));
            }
        }
        self.part_state(part).counters.outofmemory += 1;
        Err(AllocError::OutOfMemory)
    }

    fn take_free_chunk(&mut self, part: Part) -> Option<u32> {
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

    fn reclaim_or_evict(&mut self, part: Part, clock: Clock) -> Option<u32> {
        if let Some(h) = self.reclaim(part, clock) {
            return Some(h);
        }
        self.evict_tail(part, clock)
    }

    /// An expired or flushed item among the class's LRU tail, unlinked, its chunk taken.
    fn reclaim(&mut self, part: Part, clock: Clock) -> Option<u32> {
        let mut h = self.parts[part.index()].lru_tail;
        for _ in 0..RECLAIM_SEARCH_DEPTH {
            if h == NIL {
                break;
            }
            if self.is_dead(h, clock) {
                let fetched = self.item(h).has(bits::FETCHED);
                let c = self.part_state(part);
                c.counters.reclaimed += 1;
                if !fetched {
                    c.counters.expired_unfetched += 1;
                }
                return Some(self.unlink_and_take(part, h));
            }
            h = self.prev(h);
        }
        None
    }

    /// The class's LRU tail evicted, its chunk taken (unless `-M`).
    fn evict_tail(&mut self, part: Part, clock: Clock) -> Option<u32> {
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
        let c = self.part_state(part);
        c.counters.evicted += 1;
        c.counters.evicted_time = clock.now.saturating_sub(atime) as u64;
        if expiry != 0 {
            c.counters.evicted_nonzero += 1;
        }
        if !fetched {
            c.counters.evicted_unfetched += 1;
        }
        self.remember_evicted(tail);
        Some(self.unlink_and_take(part, tail))
    }

    fn unlink_and_take(&mut self, part: Part, h: u32) -> u32 {
        self.unlink(h);
        self.free_unlink(part, h);
        h
    }

    /// Puts an item about to be evicted into its pool's shadow queue (when shadow queues are on).
    fn remember_evicted(&mut self, h: u32) {
        let pool = self.part_of(h).pool();
        if !self.shadows[pool].enabled() {
            return;
        }
        let it = self.item(h);
        let size = self
            .geometry
            .item_total_bytes(it.key_len(), it.client_flags(), it.value_len());
        let hash = hash_key(it.tenant_key());
        self.shadows[pool].push(hash, size as u64);
    }

    /// A GET miss of `key` (hash `hash`): if its pool's shadow queue holds it, it leaves the queue and
    /// counts as a shadow hit of the tenant. Returns whether it was one.
    pub(crate) fn note_get_miss(&mut self, tenant: TenantId, hash: u64) -> bool {
        let pool = self.globals.pools.pool_of(tenant);
        if !self.shadows[pool].enabled() || !self.shadows[pool].take(hash) {
            return false;
        }
        self.tenant_counters_mut(tenant).shadow_hits += 1;
        true
    }

    /// The partition of `pool` (in this shard) with the most pages, at least `min_pages`, other than
    /// `except`.
    fn largest_part_of(&self, pool: usize, except: Part, min_pages: usize) -> Option<Part> {
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
    fn over_target_donor(&self, pool: usize) -> Option<Part> {
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
    fn coldest_part_of(&self, pool: usize) -> Option<Part> {
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

    /// Where `part`'s first page comes from when memory is full: the largest partition of its own pool
    /// with a page to spare; if its pool may grow, a pool above its target, then a partition with a page
    /// to spare of any pool above its reserve and not below its target. `None` when none has one.
    fn first_page_donor(&self, part: Part, may_grow: bool) -> Option<Part> {
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

    /// Takes a page from the budget for `class`, if the budget allows.
    fn add_page(&mut self, part: Part) -> bool {
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

    /// A first page beyond the limit: the budget records it, so it is given back first.
    fn add_page_unbudgeted(&mut self, part: Part) {
        self.globals.budget.take_over_limit();
        self.install_page(part);
    }

    fn install_page(&mut self, part: Part) {
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
    fn assign_page(&mut self, slot: u32, part: Part) {
        let g = self.geom(part);
        self.globals.pools.gained(part.pool());
        let page = self.pages[slot as usize].as_mut().expect("held page");
        page.part = part;
        page.chunk_size_bytes = g.chunk_size_bytes;
        page.links.clear();
        page.links.resize(g.chunks_per_page, [NIL, NIL]);
        let c = self.part_state(part);
        c.pages.push(slot);
        // A class carves one page at a time; an older partly carved page keeps its uncarved tail unused.
        if let Some((old, next)) = c.carve.replace((slot, 0)) {
            self.abandon_carve(part, old, next);
        }
    }

    /// Puts the uncarved rest of a page on the free list, so no chunk is lost when a new carve starts.
    fn abandon_carve(&mut self, part: Part, slot: u32, next: u32) {
        let chunks_per_page = self.geom(part).chunks_per_page as u32;
        for i in next..chunks_per_page {
            self.free_push(part, slot << self.chunk_bits | i);
        }
    }

    // ----- maintenance -----

    /// Unlinks up to `max_items` expired or flushed items, walking each class LRU from its tail.
    /// Returns how many were removed. Bounded work: at most `max_items` inspections per class.
    pub(crate) fn reap(&mut self, clock: Clock, max_items: usize) -> usize {
        let mut reaped = 0;
        for i in 0..self.parts.len() {
            let mut h = self.parts[i].lru_tail;
            for _ in 0..max_items {
                if h == NIL {
                    break;
                }
                let prev = self.prev(h);
                if self.is_dead(h, clock) {
                    self.unlink(h);
                    reaped += 1;
                }
                h = prev;
            }
        }
        self.counters.expired_reaped += reaped as u64;
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

    /// A tenant's counters in this shard, created on its first use.
    pub(crate) fn tenant_counters_mut(&mut self, tenant: TenantId) -> &mut TenantCounters {
        if self.tenants.len() <= tenant.index() {
            self.tenants
                .resize(tenant.index() + 1, TenantCounters::default());
        }
        &mut self.tenants[tenant.index()]
    }

    pub(crate) fn tenant_counters(&self) -> &[TenantCounters] {
        &self.tenants
    }

    pub(crate) fn class_counters_mut(&mut self, part: Part) -> &mut ClassCounters {
        &mut self.part_state(part).counters
    }

    pub(crate) fn class_of_item(&self, h: u32) -> ClassId {
        self.part_of(h).class()
    }

    pub(crate) fn part_of_item(&self, h: u32) -> Part {
        self.part_of(h)
    }

    /// The partition a store of `tenant` in `class` goes to.
    pub(crate) fn part_for(&self, tenant: TenantId, class: ClassId) -> Part {
        Part::new(self.globals.pools.pool_of(tenant), class)
    }

    /// Every class of this shard: of one pool, or summed over all pools (`None`).
    pub(crate) fn snapshot(&self, clock: Clock, pool: Option<usize>) -> Vec<ClassSnapshot> {
        let pools = match pool {
            Some(p) => p..p + 1,
            None => 0..self.globals.pools.len(),
        };
        self.geometry
            .classes()
            .map(|(id, g)| {
                let mut snap = ClassSnapshot {
                    class: id,
                    chunk_size_bytes: g.chunk_size_bytes,
                    chunks_per_page: g.chunks_per_page,
                    total_pages: 0,
                    used_chunks: 0,
                    free_chunks: 0,
                    items: 0,
                    requested_bytes: 0,
                    tail_age_secs: 0,
                    counters: ClassCounters::default(),
                };
                for p in pools.clone() {
                    let c = &self.parts[Part::new(p, id).index()];
                    let uncarved = c
                        .carve
                        .map_or(0, |(_, next)| g.chunks_per_page - next as usize);
                    let tail_age_secs = if c.lru_tail == NIL {
                        0
                    } else {
                        clock.now.saturating_sub(self.item(c.lru_tail).atime())
                    };
                    snap.absorb(&ClassSnapshot {
                        total_pages: c.pages.len(),
                        used_chunks: c.items,
                        free_chunks: c.free_chunks + uncarved,
                        items: c.items,
                        requested_bytes: c.requested_bytes,
                        tail_age_secs,
                        counters: c.counters.clone(),
                        ..snap
                    });
                }
                snap
            })
            .collect()
    }

    /// Bytes of `pool`'s items not accessed within `idle_secs` of `clock.now`, found by walking each of
    /// its LRUs from the tail; at most `max_items` items per partition are inspected. Returns
    /// `(idle bytes, all bytes)` of the pool in this shard.
    pub(crate) fn idle_bytes(
        &self,
        pool: usize,
        idle_secs: u32,
        clock: Clock,
        max_items: usize,
    ) -> (u64, u64) {
        let (mut idle, mut all) = (0u64, 0u64);
        let base = pool * PART_STRIDE;
        for c in &self.parts[base..base + PART_STRIDE] {
            all += c.requested_bytes;
            let mut h = c.lru_tail;
            for _ in 0..max_items {
                if h == NIL {
                    break;
                }
                let it = self.item(h);
                if clock.now.saturating_sub(it.atime()) < idle_secs {
                    break;
                }
                idle +=
                    self.geometry
                        .item_total_bytes(it.key_len(), it.client_flags(), it.value_len())
                        as u64;
                h = self.prev(h);
            }
        }
        (idle, all)
    }

    pub(crate) fn reset_counters(&mut self) {
        self.counters = GlobalCounters::default();
        for c in &mut self.parts {
            c.counters = ClassCounters::default();
        }
        // Items and bytes are state, not counters: they survive `stats reset`.
        for t in &mut self.tenants {
            *t = TenantCounters {
                items: t.items,
                bytes: t.bytes,
                ..TenantCounters::default()
            };
        }
    }

    /// Number of linked items.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    // ----- operations used by the engine facade -----

    /// Writes a new item into a fresh chunk and links it, replacing any item of the same key (looked up after
    /// the allocation, which may have evicted it). Returns the chunk and its CAS.
    pub(crate) fn write_and_link(
        &mut self,
        key: Key<'_>,
        hash: u64,
        client_flags: u32,
        expiry: u32,
        parts: &[&[u8]],
        clock: Clock,
    ) -> Result<(u32, u64), AllocError> {
        let value_len = parts.iter().map(|p| p.len()).sum();
        // `-I` is memcached's limit whatever the accounting; `alloc` only checks the accounted size.
        if !self
            .geometry
            .within_item_limit(key.bytes.len(), client_flags, value_len)
        {
            return Err(AllocError::TooLarge);
        }
        let total = self
            .geometry
            .item_total_bytes(key.bytes.len(), client_flags, value_len);
        // Allocation may evict the old item itself; find it again afterwards.
        let (part, h) = self.alloc(total, key.tenant, clock)?;
        self.item_mut(h)
            .init(key, client_flags, expiry, clock.now, parts);
        let cas = match self.index_find(key, hash) {
            Some(old) => self.replace(hash, old, h),
            None => self.link(part, hash, h),
        };
        Ok((h, cas))
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub(crate) fn globals(&self) -> &Globals {
        &self.globals
    }
}
