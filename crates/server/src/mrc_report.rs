//! The online miss-ratio curves of the slab classes, as `stats mrc [class]` prints them and as the admin
//! port's `/mrc` serves them (JSON).
//!
//! Each class's curve comes from the engine's profilers (`Engine::mrc`), evaluated in items and reported
//! both in items and at page counts (the unit allocation policies move), with the class's current pages
//! and items beside it so a reader can see where on its curve each class sits.

use serde::Serialize;

use mrcache_engine::ClassId;
use mrcache_profile::{MrcQuery, SizeUnit};

use crate::context::ServerContext;

/// Page counts at which curves are reported: every count up to this, then log-spaced.
const DENSE_PAGE_POINTS: usize = 16;
/// Log-spaced page points beyond the dense ones.
const SPARSE_PAGE_POINTS: usize = 24;

/// One class's curve.
#[derive(Debug, Serialize)]
pub struct ClassCurve {
    pub class: u8,
    pub chunk_size_bytes: usize,
    pub chunks_per_page: usize,
    pub pages: usize,
    pub items: usize,
    /// Uses of the class the profilers saw (hits and stores).
    pub requests: u64,
    pub sampling_rate: f64,
    /// `[items, miss_ratio]` at log-spaced sizes.
    pub curve_items: Vec<(u64, f64)>,
    /// `[pages, miss_ratio]`.
    pub curve_pages: Vec<(usize, f64)>,
}

/// All classes.
#[derive(Debug, Serialize)]
pub struct MrcReport {
    pub profiling: bool,
    pub shards: usize,
    pub page_size_bytes: usize,
    pub page_limit: usize,
    pub profiler_memory_bytes: usize,
    pub classes: Vec<ClassCurve>,
}

/// Page counts to evaluate for a cache of `page_limit` pages.
fn page_points(page_limit: usize) -> Vec<usize> {
    let mut points: Vec<usize> = (1..=page_limit.min(DENSE_PAGE_POINTS)).collect();
    if page_limit > DENSE_PAGE_POINTS {
        let ratio =
            (page_limit as f64 / DENSE_PAGE_POINTS as f64).powf(1.0 / SPARSE_PAGE_POINTS as f64);
        let mut p = DENSE_PAGE_POINTS as f64;
        for _ in 0..SPARSE_PAGE_POINTS {
            p *= ratio;
            let page = (p.round() as usize).min(page_limit);
            if points.last() != Some(&page) {
                points.push(page);
            }
        }
    }
    points
}

/// The curves of every profiled class, or of `class` only.
pub fn report(ctx: &ServerContext, class: Option<ClassId>) -> MrcReport {
    let engine = &ctx.engine;
    let clock = ctx.clock();
    let stats = engine.stats(clock);
    let geometry = engine.geometry();
    let query = MrcQuery::new(SizeUnit::Objects);
    let pages = page_points(stats.page_limit);
    let curves = engine.mrc(class, &query);
    let classes = curves
        .into_iter()
        .map(|c| {
            let g = geometry.class(c.class);
            let snapshot = &stats.classes[c.class.index()];
            ClassCurve {
                class: c.class.0,
                chunk_size_bytes: g.chunk_size_bytes,
                chunks_per_page: g.chunks_per_page,
                pages: snapshot.total_pages,
                items: snapshot.items,
                requests: c.requests,
                sampling_rate: c.sampling_rate,
                curve_items: c
                    .curve
                    .points()
                    .iter()
                    .map(|p| (p.size, p.miss_ratio))
                    .collect(),
                curve_pages: pages
                    .iter()
                    .map(|&p| (p, c.curve.miss_ratio_at((p * g.chunks_per_page) as f64)))
                    .collect(),
            }
        })
        .collect();
    MrcReport {
        profiling: engine.config().profile_sample_rate.is_some(),
        shards: engine.shard_count(),
        page_size_bytes: stats.page_size_bytes,
        page_limit: stats.page_limit,
        profiler_memory_bytes: engine.profile_memory_bytes(),
        classes,
    }
}

/// `stats mrc [class]`: `STAT` lines, then `END`. Curves are `pages:miss_ratio` pairs, comma-separated.
pub fn write_stats(ctx: &ServerContext, class: Option<ClassId>, out: &mut Vec<u8>) {
    use std::io::Write;
    let r = report(ctx, class);
    let _ = writeln!(out, "STAT profiling {}\r", u8::from(r.profiling));
    let _ = writeln!(
        out,
        "STAT profiler_memory_bytes {}\r",
        r.profiler_memory_bytes
    );
    let _ = writeln!(out, "STAT page_limit {}\r", r.page_limit);
    for c in &r.classes {
        let _ = writeln!(out, "STAT {}:chunk_size {}\r", c.class, c.chunk_size_bytes);
        let _ = writeln!(out, "STAT {}:pages {}\r", c.class, c.pages);
        let _ = writeln!(out, "STAT {}:items {}\r", c.class, c.items);
        let _ = writeln!(out, "STAT {}:requests {}\r", c.class, c.requests);
        let _ = writeln!(out, "STAT {}:sampling_rate {}\r", c.class, c.sampling_rate);
        let curve: Vec<String> = c
            .curve_pages
            .iter()
            .map(|(p, m)| format!("{p}:{m:.4}"))
            .collect();
        let _ = writeln!(out, "STAT {}:mrc_pages {}\r", c.class, curve.join(","));
    }
    out.extend_from_slice(b"END\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_points_are_dense_then_log_spaced_and_end_at_the_limit() {
        assert_eq!(page_points(4), vec![1, 2, 3, 4]);
        let p = page_points(65_536);
        assert_eq!(&p[..16], &(1..=16).collect::<Vec<_>>()[..]);
        assert_eq!(*p.last().unwrap(), 65_536);
        assert!(p.windows(2).all(|w| w[0] < w[1]));
        assert!(p.len() <= DENSE_PAGE_POINTS + SPARSE_PAGE_POINTS);
    }
}
