//! Tenant pools, the upper memory level (see `crate::pool`): their pages, reserves, caps and targets,
//! whether tenants share pool 0, and what an arbiter reads of a pool (its classes, its idle bytes).
//!
//! Invariants: limits and targets take effect on the next allocation; nothing here moves a page.

use super::Engine;
use crate::pool::PoolSnapshot;
use crate::stats::ClassSnapshot;
use crate::tenant::TenantId;
use crate::Clock;

impl Engine {
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

    /// Sets the bytes an arbiter wants `pool` to hold, in steps finer than a page (never below its
    /// reserve). The log layout's cleaner meets it in bytes; the slab layout, which moves whole pages,
    /// works to it rounded to the nearest page.
    pub fn set_pool_target_bytes(&self, pool: usize, bytes: u64) {
        let page = self.geometry().page_size_bytes();
        self.globals.pools.set_target_bytes(pool, bytes, page);
    }

    /// All tenants share pool 0 (`true`, the `pooled` arbiter) or store into their own (`false`).
    pub fn set_pools_shared(&self, shared: bool) {
        self.globals.pools.set_shared(shared);
    }

    /// Whether all tenants share pool 0 (see `set_pools_shared`).
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
}
