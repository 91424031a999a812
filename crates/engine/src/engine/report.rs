//! What the engine reports about itself: `stats` (all counters and every class, summed over shards),
//! the tenants' counters, the profilers' memory, `stats reset`, and the invariant check.
//!
//! Invariants: each shard is read under its own lock, one at a time, so a report is consistent per
//! shard, not across shards; `reset_stats` zeroes counters but never items, bytes or pages.

use super::{Engine, LockClock, LockStats};
use crate::shard::InvariantError;
use crate::stats::{ClassSnapshot, EngineStats, GlobalCounters, TenantCounters};
use crate::Clock;

impl Engine {
    /// A consistent-per-shard snapshot of all counters and every class.
    pub fn stats(&self, clock: Clock) -> EngineStats {
        let mut counters = GlobalCounters::default();
        let mut classes: Vec<ClassSnapshot> = Vec::new();
        let mut curr_items = 0;
        let mut tenants: Vec<TenantCounters> = Vec::new();
        for shard in self.shards.iter() {
            let shard = shard.lock();
            counters.add(shard.global_counters());
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

    /// Heap bytes all MRC profilers hold.
    pub fn profile_memory_bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().profilers().memory_bytes())
            .sum()
    }

    /// `stats reset`: zeroes the counters (not the items or pages).
    pub fn reset_stats(&self) {
        for shard in self.shards.iter() {
            shard.lock().reset_counters();
            shard.reset_stats();
        }
    }

    /// Times the shard locks with `clock` (see `lock.rs`); until then `lock_stats` stays at 0.
    pub fn time_locks(&mut self, clock: LockClock) {
        for shard in self.shards.iter_mut() {
            shard.time_with(clock);
        }
    }

    /// What the shard locks have cost (waits, longest wait and hold), each shard's in shard order.
    pub fn lock_stats(&self) -> Vec<LockStats> {
        self.shards.iter().map(|s| s.stats()).collect()
    }

    /// Checks every shard's internal invariants and the page budget; O(items + chunks). For tests, the
    /// simulator's `--check` mode and debugging.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let mut pool_pages = vec![0usize; self.globals.pools.len()];
        for (i, shard) in self.shards.iter().enumerate() {
            let held =
                shard
                    .lock()
                    .check_invariants()
                    .map_err(|violation| InvariantError::Shard {
                        shard: i,
                        violation,
                    })?;
            for (acc, n) in pool_pages.iter_mut().zip(held) {
                *acc += n;
            }
        }
        for (pool, &held) in pool_pages.iter().enumerate() {
            let counted = self.globals.pools.snapshot(pool).held;
            if held != counted {
                return Err(InvariantError::PoolPages {
                    pool,
                    held,
                    counted,
                });
            }
        }
        let held: usize = pool_pages.iter().sum();
        let in_use = self.globals.budget.in_use();
        if held != in_use {
            return Err(InvariantError::BudgetPages { held, in_use });
        }
        Ok(())
    }
}
