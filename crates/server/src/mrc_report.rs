//! The online miss-ratio curves of the slab classes and of the tenants, as `stats mrc [class]` prints
//! them and as the admin port's `/mrc` serves them (JSON).
//!
//! Each class's curve comes from the engine's profilers (`Engine::mrc`), evaluated in items and reported
//! both in items and at page counts (the unit allocation policies move), with the class's current pages
//! and items beside it so a reader can see where on its curve each class sits. Under the log layout
//! there is one class, whose pages are segments of the mean record (as `stats slabs` shows it).
//!
//! Each tenant with a pool of its own has a whole-tenant curve (`Engine::pool_histogram`: every class of
//! its pool, sizes in bytes; only with tenant pools), reported in bytes of items and at page counts, a
//! page holding as many item bytes as the pool's pages hold on average now — the conversion the tenant
//! arbiter makes (`mrcache_policy::arbitrate`). Tenant curves come with the whole report only (not with
//! one class), and a connection that is one tenant sees only its own.

use serde::Serialize;

use mrcache_engine::{ClassId, Engine, EngineStats, TenantId, UNLIMITED};
use mrcache_profile::{MrcQuery, ReuseTimeMethod, SizeUnit};

use crate::context::ServerContext;

/// Page counts at which curves are reported: every count up to this, then log-spaced.
const DENSE_PAGE_POINTS: usize = 16;
/// Log-spaced page points beyond the dense ones.
const SPARSE_PAGE_POINTS: usize = 24;

/// One class's curve.
#[derive(Debug, Serialize)]
pub struct ClassCurve {
    /// The slab class id as memcached numbers them (1 is the smallest chunk).
    pub class: u8,
    /// Bytes of one chunk of the class (`stats slabs` `chunk_size`).
    pub chunk_size_bytes: usize,
    /// Chunks one page of the class holds.
    pub chunks_per_page: usize,
    /// Pages the class holds now, summed over shards and pools.
    pub pages: usize,
    /// Items linked in the class now, summed over shards and pools.
    pub items: usize,
    /// Uses of the class the profilers saw (hits and stores).
    pub requests: u64,
    /// The lowest current sampling rate, in (0, 1], among the shards' profilers of the class.
    pub sampling_rate: f64,
    /// `[items, miss_ratio]` at log-spaced sizes.
    pub curve_items: Vec<(u64, f64)>,
    /// `[pages, miss_ratio]`.
    pub curve_pages: Vec<(usize, f64)>,
}

/// One tenant's whole-pool curve.
#[derive(Debug, Serialize)]
pub struct TenantCurve {
    /// The tenant's name (from `--config`/`-Y`).
    pub tenant: String,
    /// The tenant's numeric id (`TenantId`).
    pub id: u16,
    /// The engine pool the tenant stores into (its id's index).
    pub pool: usize,
    /// Pages its pool holds, over all shards.
    pub pages: usize,
    /// The tenant arbiter's target for its pool, in pages (0: none set).
    pub target_pages: usize,
    /// Bytes of its items (the engine's accounting).
    pub bytes: u64,
    /// Uses of its pool the profiler saw (hits and stores).
    pub requests: u64,
    /// The lowest current sampling rate, in (0, 1], among the shards' profilers of its pool.
    pub sampling_rate: f64,
    /// Item bytes one of its pages holds, as the curve in pages is converted.
    pub item_bytes_per_page: f64,
    /// `[bytes, miss_ratio]`: with this many bytes of items, at the page points times the page size.
    pub curve_bytes: Vec<(u64, f64)>,
    /// `[pages, miss_ratio]`.
    pub curve_pages: Vec<(usize, f64)>,
}

/// All classes, and the tenants.
#[derive(Debug, Serialize)]
pub struct MrcReport {
    /// Whether the per-class profilers run (`-o mrc_sample_rate` above 0).
    pub profiling: bool,
    /// Engine shards (each profiles a hash partition of the keys; the curves are merged over them).
    pub shards: usize,
    /// Bytes of one page: 1 MiB, or `-I` when that is larger.
    pub page_size_bytes: usize,
    /// Pages the memory budget allows (`-m`, or what `cache_memlimit` set).
    pub page_limit: usize,
    /// Heap bytes all MRC profilers hold together.
    pub profiler_memory_bytes: usize,
    /// One curve per profiled class (only the asked class with `stats mrc <class>`).
    pub classes: Vec<ClassCurve>,
    /// One curve per tenant with a pool and a profile (only the connection's own tenant when it is one;
    /// empty when one class was asked for).
    pub tenants: Vec<TenantCurve>,
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

/// The curves of every profiled class and of every tenant with a pool (of tenant `only` when given), or
/// of `class` only.
pub fn report(ctx: &ServerContext, class: Option<ClassId>, only: Option<TenantId>) -> MrcReport {
    let engine = &ctx.engine;
    let clock = ctx.clock();
    let stats = engine.stats(clock);
    let query = MrcQuery::new(SizeUnit::Objects);
    let pages = page_points(stats.page_limit);
    let curves = engine.mrc(class, &query);
    let classes = curves
        .into_iter()
        .map(|c| {
            // The class's chunk as `stats slabs` shows it: a slab class's fixed chunk, the log's mean
            // record (so a curve in pages is in the layout's own pages).
            let snapshot = &stats.classes[c.class.index()];
            let (chunk_size_bytes, chunks_per_page) =
                (snapshot.chunk_size_bytes, snapshot.chunks_per_page);
            ClassCurve {
                class: c.class.0,
                chunk_size_bytes,
                chunks_per_page,
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
                    .map(|&p| (p, c.curve.miss_ratio_at((p * chunks_per_page) as f64)))
                    .collect(),
            }
        })
        .collect();
    let tenants = if class.is_some() {
        Vec::new()
    } else {
        tenant_curves(ctx, &stats, &pages, only)
    };
    MrcReport {
        profiling: engine.config().profile_sample_rate.is_some(),
        shards: engine.shard_count(),
        page_size_bytes: stats.page_size_bytes,
        page_limit: stats.page_limit,
        profiler_memory_bytes: engine.profile_memory_bytes(),
        classes,
        tenants,
    }
}

/// The whole-pool curve of every known tenant that has a pool and a profile, at `pages`.
fn tenant_curves(
    ctx: &ServerContext,
    stats: &EngineStats,
    pages: &[usize],
    only: Option<TenantId>,
) -> Vec<TenantCurve> {
    let engine = &ctx.engine;
    let clock = ctx.clock();
    let page_bytes = engine.geometry().page_size_bytes();
    let mut curves = Vec::new();
    for (id, name) in ctx.tenants.known() {
        let pool = id.index();
        if only.is_some_and(|o| o != id) || pool >= engine.pool_count() {
            continue;
        }
        let Some((histogram, sampling_rate)) = engine.pool_histogram(pool) else {
            continue;
        };
        let per_page = item_bytes_per_page(engine, pool, clock).unwrap_or(page_bytes as f64);
        let bytes: Vec<u64> = pages.iter().map(|&p| (p * page_bytes) as u64).collect();
        let by_pages: Vec<u64> = pages
            .iter()
            .map(|&p| (p as f64 * per_page) as u64)
            .collect();
        let sizes: Vec<u64> = bytes.iter().chain(&by_pages).copied().collect();
        let curve = histogram.mrc(
            ReuseTimeMethod::Aet,
            &MrcQuery::exactly(SizeUnit::Bytes, &sizes),
        );
        let at = |size: u64| curve.miss_ratio_at(size as f64);
        let held = engine.pool(pool);
        curves.push(TenantCurve {
            tenant: name,
            id: id.0,
            pool,
            pages: held.held,
            target_pages: if held.target == UNLIMITED {
                0
            } else {
                held.target
            },
            bytes: stats.tenant(id).bytes,
            requests: histogram.requests(),
            sampling_rate,
            item_bytes_per_page: per_page,
            curve_bytes: bytes.iter().map(|&b| (b, at(b))).collect(),
            curve_pages: pages
                .iter()
                .zip(&by_pages)
                .map(|(&p, &b)| (p, at(b)))
                .collect(),
        });
    }
    curves
}

/// Item bytes one page of `pool` holds when full: each used class's chunks per page times its mean
/// item size, weighted by its pages. `None` before the pool stores anything. (The report's curves are
/// cumulative byte curves, so bytes per page place them on pages; the arbitration, which cuts windows,
/// works in items per page instead.)
fn item_bytes_per_page(engine: &Engine, pool: usize, clock: mrcache_engine::Clock) -> Option<f64> {
    let (mut bytes, mut pages) = (0.0, 0usize);
    for c in engine.pool_classes(pool, clock) {
        if c.items == 0 || c.total_pages == 0 {
            continue;
        }
        let mean = c.requested_bytes as f64 / c.items as f64;
        bytes += c.total_pages as f64 * c.chunks_per_page as f64 * mean;
        pages += c.total_pages;
    }
    (pages > 0).then(|| bytes / pages as f64)
}

/// `stats mrc [class]`: `STAT` lines, then `END`. Curves are `pages:miss_ratio` pairs (`bytes:miss_ratio`
/// for `mrc_bytes`), comma-separated. Class lines are `<class>:<field>`, tenant lines
/// `tenant:<name>:<field>`; `with_classes` false (a tenant's own view) leaves the class lines out.
pub fn write_stats(
    ctx: &ServerContext,
    class: Option<ClassId>,
    only: Option<TenantId>,
    with_classes: bool,
    out: &mut Vec<u8>,
) {
    use std::io::Write;
    let mut r = report(ctx, class, only);
    if !with_classes {
        // A tenant's own view (`crate::tenants::Scope`): the class curves are server-wide.
        r.classes.clear();
    }
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
    for t in &r.tenants {
        let n = &t.tenant;
        let _ = writeln!(out, "STAT tenant:{n}:pool {}\r", t.pool);
        let _ = writeln!(out, "STAT tenant:{n}:pages {}\r", t.pages);
        let _ = writeln!(out, "STAT tenant:{n}:target_pages {}\r", t.target_pages);
        let _ = writeln!(out, "STAT tenant:{n}:bytes {}\r", t.bytes);
        let _ = writeln!(out, "STAT tenant:{n}:requests {}\r", t.requests);
        let _ = writeln!(out, "STAT tenant:{n}:sampling_rate {}\r", t.sampling_rate);
        let pairs = |points: &mut dyn Iterator<Item = String>| points.collect::<Vec<_>>().join(",");
        let bytes = pairs(&mut t.curve_bytes.iter().map(|(b, m)| format!("{b}:{m:.4}")));
        let _ = writeln!(out, "STAT tenant:{n}:mrc_bytes {bytes}\r");
        let pages = pairs(&mut t.curve_pages.iter().map(|(p, m)| format!("{p}:{m:.4}")));
        let _ = writeln!(out, "STAT tenant:{n}:mrc_pages {pages}\r");
    }
    out.extend_from_slice(b"END\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;
    use mrcache_engine::{Key, StoreArgs};

    #[test]
    fn tenants_with_pools_have_byte_curves() {
        let tenants = crate::tenants::TenantsConfig::merge(
            crate::tenants::config::parse_config(
                "[[tenant]]\nname = \"a\"\n[[tenant]]\nname = \"b\"\n",
            )
            .unwrap(),
            Vec::new(),
        )
        .unwrap();
        let settings = Settings {
            tenants,
            shards: 1,
            mrc_sample_rate: 1.0,
            ..Settings::default()
        };
        let engine = mrcache_engine::Engine::new(settings.engine_config()).unwrap();
        let ctx = ServerContext::new(engine, settings, 1);
        // Tenant a reuses 500 keys of 100 bytes: about 64 KB of items, a small part of one page.
        for round in 0..4 {
            for i in 0..500 {
                let key = format!("k{i}");
                let key = Key::new(TenantId(1), key.as_bytes());
                let clock = ctx.clock();
                if round == 0 || ctx.engine.get(key, clock, |_| ()).is_none() {
                    ctx.engine.store(&StoreArgs::set(key, &[b'v'; 100]), clock);
                }
            }
        }
        let r = report(&ctx, None, None);
        assert_eq!(r.tenants.len(), 1, "only a has used its pool");
        let a = &r.tenants[0];
        assert_eq!((a.tenant.as_str(), a.pool), ("a", 1));
        assert!(a.requests > 0 && a.bytes > 0);
        assert_eq!(a.curve_bytes[0].0, r.page_size_bytes as u64);
        assert!(a.curve_bytes[0].1 < 0.5, "{:?}", a.curve_bytes);
        assert_eq!(a.curve_pages.len(), a.curve_bytes.len());
        assert!(report(&ctx, None, Some(TenantId(2))).tenants.is_empty());
        let class = r.classes[0].class;
        assert!(report(&ctx, Some(ClassId(class)), None).tenants.is_empty());
        let mut out = Vec::new();
        write_stats(&ctx, None, None, true, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("STAT tenant:a:pool 1\r\n"), "{text}");
        assert!(text.contains("STAT tenant:a:mrc_bytes 1048576:"), "{text}");
    }

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
