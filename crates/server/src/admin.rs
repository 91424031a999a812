//! The admin HTTP port (`--admin-port`, loopback by default): read-only views of the running cache.
//!
//! - `GET /mrc`            every profiled slab class's and tenant's miss-ratio curve and allocation, as JSON
//! - `GET /mrc?class=N`    one class
//! - `GET /metrics`        Prometheus text: every counter and gauge of `stats`, `stats items`, `stats slabs`
//!   and `stats tenants` (labelled by class and tenant), from the same registry (`crate::stats`)
//! - `GET /history`        the last ten minutes, sampled once a second (`history`): pages per class and
//!   per tenant, hit ratio, the slab policy's predicted and observed miss ratio, policy moves, as JSON
//! - `GET /`               the dashboard: one HTML page (`admin/dashboard.html`, `.js`, `.css`, built
//!   into the binary, no external resources) that fetches `/mrc` and `/history` every few seconds and
//!   draws the curves with the current allocations marked, pages over time, hit ratio, predicted
//!   against observed miss ratio and policy moves as inline SVG
//! - `GET /dashboard.js`, `GET /dashboard.css` the page's script and style
//!
//! One thread serves requests one at a time (they are rare and cheap) and takes the history's samples
//! between them; it never touches the request path except through the engine's own snapshot calls,
//! which take each shard lock briefly. It stops when the server shuts down. The HTTP server under it
//! (`http`) bounds everything a client can make it hold: connections, request heads, time; it reads no
//! request body at all, so nothing sent to this port can grow the process or stall the cache.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mrcache_engine::ClassId;

use crate::context::ServerContext;
use crate::mrc_report;

pub mod history;
pub mod http;

use history::History;
use http::{HttpServer, Response};

/// The dashboard page, its script and its style (served as they are; no build step).
const DASHBOARD_HTML: &str = include_str!("admin/dashboard.html");
const DASHBOARD_JS: &str = include_str!("admin/dashboard.js");
const DASHBOARD_CSS: &str = include_str!("admin/dashboard.css");

/// How often the admin thread checks for shutdown (and samples the history) while idle.
const SHUTDOWN_POLL: Duration = Duration::from_millis(200);

/// Why the admin port could not start.
#[derive(Debug)]
pub enum AdminError {
    /// The address could not be bound (in use, not local, not an address).
    Bind {
        /// The address asked for (`--admin-listen`).
        addr: String,
        /// The port asked for (`--admin-port`).
        port: u16,
        /// Why it could not be bound.
        source: std::io::Error,
    },
    /// The serving thread could not be started.
    Thread(std::io::Error),
}

impl std::fmt::Display for AdminError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdminError::Bind { addr, port, source } => {
                write!(f, "admin port {addr}:{port}: {source}")
            }
            AdminError::Thread(e) => write!(f, "admin thread: {e}"),
        }
    }
}

impl std::error::Error for AdminError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AdminError::Bind { source, .. } => Some(source),
            AdminError::Thread(e) => Some(e),
        }
    }
}

/// A running admin listener.
pub struct Admin {
    /// The address the admin port is bound to (the real port when `--admin-port 0` asked for any).
    pub local_addr: std::net::SocketAddr,
    thread: JoinHandle<()>,
}

impl Admin {
    /// Binds `addr:port` and starts serving.
    pub fn start(ctx: Arc<ServerContext>, addr: &str, port: u16) -> Result<Admin, AdminError> {
        let bind_error = |source| AdminError::Bind {
            addr: addr.to_string(),
            port,
            source,
        };
        let sockaddr = std::net::ToSocketAddrs::to_socket_addrs(&(addr, port))
            .map_err(bind_error)?
            .next()
            .ok_or_else(|| bind_error(std::io::ErrorKind::AddrNotAvailable.into()))?;
        let server = HttpServer::bind(sockaddr).map_err(bind_error)?;
        let local_addr = server.local_addr().map_err(bind_error)?;
        let thread = std::thread::Builder::new()
            .name("mrcached-admin".into())
            .spawn(move || serve(&ctx, server))
            .map_err(AdminError::Thread)?;
        Ok(Admin { local_addr, thread })
    }

    /// Waits for the thread to stop (after shutdown).
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

fn serve(ctx: &ServerContext, mut server: HttpServer) {
    let mut history = History::new();
    while !ctx.is_shutting_down() {
        history.poll(ctx, Instant::now());
        let turn = server.turn(SHUTDOWN_POLL, |method, target| {
            let (status, content_type, body) = route(ctx, &history, method, target);
            Response {
                status,
                content_type,
                body,
            }
        });
        if let Err(e) = turn {
            eprintln!("mrcached: admin port: {e}");
            std::thread::sleep(SHUTDOWN_POLL);
        }
    }
}

/// Status, content type and body for one request.
pub fn route(
    ctx: &ServerContext,
    history: &History,
    method: &str,
    url: &str,
) -> (u16, &'static str, String) {
    if method != "GET" && method != "HEAD" {
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
        "/metrics" => (
            200,
            "text/plain; version=0.0.4",
            crate::stats::prometheus(ctx),
        ),
        "/history" => match history.to_json(ctx) {
            Ok(json) => (200, "application/json", json),
            Err(e) => (500, "text/plain", format!("{e}\n")),
        },
        "/" | "/index.html" => (200, "text/html; charset=utf-8", DASHBOARD_HTML.into()),
        "/dashboard.js" => (200, "text/javascript; charset=utf-8", DASHBOARD_JS.into()),
        "/dashboard.css" => (200, "text/css; charset=utf-8", DASHBOARD_CSS.into()),
        _ => (
            404,
            "text/plain",
            "not found: try / (dashboard), /mrc, /history or /metrics\n".into(),
        ),
    }
}

#[cfg(test)]
mod tests;
