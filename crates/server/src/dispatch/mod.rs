//! Dispatch: one parsed request in, its reply appended to the connection's output, over the engine.
//!
//! One `match` over [`Request`] with no catch-all arm, so a new command does not compile until it is
//! handled here. Each command family lives in its own file; every handler takes the shared [`Ctx`] and
//! the request, writes memcached 1.6.18's exact reply (or none, for `noreply`/`q`), and says what the
//! session does next ([`Flow`]).
//!
//! Rate limits: before a request that names a key runs, its tenant's token bucket is asked
//! (`crate::tenants::rate_limit`); a refused request is answered `SERVER_ERROR tenant rate limit
//! exceeded` (even with `noreply`, as memcached sends its other `SERVER_ERROR`s) and does nothing else.
//! A request is charged to the tenant of its (first) key; commands without a key are not limited.
//!
//! Counting: the engine counts key-level figures (hits, misses, touches, sets); handlers count what the
//! engine cannot see: `cmd_flush`, `cmd_meta`, `store_too_large`, `store_no_memory`.

mod admin;
mod arith;
mod delete_touch;
mod meta;
mod retrieval;
mod storage;

use std::sync::atomic::AtomicU64;

use mrcache_engine::{Clock, Key};
use mrcache_protocol::{response, Request};

use crate::context::{ServerContext, ThreadStats};
use crate::tenants::Tenancy;

/// What the session does after a request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Go on with the next request.
    Continue,
    /// Discard this many following bytes (memcached's `conn_swallow`).
    Swallow(usize),
    /// Close the connection once the replies so far are written.
    Close,
}

/// What a handler works with.
pub(crate) struct Ctx<'a> {
    pub server: &'a ServerContext,
    pub stats: &'a ThreadStats,
    pub clock: Clock,
    /// The connection's identity: every key goes through it (`key`), so no handler can reach another
    /// tenant's items.
    pub tenancy: &'a Tenancy,
}

impl Ctx<'_> {
    /// The engine key for key bytes the client sent.
    #[inline]
    pub fn key<'k>(&self, bytes: &'k [u8]) -> Key<'k> {
        self.tenancy.key(bytes)
    }

    /// Adds one to a per-worker counter.
    pub fn count(&self, counter: impl Fn(&ThreadStats) -> &AtomicU64) {
        ThreadStats::add(counter(self.stats), 1);
    }
}

/// Appends `<text>\r\n` unless the client asked for no reply.
pub(crate) fn reply(out: &mut Vec<u8>, noreply: bool, text: &str) {
    if !noreply {
        response::line(out, text);
    }
}

/// The key whose tenant a request is charged to under the rate limits; `None` for commands without a
/// key, which are not limited.
fn charged_key<'r>(request: &'r Request<'_>) -> Option<&'r [u8]> {
    match request {
        Request::Store(r) => Some(r.key),
        Request::Get(r) => r.keys.clone().next(),
        Request::Arith(r) => Some(r.key),
        Request::Delete(r) => Some(r.key),
        Request::Touch(r) => Some(r.key),
        Request::MetaGet(r) => Some(r.key.bytes()),
        Request::MetaSet(r) => Some(r.key.bytes()),
        Request::MetaDelete(r) => Some(r.key.bytes()),
        Request::MetaArith(r) => Some(r.key.bytes()),
        Request::MetaDebug(r) => Some(r.key.bytes()),
        Request::MetaNoop
        | Request::FlushAll { .. }
        | Request::Version
        | Request::Verbosity { .. }
        | Request::Quit
        | Request::Shutdown(_)
        | Request::CacheMemlimit { .. }
        | Request::Stats(_)
        | Request::Slabs(_)
        | Request::Lru(_)
        | Request::LruCrawler(_)
        | Request::Watch => None,
    }
}

/// Runs one request.
pub fn dispatch(
    server: &ServerContext,
    stats: &ThreadStats,
    tenancy: &Tenancy,
    request: Request<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    if let Some(key) = charged_key(&request) {
        if !server.tenants.admit(tenancy, key) {
            response::line(out, crate::tenants::RATE_LIMITED_REPLY);
            return Flow::Continue;
        }
    }
    let ctx = Ctx {
        server,
        stats,
        clock: server.clock(),
        tenancy,
    };
    match request {
        Request::Store(r) => storage::store(&ctx, &r, out),
        Request::Get(r) => retrieval::get(&ctx, r, out),
        Request::Arith(r) => arith::arith(&ctx, &r, out),
        Request::Delete(r) => delete_touch::delete(&ctx, &r, out),
        Request::Touch(r) => delete_touch::touch(&ctx, &r, out),
        Request::MetaGet(r) => meta::get(&ctx, &r, out),
        Request::MetaSet(r) => meta::set(&ctx, &r, out),
        Request::MetaDelete(r) => meta::delete(&ctx, &r, out),
        Request::MetaArith(r) => meta::arith(&ctx, &r, out),
        Request::MetaNoop => meta::noop(&ctx, out),
        Request::MetaDebug(r) => meta::debug(&ctx, &r, out),
        Request::FlushAll { delay, noreply } => admin::flush_all(&ctx, delay, noreply, out),
        Request::Version => admin::version(out),
        Request::Verbosity { level, noreply } => admin::verbosity(&ctx, level, noreply, out),
        Request::Quit => Flow::Close,
        Request::Shutdown(mode) => admin::shutdown(&ctx, mode, out),
        Request::CacheMemlimit { megabytes, noreply } => {
            admin::memlimit(&ctx, megabytes, noreply, out)
        }
        Request::Stats(r) => admin::stats(&ctx, r, out),
        Request::Slabs(r) => admin::slabs(&ctx, r, out),
        Request::Lru(r) => admin::lru(r, out),
        Request::LruCrawler(r) => admin::lru_crawler(&ctx, r, out),
        Request::Watch => admin::watch(&ctx, out),
    }
}
