//! The maintenance thread: memcached's LRU crawler, slab rebalancer and automove, once a second.
//!
//! Each tick it (1) reaps expired and flushed items, at most [`REAP_ITEMS_PER_CLASS`] inspections per class
//! and shard, unless `-o no_lru_crawler`; (2) gives back pages over the memory limit (after
//! `cache_memlimit` lowered it), at most [`RELEASE_PAGES_PER_TICK`]; (3) runs automove in the mode
//! `ctx.automove_mode` holds now: 1 is memcached 1.6's age balancer (`mrcache_engine::automove`), 2 moves a
//! page toward every class that evicted in the tick. Every step is bounded, and each engine call takes one
//! shard lock at a time, so request latency is not held hostage by maintenance.
//!
//! Owns: its automove state. Shares: the engine (through its shard locks) and the context's counters.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use mrcache_engine::automove::{Automove, Move};
use mrcache_engine::{ClassId, ClassSnapshot, ReassignOutcome};

use crate::context::ServerContext;

/// memcached's automove and crawler run at most once a second.
pub const TICK: Duration = Duration::from_secs(1);
/// Bound on the reaper's work per class per shard per tick.
pub const REAP_ITEMS_PER_CLASS: usize = 1000;
/// Bound on pages given back per tick after the limit is lowered.
pub const RELEASE_PAGES_PER_TICK: usize = 16;

/// The automove modes (`slabs automove N`).
const AUTOMOVE_OFF: u32 = 0;
const AUTOMOVE_AGE_BALANCE: u32 = 1;
const AUTOMOVE_ON_EVICTION: u32 = 2;

/// The thread's state; [`Maintenance::run`] is the thread body.
pub struct Maintenance {
    ctx: Arc<ServerContext>,
    automove: Automove,
    /// Evictions per class at the previous tick (mode 2).
    evicted_before: Vec<u64>,
    /// Round-robin cursor for mode 2's source choice (memcached's `slabs_reassign_pick_any`).
    source_cursor: usize,
}

impl Maintenance {
    pub fn new(ctx: Arc<ServerContext>) -> Maintenance {
        let s = &ctx.settings;
        let automove = Automove::new(s.slab_automove_window as usize, s.slab_automove_ratio);
        Maintenance {
            ctx,
            automove,
            evicted_before: Vec::new(),
            source_cursor: 0,
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

        let mode = ctx.automove_mode.load(Relaxed);
        if mode == AUTOMOVE_OFF || !ctx.settings.slab_reassign {
            return;
        }
        let classes = ctx.engine.stats(ctx.clock()).classes;
        match mode {
            AUTOMOVE_AGE_BALANCE => {
                self.automove.set_ratio(ctx.automove_ratio());
                match self.automove.tick(&classes) {
                    Some(Move {
                        src,
                        dst: Some(dst),
                    }) => self.reassign(src.0 as i64, dst.0 as i64),
                    Some(Move { src, dst: None }) => self.give_back(src),
                    None => {}
                }
            }
            AUTOMOVE_ON_EVICTION => self.move_toward_evictions(&classes),
            _ => {}
        }
        self.evicted_before = classes.iter().map(|c| c.counters.evicted).collect();
    }

    /// Mode 2: memcached reassigns a page (from any class with a spare) on every eviction; once a tick we
    /// move one page toward each class that evicted since the last tick.
    fn move_toward_evictions(&mut self, classes: &[ClassSnapshot]) {
        for (i, c) in classes.iter().enumerate() {
            let before = self.evicted_before.get(i).copied().unwrap_or(0);
            if c.counters.evicted <= before {
                continue;
            }
            if let Some(src) = pick_any_source(classes, i, &mut self.source_cursor) {
                self.reassign(classes[src].class.0 as i64, c.class.0 as i64);
            }
        }
    }

    /// A class with idle free chunks gives a page back to the pool (memcached's reassign to class 0).
    fn give_back(&self, src: ClassId) {
        if self.ctx.engine.move_page(src, None).is_some() {
            self.ctx.maintenance.automove_moves.fetch_add(1, Relaxed);
        }
    }

    fn reassign(&self, src: i64, dst: i64) {
        if let ReassignOutcome::Moved { .. } = self.ctx.engine.reassign(src, dst) {
            self.ctx.maintenance.automove_moves.fetch_add(1, Relaxed);
            if self.ctx.settings.verbose > 1 {
                eprintln!("mrcached: automove moved a page from class {src} to class {dst}");
            }
        }
    }
}

/// memcached's `slabs_reassign_pick_any`: the next class after `cursor`, round-robin, that has more than one
/// page and is not `dst`.
pub fn pick_any_source(classes: &[ClassSnapshot], dst: usize, cursor: &mut usize) -> Option<usize> {
    let n = classes.len();
    for step in 1..=n {
        let i = (*cursor + step) % n;
        if i != dst && classes[i].total_pages > 1 {
            *cursor = i;
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use mrcache_engine::{ClassCounters, ClassId};

    fn class(i: usize, pages: usize) -> ClassSnapshot {
        ClassSnapshot {
            class: ClassId::from_index(i),
            chunk_size_bytes: 96,
            chunks_per_page: 10,
            total_pages: pages,
            used_chunks: 0,
            free_chunks: 0,
            items: 0,
            requested_bytes: 0,
            tail_age_secs: 0,
            counters: ClassCounters::default(),
        }
    }

    #[test]
    fn pick_any_round_robins_over_classes_with_spares() {
        let classes = vec![class(0, 3), class(1, 1), class(2, 2), class(3, 5)];
        let mut cursor = 0;
        assert_eq!(pick_any_source(&classes, 3, &mut cursor), Some(2));
        assert_eq!(pick_any_source(&classes, 3, &mut cursor), Some(0));
        assert_eq!(pick_any_source(&classes, 3, &mut cursor), Some(2));
        let lone = vec![class(0, 1), class(1, 9)];
        assert_eq!(pick_any_source(&lone, 1, &mut cursor), None);
    }
}
