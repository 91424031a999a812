//! The admin HTTP port (`--admin-port`, loopback by default): read-only views of the running cache.
//!
//! - `GET /mrc`            every profiled slab class's and tenant's miss-ratio curve and allocation, as JSON
//! - `GET /mrc?class=N`    one class
//! - `GET /metrics`        Prometheus text: traffic, memory and page counters, per tenant too
//! - `GET /`               a short index
//!
//! One thread serves requests one at a time (they are rare and cheap); it never touches the request path
//! except through the engine's own snapshot calls, which take each shard lock briefly. It stops when the
//! server shuts down.

use std::fmt::Write as _;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use mrcache_engine::ClassId;

use crate::context::ServerContext;
use crate::mrc_report;

/// How often the admin thread checks for shutdown while idle.
const SHUTDOWN_POLL: Duration = Duration::from_millis(200);

/// A running admin listener.
pub struct Admin {
    pub local_addr: std::net::SocketAddr,
    thread: JoinHandle<()>,
}

impl Admin {
    /// Binds `addr:port` and starts serving.
    pub fn start(ctx: Arc<ServerContext>, addr: &str, port: u16) -> Result<Admin, String> {
        let server = tiny_http::Server::http((addr, port))
            .map_err(|e| format!("admin port {addr}:{port}: {e}"))?;
        let local_addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| "admin port: not an IP listener".to_string())?;
        let thread = std::thread::Builder::new()
            .name("mrcached-admin".into())
            .spawn(move || serve(&ctx, &server))
            .map_err(|e| format!("admin thread: {e}"))?;
        Ok(Admin { local_addr, thread })
    }

    /// Waits for the thread to stop (after shutdown).
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

fn serve(ctx: &ServerContext, server: &tiny_http::Server) {
    while !ctx.is_shutting_down() {
        let Ok(Some(request)) = server.recv_timeout(SHUTDOWN_POLL) else {
            continue;
        };
        let (status, content_type, body) = route(ctx, request.method(), request.url());
        let response = tiny_http::Response::from_string(body)
            .with_status_code(status)
            .with_header(
                tiny_http::Header::from_bytes(&b"Content-Type"[..], content_type.as_bytes())
                    .expect("static header"),
            );
        let _ = request.respond(response);
    }
}

/// Status, content type and body for one request.
pub fn route(
    ctx: &ServerContext,
    method: &tiny_http::Method,
    url: &str,
) -> (u16, &'static str, String) {
    if *method != tiny_http::Method::Get {
        return (405, "text/plain", "only GET\n".into());
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    match path {
        "/mrc" => {
            let class = match query.strip_prefix("class=") {
                None if query.is_empty() => None,
                Some(n) => match n.parse::<i64>() {
                    Ok(n) if ctx.engine.geometry().is_valid(n) => Some(ClassId(n as u8)),
                    _ => return (400, "text/plain", format!("no slab class {n}\n")),
                },
                None => return (400, "text/plain", "query: class=N\n".into()),
            };
            let report = mrc_report::report(ctx, class, None);
            match serde_json::to_string(&report) {
                Ok(json) => (200, "application/json", json),
                Err(e) => (500, "text/plain", format!("{e}\n")),
            }
        }
        "/metrics" => (200, "text/plain; version=0.0.4", metrics(ctx)),
        "/" => (
            200,
            "text/plain",
            "mrcached admin: /mrc (miss-ratio curves, JSON), /mrc?class=N, /metrics (Prometheus)\n"
                .into(),
        ),
        _ => (
            404,
            "text/plain",
            "not found: try /mrc or /metrics\n".into(),
        ),
    }
}

/// Prometheus text exposition of the engine's counters.
fn metrics(ctx: &ServerContext) -> String {
    let stats = ctx.engine.stats(ctx.clock());
    let totals = stats.class_totals();
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
        let _ = writeln!(
            out,
            "# HELP mrcached_{name} {help}\n# TYPE mrcached_{name} {kind}\nmrcached_{name} {value}"
        );
    };
    metric(
        "get_hits_total",
        "counter",
        "GET-type lookups that found the item.",
        totals.get_hits as f64,
    );
    metric(
        "get_misses_total",
        "counter",
        "GET-type lookups that found nothing.",
        stats.counters.get_misses as f64,
    );
    metric(
        "evictions_total",
        "counter",
        "Live items evicted to make room.",
        totals.evicted as f64,
    );
    metric(
        "slabs_moved_total",
        "counter",
        "Pages moved between slab classes.",
        stats.counters.slabs_moved as f64,
    );
    metric("items", "gauge", "Items stored.", stats.curr_items as f64);
    metric(
        "bytes",
        "gauge",
        "Bytes of items under memcached's accounting.",
        stats.bytes as f64,
    );
    metric(
        "pages_in_use",
        "gauge",
        "Pages of -m held by slab classes.",
        stats.pages_in_use as f64,
    );
    metric(
        "page_limit",
        "gauge",
        "Pages in -m.",
        stats.page_limit as f64,
    );
    metric(
        "profiler_memory_bytes",
        "gauge",
        "Heap bytes of the MRC profilers.",
        ctx.engine.profile_memory_bytes() as f64,
    );
    metric(
        "tenant_arbiter_rounds_total",
        "counter",
        "Rounds the tenant arbiter ran.",
        ctx.maintenance
            .arbiter_rounds
            .load(std::sync::atomic::Ordering::Relaxed) as f64,
    );
    tenant_metrics(ctx, &mut out);
    let _ = writeln!(out, "# HELP mrcached_class_pages Pages held by each slab class.\n# TYPE mrcached_class_pages gauge");
    for c in stats.classes.iter().filter(|c| c.total_pages > 0) {
        let _ = writeln!(
            out,
            "mrcached_class_pages{{class=\"{}\"}} {}",
            c.class.0, c.total_pages
        );
    }
    out
}

/// Per-tenant series, labelled `tenant="<name>"` (names are `[A-Za-z0-9_.-]`, so need no escaping).
fn tenant_metrics(ctx: &ServerContext, out: &mut String) {
    let rows = crate::stats::tenant_rows(ctx, None);
    type Field = fn(&crate::stats::TenantRow) -> f64;
    let series: [(&str, &str, &str, Field); 13] = [
        (
            "tenant_items",
            "gauge",
            "Items stored by each tenant.",
            |r| r.counters.items as f64,
        ),
        (
            "tenant_bytes",
            "gauge",
            "Bytes of each tenant's items (engine accounting).",
            |r| r.counters.bytes as f64,
        ),
        (
            "tenant_get_hits_total",
            "counter",
            "GET-type lookups of each tenant that hit.",
            |r| r.counters.get_hits as f64,
        ),
        (
            "tenant_get_misses_total",
            "counter",
            "GET-type lookups of each tenant that missed.",
            |r| r.counters.get_misses as f64,
        ),
        (
            "tenant_sets_total",
            "counter",
            "Storage commands of each tenant.",
            |r| r.counters.set_cmds as f64,
        ),
        (
            "tenant_reserved_bytes",
            "gauge",
            "Configured reserved memory of each tenant.",
            |r| r.reserved_bytes as f64,
        ),
        (
            "tenant_max_bytes",
            "gauge",
            "Configured memory limit of each tenant (0: none).",
            |r| r.max_bytes as f64,
        ),
        (
            "tenant_target_hit_ratio",
            "gauge",
            "Configured hit-ratio target of each tenant (0: none).",
            |r| r.target_hit_ratio,
        ),
        (
            "tenant_shadow_hits_total",
            "counter",
            "GET misses of each tenant on keys its shadow queue remembers (Memshare).",
            |r| r.counters.shadow_hits as f64,
        ),
        (
            "tenant_pages",
            "gauge",
            "Pages each tenant's own pool holds (0: it shares pool 0).",
            |r| r.pages as f64,
        ),
        (
            "tenant_target_pages",
            "gauge",
            "Pages the tenant arbiter wants each tenant's pool to hold (0: none).",
            |r| r.target_pages as f64,
        ),
        (
            "tenant_reserved_pages",
            "gauge",
            "Pages never taken from each tenant's pool while it uses them.",
            |r| r.reserved_pages as f64,
        ),
        (
            "tenant_max_pages",
            "gauge",
            "Most pages each tenant's pool may hold (0: no limit).",
            |r| r.max_pages as f64,
        ),
    ];
    for (name, kind, help, field) in series {
        let _ = writeln!(
            out,
            "# HELP mrcached_{name} {help}\n# TYPE mrcached_{name} {kind}"
        );
        for r in &rows {
            let _ = writeln!(out, "mrcached_{name}{{tenant=\"{}\"}} {}", r.name, field(r));
        }
    }
}
