//! The maintenance thread: memcached's LRU crawler and slab rebalancer, and mrcached's tenant arbiter,
//! once a second.
//!
//! Each tick it (0) closes the connections idle longer than `-o idle_timeout` (`idle.rs`), (1) reaps
//! expired and flushed items, at most [`REAP_ITEMS_PER_CLASS`] inspections per class and shard from each
//! LRU's tail, while the crawler is on (`-o no_lru_crawler`, `lru_crawler disable`); `lru_crawler crawl`
//! runs on the crawler's own thread (`crate::crawler`); (2) gives back pages over the memory limit (after
//! `cache_memlimit` lowered it), at most [`RELEASE_PAGES_PER_TICK`]; (3) drives the memory model
//! (`crate::memory::MemoryModel`): follows a reloaded tenant configuration and a new slab policy, runs
//! the tenant arbiter when a round is due (it sets pool targets; allocations then move the pages), and
//! polls each pool's class rebalancer, which runs the class policy when it is due (memcached's automove
//! once a second, PSA every M misses, LAMA every M accesses or T seconds) and moves the pages it asks for.
//! Every step is bounded, and each engine call takes one shard lock at a time (a page move holds one
//! shard for one page's relocation), so request latency is not held hostage by maintenance.
//!
//! Owns: the memory model (arbitration and rebalancers). Shares: the engine (through its shard locks)
//! and the context's counters; the class policy to run is `ctx.slab_policy`, re-read when
//! `ctx.slab_policy_generation` changes; the tenants are `ctx.tenants`, re-read when its generation
//! changes.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use crate::context::ServerContext;
use crate::memory::MemoryModel;

/// memcached's automove and crawler run at most once a second.
pub const TICK: Duration = Duration::from_secs(1);
/// Bound on the reaper's work per class per shard per tick.
pub const REAP_ITEMS_PER_CLASS: usize = 1000;
/// Bound on pages given back per tick after the limit is lowered.
pub const RELEASE_PAGES_PER_TICK: usize = 16;

/// The thread's state; [`Maintenance::run`] is the thread body.
pub struct Maintenance {
    ctx: Arc<ServerContext>,
    memory: MemoryModel,
}

impl Maintenance {
    /// Sets up the memory model: when this returns, the tenants' reserves, caps and starting targets are
    /// on the engine (so the server should build it before it serves).
    pub fn new(ctx: Arc<ServerContext>) -> Maintenance {
        let memory = MemoryModel::new(&ctx);
        Maintenance { ctx, memory }
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
        super::idle::close_idle(ctx);
        // memcached's automatic crawling; `lru_crawler disable` stops it too.
        if ctx.crawler.enabled() {
            m.reaper_starts.fetch_add(1, Relaxed);
            let reaped = ctx.engine.reap_expired(ctx.clock(), REAP_ITEMS_PER_CLASS);
            m.reaped_items.fetch_add(reaped as u64, Relaxed);
        }
        let released = ctx.engine.shrink_to_limit(RELEASE_PAGES_PER_TICK);
        m.pages_released.fetch_add(released as u64, Relaxed);
        self.memory.tick(ctx);
    }
}
