//! The rebalancer: the one driver of class policies, shared by the server's background thread and the
//! simulator. `poll` reads the engine's counters, asks the policy whether a round is due, and if so shows
//! it every class (counters since the last round and, for LAMA and Dynacache, the curve of that window
//! when the policy wants it) and carries out the page moves it returns, one `Engine::move_page` at a
//! time (each one page under one shard lock, so requests wait at most one page's relocation).
//!
//! Windows: the counters and curves a round sees cover the accesses since the previous round. Curves
//! come from the engine's cumulative reuse-time histograms, minus the snapshot kept at the last round
//! (`ReuseTimeHistogram::since`), evaluated at every page count up to the memory limit.
//!
//! Time comes in through the `Clock` argument; nothing here reads a wall clock or does I/O.

use mrcache_engine::{Clock, Engine, EngineStats};
use mrcache_profile::{MrcQuery, ReuseTimeHistogram, ReuseTimeMethod, SizeUnit};

use crate::class::{ClassPolicy, ClassView, MoveRule, Progress, RoundInput};

/// What the rebalancer has done (the server's `stats` shows it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RebalanceStats {
    /// Rounds run (whether or not they moved anything).
    pub rounds: u64,
    /// Pages moved by rounds.
    pub pages_moved: u64,
    /// Moves a round asked for that the engine could not make (the source had no page left).
    pub moves_failed: u64,
    /// Pages moved, by the rule that asked for them (indexed by `MoveRule::index`).
    pub pages_moved_by_rule: [u64; MoveRule::ALL.len()],
    /// The miss ratio the last curve-driven round predicted for the window that followed it...
    pub predicted_miss_ratio: Option<f64>,
    /// ...and the miss ratio observed in that window (stores of absent keys over uses).
    pub observed_miss_ratio: Option<f64>,
    /// Windows with both a prediction and an observation, and the sum of |predicted - observed|.
    pub predictions: u64,
    /// The sum of |predicted - observed| over those windows.
    pub prediction_error_sum: f64,
}

impl RebalanceStats {
    /// Pages moved by `rule`.
    pub fn pages_moved_by(&self, rule: MoveRule) -> u64 {
        self.pages_moved_by_rule[rule.index()]
    }

    /// Mean absolute difference between predicted and observed window miss ratios.
    pub fn mean_prediction_error(&self) -> Option<f64> {
        (self.predictions > 0).then(|| self.prediction_error_sum / self.predictions as f64)
    }
}

/// Counters at the last round.
#[derive(Clone, Debug, Default)]
struct Baseline {
    now: u32,
    /// Per class: hits, inserts, evictions.
    classes: Vec<(u64, u64, u64)>,
}

impl Baseline {
    fn of(stats: &EngineStats, now: u32) -> Baseline {
        Baseline {
            now,
            classes: stats
                .classes
                .iter()
                .map(|c| (c.counters.get_hits, c.counters.inserts, c.counters.evicted))
                .collect(),
        }
    }
}

/// A class policy and the state that feeds it.
pub struct Rebalancer {
    policy: Box<dyn ClassPolicy>,
    baseline: Option<Baseline>,
    /// Each class's histogram at the last round (indexed by class), to cut the next window from.
    histograms: Vec<Option<ReuseTimeHistogram>>,
    /// The prediction of the last round, waiting for its window to end.
    pending_prediction: Option<f64>,
    stats: RebalanceStats,
    /// The tenant pool whose classes this rebalancer divides (0: all memory when there is one pool).
    pool: usize,
}

impl Rebalancer {
    /// Starts `policy` on `engine` (Twemcache's random page eviction is switched on or off to match).
    pub fn new(policy: Box<dyn ClassPolicy>, engine: &Engine) -> Rebalancer {
        Rebalancer::for_pool(policy, engine, 0)
    }

    /// Starts `policy` on the slab classes of one tenant pool: the lower level of the two-level memory
    /// model, within the pages the tenant arbiter gives the pool.
    pub fn for_pool(policy: Box<dyn ClassPolicy>, engine: &Engine, pool: usize) -> Rebalancer {
        engine.set_random_page_eviction(policy.random_page_eviction());
        Rebalancer {
            policy,
            baseline: None,
            histograms: Vec::new(),
            pending_prediction: None,
            stats: RebalanceStats::default(),
            pool,
        }
    }

    /// The engine as this rebalancer's pool sees it: with several pools, the classes are the pool's, the
    /// pages in use are its pages, and the limit is what it may hold (its target, or what the other
    /// pools leave, whichever is smaller, and never less than it holds).
    fn read(&self, engine: &Engine, clock: Clock) -> EngineStats {
        let mut stats = engine.stats(clock);
        if engine.pool_count() == 1 {
            return stats;
        }
        let pool = engine.pool(self.pool);
        let others: usize = (0..engine.pool_count())
            .filter(|&p| p != self.pool)
            .map(|p| engine.pool(p).held)
            .sum();
        stats.classes = engine.pool_classes(self.pool, clock);
        stats.pages_in_use = pool.held;
        stats.page_limit = stats
            .page_limit
            .saturating_sub(others)
            .min(pool.target)
            .min(pool.max)
            .max(pool.held);
        stats
    }

    /// Replaces the policy; the counts so far are kept, the windows start again.
    pub fn set_policy(&mut self, policy: Box<dyn ClassPolicy>, engine: &Engine) {
        engine.set_random_page_eviction(policy.random_page_eviction());
        self.policy = policy;
        self.baseline = None;
        self.histograms.clear();
        self.pending_prediction = None;
    }

    /// The policy it runs.
    pub fn policy(&self) -> &dyn ClassPolicy {
        self.policy.as_ref()
    }

    /// Its counts so far.
    pub fn stats(&self) -> &RebalanceStats {
        &self.stats
    }

    /// Runs a round if one is due; returns the pages moved.
    pub fn poll(&mut self, engine: &Engine, clock: Clock) -> u64 {
        if !self.policy.has_rounds() {
            return 0;
        }
        let stats = self.read(engine, clock);
        let Some(baseline) = &self.baseline else {
            self.start_window(engine, &stats, clock);
            return 0;
        };
        let mut progress = Progress {
            seconds: clock.now.saturating_sub(baseline.now),
            ..Progress::default()
        };
        let mut deltas = Vec::with_capacity(stats.classes.len());
        for (i, c) in stats.classes.iter().enumerate() {
            let (hits, inserts, evicted) = baseline.classes.get(i).copied().unwrap_or_default();
            // `stats reset` zeroes the counters: then the window restarts from zero.
            let d_hits = c
                .counters
                .get_hits
                .checked_sub(hits)
                .unwrap_or(c.counters.get_hits);
            let d_inserts = c
                .counters
                .inserts
                .checked_sub(inserts)
                .unwrap_or(c.counters.inserts);
            let d_evicted = c
                .counters
                .evicted
                .checked_sub(evicted)
                .unwrap_or(c.counters.evicted);
            progress.accesses += d_hits + d_inserts;
            progress.misses += d_inserts;
            deltas.push((d_hits + d_inserts, d_inserts, d_evicted));
        }
        if !self.policy.due(&progress) {
            return 0;
        }
        let mut views: Vec<ClassView> = stats
            .classes
            .iter()
            .zip(&deltas)
            .map(|(c, &(requests, misses, evictions))| ClassView {
                snapshot: c.clone(),
                requests,
                misses,
                evictions,
                miss_ratio_by_pages: None,
                curve_sampling_rate: 1.0,
            })
            .collect();
        if self.policy.needs_curves() {
            if self.policy.wants_curves(&views) {
                let curves = self.window_curves(engine, &stats);
                for (view, curve) in views.iter_mut().zip(curves) {
                    if let Some((curve, rate)) = curve {
                        view.miss_ratio_by_pages = Some(curve);
                        view.curve_sampling_rate = rate;
                    }
                }
            } else {
                // Declined (Dynacache's entropy rule): the window still ends here.
                self.keep_histograms(engine, stats.classes.len());
            }
        }
        let round = self.policy.round(&RoundInput {
            classes: &views,
            page_limit: stats.page_limit,
            pages_in_use: stats.pages_in_use,
            page_size_bytes: stats.page_size_bytes,
        });
        self.stats.rounds += 1;
        if progress.accesses > 0 {
            if let Some(predicted) = self.pending_prediction {
                let observed = progress.misses as f64 / progress.accesses as f64;
                self.stats.predicted_miss_ratio = Some(predicted);
                self.stats.observed_miss_ratio = Some(observed);
                self.stats.predictions += 1;
                self.stats.prediction_error_sum += (predicted - observed).abs();
            }
        }
        self.pending_prediction = round.predicted_miss_ratio;
        let mut moved = 0;
        for m in &round.moves {
            for _ in 0..m.pages {
                match engine.move_page_in(self.pool, m.src, m.dst) {
                    Some(_) => {
                        moved += 1;
                        self.stats.pages_moved_by_rule[m.rule.index()] += 1;
                    }
                    None => self.stats.moves_failed += 1,
                }
            }
        }
        self.stats.pages_moved += moved;
        let after = if moved > 0 {
            self.read(engine, clock)
        } else {
            stats
        };
        self.baseline = Some(Baseline::of(&after, clock.now));
        moved
    }

    fn start_window(&mut self, engine: &Engine, stats: &EngineStats, clock: Clock) {
        self.baseline = Some(Baseline::of(stats, clock.now));
        if self.policy.needs_curves() {
            // `histograms` is empty here (no window yet, or a new policy): every class starts afresh.
            self.keep_histograms(engine, stats.classes.len());
        }
    }

    /// Keeps the pool's cumulative reuse-time histograms (`classes` of them) as the start of the next
    /// window, without computing curves.
    fn keep_histograms(&mut self, engine: &Engine, classes: usize) {
        self.histograms.resize(classes, None);
        for h in engine.reuse_histograms_in(Some(self.pool), None) {
            self.histograms[h.class.index()] = Some(h.histogram);
        }
    }

    /// Each class's curve over the window since the last round, at every page count up to the limit;
    /// the snapshots are kept for the next window.
    /// Each curve comes with its class's sampling rate.
    fn window_curves(
        &mut self,
        engine: &Engine,
        stats: &EngineStats,
    ) -> Vec<Option<(Vec<f64>, f64)>> {
        let mut curves = vec![None; stats.classes.len()];
        self.histograms.resize(stats.classes.len(), None);
        let pages = stats.page_limit.max(stats.pages_in_use);
        for h in engine.reuse_histograms_in(Some(self.pool), None) {
            let i = h.class.index();
            let window = match &self.histograms[i] {
                Some(before) => h.histogram.since(before),
                None => h.histogram.clone(),
            };
            let window = if self.policy.continues_tails() {
                window
            } else {
                window.as_observed()
            };
            self.histograms[i] = Some(h.histogram);
            if window.requests() == 0 {
                continue;
            }
            let per_page = stats.classes[i].chunks_per_page as u64;
            let sizes: Vec<u64> = (0..=pages as u64).map(|j| j * per_page).collect();
            let curve = window.mrc(
                ReuseTimeMethod::Aet,
                &MrcQuery::exactly(SizeUnit::Objects, &sizes),
            );
            if curve.points().is_empty() {
                continue;
            }
            // The query's sizes are positive: point k is page k + 1. Nothing fits in no pages.
            let by_pages: Vec<f64> = std::iter::once(1.0)
                .chain(sizes[1..].iter().map(|&s| curve.miss_ratio_at(s as f64)))
                .collect();
            curves[i] = Some((by_pages, h.sampling_rate.clamp(f64::MIN_POSITIVE, 1.0)));
        }
        curves
    }
}
