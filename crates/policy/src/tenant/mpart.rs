//! mPart (Algorithm 1 of the thesis): every `interval` accesses, the allocation of pages among tenants
//! that minimises the window's expected misses, `Σ curve_i(k_i) · gets_i`, each tenant within
//! `[L_i, H_i]`, by the shared DP ([`crate::optimizer`]) in steps of `S` pages.
//!
//! Bounds: `L_i = max(reserved_i, ⌊(1 − c)·pages_i⌋)` and `H_i = min(max_i, ⌈(1 + c)·base_i⌉)` with `c`
//! the change allowed per round (mPart §4: 30%) and `base_i = max(pages_i, max(S, 1% of memory))`, so a
//! tenant holding nothing can still grow. `c >= 1` lifts the change limit (bounds `[reserved, max]`).
//! A tenant without a curve, or with fewer than `min_requests` GETs in the window (too few to trust its
//! curve), keeps its pages (`L = H = pages`).
//!
//! The bonus rule: with `WSS_i` the least pages at which the curve is within 0.001 of its value at the
//! whole memory (more would not help) and `E_i = max(L_i, WSS_i)`, if every `E_i` fits, each tenant gets
//! `E_i` and the memory left over is shared in proportion to WSS — then fitted to the bounds.
//!
//! When the bounds cannot add up to the memory (it is still filling, a tenant came or went, a reserve
//! changed), they widen to `[reserved, max]`. A step that cannot reach the total (an odd number of
//! pages in steps of 2) is retried page by page, first within the bounds, then widened; if even that
//! fails the static split is returned. A round never panics.
//!
//! Cost: the DP takes about tenants · total · (H − L) / S steps. Eight tenants sharing 64 GiB (65,536
//! pages, ±30% of 8,192 each) make 2.6·10⁹ steps with S = 1 and 4·10⁷ with S = 64: large memories want
//! a larger step.

use super::apportion::{apportion, cap_of, reserves_short};
use super::split::static_split;
use std::fmt;

use super::{ArbiterInput, TenantArbiter, TenantView};
use crate::optimizer::{optimal_allocation, Partition, Problem};
use crate::spec::{shown, write_spec, Auto, Params, SpecError};

/// mPart §4: arbitration every 2 million accesses.
const DEFAULT_INTERVAL: u64 = 2_000_000;
/// With `step=auto` (the default), S is the memory in pages over this, at least one page: one page up
/// to 1 GiB of 1 MiB pages, so the DP stays near 10^7 steps per round at any memory size.
const AUTO_STEP_DIVISOR: usize = 1024;
/// Below this many pages a step that cannot reach the total is retried page by page.
const PAGE_BY_PAGE_LIMIT: usize = 16_384;

/// S for `total` pages under `step=auto`.
pub(super) fn auto_step(total: usize) -> usize {
    (total / AUTO_STEP_DIVISOR).max(1)
}
/// mPart §4: at most 30% of a tenant's memory added or removed per arbitration.
const DEFAULT_MAX_CHANGE: f64 = 0.3;
/// Fewer GETs than this in a window say little about a tenant's curve.
const DEFAULT_MIN_REQUESTS: u64 = 1_000;
/// The WSS is where the curve comes within this of its floor (mPart: "beyond which the hit ratio
/// remains flat").
pub(super) const WSS_TOLERANCE: f64 = 0.001;
/// A cost per page away from the current allocation, far below one miss: equal-cost choices move nothing.
const NUDGE: f64 = 1e-6;

/// `mpart`'s parameters as given.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MPartParams {
    /// `interval=N`: accesses between rounds, at least 1.
    pub interval: Option<u64>,
    /// `step=S|auto`: S in pages, at least 1.
    pub step: Option<Auto<usize>>,
    /// `max_change=F`: c, above 0.
    pub max_change: Option<f64>,
    /// `min_requests=N`: GETs a window needs for its curve to count.
    pub min_requests: Option<u64>,
}

impl MPartParams {
    pub(super) fn parse(p: &mut Params<'_>) -> Result<MPartParams, SpecError> {
        let params = MPartParams {
            interval: p.get("interval")?,
            step: p.get_auto(
                "step",
                |&s: &usize| s > 0,
                |v| format!("step={v} is not auto or a positive number of pages"),
            )?,
            max_change: p.get("max_change")?,
            min_requests: p.get("min_requests")?,
        };
        let mpart = params.build();
        if mpart.interval_accesses == 0 || mpart.max_change.is_nan() || mpart.max_change <= 0.0 {
            return Err(p.invalid("need interval >= 1 and max_change > 0"));
        }
        Ok(params)
    }

    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(
            f,
            "mpart",
            &[
                ("interval", shown(&self.interval)),
                ("step", shown(&self.step)),
                ("max_change", shown(&self.max_change)),
                ("min_requests", shown(&self.min_requests)),
            ],
        )
    }

    /// The arbiter, defaults filled in.
    pub fn build(&self) -> MPart {
        MPart {
            interval_accesses: self.interval.unwrap_or(DEFAULT_INTERVAL),
            step: self.step.and_then(Auto::value),
            max_change: self.max_change.unwrap_or(DEFAULT_MAX_CHANGE),
            min_requests: self.min_requests.unwrap_or(DEFAULT_MIN_REQUESTS),
        }
    }
}

/// The mPart arbiter.
pub struct MPart {
    interval_accesses: u64,
    /// S in pages; `None` for auto (`auto_step`).
    step: Option<usize>,
    max_change: f64,
    min_requests: u64,
}

impl Default for MPart {
    fn default() -> Self {
        MPart {
            interval_accesses: DEFAULT_INTERVAL,
            step: None,
            max_change: DEFAULT_MAX_CHANGE,
            min_requests: DEFAULT_MIN_REQUESTS,
        }
    }
}

impl MPart {
    /// The bonus rule, if every tenant's `E_i` fits.
    fn bonus(
        &self,
        tenants: &[TenantView],
        informed: &[bool],
        bounds: &[(usize, usize)],
        total: usize,
    ) -> Option<Vec<usize>> {
        let wss: Vec<f64> = tenants
            .iter()
            .zip(informed)
            .map(|(t, &inf)| match (inf, usable_curve(t)) {
                (true, Some(curve)) => working_set_pages(curve, total) as f64,
                _ => 0.0,
            })
            .collect();
        let expected: Vec<f64> = bounds
            .iter()
            .zip(&wss)
            .map(|(&(low, _), &w)| w.max(low as f64))
            .collect();
        let expected_sum: f64 = expected.iter().sum();
        if !informed.contains(&true) || expected_sum > total as f64 {
            return None;
        }
        // Shares of the bonus: by WSS among the informed tenants, by E_i if none has a WSS.
        let share: Vec<f64> = if wss.iter().sum::<f64>() > 0.0 {
            wss
        } else {
            let by_expected = expected.iter().zip(informed);
            by_expected
                .map(|(&e, &inf)| if inf { e } else { 0.0 })
                .collect()
        };
        let share_sum: f64 = share.iter().sum();
        if share_sum <= 0.0 {
            return None;
        }
        let bonus = total as f64 - expected_sum;
        let above_low: Vec<f64> = expected
            .iter()
            .zip(&share)
            .zip(bounds)
            .map(|((e, s), &(low, _))| e + bonus * s / share_sum - low as f64)
            .collect();
        let (low, high): (Vec<usize>, Vec<usize>) = bounds.iter().copied().unzip();
        Some(apportion(total, &above_low, &low, &high))
    }
}

/// The curve, if there is one with any entry.
pub(super) fn usable_curve(t: &TenantView) -> Option<&[f64]> {
    t.curve.as_deref().filter(|c| !c.is_empty())
}

/// The curve at `pages` (its last entry beyond its end; a non-finite entry misses everything).
pub(super) fn miss_ratio(curve: &[f64], pages: usize) -> f64 {
    let mr = curve[pages.min(curve.len() - 1)];
    if mr.is_finite() {
        mr
    } else {
        1.0
    }
}

/// The least pages at which the curve is within [`WSS_TOLERANCE`] of its value at `total` pages.
pub(super) fn working_set_pages(curve: &[f64], total: usize) -> usize {
    let floor = miss_ratio(curve, total) + WSS_TOLERANCE;
    (0..=total)
        .find(|&k| miss_ratio(curve, k) <= floor)
        .unwrap_or(total)
}

/// `[L, H]` of a tenant allowed to change by `max_change` of its pages (`>= 1`: no limit), at least
/// its reserve, at most its max.
pub(super) fn change_bounds(
    t: &TenantView,
    total: usize,
    max_change: f64,
    step: usize,
) -> (usize, usize) {
    let cap = cap_of(t, total);
    if max_change >= 1.0 {
        return (t.reserved_pages, cap);
    }
    let pages = t.pages.min(total);
    let low = (((1.0 - max_change) * pages as f64).floor() as usize)
        .max(t.reserved_pages)
        .min(cap);
    // A tenant at (nearly) nothing grows from a floor of one step or 1% of memory.
    let base = pages.max(step).max(total.div_ceil(100));
    let high = (((1.0 + max_change) * base as f64).ceil() as usize)
        .min(cap)
        .max(low);
    (low, high)
}

/// Whether pages within `bounds` can add up to `total`.
pub(super) fn bounds_fit(bounds: &[(usize, usize)], total: usize) -> bool {
    let low: usize = bounds.iter().map(|b| b.0).sum();
    let high: usize = bounds.iter().map(|b| b.1).sum();
    low <= total && total <= high
}

/// The DP: the least expected misses (`curve · gets`, or nothing for a tenant without a curve, plus a
/// nudge toward where each is now) within `bounds`, in steps of `step` pages; `None` if infeasible.
pub(super) fn least_misses(
    tenants: &[&TenantView],
    bounds: &[(usize, usize)],
    total: usize,
    step: usize,
) -> Option<Vec<usize>> {
    let partitions = tenants
        .iter()
        .zip(bounds)
        .map(|(t, &(low, high))| {
            let cost = (0..=high)
                .map(|k| {
                    let misses = usable_curve(t).map_or(0.0, |c| miss_ratio(c, k) * t.gets as f64);
                    misses + NUDGE * k.abs_diff(t.pages) as f64
                })
                .collect();
            Partition {
                cost,
                current_pages: t.pages.clamp(low, high),
                min_pages: low,
            }
        })
        .collect();
    optimal_allocation(&Problem {
        partitions,
        total_pages: total,
        max_moves: None,
        granularity: step,
    })
    .ok()
    .map(|a| a.pages)
}

impl TenantArbiter for MPart {
    fn name(&self) -> &'static str {
        "mpart"
    }

    fn describe(&self) -> String {
        format!(
            "mpart:interval={},step={},max_change={},min_requests={}",
            self.interval_accesses,
            self.step.map_or("auto".to_string(), |s| s.to_string()),
            self.max_change,
            self.min_requests
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
        let step = self.step.unwrap_or_else(|| auto_step(total));
        let informed: Vec<bool> = tenants
            .iter()
            .map(|t| usable_curve(t).is_some() && t.gets >= self.min_requests)
            .collect();
        let widened: Vec<(usize, usize)> = tenants
            .iter()
            .map(|t| (t.reserved_pages, cap_of(t, total)))
            .collect();
        let mut bounds: Vec<(usize, usize)> = tenants
            .iter()
            .zip(&informed)
            .map(|(t, &inf)| {
                if inf {
                    change_bounds(t, total, self.max_change, step)
                } else {
                    let kept = t.pages.clamp(t.reserved_pages, cap_of(t, total));
                    (kept, kept)
                }
            })
            .collect();
        if !bounds_fit(&bounds, total) {
            bounds = widened.clone();
        }
        if let Some(pages) = self.bonus(tenants, &informed, &bounds, total) {
            return pages;
        }
        let views: Vec<&TenantView> = tenants.iter().collect();
        let attempts = [
            (&bounds, step),
            (&bounds, 1),
            (&widened, step),
            (&widened, 1),
        ];
        let best = attempts
            .into_iter()
            .filter(|&(_, s)| s == step || total <= PAGE_BY_PAGE_LIMIT)
            .find_map(|(b, s)| least_misses(&views, b, total, s));
        best.unwrap_or_else(|| static_split(input))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{input, tenant};
    use super::super::{by_name, TenantView};

    /// A tenant at `pages` with 10,000 GETs and the curve `mr(k)` over `0..=total`.
    fn curved(id: u16, pages: usize, total: usize, mr: impl Fn(usize) -> f64) -> TenantView {
        TenantView {
            gets: 10_000,
            curve: Some((0..=total).map(mr).collect()),
            ..tenant(id, pages, 0)
        }
    }

    fn linear(slope: f64) -> impl Fn(usize) -> f64 {
        move |k| (1.0 - slope * k as f64).max(0.0)
    }

    #[test]
    fn the_steeper_curve_gains_within_the_change_limit() {
        let tenants = [
            curved(1, 10, 20, linear(0.01)),
            curved(2, 10, 20, linear(0.04)),
        ];
        let mut mpart = by_name("mpart").unwrap();
        // ±30% of 10 pages.
        assert_eq!(mpart.round(&input(&tenants, 20)), [7, 13]);
        let mut free = by_name("mpart:max_change=1").unwrap();
        assert_eq!(free.round(&input(&tenants, 20)), [0, 20]);
    }

    #[test]
    fn reserve_and_max_bound_the_optimum() {
        let mut tenants = [
            curved(1, 10, 20, linear(0.01)),
            curved(2, 10, 20, linear(0.04)),
        ];
        tenants[0].reserved_pages = 8;
        let mut free = by_name("mpart:max_change=1").unwrap();
        assert_eq!(free.round(&input(&tenants, 20)), [8, 12]);
        tenants[0].reserved_pages = 0;
        tenants[1].max_pages = Some(11);
        assert_eq!(free.round(&input(&tenants, 20)), [9, 11]);
    }

    #[test]
    fn bonus_rule_when_every_working_set_fits() {
        // Falls from 1 to 0.1 at `wss` pages, flat after.
        let cliff = |wss: usize| {
            move |k: usize| {
                if k < wss {
                    1.0 - 0.9 * k as f64 / wss as f64
                } else {
                    0.1
                }
            }
        };
        // Working sets of 4 and 6 pages: each gets its WSS, and the 10 pages left go 4:6.
        let tenants = [curved(1, 10, 20, cliff(4)), curved(2, 10, 20, cliff(6))];
        let mut mpart = by_name("mpart:max_change=1").unwrap();
        assert_eq!(mpart.round(&input(&tenants, 20)), [8, 12]);
        // Within ±30% (bounds [7, 13]) E = (7, 7, 12): the bonus of 4 would take the third tenant to
        // 15.4, so it stops at 13 and the rest goes to the other two.
        let tenants = [
            curved(1, 10, 30, cliff(1)),
            curved(2, 10, 30, cliff(1)),
            curved(3, 10, 30, cliff(12)),
        ];
        let targets = by_name("mpart").unwrap().round(&input(&tenants, 30));
        assert_eq!(targets[2], 13, "{targets:?}");
        assert!(
            targets[..2].iter().all(|&k| k == 8 || k == 9),
            "{targets:?}"
        );
        assert_eq!(targets.iter().sum::<usize>(), 30);
    }

    #[test]
    fn tenants_without_a_curve_or_requests_keep_their_pages() {
        let mut few = curved(3, 6, 20, linear(0.5));
        few.gets = 10;
        let tenants = [
            tenant(1, 4, 0),
            curved(2, 5, 20, linear(0.01)),
            few,
            curved(4, 5, 20, linear(0.04)),
        ];
        // Tenants 2 and 4 trade within ±30% of 5 pages: [3, 7].
        let targets = by_name("mpart").unwrap().round(&input(&tenants, 20));
        assert_eq!(targets, [4, 3, 6, 7]);
    }

    #[test]
    fn a_tenant_at_nothing_can_grow_and_an_unfilled_cache_is_filled() {
        let tenants = [
            curved(1, 0, 100, linear(0.05)),
            curved(2, 100, 100, |_| 0.5),
        ];
        let targets = by_name("mpart").unwrap().round(&input(&tenants, 100));
        assert!(targets[0] > 0, "{targets:?}");
        assert_eq!(targets.iter().sum::<usize>(), 100);
        // Nothing held yet (the ±30% bounds cannot reach 100 pages): bounds widen to [reserve, max].
        let empty = [curved(1, 0, 100, linear(0.05)), curved(2, 0, 100, |_| 0.5)];
        let targets = by_name("mpart").unwrap().round(&input(&empty, 100));
        assert_eq!(targets.iter().sum::<usize>(), 100);
        assert!(targets[0] >= 20, "{targets:?}");
    }

    #[test]
    fn a_step_that_misses_the_total_falls_back_to_single_pages_within_the_bounds() {
        // 10 + 10 on a grid of 2 can never make 21.
        let tenants = [
            curved(1, 10, 21, linear(0.01)),
            curved(2, 10, 21, linear(0.04)),
        ];
        let targets = by_name("mpart:step=2").unwrap().round(&input(&tenants, 21));
        assert_eq!(targets, [8, 13]);
        // On the grid it steps by 2: 10 ± 3 rounded to the grid through 10.
        let targets = by_name("mpart:step=2").unwrap().round(&input(&tenants, 20));
        assert_eq!(targets, [8, 12]);
    }
}
