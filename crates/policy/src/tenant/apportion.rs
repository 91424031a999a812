//! Dividing a whole among tenants within bounds: the arithmetic every arbiter ends with.
//!
//! [`fill`] is water-filling on real numbers: starting from the lower bounds, the rest is shared in
//! proportion to weights, a share that would pass its upper bound stops there and what it leaves goes to
//! the others. [`apportion`] does the same in whole pages and rounds by largest remainder, so the result
//! adds up exactly. Both always hand out the whole total: if the upper bounds together hold less, the
//! excess is shared by weight beyond them (the arbiters' contract puts the exact page total first).

use super::TenantView;

/// A tenant's weight as a share multiplier: non-finite or non-positive weights count as 0.
pub(super) fn weight_of(t: &TenantView) -> f64 {
    if t.weight.is_finite() && t.weight > 0.0 {
        t.weight
    } else {
        0.0
    }
}

/// The most pages tenant `t` may hold: its `max_pages` (never below its reserve), at most the total.
pub(super) fn cap_of(t: &TenantView, total_pages: usize) -> usize {
    t.max_pages
        .unwrap_or(total_pages)
        .min(total_pages)
        .max(t.reserved_pages)
}

/// When the reserves add up to more than `total_pages`, the pages each tenant gets: reserves served
/// whole in descending weight (input order among equals) until the pages run out. `None` when they fit.
pub(super) fn reserves_short(tenants: &[TenantView], total_pages: usize) -> Option<Vec<usize>> {
    let reserved: usize = tenants.iter().map(|t| t.reserved_pages).sum();
    if reserved <= total_pages {
        return None;
    }
    let mut order: Vec<usize> = (0..tenants.len()).collect();
    order.sort_by(|&a, &b| weight_of(&tenants[b]).total_cmp(&weight_of(&tenants[a])));
    let mut pages = vec![0; tenants.len()];
    let mut left = total_pages;
    for i in order {
        pages[i] = tenants[i].reserved_pages.min(left);
        left -= pages[i];
    }
    Some(pages)
}

/// Non-negative finite weights; all zero becomes all one (an equal split).
fn usable_weights(weights: &[f64], among: &[usize]) -> Vec<f64> {
    let clean = |w: f64| if w.is_finite() && w > 0.0 { w } else { 0.0 };
    let mut w: Vec<f64> = weights.iter().map(|&w| clean(w)).collect();
    if among.iter().all(|&i| w[i] == 0.0) {
        for &i in among {
            w[i] = 1.0;
        }
    }
    w
}

/// Water-filling: `x_i = min(upper_i, lower_i + λ·w_i)` with `Σx = total`. If the lower bounds already
/// exceed `total` they are returned as they are; if the upper bounds cannot hold `total` the excess is
/// shared by weight beyond them. Zero weights get nothing until every positive weight is capped.
pub(super) fn fill(total: f64, weights: &[f64], lower: &[f64], upper: &[f64]) -> Vec<f64> {
    let n = weights.len();
    let mut x = lower.to_vec();
    let mut rest = total - lower.iter().sum::<f64>();
    let mut open: Vec<usize> = (0..n).filter(|&i| upper[i] > lower[i]).collect();
    while rest > 0.0 && !open.is_empty() {
        // Only the open tenants share this pass; zero weights stay open for when the others are full.
        let w = usable_weights(weights, &open);
        let sum: f64 = open.iter().map(|&i| w[i]).sum();
        let level = rest / sum;
        let capped: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&i| w[i] > 0.0 && upper[i] - x[i] <= level * w[i])
            .collect();
        if capped.is_empty() {
            for &i in &open {
                x[i] += level * w[i];
            }
            rest = 0.0;
        } else {
            for &i in &capped {
                rest -= upper[i] - x[i];
                x[i] = upper[i];
            }
            open.retain(|i| !capped.contains(i));
        }
    }
    if rest > 0.0 && n > 0 {
        let all: Vec<usize> = (0..n).collect();
        let w = usable_weights(weights, &all);
        let sum: f64 = w.iter().sum();
        for i in 0..n {
            x[i] += rest * w[i] / sum;
        }
    }
    x
}

/// [`fill`] in whole pages: exactly `total` pages, none below its lower bound (when the lower bounds
/// fit), none above its upper bound (when the upper bounds hold `total`), rounded by largest remainder.
/// Lower bounds that do not fit are served by [`reserves_short`]'s rule: descending weight.
pub(super) fn apportion(
    total: usize,
    weights: &[f64],
    lower: &[usize],
    upper: &[usize],
) -> Vec<usize> {
    let n = weights.len();
    if lower.iter().sum::<usize>() > total {
        let mut order: Vec<usize> = (0..n).collect();
        let w = usable_weights(weights, &order);
        order.sort_by(|&a, &b| w[b].total_cmp(&w[a]));
        let (mut pages, mut left) = (vec![0; n], total);
        for i in order {
            pages[i] = lower[i].min(left);
            left -= pages[i];
        }
        return pages;
    }
    let upper: Vec<usize> = upper.iter().zip(lower).map(|(&u, &l)| u.max(l)).collect();
    let real = fill(
        total as f64,
        weights,
        &lower.iter().map(|&l| l as f64).collect::<Vec<_>>(),
        &upper.iter().map(|&u| u as f64).collect::<Vec<_>>(),
    );
    let mut pages: Vec<usize> = real
        .iter()
        .zip(lower)
        .map(|(&x, &l)| ((x + 1e-9).floor() as usize).max(l))
        .collect();
    // Largest remainders first when pages are missing, smallest first when there are too many (float
    // error); a page goes past an upper bound only when no tenant below its bound is left.
    let remainder = |i: usize| real[i] - pages[i] as f64;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| remainder(b).total_cmp(&remainder(a)));
    let mut sum: usize = pages.iter().sum();
    for past_upper in [false, true] {
        while sum < total {
            let Some(&i) = order.iter().find(|&&i| past_upper || pages[i] < upper[i]) else {
                break;
            };
            pages[i] += 1;
            sum += 1;
            // Next page to the next remainder: rotate the one served to the back.
            order.retain(|&j| j != i);
            order.push(i);
        }
    }
    for &i in order.iter().rev() {
        if sum <= total {
            break;
        }
        let surplus = (pages[i] - lower[i]).min(sum - total);
        pages[i] -= surplus;
        sum -= surplus;
    }
    pages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_shares_by_weight_and_passes_what_a_cap_leaves() {
        let x = fill(10.0, &[1.0, 1.0], &[0.0, 0.0], &[10.0, 10.0]);
        assert_eq!(x, vec![5.0, 5.0]);
        let x = fill(10.0, &[1.0, 3.0], &[0.0, 0.0], &[10.0, 2.0]);
        assert_eq!(x, vec![8.0, 2.0]);
        // Zero weight waits for the others to be full.
        let x = fill(10.0, &[0.0, 1.0], &[0.0, 0.0], &[10.0, 4.0]);
        assert_eq!(x, vec![6.0, 4.0]);
        // Caps that cannot hold the total: the excess goes past them by weight.
        let x = fill(10.0, &[1.0, 1.0], &[0.0, 0.0], &[2.0, 2.0]);
        assert_eq!(x, vec![5.0, 5.0]);
    }

    #[test]
    fn apportion_is_exact_and_within_bounds() {
        assert_eq!(
            apportion(10, &[1.0, 1.0, 1.0], &[0; 3], &[10; 3]),
            [4, 3, 3]
        );
        assert_eq!(
            apportion(10, &[1.0, 1.0, 1.0], &[5, 0, 0], &[10; 3]),
            [7, 2, 1]
        );
        assert_eq!(apportion(10, &[1.0, 1.0], &[0, 0], &[3, 10]), [3, 7]);
        // Lower bounds that do not fit: the heavier tenant is served first.
        assert_eq!(apportion(10, &[1.0, 2.0], &[6, 6], &[10, 10]), [4, 6]);
        assert_eq!(apportion(0, &[1.0], &[0], &[0]), [0]);
        let pages = apportion(1000, &[0.3, 0.3, 0.4], &[1, 2, 3], &[1000; 3]);
        assert_eq!(pages.iter().sum::<usize>(), 1000);
    }
}
