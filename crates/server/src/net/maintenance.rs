//! The maintenance thread: memcached's LRU crawler and slab rebalancer, once a second.
//!
//! Each tick it (1) reaps expired and flushed items, at most [`REAP_ITEMS_PER_CLASS`] inspections per class
//! and shard, unless `-o no_lru_crawler`; (2) gives back pages over the memory limit (after
//! `cache_memlimit` lowered it), at most [`RELEASE_PAGES_PER_TICK`]; (3) polls the slab rebalancer
//! (`mrcache_policy::Rebalancer`), which runs the class policy when it is due (memcached's automove once
//! a second, PSA every M misses, LAMA every M accesses or T seconds) and moves the pages it asks for.
//! Every step is bounded, and each engine call takes one shard lock at a time (a page move holds one
//! shard for one page's relocation), so request latency is not held hostage by maintenance.
//!
//! Owns: the rebalancer. Shares: the engine (through its shard locks) and the context's counters; the
//! policy to run is `ctx.slab_policy`, re-read when `ctx.slab_policy_generation` changes.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use mrcache_policy::{class, Rebalancer};

use crate::context::ServerContext;

/// memcached's automove and crawler run at most once a second.
pub const TICK: Duration = Duration::from_secs(1);
/// Bound on the reaper's work per class per shard per tick.
pub const REAP_ITEMS_PER_CLASS: usize = 1000;
/// Bound on pages given back per tick after the limit is lowered.
pub const RELEASE_PAGES_PER_TICK: usize = 16;

/// The thread's state; [`Maintenance::run`] is the thread body.
pub struct Maintenance {
    ctx: Arc<ServerContext>,
    rebalancer: Rebalancer,
    /// `ctx.slab_policy_generation` the rebalancer's policy came from.
    generation: u64,
}

impl Maintenance {
    pub fn new(ctx: Arc<ServerContext>) -> Maintenance {
        let generation = ctx.slab_policy_generation.load(Relaxed);
        let policy = class::by_name(&current_spec(&ctx))
            .or_else(|_| class::by_name("memcached"))
            .expect("the memcached policy exists");
        let rebalancer = Rebalancer::new(policy, &ctx.engine);
        Maintenance {
            ctx,
            rebalancer,
            generation,
        }
    }

    /// Ticks once a second until `stop` is signalled or dropped.
    pub fn run(mut self, stop: Receiver<()>) {
        loop {
            match stop.recv_timeout(TICK) {
                Err(RecvTimeoutError::Timeout) => self.tick(),
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
            }
            if self.ctx.is_shutting_down() {
                return;
            }
        }
    }

    /// One round of maintenance.
    pub fn tick(&mut self) {
        let ctx = &self.ctx;
        let m = &ctx.maintenance;
        m.runs.fetch_add(1, Relaxed);
        if ctx.settings.lru_crawler {
            m.reaper_starts.fetch_add(1, Relaxed);
            let reaped = ctx.engine.reap_expired(ctx.clock(), REAP_ITEMS_PER_CLASS);
            m.reaped_items.fetch_add(reaped as u64, Relaxed);
        }
        let released = ctx.engine.shrink_to_limit(RELEASE_PAGES_PER_TICK);
        m.pages_released.fetch_add(released as u64, Relaxed);

        let generation = ctx.slab_policy_generation.load(Relaxed);
        if generation != self.generation {
            self.generation = generation;
            let spec = current_spec(ctx);
            match class::by_name(&spec) {
                Ok(policy) => self.rebalancer.set_policy(policy, &ctx.engine),
                // Specs come from validated settings and memcached's modes; never expected.
                Err(e) => eprintln!("mrcached: slab policy {spec}: {e}"),
            }
        }
        if !ctx.settings.slab_reassign {
            return;
        }
        let moved = self.rebalancer.poll(&ctx.engine, ctx.clock());
        let stats = self.rebalancer.stats();
        m.automove_moves.fetch_add(moved, Relaxed);
        m.policy_rounds.store(stats.rounds, Relaxed);
        let bits = |v: Option<f64>| v.unwrap_or(f64::NAN).to_bits();
        m.policy_predicted_bits
            .store(bits(stats.predicted_miss_ratio), Relaxed);
        m.policy_observed_bits
            .store(bits(stats.observed_miss_ratio), Relaxed);
        if moved > 0 && ctx.settings.verbose > 1 {
            eprintln!(
                "mrcached: {} moved {moved} page(s)",
                self.rebalancer.policy().name()
            );
        }
    }
}

fn current_spec(ctx: &ServerContext) -> String {
    ctx.slab_policy
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}
