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
//!
//! Files, one concern each: `store` (storage commands), `arith` (incr/decr), `entry` (an item under its
//! shard lock, for get-type and meta commands), `pages` (page moves and memory limits), `pools` (tenant
//! pools), `profiles` (the online curves), `report` (stats and the invariant check), `restart`
//! (walking live items and restoring saved ones, for a warm restart) and `walk` (item walks under
//! concurrent requests: metadump, cachedump and the LRU crawler).

use std::sync::Arc;

use crate::config::{ConfigError, EngineConfig, MemoryLayout};
use crate::geometry::Geometry;
use crate::globals::Globals;
use crate::layout::AnyShard;
use crate::log::LogShard;
use crate::profiling::{profile_budget_bytes, ProfilingConfig, ShardProfiling};
use crate::shard::{hash_key, Miss, Shard};
use crate::tenant::{Key, TenantId};
use crate::Clock;

mod arith;
mod chooser;
mod entry;
mod lock;
mod pages;
mod pools;
mod profiles;
mod report;
mod restart;
mod store;
mod walk;

pub use arith::{parse_decimal, ArithOutcome, Delta};
pub use chooser::ChooserReport;
use entry::count_get;
pub use entry::{Entry, ItemFlag, ItemView};
pub use lock::{LockClock, LockStats};
pub use pages::ReassignOutcome;
pub use profiles::{ClassHistogram, ClassMrc};
pub use restart::{ItemCursor, ItemMarks, RestoreOutcome, SavedItem};
pub use store::{StoreArgs, StoreMode, StoreOutcome};
pub use walk::{
    ClassSet, CrawlBatch, CrawlQuota, ItemBatch, WalkCursor, WalkFilter, WalkedItem,
    MAX_SHARD_RESTARTS,
};

/// The storage engine: shards, geometry and shared state.
pub struct Engine {
    config: EngineConfig,
    geometry: Arc<Geometry>,
    globals: Arc<Globals>,
    shards: Box<[lock::ShardLock]>,
    shard_shift: u32,
    /// The log's policy chooser, when `log_choose` names candidates.
    chooser: Option<chooser::Chooser>,
}

impl Engine {
    /// An empty engine of `config`, after `EngineConfig::validate`: no pages are taken until items are
    /// stored.
    pub fn new(mut config: EngineConfig) -> Result<Engine, ConfigError> {
        config.validate()?;
        if let [first, _, ..] = config.log_choose[..] {
            // The chooser starts with its first candidate running.
            (config.log_ranking, config.log_probation) = (first.ranking, first.probation);
        }
        let geometry = Arc::new(Geometry::new(&config));
        let globals = Arc::new(Globals::new(
            config.page_budget(),
            config.use_cas,
            config.tenant_pools,
        ));
        globals
            .budget
            .set_first_page_allowance(config.first_page_allowance(geometry.class_count()));
        let pools = config.tenant_pools;
        // With several pools, half of the profilers' memory goes to one whole-pool profiler per pool
        // (the tenants' curves), half to the partitions'.
        let budget = profile_budget_bytes(config.memory_limit_bytes, config.profile_memory_share);
        let budget = if pools > 1 { budget / 2 } else { budget };
        let sized = |partitions: usize, rate: f64| {
            ProfilingConfig::for_budget(budget, partitions, config.shards, rate)
        };
        // The log has one class (the log itself): one profiler per pool, one curve per tenant.
        let classes = match config.memory_layout {
            MemoryLayout::Slab => geometry.class_count(),
            MemoryLayout::Log => 1,
        };
        let profiling = ShardProfiling {
            classes: config
                .profile_sample_rate
                .map(|rate| sized(classes * pools, rate)),
            pools: config
                .profile_sample_rate
                .filter(|_| pools > 1)
                .map(|rate| sized(pools, rate)),
            shadow_bytes: config
                .shadow_queue_bytes
                .map(|b| b.div_ceil(config.shards as u64)),
            ..ShardProfiling::default()
        };
        let shards: Box<[lock::ShardLock]> = (0..config.shards)
            .map(|i| {
                lock::ShardLock::new(match config.memory_layout {
                    MemoryLayout::Slab => AnyShard::Slab(Shard::new(
                        geometry.clone(),
                        globals.clone(),
                        config.evict_when_full,
                        &profiling,
                        0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1),
                    )),
                    MemoryLayout::Log => AnyShard::Log(LogShard::new(
                        geometry.clone(),
                        globals.clone(),
                        &profiling,
                        &config,
                    )),
                })
            })
            .collect();
        let max_pages = shards[0].lock().max_pages() * config.shards;
        if config.page_budget() > max_pages {
            return Err(ConfigError::TooManyPages {
                pages: config.page_budget(),
                max_pages,
                shards: config.shards,
            });
        }
        Ok(Engine {
            shard_shift: 64 - config.shards.trailing_zeros(),
            chooser: chooser::Chooser::new(&config),
            config,
            geometry,
            globals,
            shards,
        })
    }

    /// The configuration it was built with (`cache_memlimit` changes the page limit, not this).
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Its slab classes and item-size accounting.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The key hash every component uses (shard choice, index, profiler sampling).
    pub fn hash(key: Key<'_>) -> u64 {
        hash_key(key)
    }

    #[inline]
    fn shard_for(&self, hash: u64) -> &lock::ShardLock {
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
        // Only a key the chooser samples costs it anything (after the shard lock is released).
        let chooser = self.chooser.as_ref().filter(|c| c.samples(hash));
        let Some(h) = handle else {
            drop(shard);
            if let Some(c) = chooser {
                self.choose_on_get(c, key, None, clock);
            }
            return None;
        };
        shard.bump(h, hash, clock.now);
        let item = shard.item(h);
        let size = chooser.map(|_| (item.client_flags(), item.value_len()));
        let result = f(ItemView {
            item,
            now: clock.now,
        });
        drop(shard);
        if let Some(c) = chooser {
            self.choose_on_get(c, key, size, clock);
        }
        Some(result)
    }

    /// Feeds a sampled GET to the chooser's miniatures and applies its decision. Called with no shard
    /// lock held.
    fn choose_on_get(
        &self,
        chooser: &chooser::Chooser,
        key: Key<'_>,
        hit: Option<(u32, usize)>,
        clock: Clock,
    ) {
        if let Some(policy) = chooser.get(key, hit, clock) {
            self.apply_log_policy(policy);
        }
    }

    /// Log layout: every pool ranks by `policy`'s ranking and keeps its probationary share, from the
    /// next cleaning on (the chooser's switch; also for operators and tests).
    pub fn apply_log_policy(&self, policy: crate::config::LogPolicy) {
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            for pool in 0..self.config.tenant_pools {
                shard.set_ranking(pool, policy.ranking);
            }
            shard.set_probation(policy.probation);
        }
    }

    /// The chooser's state, when it runs.
    pub fn chooser_report(&self) -> Option<ChooserReport> {
        self.chooser.as_ref().map(|c| c.report())
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

    /// delete: whether an item was removed.
    pub fn delete(&self, key: Key<'_>, clock: Clock) -> bool {
        let removed = self.with_entry(key, clock, |entry| {
            entry.count_delete();
            entry.remove()
        });
        if let Some(c) = self.chooser.as_ref().filter(|c| c.samples(hash_key(key))) {
            c.delete(key, clock);
        }
        removed
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

    /// The memory layout (slab or log) this engine was built with.
    pub fn memory_layout(&self) -> MemoryLayout {
        self.config.memory_layout
    }

    /// Log layout: sets how tenant pool `pool` ranks its items for the cleaner (LRU, LFU or segmented
    /// LRU), from the next cleaning pass on. The slab layout ignores it (its LRUs are exact).
    pub fn set_pool_ranking(&self, pool: usize, ranking: crate::config::Ranking) {
        for shard in self.shards.iter() {
            shard.lock().set_ranking(pool, ranking);
        }
    }

    /// Log layout: bytes the cleaner has copied and cleaning passes it has run since start, summed
    /// over shards; `(0, 0)` for slab.
    pub fn cleaner_work(&self) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |(b, p), s| {
            let (sb, sp) = s.lock().cleaner_work();
            (b + sb, p + sp)
        })
    }

    /// Shards (lock domains) the key space is divided into.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }
}

/// A lookup's result as the `Entry` keeps it: the handle, or why there is none.
#[inline]
fn split(found: Result<u32, Miss>) -> (Option<u32>, Miss) {
    match found {
        Ok(h) => (Some(h), Miss::Absent),
        Err(m) => (None, m),
    }
}
