//! The baselines LAMA is measured against (LAMA §2.1), each as memcached, Twemcache, Carra et al. and
//! Facebook describe them, and memcached's own automove modes.
//!
//! They balance something other than misses: eviction rates (`automove2`, `psa`), tail ages
//! (`automove`, `facebook`), or nothing at all (`memcached`, `twemcache`'s random pages). Each moves at
//! most one page a round, as the originals do.

use std::fmt;

use super::automove::{Automove, Move, DEFAULT_RATIO, DEFAULT_WINDOW};
use mrcache_engine::ClassSnapshot;

use super::{ClassPolicy, ClassView, Progress, Round, RoundInput};
use crate::spec::{shown, write_spec, Params, SpecError};

/// memcached's demand filling with no moves (`slab_automove=0`).
pub struct Demand;

impl ClassPolicy for Demand {
    fn name(&self) -> &'static str {
        "memcached"
    }
    fn describe(&self) -> String {
        "memcached".into()
    }
    fn due(&self, _: &Progress) -> bool {
        false
    }
    fn has_rounds(&self) -> bool {
        false
    }
    fn round(&mut self, _: &RoundInput<'_>) -> Round {
        Round::none()
    }
}

/// `automove`'s parameters as given (absent: memcached's defaults).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AutomoveParams {
    /// `window=N`: samples (seconds) per class, at least 1.
    pub window: Option<usize>,
    /// `ratio=F`: in (0, 1].
    pub ratio: Option<f64>,
}

impl AutomoveParams {
    pub(super) fn parse(p: &mut Params<'_>) -> Result<AutomoveParams, SpecError> {
        let params = AutomoveParams {
            window: p.get("window")?,
            ratio: p.get("ratio")?,
        };
        let policy = params.build();
        if policy.window == 0 || !(policy.ratio > 0.0 && policy.ratio <= 1.0) {
            return Err(p.invalid("window must be at least 1, ratio in (0, 1]"));
        }
        Ok(params)
    }

    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(
            f,
            "automove",
            &[
                ("window", shown(&self.window)),
                ("ratio", shown(&self.ratio)),
            ],
        )
    }

    /// The policy, defaults filled in.
    pub fn build(&self) -> MemcachedAutomove {
        MemcachedAutomove::new(
            self.window.unwrap_or(DEFAULT_WINDOW),
            self.ratio.unwrap_or(DEFAULT_RATIO),
        )
    }
}

/// memcached 1.6's age balancer (`slab_automove=1`), once a second: `super::automove`.
pub struct MemcachedAutomove {
    automove: Automove,
    window: usize,
    ratio: f64,
}

impl MemcachedAutomove {
    /// memcached's mover over `window` samples per class, moving when the youngest tail is below
    /// `ratio` of the oldest.
    pub fn new(window: usize, ratio: f64) -> MemcachedAutomove {
        MemcachedAutomove {
            automove: Automove::new(window, ratio),
            window,
            ratio,
        }
    }

    /// `slabs automove ratio F` changes it live.
    pub fn set_ratio(&mut self, ratio: f64) {
        self.ratio = ratio;
        self.automove.set_ratio(ratio);
    }
}

impl ClassPolicy for MemcachedAutomove {
    fn name(&self) -> &'static str {
        "automove"
    }
    fn describe(&self) -> String {
        format!("automove:window={},ratio={}", self.window, self.ratio)
    }
    fn due(&self, since: &Progress) -> bool {
        since.seconds >= 1
    }
    fn round(&mut self, input: &RoundInput<'_>) -> Round {
        let snapshots: Vec<ClassSnapshot> =
            input.classes.iter().map(|c| c.snapshot.clone()).collect();
        match self.automove.tick(&snapshots) {
            Some(Move { src, dst }) => Round::one(src, dst),
            None => Round::none(),
        }
    }
}

/// memcached's `slab_automove=2`: once a second, a page toward every class that evicted, each taken
/// round-robin from any class with a page to spare.
#[derive(Default)]
pub struct Automove2 {
    cursor: usize,
}

impl ClassPolicy for Automove2 {
    fn name(&self) -> &'static str {
        "automove2"
    }
    fn describe(&self) -> String {
        "automove2".into()
    }
    fn due(&self, since: &Progress) -> bool {
        since.seconds >= 1
    }
    fn round(&mut self, input: &RoundInput<'_>) -> Round {
        let snapshots: Vec<ClassSnapshot> =
            input.classes.iter().map(|c| c.snapshot.clone()).collect();
        let mut round = Round::none();
        for (i, c) in input.classes.iter().enumerate() {
            if c.evictions == 0 {
                continue;
            }
            if let Some(src) = pick_any_source(&snapshots, i, &mut self.cursor) {
                round
                    .moves
                    .extend(Round::one(snapshots[src].class, Some(c.snapshot.class)).moves);
            }
        }
        round
    }
}

/// memcached's `slabs_reassign_pick_any`: the next class after `cursor`, round-robin, that has more than
/// one page and is not `dst`.
pub fn pick_any_source(classes: &[ClassSnapshot], dst: usize, cursor: &mut usize) -> Option<usize> {
    let n = classes.len();
    for step in 1..=n {
        let i = (*cursor + step) % n;
        if i != dst && classes[i].total_pages > 1 {
            *cursor = i;
            return Some(i);
        }
    }
    None
}

/// Twemcache's random slab eviction: no rounds; the engine empties a random page whenever a class needs
/// one and memory is full.
pub struct Twemcache;

impl ClassPolicy for Twemcache {
    fn name(&self) -> &'static str {
        "twemcache"
    }
    fn describe(&self) -> String {
        "twemcache".into()
    }
    fn due(&self, _: &Progress) -> bool {
        false
    }
    fn has_rounds(&self) -> bool {
        false
    }
    fn random_page_eviction(&self) -> bool {
        true
    }
    fn round(&mut self, _: &RoundInput<'_>) -> Round {
        Round::none()
    }
}

/// Pages a source keeps (memcached's rule: a class with one page has none to spare).
const MIN_SOURCE_PAGES: usize = 2;

/// Default misses between rounds of PSA and Facebook: frequent single-page steps, as LAMA ran PSA at 50
/// times its own frequency.
const DEFAULT_MISSES_PER_ROUND: u64 = 1_000;

/// Periodic slab allocation (Carra et al., LAMA §2.1): every M misses, one page from the class with the
/// lowest risk (requests per page in the window) to the class with the most misses.
pub struct Psa {
    misses_per_round: u64,
}

impl Psa {
    /// A round every `misses_per_round` misses (at least 1).
    pub fn new(misses_per_round: u64) -> Psa {
        Psa {
            misses_per_round: misses_per_round.max(1),
        }
    }
}

/// `psa`'s parameters as given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsaParams {
    /// `misses=M`: misses between rounds.
    pub misses: Option<u64>,
}

impl PsaParams {
    pub(super) fn parse(p: &mut Params<'_>) -> Result<PsaParams, SpecError> {
        Ok(PsaParams {
            misses: p.get("misses")?,
        })
    }

    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(f, "psa", &[("misses", shown(&self.misses))])
    }

    /// The policy, defaults filled in.
    pub fn build(&self) -> Psa {
        Psa::new(self.misses.unwrap_or(DEFAULT_MISSES_PER_ROUND))
    }
}

/// PSA's risk of taking a page from a class: its requests per page.
pub(crate) fn risk(c: &ClassView) -> f64 {
    c.requests as f64 / c.pages().max(1) as f64
}

impl ClassPolicy for Psa {
    fn name(&self) -> &'static str {
        "psa"
    }
    fn describe(&self) -> String {
        format!("psa:misses={}", self.misses_per_round)
    }
    fn due(&self, since: &Progress) -> bool {
        since.misses >= self.misses_per_round
    }
    fn round(&mut self, input: &RoundInput<'_>) -> Round {
        let Some(dst) = input
            .classes
            .iter()
            .filter(|c| c.misses > 0)
            .max_by_key(|c| c.misses)
        else {
            return Round::none();
        };
        let src = input
            .classes
            .iter()
            .filter(|c| c.pages() >= MIN_SOURCE_PAGES && c.snapshot.class != dst.snapshot.class)
            .min_by(|a, b| risk(a).total_cmp(&risk(b)));
        match src {
            Some(src) => Round::one(src.snapshot.class, Some(dst.snapshot.class)),
            None => Round::none(),
        }
    }
}

/// Facebook's age balancing (Nishtala et al., LAMA §2.1): a class that is evicting, and whose next victim
/// was used at least 20% more recently than the average LRU tail of the other classes, needs memory; it
/// gets a page of the class holding the globally least recently used item.
pub struct Facebook {
    misses_per_round: u64,
    /// 1.2: "at least 20% more recently".
    ratio: f64,
}

impl Facebook {
    /// A round every `misses_per_round` misses (at least 1); a tail `ratio` times younger than the
    /// others' mean is needy.
    pub fn new(misses_per_round: u64, ratio: f64) -> Facebook {
        Facebook {
            misses_per_round: misses_per_round.max(1),
            ratio,
        }
    }
}

/// Facebook's "at least 20% more recently".
const DEFAULT_FACEBOOK_RATIO: f64 = 1.2;

/// `facebook`'s parameters as given.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FacebookParams {
    /// `misses=M`: misses between rounds.
    pub misses: Option<u64>,
    /// `ratio=F`: how much younger than the others' mean a needy tail is, at least 1.
    pub ratio: Option<f64>,
}

impl FacebookParams {
    pub(super) fn parse(p: &mut Params<'_>) -> Result<FacebookParams, SpecError> {
        let ratio: Option<f64> = p.get("ratio")?;
        if ratio.unwrap_or(DEFAULT_FACEBOOK_RATIO) < 1.0 {
            return Err(p.invalid("ratio must be at least 1"));
        }
        Ok(FacebookParams {
            misses: p.get("misses")?,
            ratio,
        })
    }

    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(
            f,
            "facebook",
            &[
                ("misses", shown(&self.misses)),
                ("ratio", shown(&self.ratio)),
            ],
        )
    }

    /// The policy, defaults filled in.
    pub fn build(&self) -> Facebook {
        Facebook::new(
            self.misses.unwrap_or(DEFAULT_MISSES_PER_ROUND),
            self.ratio.unwrap_or(DEFAULT_FACEBOOK_RATIO),
        )
    }
}

impl ClassPolicy for Facebook {
    fn name(&self) -> &'static str {
        "facebook"
    }
    fn describe(&self) -> String {
        format!(
            "facebook:misses={},ratio={}",
            self.misses_per_round, self.ratio
        )
    }
    fn due(&self, since: &Progress) -> bool {
        since.misses >= self.misses_per_round
    }
    fn round(&mut self, input: &RoundInput<'_>) -> Round {
        let holding: Vec<&ClassView> = input
            .classes
            .iter()
            .filter(|c| c.snapshot.items > 0)
            .collect();
        let age = |c: &ClassView| c.snapshot.tail_age_secs as f64;
        let total_age: f64 = holding.iter().map(|c| age(c)).sum();
        // The neediest evicting class: the youngest tail, if young enough against the others' mean.
        let needy = holding
            .iter()
            .filter(|c| c.evictions > 0 && holding.len() > 1)
            .filter(|c| {
                let others = (total_age - age(c)) / (holding.len() - 1) as f64;
                age(c) * self.ratio <= others
            })
            .min_by(|a, b| age(a).total_cmp(&age(b)));
        let Some(needy) = needy else {
            return Round::none();
        };
        let victim = holding
            .iter()
            .filter(|c| c.pages() >= MIN_SOURCE_PAGES && c.snapshot.class != needy.snapshot.class)
            .max_by(|a, b| age(a).total_cmp(&age(b)));
        match victim {
            Some(v) => Round::one(v.snapshot.class, Some(needy.snapshot.class)),
            None => Round::none(),
        }
    }
}
