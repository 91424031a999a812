//! The optimizer every curve-driven policy shares: LAMA's Algorithm 1 (and mPart's Algorithm 1, the same
//! program over tenants instead of slab classes).
//!
//! Given partitions with a cost for every page count (expected misses, or response time: any function),
//! find the allocation that minimises the total cost, with every partition within its bounds, the pages
//! adding up to exactly `total_pages`, and each partition moved at most `max_moves * granularity` pages
//! from where it is, in steps of `granularity` pages. Dynamic programming over partitions:
//!
//! ```text
//! F[i][j] = min over allowed k of F[i-1][j-k] + cost_i(k)      (j pages among the first i partitions)
//! ```
//!
//! It is exact for any cost, convex or not (a greedy marginal-gain allocation is not). Time
//! O(n * total_pages * (2 * max_moves + 1)) and memory O(n * total_pages): 40 classes of 1,024 pages with
//! N = 50 is about 4M steps.

/// One partition (a slab class, or a tenant) as the optimizer sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Partition {
    /// `cost[k]` is the partition's cost with `k` pages, for every `k` up to its upper bound (inclusive).
    pub cost: Vec<f64>,
    /// Pages it holds now.
    pub current_pages: usize,
    /// It may not get fewer pages than this (a reserve, or what it must keep).
    pub min_pages: usize,
}

impl Partition {
    /// The most pages this partition may hold: the end of its cost table.
    pub fn max_pages(&self) -> usize {
        self.cost.len().saturating_sub(1)
    }
}

/// What to optimise.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// The partitions, each with its cost curve and bounds.
    pub partitions: Vec<Partition>,
    /// The new allocation uses exactly this many pages.
    pub total_pages: usize,
    /// N: at most this many steps of `granularity` pages away from `current_pages` per partition;
    /// `None` searches the whole range (the theoretical optimum).
    pub max_moves: Option<usize>,
    /// r: pages change in units of this many (1 in small caches; LAMA suggests memory / 1 GiB).
    pub granularity: usize,
}

/// The optimiser's answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Allocation {
    /// Pages per partition, in the problem's order.
    pub pages: Vec<usize>,
    /// Total cost of that allocation (the predicted misses, or time).
    pub cost: f64,
}

/// Why a problem has no solution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptimizeError {
    /// No allocation within the bounds and move limits adds up to `total_pages`.
    Infeasible,
    /// `granularity` is 0, or a partition's current pages exceed its cost table.
    Invalid(String),
}

impl std::fmt::Display for OptimizeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptimizeError::Infeasible => {
                f.write_str("no allocation meets the bounds and the page total")
            }
            OptimizeError::Invalid(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for OptimizeError {}

/// The page counts partition `p` may take: within its bounds, within the move radius, and on the
/// granularity grid through its current allocation.
fn candidates(p: &Partition, problem: &Problem) -> impl Iterator<Item = usize> {
    let r = problem.granularity;
    let max = p.max_pages();
    let (lo, hi) = match problem.max_moves {
        Some(n) => (
            p.current_pages.saturating_sub(n * r).max(p.min_pages),
            (p.current_pages + n * r).min(max),
        ),
        None => (p.min_pages, max),
    };
    // Values congruent to current_pages modulo r, from lo to hi.
    let offset = p.current_pages % r;
    let first = if lo % r <= offset {
        lo - lo % r + offset
    } else {
        lo - lo % r + r + offset
    };
    (first..=hi).step_by(r).filter(move |&k| k >= lo)
}

/// LAMA Algorithm 1: the cheapest allocation of exactly `total_pages`.
pub fn optimal_allocation(problem: &Problem) -> Result<Allocation, OptimizeError> {
    if problem.granularity == 0 {
        return Err(OptimizeError::Invalid(
            "granularity must be at least one page".into(),
        ));
    }
    if let Some((i, _)) = problem
        .partitions
        .iter()
        .enumerate()
        .find(|(_, p)| p.current_pages > p.max_pages())
    {
        return Err(OptimizeError::Invalid(format!(
            "partition {i} holds more pages than its cost table covers"
        )));
    }
    let total = problem.total_pages;
    let n = problem.partitions.len();
    // best[j]: cheapest cost of j pages among the partitions so far; choice[i][j]: pages of partition i.
    let mut best = vec![f64::INFINITY; total + 1];
    best[0] = 0.0;
    let mut choice = vec![vec![u32::MAX; total + 1]; n];
    for (i, p) in problem.partitions.iter().enumerate() {
        let ks: Vec<usize> = candidates(p, problem).collect();
        let mut next = vec![f64::INFINITY; total + 1];
        for (j, slot) in next.iter_mut().enumerate() {
            for &k in ks.iter().take_while(|&&k| k <= j) {
                let c = best[j - k] + p.cost[k];
                if c < *slot {
                    *slot = c;
                    choice[i][j] = k as u32;
                }
            }
        }
        best = next;
    }
    if !best[total].is_finite() {
        return Err(OptimizeError::Infeasible);
    }
    let mut pages = vec![0; n];
    let mut j = total;
    for i in (0..n).rev() {
        let k = choice[i][j] as usize;
        pages[i] = k;
        j -= k;
    }
    Ok(Allocation {
        pages,
        cost: best[total],
    })
}

/// One step of carrying out a target: `pages` pages from partition `src` to partition `dst`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PageMove {
    /// The partition that gives.
    pub src: usize,
    /// The partition that takes.
    pub dst: usize,
    /// How many pages.
    pub pages: usize,
}

/// `(partition, pages)` for every partition holding more in `from` than in `to`, by how many.
fn excess(from: &[usize], to: &[usize]) -> Vec<(usize, usize)> {
    from.iter()
        .zip(to)
        .enumerate()
        .filter(|(_, (f, t))| f > t)
        .map(|(i, (f, t))| (i, f - t))
        .collect()
}

/// Moves that take `current` toward `target`, at most `max_pages` pages in all: pages come from the
/// partitions that must shrink most and go to those that must grow most, largest differences first.
pub fn plan_moves(current: &[usize], target: &[usize], max_pages: usize) -> Vec<PageMove> {
    let mut give = excess(current, target);
    let mut take = excess(target, current);
    give.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    take.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let (mut moves, mut budget) = (Vec::new(), max_pages);
    let (mut g, mut t) = (0, 0);
    while budget > 0 && g < give.len() && t < take.len() {
        let pages = give[g].1.min(take[t].1).min(budget);
        moves.push(PageMove {
            src: give[g].0,
            dst: take[t].0,
            pages,
        });
        give[g].1 -= pages;
        take[t].1 -= pages;
        budget -= pages;
        if give[g].1 == 0 {
            g += 1;
        }
        if take[t].1 == 0 {
            t += 1;
        }
    }
    moves
}

/// Like [`plan_moves`], but pages are taken first from the partitions of lowest `rank` (LAMA's choice of
/// victims by PSA risk: the fewest requests per page lose least when a page leaves), and given first to
/// those that must grow most.
pub fn plan_moves_ranked(
    current: &[usize],
    target: &[usize],
    max_pages: usize,
    rank: &[f64],
) -> Vec<PageMove> {
    let mut give = excess(current, target);
    give.sort_by(|a, b| rank[a.0].total_cmp(&rank[b.0]).then(a.0.cmp(&b.0)));
    let mut moves = Vec::new();
    let mut budget = max_pages;
    let mut deficits: Vec<usize> = current
        .iter()
        .zip(target)
        .map(|(c, t)| t.saturating_sub(*c))
        .collect();
    for (src, mut surplus) in give {
        while surplus > 0 && budget > 0 {
            let Some(dst) = (0..deficits.len())
                .filter(|&i| deficits[i] > 0)
                .max_by(|&a, &b| deficits[a].cmp(&deficits[b]).then(b.cmp(&a)))
            else {
                return moves;
            };
            let pages = surplus.min(deficits[dst]).min(budget);
            moves.push(PageMove { src, dst, pages });
            surplus -= pages;
            deficits[dst] -= pages;
            budget -= pages;
        }
    }
    moves
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn partition(cost: Vec<f64>, current: usize) -> Partition {
        Partition {
            cost,
            current_pages: current,
            min_pages: 0,
        }
    }

    /// Every allocation by brute force.
    fn brute_force(problem: &Problem) -> Option<f64> {
        fn go(problem: &Problem, i: usize, left: usize, acc: f64, best: &mut Option<f64>) {
            if i == problem.partitions.len() {
                if left == 0 && best.is_none_or(|b| acc < b) {
                    *best = Some(acc);
                }
                return;
            }
            let p = &problem.partitions[i];
            for k in candidates(p, problem).filter(|&k| k <= left) {
                go(problem, i + 1, left - k, acc + p.cost[k], best);
            }
        }
        let mut best = None;
        go(problem, 0, problem.total_pages, 0.0, &mut best);
        best
    }

    #[test]
    fn exact_on_a_non_convex_curve_where_greedy_fails() {
        // Partition 0's misses fall only once it holds 4 pages (a working set that fits or not, a cliff);
        // partition 1's fall a little with every page. Greedy marginal gain gives everything to partition 1.
        let cliff = vec![100.0, 100.0, 100.0, 100.0, 10.0, 10.0];
        let slope = vec![50.0, 45.0, 40.0, 35.0, 30.0, 25.0];
        let problem = Problem {
            partitions: vec![partition(cliff, 1), partition(slope, 4)],
            total_pages: 5,
            max_moves: None,
            granularity: 1,
        };
        let a = optimal_allocation(&problem).unwrap();
        assert_eq!(a.pages, vec![4, 1]);
        assert_eq!(a.cost, 10.0 + 45.0);
    }

    #[test]
    fn bounds_radius_and_granularity_are_honoured() {
        let flat = |n: usize, slope: f64| {
            (0..=n)
                .map(|k| 100.0 - slope * k as f64)
                .collect::<Vec<_>>()
        };
        let mut problem = Problem {
            partitions: vec![partition(flat(20, 1.0), 10), partition(flat(20, 5.0), 10)],
            total_pages: 20,
            max_moves: Some(3),
            granularity: 2,
        };
        // Unbounded, partition 1 (steeper) would take every page; the radius allows 3 moves of 2 pages.
        assert_eq!(optimal_allocation(&problem).unwrap().pages, vec![4, 16]);
        problem.partitions[0].min_pages = 8;
        assert_eq!(optimal_allocation(&problem).unwrap().pages, vec![8, 12]);
        problem.total_pages = 21;
        assert_eq!(
            optimal_allocation(&problem),
            Err(OptimizeError::Infeasible),
            "odd total on an even grid"
        );
        problem.granularity = 0;
        assert!(matches!(
            optimal_allocation(&problem),
            Err(OptimizeError::Invalid(_))
        ));
    }

    #[test]
    fn plan_moves_is_bounded_and_reaches_the_target_when_allowed() {
        let (current, target) = ([10, 0, 5, 5], [4, 6, 8, 2]);
        let moves = plan_moves(&current, &target, 100);
        let mut after = current;
        for m in &moves {
            after[m.src] -= m.pages;
            after[m.dst] += m.pages;
        }
        assert_eq!(after, target);
        let bounded = plan_moves(&current, &target, 4);
        assert_eq!(bounded.iter().map(|m| m.pages).sum::<usize>(), 4);
        assert_eq!(
            bounded[0],
            PageMove {
                src: 0,
                dst: 1,
                pages: 4
            }
        );
    }

    proptest! {
        #[test]
        fn matches_brute_force(
            costs in prop::collection::vec(prop::collection::vec(0.0f64..100.0, 7), 1..4),
            currents in prop::collection::vec(0usize..7, 4),
            max_moves in prop_oneof![Just(None), (0usize..4).prop_map(Some)],
            granularity in 1usize..3,
        ) {
            let partitions: Vec<Partition> = costs.into_iter().zip(currents).map(|(c, cur)| partition(c, cur)).collect();
            let total_pages = partitions.iter().map(|p| p.current_pages).sum();
            let problem = Problem { partitions, total_pages, max_moves, granularity };
            let brute = brute_force(&problem);
            match optimal_allocation(&problem) {
                Ok(a) => {
                    let b = brute.expect("brute force finds the same feasible set");
                    prop_assert!((a.cost - b).abs() < 1e-9, "dp {} brute {}", a.cost, b);
                    prop_assert_eq!(a.pages.iter().sum::<usize>(), problem.total_pages);
                    let recomputed: f64 = a.pages.iter().zip(&problem.partitions).map(|(&k, p)| p.cost[k]).sum();
                    prop_assert!((recomputed - a.cost).abs() < 1e-9);
                }
                Err(OptimizeError::Infeasible) => prop_assert!(brute.is_none()),
                Err(e) => prop_assert!(false, "{e}"),
            }
        }
    }
}
