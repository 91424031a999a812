//! LAMA (Hu et al., LAMA §3): every M accesses, each class's miss-ratio curve of the window, one cost per
//! page count (OPT_MR: expected misses; OPT_ART: expected response time, eq. 4-5), Algorithm 1 for the
//! cheapest allocation within N moves of r pages, and the moves if they gain more than a threshold.
//!
//! Invariants of a round:
//! - nothing moves while memory is still being demand-filled (pages in use below the limit), as LAMA
//!   repartitions only a fully allocated cache;
//! - a class used in the window keeps at least one page (memcached gives every used class a first page
//!   anyway, so taking the last would only be undone), and so does one unused for fewer than
//!   `IDLE_WINDOWS_TO_EMPTY` windows in a row; after that it may lose them all (if it comes back, the
//!   engine takes its first page from the class that got its last one);
//! - a class with pages but no curve (not profiled) keeps exactly what it has; a class whose curve
//!   rests on too few samples to trust never gains pages, and gives them only at its worst case (see
//!   below);
//! - at most N·r pages move, taken first from the classes of lowest PSA risk (requests per page), as
//!   LAMA §3.4 chooses its victims;
//! - a tiny cost per page moved breaks ties toward the current allocation, so equal-cost plans move
//!   nothing.
//!
//! The interval M is fixed, or follows eq. 8: long enough for every class with real misses to see the
//! reuses that decide its curve up to min(2 S_i, S_i + N r) pages, and then follows the workload:
//! - its floor scales with the cache (half the items held, between `ADAPTIVE_FLOOR` and
//!   `min_interval`), and its cap at `TURNOVERS_PER_WINDOW` times the items held (within
//!   `max_interval`), so a cache of a few MiB gets rounds every few hundred thousand accesses; the
//!   first round comes at `ADAPTIVE_FLOOR`, since a small cache is full after tens of thousands;
//! - a round that moves nothing doubles the next interval (a stable workload gets few rounds), and a
//!   window whose classes' shares of requests moved by more than `SHIFT_DISTANCE` brings the next round
//!   forward to the floor (a phase change gets fast ones).
//!
//! Noise: a curve comes from `requests * sampling rate` sampled accesses. A class with fewer than
//! `MIN_CURVE_SAMPLES` in its window has no trusted curve ([`ClassView::trusted_curve`]); its cost
//! below the pages it holds is its worst case, every request of the window a miss (its misses at
//! any allocation lie between those it had and its requests), so it gives pages (down to one) only
//! to classes whose curves save more than all its hits. Such classes are the large-item classes of a
//! skewed workload, whose demand-filled pages would otherwise stay frozen (ETC Zipf 0.9 at 256 MiB:
//! 16 pages in classes 17-21 where the upper bound holds 5). For the others, each page count's cost
//! carries a confidence penalty: the misses it saves or adds against the current allocation are
//! counted `CONFIDENCE_Z` standard errors (`sqrt(Δ / rate)`) less favourably, so sampling noise in
//! steady state moves nothing. A plan must also save more misses than the curves err by in the window
//! (their misses at the allocation that served it against the misses observed, summed over the
//! classes), so a model that cannot reproduce the present is not trusted to predict the future. Where
//! the class missing most has no trusted curve, a PSA risk move (one page from the class with the
//! fewest requests per page) serves it instead. Each move names its rule ([`MoveRule`]).
//!
//! Bias against error, learnt from outcomes: AET curves are often off by a similar factor for every
//! class, which leaves a plan's ranking of the classes right although the model error exceeds its
//! gain. So a plan the strict guard blocks may still move pages where the curves' error is at most
//! `TRUST_MAX_RELATIVE_ERROR` of the window's misses: first as a probe (`PROBE_SHARE` of its pages),
//! and in full while such moves pay off. The window after a round judges its moves, whichever guard
//! let them through: over the classes whose pages changed, the misses at their old miss ratios
//! (scaled to this window's requests) against the misses they had, beyond `CONFIDENCE_Z` Poisson
//! errors (risk moves are not judged: the curves did not make them). Moves that paid off earn trust
//! (strict ones too: a workload whose curves err by a like factor everywhere then gets its next
//! plan in full, not as a probe); moves that lost misses lose it and put the next probe off (1, 2,
//! 4, ... rounds), and are undone at once unless they cleared the strict guard. The verdict need not
//! wait for a whole window: a window that misses `EARLY_JUDGE_EXCESS` more than the one that planned
//! the moves, beyond noise, is cut short at the floor and judged (`Watch`). A probe within
//! noise earns nothing and puts nothing off: a probe is often a page or two, whose effect one
//! window cannot tell from noise, and waiting a round for it cost ETC Zipf 0.9 at 256 MiB a whole
//! 1.25M-access window. The state is the policy instance's own; nothing but the rounds' inputs
//! feeds it.
//!
//! Paced moves (`pace=true`, the default; [`ClassPolicy::paces_moves`]): curve moves to a class are
//! granted, not made, and the receiver takes each page at the store that would otherwise evict one
//! of its items, so the donor loses its coldest items only then, and never for a page the receiver
//! does not fill. The next round plans from the allocation the grants will leave. Made at once, a
//! round's pages cost the donors their items the moment memory fills, while small-item receivers
//! take several windows to fill them, so paced moves reach more of the potential on skewed workloads
//! (results §14.10). `pace=false` makes them at once.

use std::fmt;

use super::heuristics::risk;
use super::{
    moves_toward, ClassMove, ClassPolicy, ClassView, MoveRule, Progress, Round, RoundInput,
    CONFIDENCE_Z,
};
use crate::optimizer::{optimal_allocation, Partition, Problem};
use crate::spec::{shown, write_spec, Auto, Params, SpecError};

/// What LAMA minimises.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LamaTarget {
    /// OPT_MR: total misses.
    MissRatio,
    /// OPT_ART: average response time under a hit-time / miss-penalty model.
    ResponseTime(ResponseTimeModel),
}

/// Hit time and miss penalty of a request by the size of its item (LAMA eq. 4): a miss costs a backend
/// fetch whose time grows with the object, a hit the cache's own service time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResponseTimeModel {
    /// Microseconds a hit takes, whatever the size.
    pub hit_us: f64,
    /// Microseconds a miss takes at the backend, before carrying the item.
    pub miss_us: f64,
    /// Microseconds a miss adds per KiB of the item.
    pub miss_us_per_kib: f64,
}

impl Default for ResponseTimeModel {
    /// A hit served in 100 µs; a miss 1 ms at the backend plus 100 µs per KiB carried.
    fn default() -> Self {
        ResponseTimeModel {
            hit_us: 100.0,
            miss_us: 1_000.0,
            miss_us_per_kib: 100.0,
        }
    }
}

impl ResponseTimeModel {
    /// Time of a hit on an item of `_item_bytes`.
    pub fn hit_time_us(&self, _item_bytes: usize) -> f64 {
        self.hit_us
    }

    /// Time of a miss on an item of `item_bytes`.
    pub fn miss_time_us(&self, item_bytes: usize) -> f64 {
        self.miss_us + self.miss_us_per_kib * item_bytes as f64 / 1024.0
    }
}

/// The repartitioning interval M, in accesses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Every M accesses.
    Fixed(u64),
    /// Eq. 8, clamped to `[min, max]`.
    Auto {
        /// The least M.
        min: u64,
        /// The most M.
        max: u64,
    },
}

/// LAMA's defaults: N = 50 moves a round (LAMA §5.2), an improvement of at least 0.3% (below), and
/// eq. 8's M capped at 1 million accesses, the best M LAMA §5.4 measured (fastest convergence, lowest
/// steady state; on the unscaled ETC sweep a 5M cap left LAMA converging, behind PSA from 640 MB up),
/// with a floor for tiny caches.
const DEFAULT_MAX_MOVES: usize = 50;
/// LAMA compares a plan's gain with "a certain threshold" it does not name. The gain is already
/// counted `CONFIDENCE_Z` sampling errors less favourably and must clear the model-error or outcome
/// guards, so the threshold only has to stop plans too small to be worth a page's warm-up. Set higher,
/// the rounds after a large cache's first plan fall under it once the penalty is counted and the
/// allocation stops converging; this low, it goes on converging, at the price of some noise-driven
/// moves once converged (docs/results.md §14.9).
const DEFAULT_THRESHOLD: f64 = 0.003;
/// Curve moves are paced (granted, taken when the receiver needs the page) unless `pace=false`.
const DEFAULT_PACE: bool = true;
const DEFAULT_MIN_INTERVAL: u64 = 100_000;
const DEFAULT_MAX_INTERVAL: u64 = 1_000_000;
/// Classes whose miss ratio is below this, or whose share of all misses is, are ignored by eq. 8
/// (LAMA: "few or no misses").
const EQ8_MIN_MISS_RATIO: f64 = 0.01;
const EQ8_MIN_MISS_SHARE: f64 = 0.05;
/// The least interval of the adaptive floor (when `min_interval` is not given): a round of a small cache
/// still sees tens of thousands of accesses, every one sampled while its class's keys fit the
/// profiler's bound (the default rate).
const ADAPTIVE_FLOOR: u64 = 20_000;
/// With the adaptive interval, the longest window is this many times the items held: eq. 8 asks for
/// tens of millions of accesses where miss ratios are a few percent, which a cache of a few MiB turns
/// over many times; the noise and model-error guards keep the shorter windows from churning.
const TURNOVERS_PER_WINDOW: u64 = 4;
/// A window whose per-class request shares differ from the previous window's by more than this (total
/// variation distance) is a shift: the next round comes at the floor.
const SHIFT_DISTANCE: f64 = 0.1;
/// A risk move serves a class without a trusted curve only when it has at least this share of the
/// window's misses (a class that misses rarely is not worth a page).
const RISK_MIN_MISS_SHARE: f64 = 0.05;

/// Beyond the strict model-error guard the curves are believed (trusted or probed) only where their
/// error in the window is at most this share of the misses observed: where the AET curves are off by
/// a like factor for every class (a plan's ranking still holds), not where their error exceeds the
/// window's misses (then the ranking itself is noise; both seen on the shared traces, results §14).
const TRUST_MAX_RELATIVE_ERROR: f64 = 0.5;
/// A probe moves this share of the pages its plan would move (at least one): a smaller share
/// converges more slowly, and the whole plan (no probe) loses where the curves' ranking is wrong often
/// enough that probing it pays (docs/results.md §14.5).
const PROBE_SHARE: f64 = 0.5;

/// A class unused for this many windows in a row may lose its last page. One idle window is not
/// enough: a class whose keys come back every few windows takes its first page back each time,
/// from a class that may no longer have one to spare, and then from the largest, a bystander that
/// loses its coldest page of items (seen on a real ORM trace as more misses than memcached's;
/// docs/results.md §14.7).
const IDLE_WINDOWS_TO_EMPTY: u32 = 2;

/// Moves are judged early when the window after them misses this much more (relative) than the
/// window that planned them, beyond noise: a window that goes that badly (a returning class taking a
/// bystander's page, a class on the edge of a cliff its curve smooths over) loses more misses in a
/// few thousand accesses than the whole plan could save.
const EARLY_JUDGE_EXCESS: f64 = 0.5;

/// A round also runs after this many seconds if at least `min` accesses happened (a quiet server).
const DEFAULT_PERIOD_SECS: u32 = 300;

mod params;
pub use params::{LamaParams, ResponseTimeParams};

/// The LAMA policy and its state.
pub struct Lama {
    target: LamaTarget,
    interval: Interval,
    /// M for the next round.
    next_interval: u64,
    period_secs: u32,
    max_moves: usize,
    /// r; `None`: one page per GiB of memory (LAMA §5.4), at least 1.
    granularity: Option<usize>,
    threshold: f64,
    /// Whether curve moves wait for their receiver to need the page (`pace=`).
    pace: bool,
    /// Whether the interval's floor scales with the cache (`min_interval` not given).
    adaptive_floor: bool,
    /// Each class's share of the last window's requests (indexed by class index), to see shifts.
    last_shares: Vec<f64>,
    /// Consecutive windows, up to this one, in which each class (by index) had no request.
    idle_windows: Vec<u32>,
    /// Whether the last judged moves beyond the strict guard paid off: while they do, a plan need not
    /// save more than the curves' model error (see `judge`). Starts untrusted.
    trusted: bool,
    /// The last round's moves beyond the strict guard, for the next window to judge.
    pending: Option<Pending>,
    /// While moves wait for their verdict: the miss ratio of the window that planned them, and the
    /// accesses after which a window missing far more than it may be judged early (see `due`).
    watch: Option<Watch>,
    /// Rounds until the next probe may run.
    probe_wait: u32,
    /// The wait set after a probe or trusted plan that did not pay; doubles each time.
    probe_backoff: u32,
}

/// Which guard let a plan through.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Plan {
    /// It saves more than the model error (or nothing moves).
    Strict,
    /// Trusted after moves that paid off.
    Trusted,
    /// A few of its pages, to see whether the model's ranking holds.
    Probe,
}

/// What the window after a round that moved pages says of its moves.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Verdict {
    /// No moves to judge (none made, or none took effect).
    None,
    /// The classes they changed missed less than at their old miss ratios, beyond noise.
    Paid,
    /// They missed more, beyond noise.
    Failed,
    /// Within noise.
    Unclear,
}

/// A round's moves, waiting for the next window's verdict.
#[derive(Clone, Debug)]
struct Pending {
    /// The classes before the moves.
    before: Vec<Before>,
    /// The guard that let them through.
    plan: Plan,
}

/// What the window after a round's moves is held to: should it miss well beyond the planning window's
/// miss ratio, the moves are judged at once rather than at the end of a full window.
#[derive(Clone, Copy, Debug)]
struct Watch {
    miss_ratio: f64,
    after_accesses: u64,
}

impl Watch {
    /// Whether `since` missed more than the planning window's miss ratio allows, beyond
    /// `CONFIDENCE_Z` Poisson errors and by more than `EARLY_JUDGE_EXCESS`.
    fn exceeded(&self, since: &Progress) -> bool {
        let expected = self.miss_ratio * since.accesses as f64;
        since.accesses >= self.after_accesses
            && since.misses as f64
                > expected * (1.0 + EARLY_JUDGE_EXCESS) + CONFIDENCE_Z * expected.sqrt()
    }
}

/// A class before a round's moves: its pages and the miss ratio it had in the window that planned them.
#[derive(Clone, Copy, Debug)]
struct Before {
    class: mrcache_engine::ClassId,
    pages: usize,
    requests: u64,
    misses: u64,
}

impl Lama {
    /// LAMA minimising `target` every `interval`, with the defaults above for everything else.
    pub fn new(target: LamaTarget, interval: Interval) -> Lama {
        let next_interval = match interval {
            Interval::Fixed(m) => m.max(1),
            Interval::Auto { min, .. } => min.max(1),
        };
        Lama {
            target,
            interval,
            next_interval,
            period_secs: DEFAULT_PERIOD_SECS,
            max_moves: DEFAULT_MAX_MOVES,
            granularity: None,
            threshold: DEFAULT_THRESHOLD,
            pace: DEFAULT_PACE,
            adaptive_floor: false,
            last_shares: Vec::new(),
            idle_windows: Vec::new(),
            trusted: false,
            pending: None,
            watch: None,
            probe_wait: 0,
            probe_backoff: 1,
        }
    }

    /// Lets the interval's floor follow the cache (`min_interval` not given; see the module doc). The
    /// first round then comes at the floor's least value, not at `min`: a small cache fills within a
    /// few tens of thousands of accesses.
    fn use_adaptive_floor(&mut self) {
        self.adaptive_floor = true;
        if let Interval::Auto { min, .. } = self.interval {
            self.next_interval = ADAPTIVE_FLOOR.min(min).max(1);
        }
    }

    /// Judges the last round's moves by the window that followed them: over the classes whose pages
    /// changed, the misses each would have had at its old miss ratio against those it had, weighted by
    /// this window's requests. Returns the verdict, the allocation before the moves, and the guard that
    /// let them through.
    fn judge(&mut self, input: &RoundInput<'_>) -> (Verdict, Vec<Before>, Plan) {
        let Some(Pending { before, plan }) = self.pending.take() else {
            return (Verdict::None, Vec::new(), Plan::Strict);
        };
        let mut saved = 0.0;
        let mut variance = 0.0;
        let mut changed = false;
        for b in &before {
            let Some(c) = input.classes.iter().find(|c| c.snapshot.class == b.class) else {
                continue;
            };
            if c.pages() == b.pages || b.requests == 0 || c.requests == 0 {
                continue;
            }
            changed = true;
            let scale = c.requests as f64 / b.requests as f64;
            saved += b.misses as f64 * scale - c.misses as f64;
            variance += b.misses as f64 * scale * scale + c.misses as f64;
        }
        let noise = CONFIDENCE_Z * variance.sqrt();
        let verdict = if !changed {
            Verdict::None
        } else if saved > noise {
            Verdict::Paid
        } else if saved < -noise {
            Verdict::Failed
        } else {
            Verdict::Unclear
        };
        (verdict, before, plan)
    }

    /// Whether the classes' shares of requests moved by more than `SHIFT_DISTANCE` since the last
    /// window; remembers this window's shares.
    fn shifted(&mut self, input: &RoundInput<'_>) -> bool {
        let total: u64 = input.classes.iter().map(|c| c.requests).sum();
        if total == 0 {
            return false;
        }
        let shares: Vec<f64> = input
            .classes
            .iter()
            .map(|c| c.requests as f64 / total as f64)
            .collect();
        let before = std::mem::replace(&mut self.last_shares, shares);
        if before.len() != self.last_shares.len() {
            return false;
        }
        let distance: f64 = before
            .iter()
            .zip(&self.last_shares)
            .map(|(a, b)| (a - b).abs())
            .sum::<f64>()
            / 2.0;
        distance > SHIFT_DISTANCE
    }

    /// Sets the next interval after a round; `busy`: it moved pages, or memory is still filling.
    fn adapt_interval(&mut self, input: &RoundInput<'_>, r: usize, shifted: bool, busy: bool) {
        let Interval::Auto { max, .. } = self.interval else {
            return;
        };
        // Adaptive: the least window is half the items held (within `[ADAPTIVE_FLOOR, min]`), the
        // longest a few turnovers of them; fixed: `min` and `max` as given.
        let floor = self.floor(input);
        let max = if self.adaptive_floor {
            items_held(input)
                .saturating_mul(TURNOVERS_PER_WINDOW)
                .clamp(floor, max)
        } else {
            max
        };
        let eq8 = self.eq8_interval(input, r).clamp(floor, max);
        self.next_interval = if shifted {
            floor
        } else if busy || !self.adaptive_floor {
            eq8
        } else {
            eq8.max(self.next_interval.saturating_mul(2)).min(max)
        };
    }

    /// The shortest window: adaptive, half the items held within `[ADAPTIVE_FLOOR, min]`; else `min`.
    fn floor(&self, input: &RoundInput<'_>) -> u64 {
        let min = match self.interval {
            Interval::Fixed(m) => return m,
            Interval::Auto { min, .. } => min,
        };
        if !self.adaptive_floor {
            return min;
        }
        (items_held(input) / 2).clamp(ADAPTIVE_FLOOR.min(min), min)
    }

    /// PSA's move where the curves cannot decide: when the class missing most (with a real share of
    /// the misses) has no trusted curve, a page from the class of lowest risk that can spare one
    /// (untrusted, or whose curve says the page costs it fewer misses than the needy class had).
    fn risk_move(&self, held: &[&ClassView]) -> Option<ClassMove> {
        let total_misses: u64 = held.iter().map(|c| c.misses).sum();
        let needy = held
            .iter()
            .filter(|c| c.misses > 0)
            .max_by_key(|c| c.misses)?;
        if needy.trusted_curve().is_some()
            || (needy.misses as f64) < RISK_MIN_MISS_SHARE * total_misses as f64
        {
            return None;
        }
        let spare = |c: &&&ClassView| {
            if c.pages() < 2 || c.snapshot.class == needy.snapshot.class {
                return false;
            }
            match c.trusted_curve() {
                None => true,
                Some(curve) => {
                    let at = |k: usize| curve[k.min(curve.len() - 1)] * c.requests as f64;
                    let loss = at(c.pages() - 1) - at(c.pages());
                    let noise = (loss.max(0.0) / c.curve_sampling_rate).sqrt();
                    loss + CONFIDENCE_Z * noise < needy.misses as f64
                }
            }
        };
        let src = held
            .iter()
            .filter(spare)
            .min_by(|a, b| risk(a).total_cmp(&risk(b)))?;
        Some(ClassMove {
            src: src.snapshot.class,
            dst: Some(needy.snapshot.class),
            pages: 1,
            rule: MoveRule::Risk,
        })
    }

    /// The interval the next round waits for.
    pub fn next_interval(&self) -> u64 {
        self.next_interval
    }

    fn granularity(&self, input: &RoundInput<'_>) -> usize {
        self.granularity.unwrap_or_else(|| {
            let bytes = input.page_limit as u64 * input.page_size_bytes as u64;
            ((bytes >> 30) as usize).max(1)
        })
    }

    /// The most class `c` can cost with `pages` pages, from its window's counters alone: what it
    /// cost at the pages it held, and below them every request a miss (LRU never misses more than
    /// it is asked, and never less with more pages).
    fn worst_case_cost(&self, c: &ClassView, pages: usize) -> f64 {
        let miss_ratio = if pages >= c.pages() {
            c.misses as f64 / c.requests.max(1) as f64
        } else {
            1.0
        };
        self.cost(c, miss_ratio)
    }

    /// Cost of class `c` holding `pages` pages, given its window's miss ratio there.
    fn cost(&self, c: &ClassView, miss_ratio: f64) -> f64 {
        let requests = c.requests as f64;
        match self.target {
            LamaTarget::MissRatio => miss_ratio * requests,
            LamaTarget::ResponseTime(model) => {
                let size = c.snapshot.chunk_size_bytes;
                requests
                    * (miss_ratio * model.miss_time_us(size)
                        + (1.0 - miss_ratio) * model.hit_time_us(size))
            }
        }
    }

    /// Eq. 8: the accesses a window needs so that every class with real misses sees its curve out to
    /// min(2 S_i, S_i + N r) pages.
    fn eq8_interval(&self, input: &RoundInput<'_>, r: usize) -> u64 {
        let total: u64 = input.classes.iter().map(|c| c.requests).sum();
        let total_misses: u64 = input.classes.iter().map(|c| c.misses).sum();
        if total == 0 {
            return self.next_interval;
        }
        input
            .classes
            .iter()
            .filter(|c| c.requests > 0 && c.pages() > 0)
            .filter_map(|c| {
                let mr = c.misses as f64 / c.requests as f64;
                // "Few or no misses": a low miss ratio, or a small share of all misses (a class
                // that rarely appears would otherwise set an interval of billions of accesses).
                if mr < EQ8_MIN_MISS_RATIO
                    || (c.misses as f64) < EQ8_MIN_MISS_SHARE * total_misses as f64
                {
                    return None;
                }
                let p = c.requests as f64 / total as f64;
                let s = c.pages();
                let items = (2 * s).min(s + self.max_moves * r) * c.snapshot.chunks_per_page;
                Some(items as f64 / (mr * p))
            })
            .fold(0.0f64, f64::max)
            .round() as u64
    }
}

/// Items the cache holds, over every class.
fn items_held(input: &RoundInput<'_>) -> u64 {
    input
        .classes
        .iter()
        .map(|c| c.snapshot.items)
        .sum::<usize>() as u64
}

impl ClassPolicy for Lama {
    fn name(&self) -> &'static str {
        match self.target {
            LamaTarget::MissRatio => "lama-mr",
            LamaTarget::ResponseTime(_) => "lama-art",
        }
    }

    fn describe(&self) -> String {
        let interval = match self.interval {
            Interval::Fixed(m) => m.to_string(),
            Interval::Auto { min, max } => format!("auto,min_interval={min},max_interval={max}"),
        };
        let granularity = self
            .granularity
            .map_or("auto".to_string(), |r| r.to_string());
        let mut s = format!(
            "{}:interval={interval},period={},moves={},granularity={granularity},threshold={},pace={}",
            self.name(),
            self.period_secs,
            self.max_moves,
            self.threshold,
            self.pace
        );
        if let LamaTarget::ResponseTime(m) = self.target {
            s += &format!(
                ",hit_us={},miss_us={},miss_us_per_kib={}",
                m.hit_us, m.miss_us, m.miss_us_per_kib
            );
        }
        s
    }

    fn due(&self, since: &Progress) -> bool {
        let min = match self.interval {
            Interval::Fixed(m) => m,
            Interval::Auto { min, .. } => min,
        };
        since.accesses >= self.next_interval
            || (self.period_secs > 0 && since.seconds >= self.period_secs && since.accesses >= min)
            || self.watch.is_some_and(|w| w.exceeded(since))
    }

    fn needs_curves(&self) -> bool {
        true
    }
    fn continues_tails(&self) -> bool {
        true
    }
    fn paces_moves(&self) -> bool {
        self.pace
    }

    fn round(&mut self, input: &RoundInput<'_>) -> Round {
        let r = self.granularity(input);
        let shifted = self.shifted(input);
        self.idle_windows.resize(input.classes.len(), 0);
        for (idle, c) in self.idle_windows.iter_mut().zip(input.classes) {
            *idle = if c.requests == 0 { *idle + 1 } else { 0 };
        }
        // Outcomes: moves that paid off earn trust, whichever guard let them through; moves that
        // did not lose it and put off the next probe (twice as long each time), and are undone
        // unless they cleared the strict guard. A probe within noise earns nothing, but puts
        // nothing off either: a probe is often a page or two, whose effect a window
        // cannot tell from noise.
        let (verdict, before, judged) = self.judge(input);
        match verdict {
            Verdict::Paid => self.trusted = true,
            Verdict::Failed => self.trusted = false,
            Verdict::Unclear | Verdict::None => {}
        }
        if verdict == Verdict::Failed {
            self.probe_wait = self.probe_backoff;
            self.probe_backoff = self.probe_backoff.saturating_mul(2);
        } else {
            self.probe_wait = self.probe_wait.saturating_sub(1);
        }
        let undo = verdict == Verdict::Failed && judged != Plan::Strict;
        let (round, plan) = if undo {
            (self.undo(input, &before, r), Plan::Strict)
        } else {
            self.plan(input, r)
        };
        // The curves' moves are judged, whichever guard let them through; not an undo (it restores
        // what the window before the failed moves observed), nor a risk move (made where the
        // curves could not decide, so its outcome says nothing of them).
        self.watch = None;
        if !undo && round.moves.iter().any(|m| m.rule != MoveRule::Risk) {
            let (requests, misses) = input
                .classes
                .iter()
                .fold((0, 0), |(r, m), c| (r + c.requests, m + c.misses));
            self.watch = Some(Watch {
                miss_ratio: misses as f64 / requests.max(1) as f64,
                after_accesses: self.floor(input),
            });
            self.pending = Some(Pending {
                before: input
                    .classes
                    .iter()
                    .map(|c| Before {
                        class: c.snapshot.class,
                        pages: c.pages(),
                        requests: c.requests,
                        misses: c.misses,
                    })
                    .collect(),
                plan,
            });
        }
        // Until memory is full nothing moves, and nothing says the workload is calm.
        let settled = input.pages_in_use >= input.page_limit && round.moves.is_empty();
        self.adapt_interval(input, r, shifted, !settled);
        round
    }
}

impl Lama {
    /// Moves that put back the allocation `before` of the classes a failed round changed (a class used
    /// in the window keeps a page).
    fn undo(&self, input: &RoundInput<'_>, before: &[Before], r: usize) -> Round {
        let held: Vec<&ClassView> = input.classes.iter().filter(|c| c.pages() > 0).collect();
        let current: Vec<usize> = held.iter().map(|c| c.pages()).collect();
        let target: Vec<usize> = held
            .iter()
            .map(|c| {
                let old = before
                    .iter()
                    .find(|b| b.class == c.snapshot.class)
                    .map_or(c.pages(), |b| b.pages);
                if c.requests > 0 {
                    old.max(1)
                } else {
                    old
                }
            })
            .collect();
        let (moves, _) = moves_toward(&held, &current, &target, self.max_moves * r, |_| true);
        Round {
            moves,
            predicted_miss_ratio: None,
        }
    }

    /// The moves of one round (the interval is the caller's).
    fn plan(&self, input: &RoundInput<'_>, r: usize) -> (Round, Plan) {
        if input.pages_in_use < input.page_limit {
            return (Round::none(), Plan::Strict);
        }
        let held: Vec<(&ClassView, u32)> = input
            .classes
            .iter()
            .zip(&self.idle_windows)
            .filter(|(c, _)| c.pages() > 0)
            .map(|(c, &idle)| (c, idle))
            .collect();
        let (held, idle_windows): (Vec<&ClassView>, Vec<u32>) = held.into_iter().unzip();
        let total_pages: usize = held.iter().map(|c| c.pages()).sum();
        let total_requests: u64 = held.iter().map(|c| c.requests).sum();
        if held.len() < 2 || total_requests == 0 {
            return (Round::none(), Plan::Strict);
        }
        // A tie-breaking cost per page away from the current allocation, far below one miss.
        let nudge = 1e-6;
        let mut partitions = Vec::with_capacity(held.len());
        for (c, &idle) in held.iter().zip(&idle_windows) {
            let current = c.pages();
            // Algorithm 1 looks no further than N moves of r pages from where the class is.
            let upper = total_pages.min(current + self.max_moves * r);
            let partition = match (c.trusted_curve(), c.requests) {
                // Unused in the window: its pages are free to go, and its last one too once it
                // has gone unused for `IDLE_WINDOWS_TO_EMPTY` windows (should the class come
                // back, memcached's first-page rule gives it a page again, taken back from the
                // class that got its last one).
                (_, 0) => Partition {
                    cost: (0..=upper)
                        .map(|j| nudge * j.abs_diff(current) as f64)
                        .collect(),
                    current_pages: current,
                    min_pages: usize::from(idle < IDLE_WINDOWS_TO_EMPTY),
                },
                (Some(curve), _) => {
                    let at = |j: usize| self.cost(c, curve[j.min(curve.len() - 1)]);
                    let now = at(current);
                    // The misses saved or added against the current allocation are an estimate
                    // from `requests * rate` samples: count them CONFIDENCE_Z errors worse.
                    let misses_now = curve[current.min(curve.len() - 1)] * c.requests as f64;
                    Partition {
                        cost: (0..=upper)
                            .map(|j| {
                                let misses = curve[j.min(curve.len() - 1)] * c.requests as f64;
                                let noise =
                                    ((misses - misses_now).abs() / c.curve_sampling_rate).sqrt();
                                let per_miss = if misses_now > 0.0 || misses > 0.0 {
                                    (at(j) - now).abs() / (misses - misses_now).abs().max(1e-9)
                                } else {
                                    1.0
                                };
                                at(j)
                                    + CONFIDENCE_Z * noise * per_miss.min(1e12)
                                    + nudge * j.abs_diff(current) as f64
                            })
                            .collect(),
                        current_pages: current,
                        min_pages: 1,
                    }
                }
                // A curve too sparse to trust: only its worst case, and no pages gained.
                (None, _) if c.miss_ratio_by_pages.is_some() && current > 1 => Partition {
                    cost: (0..=current)
                        .map(|j| self.worst_case_cost(c, j) + nudge * (current - j) as f64)
                        .collect(),
                    current_pages: current,
                    min_pages: 1,
                },
                _ => Partition {
                    cost: vec![0.0; current + 1],
                    current_pages: current,
                    min_pages: current,
                },
            };
            partitions.push(partition);
        }
        let current_cost: f64 = partitions.iter().map(|p| p.cost[p.current_pages]).sum();
        let best = optimal_allocation(&Problem {
            partitions,
            total_pages,
            max_moves: Some(self.max_moves),
            granularity: r,
        });
        let predicted = |pages: &[usize]| -> Option<f64> {
            let (mut misses, mut requests) = (0.0, 0.0);
            for (c, &j) in held.iter().zip(pages) {
                if let Some(curve) = c.miss_ratio_by_pages.as_ref().filter(|c| !c.is_empty()) {
                    misses += curve[j.min(curve.len() - 1)] * c.requests as f64;
                    requests += c.requests as f64;
                }
            }
            (requests > 0.0).then(|| misses / requests)
        };
        let current: Vec<usize> = held.iter().map(|c| c.pages()).collect();
        // The curves' own error: how far they miss the window's observed misses at the allocation
        // that served it. A plan must save more misses than that to be believed. A class without a
        // trusted curve counts at its worst case (the plan takes its pages at no other cost).
        let cost_at = |pages: &[usize]| -> f64 {
            held.iter()
                .zip(pages)
                .filter_map(|(c, &j)| match c.trusted_miss_ratio(j) {
                    Some(m) => Some(self.cost(c, m)),
                    None if c.miss_ratio_by_pages.is_some() && c.requests > 0 => {
                        Some(self.worst_case_cost(c, j))
                    }
                    None => None,
                })
                .sum()
        };
        // Every trusted curve's error, not only those of the classes a plan changes: the plan's gain
        // is a difference of totals, and a guard over the changed classes alone let bad moves through
        // on cache2k-orm-busy (10%: 0.0320 against 0.0267).
        let model_error: f64 = held
            .iter()
            .filter_map(|c| {
                let predicted = c.trusted_miss_ratio(c.pages())?;
                let observed = c.misses as f64 / c.requests.max(1) as f64;
                Some((self.cost(c, predicted) - self.cost(c, observed)).abs())
            })
            .sum();
        let over_threshold = best.as_ref().is_ok_and(|best| {
            current_cost > 0.0 && (current_cost - best.cost) / current_cost >= self.threshold
        });
        let strict = best
            .as_ref()
            .is_ok_and(|best| cost_at(&current) - cost_at(&best.pages) > model_error);
        // Beyond the strict guard, the curves are believed only while relaxed moves have paid off
        // (`trusted`), or probed, and never where their error is a large share of the window's misses.
        let observed: f64 = held.iter().map(|c| c.misses as f64).sum();
        let calibrated = model_error <= TRUST_MAX_RELATIVE_ERROR * observed;
        let believed = strict || (self.trusted && calibrated);
        let probe =
            over_threshold && !believed && calibrated && !self.trusted && self.probe_wait == 0;
        let (Ok(best), true) = (best, over_threshold && (believed || probe)) else {
            return (
                Round {
                    moves: self.risk_move(&held).into_iter().collect(),
                    predicted_miss_ratio: predicted(&current),
                },
                Plan::Strict,
            );
        };
        if probe {
            let planned: usize = current
                .iter()
                .zip(&best.pages)
                .map(|(a, b)| a.saturating_sub(*b))
                .sum();
            let pages = ((planned as f64 * PROBE_SHARE).ceil() as usize).max(1);
            let (moves, after) = moves_toward(
                &held,
                &current,
                &best.pages,
                pages.min(self.max_moves * r),
                |_| true,
            );
            return (
                Round {
                    moves,
                    predicted_miss_ratio: predicted(&after),
                },
                Plan::Probe,
            );
        }
        let (moves, _) = moves_toward(&held, &current, &best.pages, self.max_moves * r, |_| true);
        (
            Round {
                moves,
                predicted_miss_ratio: predicted(&best.pages),
            },
            if strict { Plan::Strict } else { Plan::Trusted },
        )
    }
}
