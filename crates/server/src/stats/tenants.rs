//! `stats tenants` and the per-tenant `/metrics` series (label `tenant="<name>"`): the [`TENANTS`]
//! table over one [`TenantRow`].
//!
//! A row joins the configuration in force (reserve, cap, target, weight) with the engine's counters and
//! the tenant's pool. A connection that is one tenant sees only its own row in `stats tenants`;
//! `/metrics` (the admin port) shows every tenant.

use std::collections::HashMap;

use mrcache_engine::{TenantCounters, TenantId, UNLIMITED};
use mrcache_policy::class::miss_entropy;

use super::registry::{alias, counter, gauge, write_stats, Exposition, Figure};
use crate::context::ServerContext;

/// One tenant as `stats tenants` and `/metrics` report it.
#[derive(Clone, Debug)]
pub(crate) struct TenantRow {
    pub id: TenantId,
    pub name: String,
    /// Whether the configuration in force names it (a removed tenant keeps its items until they go).
    pub configured: bool,
    pub counters: TenantCounters,
    pub reserved_bytes: u64,
    /// 0: no limit.
    pub max_bytes: u64,
    /// 0: no target.
    pub target_hit_ratio: f64,
    pub weight: f64,
    /// The pool it stores into now: its own, or 0 when it has none (more tenants than pools, or the
    /// `pooled` arbiter).
    pub pool: usize,
    /// Its own pool's pages, target, reserve and cap (0 when it has no pool of its own; target and cap
    /// are also 0 when none is set).
    pub pages: usize,
    pub target_pages: usize,
    pub reserved_pages: usize,
    pub max_pages: usize,
    /// The most memory it may hold: its `max`, else the server's limit (a tenant's `limit_maxbytes`).
    pub limit_bytes: u64,
    /// Its rate limit in force (ops/s, burst; zeros: none) and the requests it refused.
    pub rate_limit: f64,
    pub rate_burst: u64,
    pub rate_limited: u64,
    /// Dynacache's miss entropy (bits) of the pool it stores into: misses (stores of absent keys) per
    /// slab class since start or `stats reset`, as a distribution.
    pub miss_entropy: f64,
}

/// `stats tenants`: `tenant:<name>:<field>`. `max` and `target_hit_ratio` are 0 when not set. The
/// memory it holds, in pages: `pool` (the pool it stores into), and its own pool's `pages`,
/// `target_pages` (the arbiter's), `reserved_pages` and `max_pages` (0: none), as in [`TenantRow`];
/// `shadow_hits` counts its GET misses on recently evicted keys (Memshare's shadow queues; 0 without
/// them); `rate_limit` (requests a second) and `rate_burst` are its rate limit in force (0: none) and
/// `rate_limited` counts the requests it refused.
/// `miss_entropy` is Dynacache's measure (`mrcache_policy::class::miss_entropy`): the entropy in
/// bits of its pool's misses over slab classes since start (0: all in one class; log2 n: spread evenly
/// over n); tenants that share pool 0 share its figure. `--slab-policy dynacache` re-optimises a pool
/// only while the entropy of its last window is at least `min_entropy`.
#[rustfmt::skip]
pub(crate) const TENANTS: &[Figure<TenantRow>] = &[
    gauge("id", "tenant_id", "Numeric id of each tenant.", |r| u64::from(r.id.0).into()),
    gauge("configured", "tenant_configured", "Whether the configuration in force names each tenant (1) or it only still holds items (0).",
        |r| u64::from(r.configured).into()),
    gauge("items", "tenant_items", "Items stored by each tenant.", |r| r.counters.items.into()),
    gauge("bytes", "tenant_bytes", "Bytes of each tenant's items (engine accounting).", |r| r.counters.bytes.into()),
    counter("get_hits", "tenant_get_hits_total", "GET-type lookups of each tenant that hit.", |r| r.counters.get_hits.into()),
    counter("get_misses", "tenant_get_misses_total", "GET-type lookups of each tenant that missed.", |r| r.counters.get_misses.into()),
    counter("cmd_set", "tenant_sets_total", "Storage commands of each tenant.", |r| r.counters.set_cmds.into()),
    gauge("reserved", "tenant_reserved_bytes", "Configured reserved memory of each tenant.", |r| r.reserved_bytes.into()),
    gauge("max", "tenant_max_bytes", "Configured memory limit of each tenant (0: none).", |r| r.max_bytes.into()),
    gauge("target_hit_ratio", "tenant_target_hit_ratio", "Configured hit-ratio target of each tenant (0: none).",
        |r| r.target_hit_ratio.into()),
    gauge("weight", "tenant_weight", "Configured weight of each tenant.", |r| r.weight.into()),
    gauge("pool", "tenant_pool", "The pool each tenant stores into (0: the shared pool).", |r| r.pool.into()),
    gauge("pages", "tenant_pages", "Pages each tenant's own pool holds (0: it shares pool 0).", |r| r.pages.into()),
    gauge("target_pages", "tenant_target_pages", "Pages the tenant arbiter wants each tenant's pool to hold (0: none).",
        |r| r.target_pages.into()),
    gauge("reserved_pages", "tenant_reserved_pages", "Pages never taken from each tenant's pool while it uses them.",
        |r| r.reserved_pages.into()),
    gauge("max_pages", "tenant_max_pages", "Most pages each tenant's pool may hold (0: no limit).", |r| r.max_pages.into()),
    counter("shadow_hits", "tenant_shadow_hits_total", "GET misses of each tenant on keys its shadow queue remembers (Memshare).",
        |r| r.counters.shadow_hits.into()),
    gauge("rate_limit", "tenant_rate_limit_ops_per_second", "Configured request-rate limit of each tenant, requests a second (0: none).",
        |r| r.rate_limit.into()),
    gauge("rate_burst", "tenant_rate_burst_requests", "Requests each tenant may send at once under its rate limit (0: no limit).",
        |r| r.rate_burst.into()),
    counter("rate_limited", "tenant_rate_limited_total", "Requests of each tenant refused by its rate limit (SERVER_ERROR tenant rate limit exceeded).",
        |r| r.rate_limited.into()),
    gauge("miss_entropy", "tenant_miss_entropy", "Entropy in bits of the misses over slab classes of the pool each tenant stores into (Dynacache).",
        |r| r.miss_entropy.into()),
];

/// A tenant's `stats`: memcached's general names for the figures of its own (the rest of `stats` is
/// server-wide and for operators only; see `crate::tenants::Scope`). Each is the value of a
/// [`TENANTS`] family but `limit_maxbytes`: the tenant's `max`, or the server's limit when it has none
/// (or a larger one), so a client computing its usage never divides by 0.
#[rustfmt::skip]
pub(crate) const TENANT_GENERAL: &[Figure<TenantRow>] = &[
    alias("curr_items", "tenant_items", |r| r.counters.items.into()),
    alias("bytes", "tenant_bytes", |r| r.counters.bytes.into()),
    alias("cmd_get", "tenant_get_hits_total", |r| (r.counters.get_hits + r.counters.get_misses).into()),
    alias("cmd_set", "tenant_sets_total", |r| r.counters.set_cmds.into()),
    alias("get_hits", "tenant_get_hits_total", |r| r.counters.get_hits.into()),
    alias("get_misses", "tenant_get_misses_total", |r| r.counters.get_misses.into()),
    gauge("limit_maxbytes", "tenant_limit_bytes", "The most memory each tenant may hold: its max, else the server's limit.",
        |r| r.limit_bytes.into()),
];

/// `stats` on a connection that is one (non-admin) tenant: the process identity, then its own figures.
pub(crate) fn tenant_general(ctx: &ServerContext, id: TenantId, out: &mut Vec<u8>) {
    super::general::identity(ctx, out);
    if let Some(row) = tenant_rows(ctx, Some(id)).first() {
        write_stats(out, "", TENANT_GENERAL, row);
    }
    super::end(out);
}

/// Every tenant ever known (or only `only`), by id: configuration in force and engine counters.
fn tenant_rows(ctx: &ServerContext, only: Option<TenantId>) -> Vec<TenantRow> {
    let clock = ctx.clock();
    let stats = ctx.engine.stats(clock);
    let table = ctx.tenants.current();
    let engine = &ctx.engine;
    let limit = |pages: usize| if pages == UNLIMITED { 0 } else { pages };
    let server_limit = engine.page_limit() as u64 * engine.geometry().page_size_bytes() as u64;
    // Per pool, not per tenant: the tenants sharing a pool share its figure, and each computation
    // snapshots every shard.
    let mut pool_entropy: HashMap<usize, f64> = HashMap::new();
    ctx.tenants
        .known()
        .into_iter()
        .filter(|(id, _)| only.is_none_or(|o| o == *id))
        .map(|(id, name)| {
            let spec = table.spec(id);
            let own = (id.index() < engine.pool_count()).then(|| engine.pool(id.index()));
            let limiter = ctx.tenants.limiter(id);
            let (rate_limit, rate_burst) = limiter.as_ref().map_or((0.0, 0), |l| l.limit());
            let pool = engine.pool_of(id);
            let entropy = *pool_entropy.entry(pool).or_insert_with(|| {
                let classes = engine.pool_classes(pool, clock);
                miss_entropy(classes.iter().map(|c| c.counters.inserts))
            });
            TenantRow {
                rate_limit,
                rate_burst,
                rate_limited: limiter.map_or(0, |l| l.limited()),
                id,
                configured: spec.is_some() || id == TenantId::DEFAULT,
                counters: stats.tenant(id),
                reserved_bytes: spec.map_or(0, |s| s.reserved_bytes),
                max_bytes: spec.and_then(|s| s.max_bytes).unwrap_or(0),
                target_hit_ratio: spec.and_then(|s| s.target_hit_ratio).unwrap_or(0.0),
                weight: spec.map_or(crate::tenants::config::DEFAULT_WEIGHT, |s| s.weight),
                pool,
                pages: own.map_or(0, |p| p.held),
                target_pages: own.map_or(0, |p| limit(p.target)),
                reserved_pages: own.map_or(0, |p| p.reserved),
                max_pages: own.map_or(0, |p| limit(p.max)),
                limit_bytes: spec
                    .and_then(|s| s.max_bytes)
                    .map_or(server_limit, |m| m.min(server_limit)),
                miss_entropy: entropy,
                name,
            }
        })
        .collect()
}

/// `stats tenants`: every tenant's row (a connection that is one tenant sees only itself).
pub(crate) fn tenants(ctx: &ServerContext, only: Option<TenantId>, out: &mut Vec<u8>) {
    for row in tenant_rows(ctx, only) {
        write_stats(out, &format!("tenant:{}:", row.name), TENANTS, &row);
    }
    super::end(out);
}

/// The per-tenant `/metrics` series, every tenant (names are `[A-Za-z0-9_.-]`; labels are escaped
/// anyway).
pub(crate) fn expose(ctx: &ServerContext, exposition: &mut Exposition) {
    let rows = tenant_rows(ctx, None);
    let labelled: Vec<_> = rows.iter().map(|r| (r.name.clone(), r)).collect();
    exposition.labelled(TENANTS, "tenant", &labelled);
}
