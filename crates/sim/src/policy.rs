//! The slab policies the simulator runs, by name: every class policy of `mrcache_policy::class` (the
//! very code the server's rebalancer runs), plus two references computed from a first exact pass over
//! the same workload, which are not policies a server could run:
//! - `upper-bound`: LAMA's theoretical upper bound (§5.6), the best *fixed* allocation, replayed with
//!   every class capped at it;
//! - `oracle[:window=N]`: the dynamic oracle, a clairvoyant policy that at the start of every window of
//!   `N` requests (default: the run's `window_requests`) moves pages to that window's best allocation
//!   ([`crate::oracle`]).
//!
//! A spec is read once, here, into a [`SlabPolicy`]; callers keep the value, never the text.

use std::fmt;
use std::str::FromStr;

use mrcache_policy::class::{self, ClassPolicy, ClassPolicySpec};
use mrcache_policy::spec::{shown, write_spec, Params};
use mrcache_policy::{SpecError, SpecKind};

use crate::SimError;

/// The name of the upper bound.
pub const UPPER_BOUND: &str = "upper-bound";
/// The name of the dynamic oracle.
pub const ORACLE: &str = "oracle";

/// What a [`SlabPolicy`] runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SimPolicySpec {
    /// A class policy of `mrcache_policy`, as the server runs it.
    Class(ClassPolicySpec),
    /// The best fixed allocation from the exact curves of a first pass (needs `SimConfig::page_caps`).
    UpperBound,
    /// The dynamic oracle (needs `SimConfig::oracle`).
    Oracle(OracleSpec),
}

/// `oracle[:window=N,horizon=H,past=P]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OracleSpec {
    /// Requests per oracle window; `None`: the run's `window_requests`.
    pub window_requests: Option<u64>,
    /// Windows each allocation is chosen for (the window it serves and those after); `None`:
    /// [`DEFAULT_HORIZON`].
    pub horizon: Option<usize>,
    /// The online oracle: each allocation is chosen from the exact curves of this many windows
    /// before it, none after ([`crate::WindowCurves::schedule_from_past`]); `None`: clairvoyant.
    pub past: Option<usize>,
}

/// Windows an oracle allocation is chosen for when the spec does not say.
pub const DEFAULT_HORIZON: usize = 4;

impl OracleSpec {
    /// The window it plans over, in a run reporting windows of `run_window_requests`.
    pub fn window(&self, run_window_requests: u64) -> u64 {
        self.window_requests.unwrap_or(run_window_requests)
    }

    /// Windows each allocation is chosen for.
    pub fn horizon(&self) -> usize {
        self.horizon.unwrap_or(DEFAULT_HORIZON)
    }

    /// Reads `oracle[:window=N,horizon=H,past=P]` with the policy crate's spec syntax and errors.
    fn parse(spec: &str) -> Result<OracleSpec, SpecError> {
        let mut params = Params::parse(SpecKind::SlabPolicy, spec)?;
        let spec = OracleSpec {
            window_requests: params.get("window")?,
            horizon: params.get("horizon")?,
            past: params.get("past")?,
        };
        if spec.past == Some(0) {
            return Err(params.invalid("`past` must be at least 1 window"));
        }
        if spec.window_requests == Some(0) {
            return Err(params.invalid("`window` must be at least 1 request"));
        }
        if spec.horizon == Some(0) {
            return Err(params.invalid("`horizon` must be at least 1 window"));
        }
        params.finish()?;
        Ok(spec)
    }
}

impl fmt::Display for SimPolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimPolicySpec::Class(spec) => write!(f, "{spec}"),
            SimPolicySpec::UpperBound => f.write_str(UPPER_BOUND),
            SimPolicySpec::Oracle(o) => write_spec(
                f,
                ORACLE,
                &[
                    ("window", shown(&o.window_requests)),
                    ("horizon", shown(&o.horizon)),
                    ("past", shown(&o.past)),
                ],
            ),
        }
    }
}

/// A validated policy spec (`NAME[:key=value,...]`, the upper bound or the oracle); each run builds a
/// fresh policy from it.
#[derive(Clone, Debug, PartialEq)]
pub struct SlabPolicy {
    /// The spec as given, which reports show.
    label: String,
    spec: SimPolicySpec,
}

impl SlabPolicy {
    /// Names `--policy` accepts.
    pub fn names() -> Vec<&'static str> {
        let mut names = class::NAMES.to_vec();
        names.push(UPPER_BOUND);
        names.push(ORACLE);
        names
    }

    /// Reads `spec`: [`UPPER_BOUND`], `oracle[:window=N]` or a class policy spec.
    pub fn by_name(spec: &str) -> Result<SlabPolicy, SimError> {
        let text = spec.trim();
        let (name, params) = text.split_once(':').unwrap_or((text, ""));
        let parsed = match name.trim() {
            UPPER_BOUND if params.trim().is_empty() => SimPolicySpec::UpperBound,
            UPPER_BOUND => {
                return Err(SimError::Policy(format!(
                    "slab policy `{UPPER_BOUND}` takes no parameters (`{spec}`); the dynamic \
                     bound is `{ORACLE}[:window=N]`"
                )))
            }
            ORACLE => SimPolicySpec::Oracle(
                OracleSpec::parse(text).map_err(|e| SimError::Policy(e.to_string()))?,
            ),
            _ => SimPolicySpec::Class(
                text.parse::<ClassPolicySpec>()
                    .map_err(|e| SimError::Policy(e.to_string()))?,
            ),
        };
        Ok(SlabPolicy {
            label: spec.to_string(),
            spec: parsed,
        })
    }

    /// memcached's demand filling, no moves.
    pub fn memcached() -> SlabPolicy {
        SlabPolicy::of(SimPolicySpec::Class(ClassPolicySpec::Memcached))
    }

    /// The policy `spec` describes, labelled with its canonical text.
    pub fn of(spec: SimPolicySpec) -> SlabPolicy {
        SlabPolicy {
            label: spec.to_string(),
            spec,
        }
    }

    /// The spec as given (`lama-mr:interval=1000000`).
    pub fn name(&self) -> &str {
        &self.label
    }

    /// What it runs.
    pub fn spec(&self) -> SimPolicySpec {
        self.spec
    }

    /// Whether this is the upper bound (a fixed allocation from a first pass).
    pub fn is_upper_bound(&self) -> bool {
        self.spec == SimPolicySpec::UpperBound
    }

    /// The dynamic oracle's spec, if this is the oracle.
    pub fn oracle(&self) -> Option<OracleSpec> {
        match self.spec {
            SimPolicySpec::Oracle(o) => Some(o),
            _ => None,
        }
    }

    /// Whether a first exact pass must precede the run (the upper bound and the oracle).
    pub fn needs_profile(&self) -> bool {
        !matches!(self.spec, SimPolicySpec::Class(_))
    }

    /// A fresh policy. The upper bound replays with no moves of its own (its allocation is fixed); the
    /// oracle's policy is built by the simulator from its schedule, and this is its stand-in until then.
    pub(crate) fn build(&self) -> Box<dyn ClassPolicy> {
        match self.spec {
            SimPolicySpec::Class(spec) => spec.build(),
            SimPolicySpec::UpperBound | SimPolicySpec::Oracle(_) => Box::new(class::Demand),
        }
    }
}

impl FromStr for SlabPolicy {
    type Err = SimError;

    fn from_str(spec: &str) -> Result<SlabPolicy, SimError> {
        SlabPolicy::by_name(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_once_and_name_bad_parts() {
        let o = SlabPolicy::by_name("oracle").unwrap();
        assert_eq!(o.oracle(), Some(OracleSpec::default()));
        assert_eq!(o.oracle().unwrap().window(500_000), 500_000);
        let o = SlabPolicy::by_name("oracle:window=100000").unwrap();
        assert_eq!(o.oracle().unwrap().window(500_000), 100_000);
        assert_eq!(o.spec().to_string(), "oracle:window=100000");
        assert!(o.needs_profile());
        assert!(SlabPolicy::by_name("upper-bound").unwrap().is_upper_bound());
        assert!(!SlabPolicy::by_name("lama-mr").unwrap().needs_profile());
        let err = |s: &str| SlabPolicy::by_name(s).unwrap_err().to_string();
        assert!(err("oracle:window=0").contains("window"));
        assert!(err("oracle:windows=5").contains("windows"));
        assert!(err("oracle:window").contains("key=value"));
        assert!(err("upper-bound:dynamic").contains("oracle"));
        assert!(err("lama").contains("lama"));
    }
}
