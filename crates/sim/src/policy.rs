//! The slab policies the simulator runs, by name: every class policy of `mrcache_policy::class` (the
//! very code the server's rebalancer runs), plus LAMA's theoretical upper bound (§5.6), which is not a
//! policy but a fixed allocation computed from a first pass over the same workload.

use mrcache_policy::class::{self, ClassPolicy, ClassPolicySpec};

use crate::SimError;

/// The name of the upper bound.
pub const UPPER_BOUND: &str = "upper-bound";

/// A validated policy spec (`NAME[:key=value,...]`, or the upper bound); each run builds a fresh policy
/// from it.
#[derive(Clone, Debug, PartialEq)]
pub struct SlabPolicy {
    /// The spec as given, which reports show.
    label: String,
    /// `None`: the upper bound.
    spec: Option<ClassPolicySpec>,
}

impl SlabPolicy {
    /// Names `--policy` accepts.
    pub fn names() -> Vec<&'static str> {
        let mut names = class::NAMES.to_vec();
        names.push(UPPER_BOUND);
        names
    }

    /// Reads `spec`: [`UPPER_BOUND`] or a class policy spec.
    pub fn by_name(spec: &str) -> Result<SlabPolicy, SimError> {
        let parsed = if spec == UPPER_BOUND {
            None
        } else {
            Some(
                spec.parse::<ClassPolicySpec>()
                    .map_err(|e| SimError::Policy(e.to_string()))?,
            )
        };
        Ok(SlabPolicy {
            label: spec.to_string(),
            spec: parsed,
        })
    }

    /// memcached's demand filling, no moves.
    pub fn memcached() -> SlabPolicy {
        let spec = ClassPolicySpec::Memcached;
        SlabPolicy {
            label: spec.to_string(),
            spec: Some(spec),
        }
    }

    /// The spec as given (`lama-mr:interval=1000000`).
    pub fn name(&self) -> &str {
        &self.label
    }

    /// Whether this is the upper bound (a fixed allocation from a first pass).
    pub fn is_upper_bound(&self) -> bool {
        self.spec.is_none()
    }

    /// A fresh policy; the upper bound replays with no moves of its own (its allocation is fixed).
    pub(crate) fn build(&self) -> Box<dyn ClassPolicy> {
        self.spec
            .map_or_else(|| Box::new(class::Demand) as _, |spec| spec.build())
    }
}
