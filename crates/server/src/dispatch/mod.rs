//! Dispatch: one parsed request in, its reply appended to the connection's output, over the engine.
//!
//! One `match` over [`Request`] with no catch-all arm, so a new command does not compile until it is
//! handled here. Each command family lives in its own file; every handler takes the shared [`Ctx`] and
//! the request, writes memcached 1.6.18's exact reply (or none, for `noreply`/`q`), and says what the
//! session does next ([`Flow`]).
//!
//! The binary protocol has its own entry point, [`dispatch_binary`] (`binary.rs`), over the same handlers'
//! engine calls and the same [`Ctx`].
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
mod binary;
mod crawler;
mod delete_touch;
mod dump;
mod meta;
mod retrieval;
mod storage;

use std::sync::atomic::AtomicU64;

use mrcache_engine::{Clock, Key};
use mrcache_protocol::{response, Request};

use crate::context::{ServerContext, ThreadStats};
use crate::tenants::Tenancy;

pub use binary::dispatch_binary;
pub use dump::{Step, Stream, DUMP_BATCH_SLOTS, METADUMP_CHUNK_BYTES};

/// What the session does after a request.
#[derive(Debug)]
pub enum Flow {
    /// Go on with the next request.
    Continue,
    /// Discard this many following bytes (memcached's `conn_swallow`).
    Swallow(usize),
    /// Close the connection once the replies so far are written.
    Close,
    /// A multi-key retrieval stopped after answering its first `keys_done` keys because the output
    /// reached `session::OUTPUT_BOUND_BYTES`: leave the request unconsumed and run it again from that key
    /// ([`dispatch_from`]) once the output has drained.
    Suspended {
        /// Keys of the request already answered.
        keys_done: usize,
    },
    /// `watch`: the connection becomes a watcher of these log streams (`crate::watch::stream` bits);
    /// the session registers it with the log bus, which then sends it `OK` and the streams' lines.
    Watch(u32),
    /// A dump (`lru_crawler metadump`, `stats cachedump`) whose reply is produced in steps: the
    /// session keeps the request unconsumed and runs no other until [`Stream::step`] has finished it,
    /// one step per turn, so that the worker's other connections are served in between.
    Stream(Stream),
}

/// What a handler works with.
pub(crate) struct Ctx<'a> {
    pub server: &'a ServerContext,
    pub stats: &'a ThreadStats,
    pub clock: Clock,
    /// The connection's identity: every key goes through it (`key`), so no handler can reach another
    /// tenant's items.
    pub tenancy: &'a Tenancy,
    /// The connection's descriptor, which names it in `watch` lines (`cfd=`); -1 when unknown.
    pub fd: i32,
}

impl<'a> Ctx<'a> {
    /// The context of one request of connection `fd` (-1: unknown), on the server's clock now.
    pub fn new(
        server: &'a ServerContext,
        stats: &'a ThreadStats,
        tenancy: &'a Tenancy,
        fd: i32,
    ) -> Ctx<'a> {
        Ctx {
            server,
            stats,
            clock: server.clock(),
            tenancy,
            fd,
        }
    }

    /// The engine key for key bytes the client sent.
    #[inline]
    pub fn key<'k>(&self, bytes: &'k [u8]) -> Key<'k> {
        self.tenancy.key(bytes)
    }

    /// `<text>\r\n` unless the client asked for no reply; a suppressed reply is logged at `-vv` as
    /// memcached logs it (`>FD NOREPLY <text>`).
    pub fn reply(&self, out: &mut Vec<u8>, noreply: bool, text: &str) {
        if noreply {
            crate::session::log_noreply(self.server, self.fd, text);
        }
        reply(out, noreply, text);
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
        | Request::RefreshCerts { .. }
        | Request::Stats(_)
        | Request::Slabs(_)
        | Request::Lru(_)
        | Request::LruCrawler(_)
        | Request::Watch { .. } => None,
    }
}

/// Runs one request of a connection whose descriptor is not known (its `watch` lines say `cfd=-1`).
pub fn dispatch(
    server: &ServerContext,
    stats: &ThreadStats,
    tenancy: &Tenancy,
    request: Request<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    dispatch_conn(server, stats, tenancy, -1, request, out)
}

/// Runs one request of connection `fd`; a dump is run to its end at once (unbounded output: callers
/// that must bound it drive [`Flow::Stream`] themselves, as the session does).
pub fn dispatch_conn(
    server: &ServerContext,
    stats: &ThreadStats,
    tenancy: &Tenancy,
    fd: i32,
    request: Request<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    match dispatch_from(server, stats, tenancy, fd, request, 0, out) {
        Flow::Stream(stream) => {
            stream.finish(server, out);
            Flow::Continue
        }
        flow => flow,
    }
}

/// Runs one request of connection `fd`, a multi-key retrieval from its key `resume_at` (0: a request
/// run for the first time; otherwise what an earlier [`Flow::Suspended`] said). Only retrievals suspend.
pub fn dispatch_from(
    server: &ServerContext,
    stats: &ThreadStats,
    tenancy: &Tenancy,
    fd: i32,
    request: Request<'_>,
    resume_at: usize,
    out: &mut Vec<u8>,
) -> Flow {
    // A retrieval resumed after its output drained was charged when it first ran.
    if resume_at == 0 {
        if let Some(key) = charged_key(&request) {
            if !server.tenants.admit(tenancy, key) {
                response::line(out, crate::tenants::RATE_LIMITED_REPLY);
                return Flow::Continue;
            }
        }
    }
    let ctx = Ctx::new(server, stats, tenancy, fd);
    match request {
        Request::Store(r) => storage::store(&ctx, &r, out),
        Request::Get(r) => retrieval::get(&ctx, r, resume_at, out),
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
        Request::RefreshCerts { noreply } => admin::refresh_certs(&ctx, noreply, out),
        Request::Stats(r) => admin::stats(&ctx, r, out),
        Request::Slabs(r) => admin::slabs(&ctx, r, out),
        Request::Lru(r) => admin::lru(&ctx, r, out),
        Request::LruCrawler(r) => crawler::lru_crawler(&ctx, r, out),
        Request::Watch { streams } => admin::watch(&ctx, streams, out),
    }
}

/// Refuses a storage request (the set family or `ms`, parsed under `Limits::refuse_incomplete_data`)
/// whose value the server will not buffer: memcached's reply when it cannot allocate the item (see
/// `session::partial`). Any other request is run as usual.
pub fn refuse_store(
    server: &ServerContext,
    stats: &ThreadStats,
    tenancy: &Tenancy,
    fd: i32,
    request: Request<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    let ctx = Ctx::new(server, stats, tenancy, fd);
    match request {
        Request::Store(r) => storage::refuse_no_memory(&ctx, &r, out),
        Request::MetaSet(r) => meta::refuse_no_memory(&ctx, &r, out),
        other => dispatch_conn(server, stats, tenancy, fd, other, out),
    }
}
