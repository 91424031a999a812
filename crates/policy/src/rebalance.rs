//! The rebalancer: the one driver of class policies, shared by the server's background thread and the
//! simulator. `poll` reads the engine's counters, asks the policy whether a round is due, and if so shows
//! it every class (counters since the last round and, for LAMA and Dynacache, the curve of that window
//! when the policy wants it) and carries out the page moves it returns, one `Engine::move_page` at a
//! time (each one page under one shard lock, so requests wait at most one page's relocation).
//!
//! Pacing: a policy whose `paces_moves` is true (lama's `pace=true`) has its curve moves to a class
//! deferred, and each poll makes those whose receiver is about to need a page (`pace`): the donor keeps
//! its items until the receiver would evict to make room. A round that moves pages supersedes what
//! the last left unmade; one that moves none leaves it to be made.
//!
//! Windows: the counters and curves a round sees cover the accesses since the previous round. Curves
//! come from the engine's cumulative reuse-time histograms, minus the snapshot kept at the last round
//! (`ReuseTimeHistogram::since`), evaluated at every page count up to the memory limit.
//!
//! Time comes in through the `Clock` argument; nothing here reads a wall clock or does I/O.

use mrcache_engine::{Clock, Engine, EngineStats};
use mrcache_profile::{MrcQuery, ReuseTimeHistogram, ReuseTimeMethod, SizeUnit};

use crate::class::{ClassMove, ClassPolicy, ClassView, MoveRule, Progress, RoundInput};

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
    /// The last round's paced moves not yet made (see `pace`).
    deferred: Vec<ClassMove>,
    /// Each class's inserts (by class index) at the last poll while moves waited, for the pace of
    /// its fill.
    inserts_at_poll: Vec<u64>,
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
            deferred: Vec::new(),
            inserts_at_poll: Vec::new(),
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
        self.deferred.clear();
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
        let paced = self.pace(engine, &stats);
        let Some(baseline) = &self.baseline else {
            self.start_window(engine, &stats, clock);
            return paced;
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
            return paced;
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
        // A round that moves pages supersedes what the last one left unmade (it planned from the
        // allocation as it is); one that moves none leaves it to be made.
        if !round.moves.is_empty() {
            self.deferred.clear();
        }
        let paces = self.policy.paces_moves();
        let waiting = self.deferred.len();
        for m in &round.moves {
            if paces && m.rule == MoveRule::Curve && m.dst.is_some() {
                self.deferred.push(*m);
                continue;
            }
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
        if self.deferred.len() > waiting {
            // Their receivers' fill is paced from this poll's inserts on.
            self.remember_inserts(&stats);
        }
        self.stats.pages_moved += moved;
        let after = if moved > 0 {
            self.read(engine, clock)
        } else {
            stats
        };
        self.baseline = Some(Baseline::of(&after, clock.now));
        moved + paced
    }

    /// Makes the deferred moves whose receiver is about to need the pages: enough that its free
    /// chunks cover as many items as it stored since the last poll, and at least one once it has no
    /// free chunk (its next store would evict), up to what the move has left. So a receiver gets its
    /// pages at the pace its misses fill them, a poll ahead, whether polls come every thousand
    /// requests (the simulator) or every second (the server), and the donor keeps its items until
    /// then. Returns the pages moved.
    fn pace(&mut self, engine: &Engine, stats: &EngineStats) -> u64 {
        if self.deferred.is_empty() {
            return 0;
        }
        let last = self.remember_inserts(stats);
        let mut moved = 0;
        for m in &mut self.deferred {
            // Classes are listed in class order (`window_curves` indexes them so too).
            let Some((i, dst)) = m
                .dst
                .map(|d| d.index())
                .and_then(|i| Some((i, stats.classes.get(i)?)))
            else {
                m.pages = 0;
                continue;
            };
            // Chunks it will want before the next poll, if it stores as many items as since the
            // last: the pages that cover them, and at least one once it has no free chunk.
            let stored = dst
                .counters
                .inserts
                .saturating_sub(last.get(i).copied().unwrap_or(dst.counters.inserts));
            let short = (stored as usize).saturating_sub(dst.free_chunks);
            let pages = short
                .div_ceil(dst.chunks_per_page.max(1))
                .max(usize::from(dst.free_chunks == 0))
                .min(m.pages);
            for _ in 0..pages {
                if engine.move_page_in(self.pool, m.src, m.dst).is_none() {
                    // The donor has no page left: the rest of this move cannot be made.
                    self.stats.moves_failed += 1;
                    m.pages = 0;
                    break;
                }
                moved += 1;
                m.pages -= 1;
                self.stats.pages_moved_by_rule[m.rule.index()] += 1;
            }
        }
        self.deferred.retain(|m| m.pages > 0);
        self.stats.pages_moved += moved;
        moved
    }

    /// Keeps each class's inserts in `stats` as the last poll's, for `pace`; returns the ones kept
    /// before. Kept only while moves wait: a round that defers some keeps them (see `poll`).
    fn remember_inserts(&mut self, stats: &EngineStats) -> Vec<u64> {
        let inserts = stats.classes.iter().map(|c| c.counters.inserts).collect();
        std::mem::replace(&mut self.inserts_at_poll, inserts)
    }

    /// Pages the last round asked for that wait for their receiver (see `pace`).
    pub fn pages_deferred(&self) -> usize {
        self.deferred.iter().map(|m| m.pages).sum()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::{ClassMove, Round};
    use mrcache_engine::{ClassId, EngineConfig, Key, StoreArgs, TenantId};

    /// One curve move of a page from `src` to `dst`, in its first round; paced or not.
    #[derive(Debug)]
    struct OneMove {
        src: ClassId,
        dst: ClassId,
        paces: bool,
        done: bool,
    }

    impl ClassPolicy for OneMove {
        fn name(&self) -> &'static str {
            "one-move"
        }
        fn describe(&self) -> String {
            "one-move".into()
        }
        fn due(&self, since: &Progress) -> bool {
            !self.done && since.accesses > 0
        }
        fn paces_moves(&self) -> bool {
            self.paces
        }
        fn round(&mut self, _: &RoundInput<'_>) -> Round {
            self.done = true;
            Round {
                moves: vec![ClassMove {
                    src: self.src,
                    dst: Some(self.dst),
                    pages: 1,
                    rule: MoveRule::Curve,
                }],
                ..Round::default()
            }
        }
    }

    const SMALL: usize = 100;
    const LARGE: usize = 2000;

    /// Stores `value_len` bytes under `key` (8 bytes, so every item of a length is of one class).
    fn store(engine: &Engine, key: &str, value_len: usize) {
        let value = vec![b'x'; value_len];
        engine.store(
            &StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &value),
            Clock::logical(100),
        );
    }

    fn pages(engine: &Engine, class: ClassId) -> usize {
        let stats = engine.stats(Clock::logical(100));
        stats
            .classes
            .iter()
            .find(|c| c.class == class)
            .unwrap()
            .total_pages
    }

    /// A 4-page cache whose small-item class holds 3 pages and whose large-item class 1, full; a
    /// rebalancer whose policy moves a page from the small class to the large one at its first round,
    /// which has just run.
    fn after_the_round(paces: bool) -> (Engine, Rebalancer, ClassId, ClassId) {
        let engine = Engine::new(EngineConfig {
            memory_limit_bytes: 4 << 20,
            profile_sample_rate: None,
            ..EngineConfig::default()
        })
        .unwrap();
        let class = |len| engine.geometry().class_for_item(8, 0, len).unwrap();
        let (small, large) = (class(SMALL), class(LARGE));
        store(&engine, "l0000000", LARGE);
        for i in 0..40_000 {
            store(&engine, &format!("s{i:07}"), SMALL);
        }
        assert_eq!((pages(&engine, small), pages(&engine, large)), (3, 1));
        let policy = OneMove {
            src: small,
            dst: large,
            paces,
            done: false,
        };
        let mut rebalancer = Rebalancer::new(Box::new(policy), &engine);
        rebalancer.poll(&engine, Clock::logical(100));
        store(&engine, "s9999999", SMALL);
        rebalancer.poll(&engine, Clock::logical(100));
        (engine, rebalancer, small, large)
    }

    #[test]
    fn a_paced_move_waits_until_its_receiver_needs_the_page() {
        let (engine, mut rebalancer, small, large) = after_the_round(true);
        assert_eq!(rebalancer.stats().rounds, 1);
        assert_eq!(pages(&engine, small), 3, "the donor keeps its page for now");
        assert_eq!(rebalancer.pages_deferred(), 1);
        // The receiver still has free chunks: polls make nothing.
        store(&engine, "l0000001", LARGE);
        rebalancer.poll(&engine, Clock::logical(100));
        assert_eq!(pages(&engine, small), 3);
        // Once it has filled its page, the next poll gives it the donor's.
        for i in 2..1_000 {
            store(&engine, &format!("l{i:07}"), LARGE);
        }
        assert_eq!(rebalancer.poll(&engine, Clock::logical(100)), 1);
        assert_eq!((pages(&engine, small), pages(&engine, large)), (2, 2));
        assert_eq!(rebalancer.pages_deferred(), 0);
        assert_eq!(rebalancer.stats().pages_moved_by(MoveRule::Curve), 1);
        assert_eq!(rebalancer.poll(&engine, Clock::logical(100)), 0);
    }

    #[test]
    fn an_unpaced_move_is_made_at_once() {
        let (engine, rebalancer, small, large) = after_the_round(false);
        assert_eq!((pages(&engine, small), pages(&engine, large)), (2, 2));
        assert_eq!(rebalancer.pages_deferred(), 0);
    }
}
