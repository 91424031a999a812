//! The admin port's recent past (`GET /history`): a bounded ring of once-a-second samples of what the
//! dashboard draws over time.
//!
//! The admin thread owns the one [`History`] and takes a sample when a second has passed since the last
//! one (between requests; it waits at most a fifth of a second for one), so nothing here runs on the
//! request path or takes locks beyond the engine's snapshot calls, and the history exists only while
//! the admin port does. A sample holds the pages of every slab class that has any, the pages and bytes
//! of every known tenant, the hits and misses of GET-type lookups since the previous sample (overall
//! and per tenant), the slab policy's predicted and observed miss ratio, and the pages the class policy
//! moved and the arbiter rounds since the previous sample.
//!
//! Invariants: at most [`CAPACITY`] samples are kept (the oldest is dropped first), so memory is bounded
//! by `CAPACITY × (classes in use + known tenants)` small entries — with 64 classes and 16 tenants about
//! 1.5 MB, and far less in practice; sample times are seconds since the server started and increase.
//! Counters are turned into per-interval deltas with saturating subtraction, so `stats reset` shows as
//! one quiet interval, never as a negative one.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use serde::Serialize;

use mrcache_engine::TenantId;

use crate::context::ServerContext;

/// Samples kept: ten minutes at one a second.
pub const CAPACITY: usize = 600;
/// Time between samples.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// One tenant at one sample.
#[derive(Clone, Debug, Serialize)]
pub struct TenantSample {
    /// The tenant's name.
    pub tenant: String,
    /// Pages its own pool holds (0: it shares pool 0).
    pub pages: usize,
    /// Bytes of its items.
    pub bytes: u64,
    /// GET-type lookups since the previous sample that hit.
    pub hits: u64,
    /// GET-type lookups since the previous sample that missed.
    pub misses: u64,
}

/// The server at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the server started.
    pub t: u64,
    /// `[class, pages]` for every class holding pages.
    pub class_pages: Vec<(u8, usize)>,
    /// Every tenant ever known.
    pub tenants: Vec<TenantSample>,
    /// GET-type lookups since the previous sample that hit.
    pub hits: u64,
    /// GET-type lookups since the previous sample that missed.
    pub misses: u64,
    /// `hits / (hits + misses)`, `None` without lookups in the interval.
    pub hit_ratio: Option<f64>,
    /// The slab policy's predicted miss ratio for the window after its last curve-driven round, and the
    /// one observed in it (`stats`' `policy_predicted_miss_ratio` / `policy_observed_miss_ratio`).
    pub predicted_miss_ratio: Option<f64>,
    /// See `predicted_miss_ratio`.
    pub observed_miss_ratio: Option<f64>,
    /// Pages the class policy moved between classes since the previous sample.
    pub moves: u64,
    /// Rounds the tenant arbiter ran since the previous sample.
    pub arbiter_rounds: u64,
}

/// Cumulative counters at the previous sample, to turn them into deltas.
#[derive(Default)]
struct Previous {
    hits: u64,
    misses: u64,
    moves: u64,
    arbiter_rounds: u64,
    /// Per tenant id: hits, misses.
    tenants: Vec<(u64, u64)>,
}

/// The ring of samples and when the next one is due.
pub struct History {
    samples: VecDeque<Sample>,
    previous: Option<Previous>,
    next_due: Instant,
}

impl Default for History {
    fn default() -> History {
        History::new()
    }
}

/// The JSON `/history` serves.
#[derive(Serialize)]
struct HistoryReport<'a> {
    interval_secs: u64,
    capacity: usize,
    page_size_bytes: usize,
    page_limit: usize,
    samples: &'a VecDeque<Sample>,
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

impl History {
    /// An empty history; the first sample comes at the first [`INTERVAL`].
    pub fn new() -> History {
        History {
            samples: VecDeque::with_capacity(CAPACITY),
            previous: None,
            next_due: Instant::now(),
        }
    }

    /// Takes a sample if one is due at `now`.
    pub fn poll(&mut self, ctx: &ServerContext, now: Instant) {
        if now < self.next_due {
            return;
        }
        self.next_due = now + INTERVAL;
        self.sample(ctx);
    }

    /// Takes one sample now, dropping the oldest when full.
    pub fn sample(&mut self, ctx: &ServerContext) {
        let engine = &ctx.engine;
        let stats = engine.stats(ctx.clock());
        let totals = stats.class_totals();
        let m = &ctx.maintenance;
        let mut now = Previous {
            hits: totals.get_hits,
            misses: stats.counters.get_misses,
            moves: m.automove_moves.load(Relaxed),
            arbiter_rounds: m.arbiter_rounds.load(Relaxed),
            tenants: Vec::new(),
        };
        let prev = self.previous.take();
        let delta = |now: u64, before: Option<u64>| now.saturating_sub(before.unwrap_or(now));
        let mut tenants = Vec::new();
        for (id, name) in ctx.tenants.known() {
            let c = stats.tenant(id);
            let index = id.index();
            if now.tenants.len() <= index {
                now.tenants.resize(index + 1, (0, 0));
            }
            now.tenants[index] = (c.get_hits, c.get_misses);
            let before = prev.as_ref().and_then(|p| p.tenants.get(index)).copied();
            tenants.push(TenantSample {
                tenant: name,
                pages: own_pool_pages(ctx, id),
                bytes: c.bytes,
                hits: delta(c.get_hits, before.map(|b| b.0)),
                misses: delta(c.get_misses, before.map(|b| b.1)),
            });
        }
        let hits = delta(now.hits, prev.as_ref().map(|p| p.hits));
        let misses = delta(now.misses, prev.as_ref().map(|p| p.misses));
        let sample = Sample {
            t: ctx.uptime_secs(),
            class_pages: stats
                .classes
                .iter()
                .filter(|c| c.total_pages > 0)
                .map(|c| (c.class.0, c.total_pages))
                .collect(),
            tenants,
            hits,
            misses,
            hit_ratio: (hits + misses > 0).then(|| hits as f64 / (hits + misses) as f64),
            predicted_miss_ratio: finite(f64::from_bits(m.policy_predicted_bits.load(Relaxed))),
            observed_miss_ratio: finite(f64::from_bits(m.policy_observed_bits.load(Relaxed))),
            moves: delta(now.moves, prev.as_ref().map(|p| p.moves)),
            arbiter_rounds: delta(now.arbiter_rounds, prev.as_ref().map(|p| p.arbiter_rounds)),
        };
        self.previous = Some(now);
        if self.samples.len() == CAPACITY {
            self.samples.pop_front();
        }
        self.samples.push_back(sample);
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> &VecDeque<Sample> {
        &self.samples
    }

    /// `/history`: the samples with the sampling interval, the capacity and the page geometry.
    pub fn to_json(&self, ctx: &ServerContext) -> serde_json::Result<String> {
        let stats = ctx.engine.stats(ctx.clock());
        serde_json::to_string(&HistoryReport {
            interval_secs: INTERVAL.as_secs(),
            capacity: CAPACITY,
            page_size_bytes: stats.page_size_bytes,
            page_limit: stats.page_limit,
            samples: &self.samples,
        })
    }
}

/// Pages of `tenant`'s own pool (0 when it stores into the shared pool 0 without owning it).
fn own_pool_pages(ctx: &ServerContext, tenant: TenantId) -> usize {
    let engine = &ctx.engine;
    if engine.pool_count() > 1 && tenant.index() < engine.pool_count() {
        engine.pool(tenant.index()).held
    } else {
        0
    }
}
