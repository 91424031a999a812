//! Dynacache (Cidon et al., HotCloud'15): each application's slab-class memory divided to maximise its
//! hits (§4.1, eq. 1), for the applications whose misses are spread over classes (§4.3, miss entropy).
//!
//! A round, every `interval` accesses of the pool (one application: a tenant's pool, or the whole cache):
//! 1. **Which applications** (§4.3): the window's misses per class (stores of absent keys: one per
//!    filled lookaside miss) give the miss entropy in bits ([`miss_entropy`]). Below `min_entropy` the
//!    round ends there: the curves are not even computed ([`ClassPolicy::wants_curves`]), since an
//!    application whose misses sit in one or two adjacent classes gains little from re-dividing them.
//! 2. **Hit curves** (§4.1): for every class, the window's hits at each page count,
//!    `w_i * requests_i * (1 - mr_i(k))`, from the profiler's miss-ratio curve of the window (the
//!    engine's sampled reuse-time profiler, AET, in place of the paper's bucketed stack distances; both
//!    estimate the LRU curve). `w_i` is 1 (`objective=hits`: the paper's `f_i h_i`) or the class's chunk
//!    size (`objective=bytes`: hits weighted by the bytes each saves the backend).
//! 3. **Fit and solve**: each curve's least concave majorant (the paper's concave piecewise-linear fit),
//!    and the exact optimum of eq. 1 over those fits with the pool's pages as the budget
//!    ([`solver::maximise`]: marginal gains, optimal for concave fits; the module proves it).
//! 4. **Apply**, through the same page moves as every policy: at most `moves` pages a round toward the
//!    optimum, taken first from the classes with the fewest requests per page, and only if the optimum's
//!    gain, measured on the unfitted curves, is at least `threshold` of the window's predicted misses and
//!    more than `CONFIDENCE_Z` standard errors of its sampled estimate (and, with `guard=model`, more
//!    than the curves' own error in the window, as lama-mr requires).
//!
//! Invariants: nothing moves while memory is still being demand-filled; a class used in the window keeps
//! at least one page; a class whose curve rests on fewer than `MIN_CURVE_SAMPLES` sampled accesses (or
//! that has none) keeps exactly its pages; a class unused in the window may lose all of them; equal-valued
//! allocations keep the current one (no churn).

mod entropy;
pub mod solver;

pub use entropy::miss_entropy;
pub use solver::{maximise, ConcaveClass, ConcaveFit, SolveError};

use std::fmt;
use std::str::FromStr;

use super::{moves_toward, ClassPolicy, ClassView, Progress, Round, RoundInput, CONFIDENCE_Z};
use crate::spec::{shown, write_spec, Params, SpecError};

/// Accesses between rounds: LAMA §5.4's best repartitioning interval, which this engine's tests also use
/// for LAMA's cap.
const DEFAULT_INTERVAL: u64 = 1_000_000;
/// A quiet server still runs a round after this many seconds, if `MIN_PERIOD_ACCESSES` happened.
const DEFAULT_PERIOD_SECS: u32 = 300;
const MIN_PERIOD_ACCESSES: u64 = 10_000;
/// Pages moved a round at most (LAMA's N = 50 at r = 1, so the two compare move for move).
const DEFAULT_MAX_MOVES: usize = 50;
/// The least planned gain, as a share of the window's predicted misses.
const DEFAULT_THRESHOLD: f64 = 0.01;
/// Miss entropy (bits) below which an application is not re-optimised. On Dynacache's Table 1 every
/// application at 0.49 bits or more was worth optimising (18.6%, 51.1%, 65.2%, 5.0% fewer misses;
/// application 9, 1.55 bits, only for lack of memory) and those at 0.19 or less gained nothing (three
/// of five) or 8-12% (two); 0.3 splits them.
const DEFAULT_MIN_ENTROPY: f64 = 0.3;

/// What eq. 1 maximises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Objective {
    /// `hits`: the paper's `sum f_i h_i(m_i)`, every hit worth one.
    #[default]
    Hits,
    /// `bytes`: each hit weighted by its class's chunk size (bytes the backend need not send).
    Bytes,
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Objective::Hits => "hits",
            Objective::Bytes => "bytes",
        })
    }
}

impl FromStr for Objective {
    type Err = ();
    fn from_str(s: &str) -> Result<Objective, ()> {
        match s {
            "hits" => Ok(Objective::Hits),
            "bytes" => Ok(Objective::Bytes),
            _ => Err(()),
        }
    }
}

/// Which errors a plan's gain must clear before pages move.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Guard {
    /// `noise`: the sampling error of the gain's estimate (`CONFIDENCE_Z` standard errors).
    #[default]
    Noise,
    /// `model`: that, and the curves' own error in the window: the misses they predict at the
    /// allocation that served it against the misses observed, summed over the classes (lama-mr's guard;
    /// the paper's curves come from exact stack distances and need none).
    Model,
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Guard::Noise => "noise",
            Guard::Model => "model",
        })
    }
}

impl FromStr for Guard {
    type Err = ();
    fn from_str(s: &str) -> Result<Guard, ()> {
        match s {
            "noise" => Ok(Guard::Noise),
            "model" => Ok(Guard::Model),
            _ => Err(()),
        }
    }
}

/// `dynacache`'s parameters as given (absent: the defaults above).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DynacacheParams {
    /// `interval=M`: accesses between rounds, at least 1.
    pub interval: Option<u64>,
    /// `period=S`: seconds after which a quiet server runs a round anyway (0: never).
    pub period: Option<u32>,
    /// `moves=N`: pages moved a round at most, at least 1.
    pub moves: Option<usize>,
    /// `threshold=F`: the least gain that moves pages, a share of predicted misses, in [0, 1).
    pub threshold: Option<f64>,
    /// `min_entropy=H`: miss entropy in bits below which the round does nothing, at least 0.
    pub min_entropy: Option<f64>,
    /// `objective=hits|bytes`.
    pub objective: Option<Objective>,
    /// `guard=noise|model`.
    pub guard: Option<Guard>,
}

impl DynacacheParams {
    pub(super) fn parse(p: &mut Params<'_>) -> Result<DynacacheParams, SpecError> {
        let interval: Option<u64> = p.get("interval")?;
        let period = p.get("period")?;
        let moves: Option<usize> = p.get("moves")?;
        let threshold: Option<f64> = p.get("threshold")?;
        let min_entropy: Option<f64> = p.get("min_entropy")?;
        let objective = p.get("objective")?;
        let guard = p.get("guard")?;
        if interval == Some(0) {
            return Err(p.invalid("interval must be at least 1"));
        }
        if moves == Some(0) || !(0.0..1.0).contains(&threshold.unwrap_or(DEFAULT_THRESHOLD)) {
            return Err(p.invalid("need moves >= 1 and 0 <= threshold < 1"));
        }
        let h = min_entropy.unwrap_or(DEFAULT_MIN_ENTROPY);
        if !(h.is_finite() && h >= 0.0) {
            return Err(p.invalid("min_entropy must be a number of bits, at least 0"));
        }
        Ok(DynacacheParams {
            interval,
            period,
            moves,
            threshold,
            min_entropy,
            objective,
            guard,
        })
    }

    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(
            f,
            "dynacache",
            &[
                ("interval", shown(&self.interval)),
                ("period", shown(&self.period)),
                ("moves", shown(&self.moves)),
                ("threshold", shown(&self.threshold)),
                ("min_entropy", shown(&self.min_entropy)),
                ("objective", shown(&self.objective)),
                ("guard", shown(&self.guard)),
            ],
        )
    }

    /// The policy, defaults filled in.
    pub fn build(&self) -> Dynacache {
        Dynacache {
            interval: self.interval.unwrap_or(DEFAULT_INTERVAL),
            period_secs: self.period.unwrap_or(DEFAULT_PERIOD_SECS),
            max_moves: self.moves.unwrap_or(DEFAULT_MAX_MOVES),
            threshold: self.threshold.unwrap_or(DEFAULT_THRESHOLD),
            min_entropy: self.min_entropy.unwrap_or(DEFAULT_MIN_ENTROPY),
            objective: self.objective.unwrap_or_default(),
            guard: self.guard.unwrap_or_default(),
            last_entropy: None,
            rounds_optimised: 0,
            rounds_skipped: 0,
        }
    }
}

/// The Dynacache policy and its state.
#[derive(Clone, Debug)]
pub struct Dynacache {
    interval: u64,
    period_secs: u32,
    max_moves: usize,
    threshold: f64,
    min_entropy: f64,
    objective: Objective,
    guard: Guard,
    last_entropy: Option<f64>,
    rounds_optimised: u64,
    rounds_skipped: u64,
}

impl Dynacache {
    /// The miss entropy of the last round's window (bits), if a round ran on a full cache.
    pub fn last_entropy(&self) -> Option<f64> {
        self.last_entropy
    }

    /// Rounds that solved eq. 1 (entropy at or above `min_entropy`), and rounds skipped below it.
    pub fn rounds(&self) -> (u64, u64) {
        (self.rounds_optimised, self.rounds_skipped)
    }

    /// Whether the window's misses are spread enough to re-optimise (the §4.3 rule).
    pub fn worth_optimising(&self, classes: &[ClassView]) -> bool {
        miss_entropy(classes.iter().map(|c| c.misses)) >= self.min_entropy
    }

    fn weight(&self, c: &ClassView) -> f64 {
        match self.objective {
            Objective::Hits => 1.0,
            Objective::Bytes => c.snapshot.chunk_size_bytes as f64,
        }
    }

    /// The moves of one round on a full cache whose misses are spread enough.
    fn plan(&self, input: &RoundInput<'_>) -> Round {
        let held: Vec<&ClassView> = input.classes.iter().filter(|c| c.pages() > 0).collect();
        let total_pages: usize = held.iter().map(|c| c.pages()).sum();
        if held.len() < 2 || held.iter().all(|c| c.requests == 0) {
            return Round::none();
        }
        let classes: Vec<ConcaveClass> = held
            .iter()
            .map(|c| {
                let current = c.pages();
                match (c.requests, c.trusted_curve()) {
                    // Unused in the window: no hits at any size, so its pages are free to go.
                    (0, _) => ConcaveClass {
                        fit: ConcaveFit::upper_hull(&[0.0]),
                        current_pages: current,
                        min_pages: 0,
                        max_pages: total_pages,
                    },
                    (requests, Some(curve)) => {
                        let w = self.weight(c) * requests as f64;
                        let hits: Vec<f64> = (0..=total_pages.min(curve.len() - 1))
                            .map(|k| w * (1.0 - curve[k]))
                            .collect();
                        ConcaveClass {
                            fit: ConcaveFit::upper_hull(&hits),
                            current_pages: current,
                            min_pages: 1,
                            max_pages: total_pages,
                        }
                    }
                    // No curve to trust: it keeps what it has.
                    (_, None) => ConcaveClass {
                        fit: ConcaveFit::upper_hull(&[0.0]),
                        current_pages: current,
                        min_pages: current,
                        max_pages: current,
                    },
                }
            })
            .collect();
        let current: Vec<usize> = held.iter().map(|c| c.pages()).collect();
        let Ok(target) = maximise(&classes, total_pages) else {
            return Round::none();
        };
        // The plan judged on the curves themselves (the fit spans cliffs with chords no LRU reaches):
        // weighted misses at an allocation, and the variance of a change's sampled estimate.
        let misses_at = |pages: &[usize]| -> f64 {
            held.iter()
                .zip(pages)
                .filter_map(|(c, &k)| {
                    c.trusted_miss_ratio(k)
                        .map(|m| self.weight(c) * m * c.requests as f64)
                })
                .sum()
        };
        let predicted_ratio = |pages: &[usize]| -> Option<f64> {
            let (mut misses, mut requests) = (0.0, 0.0);
            for (c, &k) in held.iter().zip(pages) {
                if let Some(m) = c.trusted_miss_ratio(k) {
                    misses += m * c.requests as f64;
                    requests += c.requests as f64;
                }
            }
            (requests > 0.0).then(|| misses / requests)
        };
        let now = misses_at(&current);
        let gain = now - misses_at(&target);
        let variance: f64 = held
            .iter()
            .zip(current.iter().zip(&target))
            .filter_map(|(c, (&a, &b))| {
                let delta =
                    (c.trusted_miss_ratio(a)? - c.trusted_miss_ratio(b)?).abs() * c.requests as f64;
                Some(self.weight(c).powi(2) * delta / c.curve_sampling_rate)
            })
            .sum();
        let model_error: f64 = match self.guard {
            Guard::Noise => 0.0,
            Guard::Model => held
                .iter()
                .filter_map(|c| {
                    let predicted = c.trusted_miss_ratio(c.pages())? * c.requests as f64;
                    Some(self.weight(c) * (predicted - c.misses as f64).abs())
                })
                .sum(),
        };
        let idle_pages = held.iter().any(|c| c.requests == 0 && c.pages() > 0);
        let worth = gain > 0.0
            && gain >= self.threshold * now
            && gain > CONFIDENCE_Z * variance.sqrt()
            && gain > model_error;
        if !worth && !idle_pages {
            return Round {
                moves: Vec::new(),
                predicted_miss_ratio: predicted_ratio(&current),
            };
        }
        // Without a trusted gain only idle classes' pages move (their loss costs nothing).
        let (moves, after) = moves_toward(&held, &current, &target, self.max_moves, |src| {
            worth || src.requests == 0
        });
        Round {
            moves,
            predicted_miss_ratio: predicted_ratio(&after),
        }
    }
}

impl ClassPolicy for Dynacache {
    fn name(&self) -> &'static str {
        "dynacache"
    }

    fn describe(&self) -> String {
        format!(
            "dynacache:interval={},period={},moves={},threshold={},min_entropy={},objective={},guard={}",
            self.interval,
            self.period_secs,
            self.max_moves,
            self.threshold,
            self.min_entropy,
            self.objective,
            self.guard
        )
    }

    fn due(&self, since: &Progress) -> bool {
        since.accesses >= self.interval
            || (self.period_secs > 0
                && since.seconds >= self.period_secs
                && since.accesses >= MIN_PERIOD_ACCESSES.min(self.interval))
    }

    fn needs_curves(&self) -> bool {
        true
    }

    fn wants_curves(&self, classes: &[ClassView]) -> bool {
        self.worth_optimising(classes)
    }

    fn round(&mut self, input: &RoundInput<'_>) -> Round {
        if input.pages_in_use < input.page_limit {
            return Round::none();
        }
        let entropy = miss_entropy(input.classes.iter().map(|c| c.misses));
        self.last_entropy = Some(entropy);
        if entropy < self.min_entropy {
            self.rounds_skipped += 1;
            return Round::none();
        }
        self.rounds_optimised += 1;
        self.plan(input)
    }
}

#[cfg(test)]
mod tests;
