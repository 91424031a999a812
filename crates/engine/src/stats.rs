//! Counters the engine keeps beside the code that updates them, and the snapshots it hands out.
//!
//! Each shard updates plain integers under its own lock; `Engine::stats` sums the shards. Names follow
//! memcached's `stats`, `stats slabs` and `stats items` so the server can print them unchanged.

use crate::geometry::ClassId;
use crate::tenant::TenantId;

/// Per-class counters (memcached's `stats slabs` and `stats items` figures).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassCounters {
    /// get-type lookups that found a live item of the class.
    pub get_hits: u64,
    /// Storage commands aimed at the class (by the size of the item they store).
    pub set_cmds: u64,
    /// Deletes that removed an item.
    pub delete_hits: u64,
    /// incr on a numeric item.
    pub incr_hits: u64,
    /// decr on a numeric item.
    pub decr_hits: u64,
    /// cas (and meta CAS compares) that matched and stored.
    pub cas_hits: u64,
    /// cas on an item whose CAS differed (`EXISTS`).
    pub cas_badval: u64,
    /// touch and gat on a live item.
    pub touch_hits: u64,
    /// Live items evicted to make room.
    pub evicted: u64,
    /// Evicted items that had an expiry time.
    pub evicted_nonzero: u64,
    /// Seconds since last access of the most recently evicted item.
    pub evicted_time: u64,
    /// Evicted items that were never read after they were stored.
    pub evicted_unfetched: u64,
    /// Stores that failed for lack of memory.
    pub outofmemory: u64,
    /// Expired or flushed items whose chunk was reused.
    pub reclaimed: u64,
    /// Reclaimed (expired or flushed) items that were never read.
    pub expired_unfetched: u64,
    /// Items the reaper (memcached's LRU crawler) inspected.
    pub crawler_items_checked: u64,
    /// Expired or flushed items the reaper unlinked.
    pub crawler_reclaimed: u64,
    /// Items relocated by page moves.
    pub moves_rescued: u64,
    /// Items evicted by page moves.
    pub moves_evicted: u64,
    /// Stores that linked a key with no live item: in the lookaside pattern, one per filled miss, so the
    /// class's misses for the policies that need them (PSA, LAMA's interval) although a GET miss itself
    /// has no class.
    pub inserts: u64,
}

impl ClassCounters {
    /// Adds another shard's (or pool's) counters; `evicted_time` takes the larger.
    pub fn add(&mut self, o: &ClassCounters) {
        self.get_hits += o.get_hits;
        self.set_cmds += o.set_cmds;
        self.delete_hits += o.delete_hits;
        self.incr_hits += o.incr_hits;
        self.decr_hits += o.decr_hits;
        self.cas_hits += o.cas_hits;
        self.cas_badval += o.cas_badval;
        self.touch_hits += o.touch_hits;
        self.evicted += o.evicted;
        self.evicted_nonzero += o.evicted_nonzero;
        self.evicted_time = self.evicted_time.max(o.evicted_time);
        self.evicted_unfetched += o.evicted_unfetched;
        self.outofmemory += o.outofmemory;
        self.reclaimed += o.reclaimed;
        self.expired_unfetched += o.expired_unfetched;
        self.crawler_items_checked += o.crawler_items_checked;
        self.crawler_reclaimed += o.crawler_reclaimed;
        self.moves_rescued += o.moves_rescued;
        self.moves_evicted += o.moves_evicted;
        self.inserts += o.inserts;
    }

    /// Counts a live item evicted at `now` (by either layout): its expiry, last access and whether it
    /// was read since it was stored.
    pub(crate) fn count_eviction(&mut self, expiry: u32, atime: u32, fetched: bool, now: u32) {
        self.evicted += 1;
        self.evicted_time = now.saturating_sub(atime) as u64;
        if expiry != 0 {
            self.evicted_nonzero += 1;
        }
        if !fetched {
            self.evicted_unfetched += 1;
        }
    }

    /// Counts an expired or flushed item whose memory was taken back for a new one.
    pub(crate) fn count_reclaim(&mut self, fetched: bool) {
        self.reclaimed += 1;
        if !fetched {
            self.expired_unfetched += 1;
        }
    }
}

/// Key-level counters that belong to no class (misses have no item).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GlobalCounters {
    /// get-type lookups (a multi-key get counts once per key).
    pub get_cmds: u64,
    /// Lookups that found no live item (absent, expired or flushed).
    pub get_misses: u64,
    /// Misses on an item found expired (and unlinked).
    pub get_expired: u64,
    /// Misses on an item found flushed (and unlinked).
    pub get_flushed: u64,
    /// touch and gat commands.
    pub touch_cmds: u64,
    /// touch and gat on no live item.
    pub touch_misses: u64,
    /// Deletes of no live item.
    pub delete_misses: u64,
    /// incr of no live item.
    pub incr_misses: u64,
    /// decr of no live item.
    pub decr_misses: u64,
    /// cas of no live item (`NOT_FOUND`).
    pub cas_misses: u64,
    /// Items ever linked (memcached's `total_items`).
    pub total_items: u64,
    /// Pages moved between classes (memcached's `slabs_moved`).
    pub slabs_moved: u64,
    /// Expired or flushed items the reaper unlinked.
    pub expired_reaped: u64,
}

impl GlobalCounters {
    /// Adds another shard's counters.
    pub fn add(&mut self, o: &GlobalCounters) {
        self.get_cmds += o.get_cmds;
        self.get_misses += o.get_misses;
        self.get_expired += o.get_expired;
        self.get_flushed += o.get_flushed;
        self.touch_cmds += o.touch_cmds;
        self.touch_misses += o.touch_misses;
        self.delete_misses += o.delete_misses;
        self.incr_misses += o.incr_misses;
        self.decr_misses += o.decr_misses;
        self.cas_misses += o.cas_misses;
        self.total_items += o.total_items;
        self.slabs_moved += o.slabs_moved;
        self.expired_reaped += o.expired_reaped;
    }
}

/// One tenant's figures: what `stats tenants` reports and what a tenant arbiter weighs. Kept per shard in
/// a vector indexed by `TenantId` (grown on a tenant's first use) and summed by `Engine::stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TenantCounters {
    /// Linked items.
    pub items: u64,
    /// Accounted bytes of linked items (`Geometry::item_total_bytes`, as `requested_bytes`).
    pub bytes: u64,
    /// get-type lookups that found a live item (get/gets/gat/gats/mg).
    pub get_hits: u64,
    /// get-type lookups that found no live item.
    pub get_misses: u64,
    /// Storage commands (set/add/replace/append/prepend/cas/ms) that reached the engine.
    pub set_cmds: u64,
    /// GET misses on keys its pool's shadow queue held (recently evicted; Memshare's gradient signal).
    pub shadow_hits: u64,
}

impl TenantCounters {
    /// Adds another shard's counters.
    pub fn add(&mut self, o: &TenantCounters) {
        self.items += o.items;
        self.bytes += o.bytes;
        self.get_hits += o.get_hits;
        self.get_misses += o.get_misses;
        self.set_cmds += o.set_cmds;
        self.shadow_hits += o.shadow_hits;
    }
}

/// One class's state and counters at the moment of the snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassSnapshot {
    /// The class.
    pub class: ClassId,
    /// Bytes of each chunk.
    pub chunk_size_bytes: usize,
    /// Chunks one page holds.
    pub chunks_per_page: usize,
    /// Pages the class holds.
    pub total_pages: usize,
    /// Chunks holding linked items.
    pub used_chunks: usize,
    /// Chunks free for new items: on the free list or not yet carved.
    pub free_chunks: usize,
    /// Linked items.
    pub items: usize,
    /// Bytes requested by linked items under memcached's accounting (`mem_requested`).
    pub requested_bytes: u64,
    /// Seconds since last access of the LRU tail item (memcached's `age`); 0 when empty.
    pub tail_age_secs: u32,
    /// The class's counters since start (or `stats reset`).
    pub counters: ClassCounters,
}

impl ClassSnapshot {
    /// Adds another snapshot of the same class (another shard's, or another pool's).
    pub fn absorb(&mut self, s: &ClassSnapshot) {
        self.total_pages += s.total_pages;
        self.used_chunks += s.used_chunks;
        self.free_chunks += s.free_chunks;
        self.items += s.items;
        self.requested_bytes += s.requested_bytes;
        self.tail_age_secs = self.tail_age_secs.max(s.tail_age_secs);
        self.counters.add(&s.counters);
    }
}

/// The whole engine at one moment: global figures and every class that ever held a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineStats {
    /// Counters that belong to no class.
    pub counters: GlobalCounters,
    /// Linked items.
    pub curr_items: usize,
    /// Bytes of linked items under memcached's accounting.
    pub bytes: u64,
    /// Pages taken from the budget.
    pub pages_in_use: usize,
    /// Pages the budget allows (`-m`, or what `cache_memlimit` set).
    pub page_limit: usize,
    /// Bytes of one page.
    pub page_size_bytes: usize,
    /// Every class, indexed by `ClassId::index`, summed over shards and pools.
    pub classes: Vec<ClassSnapshot>,
    /// Per tenant, indexed by `TenantId::index`, up to the highest id that was ever used.
    pub tenants: Vec<TenantCounters>,
}

impl EngineStats {
    /// One tenant's counters (zero for a tenant never used).
    pub fn tenant(&self, tenant: TenantId) -> TenantCounters {
        self.tenants
            .get(tenant.index())
            .cloned()
            .unwrap_or_default()
    }

    /// Sum of per-class counters.
    pub fn class_totals(&self) -> ClassCounters {
        let mut total = ClassCounters::default();
        for c in &self.classes {
            total.add(&c.counters);
        }
        total
    }
}
