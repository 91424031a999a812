//! Tenant pools: the upper level of the two-level memory model (LAMA §4). Pages are divided among pools,
//! then among each pool's slab classes. A pool is one tenant's memory (tenant `t` owns pool `t` for
//! `t < tenant_pools`); tenants beyond the configured pools, and every tenant when the pools are shared
//! (the `pooled` arbiter), allocate from pool 0.
//!
//! Each pool has, engine-wide:
//! - `held`: pages its slab classes hold now, over all shards (kept by the shards under their locks);
//! - `reserved`: pages never taken from it while it uses them;
//! - `max`: pages it may never exceed (`usize::MAX` for none);
//! - `target`: the pages an arbiter wants it to hold (`usize::MAX` until an arbiter sets one), and the
//!   same target in bytes when the arbiter worked in steps finer than a page (the log layout's cleaner
//!   meets targets in bytes; the slab layout moves whole pages, so it reads only `target`).
//!
//! How the shards use them (`shard::alloc`): while memory is free any pool below its `max` takes a new
//! page; once memory is full, a pool below its target takes a page from the pool furthest above its own
//! target, and a pool at or above its target evicts from its own LRU. So targets are met by the traffic
//! itself, one page per allocation that needs it, and a pool at or below its reserve never loses a page to
//! another. Targets are advisory between rounds: an arbiter that sets them below `held` does not move
//! anything by itself.
//!
//! All fields are relaxed atomics: each is read and written under some shard's lock, and a stale read
//! costs at most one page going to the second-best pool.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

use crate::tenant::TenantId;

/// "No limit" for `max` and "no target" for `target`.
pub const UNLIMITED: usize = usize::MAX;

#[derive(Debug)]
struct PoolState {
    held: AtomicUsize,
    reserved: AtomicUsize,
    max: AtomicUsize,
    target: AtomicUsize,
    /// `WHOLE_PAGES` when the target was set in pages.
    target_bytes: AtomicU64,
}

/// `target_bytes` of a target set in whole pages.
const WHOLE_PAGES: u64 = u64::MAX;

impl Default for PoolState {
    fn default() -> Self {
        PoolState {
            held: AtomicUsize::new(0),
            reserved: AtomicUsize::new(0),
            max: AtomicUsize::new(UNLIMITED),
            target: AtomicUsize::new(UNLIMITED),
            target_bytes: AtomicU64::new(WHOLE_PAGES),
        }
    }
}

/// One pool's limits and holdings at one moment.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PoolSnapshot {
    /// Pages the pool holds over all shards.
    pub held: usize,
    /// Pages no other pool may take from it.
    pub reserved: usize,
    /// `UNLIMITED` when none.
    pub max: usize,
    /// `UNLIMITED` when no arbiter has set one.
    pub target: usize,
    /// The target in bytes when an arbiter set it finer than pages (`target` is then it rounded to
    /// pages); `None` when it was set in pages.
    pub target_bytes: Option<u64>,
}

impl PoolSnapshot {
    /// The target in bytes for pages of `page_bytes`: as set in bytes, else its pages; `None` when no
    /// arbiter has set one.
    pub fn target_in_bytes(&self, page_bytes: usize) -> Option<u64> {
        (self.target != UNLIMITED).then(|| {
            self.target_bytes
                .unwrap_or(self.target as u64 * page_bytes as u64)
        })
    }
}

/// Every pool of an engine.
#[derive(Debug)]
pub struct PoolTable {
    pools: Box<[PoolState]>,
    shared: AtomicBool,
}

impl PoolTable {
    pub fn new(pools: usize) -> PoolTable {
        PoolTable {
            pools: (0..pools.max(1)).map(|_| PoolState::default()).collect(),
            shared: AtomicBool::new(false),
        }
    }

    /// Pools in the table (at least one).
    pub(crate) fn len(&self) -> usize {
        self.pools.len()
    }

    /// The pool `tenant` allocates from.
    #[inline]
    pub fn pool_of(&self, tenant: TenantId) -> usize {
        if tenant.index() >= self.pools.len() || self.shared.load(Relaxed) {
            0
        } else {
            tenant.index()
        }
    }

    /// Whether all tenants allocate from pool 0 (one LRU per class for everyone). Items already stored
    /// stay in the pool they were stored in until they are evicted or replaced.
    pub fn set_shared(&self, shared: bool) {
        self.shared.store(shared, Relaxed);
    }

    pub fn shared(&self) -> bool {
        self.shared.load(Relaxed)
    }

    pub fn snapshot(&self, pool: usize) -> PoolSnapshot {
        let p = &self.pools[pool];
        PoolSnapshot {
            held: p.held.load(Relaxed),
            reserved: p.reserved.load(Relaxed),
            max: p.max.load(Relaxed),
            target: p.target.load(Relaxed),
            target_bytes: Some(p.target_bytes.load(Relaxed)).filter(|&b| b != WHOLE_PAGES),
        }
    }

    /// Sets a pool's reserve and cap (pages; `UNLIMITED` for no cap).
    pub fn set_limits(&self, pool: usize, reserved: usize, max: usize) {
        self.pools[pool].reserved.store(reserved, Relaxed);
        self.pools[pool].max.store(max, Relaxed);
    }

    /// Sets a pool's target (pages; `UNLIMITED` for none). Never below its reserve.
    pub fn set_target(&self, pool: usize, target: usize) {
        let reserved = self.pools[pool].reserved.load(Relaxed);
        self.pools[pool].target.store(target.max(reserved), Relaxed);
        self.pools[pool].target_bytes.store(WHOLE_PAGES, Relaxed);
    }

    /// Sets a pool's target in bytes, for pages of `page_bytes`: `target` becomes it rounded to the
    /// nearest page. Never below its reserve.
    pub fn set_target_bytes(&self, pool: usize, bytes: u64, page_bytes: usize) {
        let p = &self.pools[pool];
        let page = page_bytes.max(1) as u64;
        let reserved = p.reserved.load(Relaxed);
        let bytes = bytes.max(reserved as u64 * page);
        p.target
            .store(((bytes + page / 2) / page) as usize, Relaxed);
        p.target_bytes.store(bytes, Relaxed);
    }

    #[inline]
    pub(crate) fn held(&self, pool: usize) -> usize {
        self.pools[pool].held.load(Relaxed)
    }

    pub(crate) fn gained(&self, pool: usize) {
        self.pools[pool].held.fetch_add(1, Relaxed);
    }

    pub(crate) fn lost(&self, pool: usize) {
        self.pools[pool].held.fetch_sub(1, Relaxed);
    }

    /// Whether `pool` may take one more page (below its cap).
    #[inline]
    pub(crate) fn may_grow(&self, pool: usize) -> bool {
        self.held(pool) < self.pools[pool].max.load(Relaxed)
    }

    /// Whether `pool` holds fewer pages than its target (and may grow).
    #[inline]
    pub(crate) fn below_target(&self, pool: usize) -> bool {
        let held = self.held(pool);
        let p = &self.pools[pool];
        let want = p.target.load(Relaxed);
        want != UNLIMITED && held < want && held < p.max.load(Relaxed)
    }

    /// How many pages `pool` holds beyond what it should keep: over its target, or over its cap; 0 when
    /// neither (and always 0 at or below its reserve).
    #[inline]
    pub(crate) fn surplus(&self, pool: usize) -> usize {
        let p = &self.pools[pool];
        let held = p.held.load(Relaxed);
        let keep = p.target.load(Relaxed).min(p.max.load(Relaxed));
        if keep == UNLIMITED {
            return 0;
        }
        held.saturating_sub(keep.max(p.reserved.load(Relaxed)))
    }

    /// Pages `pool` holds above its reserve: what it may give up when nobody is over target.
    #[inline]
    pub(crate) fn above_reserve(&self, pool: usize) -> usize {
        let p = &self.pools[pool];
        p.held
            .load(Relaxed)
            .saturating_sub(p.reserved.load(Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_map_to_their_pool_unless_shared_or_beyond() {
        let t = PoolTable::new(3);
        assert_eq!(t.pool_of(TenantId(2)), 2);
        assert_eq!(t.pool_of(TenantId(3)), 0);
        t.set_shared(true);
        assert_eq!(t.pool_of(TenantId(2)), 0);
    }

    #[test]
    fn surplus_respects_target_cap_and_reserve() {
        let t = PoolTable::new(2);
        for _ in 0..10 {
            t.gained(1);
        }
        assert_eq!(t.surplus(1), 0, "no target, no cap: never a donor");
        t.set_limits(1, 8, UNLIMITED);
        t.set_target(1, 4);
        assert_eq!(
            t.snapshot(1).target,
            8,
            "a target is never below the reserve"
        );
        assert_eq!(t.surplus(1), 2);
        t.set_limits(1, 0, 6);
        assert_eq!(t.surplus(1), 4, "over the cap");
        assert!(!t.may_grow(1));
        t.set_target(0, 3);
        assert!(t.below_target(0));
    }
}
