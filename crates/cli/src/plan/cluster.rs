//! The cluster model of `mrcache plan --server`: from the per-class miss-ratio curves of the nodes of a
//! consistent-hashing cluster, the miss ratio of the cluster at other total memory sizes and node counts,
//! and the least memory that reaches a target.
//!
//! The model, stated precisely:
//!
//! 1. **A node sees a hash sample of the keys.** Consistent hashing (ketama in twemproxy, mcrouter or the
//!    client) sends each key to one node, so with `n` nodes each node sees about `1/n` of the keys and, with
//!    them, of the requests. A node's stream is a spatial (by-key) sample of the cluster's stream, the
//!    sampling SHARDS rests on: the LRU curve of a `1/n` key sample at size `s` is the whole stream's
//!    curve at size `n s`.
//! 2. **Rescaling to `n'` nodes.** Measured node `i` (one of `n`) with `p` pages in class `c` misses
//!    `m_ic(p)`. A planned node of a cluster of `n'` nodes sees `1/n'` of the keys, so with `p` pages its
//!    class `c` misses as the measured class did with `p n'/n` pages: `m'_ic(p) = m_ic(p n'/n)`.
//! 3. **Each node divides its memory by its curves** (LAMA Algorithm 1, the allocation mrcached's
//!    curve-driven policies approach; §5.6's theoretical upper bound). A planned node has
//!    `P' = floor(M' / (n' S))` whole pages of size `S` out of the cluster's `M'` bytes, and misses
//!    `MR'_i = min over allocations a with sum_c a_c = P' of sum_c R_ic m'_ic(a_c) / sum_c R_ic`
//!    (LAMA eq. 3 over the classes, `R_ic` the class's requests).
//! 4. **The cluster's miss ratio** is the request-weighted mean over the measured nodes, each one an
//!    estimate of what any planned node sees (eq. 3 again, across nodes — the §3.5 / eq. 6 reasoning of
//!    predicting a memory size from one profile, applied across servers):
//!    `MR(n', M') = sum_i R_i MR'_i / sum_i R_i`.
//!
//! Consequences worth knowing: at a fixed total memory the node count matters only through whole pages
//! (every node rounds down to pages, and every class needs whole pages on every node), so more nodes of the
//! same total lose a little; the hit ratio is `1 - MR`.
//!
//! Invariants and limits:
//! - A curve is known from 0 pages (miss ratio 1) to its last measured point; between points it is
//!   interpolated linearly, beyond the last it is held. Where the curve runs to the class's whole working
//!   set (the admin port's curves) that is exact; where it stops at the node's memory (`stats mrc`) a
//!   held value over-estimates misses (a miss-ratio curve never rises): a prediction past the measured
//!   range is then a lower bound on the hit ratio, flagged `extrapolated`.
//! - Large nodes are optimised in steps of `granularity` pages (at most [`MAX_STEPS`] steps a node, LAMA's
//!   granularity r), pages beyond the last whole step left unused: again the hit ratio is not overstated.
//! - Nothing here does I/O: curves come in as data (from `stats mrc`, `/mrc`, or a test).

use mrcache_policy::optimizer::{optimal_allocation, Partition, Problem};

/// Most allocation steps the optimiser considers per planned node; larger nodes move in coarser steps.
pub const MAX_STEPS: usize = 256;

/// One slab class of one measured node.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassCurve {
    /// Requests the class's profiler saw (its weight among the node's classes).
    pub requests: u64,
    /// `(pages, miss_ratio)`, pages ascending and positive.
    pub points: Vec<(f64, f64)>,
}

impl ClassCurve {
    /// The miss ratio with `pages` pages: 1 with none, linear between points, held past the last.
    pub fn miss_ratio_at(&self, pages: f64) -> f64 {
        let mut previous = (0.0, 1.0);
        for &(p, m) in &self.points {
            if pages <= p {
                let (p0, m0) = previous;
                if pages == p || p <= p0 {
                    return m;
                }
                return m0 + (m - m0) * (pages - p0) / (p - p0);
            }
            previous = (p, m);
        }
        previous.1
    }
}

/// One measured node: its curves and the memory they were measured up to.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeCurves {
    /// Where it was read from, for messages.
    pub name: String,
    pub page_size_bytes: u64,
    /// The node's memory in pages (its `-m`): the classes' curves are measured at least up to this.
    pub page_limit: usize,
    pub classes: Vec<ClassCurve>,
    /// Every curve runs to its class's whole working set, so past its end it is flat for certain (the
    /// admin port's curves); otherwise curves end at `page_limit` and what lies past is unknown.
    pub curves_reach_working_set: bool,
}

impl NodeCurves {
    fn requests(&self) -> u64 {
        self.classes.iter().map(|c| c.requests).sum()
    }

    /// The largest page count at which every class's curve is known.
    fn measured_pages(&self) -> f64 {
        if self.curves_reach_working_set {
            return f64::INFINITY;
        }
        self.classes
            .iter()
            .filter(|c| c.requests > 0)
            .filter_map(|c| c.points.last().map(|p| p.0))
            .fold(f64::INFINITY, f64::min)
            .min(self.page_limit as f64)
    }

    /// This node's miss ratio rescaled to a node of `pages` pages seeing `scale` times the keys it saw
    /// (`scale = n / n'`), under the optimal allocation. `None` when it saw no requests.
    fn planned_miss_ratio(&self, pages: usize, scale: f64) -> Option<f64> {
        let requests = self.requests();
        if requests == 0 {
            return None;
        }
        let granularity = pages.div_ceil(MAX_STEPS).max(1);
        let steps = pages / granularity;
        let partitions: Vec<Partition> = self
            .classes
            .iter()
            .filter(|c| c.requests > 0)
            .map(|c| Partition {
                cost: (0..=steps)
                    .map(|k| {
                        let equivalent = (k * granularity) as f64 / scale;
                        c.requests as f64 * c.miss_ratio_at(equivalent)
                    })
                    .collect(),
                current_pages: 0,
                min_pages: 0,
            })
            .collect();
        let problem = Problem {
            partitions,
            total_pages: steps,
            max_moves: None,
            granularity: 1,
        };
        // Every class may take 0..=steps, so exactly `steps` is always feasible.
        let allocation = optimal_allocation(&problem).expect("feasible by construction");
        Some(allocation.cost / requests as f64)
    }
}

/// The measured cluster.
#[derive(Clone, Debug)]
pub struct Cluster {
    nodes: Vec<NodeCurves>,
    page_size_bytes: u64,
}

/// The predicted miss ratio of one planned cluster.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub nodes: usize,
    pub total_memory_bytes: u64,
    /// Whole pages each planned node has.
    pub pages_per_node: usize,
    pub miss_ratio: f64,
    /// Some class needed its curve beyond the measured range: the hit ratio is a lower bound.
    pub extrapolated: bool,
}

impl Prediction {
    pub fn hit_ratio(&self) -> f64 {
        1.0 - self.miss_ratio
    }
}

impl Cluster {
    /// The measured nodes, which must share a page size and have seen some requests.
    pub fn new(nodes: Vec<NodeCurves>) -> Result<Cluster, String> {
        let first = nodes.first().ok_or("no nodes to plan from")?;
        let page_size_bytes = first.page_size_bytes;
        if let Some(other) = nodes.iter().find(|n| n.page_size_bytes != page_size_bytes) {
            return Err(format!(
                "{} has {}-byte pages and {} {}-byte ones: plan a cluster of one page size",
                first.name, page_size_bytes, other.name, other.page_size_bytes
            ));
        }
        if nodes.iter().all(|n| n.requests() == 0) {
            return Err("no node has profiled any request yet: drive traffic first \
                 (and keep profiling on: -o mrc_sample_rate above 0)"
                .into());
        }
        Ok(Cluster {
            nodes,
            page_size_bytes,
        })
    }

    /// Measured nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn page_size_bytes(&self) -> u64 {
        self.page_size_bytes
    }

    /// The memory of the measured cluster: the sum of its nodes' memory.
    pub fn total_memory_bytes(&self) -> u64 {
        self.nodes
            .iter()
            .map(|n| n.page_limit as u64 * n.page_size_bytes)
            .sum()
    }

    /// The miss ratio of `nodes` nodes sharing `total_memory_bytes` (model steps 2-4).
    pub fn predict(&self, nodes: usize, total_memory_bytes: u64) -> Prediction {
        let nodes = nodes.max(1);
        let pages = (total_memory_bytes / nodes as u64 / self.page_size_bytes) as usize;
        self.predict_pages(nodes, pages)
    }

    fn predict_pages(&self, nodes: usize, pages_per_node: usize) -> Prediction {
        // A planned node sees n/n' times the keys a measured node saw.
        let scale = self.nodes.len() as f64 / nodes as f64;
        let (mut misses, mut requests) = (0.0, 0.0);
        let mut extrapolated = false;
        for node in &self.nodes {
            if let Some(ratio) = node.planned_miss_ratio(pages_per_node, scale) {
                let weight = node.requests() as f64;
                misses += weight * ratio;
                requests += weight;
                extrapolated |= pages_per_node as f64 / scale > node.measured_pages() + 1e-9;
            }
        }
        Prediction {
            nodes,
            total_memory_bytes: pages_per_node as u64 * nodes as u64 * self.page_size_bytes,
            pages_per_node,
            miss_ratio: misses / requests,
            extrapolated,
        }
    }

    /// The least memory (whole pages on each of `nodes` nodes) whose predicted hit ratio reaches
    /// `target_hit_ratio`, searching up to `max_total_bytes`; `None` when even that does not.
    /// Bisection: more pages never raise the optimal allocation's misses.
    pub fn memory_for(
        &self,
        nodes: usize,
        target_hit_ratio: f64,
        max_total_bytes: u64,
    ) -> Option<Prediction> {
        let nodes = nodes.max(1);
        let reaches = |p: &Prediction| p.hit_ratio() >= target_hit_ratio - 1e-12;
        let mut hi = (max_total_bytes / nodes as u64 / self.page_size_bytes).max(1) as usize;
        let top = self.predict_pages(nodes, hi);
        if !reaches(&top) {
            return None;
        }
        let mut best = top;
        let mut lo = 0usize; // never reaches: 0 pages miss every request
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let p = self.predict_pages(nodes, mid);
            if reaches(&p) {
                hi = mid;
                best = p;
            } else {
                lo = mid;
            }
        }
        Some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// A class whose curve falls linearly from 1 at 0 pages to `floor` at `pages`, then stays.
    fn linear(requests: u64, pages: f64, floor: f64) -> ClassCurve {
        ClassCurve {
            requests,
            points: vec![(pages, floor)],
        }
    }

    fn node(name: &str, page_limit: usize, classes: Vec<ClassCurve>) -> NodeCurves {
        NodeCurves {
            name: name.into(),
            page_size_bytes: MIB,
            page_limit,
            classes,
            curves_reach_working_set: false,
        }
    }

    #[test]
    fn curves_interpolate_from_one_and_hold_past_the_end() {
        let c = ClassCurve {
            requests: 1,
            points: vec![(2.0, 0.5), (4.0, 0.1)],
        };
        assert_eq!(c.miss_ratio_at(0.0), 1.0);
        assert_eq!(c.miss_ratio_at(1.0), 0.75);
        assert_eq!(c.miss_ratio_at(2.0), 0.5);
        assert!((c.miss_ratio_at(3.0) - 0.3).abs() < 1e-12);
        assert_eq!(c.miss_ratio_at(4.0), 0.1);
        assert_eq!(c.miss_ratio_at(100.0), 0.1);
    }

    #[test]
    fn the_measured_cluster_predicts_itself() {
        // Two nodes of 8 pages, one class each, every page taking 10% off the miss ratio.
        let cluster = Cluster::new(vec![
            node("a", 8, vec![linear(100, 10.0, 0.0)]),
            node("b", 8, vec![linear(100, 10.0, 0.0)]),
        ])
        .unwrap();
        let p = cluster.predict(2, 16 * MIB);
        assert_eq!(p.pages_per_node, 8);
        assert!((p.miss_ratio - 0.2).abs() < 1e-12, "{p:?}");
        assert!(!p.extrapolated);
    }

    #[test]
    fn at_the_same_total_memory_the_node_count_only_rescales() {
        // Measured: 2 nodes of 8 pages. One node of 16 pages sees twice the keys: its 16 pages are
        // worth 8 of a measured node's, so the same miss ratio; so are 4 nodes of 4 pages.
        let cluster = Cluster::new(vec![
            node("a", 8, vec![linear(100, 10.0, 0.0)]),
            node("b", 8, vec![linear(100, 10.0, 0.0)]),
        ])
        .unwrap();
        for nodes in [1, 2, 4, 8] {
            let p = cluster.predict(nodes, 16 * MIB);
            assert!((p.miss_ratio - 0.2).abs() < 1e-12, "{nodes}: {p:?}");
        }
        // Half the memory on one node: 8 pages worth 4 measured ones.
        let p = cluster.predict(1, 8 * MIB);
        assert!((p.miss_ratio - 0.6).abs() < 1e-12, "{p:?}");
        // Three nodes of 17 MiB in all round down to 5 pages each: 15 pages, worth 7.5 measured ones.
        let p = cluster.predict(3, 17 * MIB);
        assert_eq!((p.pages_per_node, p.total_memory_bytes), (5, 15 * MIB));
        assert!((p.miss_ratio - 0.25).abs() < 1e-12, "{p:?}");
    }

    #[test]
    fn nodes_are_weighted_by_their_requests() {
        // Node a misses 20% at 8 pages, node b 60% (its curve falls half as fast); a has 3x the traffic.
        let cluster = Cluster::new(vec![
            node("a", 8, vec![linear(300, 10.0, 0.0)]),
            node("b", 8, vec![linear(100, 20.0, 0.0)]),
        ])
        .unwrap();
        let p = cluster.predict(2, 16 * MIB);
        assert!((p.miss_ratio - (300.0 * 0.2 + 100.0 * 0.6) / 400.0).abs() < 1e-12);
    }

    #[test]
    fn each_planned_node_divides_its_pages_optimally_among_classes() {
        // Class 1: 2 pages hold all of it (1 -> 0.5 -> 0); class 2 gains 5% a page. With 4 pages the
        // optimum gives class 1 its 2 pages and class 2 the other 2: misses (0 * 100 + 0.9 * 100) / 200.
        let cluster = Cluster::new(vec![node(
            "a",
            4,
            vec![linear(100, 2.0, 0.0), linear(100, 20.0, 0.0)],
        )])
        .unwrap();
        let p = cluster.predict(1, 4 * MIB);
        assert!((p.miss_ratio - 0.45).abs() < 1e-12, "{p:?}");
    }

    #[test]
    fn beyond_the_measured_memory_the_curve_is_held_and_flagged() {
        let cluster = Cluster::new(vec![node("a", 4, vec![linear(10, 4.0, 0.5)])]).unwrap();
        let inside = cluster.predict(1, 4 * MIB);
        assert!(!inside.extrapolated);
        let beyond = cluster.predict(1, 8 * MIB);
        assert!(beyond.extrapolated);
        assert_eq!(beyond.miss_ratio, 0.5);
        // Two planned nodes of 4 pages each see half the keys: worth 8 measured pages, beyond 4.
        assert!(cluster.predict(2, 8 * MIB).extrapolated);
        // A curve that runs to the working set is flat past its end: no bound, a prediction.
        let mut whole = node("a", 4, vec![linear(10, 4.0, 0.5)]);
        whole.curves_reach_working_set = true;
        let beyond = Cluster::new(vec![whole]).unwrap().predict(1, 8 * MIB);
        assert!(!beyond.extrapolated);
        assert_eq!(beyond.miss_ratio, 0.5);
    }

    #[test]
    fn memory_for_a_target_is_the_least_that_reaches_it() {
        // Measured: 2 nodes of 16 pages, each page taking 5% off. 90% hits needs 18 measured pages,
        // i.e. 36 MiB in all, whatever the node count that divides it into whole pages.
        let cluster = Cluster::new(vec![
            node("a", 16, vec![linear(1, 20.0, 0.0)]),
            node("b", 16, vec![linear(1, 20.0, 0.0)]),
        ])
        .unwrap();
        for nodes in [1, 2, 3, 4] {
            let p = cluster.memory_for(nodes, 0.90, 1024 * MIB).unwrap();
            let needed = 36u64.div_ceil(nodes as u64) * nodes as u64;
            assert_eq!(p.total_memory_bytes, needed * MIB, "{nodes}: {p:?}");
            assert!(p.hit_ratio() >= 0.90 - 1e-12);
            assert!(
                cluster
                    .predict(nodes, p.total_memory_bytes - nodes as u64 * MIB)
                    .hit_ratio()
                    < 0.90
            );
        }
        // Out of reach within the search bound.
        assert!(cluster.memory_for(2, 0.90, 32 * MIB).is_none());
    }

    #[test]
    fn large_nodes_move_in_coarser_steps_and_never_overstate_hits() {
        // 999 pages per node: steps of 4 pages (249 steps), so 996 pages are used.
        let cluster = Cluster::new(vec![node("a", 1000, vec![linear(1, 1000.0, 0.0)])]).unwrap();
        let p = cluster.predict(1, 999 * MIB);
        assert!(
            (p.miss_ratio - (1.0 - 996.0 / 1000.0)).abs() < 1e-12,
            "{p:?}"
        );
    }

    #[test]
    fn a_cluster_needs_one_page_size_and_some_traffic() {
        let mut other = node("b", 8, vec![linear(1, 1.0, 0.0)]);
        other.page_size_bytes = 2 * MIB;
        assert!(Cluster::new(vec![node("a", 8, vec![linear(1, 1.0, 0.0)]), other]).is_err());
        assert!(Cluster::new(vec![node("a", 8, vec![linear(0, 1.0, 0.0)])]).is_err());
        assert!(Cluster::new(Vec::new()).is_err());
    }
}
