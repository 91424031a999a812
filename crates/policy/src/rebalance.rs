//! The rebalancer: the one driver of class policies, shared by the server's background thread and the
//! simulator. `poll` reads the engine's counters, asks the policy whether a round is due, and if so shows
//! it every class (counters since the last round and, for LAMA and Dynacache, the curve of that window
//! when the policy wants it) and carries out the page moves it returns, one `Engine::move_page` at a
//! time (each one page under one shard lock, so requests wait at most one page's relocation).
//!
//! Pacing: a policy whose `paces_moves` is true (lama's `pace=true`) has its curve moves to a class
//! granted (`Engine::update_page_grants`), not made: the receiver takes each page at the store that
//! would otherwise evict one of its items, and the donor keeps its items until then. Grants stand
//! until taken: the next round sees the allocation they will leave (its classes' pages counted as if
//! they were made), and its moves are fitted to them (`settle`), so a plan is changed only by a plan
//! that changes it. Pages the grants move count as curve moves, at the poll after they are made.
//!
//! Windows: the counters and curves a round sees cover the accesses since the previous round. Curves
//! come from the engine's cumulative reuse-time histograms, minus the snapshot kept at the last round
//! (`ReuseTimeHistogram::since`), evaluated at every page count up to the memory limit.
//!
//! Time comes in through the `Clock` argument; nothing here reads a wall clock or does I/O.

use mrcache_engine::{Clock, Engine, EngineStats, PageGrant};
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
    /// The engine's count of pages its pool's grants moved, at the last poll.
    grants_made: u64,
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
            grants_made: engine.page_grants_made(pool),
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
        engine.update_page_grants(self.pool, Vec::clear);
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
        let paced = self.count_grants_made(engine);
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
        // The policy plans from the allocation its grants will leave: they are decided. Pages a
        // donor no longer holds (taken since as first pages) can never be taken: dropped first.
        let grants = engine
            .update_page_grants(self.pool, |g| {
                trim(g, &stats);
                g.clone()
            })
            .unwrap_or_default();
        for g in &grants {
            for (class, by) in [(g.src, -(g.pages as isize)), (g.dst, g.pages as isize)] {
                if let Some(v) = views.get_mut(class.index()) {
                    v.snapshot.total_pages = v.snapshot.total_pages.saturating_add_signed(by);
                }
            }
        }
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
        let paces = self.policy.paces_moves();
        let now = engine
            .update_page_grants(self.pool, |grants| {
                round
                    .moves
                    .iter()
                    .flat_map(|&m| settle(grants, m, paces))
                    .collect()
            })
            .unwrap_or_else(|| round.moves.clone());
        for m in now {
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
        moved + paced
    }

    /// Counts the pages the pool's grants moved since the last poll as curve moves; returns them.
    fn count_grants_made(&mut self, engine: &Engine) -> u64 {
        let made = engine.page_grants_made(self.pool);
        let new = made.saturating_sub(self.grants_made);
        self.grants_made = made;
        self.stats.pages_moved += new;
        self.stats.pages_moved_by_rule[MoveRule::Curve.index()] += new;
        new
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

/// Fits a round's move `m` to the pool's standing `grants`, since the round planned as if they were
/// made: pages it takes from a class still granted them come from that grant's donor instead (a move
/// back to the donor cancels them; a move elsewhere is granted from the donor, or made from it now
/// when it frees the page); the rest is granted if `paces` and it is a curve move to a class, and
/// returned to be made now otherwise.
fn settle(grants: &mut Vec<PageGrant>, mut m: ClassMove, paces: bool) -> Vec<ClassMove> {
    let mut now = Vec::new();
    let mut redirected = Vec::new();
    for g in grants.iter_mut().filter(|g| g.dst == m.src) {
        if m.pages == 0 {
            break;
        }
        let pages = g.pages.min(m.pages);
        g.pages -= pages;
        m.pages -= pages;
        match m.dst {
            Some(dst) => redirected.push(PageGrant {
                src: g.src,
                dst,
                pages,
            }),
            None => now.push(ClassMove {
                src: g.src,
                pages,
                ..m
            }),
        }
    }
    // A grant back to its own donor is dropped as malformed.
    for r in redirected {
        add_grant(grants, r);
    }
    if m.pages > 0 {
        match m.dst {
            Some(dst) if paces && m.rule == MoveRule::Curve => add_grant(
                grants,
                PageGrant {
                    src: m.src,
                    dst,
                    pages: m.pages,
                },
            ),
            _ => now.push(m),
        }
    }
    now
}

/// Adds `g` to the grant between the same classes, if there is one (so there is at most one per pair,
/// and never more entries than pages granted).
fn add_grant(grants: &mut Vec<PageGrant>, g: PageGrant) {
    match grants.iter_mut().find(|o| o.src == g.src && o.dst == g.dst) {
        Some(o) => o.pages += g.pages,
        None => grants.push(g),
    }
}

/// Cuts `grants` to the pages their donors hold in `stats` (each donor's pages go to its grants in
/// order).
fn trim(grants: &mut [PageGrant], stats: &EngineStats) {
    let mut held: Vec<usize> = stats.classes.iter().map(|c| c.total_pages).collect();
    for g in grants {
        let Some(h) = held.get_mut(g.src.index()) else {
            g.pages = 0;
            continue;
        };
        g.pages = g.pages.min(*h);
        *h -= g.pages;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::{ClassMove, Round};
    use mrcache_engine::{ClassId, EngineConfig, Key, StoreArgs, TenantId};
    use std::sync::{Arc, Mutex};

    /// A policy that plays a script: one list of moves per round, then no more rounds; paced or
    /// not. It keeps the pages each round saw per class (by class index) in `seen`.
    #[derive(Debug)]
    struct Script {
        rounds: Vec<Vec<ClassMove>>,
        paces: bool,
        seen: Arc<Mutex<Vec<Vec<usize>>>>,
    }

    impl ClassPolicy for Script {
        fn name(&self) -> &'static str {
            "script"
        }
        fn describe(&self) -> String {
            "script".into()
        }
        fn due(&self, since: &Progress) -> bool {
            !self.rounds.is_empty() && since.accesses > 0
        }
        fn paces_moves(&self) -> bool {
            self.paces
        }
        fn round(&mut self, input: &RoundInput<'_>) -> Round {
            let pages = input.classes.iter().map(ClassView::pages).collect();
            self.seen.lock().unwrap().push(pages);
            Round {
                moves: self.rounds.remove(0),
                ..Round::default()
            }
        }
    }

    /// A curve move of one page from `src` to `dst`.
    fn curve_move(src: ClassId, dst: ClassId) -> ClassMove {
        ClassMove {
            src,
            dst: Some(dst),
            pages: 1,
            rule: MoveRule::Curve,
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

    /// A 4-page cache whose small-item class holds 3 pages and whose large-item class 1, full, and
    /// its two classes.
    fn full_cache() -> (Engine, ClassId, ClassId) {
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
        (engine, small, large)
    }

    /// Runs `rounds` on `engine`, one round after each small store; returns the rebalancer and the
    /// pages each round saw.
    fn play(
        engine: &Engine,
        rounds: Vec<Vec<ClassMove>>,
        paces: bool,
    ) -> (Rebalancer, Vec<Vec<usize>>) {
        play_with(engine, rounds, paces, |_| {})
    }

    /// `play`, calling `before_round(i)` before the store that precedes round `i`.
    fn play_with(
        engine: &Engine,
        rounds: Vec<Vec<ClassMove>>,
        paces: bool,
        mut before_round: impl FnMut(usize),
    ) -> (Rebalancer, Vec<Vec<usize>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let count = rounds.len();
        let policy = Script {
            rounds,
            paces,
            seen: seen.clone(),
        };
        let mut rebalancer = Rebalancer::new(Box::new(policy), engine);
        rebalancer.poll(engine, Clock::logical(100));
        for i in 0..count {
            before_round(i);
            store(engine, &format!("t{i:07}"), SMALL);
            rebalancer.poll(engine, Clock::logical(100));
        }
        let seen = seen.lock().unwrap().clone();
        (rebalancer, seen)
    }

    /// `full_cache` with a rebalancer whose policy moves a page from the small class to the large
    /// one at its first round, which has just run.
    fn after_the_round(paces: bool) -> (Engine, Rebalancer, ClassId, ClassId) {
        let (engine, small, large) = full_cache();
        let (rebalancer, _) = play(&engine, vec![vec![curve_move(small, large)]], paces);
        (engine, rebalancer, small, large)
    }

    /// Pages granted in the default pool.
    fn granted(engine: &Engine) -> usize {
        engine
            .update_page_grants(0, |g| g.iter().map(|g| g.pages).sum())
            .unwrap()
    }

    fn evicted(engine: &Engine, class: ClassId) -> u64 {
        let stats = engine.stats(Clock::logical(100));
        let c = stats.classes.iter().find(|c| c.class == class).unwrap();
        c.counters.evicted
    }

    #[test]
    fn a_paced_move_waits_until_its_receiver_needs_the_page() {
        let (engine, mut rebalancer, small, large) = after_the_round(true);
        assert_eq!(rebalancer.stats().rounds, 1);
        assert_eq!(pages(&engine, small), 3, "the donor keeps its page for now");
        assert_eq!(granted(&engine), 1);
        // The receiver still has free chunks: nothing moves.
        store(&engine, "l0000001", LARGE);
        rebalancer.poll(&engine, Clock::logical(100));
        assert_eq!(pages(&engine, small), 3);
        // The store that fills its page and would evict takes the donor's page instead.
        let mut i = 2;
        while pages(&engine, large) < 2 && i < 1_000 {
            store(&engine, &format!("l{i:07}"), LARGE);
            i += 1;
        }
        assert_eq!((pages(&engine, small), pages(&engine, large)), (2, 2));
        assert_eq!(evicted(&engine, large), 0, "it never evicted");
        assert_eq!(granted(&engine), 0);
        // The next poll counts the page as a curve move.
        assert_eq!(rebalancer.poll(&engine, Clock::logical(100)), 1);
        assert_eq!(rebalancer.stats().pages_moved_by(MoveRule::Curve), 1);
        assert_eq!(rebalancer.poll(&engine, Clock::logical(100)), 0);
    }

    #[test]
    fn an_unpaced_move_is_made_at_once() {
        let (engine, rebalancer, small, large) = after_the_round(false);
        assert_eq!((pages(&engine, small), pages(&engine, large)), (2, 2));
        assert_eq!(granted(&engine), 0);
        assert_eq!(rebalancer.stats().pages_moved_by(MoveRule::Curve), 1);
    }

    #[test]
    fn the_next_round_sees_the_allocation_waiting_moves_will_leave() {
        let (engine, small, large) = full_cache();
        let rounds = vec![vec![curve_move(small, large)], Vec::new()];
        let (_, seen) = play(&engine, rounds, true);
        let at = |round: &Vec<usize>| (round[small.index()], round[large.index()]);
        assert_eq!(seen.iter().map(at).collect::<Vec<_>>(), [(3, 1), (2, 2)]);
        assert_eq!((pages(&engine, small), pages(&engine, large)), (3, 1));
        assert_eq!(granted(&engine), 1, "a round with no moves keeps the grant");
    }

    #[test]
    fn a_move_back_cancels_a_waiting_move() {
        let (engine, small, large) = full_cache();
        let rounds = vec![
            vec![curve_move(small, large)],
            vec![curve_move(large, small)],
        ];
        let (rebalancer, _) = play(&engine, rounds, true);
        assert_eq!((pages(&engine, small), pages(&engine, large)), (3, 1));
        assert_eq!(granted(&engine), 0);
        assert_eq!(
            rebalancer.stats().pages_moved + rebalancer.stats().moves_failed,
            0
        );
    }

    #[test]
    fn an_immediate_move_from_a_waiting_receiver_takes_the_donors_page() {
        let (engine, small, large) = full_cache();
        let free = ClassMove {
            src: large,
            dst: None,
            pages: 1,
            rule: MoveRule::Idle,
        };
        let rounds = vec![vec![curve_move(small, large)], vec![free]];
        let (rebalancer, seen) = play(&engine, rounds, true);
        assert_eq!(seen[1][large.index()], 2);
        // The large class never got the page it was to give back: the small class gives it.
        assert_eq!((pages(&engine, small), pages(&engine, large)), (2, 1));
        assert_eq!(granted(&engine), 0);
        assert_eq!(rebalancer.stats().pages_moved_by(MoveRule::Idle), 1);
    }

    #[test]
    fn a_grant_is_cut_to_the_pages_its_donor_holds() {
        let (engine, small, large) = full_cache();
        let grant = ClassMove {
            pages: 3,
            ..curve_move(small, large)
        };
        // After the first round the donor loses a page some other way: the next round sees the
        // grant cut to two.
        let other = engine.geometry().class_for_item(8, 0, 500).unwrap();
        let rounds = vec![vec![grant], Vec::new()];
        let (_, seen) = play_with(&engine, rounds, true, |i| {
            if i == 1 {
                assert_eq!(granted(&engine), 3);
                engine.move_page(small, Some(other)).unwrap();
            }
        });
        assert_eq!(granted(&engine), 2);
        let last = &seen[1];
        assert_eq!((last[small.index()], last[large.index()]), (0, 3));
    }
}
