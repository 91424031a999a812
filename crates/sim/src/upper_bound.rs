//! One profiling pass over a workload, and what it answers at any memory size: the per-class exact
//! miss-ratio curves, the theoretical upper bound's allocation (the first pass of LAMA §5.6), and the
//! prediction of memcached's default allocation (LAMA §3.5, eq. 6).
//!
//! The pass attributes every access to the slab class the engine would store it in (memcached's item
//! accounting of the simulator's key and value) and keeps, per class:
//! - an exact LRU stack ([`ExactLru`]): the depth of every GET, so the class's GET miss ratio with `k`
//!   pages is exact at every page boundary. SETs move their key to the top of the stack without counting
//!   as requests, as they do in the engine; a GET that misses and the SET that refills it are one access.
//! - an unsampled reuse-time profile of the same accesses, whose footprint `fp(w)` says how many items
//!   the class stores in its first `w` accesses while nothing is evicted (eq. 1);
//! - GET depths again for the requests from `steady_state_from` on, so that a prediction can be compared
//!   with the simulator's steady state as well as with its whole run.
//!
//! Why the whole-run curve predicts the whole run: a class whose allocation ends at `S` items never
//! evicts before it holds `S` items, so from the first request on it behaves as an LRU cache of `S`
//! items, whose misses are exactly the accesses deeper than `S` (first accesses included). The only
//! approximations left are the allocation itself (eq. 6 predicts it from average footprints) and pages
//! that change class after the fill (the first-page rule).
//!
//! With [`UpperBoundProfiler::with_windows`] the same pass also cuts the run into windows for the
//! dynamic oracle ([`crate::oracle`]): each GET's depth, measured against the class's whole history,
//! is also counted in its window.
//!
//! Deletes are not modelled (the stack cannot forget a key); the synthetic workloads issue none.
//! Memory is `O(distinct keys)`: one stack entry and one reuse-time entry per key.

use mrcache_engine::{ClassId, Engine, EngineConfig, Geometry, Key, TenantId};
use mrcache_policy::{
    optimal_allocation, overall_miss_ratio, predict_default, ClassDemand, Partition, Problem,
};
use mrcache_profile::{ExactLru, ReuseTimeMethod, ReuseTimeProfiler, SamplingConfig};
use mrcache_workload::synth::Access;
use mrcache_workload::Op;
use serde::Serialize;

use crate::oracle::{WindowCurves, WindowRecorder};
use crate::{key_text, SimConfig, SimError, SlabPolicy};

/// Exact LRU depths of GETs: `gets_at_depth[d]` GETs found `d` distinct keys deep (`d >= 1`).
#[derive(Debug, Clone, Default)]
struct DepthCounts {
    gets_at_depth: Vec<u64>,
    gets: u64,
}

impl DepthCounts {
    fn record(&mut self, depth: Option<u64>) {
        self.gets += 1;
        if let Some(d) = depth {
            let d = d as usize;
            if d >= self.gets_at_depth.len() {
                self.gets_at_depth.resize(d + 1, 0);
            }
            self.gets_at_depth[d] += 1;
        }
    }

    /// `hits_within[s]`: GETs that hit an LRU cache of `s` items.
    fn hits_within(&self) -> Vec<u64> {
        let mut total = 0;
        self.gets_at_depth
            .iter()
            .map(|&n| {
                total += n;
                total
            })
            .collect()
    }
}

/// What the pass keeps for one slab class.
struct ClassRecorder {
    stack: ExactLru,
    fill: ReuseTimeProfiler,
    accesses: u64,
    whole_run: DepthCounts,
    steady_state: DepthCounts,
}

impl ClassRecorder {
    fn new() -> ClassRecorder {
        // Every key sampled: the footprint is then exact at its bucket boundaries.
        let every_key = SamplingConfig::FixedRate { rate: 1.0 };
        ClassRecorder {
            stack: ExactLru::new(),
            fill: ReuseTimeProfiler::new(ReuseTimeMethod::Footprint, every_key, 0),
            accesses: 0,
            whole_run: DepthCounts::default(),
            steady_state: DepthCounts::default(),
        }
    }
}

/// The first pass: feed it every access of a run, then [`finish`](Self::finish) it.
pub struct UpperBoundProfiler {
    geometry: Geometry,
    classes: Vec<ClassRecorder>,
    /// GETs of items larger than `-I`: they miss at every size.
    too_large: DepthCounts,
    too_large_steady_state: DepthCounts,
    requests: u64,
    steady_state_from: u64,
    key: Vec<u8>,
    /// The dynamic oracle's windows, one recorder per window length asked for.
    windows: Vec<WindowRecorder>,
    /// With windows: each key's last request index, to tell a window's first access of a key.
    last_access: std::collections::HashMap<u64, u64>,
}

impl UpperBoundProfiler {
    /// A profiler for an engine configured as `config` (its slab geometry and item accounting).
    /// GETs from request index `steady_state_from` on (0-based) also count toward the steady state.
    pub fn new(config: &EngineConfig, steady_state_from: u64) -> UpperBoundProfiler {
        let geometry = Geometry::new(config);
        UpperBoundProfiler {
            classes: (0..geometry.class_count())
                .map(|_| ClassRecorder::new())
                .collect(),
            geometry,
            too_large: DepthCounts::default(),
            too_large_steady_state: DepthCounts::default(),
            requests: 0,
            steady_state_from,
            key: Vec::with_capacity(256),
            windows: Vec::new(),
            last_access: std::collections::HashMap::new(),
        }
    }

    /// Also records the run in windows of each of `window_requests` (requests), for the dynamic
    /// oracle ([`UpperBound::window_curves`]). Lengths of 0 and repeats are ignored.
    pub fn with_windows(mut self, window_requests: &[u64]) -> UpperBoundProfiler {
        let chunks_per_page: Vec<usize> = self
            .geometry
            .classes()
            .map(|(_, g)| g.chunks_per_page)
            .collect();
        for &w in window_requests {
            if w > 0 && !self.windows.iter().any(|r| r.window_requests() == w) {
                self.windows
                    .push(WindowRecorder::new(w, chunks_per_page.clone()));
            }
        }
        self
    }

    /// The class the simulator's engine stores `a` in, and the key's hash; `None` for an item over `-I`.
    /// The key is the simulator's: [`key_text`] padded with `.` to the access's key size.
    fn classify(&mut self, a: &Access) -> (Option<ClassId>, u64, usize) {
        key_text(a.tenant, a.key, &mut self.key);
        let key_len = (a.key_size as usize).max(self.key.len());
        self.key.resize(key_len, b'.');
        let value_len = (a.value_size as usize).min(self.geometry.item_size_max_bytes());
        let total = self.geometry.item_total_bytes(key_len, 0, value_len);
        (
            self.geometry.class_for(total),
            Engine::hash(Key::new(TenantId(a.tenant), &self.key)),
            total,
        )
    }

    /// Records one request of the stream.
    pub fn record(&mut self, a: &Access) {
        self.record_request(a);
        if !self.windows.is_empty() {
            let classes = &self.classes;
            for w in &mut self.windows {
                w.end_request(|i| classes[i].stack.distinct_keys());
            }
        }
    }

    fn record_request(&mut self, a: &Access) {
        let steady = self.requests >= self.steady_state_from;
        self.requests += 1;
        let (class, hash, total_bytes) = self.classify(a);
        let Some(class) = class else {
            if a.op == Op::Get {
                self.too_large.record(None);
                if steady {
                    self.too_large_steady_state.record(None);
                }
                for w in &mut self.windows {
                    w.too_large_get();
                }
            }
            return;
        };
        let previous = if self.windows.is_empty() || matches!(a.op, Op::Delete | Op::Other) {
            None
        } else {
            self.last_access.insert(hash, self.requests - 1)
        };
        let c = &mut self.classes[class.index()];
        match a.op {
            Op::Get => {
                let depth = c.stack.record_depth(hash, total_bytes as u32);
                c.whole_run.record(depth);
                if steady {
                    c.steady_state.record(depth);
                }
                for w in &mut self.windows {
                    w.get(class.index(), depth, previous);
                }
            }
            Op::Set | Op::Update => {
                c.stack.record_depth(hash, total_bytes as u32);
            }
            Op::Delete | Op::Other => return,
        }
        c.accesses += 1;
        for w in &mut self.windows {
            w.access(class.index());
        }
        mrcache_profile::AccessObserver::record(&mut c.fill, hash, 1);
    }

    /// Records a whole stream and finishes.
    pub fn profile(
        config: &EngineConfig,
        steady_state_from: u64,
        stream: impl IntoIterator<Item = Access>,
    ) -> UpperBound {
        let mut profiler = UpperBoundProfiler::new(config, steady_state_from);
        for a in stream {
            profiler.record(&a);
        }
        profiler.finish()
    }

    /// The curves and footprints of what was recorded.
    pub fn finish(self) -> UpperBound {
        let windows = self
            .windows
            .into_iter()
            .map(|w| w.finish(|i| self.classes[i].stack.distinct_keys()))
            .collect();
        let classes = self
            .classes
            .into_iter()
            .zip(self.geometry.classes())
            .map(|(c, (_, g))| ClassCurves {
                chunk_size_bytes: g.chunk_size_bytes,
                chunks_per_page: g.chunks_per_page,
                accesses: c.accesses,
                distinct_items: c.stack.distinct_keys(),
                footprint: c.fill.histogram().footprint(),
                whole_run: Hits::of(&c.whole_run),
                steady_state: Hits::of(&c.steady_state),
            })
            .collect();
        UpperBound {
            page_size_bytes: self.geometry.page_size_bytes(),
            classes,
            too_large_gets: self.too_large.gets,
            too_large_steady_state_gets: self.too_large_steady_state.gets,
            requests: self.requests,
            windows,
        }
    }
}

/// GETs and cumulative hits by LRU size of one class over one span of the run.
#[derive(Debug, Clone)]
struct Hits {
    gets: u64,
    hits_within: Vec<u64>,
}

impl Hits {
    fn of(depths: &DepthCounts) -> Hits {
        Hits {
            gets: depths.gets,
            hits_within: depths.hits_within(),
        }
    }

    fn miss_ratio_at_items(&self, items: usize) -> f64 {
        if self.gets == 0 {
            return 0.0;
        }
        let hits = match self.hits_within.last() {
            None => 0,
            Some(&all) => self.hits_within.get(items).copied().unwrap_or(all),
        };
        1.0 - hits as f64 / self.gets as f64
    }
}

/// Which requests a miss ratio is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Every GET of the run, the cold start included.
    WholeRun,
    /// GETs from the profiler's `steady_state_from` on.
    SteadyState,
}

/// One class's share of the profile.
#[derive(Debug, Clone)]
struct ClassCurves {
    chunk_size_bytes: usize,
    chunks_per_page: usize,
    accesses: u64,
    distinct_items: usize,
    footprint: mrcache_profile::Footprint,
    whole_run: Hits,
    steady_state: Hits,
}

impl ClassCurves {
    fn hits(&self, span: Span) -> &Hits {
        match span {
            Span::WholeRun => &self.whole_run,
            Span::SteadyState => &self.steady_state,
        }
    }

    /// Pages that hold every distinct item: more pages change nothing.
    fn pages_for_everything(&self) -> usize {
        self.distinct_items.div_ceil(self.chunks_per_page)
    }
}

/// The eq. 6 footprint of a class, as the prediction reads it.
struct ClassFootprint<'a>(&'a mrcache_profile::Footprint);

impl mrcache_policy::Footprint for ClassFootprint<'_> {
    fn items(&self, window_accesses: f64) -> f64 {
        self.0.at(window_accesses)
    }
    fn distinct_items(&self) -> f64 {
        self.0.distinct()
    }
}

/// An allocation and the miss ratios it is predicted to give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedAllocation {
    /// Pages per slab class, indexed by `ClassId::index()`.
    pub pages: Vec<usize>,
    /// GET miss ratio over the whole run (cold start included).
    pub miss_ratio: f64,
    /// GET miss ratio from the profiler's `steady_state_from` on.
    pub steady_state_miss_ratio: f64,
}

/// What the profile says about one memory size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryPlan {
    /// The memory size planned for.
    pub memory_bytes: u64,
    /// Pages it holds.
    pub total_pages: usize,
    /// Eq. 6's cold-start length `M` in requests that store (all classes); `None` if memory never fills.
    pub cold_start_accesses: Option<f64>,
    /// memcached's demand-filled allocation as eq. 6 predicts it.
    pub default: PlannedAllocation,
    /// The optimal allocation over the exact curves (Algorithm 1): the theoretical upper bound.
    pub upper_bound: PlannedAllocation,
}

/// The result of the pass: serves any number of memory sizes.
#[derive(Debug, Clone)]
pub struct UpperBound {
    page_size_bytes: usize,
    classes: Vec<ClassCurves>,
    too_large_gets: u64,
    too_large_steady_state_gets: u64,
    requests: u64,
    windows: Vec<WindowCurves>,
}

impl UpperBound {
    /// Requests recorded.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// The dynamic oracle's windows of `window_requests` requests, if the pass recorded them
    /// ([`UpperBoundProfiler::with_windows`]).
    pub fn window_curves(&self, window_requests: u64) -> Option<&WindowCurves> {
        self.windows
            .iter()
            .find(|w| w.window_requests() == window_requests)
    }

    /// Slab classes of the geometry (the length of every allocation).
    pub fn class_count(&self) -> usize {
        self.classes.len()
    }

    /// Whole pages in `memory_bytes`, as the engine counts its budget.
    pub fn pages_in(&self, memory_bytes: u64) -> usize {
        ((memory_bytes / self.page_size_bytes as u64) as usize).max(1)
    }

    /// The trace's distinct-object bytes under memcached's accounting: every distinct item in the chunk
    /// of its slab class (header, key, value and CAS, rounded up to the chunk). The memory that holds
    /// everything, but for partly filled pages.
    pub fn distinct_bytes(&self) -> u64 {
        self.classes
            .iter()
            .map(|c| (c.distinct_items * c.chunk_size_bytes) as u64)
            .sum()
    }

    /// `mrcache sim --memory P%`: `share` of [`distinct_bytes`](Self::distinct_bytes) as asked, and the
    /// memory limit that gives `config`'s engine, raised to its least memory (two of the largest items,
    /// as memcached's `-I` is at most half of `-m`, and a page).
    pub fn memory_for_share(&self, share: f64, config: &EngineConfig) -> (u64, u64) {
        let asked = (self.distinct_bytes() as f64 * share).round() as u64;
        let floor = (2 * config.item_size_max_bytes as u64).max(config.page_size_bytes() as u64);
        (asked, asked.max(floor))
    }

    /// Distinct items of class `class_index` (keys it was asked to store).
    pub fn distinct_items(&self, class_index: usize) -> usize {
        self.classes[class_index].distinct_items
    }

    /// GETs of class `class_index` over `span`.
    pub fn gets(&self, class_index: usize, span: Span) -> u64 {
        self.classes[class_index].hits(span).gets
    }

    /// (a) The exact GET miss ratio of class `class_index` with `k` pages, for `k = 0..=max_pages`.
    pub fn miss_ratio_by_pages(
        &self,
        class_index: usize,
        max_pages: usize,
        span: Span,
    ) -> Vec<f64> {
        let c = &self.classes[class_index];
        let hits = c.hits(span);
        (0..=max_pages)
            .map(|k| hits.miss_ratio_at_items(k * c.chunks_per_page))
            .collect()
    }

    /// Miss-ratio tables up to `total_pages` (or the pages holding everything, whichever is less).
    fn tables(&self, total_pages: usize, span: Span) -> Vec<Vec<f64>> {
        (0..self.classes.len())
            .map(|i| {
                let pages = self.classes[i].pages_for_everything().min(total_pages);
                self.miss_ratio_by_pages(i, pages, span)
            })
            .collect()
    }

    /// Eq. 3 inputs over `span`; the last entry stands for GETs too large for any class (never stored).
    fn demands<'a>(
        &'a self,
        tables: &'a [Vec<f64>],
        footprints: &'a [ClassFootprint<'a>],
        span: Span,
    ) -> Vec<ClassDemand<'a>> {
        let too_large_gets = match span {
            Span::WholeRun => self.too_large_gets,
            Span::SteadyState => self.too_large_steady_state_gets,
        };
        let mut demands: Vec<ClassDemand<'a>> = self
            .classes
            .iter()
            .zip(tables)
            .zip(footprints)
            .map(|((c, table), fp)| ClassDemand {
                accesses: c.accesses as f64,
                requests: c.hits(span).gets as f64,
                chunks_per_page: c.chunks_per_page,
                footprint: fp,
                miss_ratio_by_pages: table,
            })
            .collect();
        demands.push(ClassDemand {
            accesses: 0.0,
            requests: too_large_gets as f64,
            chunks_per_page: 0,
            footprint: &footprints[0],
            miss_ratio_by_pages: &[],
        });
        demands
    }

    /// The GET miss ratio over `span` when class `i` holds `pages[i]` pages (eq. 3).
    pub fn miss_ratio(&self, pages: &[usize], span: Span) -> f64 {
        let max = pages.iter().copied().max().unwrap_or(0);
        let tables = self.tables(max, span);
        let footprints = self.footprints();
        let mut padded = pages.to_vec();
        padded.resize(self.classes.len() + 1, 0);
        overall_miss_ratio(&self.demands(&tables, &footprints, span), &padded)
    }

    fn footprints(&self) -> Vec<ClassFootprint<'_>> {
        self.classes
            .iter()
            .map(|c| ClassFootprint(&c.footprint))
            .collect()
    }

    /// Classes the first-page rule gives a page to: every class asked to store something.
    pub fn classes_in_use(&self) -> usize {
        self.classes.iter().filter(|c| c.accesses > 0).count()
    }

    /// (b) The allocation of `total_pages` with the fewest whole-run GET misses (LAMA Algorithm 1 over
    /// the exact curves, no move limit; every class in use keeps one page, as memcached's first-page
    /// rule forces on any policy), indexed by class index. Pages that no class can
    /// use (memory beyond every class's data) are left out, so the sum may be less than `total_pages`.
    ///
    /// Never fails: where more classes are in use than `total_pages` (a small `-m` and many item
    /// sizes), each class in use still holds its first page, as the engine gives it one beyond the
    /// limit, so the allocation holds [`classes_in_use`](Self::classes_in_use) pages, more than
    /// `total_pages`; replaying it needs that many (`Simulator` raises its engine's budget to the caps).
    pub fn upper_bound_allocation(&self, total_pages: usize) -> Vec<usize> {
        let total_pages = total_pages.max(self.classes_in_use());
        let tables = self.tables(total_pages, Span::WholeRun);
        let costs = self
            .classes
            .iter()
            .zip(&tables)
            .map(|(c, table)| {
                table
                    .iter()
                    .map(|mr| mr * c.whole_run.gets as f64)
                    .collect()
            })
            .collect();
        // memcached's first-page rule gives every class in use a page whatever the policy, so no
        // memcached-compatible allocation (LAMA's included) can do without it.
        let min_pages = self
            .classes
            .iter()
            .map(|c| usize::from(c.accesses > 0))
            .collect();
        fewest_misses(costs, min_pages, total_pages)
    }

    /// (c) memcached's default allocation at `total_pages` as eq. 6 predicts it, with its cold-start
    /// length `M`.
    pub fn predict_default(&self, total_pages: usize) -> (Option<f64>, PlannedAllocation) {
        let tables = self.tables(total_pages, Span::WholeRun);
        let footprints = self.footprints();
        let demands = self.demands(&tables, &footprints, Span::WholeRun);
        let prediction = predict_default(&demands, total_pages);
        let mut pages = prediction.pages;
        pages.truncate(self.classes.len());
        let steady_state_miss_ratio = self.miss_ratio(&pages, Span::SteadyState);
        (
            prediction.cold_start_accesses,
            PlannedAllocation {
                pages,
                miss_ratio: prediction.miss_ratio,
                steady_state_miss_ratio,
            },
        )
    }

    /// Both allocations at `memory_bytes`. Where memcached's first-page rule holds more pages than the
    /// memory (more classes in use than pages), the upper bound is given the same pages, so that it is
    /// never worse than the default it bounds.
    pub fn plan(&self, memory_bytes: u64) -> MemoryPlan {
        let total_pages = self.pages_in(memory_bytes);
        let (cold_start_accesses, default) = self.predict_default(total_pages);
        let held = default.pages.iter().sum::<usize>().max(total_pages);
        let pages = self.upper_bound_allocation(held);
        let upper_bound = PlannedAllocation {
            miss_ratio: self.miss_ratio(&pages, Span::WholeRun),
            steady_state_miss_ratio: self.miss_ratio(&pages, Span::SteadyState),
            pages,
        };
        MemoryPlan {
            memory_bytes,
            total_pages,
            cold_start_accesses,
            default,
            upper_bound,
        }
    }
}

impl UpperBound {
    /// Sets `config` up for `policy` from this pass: the upper bound's fixed allocation at the
    /// config's memory (`page_caps`), or the dynamic oracle's schedule (`oracle`, from the windows of
    /// its length, which the pass must have recorded: [`oracle_windows`]). Returns the miss ratio the
    /// curves predict for what will be replayed (the model's figure), `None` for a class policy.
    pub fn configure(
        &self,
        config: &mut SimConfig,
        policy: &SlabPolicy,
    ) -> Result<Option<f64>, SimError> {
        let pages = self.pages_in(config.engine.memory_limit_bytes);
        if policy.is_upper_bound() {
            let caps = self.upper_bound_allocation(pages);
            let model = self.miss_ratio(&caps, Span::WholeRun);
            config.page_caps = Some(caps);
            return Ok(Some(model));
        }
        let Some(oracle) = policy.oracle() else {
            return Ok(None);
        };
        let curves = self
            .window_curves(oracle.window(config.window_requests))
            .ok_or(SimError::OracleNeedsSchedule)?;
        let schedule = match oracle.past {
            Some(past) => curves.schedule_from_past(pages, oracle.horizon(), past),
            None => curves.schedule(pages, oracle.horizon()),
        };
        let model = schedule.predicted_miss_ratio();
        config.oracle = Some(std::sync::Arc::new(schedule));
        Ok(Some(model))
    }
}

/// The window lengths the dynamic oracles among `policies` plan over, in a run reporting windows of
/// `run_window_requests` (what [`UpperBoundProfiler::with_windows`] must record).
pub fn oracle_windows<'a>(
    policies: impl IntoIterator<Item = &'a SlabPolicy>,
    run_window_requests: u64,
) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for w in policies
        .into_iter()
        .filter_map(|p| p.oracle())
        .map(|o| o.window(run_window_requests))
    {
        if !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

/// The allocation of `total_pages` with the least total cost, where `costs[i][k]` is partition `i`'s
/// cost (misses) with `k` pages up to its most useful page count, and `min_pages[i]` the least it may
/// get (clamped to its table). Where every partition's table together covers no more than
/// `total_pages`, each gets its whole table (the pages beyond stay unallocated); otherwise the
/// optimizer's DP (LAMA Algorithm 1 with no move limit) places exactly `total_pages`. The caller keeps
/// the minimums within `total_pages`; a total below them is raised to them, so this never fails.
pub(crate) fn fewest_misses(
    costs: Vec<Vec<f64>>,
    min_pages: Vec<usize>,
    total_pages: usize,
) -> Vec<usize> {
    let caps: Vec<usize> = costs.iter().map(|t| t.len().saturating_sub(1)).collect();
    if caps.iter().sum::<usize>() <= total_pages {
        return caps;
    }
    let min_pages: Vec<usize> = min_pages
        .iter()
        .zip(&caps)
        .map(|(m, c)| *m.min(c))
        .collect();
    let total_pages = total_pages.max(min_pages.iter().sum());
    let partitions = costs
        .into_iter()
        .zip(min_pages)
        .map(|(cost, min_pages)| Partition {
            cost: if cost.is_empty() { vec![0.0] } else { cost },
            current_pages: 0,
            min_pages,
        })
        .collect();
    let problem = Problem {
        partitions,
        total_pages,
        max_moves: None,
        granularity: 1,
    };
    // Feasible by construction: the minimums sum to at most `total_pages`, and the caps to more, so
    // the optimiser cannot refuse it.
    match optimal_allocation(&problem) {
        Ok(best) => best.pages,
        Err(e) => unreachable!("the minimums fit and the caps exceed the total: {e:?}"),
    }
}

#[cfg(test)]
mod tests;
