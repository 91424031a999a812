//! Dynacache's optimisation (Dynacache §4.1, eq. 1): maximise `sum_i f_i h_i(m_i)` subject to
//! `sum_i m_i <= M`, each class's hit curve first fitted by a concave piecewise-linear function.
//!
//! **The fit.** The paper fits each hit-rate curve with a convex (here: concave, since it is maximised)
//! piecewise-linear function (Magnani & Boyd) so that the program is an LP. [`ConcaveFit::upper_hull`]
//! takes the least concave majorant of the curve's points, after making them non-decreasing (LRU's
//! inclusion property: more memory never loses a hit, so a decrease is sampling noise). It is the
//! smallest concave function above every point; it meets the curve at its breakpoints and spans a
//! cliff (a convex stretch) with the chord over it. Its breakpoints are whole page counts.
//!
//! **The solver.** [`maximise`] allocates pages by marginal gain: every class starts at its lower
//! bound, and the remaining pages go one by one to the largest `fit_i(k + 1) - fit_i(k)` among the
//! classes below their upper bound. For concave fits this is optimal, not a heuristic:
//!
//! - A class's marginal gains `g_i(k) = fit_i(k + 1) - fit_i(k)` do not increase with `k` (concavity).
//!   Giving class `i` `x_i` pages is worth `fit_i(min_i)` plus its first `x_i - min_i` gains.
//! - Any feasible allocation therefore takes, from each class, a *prefix* of its gain list, `R` gains in
//!   all (`R`: the pages above the lower bounds). Its value is at most `sum_i fit_i(min_i)` plus the `R`
//!   largest gains of all the lists together.
//! - The greedy takes exactly the `R` largest gains. It takes them as prefixes because within a list
//!   they are in non-increasing order and ties are broken by `k`, so it reaches the bound: optimal.
//!
//! It is also the paper's LP solved exactly: with piecewise-linear concave `h_i` the LP is a fractional
//! knapsack over the segments, every page weighing one, whose optimum fills segments in order of slope;
//! the breakpoints are whole pages, so that optimum is integral and is the greedy's. (The DP of
//! [`crate::optimizer`] finds the same value; the unit tests check it.) Time O(P log P) for P candidate
//! pages, against the DP's O(n P N).
//!
//! **Stability.** Among equal gains the greedy prefers pages a class holds now (a page below its current
//! count), then the lower class index: equal-valued plans keep the current allocation, and the same input
//! always gives the same answer.

/// A concave, non-decreasing piecewise-linear function of whole pages.
#[derive(Clone, Debug, PartialEq)]
pub struct ConcaveFit {
    /// Breakpoints `(pages, value)`, pages strictly increasing, slopes non-increasing; the first is at 0.
    points: Vec<(usize, f64)>,
}

impl ConcaveFit {
    /// The least concave majorant of `values[k]` (the value with `k` pages, `k = 0..values.len()`),
    /// after a running maximum makes them non-decreasing. An empty slice fits the zero function.
    pub fn upper_hull(values: &[f64]) -> ConcaveFit {
        let mut points: Vec<(usize, f64)> = Vec::with_capacity(values.len().min(64));
        let mut best = f64::NEG_INFINITY;
        for (k, &v) in values.iter().enumerate() {
            best = best.max(if v.is_finite() { v } else { 0.0 });
            // Andrew's monotone chain, upper side: drop the last point while it lies on or under the
            // chord from the one before it to the new point.
            while points.len() >= 2 {
                let (x1, y1) = points[points.len() - 2];
                let (x2, y2) = points[points.len() - 1];
                let cross = (x2 - x1) as f64 * (best - y1) - (y2 - y1) * (k - x1) as f64;
                if cross >= 0.0 {
                    points.pop();
                } else {
                    break;
                }
            }
            points.push((k, best));
        }
        if points.is_empty() {
            points.push((0, 0.0));
        }
        ConcaveFit { points }
    }

    /// Its breakpoints, `(pages, value)`.
    pub fn breakpoints(&self) -> &[(usize, f64)] {
        &self.points
    }

    /// The last page count it was fitted to (it stays flat beyond).
    pub fn max_pages(&self) -> usize {
        self.points.last().map_or(0, |p| p.0)
    }

    /// Its value at `pages` (flat beyond the last point).
    pub fn at(&self, pages: usize) -> f64 {
        let i = self.points.partition_point(|p| p.0 <= pages);
        if i == self.points.len() {
            return self.points[i - 1].1;
        }
        // `points[0].0 == 0 <= pages`, so `i >= 1`.
        let (x1, y1) = self.points[i - 1];
        let (x2, y2) = self.points[i];
        y1 + (y2 - y1) * (pages - x1) as f64 / (x2 - x1) as f64
    }

    /// The gain of page `pages + 1`.
    pub fn marginal(&self, pages: usize) -> f64 {
        self.at(pages + 1) - self.at(pages)
    }
}

/// One class in the program.
#[derive(Clone, Debug, PartialEq)]
pub struct ConcaveClass {
    /// Its (weighted) hits as a function of pages.
    pub fit: ConcaveFit,
    /// Pages it holds now (ties keep them).
    pub current_pages: usize,
    /// The fewest pages it may get.
    pub min_pages: usize,
    /// The most pages it may get.
    pub max_pages: usize,
}

/// Why the program has no solution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SolveError {
    /// The lower bounds add up to more than the budget.
    OverBudget {
        /// Sum of the lower bounds.
        floor: usize,
        /// The budget.
        budget: usize,
    },
    /// A class whose lower bound exceeds its upper bound.
    BadBounds(usize),
}

impl std::fmt::Display for SolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SolveError::OverBudget { floor, budget } => {
                write!(f, "lower bounds need {floor} pages, the budget is {budget}")
            }
            SolveError::BadBounds(i) => write!(f, "class {i}: min_pages above max_pages"),
        }
    }
}

impl std::error::Error for SolveError {}

/// The optimum of `max sum_i fit_i(x_i)` subject to `sum_i x_i <= budget` and each `x_i` within its
/// bounds, with every page of the budget placed that some class can take (a zero gain included, so a
/// cache keeps all its memory in use). Optimal for concave fits (see the module's proof).
pub fn maximise(classes: &[ConcaveClass], budget: usize) -> Result<Vec<usize>, SolveError> {
    if let Some(i) = classes.iter().position(|c| c.min_pages > c.max_pages) {
        return Err(SolveError::BadBounds(i));
    }
    let floor: usize = classes.iter().map(|c| c.min_pages).sum();
    if floor > budget {
        return Err(SolveError::OverBudget { floor, budget });
    }
    let mut pages: Vec<usize> = classes.iter().map(|c| c.min_pages).collect();
    // Every candidate page: (gain, whether the class holds it now, class, k).
    let mut candidates: Vec<(f64, bool, usize, usize)> = classes
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            (c.min_pages..c.max_pages).map(move |k| (c.fit.marginal(k), k < c.current_pages, i, k))
        })
        .collect();
    candidates.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1.cmp(&a.1))
            .then(a.2.cmp(&b.2))
            .then(a.3.cmp(&b.3))
    });
    for &(_, _, i, _) in candidates.iter().take(budget - floor) {
        pages[i] += 1;
    }
    Ok(pages)
}

/// `sum_i fit_i(pages_i)`.
pub fn value(classes: &[ConcaveClass], pages: &[usize]) -> f64 {
    classes.iter().zip(pages).map(|(c, &k)| c.fit.at(k)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::{optimal_allocation, Partition, Problem};
    use proptest::prelude::*;

    fn class(values: &[f64], current: usize, min: usize, max: usize) -> ConcaveClass {
        ConcaveClass {
            fit: ConcaveFit::upper_hull(values),
            current_pages: current,
            min_pages: min,
            max_pages: max,
        }
    }

    #[test]
    fn hull_of_a_concave_curve_is_the_curve() {
        let v = [0.0, 5.0, 8.0, 10.0, 11.0, 11.5, 11.5];
        let fit = ConcaveFit::upper_hull(&v);
        for (k, &x) in v.iter().enumerate() {
            assert!((fit.at(k) - x).abs() < 1e-12, "{k}");
        }
    }

    #[test]
    fn hull_spans_a_cliff_and_ignores_noise_dips() {
        // A cliff: nothing until the working set (4 pages) fits, then everything.
        let fit = ConcaveFit::upper_hull(&[0.0, 0.0, 0.0, 0.0, 100.0, 100.0]);
        assert_eq!(fit.breakpoints(), &[(0, 0.0), (4, 100.0), (5, 100.0)]);
        assert!((fit.at(2) - 50.0).abs() < 1e-12);
        // A dip (noise) is lifted by the running maximum; beyond the data the fit is flat.
        let fit = ConcaveFit::upper_hull(&[0.0, 10.0, 9.0, 12.0]);
        assert!(fit.at(2) >= 10.0);
        assert_eq!(fit.at(100), 12.0);
        assert!(fit.marginal(50).abs() < 1e-12);
        // Concave: slopes never increase.
        let b = fit.breakpoints();
        let slopes: Vec<f64> = b
            .windows(2)
            .map(|w| (w[1].1 - w[0].1) / (w[1].0 - w[0].0) as f64)
            .collect();
        assert!(slopes.windows(2).all(|s| s[1] <= s[0] + 1e-12));
    }

    #[test]
    fn known_optimum_on_hand_built_curves() {
        // Class 0 saves 10, 8, 6, 4, 2 hits with its 1st..5th page; class 1 saves 9, 7, 5, 3, 1;
        // class 2 saves 3 a page. With 6 pages the six largest gains are 10, 9, 8, 7, 6, 5: class 0
        // takes 3, class 1 takes 3, class 2 none; 45 hits.
        let c0 = class(&[0.0, 10.0, 18.0, 24.0, 28.0, 30.0], 2, 0, 5);
        let c1 = class(&[0.0, 9.0, 16.0, 21.0, 24.0, 25.0], 2, 0, 5);
        let c2 = class(&[0.0, 3.0, 6.0, 9.0, 12.0, 15.0], 2, 0, 5);
        let classes = [c0, c1, c2];
        let pages = maximise(&classes, 6).unwrap();
        assert_eq!(pages, vec![3, 3, 0]);
        assert!((value(&classes, &pages) - 45.0).abs() < 1e-12);
    }

    #[test]
    fn lower_and_upper_bounds_and_the_budget_hold() {
        let c0 = class(&[0.0, 10.0, 18.0, 24.0, 28.0, 30.0], 1, 0, 2);
        let c1 = class(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], 1, 3, 5);
        let pages = maximise(&[c0.clone(), c1.clone()], 6).unwrap();
        assert_eq!(pages, vec![2, 4]);
        assert!(maximise(&[c0.clone(), c1.clone()], 2).is_err());
        let mut bad = c1;
        bad.max_pages = 1;
        assert_eq!(maximise(&[c0, bad], 10), Err(SolveError::BadBounds(1)));
    }

    #[test]
    fn ties_keep_the_current_allocation() {
        // Two identical linear classes: any split is optimal; the current one is kept.
        let line: Vec<f64> = (0..=10).map(|k| k as f64).collect();
        for current in 0..=10 {
            let classes = [
                class(&line, current, 0, 10),
                class(&line, 10 - current, 0, 10),
            ];
            assert_eq!(maximise(&classes, 10).unwrap(), vec![current, 10 - current]);
        }
        // Flat curves (no hits anywhere) move nothing either.
        let flat = [0.0; 8];
        let classes = [class(&flat, 5, 0, 7), class(&flat, 2, 0, 7)];
        assert_eq!(maximise(&classes, 7).unwrap(), vec![5, 2]);
    }

    /// A random concave, non-decreasing curve of `n + 1` points: cumulative sums of decreasing gains.
    fn concave_curve() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(0.0f64..100.0, 1..12).prop_map(|mut gains| {
            gains.sort_by(|a, b| b.total_cmp(a));
            std::iter::once(0.0)
                .chain(gains.iter().scan(0.0, |s, g| {
                    *s += g;
                    Some(*s)
                }))
                .collect()
        })
    }

    proptest! {
        /// The greedy's value equals the exact DP's (any cost) on the same fits, within every bound.
        #[test]
        fn greedy_matches_the_dynamic_program(
            curves in prop::collection::vec((concave_curve(), 0usize..4, 0usize..3), 1..6),
            slack in 0usize..20,
        ) {
            let classes: Vec<ConcaveClass> = curves
                .iter()
                .map(|(v, cur, min)| {
                    let max = v.len() - 1;
                    let min = (*min).min(max);
                    class(v, (*cur).clamp(min, max), min, max)
                })
                .collect();
            let floor: usize = classes.iter().map(|c| c.min_pages).sum();
            let ceiling: usize = classes.iter().map(|c| c.max_pages).sum();
            let budget = (floor + slack).min(ceiling);
            let pages = maximise(&classes, budget).unwrap();
            prop_assert_eq!(pages.iter().sum::<usize>(), budget);
            for (c, &k) in classes.iter().zip(&pages) {
                prop_assert!(k >= c.min_pages && k <= c.max_pages);
            }
            let dp = optimal_allocation(&Problem {
                partitions: classes
                    .iter()
                    .map(|c| Partition {
                        cost: (0..=c.max_pages).map(|k| -c.fit.at(k)).collect(),
                        current_pages: c.current_pages,
                        min_pages: c.min_pages,
                    })
                    .collect(),
                total_pages: budget,
                max_moves: None,
                granularity: 1,
            })
            .unwrap();
            prop_assert!((value(&classes, &pages) + dp.cost).abs() < 1e-6,
                "greedy {} dp {}", value(&classes, &pages), -dp.cost);
            // Stable: the same input gives the same answer, and the answer as the current allocation
            // gives itself back.
            prop_assert_eq!(&maximise(&classes, budget).unwrap(), &pages);
            let again: Vec<ConcaveClass> = classes
                .iter()
                .zip(&pages)
                .map(|(c, &k)| ConcaveClass { current_pages: k, ..c.clone() })
                .collect();
            prop_assert_eq!(maximise(&again, budget).unwrap(), pages);
        }

        /// The hull lies on or above every (running-maximum) point and is concave.
        #[test]
        fn hull_majorises_and_is_concave(v in prop::collection::vec(0.0f64..100.0, 1..30)) {
            let fit = ConcaveFit::upper_hull(&v);
            let mut run = f64::NEG_INFINITY;
            for (k, &x) in v.iter().enumerate() {
                run = run.max(x);
                prop_assert!(fit.at(k) >= run - 1e-9);
            }
            for k in 0..v.len() + 2 {
                prop_assert!(fit.marginal(k + 1) <= fit.marginal(k) + 1e-9);
                prop_assert!(fit.marginal(k) >= -1e-9);
            }
        }
    }
}
