//! What a shard measures, whatever its memory layout: its global and per-tenant counters, its
//! profilers (one per partition, and one per pool with several pools) and its pools' shadow queues.
//! The slab shard (`Shard`) and the log shard (`log::LogShard`) each hold one and feed it the same way,
//! so `stats`, the curves and the arbiters read the same numbers from either.
//!
//! Invariants: a tenant's `items` and `bytes` count its linked items in this shard (the layout keeps
//! them in step as it links and unlinks); they are state, not counters, and survive `reset_counters`.
//! Every recorded use goes to its partition's profiler and, with several pools, to its pool's.

use mrcache_profile::ReuseTimeHistogram;

use super::{Part, ShadowQueue, Violation, PART_STRIDE};
use crate::profiling::{ClassProfilers, ShardProfiling};
use crate::stats::{GlobalCounters, TenantCounters};
use crate::tenant::TenantId;

/// One shard's counters, profilers and shadow queues.
pub(crate) struct ShardMeters {
    pub(crate) counters: GlobalCounters,
    /// Per-tenant counters, indexed by `TenantId::index`, grown on a tenant's first use here.
    tenants: Vec<TenantCounters>,
    /// Indexed by `Part::index`: `PART_STRIDE` per pool.
    pub(crate) profilers: ClassProfilers,
    /// One profiler per pool, over all its classes, in bytes (only with more than one pool).
    pub(crate) pool_profilers: Option<ClassProfilers>,
    /// Each pool's shadow queue of recently evicted keys (Memshare), when configured.
    shadows: Vec<ShadowQueue>,
}

impl ShardMeters {
    pub(crate) fn new(profiling: &ShardProfiling, pools: usize) -> ShardMeters {
        ShardMeters {
            counters: GlobalCounters::default(),
            tenants: Vec::new(),
            profilers: ClassProfilers::new(
                profiling.classes,
                pools * PART_STRIDE,
                profiling.classes_created.clone(),
            ),
            pool_profilers: profiling.pools.map(|config| {
                ClassProfilers::new(Some(config), pools, profiling.pools_created.clone())
            }),
            shadows: (0..pools)
                .map(|_| ShadowQueue::new(profiling.shadow_bytes))
                .collect(),
        }
    }

    /// A tenant's counters in this shard, created on its first use.
    #[inline]
    pub(crate) fn tenant_mut(&mut self, tenant: TenantId) -> &mut TenantCounters {
        if self.tenants.len() <= tenant.index() {
            self.tenants
                .resize(tenant.index() + 1, TenantCounters::default());
        }
        &mut self.tenants[tenant.index()]
    }

    /// Counts an item of `tenant`, of `bytes` by the engine's accounting, as linked (a store's or a
    /// restore's; `total_items` counts every link since start).
    #[inline]
    pub(crate) fn count_link(&mut self, tenant: TenantId, bytes: usize) {
        let t = self.tenant_mut(tenant);
        t.items += 1;
        t.bytes += bytes as u64;
        self.counters.total_items += 1;
    }

    /// Counts an item of `tenant`, of `bytes`, as unlinked (deleted, replaced, evicted or expired).
    #[inline]
    pub(crate) fn count_unlink(&mut self, tenant: TenantId, bytes: usize) {
        let t = self.tenant_mut(tenant);
        t.items -= 1;
        t.bytes -= bytes as u64;
    }

    pub(crate) fn tenants(&self) -> &[TenantCounters] {
        &self.tenants
    }

    /// Whether any profiler wants uses (so callers can skip computing an item's size).
    #[inline]
    pub(crate) fn profiling(&self) -> bool {
        self.profilers.enabled() || self.pool_profilers.is_some()
    }

    /// Feeds one use of partition `part` to its profiler and its pool's.
    #[inline]
    pub(crate) fn record_use(&mut self, part: Part, hash: u64, size_bytes: usize) {
        self.profilers.record(part.index(), hash, size_bytes);
        if let Some(pools) = &mut self.pool_profilers {
            pools.record(part.pool(), hash, size_bytes);
        }
    }

    /// The per-pool profiler's histogram of `pool`, with its sampling rate.
    pub(crate) fn pool_histogram(&self, pool: usize) -> Option<(ReuseTimeHistogram, f64)> {
        let profilers = self.pool_profilers.as_ref()?;
        profilers
            .histogram(pool)
            .map(|h| (h, profilers.sampling_rate(pool).unwrap_or(1.0)))
    }

    /// Whether `pool` remembers its evictions (so callers can skip hashing and sizing the item).
    #[inline]
    pub(crate) fn remembers_evictions(&self, pool: usize) -> bool {
        self.shadows[pool].enabled()
    }

    /// Puts an item of `pool` about to be evicted into the pool's shadow queue.
    pub(crate) fn remember_evicted(&mut self, pool: usize, hash: u64, size_bytes: u64) {
        self.shadows[pool].push(hash, size_bytes);
    }

    /// A GET miss of `tenant` (in `pool`) on key hash `hash`: if the pool's shadow queue holds it, it
    /// leaves the queue and counts as a shadow hit of the tenant. Returns whether it was one.
    pub(crate) fn note_get_miss(&mut self, pool: usize, tenant: TenantId, hash: u64) -> bool {
        if !self.shadows[pool].enabled() || !self.shadows[pool].take(hash) {
            return false;
        }
        self.tenant_mut(tenant).shadow_hits += 1;
        true
    }

    /// Zeroes the global and tenant counters; tenants' items and bytes are state and survive.
    pub(crate) fn reset_counters(&mut self) {
        self.counters = GlobalCounters::default();
        for t in &mut self.tenants {
            *t = TenantCounters {
                items: t.items,
                bytes: t.bytes,
                ..TenantCounters::default()
            };
        }
    }

    /// Checks that the `linked` items a layout counted are the `indexed` ones and the tenants' items.
    pub(crate) fn check_linked(&self, linked: usize, indexed: usize) -> Result<(), Violation> {
        if linked != indexed {
            return Err(Violation::IndexCount { linked, indexed });
        }
        let tenant_items: u64 = self.tenants.iter().map(|t| t.items).sum();
        if tenant_items != linked as u64 {
            return Err(Violation::TenantItems {
                linked,
                tenant_items,
            });
        }
        Ok(())
    }
}
