//! The tenant arbiter's driver, shared by the server and the simulator: the upper level of the two-level
//! memory model (LAMA §4). It reads each tenant pool's counters, pages and curve from the engine, asks the
//! arbiter (`tenant`) for every pool's target pages when a round is due, and hands the targets to the
//! engine, whose allocations then move pages from pools above their target to pools below theirs
//! (`mrcache_engine::pool`). Within each pool a `Rebalancer::for_pool` divides the pages among slab
//! classes.
//!
//! Invariants:
//! - Pool `p` is tenant `p`'s memory; only the tenants given to `Arbitration::new` take part, every other
//!   pool's target is 0 (its pages go to the others as they need them).
//! - Reserves and caps are set on the engine once, in pages (a reserve rounds up, a cap down); every
//!   target the engine receives is at least the reserve (the engine enforces it too).
//! - The arbiter divides memory in *steps* (`Steps`): whole pages under the slab layout, which moves
//!   pages; under the log layout, whose cleaner meets a target in bytes, `1/LOG_STEPS_PER_PAGE` of a
//!   page (fewer per page when memory is so large that the steps would pass `MAX_LOG_STEPS`). The
//!   arbiter sees every count (pages held, reserves, caps, the total, its curves' points) in steps and
//!   returns targets in steps; a target in steps finer than a page reaches the engine in bytes.
//! - A window is what happened between two rounds: counters are differences of cumulative engine
//!   counters, so `stats reset` only restarts a window. A tenant's curve comes from a longer window:
//!   back to the latest round that leaves at least `CURVE_WINDOW_ITEMS` of its own accesses per item it
//!   holds (else its whole history), so reuse times longer than one round are still seen as reuses.

use std::collections::VecDeque;

use mrcache_engine::{
    ClassSnapshot, Clock, Engine, MemoryLayout, TenantCounters, TenantId, UNLIMITED,
};
use mrcache_profile::{MrcQuery, ReuseTimeHistogram, ReuseTimeMethod, SizeUnit};

use crate::tenant::{ArbiterInput, StaticSplit, TenantArbiter, TenantView};

/// LRU items inspected per class and shard when measuring a pool's idle memory (Memshare's tax).
const IDLE_SCAN_ITEMS: usize = 100_000;
/// A tenant's curve is cut from a window at least this many times as long (in its own accesses) as it
/// has items: a window shorter than the tenant's reuse times sees its reuses as cold misses, and a curve
/// that flat would take its memory away.
const CURVE_WINDOW_ITEMS: u64 = 4;
/// Histogram snapshots kept per tenant to cut such windows from (older windows fall back to the whole
/// history).
const CURVE_SNAPSHOTS: usize = 16;
/// Under the log layout, the arbiter's steps per page (64 KiB steps of 1 MiB pages).
const LOG_STEPS_PER_PAGE: usize = 16;
/// Under the log layout, at most this many steps in all: the curves the arbiter reads have a point per
/// step and mpart's DP runs over them, so the steps coarsen again past 256 MiB of 1 MiB pages.
const MAX_LOG_STEPS: usize = 4096;

/// The unit an arbiter divides memory in (see the module doc).
#[derive(Copy, Clone, Debug)]
struct Steps {
    per_page: usize,
    page_bytes: u64,
}

impl Steps {
    fn of(engine: &Engine) -> Steps {
        let pages = engine.page_limit().max(1);
        let per_page = match engine.memory_layout() {
            MemoryLayout::Slab => 1,
            MemoryLayout::Log => (MAX_LOG_STEPS / pages).clamp(1, LOG_STEPS_PER_PAGE),
        };
        Steps {
            per_page,
            page_bytes: engine.geometry().page_size_bytes() as u64,
        }
    }

    /// Bytes of a step.
    fn bytes(self) -> u64 {
        self.page_bytes / self.per_page as u64
    }

    /// The engine's memory limit in steps.
    fn total(self, engine: &Engine) -> usize {
        engine.page_limit() * self.per_page
    }

    /// An arbiter's input over `tenants`, counted in these steps.
    fn input<'a>(self, engine: &Engine, tenants: &'a [TenantView]) -> ArbiterInput<'a> {
        ArbiterInput {
            tenants,
            total_pages: self.total(engine),
            page_bytes: self.bytes() as usize,
        }
    }

    /// Sets `pool`'s target of `n` steps on the engine: in pages when a step is a page (the slab
    /// rules read only pages), else in bytes.
    fn set_target(self, engine: &Engine, pool: usize, n: usize) {
        if self.per_page == 1 {
            engine.set_pool_target(pool, n);
        } else {
            engine.set_pool_target_bytes(pool, n as u64 * self.bytes());
        }
    }
}

/// One tenant's memory settings, in bytes as operators write them.
#[derive(Clone, Debug, PartialEq)]
pub struct ArbitratedTenant {
    /// The tenant, whose pool is `tenant.index()`.
    pub tenant: TenantId,
    /// Bytes never taken from it while it uses them.
    pub reserved_bytes: u64,
    /// The most it may hold, if capped.
    pub max_bytes: Option<u64>,
    /// Its QoS target (lama-qos).
    pub target_hit_ratio: Option<f64>,
    /// Share of the unreserved memory at the start, and Memshare's credit multiplier (default 1).
    pub weight: f64,
    /// Memory it starts with (mPart's "initial allocation"); when every tenant gives one they are the
    /// starting targets (scaled down together if they exceed memory), else the static division is.
    pub initial_bytes: Option<u64>,
}

impl ArbitratedTenant {
    /// A tenant with no reserve, no cap, no target and weight 1.
    pub fn new(tenant: TenantId) -> ArbitratedTenant {
        ArbitratedTenant {
            tenant,
            reserved_bytes: 0,
            max_bytes: None,
            target_hit_ratio: None,
            weight: 1.0,
            initial_bytes: None,
        }
    }
}

/// What the arbitration has done so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArbitrationStats {
    /// Rounds run.
    pub rounds: u64,
    /// The last targets in bytes, one per tenant in `Arbitration::new`'s order (whole pages under the
    /// slab layout).
    pub target_bytes: Vec<u64>,
}

/// A tenant arbiter and the state that feeds it.
pub struct Arbitration {
    arbiter: Box<dyn TenantArbiter>,
    tenants: Vec<ArbitratedTenant>,
    /// Each tenant's counters at the start of the window.
    baseline: Option<Vec<TenantCounters>>,
    /// Each tenant's pool histograms at the last rounds, oldest first (at most `CURVE_SNAPSHOTS`).
    histograms: Vec<VecDeque<ReuseTimeHistogram>>,
    /// Each tenant's per-class uses (hits + inserts) at the last round, to weigh its classes by.
    class_uses: Vec<Vec<u64>>,
    stats: ArbitrationStats,
}

impl Arbitration {
    /// Starts `arbiter` over `tenants` on `engine`: sets reserves and caps, shares the pools if the arbiter
    /// asks for it, and gives every tenant its starting target (its reserve plus a share of the rest by
    /// weight, as the `static` arbiter divides). Tenants whose id has no pool of its own are left out
    /// (they share pool 0).
    pub fn new(
        arbiter: Box<dyn TenantArbiter>,
        tenants: Vec<ArbitratedTenant>,
        engine: &Engine,
    ) -> Self {
        let tenants: Vec<ArbitratedTenant> = tenants
            .into_iter()
            .filter(|t| t.tenant.index() < engine.pool_count())
            .collect();
        let mut arbitration = Arbitration {
            arbiter,
            histograms: vec![VecDeque::new(); tenants.len()],
            class_uses: vec![Vec::new(); tenants.len()],
            tenants,
            baseline: None,
            stats: ArbitrationStats::default(),
        };
        arbitration.apply_settings(engine);
        arbitration
    }

    /// Replaces the tenants' settings (a configuration reload): reserves, caps and starting targets are
    /// set again and the window restarts; the arbiter keeps its state.
    pub fn set_tenants(&mut self, tenants: Vec<ArbitratedTenant>, engine: &Engine) {
        self.tenants = tenants
            .into_iter()
            .filter(|t| t.tenant.index() < engine.pool_count())
            .collect();
        self.histograms = vec![VecDeque::new(); self.tenants.len()];
        self.class_uses = vec![Vec::new(); self.tenants.len()];
        self.baseline = None;
        self.apply_settings(engine);
    }

    fn apply_settings(&mut self, engine: &Engine) {
        let page = engine.geometry().page_size_bytes() as u64;
        engine.set_pools_shared(self.arbiter.shared_pool());
        for pool in 0..engine.pool_count() {
            engine.set_pool_limits(pool, 0, UNLIMITED);
            engine.set_pool_target(pool, 0);
        }
        for t in &self.tenants {
            let max = t.max_bytes.map_or(UNLIMITED, |b| (b / page) as usize);
            engine.set_pool_limits(
                t.tenant.index(),
                t.reserved_bytes.div_ceil(page) as usize,
                max,
            );
        }
        // The starting targets: the initial allocations when all are given, else the static division.
        let steps = Steps::of(engine);
        let initial: Option<Vec<u64>> = self.tenants.iter().map(|t| t.initial_bytes).collect();
        let targets = match initial {
            Some(bytes) if !bytes.is_empty() => {
                initial_targets(&bytes, steps.bytes(), steps.total(engine))
            }
            _ => {
                let views = self.views(engine, steps, None, None);
                StaticSplit::new(false, 1).round(&steps.input(engine, &views))
            }
        };
        self.set_targets(engine, steps, targets);
    }

    /// The arbiter it runs.
    pub fn arbiter(&self) -> &dyn TenantArbiter {
        self.arbiter.as_ref()
    }

    /// The tenants it divides memory among, in the order given.
    pub fn tenants(&self) -> &[ArbitratedTenant] {
        &self.tenants
    }

    /// What it has done so far.
    pub fn stats(&self) -> &ArbitrationStats {
        &self.stats
    }

    /// Runs a round if one is due; returns whether one ran.
    pub fn poll(&mut self, engine: &Engine, clock: Clock) -> bool {
        let counters = self.counters(engine);
        let Some(baseline) = &self.baseline else {
            self.start_window(engine, counters);
            return false;
        };
        let window: Vec<TenantCounters> = counters
            .iter()
            .zip(baseline)
            .map(|(now, then)| difference(now, then))
            .collect();
        let accesses: u64 = window
            .iter()
            .map(|c| c.get_hits + c.get_misses + c.set_cmds)
            .sum();
        if !self.arbiter.due(accesses) {
            return false;
        }
        // One unit for the whole round (`cache_memlimit` may change the limit between rounds).
        let steps = Steps::of(engine);
        let views = self.views(engine, steps, Some(&window), Some(clock));
        let targets = self.arbiter.round(&steps.input(engine, &views));
        self.set_targets(engine, steps, targets);
        self.stats.rounds += 1;
        self.baseline = Some(counters);
        true
    }

    fn start_window(&mut self, engine: &Engine, counters: Vec<TenantCounters>) {
        self.baseline = Some(counters);
        if self.arbiter.needs_curves() {
            for (i, t) in self.tenants.iter().enumerate() {
                self.histograms[i].clear();
                self.histograms[i].extend(engine.pool_histogram(t.tenant.index()).map(|(h, _)| h));
            }
        }
    }

    /// Hands the arbiter's targets (in `steps`) to the engine.
    fn set_targets(&mut self, engine: &Engine, steps: Steps, targets: Vec<usize>) {
        for (t, &n) in self.tenants.iter().zip(&targets) {
            steps.set_target(engine, t.tenant.index(), n);
        }
        self.stats.target_bytes = targets.iter().map(|&n| n as u64 * steps.bytes()).collect();
    }

    /// Each tenant's cumulative counters.
    fn counters(&self, engine: &Engine) -> Vec<TenantCounters> {
        let all = engine.tenant_counters();
        self.tenants
            .iter()
            .map(|t| all.get(t.tenant.index()).cloned().unwrap_or_default())
            .collect()
    }

    /// The arbiter's view of every tenant; with a window, its counters and (when the arbiter asks) its
    /// curve and idle share; the curve snapshots move on to the next window.
    fn views(
        &mut self,
        engine: &Engine,
        steps: Steps,
        window: Option<&[TenantCounters]>,
        clock: Option<Clock>,
    ) -> Vec<TenantView> {
        let (total, k) = (steps.total(engine), steps.per_page);
        let mut views = Vec::with_capacity(self.tenants.len());
        for (i, t) in self.tenants.iter().enumerate() {
            let pool = t.tenant.index();
            let held = engine.pool(pool);
            let w = window.map(|w| w[i].clone()).unwrap_or_default();
            let mut view = TenantView {
                id: t.tenant.0,
                pages: held.held.saturating_mul(k),
                reserved_pages: held.reserved.saturating_mul(k),
                max_pages: (held.max != UNLIMITED).then_some(held.max.saturating_mul(k)),
                target_hit_ratio: t.target_hit_ratio,
                weight: t.weight,
                gets: w.get_hits + w.get_misses,
                get_misses: w.get_misses,
                shadow_hits: w.shadow_hits,
                idle_fraction: 0.0,
                curve: None,
            };
            if let (Some(clock), Some(idle)) = (clock, self.arbiter.idle_time_secs()) {
                view.idle_fraction = engine.pool_idle_fraction(pool, idle, clock, IDLE_SCAN_ITEMS);
            }
            if let (Some(clock), true) = (clock, self.arbiter.needs_curves()) {
                if let Some((now, _)) = engine.pool_histogram(pool) {
                    let items = w.items.max(1);
                    let snapshots = &mut self.histograms[i];
                    // The most recent snapshot that leaves a long enough window, else the whole history.
                    let window = snapshots
                        .iter()
                        .rev()
                        .find(|s| {
                            now.requests().saturating_sub(s.requests())
                                >= CURVE_WINDOW_ITEMS * items
                        })
                        .map_or_else(|| now.clone(), |before| now.since(before).as_observed());
                    if snapshots.len() == CURVE_SNAPSHOTS {
                        snapshots.pop_front();
                    }
                    snapshots.push_back(now);
                    let classes = engine.pool_classes(pool, clock);
                    let uses: Vec<u64> = classes
                        .iter()
                        .map(|c| c.counters.get_hits + c.counters.inserts)
                        .collect();
                    let before = std::mem::replace(&mut self.class_uses[i], uses);
                    if let Some(per_page) = items_per_page(&classes, &self.class_uses[i], &before) {
                        view.curve = curve_by_pages(&window, per_page / k as f64, total);
                    }
                }
            }
            views.push(view);
        }
        views
    }
}

/// `now - then`, or `now` when a counter went backwards (`stats reset`).
fn difference(now: &TenantCounters, then: &TenantCounters) -> TenantCounters {
    let d = |a: u64, b: u64| a.checked_sub(b).unwrap_or(a);
    TenantCounters {
        items: now.items,
        bytes: now.bytes,
        get_hits: d(now.get_hits, then.get_hits),
        get_misses: d(now.get_misses, then.get_misses),
        set_cmds: d(now.set_cmds, then.set_cmds),
        shadow_hits: d(now.shadow_hits, then.shadow_hits),
    }
}

/// Items one page of a pool holds for the items it uses now: `1 / sum(f_c / chunks_per_page_c)`, where
/// `f_c` is class `c`'s share of the pool's uses (hits and inserts) since the last round, or of its pages
/// when it had none. `None` when the pool has neither.
///
/// Curves are taken in items and scaled by this, rather than in bytes: a window after the first has
/// few first accesses, so the mean object size a byte curve is scaled by is not known within it. The
/// window's uses, not the pages held, weigh the classes, so that when a tenant's item sizes change (a
/// new phase) its curve is scaled by the sizes it stores now.
fn items_per_page(classes: &[ClassSnapshot], uses: &[u64], before: &[u64]) -> Option<f64> {
    let weights: Vec<f64> = classes
        .iter()
        .enumerate()
        .map(|(i, _)| uses[i].saturating_sub(before.get(i).copied().unwrap_or(0)) as f64)
        .collect();
    let weights = if weights.iter().sum::<f64>() > 0.0 {
        weights
    } else {
        classes.iter().map(|c| c.total_pages as f64).collect()
    };
    let total: f64 = weights.iter().sum();
    let pages_per_item: f64 = classes
        .iter()
        .zip(&weights)
        .filter(|(_, &w)| w > 0.0)
        .map(|(c, &w)| w / total / c.chunks_per_page as f64)
        .sum();
    (pages_per_item > 0.0).then(|| 1.0 / pages_per_item)
}

/// The window's miss ratio at 0..=`total_pages` pages of `items_per_page` items each (AET).
fn curve_by_pages(
    window: &ReuseTimeHistogram,
    items_per_page: f64,
    total_pages: usize,
) -> Option<Vec<f64>> {
    if window.requests() == 0 {
        return None;
    }
    let sizes: Vec<u64> = (1..=total_pages as u64)
        .map(|k| ((k as f64 * items_per_page) as u64).max(1))
        .collect();
    let curve = window.mrc(
        ReuseTimeMethod::Aet,
        &MrcQuery::exactly(SizeUnit::Objects, &sizes),
    );
    if curve.points().is_empty() {
        return None;
    }
    Some(
        std::iter::once(1.0)
            .chain(sizes.iter().map(|&s| curve.miss_ratio_at(s as f64)))
            .collect(),
    )
}

/// Pages for initial allocations of `bytes`, scaled down together when they exceed `total_pages`.
fn initial_targets(bytes: &[u64], page: u64, total_pages: usize) -> Vec<usize> {
    let sum: u64 = bytes.iter().sum();
    let scale = if sum > total_pages as u64 * page {
        total_pages as f64 * page as f64 / sum as f64
    } else {
        1.0
    };
    bytes
        .iter()
        .map(|&b| (b as f64 * scale / page as f64).floor() as usize)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TenantPolicySpec;
    use mrcache_engine::EngineConfig;

    /// Two tenants of weights 1 and 2 split 10 pages statically: a third is 3.33 pages.
    fn split_a_third(layout: MemoryLayout) -> (Engine, Arbitration) {
        let engine = Engine::new(EngineConfig {
            memory_limit_bytes: 10 << 20,
            tenant_pools: 2,
            memory_layout: layout,
            ..EngineConfig::default()
        })
        .unwrap();
        let mut heavy = ArbitratedTenant::new(TenantId(1));
        heavy.weight = 2.0;
        let arbiter = "static".parse::<TenantPolicySpec>().unwrap().build();
        let tenants = vec![ArbitratedTenant::new(TenantId(0)), heavy];
        let arbitration = Arbitration::new(arbiter, tenants, &engine);
        (engine, arbitration)
    }

    #[test]
    fn the_log_layout_gets_targets_finer_than_a_page_and_slab_whole_pages() {
        let page = 1u64 << 20;
        let (engine, arbitration) = split_a_third(MemoryLayout::Log);
        let light = engine.pool(0).target_bytes.expect("a target in bytes");
        let step = page / LOG_STEPS_PER_PAGE as u64;
        assert_ne!(light % page, 0, "{light} is whole pages");
        assert!(light.abs_diff((10 * page) / 3) <= step, "{light}");
        assert_eq!(
            engine.pool(0).target,
            3,
            "rounded to pages for the slab rules"
        );
        let all: u64 = arbitration.stats().target_bytes.iter().sum();
        assert_eq!(all, 10 * page, "the steps divide all memory");

        let (engine, arbitration) = split_a_third(MemoryLayout::Slab);
        assert_eq!(engine.pool(0).target_bytes, None, "slab targets are pages");
        assert_eq!(engine.pool(0).target + engine.pool(1).target, 10);
        assert!(arbitration
            .stats()
            .target_bytes
            .iter()
            .all(|b| b % page == 0));
    }
}
