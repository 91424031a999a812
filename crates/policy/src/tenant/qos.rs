//! LAMA's performance guarantee partition (Hu et al., LAMA §4, Algorithm 2), over tenants: each tenant
//! with a hit-ratio target gets the least pages at which its curve meets the target, found by binary
//! search in `[reserved, max]` (curves do not rise with memory); the pages left are divided among the
//! other tenants by the shared DP, minimising their expected misses (`curve · gets`) within
//! `[reserved, max]`.
//!
//! Rules where the paper stops:
//! - a target out of reach even at the tenant's max gets the least pages that reach the best miss
//!   ratio it can have (within 0.001, as mPart's WSS): more would take pages from others for nothing;
//! - a target tenant without a curve keeps its pages;
//! - targets that do not all fit are served in descending weight, the last ones get what is left
//!   (LAMA: "a priority-based scheduling may be used"); every reserve is kept first;
//! - pages the other tenants cannot hold (all at their max, or there are none) go to the target
//!   tenants by weight, so the targets still add up to the memory;
//! - `max_change < 1` limits every tenant to that fraction of its pages per round, as mPart's bounds do
//!   (the default, 1, leaves them unbounded).

use super::apportion::{apportion, cap_of, reserves_short, weight_of};
use super::mpart::{
    auto_step, bounds_fit, change_bounds, least_misses, miss_ratio, usable_curve, WSS_TOLERANCE,
};
use std::fmt;

use super::{ArbiterInput, TenantArbiter, TenantView};
use crate::spec::{shown, write_spec, Params, SpecError};

/// A round every million accesses, the interval LAMA §5.4 found best for its class partitions.
const DEFAULT_INTERVAL: u64 = 1_000_000;
/// No limit on how far a tenant moves in a round.
const DEFAULT_MAX_CHANGE: f64 = 1.0;
/// Slack on the target miss ratio, so that a curve reaching exactly `1 − target` meets it despite
/// rounding (`1.0 - 0.85` is not `0.15` in binary).
const TARGET_SLACK: f64 = 1e-9;

/// `lama-qos`'s parameters as given.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LamaQosParams {
    /// `interval=N`: accesses between rounds, at least 1.
    pub interval: Option<u64>,
    /// `max_change=F`: above 0 (1 or more: unbounded).
    pub max_change: Option<f64>,
    /// `margin=F`: hit-ratio points aimed above each target, in [0, 1).
    pub margin: Option<f64>,
}

impl LamaQosParams {
    pub(super) fn parse(p: &mut Params<'_>) -> Result<LamaQosParams, SpecError> {
        let params = LamaQosParams {
            interval: p.get("interval")?,
            max_change: p.get("max_change")?,
            margin: p.get("margin")?,
        };
        let qos = params.build();
        if qos.interval_accesses == 0 || qos.max_change.is_nan() || qos.max_change <= 0.0 {
            return Err(p.invalid("need interval >= 1 and max_change > 0"));
        }
        if !(0.0..1.0).contains(&qos.margin) {
            return Err(p.invalid("need 0 <= margin < 1"));
        }
        Ok(params)
    }

    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(
            f,
            "lama-qos",
            &[
                ("interval", shown(&self.interval)),
                ("max_change", shown(&self.max_change)),
                ("margin", shown(&self.margin)),
            ],
        )
    }

    /// The arbiter, defaults filled in.
    pub fn build(&self) -> LamaQos {
        let d = LamaQos::default();
        LamaQos {
            interval_accesses: self.interval.unwrap_or(d.interval_accesses),
            max_change: self.max_change.unwrap_or(d.max_change),
            margin: self.margin.unwrap_or(d.margin),
        }
    }
}

/// The LAMA QoS arbiter.
pub struct LamaQos {
    interval_accesses: u64,
    max_change: f64,
    /// Hit-ratio points aimed above each target, against the lag of a round behind a growing working
    /// set (0: exactly Algorithm 2).
    margin: f64,
}

impl Default for LamaQos {
    fn default() -> Self {
        LamaQos {
            interval_accesses: DEFAULT_INTERVAL,
            max_change: DEFAULT_MAX_CHANGE,
            margin: 0.0,
        }
    }
}

impl LamaQos {
    /// The pages tenant `t` asks for to meet `target`, within `bounds`.
    fn grant(&self, t: &TenantView, target: f64, total: usize, bounds: (usize, usize)) -> usize {
        let (low, high) = bounds;
        let Some(curve) = usable_curve(t) else {
            return t.pages.clamp(low, high);
        };
        let (reserved, cap) = (t.reserved_pages, cap_of(t, total));
        // Calibration: what the tenant missed in the last window at the pages it held, against what the
        // curve says for those pages. The curve comes from a longer window than the last round (it lags
        // a change of phase) and from samples; the gap at the current size is carried to every size.
        let bias = if t.gets >= CALIBRATION_MIN_GETS && t.pages > 0 {
            (t.get_misses as f64 / t.gets as f64 - miss_ratio(curve, t.pages)).clamp(-0.5, 0.5)
        } else {
            0.0
        };
        let goal = 1.0 - (target + self.margin).min(1.0) + TARGET_SLACK - bias;
        let pages = if miss_ratio(curve, cap) <= goal {
            least_pages(reserved, cap, |k| miss_ratio(curve, k) <= goal)
        } else {
            let best = miss_ratio(curve, cap) + WSS_TOLERANCE;
            least_pages(reserved, cap, |k| miss_ratio(curve, k) <= best)
        };
        pages.clamp(low, high)
    }
}

/// GETs in the last window below which its miss ratio does not calibrate the curve.
const CALIBRATION_MIN_GETS: u64 = 1_000;

/// Binary search: the least `k` in `[low, high]` with `meets(k)`, given `meets(high)` and that `meets`
/// does not turn false again as `k` grows.
fn least_pages(mut low: usize, mut high: usize, meets: impl Fn(usize) -> bool) -> usize {
    while low < high {
        let mid = low + (high - low) / 2;
        if meets(mid) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    low
}

impl TenantArbiter for LamaQos {
    fn name(&self) -> &'static str {
        "lama-qos"
    }

    fn describe(&self) -> String {
        format!(
            "lama-qos:interval={},max_change={},margin={}",
            self.interval_accesses, self.max_change, self.margin
        )
    }

    fn needs_curves(&self) -> bool {
        true
    }

    fn interval_accesses(&self) -> u64 {
        self.interval_accesses
    }

    fn round(&mut self, input: &ArbiterInput<'_>) -> Vec<usize> {
        let tenants = input.tenants;
        let total = input.total_pages;
        if let Some(pages) = reserves_short(tenants, total) {
            return pages;
        }
        let bounds: Vec<(usize, usize)> = tenants
            .iter()
            .map(|t| change_bounds(t, total, self.max_change, auto_step(total)))
            .collect();
        let caps: Vec<usize> = tenants.iter().map(|t| cap_of(t, total)).collect();
        let weights: Vec<f64> = tenants.iter().map(weight_of).collect();

        // Every reserve first, then the target tenants' grants beyond it, heaviest first.
        let mut pages: Vec<usize> = tenants.iter().map(|t| t.reserved_pages).collect();
        let mut left = total - pages.iter().sum::<usize>();
        let mut with_target: Vec<usize> = (0..tenants.len())
            .filter(|&i| tenants[i].target_hit_ratio.is_some())
            .collect();
        with_target.sort_by(|&a, &b| weights[b].total_cmp(&weights[a]));
        for &i in &with_target {
            let target = tenants[i].target_hit_ratio.unwrap_or_default();
            let extra = self.grant(&tenants[i], target, total, bounds[i]) - pages[i];
            pages[i] += extra.min(left);
            left -= extra.min(left);
        }

        // The rest among the others, as many pages as they can hold, by the DP.
        let others: Vec<usize> = (0..tenants.len())
            .filter(|&i| tenants[i].target_hit_ratio.is_none())
            .collect();
        if !others.is_empty() {
            let reserved_others: usize = others.iter().map(|&i| pages[i]).sum();
            let cap_others: usize = others.iter().map(|&i| caps[i]).sum();
            let share = (left + reserved_others).min(cap_others);
            let views: Vec<&TenantView> = others.iter().map(|&i| &tenants[i]).collect();
            let mut limits: Vec<(usize, usize)> = others.iter().map(|&i| bounds[i]).collect();
            if !bounds_fit(&limits, share) {
                limits = others.iter().map(|&i| (pages[i], caps[i])).collect();
            }
            if let Some(split) = least_misses(&views, &limits, share, auto_step(share))
                .or_else(|| least_misses(&views, &limits, share, 1))
            {
                for (&i, k) in others.iter().zip(split) {
                    pages[i] = k;
                }
            }
        }
        // Whatever is still unassigned goes where there is room, by weight (the exact total first).
        apportion(total, &weights, &pages, &caps)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{input, tenant};
    use super::super::{by_name, TenantView};

    /// A tenant whose last window missed exactly as its curve says at the pages it holds.
    fn curved(id: u16, pages: usize, mr: impl Fn(usize) -> f64) -> TenantView {
        let curve: Vec<f64> = (0..=100).map(mr).collect();
        TenantView {
            gets: 10_000,
            get_misses: (curve[pages.min(100)] * 10_000.0).round() as u64,
            curve: Some(curve),
            ..tenant(id, pages, 0)
        }
    }

    #[test]
    fn a_margin_aims_above_the_target() {
        // Target 0.85 plus a margin of 0.05: the curve must reach 0.10 misses, at 70 pages.
        let tenants = [
            TenantView {
                target_hit_ratio: Some(0.85),
                ..curved(1, 40, qos_curve)
            },
            curved(2, 60, |k| (1.0 - 0.01 * k as f64).max(0.0)),
        ];
        let mut qos = by_name("lama-qos:margin=0.05").unwrap();
        assert_eq!(qos.round(&input(&tenants, 100))[0], 70);
        assert!(by_name("lama-qos:margin=1").is_err());
    }

    #[test]
    fn a_curve_that_underestimates_the_misses_seen_is_calibrated() {
        // At 40 pages the curve says 0.2 but the window missed 0.25: the target of 0.85 needs the curve
        // to say 0.10, so 70 pages, not 60.
        let tenants = [
            TenantView {
                target_hit_ratio: Some(0.85),
                get_misses: 2_500,
                ..curved(1, 40, qos_curve)
            },
            curved(2, 60, |k| (1.0 - 0.01 * k as f64).max(0.0)),
        ];
        let mut qos = by_name("lama-qos").unwrap();
        assert_eq!(qos.round(&input(&tenants, 100))[0], 70);
    }

    /// A step curve: 0.5 below 40 pages, 0.2 below 60, 0.15 below 70, 0.1 from 70 on.
    fn qos_curve(k: usize) -> f64 {
        match k {
            0..=39 => 0.5,
            40..=59 => 0.2,
            60..=69 => 0.15,
            _ => 0.1,
        }
    }

    #[test]
    fn the_target_gets_its_least_pages_and_the_others_the_rest_by_misses() {
        let tenants = [
            TenantView {
                target_hit_ratio: Some(0.85),
                ..curved(1, 34, qos_curve)
            },
            curved(2, 33, |k| (1.0 - 0.02 * k as f64).max(0.0)),
            TenantView {
                reserved_pages: 5,
                ..curved(3, 33, |_| 0.5)
            },
        ];
        let mut qos = by_name("lama-qos").unwrap();
        assert_eq!(qos.round(&input(&tenants, 100)), [60, 35, 5]);
    }

    #[test]
    fn an_unreachable_target_takes_only_what_helps() {
        let tenants = [
            TenantView {
                target_hit_ratio: Some(0.99),
                ..curved(1, 50, qos_curve)
            },
            curved(2, 50, |k| (1.0 - 0.005 * k as f64).max(0.0)),
        ];
        assert_eq!(
            by_name("lama-qos").unwrap().round(&input(&tenants, 100)),
            [70, 30]
        );
    }

    #[test]
    fn targets_that_do_not_fit_are_served_by_weight() {
        let tenants = [
            TenantView {
                target_hit_ratio: Some(0.85),
                ..curved(1, 50, qos_curve)
            },
            TenantView {
                target_hit_ratio: Some(0.85),
                weight: 2.0,
                ..curved(2, 50, qos_curve)
            },
        ];
        assert_eq!(
            by_name("lama-qos").unwrap().round(&input(&tenants, 100)),
            [40, 60]
        );
        // Room for both: the 30 pages nobody asked for are split by weight.
        assert_eq!(
            by_name("lama-qos").unwrap().round(&input(&tenants, 150)),
            [70, 80]
        );
    }

    #[test]
    fn a_target_without_a_curve_keeps_its_pages_and_max_change_bounds_the_step() {
        let tenants = [
            TenantView {
                target_hit_ratio: Some(0.85),
                curve: None,
                ..curved(1, 20, qos_curve)
            },
            curved(2, 80, |_| 0.5),
        ];
        assert_eq!(
            by_name("lama-qos").unwrap().round(&input(&tenants, 100)),
            [20, 80]
        );
        let tenants = [
            TenantView {
                target_hit_ratio: Some(0.85),
                ..curved(1, 20, qos_curve)
            },
            curved(2, 80, |_| 0.5),
        ];
        // 60 pages wanted, 20 · 1.5 = 30 allowed this round.
        assert_eq!(
            by_name("lama-qos:max_change=0.5")
                .unwrap()
                .round(&input(&tenants, 100)),
            [30, 70]
        );
    }
}
