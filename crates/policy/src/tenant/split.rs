//! The static split (`static`) and the shared pool (`pooled`): no measurement, only configuration.
//!
//! Each tenant gets its reserve, and the unreserved rest is split in proportion to weight, each share
//! capped at the tenant's max (what a cap leaves goes to the others). `static` enforces it, as
//! Memcachier's fixed partitions do; `pooled` lets every tenant share one LRU per class (Memshare's
//! "greedy pooled memory" baseline) and reports the same split only as a reference.

use super::apportion::{apportion, cap_of, weight_of};
use std::fmt;

use super::{ArbiterInput, TenantArbiter};
use crate::spec::{shown, write_spec, Params, SpecError};

/// How often the split is recomputed, in accesses: configuration changes (reserves, weights, tenants
/// coming and going) take effect within this many.
const DEFAULT_INTERVAL: u64 = 1_000_000;

/// `static` or `pooled`.
pub struct StaticSplit {
    pooled: bool,
    interval_accesses: u64,
}

impl StaticSplit {
    /// `pooled` or `static`, a round every `interval_accesses` (at least 1).
    pub fn new(pooled: bool, interval_accesses: u64) -> StaticSplit {
        StaticSplit {
            pooled,
            interval_accesses: interval_accesses.max(1),
        }
    }
}

/// `static`'s and `pooled`'s parameters as given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitParams {
    /// `interval=N`: accesses between rounds, at least 1.
    pub interval: Option<u64>,
}

impl SplitParams {
    pub(super) fn parse(p: &mut Params<'_>) -> Result<SplitParams, SpecError> {
        let interval = p.get("interval")?;
        if interval == Some(0) {
            return Err(p.invalid("interval must be at least 1"));
        }
        Ok(SplitParams { interval })
    }

    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
        write_spec(f, name, &[("interval", shown(&self.interval))])
    }

    /// The arbiter (`pooled` or `static`), defaults filled in.
    pub fn build(&self, pooled: bool) -> StaticSplit {
        StaticSplit::new(pooled, self.interval.unwrap_or(DEFAULT_INTERVAL))
    }
}

/// Reserves plus the rest by weight within the caps: exactly `total_pages`.
pub(super) fn static_split(input: &ArbiterInput<'_>) -> Vec<usize> {
    let tenants = input.tenants;
    let weights: Vec<f64> = tenants.iter().map(weight_of).collect();
    let lower: Vec<usize> = tenants.iter().map(|t| t.reserved_pages).collect();
    let upper: Vec<usize> = tenants
        .iter()
        .map(|t| cap_of(t, input.total_pages))
        .collect();
    apportion(input.total_pages, &weights, &lower, &upper)
}

impl TenantArbiter for StaticSplit {
    fn name(&self) -> &'static str {
        if self.pooled {
            "pooled"
        } else {
            "static"
        }
    }

    fn describe(&self) -> String {
        format!("{}:interval={}", self.name(), self.interval_accesses)
    }

    fn shared_pool(&self) -> bool {
        self.pooled
    }

    fn interval_accesses(&self) -> u64 {
        self.interval_accesses
    }

    fn round(&mut self, input: &ArbiterInput<'_>) -> Vec<usize> {
        static_split(input)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{input, tenant};
    use super::super::{by_name, TenantView};

    #[test]
    fn reserves_then_the_rest_by_weight() {
        let mut tenants = vec![tenant(1, 0, 10), tenant(2, 0, 0), tenant(3, 0, 0)];
        tenants[1].weight = 2.0;
        let mut arbiter = by_name("static").unwrap();
        // 90 unreserved pages, 1:2:1: 32.5, 45, 22.5; the tied half page goes to the first.
        assert_eq!(arbiter.round(&input(&tenants, 100)), [33, 45, 22]);
        assert_eq!(
            arbiter.round(&input(&tenants, 100)),
            [33, 45, 22],
            "deterministic"
        );
    }

    #[test]
    fn a_cap_passes_its_excess_to_the_others() {
        let tenants = vec![
            TenantView {
                max_pages: Some(10),
                ..tenant(1, 0, 5)
            },
            tenant(2, 0, 0),
            tenant(3, 0, 0),
        ];
        assert_eq!(
            by_name("pooled").unwrap().round(&input(&tenants, 100)),
            [10, 45, 45]
        );
    }

    #[test]
    fn reserves_that_do_not_fit_go_by_weight() {
        let mut tenants = vec![tenant(1, 0, 60), tenant(2, 0, 60)];
        tenants[1].weight = 3.0;
        assert_eq!(
            by_name("static").unwrap().round(&input(&tenants, 100)),
            [40, 60]
        );
    }
}
