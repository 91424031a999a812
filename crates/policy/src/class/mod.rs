//! Slab-class policies: who gets the next page, decided from the engine's counters and, for LAMA, from
//! every class's miss-ratio curve. All of them sit behind one trait and are chosen by a spec at run time
//! (`--slab-policy` in the server, `--policy` in the simulator):
//!
//! | name        | what it does                                                             | source       |
//! |-------------|--------------------------------------------------------------------------|--------------|
//! | `memcached` | demand-filled pages, never moved (`slab_automove=0`)                     | memcached    |
//! | `automove`  | memcached 1.6's age balancer, once a second (`slab_automove=1`)          | memcached    |
//! | `automove2` | a page toward every class that evicted, once a second (`slab_automove=2`)| memcached    |
//! | `twemcache` | a full class empties a random page of any class and takes it             | LAMA §2.1    |
//! | `psa`       | every M misses, one page from the lowest-risk class to the most-missing  | LAMA §2.1    |
//! | `facebook`  | age balancing: a page from the globally oldest tail to a young evictor   | LAMA §2.1    |
//! | `lama-mr`   | LAMA Algorithm 1 over the curves, minimising misses (OPT_MR)            | LAMA §3      |
//! | `lama-art`  | the same, minimising average response time (OPT_ART)                     | LAMA §3.3    |
//! | `dynacache` | eq. 1 over concave fits of the hit curves, when the miss entropy is high | Dynacache §4 |
//!
//! A policy is a function of what it is shown: no engine, no clock, no I/O. [`crate::rebalance`] feeds
//! it (counters since its last round, curves of that window) and carries out the page moves it returns.
//! Parameters follow the name: `psa:misses=2000`, `lama-mr:interval=auto,moves=50,threshold=0.01`,
//! `dynacache:interval=1000000,min_entropy=0.3`;
//! an unknown parameter is an error that names it. A spec is read once into a [`ClassPolicySpec`]
//! (`FromStr`), which holds the parameters given and builds the policy without failing.

pub mod automove;
pub mod dynacache;
mod heuristics;
mod lama;

pub use dynacache::{miss_entropy, Dynacache, DynacacheParams, Guard, Objective};
pub use heuristics::{
    pick_any_source, Automove2, AutomoveParams, Demand, Facebook, FacebookParams,
    MemcachedAutomove, Psa, PsaParams, Twemcache,
};
pub use lama::{Interval, Lama, LamaParams, LamaTarget, ResponseTimeModel, ResponseTimeParams};

use std::fmt;
use std::str::FromStr;

use mrcache_engine::{ClassId, ClassSnapshot};

use crate::optimizer::plan_moves_ranked;
use crate::spec::{Params, SpecError, SpecKind};
use heuristics::risk;

/// One class as a policy sees it at a round.
#[derive(Clone, Debug)]
pub struct ClassView {
    /// The class now: pages, items, tail age, cumulative counters.
    pub snapshot: ClassSnapshot,
    /// Uses since the last round: hits plus stores of absent keys (a lookaside miss and its fill are one
    /// use, as the curves count them).
    pub requests: u64,
    /// Misses since the last round, counted as stores of absent keys (a GET miss has no class).
    pub misses: u64,
    /// Items evicted since the last round.
    pub evictions: u64,
    /// The window's miss ratio at every page count `0..=page_limit`, for policies that ask for curves,
    /// when the class is profiled.
    pub miss_ratio_by_pages: Option<Vec<f64>>,
    /// The share of the class's accesses its profiler samples (1 when unsampled or without a curve):
    /// the curve's sampling error is that of `requests * curve_sampling_rate` sampled accesses.
    pub curve_sampling_rate: f64,
}

/// Sampled accesses a class's window needs before a curve policy (LAMA, Dynacache) uses its curve at
/// all. A sanity floor only: a stricter one froze ETC's many small classes under LAMA (their pages cost
/// few misses, and the confidence penalty already weighs their noise), losing 2-12 points of miss ratio
/// at 64-128 MiB.
const MIN_CURVE_SAMPLES: f64 = 20.0;
/// Standard errors by which a curve policy's planned gain must clear sampling noise.
const CONFIDENCE_Z: f64 = 2.0;

impl ClassView {
    /// Pages the class holds now.
    pub fn pages(&self) -> usize {
        self.snapshot.total_pages
    }

    /// Its window's curve, if the window sampled enough accesses (`MIN_CURVE_SAMPLES`) to trust it.
    pub fn trusted_curve(&self) -> Option<&[f64]> {
        let curve = self
            .miss_ratio_by_pages
            .as_deref()
            .filter(|c| !c.is_empty())?;
        (self.requests as f64 * self.curve_sampling_rate >= MIN_CURVE_SAMPLES).then_some(curve)
    }

    /// The trusted curve's miss ratio at `pages` (its last point beyond its end).
    pub fn trusted_miss_ratio(&self, pages: usize) -> Option<f64> {
        self.trusted_curve()
            .map(|curve| curve[pages.min(curve.len() - 1)])
    }
}

/// A curve policy's page moves from `current` toward `target` (both indexed like `held`): at most
/// `max_pages`, taken first from the classes of lowest PSA risk (as LAMA §3.4 chooses its victims),
/// each named [`MoveRule::Idle`] when its source was unused in the window, else [`MoveRule::Curve`].
/// Only the moves whose source `keep` accepts are made. Returns them and the allocation they leave.
fn moves_toward(
    held: &[&ClassView],
    current: &[usize],
    target: &[usize],
    max_pages: usize,
    keep: impl Fn(&ClassView) -> bool,
) -> (Vec<ClassMove>, Vec<usize>) {
    let risks: Vec<f64> = held.iter().map(|c| risk(c)).collect();
    let mut after = current.to_vec();
    let mut moves = Vec::new();
    for m in plan_moves_ranked(current, target, max_pages, &risks) {
        let src = held[m.src];
        if !keep(src) {
            continue;
        }
        after[m.src] -= m.pages;
        after[m.dst] += m.pages;
        moves.push(ClassMove {
            src: src.snapshot.class,
            dst: Some(held[m.dst].snapshot.class),
            pages: m.pages,
            rule: if src.requests == 0 {
                MoveRule::Idle
            } else {
                MoveRule::Curve
            },
        });
    }
    (moves, after)
}

/// Everything a round decides from.
#[derive(Clone, Copy, Debug)]
pub struct RoundInput<'a> {
    /// Every class of the geometry, in class order.
    pub classes: &'a [ClassView],
    /// Pages `-m` allows.
    pub page_limit: usize,
    /// Pages the classes hold now.
    pub pages_in_use: usize,
    /// Bytes of a page.
    pub page_size_bytes: usize,
}

/// How far the cache has gone since a policy's last round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Accesses (hits plus stores of absent keys).
    pub accesses: u64,
    /// Misses (stores of absent keys).
    pub misses: u64,
    /// Whole seconds of clock.
    pub seconds: u32,
}

/// Which rule of a policy made a move (the rebalancer counts pages by rule; `stats` shows them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MoveRule {
    /// A counter-driven heuristic: the baselines' ages, evictions and misses.
    Heuristic,
    /// LAMA's optimisation over trusted miss-ratio curves.
    Curve,
    /// Pages of a class unused for a whole window, given to where the curves say they save most.
    Idle,
    /// PSA's risk move, where the curves are too noisy to decide: a page from the class with the
    /// fewest requests per page to the class with the most misses.
    Risk,
}

impl MoveRule {
    /// Every rule, in the order `stats` lists them.
    pub const ALL: [MoveRule; 4] = [
        MoveRule::Heuristic,
        MoveRule::Curve,
        MoveRule::Idle,
        MoveRule::Risk,
    ];

    /// Its name in `stats` (`slab_policy_moves_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            MoveRule::Heuristic => "heuristic",
            MoveRule::Curve => "curve",
            MoveRule::Idle => "idle",
            MoveRule::Risk => "risk",
        }
    }

    /// Its index in [`MoveRule::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One page move a policy asks for: `pages` pages from `src` to `dst` (`None`: back to the free pool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassMove {
    /// The class that gives the pages.
    pub src: ClassId,
    /// The class that takes them; `None`: the free pool.
    pub dst: Option<ClassId>,
    /// How many.
    pub pages: usize,
    /// The rule that asked for them.
    pub rule: MoveRule,
}

/// What a round decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Round {
    /// The page moves, in the order to make them.
    pub moves: Vec<ClassMove>,
    /// The miss ratio the policy expects in the next window from the allocation it asks for (curve-driven
    /// policies only).
    pub predicted_miss_ratio: Option<f64>,
}

impl Round {
    /// No moves.
    pub fn none() -> Round {
        Round::default()
    }

    /// One page from `src` to `dst`.
    pub fn one(src: ClassId, dst: Option<ClassId>) -> Round {
        Round {
            moves: vec![ClassMove {
                src,
                dst,
                pages: 1,
                rule: MoveRule::Heuristic,
            }],
            predicted_miss_ratio: None,
        }
    }
}

/// A slab-class allocation policy.
pub trait ClassPolicy: Send {
    /// The name it is selected by.
    fn name(&self) -> &'static str;
    /// Its parameters, as `name:key=value,...` (what `--print-config` and `stats settings` show).
    fn describe(&self) -> String;
    /// Whether a round is due, given the progress since the last one.
    fn due(&self, since: &Progress) -> bool;
    /// Whether rounds need each class's curve (costly: only LAMA asks).
    fn needs_curves(&self) -> bool {
        false
    }
    /// Whether its window curves continue the reuse-time tail past the window's horizon (an estimate
    /// of the reuses the cache's history is too short to show, `ReuseTimeHistogram::as_observed`).
    /// Only a policy that judges its moves by their outcome should act on that estimate: lama-mr
    /// does; Dynacache takes the curves as measured (its paper fits them, with no outcome check).
    fn continues_tails(&self) -> bool {
        false
    }
    /// Whether its curve moves ([`MoveRule::Curve`] to a class) wait until the receiving class needs the
    /// page (the rebalancer grants them, and the engine moves each page at the receiver's store that
    /// would otherwise evict), rather than being made at once. A page made at once costs the
    /// donor its coldest page-worth of items now, while the receiver gains only as its misses fill the
    /// page, which for a class of small items can take several windows. Paced, the donor keeps its
    /// items until the receiver would evict to make room, and a move the receiver never needs is
    /// never made. Heuristic, risk and idle moves are always made at once.
    fn paces_moves(&self) -> bool {
        false
    }
    /// Whether this round's window is worth its curves, given the classes' counters (asked only of
    /// policies that need curves; Dynacache declines for applications whose misses are not spread).
    fn wants_curves(&self, _classes: &[ClassView]) -> bool {
        true
    }
    /// Whether the engine should evict whole random pages instead of LRU tails (Twemcache).
    fn random_page_eviction(&self) -> bool {
        false
    }
    /// Whether it ever has a round (demand filling and Twemcache never do): a driver skips reading the
    /// engine for policies that do not.
    fn has_rounds(&self) -> bool {
        true
    }
    /// One round: the moves to make now.
    fn round(&mut self, input: &RoundInput<'_>) -> Round;
}

impl std::fmt::Debug for dyn ClassPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The class policy mrcached runs in the slab layout when neither `--slab-policy` nor
/// `-o slab_automove` is given, and `mrcache sim` when `--policy` is not: LAMA minimising misses (pages
/// go where the classes' curves say they save the most).
pub const DEFAULT_SLAB_POLICY: ClassPolicySpec = ClassPolicySpec::LamaMr(LamaParams {
    interval: None,
    min_interval: None,
    max_interval: None,
    period: None,
    moves: None,
    granularity: None,
    threshold: None,
    pace: None,
});

/// Names a [`ClassPolicySpec`] may have.
pub const NAMES: &[&str] = &[
    "memcached",
    "automove",
    "automove2",
    "twemcache",
    "psa",
    "facebook",
    "lama-mr",
    "lama-art",
    "dynacache",
];

/// A class policy and the parameters its spec gave, read once from `NAME[:key=value,...]` (`FromStr`,
/// serde) and valid by construction: [`ClassPolicySpec::build`] cannot fail. Printing it writes the name
/// and the parameters given, in the policy's order, which parses back to the same spec; the policy's own
/// `describe()` adds every default.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ClassPolicySpec {
    /// `memcached`: demand filling, no moves.
    Memcached,
    /// `automove[:window=N,ratio=F]`: memcached's age balancer.
    Automove(AutomoveParams),
    /// `automove2`: a page toward every evicting class.
    Automove2,
    /// `twemcache`: random page eviction.
    Twemcache,
    /// `psa[:misses=M]`.
    Psa(PsaParams),
    /// `facebook[:misses=M,ratio=F]`.
    Facebook(FacebookParams),
    /// `lama-mr[:...]`: LAMA minimising misses.
    LamaMr(LamaParams),
    /// `lama-art[:...]`: LAMA minimising average response time.
    LamaArt(LamaParams, ResponseTimeParams),
    /// `dynacache[:...]`: Dynacache's eq. 1 for applications with spread misses.
    Dynacache(DynacacheParams),
}

impl ClassPolicySpec {
    /// The policy memcached's `slab_automove` mode runs: 0 none (`memcached`), 2 `automove2`, else
    /// `automove` with this window and ratio.
    pub fn automove_mode(mode: u32, window: usize, ratio: f64) -> ClassPolicySpec {
        match mode {
            0 => ClassPolicySpec::Memcached,
            2 => ClassPolicySpec::Automove2,
            _ => ClassPolicySpec::Automove(AutomoveParams {
                window: Some(window),
                ratio: Some(ratio),
            }),
        }
    }

    /// The name it is selected by (one of [`NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            ClassPolicySpec::Memcached => "memcached",
            ClassPolicySpec::Automove(_) => "automove",
            ClassPolicySpec::Automove2 => "automove2",
            ClassPolicySpec::Twemcache => "twemcache",
            ClassPolicySpec::Psa(_) => "psa",
            ClassPolicySpec::Facebook(_) => "facebook",
            ClassPolicySpec::LamaMr(_) => "lama-mr",
            ClassPolicySpec::LamaArt(..) => "lama-art",
            ClassPolicySpec::Dynacache(_) => "dynacache",
        }
    }

    /// A fresh policy with these parameters (defaults for those not given).
    pub fn build(&self) -> Box<dyn ClassPolicy> {
        match self {
            ClassPolicySpec::Memcached => Box::new(Demand),
            ClassPolicySpec::Automove(p) => Box::new(p.build()),
            ClassPolicySpec::Automove2 => Box::new(Automove2::default()),
            ClassPolicySpec::Twemcache => Box::new(Twemcache),
            ClassPolicySpec::Psa(p) => Box::new(p.build()),
            ClassPolicySpec::Facebook(p) => Box::new(p.build()),
            ClassPolicySpec::LamaMr(p) => Box::new(p.build(LamaTarget::MissRatio)),
            ClassPolicySpec::LamaArt(p, model) => {
                Box::new(p.build(LamaTarget::ResponseTime(model.build())))
            }
            ClassPolicySpec::Dynacache(p) => Box::new(p.build()),
        }
    }
}

impl FromStr for ClassPolicySpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<ClassPolicySpec, SpecError> {
        let mut p = Params::parse(SpecKind::SlabPolicy, spec)?;
        let parsed = match p.name {
            "memcached" => ClassPolicySpec::Memcached,
            "automove" => ClassPolicySpec::Automove(AutomoveParams::parse(&mut p)?),
            "automove2" => ClassPolicySpec::Automove2,
            "twemcache" => ClassPolicySpec::Twemcache,
            "psa" => ClassPolicySpec::Psa(PsaParams::parse(&mut p)?),
            "facebook" => ClassPolicySpec::Facebook(FacebookParams::parse(&mut p)?),
            "lama-mr" => ClassPolicySpec::LamaMr(LamaParams::parse(&mut p)?),
            "lama-art" => {
                let lama = LamaParams::parse(&mut p)?;
                ClassPolicySpec::LamaArt(lama, ResponseTimeParams::parse(&mut p)?)
            }
            "dynacache" => ClassPolicySpec::Dynacache(DynacacheParams::parse(&mut p)?),
            _ => return Err(p.unknown(NAMES)),
        };
        p.finish()?;
        Ok(parsed)
    }
}

impl fmt::Display for ClassPolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClassPolicySpec::Automove(p) => p.write(f),
            ClassPolicySpec::Psa(p) => p.write(f),
            ClassPolicySpec::Facebook(p) => p.write(f),
            ClassPolicySpec::LamaMr(p) => p.write(f, self.name(), None),
            ClassPolicySpec::LamaArt(p, model) => p.write(f, self.name(), Some(model)),
            ClassPolicySpec::Dynacache(p) => p.write(f),
            ClassPolicySpec::Memcached
            | ClassPolicySpec::Automove2
            | ClassPolicySpec::Twemcache => f.write_str(self.name()),
        }
    }
}

impl serde::Serialize for ClassPolicySpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ClassPolicySpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The policy `spec` names, parsed and built: the tests' shorthand.
#[cfg(test)]
pub(crate) fn by_name(spec: &str) -> Result<Box<dyn ClassPolicy>, SpecError> {
    Ok(spec.parse::<ClassPolicySpec>()?.build())
}

#[cfg(test)]
mod tests;
