//! The slab policies the simulator runs, by name: every class policy of `mrcache_policy::class` (the
//! very code the server's rebalancer runs), plus LAMA's theoretical upper bound (§5.6), which is not a
//! policy but a fixed allocation computed from a first pass over the same workload.

use mrcache_policy::class::{self, ClassPolicy};

use crate::SimError;

/// The name of the upper bound.
pub const UPPER_BOUND: &str = "upper-bound";

/// A validated policy spec (`NAME[:key=value,...]`); each run builds a fresh policy from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlabPolicy {
    spec: String,
}

impl SlabPolicy {
    /// Names `--policy` accepts.
    pub fn names() -> Vec<&'static str> {
        let mut names = class::NAMES.to_vec();
        names.push(UPPER_BOUND);
        names
    }

    /// Validates `spec`: a class policy of `mrcache_policy::class` with its parameters, or
    /// `upper-bound`.
    pub fn by_name(spec: &str) -> Result<SlabPolicy, SimError> {
        if spec != UPPER_BOUND {
            class::by_name(spec).map_err(SimError::Policy)?;
        }
        Ok(SlabPolicy {
            spec: spec.to_string(),
        })
    }

    /// memcached's demand filling, no moves.
    pub fn memcached() -> SlabPolicy {
        SlabPolicy {
            spec: "memcached".into(),
        }
    }

    /// The spec as given (`lama-mr:interval=1000000`).
    pub fn name(&self) -> &str {
        &self.spec
    }

    /// Whether this is the upper bound (a fixed allocation from a first pass).
    pub fn is_upper_bound(&self) -> bool {
        self.spec == UPPER_BOUND
    }

    /// A fresh policy; the upper bound replays with no moves of its own (its allocation is fixed).
    pub(crate) fn build(&self) -> Box<dyn ClassPolicy> {
        if self.is_upper_bound() {
            return Box::new(class::Demand);
        }
        class::by_name(&self.spec).expect("validated by by_name")
    }
}
