//! One shard: a hash index over items stored in slab pages, with one exact LRU per slab class.
//!
//! A shard is single-threaded (`&mut self`); the `Engine` puts each behind its own lock and routes keys to
//! shards by hash. Everything here is deterministic: time comes in as a `Clock`, nothing reads the wall clock.
//!
//! Invariants:
//! - Every chunk of every page this shard holds is in exactly one state: uncarved (past its class's carve
//!   cursor), free (on the class's free list, `FREE` bit), or linked (in the index and the class LRU, `LINKED`).
//! - A page belongs to exactly one class; `classes[c].pages` lists the page slots of class `c`.
//! - Pages are taken from the engine-wide `PageBudget` and returned to it when released, so the sum of pages
//!   over all shards never exceeds the limit, except for first pages (see `alloc`).
//! - Handles are `page_slot << chunk_bits | chunk_index`; a handle is valid while its page is held.

use std::sync::Arc;

use hashbrown::HashTable;

use crate::geometry::{ClassId, Geometry};
use crate::globals::Globals;
use crate::item::{bits, Item, ItemMut, NIL};
use crate::profiling::{ClassProfilers, ProfilingConfig};
use crate::stats::{ClassCounters, ClassSnapshot, GlobalCounters, TenantCounters};
use crate::tenant::{Key, TenantId};
use crate::Clock;

mod invariants;
mod page_move;

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

struct Page {
    mem: Box<[u8]>,
    /// `[prev, next]` of each chunk: its neighbours in the class LRU while linked, in the free list while
    /// free. Dense, so the neighbours of a hit are found without touching their items.
    links: Vec<[u32; 2]>,
    class: ClassId,
    chunk_size_bytes: usize,
}

/// One slab class within a shard: its pages, free chunks and LRU.
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
    classes: Vec<ClassState>,
    pub(crate) profilers: ClassProfilers,
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
        profiling: Option<ProfilingConfig>,
        profilers_created: Arc<std::sync::atomic::AtomicUsize>,
        seed: u64,
    ) -> Shard {
        let max_chunks = geometry
            .classes()
            .map(|(_, c)| c.chunks_per_page)
            .max()
            .unwrap_or(1);
        let chunk_bits = usize::BITS - (max_chunks - 1).max(1).leading_zeros();
        let classes: Vec<ClassState> = (0..geometry.class_count())
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
            profilers: ClassProfilers::new(profiling, classes.len(), profilers_created),
            classes,
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

    fn below_cap(&self, class: ClassId) -> bool {
        self.page_caps.as_ref().is_none_or(|caps| {
            self.classes[class.index()].pages.len() < caps.get(class.index()).copied().unwrap_or(0)
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

    fn class_of(&self, h: u32) -> ClassId {
        self.pages[(h >> self.chunk_bits) as usize]
            .as_ref()
            .expect("held page")
            .class
    }

    fn class_state(&mut self, class: ClassId) -> &mut ClassState {
        &mut self.classes[class.index()]
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

    fn lru_push_head(&mut self, class: ClassId, h: u32) {
        let head = self.classes[class.index()].lru_head;
        *self.links_mut(h) = [NIL, head];
        if head != NIL {
            self.set_prev(head, h);
        }
        let c = self.class_state(class);
        c.lru_head = h;
        if c.lru_tail == NIL {
            c.lru_tail = h;
        }
    }

    fn lru_unlink(&mut self, class: ClassId, h: u32) {
        let [prev, next] = self.links(h);
        if prev != NIL {
            self.set_next(prev, next);
        } else {
            self.class_state(class).lru_head = next;
        }
        if next != NIL {
            self.set_prev(next, prev);
        } else {
            self.class_state(class).lru_tail = prev;
        }
    }

    fn free_push(&mut self, class: ClassId, h: u32) {
        let head = self.classes[class.index()].free_head;
        self.item_mut(h).set_bits(bits::FREE);
        *self.links_mut(h) = [NIL, head];
        if head != NIL {
            self.set_prev(head, h);
        }
        let c = self.class_state(class);
        c.free_head = h;
        c.free_chunks += 1;
    }

    fn free_unlink(&mut self, class: ClassId, h: u32) {
        let [prev, next] = self.links(h);
        if prev != NIL {
            self.set_next(prev, next);
        } else {
            self.class_state(class).free_head = next;
        }
        if next != NIL {
            self.set_prev(next, prev);
        }
        self.item_mut(h).set_bits(0);
        self.class_state(class).free_chunks -= 1;
    }

    // ----- link / unlink -----

    /// Links a freshly written chunk: index, LRU head, accounting, a new CAS.
    fn link(&mut self, class: ClassId, hash: u64, h: u32) -> u64 {
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
        self.lru_push_head(class, h);
        self.profilers.record(class.index(), hash, requested);
        let c = self.class_state(class);
        c.items += 1;
        c.requested_bytes += requested as u64;
        self.counters.total_items += 1;
        cas
    }

    /// Removes a linked item from the index and LRU and frees its chunk.
    pub(crate) fn unlink(&mut self, h: u32) {
        let class = self.class_of(h);
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
        self.lru_unlink(class, h);
        let c = self.class_state(class);
        c.items -= 1;
        c.requested_bytes -= requested as u64;
        self.free_push(class, h);
    }

    /// Replaces linked `old` by freshly written `new` (same key): `new` takes a new CAS and the LRU head.
    fn replace(&mut self, hash: u64, old: u32, new: u32) -> u64 {
        self.unlink(old);
        self.link(self.class_of(new), hash, new)
    }

    /// Moves a linked item (of key hash `hash`) to the LRU head and records the access time and the use
    /// in the class profiler, without marking it fetched (memcached's `do_item_update`, used by `add` on an
    /// existing key).
    pub(crate) fn promote(&mut self, h: u32, hash: u64, now: u32) {
        let class = self.class_of(h);
        if self.classes[class.index()].lru_head != h {
            self.lru_unlink(class, h);
            self.lru_push_head(class, h);
        }
        self.item_mut(h).set_atime(now);
        if self.profilers.enabled() {
            let it = self.item(h);
            let size =
                self.geometry
                    .item_total_bytes(it.key_len(), it.client_flags(), it.value_len());
            self.profilers.record(class.index(), hash, size);
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

    /// A chunk for an item of `total_bytes` (accounted size, `Geometry::item_total_bytes`): a free chunk, a carved chunk, a new
    /// page, an expired tail item, or the LRU tail evicted. The chunk is not linked; the caller writes and
    /// links it at once (`write_and_link`).
    pub(crate) fn alloc(
        &mut self,
        total_bytes: usize,
        clock: Clock,
    ) -> Result<(ClassId, u32), AllocError> {
        let class = self
            .geometry
            .class_for(total_bytes)
            .ok_or(AllocError::TooLarge)?;
        if let Some(h) = self.take_free_chunk(class) {
            return Ok((class, h));
        }
        if self.add_page(class) {
            let h = self.take_free_chunk(class).expect("a new page has chunks");
            return Ok((class, h));
        }
        if self.globals.random_page_eviction() && self.evict_when_full && self.below_cap(class) {
            // Twemcache: expired items first, then a random page of any class, emptied.
            if let Some(h) = self.reclaim(class, clock) {
                return Ok((class, h));
            }
            if self.evict_random_page(class).is_some() {
                if let Some(h) = self.take_free_chunk(class) {
                    return Ok((class, h));
                }
            }
        }
        if let Some(h) = self.reclaim_or_evict(class, clock) {
            return Ok((class, h));
        }
        // A class with no page yet may always get its first page (as in memcached), taken from the largest
        // class of this shard when that has pages to spare, else over the limit. Not under a fixed
        // allocation: the caps decide every class's pages.
        if self.classes[class.index()].pages.is_empty() && self.page_caps.is_none() {
            if let Some(donor) = self.largest_class(class) {
                self.move_page(donor, class);
            } else {
                self.add_page_unbudgeted(class);
            }
            if let Some(h) = self.take_free_chunk(class) {
                return Ok((class, h));
            }
        }
        self.class_state(class).counters.outofmemory += 1;
        Err(AllocError::OutOfMemory)
    }

    fn take_free_chunk(&mut self, class: ClassId) -> Option<u32> {
        let head = self.classes[class.index()].free_head;
        if head != NIL {
            self.free_unlink(class, head);
            return Some(head);
        }
        let chunks_per_page = self.geometry.class(class).chunks_per_page as u32;
        let c = self.class_state(class);
        let (slot, next) = c.carve?;
        c.carve = (next + 1 < chunks_per_page).then_some((slot, next + 1));
        Some(slot << self.chunk_bits | next)
    }

    fn reclaim_or_evict(&mut self, class: ClassId, clock: Clock) -> Option<u32> {
        if let Some(h) = self.reclaim(class, clock) {
            return Some(h);
        }
        self.evict_tail(class, clock)
    }

    /// An expired or flushed item among the class's LRU tail, unlinked, its chunk taken.
    fn reclaim(&mut self, class: ClassId, clock: Clock) -> Option<u32> {
        let mut h = self.classes[class.index()].lru_tail;
        for _ in 0..RECLAIM_SEARCH_DEPTH {
            if h == NIL {
                break;
            }
            if self.is_dead(h, clock) {
                let fetched = self.item(h).has(bits::FETCHED);
                let c = self.class_state(class);
                c.counters.reclaimed += 1;
                if !fetched {
                    c.counters.expired_unfetched += 1;
                }
                return Some(self.unlink_and_take(class, h));
            }
            h = self.prev(h);
        }
        None
    }

    /// The class's LRU tail evicted, its chunk taken (unless `-M`).
    fn evict_tail(&mut self, class: ClassId, clock: Clock) -> Option<u32> {
        if !self.evict_when_full {
            return None;
        }
        let tail = self.classes[class.index()].lru_tail;
        if tail == NIL {
            return None;
        }
        let (expiry, atime, fetched) = {
            let it = self.item(tail);
            (it.expiry(), it.atime(), it.has(bits::FETCHED))
        };
        let c = self.class_state(class);
        c.counters.evicted += 1;
        c.counters.evicted_time = clock.now.saturating_sub(atime) as u64;
        if expiry != 0 {
            c.counters.evicted_nonzero += 1;
        }
        if !fetched {
            c.counters.evicted_unfetched += 1;
        }
        Some(self.unlink_and_take(class, tail))
    }

    fn unlink_and_take(&mut self, class: ClassId, h: u32) -> u32 {
        self.unlink(h);
        self.free_unlink(class, h);
        h
    }

    fn largest_class(&self, except: ClassId) -> Option<ClassId> {
        self.classes
            .iter()
            .enumerate()
            .filter(|(i, c)| *i != except.index() && c.pages.len() >= 2)
            .max_by_key(|(_, c)| c.pages.len())
            .map(|(i, _)| ClassId::from_index(i))
    }

    /// Takes a page from the budget for `class`, if the budget allows.
    fn add_page(&mut self, class: ClassId) -> bool {
        if !self.below_cap(class)
            || self.pages.len() - self.free_slots.len() >= self.max_pages()
            || !self.globals.budget.try_take()
        {
            return false;
        }
        self.install_page(class);
        true
    }

    /// A first page beyond the limit: the budget records it, so it is given back first.
    fn add_page_unbudgeted(&mut self, class: ClassId) {
        self.globals.budget.take_over_limit();
        self.install_page(class);
    }

    fn install_page(&mut self, class: ClassId) {
        let page = Page {
            mem: vec![0u8; self.geometry.page_size_bytes()].into_boxed_slice(),
            links: Vec::new(),
            class,
            chunk_size_bytes: self.geometry.class(class).chunk_size_bytes,
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
        self.assign_page(slot, class);
    }

    /// Gives page `slot` to `class` and starts carving it.
    fn assign_page(&mut self, slot: u32, class: ClassId) {
        let g = self.geometry.class(class);
        let page = self.pages[slot as usize].as_mut().expect("held page");
        page.class = class;
        page.chunk_size_bytes = g.chunk_size_bytes;
        page.links.clear();
        page.links.resize(g.chunks_per_page, [NIL, NIL]);
        let c = self.class_state(class);
        c.pages.push(slot);
        // A class carves one page at a time; an older partly carved page keeps its uncarved tail unused.
        if let Some((old, next)) = c.carve.replace((slot, 0)) {
            self.abandon_carve(class, old, next);
        }
    }

    /// Puts the uncarved rest of a page on the free list, so no chunk is lost when a new carve starts.
    fn abandon_carve(&mut self, class: ClassId, slot: u32, next: u32) {
        let chunks_per_page = self.geometry.class(class).chunks_per_page as u32;
        for i in next..chunks_per_page {
            self.free_push(class, slot << self.chunk_bits | i);
        }
    }

    // ----- maintenance -----

    /// Unlinks up to `max_items` expired or flushed items, walking each class LRU from its tail.
    /// Returns how many were removed. Bounded work: at most `max_items` inspections per class.
    pub(crate) fn reap(&mut self, clock: Clock, max_items: usize) -> usize {
        let mut reaped = 0;
        for i in 0..self.classes.len() {
            let mut h = self.classes[i].lru_tail;
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
    /// each time from the class with the most pages. At most `max_pages` moves.
    pub(crate) fn shrink_to_budget(&mut self, max_pages: usize) -> usize {
        let mut given = 0;
        while given < max_pages && self.globals.budget.over_limit() {
            let Some((i, _)) = self
                .classes
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.pages.is_empty())
                .max_by_key(|(_, c)| c.pages.len())
            else {
                break;
            };
            self.move_page(ClassId::from_index(i), None);
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

    pub(crate) fn class_counters_mut(&mut self, class: ClassId) -> &mut ClassCounters {
        &mut self.class_state(class).counters
    }

    pub(crate) fn class_of_item(&self, h: u32) -> ClassId {
        self.class_of(h)
    }

    pub(crate) fn snapshot(&self, clock: Clock) -> Vec<ClassSnapshot> {
        self.classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let id = ClassId::from_index(i);
                let g = self.geometry.class(id);
                let uncarved = c
                    .carve
                    .map_or(0, |(_, next)| g.chunks_per_page - next as usize);
                let tail_age_secs = if c.lru_tail == NIL {
                    0
                } else {
                    clock.now.saturating_sub(self.item(c.lru_tail).atime())
                };
                ClassSnapshot {
                    class: id,
                    chunk_size_bytes: g.chunk_size_bytes,
                    chunks_per_page: g.chunks_per_page,
                    total_pages: c.pages.len(),
                    used_chunks: c.items,
                    free_chunks: c.free_chunks + uncarved,
                    items: c.items,
                    requested_bytes: c.requested_bytes,
                    tail_age_secs,
                    counters: c.counters.clone(),
                }
            })
            .collect()
    }

    pub(crate) fn reset_counters(&mut self) {
        self.counters = GlobalCounters::default();
        for c in &mut self.classes {
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
        let (class, h) = self.alloc(total, clock)?;
        self.item_mut(h)
            .init(key, client_flags, expiry, clock.now, parts);
        let cas = match self.index_find(key, hash) {
            Some(old) => self.replace(hash, old, h),
            None => self.link(class, hash, h),
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
