//! The engine facade: memcached's item semantics over hash-partitioned shards.
//!
//! A key's shard is chosen by the high half of its hash; each shard sits behind its own mutex, so requests on
//! different shards never contend and there is no engine-wide lock on the request path. One operation holds
//! one shard lock for its whole duration (lookup, allocation, eviction and link are atomic for that key);
//! no operation ever holds two shard locks. Page moves and statistics take the shard locks one at a time.
//!
//! Item semantics (add/replace/cas/append/prepend, incr/decr with in-place shrink, touch, flush, lazy expiry)
//! follow memcached 1.6.18's `do_store_item`, `do_add_delta` and `item_get`.
//!
//! Every keyed operation takes a `Key`: a tenant and the client's bytes. Operations see only items of
//! that tenant, and `flush_all` flushes only its tenant; the default tenant behaves exactly as the
//! engine did before tenants.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::config::{ConfigError, EngineConfig};
use crate::geometry::{ClassId, Geometry};
use crate::globals::Globals;
use crate::item::bits;
use crate::pool::PoolSnapshot;
use crate::profiling::{ProfilingConfig, ShardProfiling};
use crate::shard::{hash_key, AllocError, Miss, PageMove, Part, Shard};
use crate::stats::{ClassSnapshot, EngineStats, GlobalCounters, TenantCounters};
use crate::tenant::{Key, TenantId};
use crate::Clock;

mod entry;
use entry::count_get;
pub use entry::{Entry, ItemFlag, ItemView};
use mrcache_profile::{Mrc, MrcQuery, ReuseTimeHistogram, ReuseTimeMethod};

/// What a storage command asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreMode {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    /// Store only if the item's CAS equals `StoreArgs::cas`.
    Cas,
}

/// One storage request.
#[derive(Copy, Clone, Debug)]
pub struct StoreArgs<'a> {
    pub mode: StoreMode,
    pub key: Key<'a>,
    pub client_flags: u32,
    /// Protocol exptime (relative seconds, absolute Unix time, 0 = never, negative = already expired).
    pub exptime: i64,
    pub value: &'a [u8],
    /// CAS to compare: required for `Cas`; for `Append`/`Prepend`/`Set` a non-zero value is compared too
    /// (meta `ms C`).
    pub cas: u64,
    /// Meta `ms I`: a CAS older than the item's still stores, marking the item stale.
    pub invalidate: bool,
    /// Meta `b`: the key arrived base64-encoded; remembered on the item so replies echo it that way.
    pub key_binary: bool,
}

impl<'a> StoreArgs<'a> {
    /// A plain `set` of `value` under `key`: no flags, no expiry, no CAS. Other requests start from it
    /// with struct update syntax (`StoreArgs { mode: StoreMode::Add, ..StoreArgs::set(key, value) }`).
    pub fn set(key: Key<'a>, value: &'a [u8]) -> StoreArgs<'a> {
        StoreArgs {
            mode: StoreMode::Set,
            key,
            client_flags: 0,
            exptime: 0,
            value,
            cas: 0,
            invalidate: false,
            key_binary: false,
        }
    }
}

/// The result of a store, as memcached replies it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    Stored {
        cas: u64,
    },
    NotStored,
    /// CAS mismatch.
    Exists,
    /// `cas` on a missing item.
    NotFound,
    TooLarge,
    OutOfMemory,
}

/// The result of incr/decr.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ArithOutcome {
    Value {
        value: u64,
        cas: u64,
    },
    NotFound,
    /// The stored value is not a decimal number that fits 64 bits.
    NonNumeric,
    /// CAS mismatch (meta `ma C`).
    Exists,
    OutOfMemory,
}

/// incr or decr.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Delta {
    Incr(u64),
    Decr(u64),
}

/// The result of a page move request (`slabs reassign`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReassignOutcome {
    Moved {
        rescued: usize,
        evicted: usize,
    },
    /// The source class has fewer than two pages.
    NoSpare,
    /// Source and destination are the same class.
    Same,
    /// Either id is not a class.
    BadClass,
}

/// One class's online miss-ratio curve.
#[derive(Clone, Debug)]
pub struct ClassMrc {
    pub class: ClassId,
    /// Uses of the class the profilers saw (hits and stores).
    pub requests: u64,
    /// The lowest current sampling rate among the shards' profilers of this class.
    pub sampling_rate: f64,
    /// Miss ratio against the class's size in items.
    pub curve: Mrc,
}

/// One class's reuse-time histogram, merged across shards.
#[derive(Clone, Debug)]
pub struct ClassHistogram {
    pub class: ClassId,
    /// The lowest current sampling rate among the shards' profilers of this class.
    pub sampling_rate: f64,
    pub histogram: ReuseTimeHistogram,
}

/// The storage engine: shards, geometry and shared state.
pub struct Engine {
    config: EngineConfig,
    geometry: Arc<Geometry>,
    globals: Arc<Globals>,
    shards: Box<[Mutex<Shard>]>,
    shard_shift: u32,
}

impl Engine {
    pub fn new(config: EngineConfig) -> Result<Engine, ConfigError> {
        config.validate()?;
        let geometry = Arc::new(Geometry::new(&config));
        let globals = Arc::new(Globals::new(
            config.page_budget(),
            config.use_cas,
            config.tenant_pools,
        ));
        let pools = config.tenant_pools;
        // With several pools, half of the profilers' memory goes to one whole-pool profiler per pool
        // (the tenants' curves), half to the partitions'.
        let share = if pools > 1 {
            config.profile_memory_share / 2.0
        } else {
            config.profile_memory_share
        };
        let sized = |partitions: usize, rate: f64| {
            ProfilingConfig::for_memory(
                config.memory_limit_bytes,
                partitions,
                config.shards,
                rate,
                share,
            )
        };
        let profiling = ShardProfiling {
            classes: config
                .profile_sample_rate
                .map(|rate| sized(geometry.class_count() * pools, rate)),
            pools: config
                .profile_sample_rate
                .filter(|_| pools > 1)
                .map(|rate| sized(pools, rate)),
            shadow_bytes: config
                .shadow_queue_bytes
                .map(|b| b.div_ceil(config.shards as u64)),
            ..ShardProfiling::default()
        };
        let shards: Box<[Mutex<Shard>]> = (0..config.shards)
            .map(|i| {
                Mutex::new(Shard::new(
                    geometry.clone(),
                    globals.clone(),
                    config.evict_when_full,
                    &profiling,
                    0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1),
                ))
            })
            .collect();
        let max_pages = shards[0].lock().max_pages() * config.shards;
        if config.page_budget() > max_pages {
            return Err(ConfigError(format!(
                "memory limit (-m) of {} pages exceeds the {} pages {} shards can address",
                config.page_budget(),
                max_pages,
                config.shards
            )));
        }
        Ok(Engine {
            shard_shift: 64 - config.shards.trailing_zeros(),
            config,
            geometry,
            globals,
            shards,
        })
    }

    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The key hash every component uses (shard choice, index, profiler sampling).
    pub fn hash(key: Key<'_>) -> u64 {
        hash_key(key)
    }

    #[inline]
    fn shard_for(&self, hash: u64) -> &Mutex<Shard> {
        if self.shards.len() == 1 {
            return &self.shards[0];
        }
        &self.shards[(hash >> self.shard_shift) as usize]
    }

    /// get/gets: calls `f` on the live item under the shard lock and returns its result; `None` on a miss.
    /// The item becomes most recently used.
    pub fn get<R>(
        &self,
        key: Key<'_>,
        clock: Clock,
        f: impl FnOnce(ItemView<'_>) -> R,
    ) -> Option<R> {
        let hash = hash_key(key);
        let mut shard = self.shard_for(hash).lock();
        let found = shard.find(key, hash, clock);
        let (handle, miss) = split(found);
        count_get(&mut shard, key.tenant, hash, handle, miss);
        let h = handle?;
        shard.bump(h, hash, clock.now);
        Some(f(ItemView {
            item: shard.item(h),
            now: clock.now,
        }))
    }

    /// gat/gats: like `get`, and sets the item's expiry. Counted as a touch and a get, like memcached.
    pub fn get_and_touch<R>(
        &self,
        key: Key<'_>,
        exptime: i64,
        clock: Clock,
        f: impl FnOnce(ItemView<'_>) -> R,
    ) -> Option<R> {
        self.with_entry(key, clock, |entry| {
            entry.count_touch();
            entry.count_get();
            if !entry.is_occupied() {
                return None;
            }
            entry.set_exptime(exptime);
            entry.bump();
            entry.item().map(f)
        })
    }

    /// Runs `f` on the key's entry with the shard locked; expired and flushed items read as vacant.
    pub fn with_entry<R>(
        &self,
        key: Key<'_>,
        clock: Clock,
        f: impl FnOnce(&mut Entry<'_>) -> R,
    ) -> R {
        let hash = hash_key(key);
        let mut shard = self.shard_for(hash).lock();
        let (handle, miss) = split(shard.find(key, hash, clock));
        let mut entry = Entry {
            shard: &mut shard,
            key,
            hash,
            clock,
            handle,
            miss,
        };
        f(&mut entry)
    }

    /// set/add/replace/append/prepend/cas, with memcached's rules.
    pub fn store(&self, args: &StoreArgs<'_>, clock: Clock) -> StoreOutcome {
        let class =
            self.geometry
                .class_for_item(args.key.bytes.len(), args.client_flags, args.value.len());
        let Some(class) = class else {
            if args.mode == StoreMode::Set {
                // memcached drops the old value so that a failed set never leaves stale data.
                self.delete(args.key, clock);
            }
            return StoreOutcome::TooLarge;
        };
        let hash = hash_key(args.key);
        let mut shard = self.shard_for(hash).lock();
        let part = shard.part_for(args.key.tenant, class);
        shard.class_counters_mut(part).set_cmds += 1;
        shard.tenant_counters_mut(args.key.tenant).set_cmds += 1;
        let old = shard.find(args.key, hash, clock).ok();
        // What to write: flags, expiry, the old value to join (append/prepend) and meta bits to set.
        let mut flags = args.client_flags;
        let mut expiry = clock.expiry(args.exptime);
        let mut joined_with: Option<Vec<u8>> = None;
        let mut mark = 0;
        match (args.mode, old) {
            (StoreMode::Add, Some(old)) => {
                // memcached: add on an existing item fails but promotes it.
                shard.promote(old, hash, clock.now);
                return StoreOutcome::NotStored;
            }
            (StoreMode::Replace | StoreMode::Append | StoreMode::Prepend, None) => {
                return StoreOutcome::NotStored;
            }
            (StoreMode::Cas, None) => {
                shard.counters.cas_misses += 1;
                return StoreOutcome::NotFound;
            }
            (StoreMode::Cas, Some(old)) => {
                let (old_cas, old_expiry, old_bits) = {
                    let it = shard.item(old);
                    (it.cas(), it.expiry(), it.bits())
                };
                let old_class = shard.part_of_item(old);
                // Meta `ms I`: an older CAS replaces the value but keeps the TTL and marks it stale.
                let invalidating = args.cas != old_cas && args.invalidate && args.cas < old_cas;
                if args.cas != old_cas && !invalidating {
                    shard.class_counters_mut(old_class).cas_badval += 1;
                    return StoreOutcome::Exists;
                }
                shard.class_counters_mut(old_class).cas_hits += 1;
                if invalidating {
                    expiry = old_expiry;
                    mark = bits::STALE | (old_bits & bits::TOKEN_SENT);
                }
            }
            (StoreMode::Append | StoreMode::Prepend, Some(old)) => {
                let it = shard.item(old);
                if args.cas != 0 && args.cas != it.cas() {
                    return StoreOutcome::Exists;
                }
                (flags, expiry) = (it.client_flags(), it.expiry());
                let joined_len = it.value().len() + args.value.len();
                if !self
                    .geometry
                    .within_item_limit(args.key.bytes.len(), flags, joined_len)
                {
                    return StoreOutcome::NotStored;
                }
                // The joined value is written from a copy: allocation may evict or move the old item.
                joined_with = Some(it.value().to_vec());
            }
            (StoreMode::Set | StoreMode::Add | StoreMode::Replace, old) => {
                if args.cas != 0 {
                    // Meta `ms C` on set: compare like cas.
                    match old {
                        None => return StoreOutcome::NotFound,
                        Some(old) if shard.item(old).cas() != args.cas => {
                            return StoreOutcome::Exists
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        let parts: [&[u8]; 2] = match &joined_with {
            None => [args.value, &[]],
            Some(old_value) if args.mode == StoreMode::Append => [old_value, args.value],
            Some(old_value) => [args.value, old_value],
        };
        let result = shard.write_and_link(args.key, hash, flags, expiry, &parts, clock);
        if let (Err(_), Some(_)) = (&result, &joined_with) {
            // memcached answers a failed append or prepend NOT_STORED, whatever the reason.
            return StoreOutcome::NotStored;
        }
        if let (Ok((h, _)), true) = (&result, mark != 0) {
            shard.item_mut(*h).insert_bits(mark);
        }
        match result {
            Ok((h, cas)) => {
                if old.is_none() {
                    let class = shard.part_of_item(h);
                    shard.class_counters_mut(class).inserts += 1;
                }
                if args.key_binary {
                    shard.item_mut(h).insert_bits(bits::KEY_BINARY);
                }
                StoreOutcome::Stored { cas }
            }
            Err(AllocError::TooLarge) => StoreOutcome::TooLarge,
            Err(AllocError::OutOfMemory) => StoreOutcome::OutOfMemory,
        }
    }

    /// delete: whether an item was removed.
    pub fn delete(&self, key: Key<'_>, clock: Clock) -> bool {
        self.with_entry(key, clock, |entry| {
            entry.count_delete();
            entry.remove()
        })
    }

    /// touch: sets a new expiry; whether the item exists.
    pub fn touch(&self, key: Key<'_>, exptime: i64, clock: Clock) -> bool {
        self.with_entry(key, clock, |entry| {
            entry.count_touch();
            if !entry.is_occupied() {
                return false;
            }
            entry.set_exptime(exptime);
            entry.bump();
            true
        })
    }

    /// incr/decr with memcached's rules: 64-bit wrap on incr, floor at 0 on decr, and a result no longer than
    /// the old value is written in place, padded with spaces (memcached's `do_add_delta`). `cas` non-zero
    /// must match (meta `ma C`).
    pub fn arith(&self, key: Key<'_>, delta: Delta, cas: u64, clock: Clock) -> ArithOutcome {
        let hash = hash_key(key);
        let mut shard = self.shard_for(hash).lock();
        let Ok(h) = shard.find(key, hash, clock) else {
            match delta {
                Delta::Incr(_) => shard.counters.incr_misses += 1,
                Delta::Decr(_) => shard.counters.decr_misses += 1,
            }
            return ArithOutcome::NotFound;
        };
        let (current, value_len, old_cas) = {
            let it = shard.item(h);
            (parse_decimal(it.value()), it.value_len(), it.cas())
        };
        if cas != 0 && cas != old_cas {
            return ArithOutcome::Exists;
        }
        let Some(current) = current else {
            return ArithOutcome::NonNumeric;
        };
        let class = shard.part_of_item(h);
        let value = match delta {
            Delta::Incr(d) => {
                shard.class_counters_mut(class).incr_hits += 1;
                current.wrapping_add(d)
            }
            Delta::Decr(d) => {
                shard.class_counters_mut(class).decr_hits += 1;
                current.saturating_sub(d)
            }
        };
        let mut digits = itoa::Buffer::new();
        let text = digits.format(value).as_bytes();
        if text.len() <= value_len {
            let new_cas = shard.globals().next_cas();
            let mut it = shard.item_mut(h);
            let v = it.value_mut();
            v[..text.len()].copy_from_slice(text);
            v[text.len()..].fill(b' ');
            it.set_cas(new_cas);
            return ArithOutcome::Value {
                value,
                cas: new_cas,
            };
        }
        let (flags, expiry) = {
            let it = shard.item(h);
            (it.client_flags(), it.expiry())
        };
        match shard.write_and_link(key, hash, flags, expiry, &[text], clock) {
            Ok((_, cas)) => ArithOutcome::Value { value, cas },
            Err(_) => ArithOutcome::OutOfMemory,
        }
    }

    /// flush_all [delay] for one tenant: every item of `tenant` stored before the flush takes effect reads
    /// as missing; other tenants' items are untouched.
    pub fn flush_all(&self, tenant: TenantId, delay: i64, clock: Clock) {
        let new_oldest = if delay > 0 {
            clock.expiry(delay)
        } else {
            clock.now
        };
        self.globals.flush(tenant, new_oldest, clock.now);
    }

    /// `slabs reassign src dst`: moves one page from class `src` to class `dst`, in the shard where `src`
    /// has the most pages. memcached's rule: the source needs at least two pages (in that shard).
    pub fn reassign(&self, src: i64, dst: i64) -> ReassignOutcome {
        if !self.geometry.is_valid(src) || !self.geometry.is_valid(dst) {
            return ReassignOutcome::BadClass;
        }
        if src == dst {
            return ReassignOutcome::Same;
        }
        let (src, dst) = (ClassId(src as u8), ClassId(dst as u8));
        // memcached's rule: a source with fewer than two pages has none to spare. Per shard, so that a move
        // never empties a class in the shard it is taken from.
        let src_part = Part::new(0, src);
        let spare = self
            .shards
            .iter()
            .any(|s| s.lock().part_pages(src_part) >= 2);
        if !spare {
            return ReassignOutcome::NoSpare;
        }
        match self.move_page(src, Some(dst)) {
            Some(m) => ReassignOutcome::Moved {
                rescued: m.rescued,
                evicted: m.evicted,
            },
            None => ReassignOutcome::NoSpare,
        }
    }

    /// The mechanism every allocation policy drives: moves one page of class `src` to class `dst` of the
    /// default pool (pool 0: all memory, unless tenants have pools of their own), or back to the page
    /// budget when `dst` is `None`. See `move_page_in`.
    pub fn move_page(&self, src: ClassId, dst: Option<ClassId>) -> Option<PageMove> {
        self.move_page_in(0, src, dst)
    }

    /// Moves one page of class `src` of tenant pool `pool` to its class `dst` (or back to the page budget
    /// when `dst` is `None`), in the shard where that partition holds the most pages. `None` if it has no
    /// page. Bounded work: one page, under one shard lock.
    pub fn move_page_in(
        &self,
        pool: usize,
        src: ClassId,
        dst: Option<ClassId>,
    ) -> Option<PageMove> {
        if pool >= self.globals.pools.len() {
            return None;
        }
        let (src, dst) = (Part::new(pool, src), dst.map(|d| Part::new(pool, d)));
        let best = (0..self.shards.len()).max_by_key(|&i| self.shards[i].lock().part_pages(src))?;
        self.shards[best].lock().move_page(src, dst)
    }

    /// Unlinks expired and flushed items, at most `max_items_per_class` inspections per class per shard,
    /// one shard lock at a time. Returns how many were removed.
    pub fn reap_expired(&self, clock: Clock, max_items_per_class: usize) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().reap(clock, max_items_per_class))
            .sum()
    }

    /// `cache_memlimit`: a new page limit; pages over it are given back (at most `max_pages_per_call`
    /// page moves now; call again until `pages_over_limit` is 0).
    pub fn set_memory_limit(&self, bytes: u64, max_pages_per_call: usize) {
        let pages = ((bytes / self.geometry.page_size_bytes() as u64) as usize).max(1);
        self.globals.budget.set_limit(pages);
        self.shrink_to_limit(max_pages_per_call);
    }

    /// Gives pages back while over the limit; at most `max_pages` page moves. Returns how many.
    pub fn shrink_to_limit(&self, max_pages: usize) -> usize {
        let mut given = 0;
        for shard in self.shards.iter() {
            if given >= max_pages || !self.globals.budget.over_limit() {
                break;
            }
            given += shard.lock().shrink_to_budget(max_pages - given);
        }
        given
    }

    /// A consistent-per-shard snapshot of all counters and every class.
    pub fn stats(&self, clock: Clock) -> EngineStats {
        let mut counters = GlobalCounters::default();
        let mut classes: Vec<ClassSnapshot> = Vec::new();
        let mut curr_items = 0;
        let mut tenants: Vec<TenantCounters> = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            counters.add(&shard.counters);
            let shard_tenants = shard.tenant_counters();
            if tenants.len() < shard_tenants.len() {
                tenants.resize(shard_tenants.len(), TenantCounters::default());
            }
            for (acc, t) in tenants.iter_mut().zip(shard_tenants) {
                acc.add(t);
            }
            curr_items += shard.len();
            let snap = shard.snapshot(clock, None);
            if classes.is_empty() {
                classes = snap;
            } else {
                for (acc, s) in classes.iter_mut().zip(snap) {
                    acc.absorb(&s);
                }
            }
        }
        EngineStats {
            counters,
            curr_items,
            bytes: classes.iter().map(|c| c.requested_bytes).sum(),
            pages_in_use: self.globals.budget.in_use(),
            page_limit: self.globals.budget.limit(),
            page_size_bytes: self.geometry.page_size_bytes(),
            classes,
            tenants,
        }
    }

    /// Every tenant's counters (indexed by `TenantId::index`), summed over shards: the cheap part of
    /// `stats` that tenant arbitration polls.
    pub fn tenant_counters(&self) -> Vec<TenantCounters> {
        let mut tenants: Vec<TenantCounters> = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            let shard_tenants = shard.tenant_counters();
            if tenants.len() < shard_tenants.len() {
                tenants.resize(shard_tenants.len(), TenantCounters::default());
            }
            for (acc, t) in tenants.iter_mut().zip(shard_tenants) {
                acc.add(t);
            }
        }
        tenants
    }

    /// The online miss-ratio curve of every profiled class (or of `class` only), in items, merged across
    /// shards (each shard profiles a hash partition of the keys; `ReuseTimeHistogram::merge` yields the
    /// whole class's curve). Evaluated at `query`'s sizes (in items).
    pub fn mrc(&self, class: Option<ClassId>, query: &MrcQuery) -> Vec<ClassMrc> {
        self.reuse_histograms(class)
            .into_iter()
            .map(|h| ClassMrc {
                class: h.class,
                requests: h.histogram.requests(),
                sampling_rate: h.sampling_rate,
                curve: h.histogram.mrc(ReuseTimeMethod::Aet, query),
            })
            .collect()
    }

    /// The reuse-time histogram of every profiled class (or of `class` only), merged across shards and
    /// tenant pools: what `mrc` draws its curves from. A policy that wants the curve of a window keeps the
    /// previous snapshot and takes `ReuseTimeHistogram::since`.
    pub fn reuse_histograms(&self, class: Option<ClassId>) -> Vec<ClassHistogram> {
        self.reuse_histograms_in(None, class)
    }

    /// As `reuse_histograms`, for the classes of one tenant pool (`Some(pool)`) or of all (`None`).
    pub fn reuse_histograms_in(
        &self,
        pool: Option<usize>,
        class: Option<ClassId>,
    ) -> Vec<ClassHistogram> {
        let classes: Vec<ClassId> = match class {
            Some(c) => vec![c],
            None => self.geometry.classes().map(|(c, _)| c).collect(),
        };
        let pools = match pool {
            Some(p) => p..p + 1,
            None => 0..self.globals.pools.len(),
        };
        let mut out = Vec::new();
        for c in classes {
            let parts: Vec<usize> = pools.clone().map(|p| Part::new(p, c).index()).collect();
            let merged = self.merge_histograms(|shard| {
                parts
                    .iter()
                    .filter_map(|&i| {
                        let h = shard.profilers.histogram(i)?;
                        Some((h, shard.profilers.sampling_rate(i).unwrap_or(1.0)))
                    })
                    .collect()
            });
            if let Some((histogram, sampling_rate)) = merged {
                out.push(ClassHistogram {
                    class: c,
                    sampling_rate,
                    histogram,
                });
            }
        }
        out
    }

    /// The reuse-time histogram of a whole tenant pool (all its classes, sizes in bytes), merged across
    /// shards, with the lowest sampling rate among them; `None` with a single pool (no pool profilers)
    /// or before the pool was used.
    pub fn pool_histogram(&self, pool: usize) -> Option<(ReuseTimeHistogram, f64)> {
        self.merge_histograms(|shard| {
            let Some(profilers) = &shard.pool_profilers else {
                return Vec::new();
            };
            profilers
                .histogram(pool)
                .map(|h| (h, profilers.sampling_rate(pool).unwrap_or(1.0)))
                .into_iter()
                .collect()
        })
    }

    /// Merges what `pick` takes from each shard (histograms and their sampling rates), one shard lock
    /// at a time; the rate is the lowest seen.
    fn merge_histograms(
        &self,
        pick: impl Fn(&Shard) -> Vec<(ReuseTimeHistogram, f64)>,
    ) -> Option<(ReuseTimeHistogram, f64)> {
        let mut merged: Option<ReuseTimeHistogram> = None;
        let mut rate = 1.0f64;
        for shard in self.shards.iter() {
            for (h, r) in pick(&shard.lock()) {
                rate = rate.min(r);
                match &mut merged {
                    Some(m) => m.merge(&h),
                    None => merged = Some(h),
                }
            }
        }
        merged.map(|m| (m, rate))
    }

    /// Pages memory may hold now: `-m`, or what `cache_memlimit` last set.
    pub fn page_limit(&self) -> usize {
        self.globals.budget.limit()
    }

    // ----- tenant pools (the upper memory level; see `pool`) -----

    /// Tenant pools this engine keeps (`EngineConfig::tenant_pools`).
    pub fn pool_count(&self) -> usize {
        self.globals.pools.len()
    }

    /// The pool `tenant` stores into now.
    pub fn pool_of(&self, tenant: TenantId) -> usize {
        self.globals.pools.pool_of(tenant)
    }

    /// One pool's pages, reserve, cap and target.
    pub fn pool(&self, pool: usize) -> PoolSnapshot {
        self.globals.pools.snapshot(pool)
    }

    /// Sets a pool's reserve and cap in pages (`UNLIMITED` for no cap). The reserve is never taken from
    /// it by another pool; the cap bounds the pages it takes.
    pub fn set_pool_limits(&self, pool: usize, reserved_pages: usize, max_pages: usize) {
        self.globals
            .pools
            .set_limits(pool, reserved_pages, max_pages);
    }

    /// Sets the pages an arbiter wants `pool` to hold (never below its reserve; `UNLIMITED` for none).
    /// Pools below their target take pages from pools above theirs as they allocate.
    pub fn set_pool_target(&self, pool: usize, pages: usize) {
        self.globals.pools.set_target(pool, pages);
    }

    /// All tenants share pool 0 (`true`, the `pooled` arbiter) or store into their own (`false`).
    pub fn set_pools_shared(&self, shared: bool) {
        self.globals.pools.set_shared(shared);
    }

    pub fn pools_shared(&self) -> bool {
        self.globals.pools.shared()
    }

    /// Every class of one pool, summed over shards.
    pub fn pool_classes(&self, pool: usize, clock: Clock) -> Vec<ClassSnapshot> {
        let mut classes: Vec<ClassSnapshot> = Vec::new();
        for shard in self.shards.iter() {
            let snap = shard.lock().snapshot(clock, Some(pool));
            if classes.is_empty() {
                classes = snap;
            } else {
                for (acc, s) in classes.iter_mut().zip(snap) {
                    acc.absorb(&s);
                }
            }
        }
        classes
    }

    /// The share of `pool`'s item bytes not accessed within `idle_secs`, found by walking its LRUs from
    /// the tail, at most `max_items` items per class and shard (so an estimate from below when more are
    /// idle). 0 for an empty pool.
    pub fn pool_idle_fraction(
        &self,
        pool: usize,
        idle_secs: u32,
        clock: Clock,
        max_items: usize,
    ) -> f64 {
        let (mut idle, mut all) = (0u64, 0u64);
        for shard in self.shards.iter() {
            let (i, a) = shard.lock().idle_bytes(pool, idle_secs, clock, max_items);
            idle += i;
            all += a;
        }
        if all == 0 {
            0.0
        } else {
            idle as f64 / all as f64
        }
    }

    /// Twemcache's random slab eviction on or off: when on, a class that needs a chunk and can get no new
    /// page empties a page drawn at random from all pages and takes it, instead of evicting its own LRU
    /// tail. Takes effect on the next allocation.
    pub fn set_random_page_eviction(&self, on: bool) {
        self.globals.set_random_page_eviction(on);
    }

    /// Fixes the most pages each class (indexed by `ClassId::index`) may hold, a fixed allocation such as
    /// LAMA's theoretical upper bound replays; `None` returns to memcached's demand filling. With several
    /// shards each gets `ceil(cap / shards)`. A class at its cap evicts from its own LRU; one with a cap of
    /// 0 stores nothing (`OutOfMemory`). Pages already held over a cap stay until moved.
    pub fn set_class_page_caps(&self, caps: Option<&[usize]>) {
        let n = self.shards.len();
        for shard in self.shards.iter() {
            shard
                .lock()
                .set_page_caps(caps.map(|c| c.iter().map(|&p| p.div_ceil(n)).collect()));
        }
    }

    /// Heap bytes all MRC profilers hold.
    pub fn profile_memory_bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().profilers.memory_bytes())
            .sum()
    }

    /// `stats reset`: zeroes the counters (not the items or pages).
    pub fn reset_stats(&self) {
        for shard in self.shards.iter() {
            shard.lock().reset_counters();
        }
    }

    /// Checks every shard's internal invariants and the page budget; O(items + chunks). For tests, the
    /// simulator's `--check` mode and debugging.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut pool_pages = vec![0usize; self.globals.pools.len()];
        for (i, shard) in self.shards.iter().enumerate() {
            let held = shard
                .lock()
                .check_invariants()
                .map_err(|e| format!("shard {i}: {e}"))?;
            for (acc, n) in pool_pages.iter_mut().zip(held) {
                *acc += n;
            }
        }
        for (pool, &n) in pool_pages.iter().enumerate() {
            let counted = self.globals.pools.snapshot(pool).held;
            if n != counted {
                return Err(format!(
                    "pool {pool}: shards hold {n} pages, the pool table says {counted}"
                ));
            }
        }
        let pages: usize = pool_pages.iter().sum();
        if pages != self.globals.budget.in_use() {
            return Err(format!(
                "shards hold {pages} pages, budget says {}",
                self.globals.budget.in_use()
            ));
        }
        Ok(())
    }

    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }
}

fn split(found: Result<u32, Miss>) -> (Option<u32>, Miss) {
    match found {
        Ok(h) => (Some(h), Miss::Absent),
        Err(m) => (None, m),
    }
}

/// memcached's `safe_strtoull` on an item value: optional leading whitespace, decimal digits, then the end or
/// whitespace; a value that looks negative is refused.
pub fn parse_decimal(value: &[u8]) -> Option<u64> {
    let s = value.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = &value[s..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    if let Some(b) = rest.get(digits) {
        if !b.is_ascii_whitespace() {
            return None;
        }
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}
