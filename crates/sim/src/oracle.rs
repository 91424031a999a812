//! The dynamic oracle: a clairvoyant slab policy that, at the start of every window of the run, moves
//! pages to the allocation with the fewest misses in that window, as the exact curves of a first pass
//! say. It is the dynamic counterpart of the fixed upper bound ([`crate::upper_bound`]): "share of the
//! potential" of a dynamic policy can be measured against what a dynamic policy could reach.
//!
//! Two passes:
//! 1. [`crate::UpperBoundProfiler`] (the same pass, the same exact LRU stacks, one per class) also
//!    cuts the run into windows of `window_requests` requests ([`WindowRecorder`]). A GET's depth is
//!    measured against the class's whole history, so a window is never cold: a key last used three
//!    windows ago is as deep as the keys used since. At each window's end the class's GET hits by
//!    page count are kept, cumulated, up to the deepest hit ([`WindowCurves`]).
//! 2. [`WindowCurves::schedule`] runs the optimizer's DP (`mrcache_policy::optimal_allocation`, the one
//!    the upper bound and LAMA use) window by window: the allocation of the memory's pages with the
//!    fewest misses in the window and the `horizon - 1` windows after it (default 4 windows in all),
//!    counting as misses the first accesses that only pages gained at the window's start would hold
//!    (a gained page starts empty). Every class used in the window keeps a page (memcached's
//!    first-page rule: the engine gives such a class one whatever the policy); no class gets more than
//!    holds every item it has seen. The simulator replays the run through the real engine with
//!    [`OraclePolicy`]: at each window's start the classes are capped at that window's allocation and
//!    the rebalancer moves the pages (`Engine::move_page_in`, the path of every policy), from the
//!    classes above it to those below.
//!
//! Why the warm-up and the horizon: chosen window by window from the curves alone, the allocation
//! follows each window's sampling of a stationary workload, moves pages back and forth, and loses
//! their items each time; on a Zipf workload at 40 MiB it missed 2% more than the fixed bound
//! (0.2933 against 0.2867, `horizon=1`), and 0.2869 with the default.
//!
//! What it is, and is not: a realisable clairvoyant policy, an achievable reference, not a proof of
//! optimality. A moved page loses its items (the next window starts its new pages cold), each class's
//! LRU in the engine is not exactly the stack model (chunks, first pages), and a policy that moves
//! inside a window can do better. [`OracleSchedule::predicted_misses`], the sum of every window's best
//! misses by the curves, is the model's figure (no warm-up cost), printed beside the replay's.
//!
//! Memory: the pass's exact stacks (`O(distinct keys)`, as for the upper bound) and a map of each
//! key's last request (16 bytes a key, plus the map's slack) to tell a window's first accesses. The
//! window being recorded holds two `u64`s per page count reached by a GET per class (at most the
//! pages of the distinct data so far); each closed window keeps the same two cumulative tables up to
//! each class's deepest hit: at most `2 * (distinct bytes / page size + classes)` `u64`s a window
//! (about 16 KB a window for 1 GiB of distinct data in 1 MiB pages; [`WindowCurves::stored_counts`]).
//! A schedule keeps one allocation (a `usize` per class) per window.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use mrcache_policy::class::{ClassMove, ClassPolicy, MoveRule, Progress, Round, RoundInput};
use mrcache_policy::plan_moves;
use serde::Serialize;

use crate::upper_bound::fewest_misses;

/// One class in the window being recorded.
#[derive(Debug, Clone, Default)]
struct OpenClass {
    gets: u64,
    /// GETs and stores: a class used in the window keeps a page.
    accesses: u64,
    /// `needs[k]`: GETs whose depth needs exactly `k` pages to hit (`ceil(depth / chunks per page)`).
    needs: Vec<u64>,
    /// The same for the GETs that are their key's first access in the window.
    first_needs: Vec<u64>,
}

/// `counts` cumulated: `out[k]` is the sum of `counts[..=k]`.
fn cumulative(counts: &[u64]) -> Vec<u64> {
    let mut total = 0;
    counts
        .iter()
        .map(|&n| {
            total += n;
            total
        })
        .collect()
}

/// `hits[k]`, constant beyond the table's end (and 0 for an empty one).
fn at(hits: &[u64], k: usize) -> u64 {
    match hits.last() {
        None => 0,
        Some(&all) => hits.get(k).copied().unwrap_or(all),
    }
}

/// One class over one closed window.
#[derive(Debug, Clone, PartialEq)]
struct ClassWindow {
    gets: u64,
    used: bool,
    /// The most pages the class can use: those that hold every distinct item it has seen so far.
    cap_pages: usize,
    /// `hits[k]`: GETs that hit with `k` pages, up to the deepest hit (constant beyond).
    hits: Vec<u64>,
    /// `first_hits[k]`: those of them that are their key's first access in the window.
    first_hits: Vec<u64>,
}

impl ClassWindow {
    fn misses_with(&self, pages: usize) -> u64 {
        self.gets - at(&self.hits, pages)
    }

    /// The misses `pages` pages add to [`misses_with`](Self::misses_with) when the class held `before`
    /// at the window's start: a page it gains starts empty, so a key's first access in the window that
    /// only the new pages would hold misses (it hits from its second access on, as the curve says).
    fn warm_up(&self, before: usize, pages: usize) -> u64 {
        if pages > before {
            at(&self.first_hits, pages) - at(&self.first_hits, before)
        } else {
            0
        }
    }
}

/// One closed window.
#[derive(Debug, Clone, PartialEq)]
struct ClosedWindow {
    classes: Vec<ClassWindow>,
    /// GETs of items larger than `-I`: misses at every allocation.
    too_large_gets: u64,
}

/// Cuts the profiling pass into windows (fed by [`crate::UpperBoundProfiler`]).
#[derive(Debug, Clone)]
pub(crate) struct WindowRecorder {
    window_requests: u64,
    chunks_per_page: Vec<usize>,
    open: Vec<OpenClass>,
    too_large_gets: u64,
    requests_in_window: u64,
    closed: Vec<ClosedWindow>,
}

impl WindowRecorder {
    /// Windows of `window_requests` requests over classes of `chunks_per_page` chunks a page.
    pub(crate) fn new(window_requests: u64, chunks_per_page: Vec<usize>) -> WindowRecorder {
        WindowRecorder {
            window_requests: window_requests.max(1),
            open: vec![OpenClass::default(); chunks_per_page.len()],
            chunks_per_page,
            too_large_gets: 0,
            requests_in_window: 0,
            closed: Vec::new(),
        }
    }

    pub(crate) fn window_requests(&self) -> u64 {
        self.window_requests
    }

    /// A GET of class `class` found `depth` keys deep (`None`: a first access), its key last accessed
    /// at request index `previous`.
    pub(crate) fn get(&mut self, class: usize, depth: Option<u64>, previous: Option<u64>) {
        let window_start = self.closed.len() as u64 * self.window_requests;
        let c = &mut self.open[class];
        c.gets += 1;
        if let Some(d) = depth {
            let k = (d as usize).div_ceil(self.chunks_per_page[class].max(1));
            if k >= c.needs.len() {
                c.needs.resize(k + 1, 0);
            }
            c.needs[k] += 1;
            if previous.is_none_or(|r| r < window_start) {
                if k >= c.first_needs.len() {
                    c.first_needs.resize(k + 1, 0);
                }
                c.first_needs[k] += 1;
            }
        }
    }

    /// Any access (GET or store) of class `class`.
    pub(crate) fn access(&mut self, class: usize) {
        self.open[class].accesses += 1;
    }

    /// A GET of an item too large for any class.
    pub(crate) fn too_large_get(&mut self) {
        self.too_large_gets += 1;
    }

    /// One request recorded; closes the window at its end. `distinct(i)`: class `i`'s distinct items so
    /// far.
    pub(crate) fn end_request(&mut self, distinct: impl Fn(usize) -> usize) {
        self.requests_in_window += 1;
        if self.requests_in_window == self.window_requests {
            self.close(distinct);
        }
    }

    fn close(&mut self, distinct: impl Fn(usize) -> usize) {
        let classes = self
            .open
            .iter_mut()
            .enumerate()
            .map(|(i, c)| {
                let closed = ClassWindow {
                    gets: c.gets,
                    used: c.accesses > 0,
                    cap_pages: distinct(i).div_ceil(self.chunks_per_page[i].max(1)),
                    hits: cumulative(&c.needs),
                    first_hits: cumulative(&c.first_needs),
                };
                c.gets = 0;
                c.accesses = 0;
                c.needs.clear();
                c.first_needs.clear();
                closed
            })
            .collect();
        self.closed.push(ClosedWindow {
            classes,
            too_large_gets: std::mem::take(&mut self.too_large_gets),
        });
        self.requests_in_window = 0;
    }

    /// Closes a partial last window and returns every window's curves.
    pub(crate) fn finish(mut self, distinct: impl Fn(usize) -> usize) -> WindowCurves {
        if self.requests_in_window > 0 {
            self.close(distinct);
        }
        WindowCurves {
            window_requests: self.window_requests,
            windows: self.closed,
        }
    }
}

/// Every window's exact per-class hits by page count, from the profiling pass.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCurves {
    window_requests: u64,
    windows: Vec<ClosedWindow>,
}

impl WindowCurves {
    /// Requests per window.
    pub fn window_requests(&self) -> u64 {
        self.window_requests
    }

    /// Windows recorded (the last may be partial).
    pub fn windows(&self) -> usize {
        self.windows.len()
    }

    /// `u64`s the curves hold: their memory is about 8 bytes each.
    pub fn stored_counts(&self) -> usize {
        self.windows
            .iter()
            .map(|w| {
                w.classes
                    .iter()
                    .map(|c| c.hits.len() + c.first_hits.len())
                    .sum::<usize>()
            })
            .sum()
    }

    /// The oracle's plan for `total_pages` pages: every window's allocation, chosen in order by the
    /// optimizer's DP, each class's cost with `k` pages being its misses in the window and the
    /// `horizon - 1` windows after it, plus, where `k` exceeds what the previous window's allocation
    /// gave it, the warm-up of its new pages in this window ([`ClassWindow::warm_up`]): a page
    /// moves only where the gain outweighs the move. Every class used in the window keeps a page;
    /// where more classes have been used so far than `total_pages`, the window places one page per
    /// class used so far (each got its first page beyond the limit, as the engine's first-page rule
    /// gives it and memcached's default holds it), and may give an idle class's page to a busy one. No
    /// class gets more than holds everything it has seen.
    ///
    /// Beside it, [`OracleSchedule::predicted_misses`] sums each window's best misses by its curves
    /// alone (the same DP, one window, no warm-up): the model's bound. Never fails.
    pub fn schedule(&self, total_pages: usize, horizon: usize) -> OracleSchedule {
        self.plan(total_pages, Planning::Ahead(horizon))
    }

    /// The online counterpart of [`schedule`](Self::schedule): each window's allocation is chosen from
    /// the exact curves of the `past` windows before it (fewer at the start), none of the future: what a
    /// policy with perfect, unsampled curves of the traffic it has served, no guards and no limit on
    /// moves, could do. A class's cost with `k` pages is its misses over those windows, scaled to
    /// `horizon` windows, plus the warm-up of gained pages as the last of them would see it; the
    /// classes used in the last window keep a page. The first window has no past, and a window whose
    /// past fits in less than the memory has nothing to choose: both are demand-filled (an empty plan,
    /// no caps), as memcached fills. [`OracleSchedule::predicted_misses`] is still
    /// each window's best by its own curves.
    pub fn schedule_from_past(
        &self,
        total_pages: usize,
        horizon: usize,
        past: usize,
    ) -> OracleSchedule {
        self.plan(total_pages, Planning::Past { horizon, past })
    }

    fn plan(&self, total_pages: usize, planning: Planning) -> OracleSchedule {
        let mut plans: Vec<Vec<usize>> = Vec::with_capacity(self.windows.len());
        let (mut predicted_misses, mut planned_misses, mut gets) = (0, 0, 0);
        let mut seen = vec![false; self.windows.first().map_or(0, |w| w.classes.len())];
        // What the previous window held: nothing at the start, then the last plan. After a
        // demand-filled window it is not known, and no page counts a warm-up.
        let mut before: Option<Vec<usize>> = Some(vec![0; seen.len()]);
        for (n, w) in self.windows.iter().enumerate() {
            // The classes used before this window: all an online choice knows of.
            let seen_before = seen.iter().filter(|&&s| s).count();
            for (s, c) in seen.iter_mut().zip(&w.classes) {
                *s |= c.used;
            }
            // Every class used so far got a first page, beyond `-m` where need be (the engine's
            // first-page allowance); memcached holds them all, and a moving policy may place them.
            let total = total_pages.max(seen.iter().filter(|&&s| s).count());
            let warm_up = |i: usize, c: &ClassWindow, k: usize| {
                before
                    .as_ref()
                    .map_or(0, |b: &Vec<usize>| c.warm_up(b[i], k))
            };
            let best = allocate(w, total, |_, c, k| c.misses_with(k) as f64);
            let pages = match planning {
                Planning::Ahead(horizon) => {
                    let later = &self.windows[n + 1..(n + horizon.max(1)).min(self.windows.len())];
                    allocate(w, total, |i, c, k| {
                        let later: u64 = later.iter().map(|a| a.classes[i].misses_with(k)).sum();
                        (c.misses_with(k) + warm_up(i, c, k) + later) as f64
                    })
                }
                Planning::Past { .. } if n == 0 => Vec::new(),
                Planning::Past { horizon, past } => {
                    let known = &self.windows[n.saturating_sub(past.max(1))..n];
                    let total = total_pages.max(seen_before);
                    let scale = horizon.max(1) as f64 / known.len() as f64;
                    let pages = allocate(&known[known.len() - 1], total, |i, c, k| {
                        let misses: u64 = known.iter().map(|a| a.classes[i].misses_with(k)).sum();
                        scale * misses as f64 + warm_up(i, c, k) as f64
                    });
                    // Pages left over: every class got all that its data so far fills, and what comes
                    // next is new data, which demand filling places (caps at the past's data would
                    // refuse it the memory that is free).
                    if pages.iter().sum::<usize>() < total {
                        Vec::new()
                    } else {
                        pages
                    }
                }
            };
            let sum = |f: &dyn Fn(usize, &ClassWindow) -> u64| -> u64 {
                w.too_large_gets
                    + w.classes
                        .iter()
                        .enumerate()
                        .map(|(i, c)| f(i, c))
                        .sum::<u64>()
            };
            predicted_misses += sum(&|i, c| c.misses_with(best[i]));
            planned_misses += if pages.is_empty() {
                // Demand-filled: the model has no allocation for it; count the best (a lower bound).
                sum(&|i, c| c.misses_with(best[i]))
            } else {
                sum(&|i, c| c.misses_with(pages[i]) + warm_up(i, c, pages[i]))
            };
            gets += w.too_large_gets + w.classes.iter().map(|c| c.gets).sum::<u64>();
            before = (!pages.is_empty()).then(|| pages.clone());
            plans.push(pages);
        }
        OracleSchedule {
            window_requests: self.window_requests,
            total_pages,
            plans,
            predicted_misses,
            planned_misses,
            gets,
        }
    }
}

/// The allocation of `total` pages with the least total `cost(i, class, k)` of class `i` at `k` pages,
/// over `window`'s classes: a page for every class the window used, and no class more than holds every
/// item it has seen (nor more than `total`).
fn allocate(
    window: &ClosedWindow,
    total: usize,
    cost: impl Fn(usize, &ClassWindow, usize) -> f64,
) -> Vec<usize> {
    fewest_misses(
        window
            .classes
            .iter()
            .enumerate()
            .map(|(i, c)| {
                // A class used in the window has seen at least one item: its cap is at least 1.
                let cap = c.cap_pages.min(total).max(usize::from(c.used));
                (0..=cap).map(|k| cost(i, c, k)).collect()
            })
            .collect(),
        window.classes.iter().map(|c| usize::from(c.used)).collect(),
        total,
    )
}

/// How [`WindowCurves`] chooses each window's allocation.
#[derive(Debug, Clone, Copy)]
enum Planning {
    /// From the window's own curves and those of the `horizon - 1` after it (clairvoyant).
    Ahead(usize),
    /// From the curves of the `past` windows before it, scaled to `horizon` windows (online).
    Past { horizon: usize, past: usize },
}

/// The dynamic oracle's plan for one memory size: an allocation per window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OracleSchedule {
    /// Requests per window.
    pub window_requests: u64,
    /// The memory's pages (`-m`); a window may hold more where more classes are in use than pages.
    pub total_pages: usize,
    /// Pages per class index, one allocation per window, in order; an empty one is a demand-filled
    /// window (no caps: the online oracle's first window, which has no past to plan from).
    pub plans: Vec<Vec<usize>>,
    /// The model's misses: the sum of every window's misses at its best allocation, by the exact
    /// curves (no warm-up cost for moved pages).
    pub predicted_misses: u64,
    /// The misses the plans themselves are predicted to give, warm-up of gained pages included (a
    /// demand-filled window counts its best allocation's).
    pub planned_misses: u64,
    /// GETs of the run.
    pub gets: u64,
}

impl OracleSchedule {
    /// The model's GET miss ratio (see [`predicted_misses`](Self::predicted_misses)).
    pub fn predicted_miss_ratio(&self) -> f64 {
        crate::report::ratio(self.predicted_misses, self.gets)
    }

    /// The caps of window `k`: its allocation, or `None` for a demand-filled window (an empty plan)
    /// and past the last window.
    pub fn caps(&self, k: usize) -> Option<&[usize]> {
        self.plans
            .get(k)
            .filter(|p| !p.is_empty())
            .map(Vec::as_slice)
    }

    /// The most pages any window's allocation holds: the engine's budget for the replay (demand-filled
    /// windows take the memory's pages).
    pub fn pages_held(&self) -> usize {
        self.plans
            .iter()
            .map(|p| p.iter().sum::<usize>())
            .max()
            .unwrap_or(0)
            .max(self.total_pages)
    }
}

/// Which oracle window the replay is in, set by the simulator at each window's start and read by the
/// [`OraclePolicy`] it drives.
#[derive(Debug, Clone, Default)]
pub(crate) struct WindowCursor(Arc<AtomicUsize>);

impl WindowCursor {
    pub(crate) fn set(&self, window: usize) {
        self.0.store(window, Ordering::Relaxed);
    }

    fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// The clairvoyant class policy: a round is due when the replay enters a window; the round moves pages
/// from the classes above that window's allocation to those below it (what is left over goes back to
/// the budget, where capped demand filling finds it). The caps themselves are the simulator's to set.
pub(crate) struct OraclePolicy {
    schedule: Arc<OracleSchedule>,
    cursor: WindowCursor,
    applied: usize,
}

impl OraclePolicy {
    pub(crate) fn new(schedule: Arc<OracleSchedule>, cursor: WindowCursor) -> OraclePolicy {
        OraclePolicy {
            schedule,
            cursor,
            applied: 0,
        }
    }
}

impl ClassPolicy for OraclePolicy {
    fn name(&self) -> &'static str {
        crate::policy::ORACLE
    }

    fn describe(&self) -> String {
        format!(
            "{}:window={}",
            crate::policy::ORACLE,
            self.schedule.window_requests
        )
    }

    fn due(&self, _since: &Progress) -> bool {
        self.cursor.get() != self.applied
    }

    fn round(&mut self, input: &RoundInput<'_>) -> Round {
        self.applied = self.cursor.get();
        // Past the last window, or a demand-filled one: no caps, nothing to move.
        let Some(target) = self.schedule.caps(self.applied) else {
            return Round::none();
        };
        let current: Vec<usize> = input.classes.iter().map(|c| c.pages()).collect();
        let mut target = target.to_vec();
        target.resize(current.len(), 0);
        let class = |i: usize| input.classes[i].snapshot.class;
        let mut surplus: Vec<usize> = current
            .iter()
            .zip(&target)
            .map(|(c, t)| c.saturating_sub(*t))
            .collect();
        let mut moves: Vec<ClassMove> = plan_moves(&current, &target, usize::MAX)
            .into_iter()
            .map(|m| {
                surplus[m.src] -= m.pages;
                ClassMove {
                    src: class(m.src),
                    dst: Some(class(m.dst)),
                    pages: m.pages,
                    rule: MoveRule::Curve,
                }
            })
            .collect();
        moves.extend(
            surplus
                .iter()
                .enumerate()
                .filter(|(_, &s)| s > 0)
                .map(|(i, &pages)| ClassMove {
                    src: class(i),
                    dst: None,
                    pages,
                    rule: MoveRule::Curve,
                }),
        );
        Round {
            moves,
            predicted_miss_ratio: None,
        }
    }
}

#[cfg(test)]
mod tests;
