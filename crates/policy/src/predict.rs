//! Predicting memcached's default allocation and its miss ratio from locality alone (LAMA §3.5).
//!
//! memcached hands pages to slab classes on demand and, without automove, never takes them back: the
//! allocation is whatever the classes asked for while memory filled. Each stored item takes a chunk, so
//! while nothing is evicted a class holds exactly the distinct items it was asked for. After `M` accesses
//! (of all classes) class `i`, which receives a share `q_i` of them, holds on average `fp_i(M q_i)` items,
//! its footprint (LAMA eq. 1), in `ceil(fp_i / chunks_per_page_i)` pages. The cold-start length `M` is
//! where those pages add up to the memory (eq. 6, counted in pages rather than items, since pages are
//! what runs out):
//!
//! ```text
//! sum_i ceil(fp_i(M q_i) / chunks_per_page_i) = C pages
//! ```
//!
//! The page counts are a non-decreasing step function of `M`, so `M` is found by bisection as the first
//! length where they reach `C`. The predicted miss ratio is eq. 3 at that allocation:
//! `sum_i R_i MR_i(pages_i) / sum_i R_i`.
//!
//! Invariants and conventions:
//! - A class with any access gets at least one page (`ceil` of a positive footprint), as memcached always
//!   grants a class its first page; if there are more such classes than pages, each gets exactly one and
//!   the allocation exceeds `C`, as memcached's and the engine's first pages do.
//! - Otherwise the pages add up to exactly `C`, or to less when every class's whole data set fits (memory
//!   never fills; `cold_start_accesses` is then `None`).
//! - Nothing here reads a trace: footprints and curves come in as data, so the same code serves a profile
//!   of a trace, of a live server, or an analytic model.

/// `fp(w)`: the average number of distinct items in a window of `w` consecutive accesses of one class.
pub trait Footprint {
    /// Average distinct items in a window of `window_accesses` of the class's own accesses; non-decreasing.
    fn items(&self, window_accesses: f64) -> f64;
    /// All distinct items of the class: the footprint of an unbounded window.
    fn distinct_items(&self) -> f64;
}

/// What the prediction knows of one slab class.
#[derive(Clone, Copy)]
pub struct ClassDemand<'a> {
    /// Accesses that may store an item (reads, and writes; a read miss and the write that refills it are
    /// one access). The class's share of all accesses is its `q_i`.
    pub accesses: f64,
    /// Requests whose misses count (eq. 3's `R_i`; reads in the lookaside pattern).
    pub requests: f64,
    /// Items one page of the class holds.
    pub chunks_per_page: usize,
    /// The class's footprint: distinct items by window length.
    pub footprint: &'a dyn Footprint,
    /// Miss ratio of the class's requests with `k` pages, `k = 0, 1, ...`; a page count past the end
    /// reads the last entry, an empty table misses everything.
    pub miss_ratio_by_pages: &'a [f64],
}

impl ClassDemand<'_> {
    /// The class's miss ratio with `pages` pages.
    pub fn miss_ratio_at(&self, pages: usize) -> f64 {
        match self.miss_ratio_by_pages.last() {
            None => 1.0,
            Some(&last) => self.miss_ratio_by_pages.get(pages).copied().unwrap_or(last),
        }
    }

    /// Pages the class has asked for once it has seen `window_accesses` of its own accesses.
    fn pages_after(&self, window_accesses: f64) -> usize {
        if self.accesses <= 0.0 || self.chunks_per_page == 0 {
            return 0;
        }
        let items = self
            .footprint
            .items(window_accesses)
            .clamp(0.0, self.footprint.distinct_items());
        // The tolerance keeps an exact multiple of a page (in floating point) from asking for one more.
        (items / self.chunks_per_page as f64 - 1e-9).ceil().max(0.0) as usize
    }

    /// Pages once all of the class's data has been stored.
    fn pages_for_everything(&self) -> usize {
        self.pages_after(f64::INFINITY)
    }
}

/// The predicted default allocation at one memory size.
#[derive(Clone, Debug, PartialEq)]
pub struct DefaultPrediction {
    /// `M`: accesses of all classes until memory is full; `None` when everything fits and it never fills.
    pub cold_start_accesses: Option<f64>,
    /// Pages per class, in the input's order.
    pub pages: Vec<usize>,
    /// Eq. 3 at `pages`.
    pub miss_ratio: f64,
}

/// Eq. 3: the request-weighted miss ratio of `classes` when class `i` holds `pages[i]` pages.
pub fn overall_miss_ratio(classes: &[ClassDemand<'_>], pages: &[usize]) -> f64 {
    let requests: f64 = classes.iter().map(|c| c.requests).sum();
    if requests <= 0.0 {
        return 0.0;
    }
    let misses: f64 = classes
        .iter()
        .zip(pages)
        .map(|(c, &p)| c.requests * c.miss_ratio_at(p))
        .sum();
    misses / requests
}

/// Bisection steps: the interval halves each time, so 200 steps resolve any `M` a `f64` can hold.
const BISECTION_STEPS: usize = 200;

/// Rounds of deciding which classes arrive after the fill; each round lengthens `M`, so it settles fast.
const LATE_CLASS_ROUNDS: usize = 8;

/// Eq. 6: memcached's demand-filled allocation of `total_pages` among `classes`, and its miss ratio.
///
/// A class that has not stored one item on average by the time memory fills (`fp_i(M q_i) < 1`) takes
/// no part in the fill; when its first item arrives it takes its first page as the engine does: from
/// the budget if any is left, else from the class holding the most pages (at least two; the highest
/// class index among equals), else over the limit.
pub fn predict_default(classes: &[ClassDemand<'_>], total_pages: usize) -> DefaultPrediction {
    let all_accesses: f64 = classes.iter().map(|c| c.accesses.max(0.0)).sum();
    let finish = |cold_start_accesses, pages: Vec<usize>| DefaultPrediction {
        miss_ratio: overall_miss_ratio(classes, &pages),
        cold_start_accesses,
        pages,
    };
    let everything: Vec<usize> = classes.iter().map(|c| c.pages_for_everything()).collect();
    if all_accesses <= 0.0 || everything.iter().sum::<usize>() <= total_pages {
        return finish(None, everything);
    }
    // First pages: every class with an access has one however short the window.
    let first_pages: Vec<usize> = everything.iter().map(|&p| p.min(1)).collect();
    if first_pages.iter().sum::<usize>() >= total_pages {
        return finish(Some(0.0), first_pages);
    }
    let mut late = vec![false; classes.len()];
    let (mut cold_start, mut pages) = fill(classes, all_accesses, total_pages, &late);
    for _ in 0..LATE_CLASS_ROUNDS {
        let Some(m) = cold_start else { break };
        let now_late: Vec<bool> = classes
            .iter()
            .map(|c| c.accesses > 0.0 && c.footprint.items(m * c.accesses / all_accesses) < 1.0)
            .collect();
        if now_late == late {
            break;
        }
        late = now_late;
        (cold_start, pages) = fill(classes, all_accesses, total_pages, &late);
    }
    for (i, _) in late.iter().enumerate().filter(|(_, &l)| l) {
        if pages.iter().sum::<usize>() >= total_pages {
            let donor = pages
                .iter()
                .enumerate()
                .filter(|&(j, &p)| j != i && p >= 2)
                .max_by_key(|&(_, &p)| p)
                .map(|(j, _)| j);
            if let Some(j) = donor {
                pages[j] -= 1;
            }
        }
        pages[i] = 1;
    }
    finish(cold_start, pages)
}

/// Solves eq. 6 among the classes not `excluded`: the first `M` at which their pages reach `total_pages`
/// (`None` and every page they could use, if they never do).
fn fill(
    classes: &[ClassDemand<'_>],
    all_accesses: f64,
    total_pages: usize,
    excluded: &[bool],
) -> (Option<f64>, Vec<usize>) {
    let pages_at = |m: f64| -> Vec<usize> {
        classes
            .iter()
            .zip(excluded)
            .map(|(c, &out)| match out {
                true => 0,
                false => c.pages_after(m * c.accesses.max(0.0) / all_accesses),
            })
            .collect()
    };
    let filled = |m: f64| pages_at(m).iter().sum::<usize>() >= total_pages;
    let mut high = 1.0;
    while !filled(high) {
        high *= 2.0;
        if !high.is_finite() {
            // Everything fits, or footprints approach their distinct items only in the limit.
            return (None, pages_at(f64::INFINITY));
        }
    }
    let mut low = 0.0;
    for _ in 0..BISECTION_STEPS {
        let mid = 0.5 * (low + high);
        if mid <= low || mid >= high {
            break;
        }
        if filled(mid) {
            high = mid;
        } else {
            low = mid;
        }
    }
    let (before, mut pages) = (pages_at(low), pages_at(high));
    if pages.iter().sum::<usize>() > total_pages {
        // Several classes asked for a page at the same `M`: the last pages go to them in class order.
        let mut left = total_pages - before.iter().sum::<usize>();
        for (page, &b) in pages.iter_mut().zip(&before) {
            let wanted = *page - b;
            *page = b + wanted.min(left);
            left -= wanted.min(left);
        }
    }
    (Some(high), pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A class that cycles through `keys` items: `fp(w) = min(w, keys)` (LAMA Table 1).
    struct Cyclic {
        keys: f64,
    }

    impl Footprint for Cyclic {
        fn items(&self, w: f64) -> f64 {
            w.min(self.keys)
        }
        fn distinct_items(&self) -> f64 {
            self.keys
        }
    }

    fn class<'a>(fp: &'a Cyclic, chunks_per_page: usize, curve: &'a [f64]) -> ClassDemand<'a> {
        ClassDemand {
            accesses: 1000.0,
            requests: 1000.0,
            chunks_per_page,
            footprint: fp,
            miss_ratio_by_pages: curve,
        }
    }

    #[test]
    fn hand_computed_two_classes() {
        // A: 40 keys, 10 a page; B: 100 keys, 20 a page; half the accesses each, 6 pages.
        // With x = M/2 accesses each, A asks for ceil(x/10) pages and B for ceil(x/20):
        // x = 30 gives 3 + 2 = 5, anything above 30 gives 4 + 2 = 6, so M = 60 and pages (4, 2).
        // A's 40 items fit its cycle (only the 40 cold misses of 1000 requests), B's 40 of 100 do not.
        let (a, b) = (Cyclic { keys: 40.0 }, Cyclic { keys: 100.0 });
        let curve_a = [1.0, 1.0, 1.0, 1.0, 0.04];
        let curve_b = [1.0, 1.0, 1.0, 1.0, 1.0, 0.1];
        let classes = [class(&a, 10, &curve_a), class(&b, 20, &curve_b)];
        let p = predict_default(&classes, 6);
        assert_eq!(p.pages, vec![4, 2]);
        let m = p.cold_start_accesses.unwrap();
        assert!((m - 60.0).abs() < 1e-6, "{m}");
        assert!((p.miss_ratio - (0.04 + 1.0) / 2.0).abs() < 1e-12);

        // Everything fits at 9 pages (4 + 5): memory never fills.
        let p = predict_default(&classes, 100);
        assert_eq!((p.cold_start_accesses, p.pages.clone()), (None, vec![4, 5]));
        assert!((p.miss_ratio - (0.04 + 0.1) / 2.0).abs() < 1e-12);
    }

    #[test]
    fn shares_weight_the_windows() {
        // B gets three times A's accesses: after M accesses A has seen x = M/4 and B 3x, asking for
        // ceil(x/10) + ceil(3x/10) pages of 10 items. That is 1 + 2 = 3 up to x = 20/3 and 1 + 3 = 4
        // just above, so with 4 pages M = 4 * 20/3 and the pages are (1, 3).
        let (a, b) = (Cyclic { keys: 1000.0 }, Cyclic { keys: 1000.0 });
        let mut classes = [class(&a, 10, &[]), class(&b, 10, &[])];
        classes[1].accesses = 3000.0;
        let p = predict_default(&classes, 4);
        assert_eq!(p.pages, vec![1, 3]);
        assert!((p.cold_start_accesses.unwrap() - 80.0 / 3.0).abs() < 1e-6);
        assert_eq!(p.miss_ratio, 1.0, "empty curves miss everything");
    }

    #[test]
    fn simultaneous_demand_still_adds_up() {
        // Two identical classes ask for their second page at the same M; only one page is left.
        let fp = Cyclic { keys: 100.0 };
        let classes = [class(&fp, 10, &[1.0]), class(&fp, 10, &[1.0])];
        let p = predict_default(&classes, 3);
        assert_eq!(p.pages, vec![2, 1]);
    }

    #[test]
    fn a_class_arriving_after_the_fill_takes_a_page_from_the_largest() {
        // A and B share the accesses almost equally; C is so rare that it has not stored an item when
        // 10 pages of 10 items are full (just over 40 accesses each, 5 pages each: M = 40 * 2001 / 1000;
        // C has seen 0.04 accesses).
        // C's first page then comes from the largest class, the later of the two equals: B.
        let fp = Cyclic { keys: 1000.0 };
        let mut classes = vec![class(&fp, 10, &[1.0]); 3];
        classes[2].accesses = 1.0;
        let p = predict_default(&classes, 10);
        assert_eq!(p.pages, vec![5, 4, 1]);
        assert!((p.cold_start_accesses.unwrap() - 40.0 * 2001.0 / 1000.0).abs() < 1e-6);
    }

    #[test]
    fn every_used_class_gets_a_first_page() {
        let fp = Cyclic { keys: 100.0 };
        let mut classes = vec![class(&fp, 10, &[1.0, 0.5]); 5];
        classes[4].accesses = 0.0;
        // Four used classes, two pages: each used class still has its first page, as in memcached.
        let p = predict_default(&classes, 2);
        assert_eq!(p.pages, vec![1, 1, 1, 1, 0]);
        assert_eq!(p.cold_start_accesses, Some(0.0));
        assert!((p.miss_ratio - (4.0 * 0.5 + 1.0) / 5.0).abs() < 1e-12);
        assert_eq!(overall_miss_ratio(&classes, &[0; 5]), 1.0);
    }
}
