//! One connection's protocol state, sans I/O: bytes in, replies out.
//!
//! The network layer hands [`Session::process`] everything it has buffered; the session parses and runs
//! complete requests (at most `max_requests` per call, memcached's `-R`), appends their replies to `out`,
//! and says how many bytes it consumed. State that outlives one call:
//! - `swallow`: data bytes still to discard after a refused storage command (memcached's `conn_swallow`),
//!   consumed as they arrive without being buffered;
//! - `tenancy`: who the connection is (`tenants`), fixed when it opens or authenticates;
//! - `auth`: while the connection must still authenticate, its input goes to memcached's auth parser
//!   (`mrcache_protocol::auth`, see `auth.rs`) instead of the command parser;
//! - `mode`: the protocol, negotiated on the first byte under `-B auto` (0x80: binary, anything else:
//!   text and meta, as memcached's `try_read_command_negotiate`), fixed by `-B ascii|binary`. A binary
//!   connection's packets go to `mrcache_protocol::binary` and `dispatch_binary` (`binary.rs`), and it
//!   authenticates with SASL PLAIN under `-S`. A connection that must authenticate without `-S` speaks
//!   text only, as memcached's `-Y` connections do.
//! - `watcher`: once `watch` succeeded, the log bus (`crate::watch`) writes to the connection and its
//!   input is read and dropped; the session's drop ends the watcher. Opening and dropping a session
//!   are `watch connevents`' `conn_new` and `conn_close`.
//!
//! At verbosity 2 (`-vv`, or `verbosity 2`) each command line and the first line of its reply go to
//! stderr as memcached writes them (`verbose.rs`); below that the cost is one relaxed load per request.
//!
//! Bounds (what one connection can make the server hold):
//! - Output: no request starts while `out` holds [`OUTPUT_BOUND_BYTES`] or more, and a multi-key
//!   retrieval stops between keys at that bound (`resume`: keys of the request at the front of the input
//!   already answered; the request stays unconsumed and is run again from there). `out` grows past the
//!   bound by at most one reply, or one value of a retrieval. The transport runs the session again once
//!   the output has drained ([`Progress::output_full`]).
//! - Dumps (`lru_crawler metadump`, `stats cachedump`): the reply is produced in steps (`stream`, see
//!   `crate::dispatch::Stream`), one per call, each stopping at the output bound (plus one batch of
//!   lines) or at its bound of work; after each the session yields ([`Progress::yielded`], counted in
//!   `conn_yields` like a connection that used its `-R` turn), so the worker's other connections are
//!   served between steps. A metadump's lines are made on a dump thread: when none are ready the
//!   session parks ([`Progress::parked`]) and the worker runs it again when its waker fires (the
//!   session holds the worker's waker, [`Session::attach_waker`]). The dump's request stays unconsumed,
//!   and nothing after it runs, until the last step has written `END`.
//! - Input: a storage request larger than `partial::FREE_BYTES` whose value is still arriving holds a
//!   grant from the server-wide [`PartialValueBudget`] (`partial`), or is refused as memcached refuses a
//!   store it cannot allocate (see `partial.rs`).
//!
//! Invariants: `consumed` never exceeds `input.len()`; replies are only appended; a request is run only
//! once complete, so a partial request costs nothing but its buffered bytes; `resume`, `partial` and
//! `stream` always belong to the request at the front of the unconsumed input.

mod auth;
mod binary;
mod partial;
mod verbose;

pub use partial::PartialValueBudget;
pub(crate) use verbose::{conn_idle_closing, log_noreply};

use std::sync::Arc;

use mio::Waker;
use mrcache_engine::TenantId;
use mrcache_protocol::binary::REQUEST_MAGIC;
use mrcache_protocol::{parse, response, Limits, Parsed};

use crate::context::{ServerContext, ThreadStats};
use crate::dispatch::{dispatch_from, refuse_store, Flow, Step, Stream};
use crate::net::registry::{ConnInfo, Endpoint};
use crate::settings::Protocol;
use crate::tenants::Tenancy;
use auth::Auth;

/// Output a session may hold unsent before it stops producing replies: it runs no further request, and
/// stops a multi-key retrieval between keys, until the transport has written enough to go below it.
/// Small, because every connection may hold this much (plus one value) for a client that never reads.
pub const OUTPUT_BOUND_BYTES: usize = 64 * 1024;

/// What one [`Session::process`] call did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of `input` consumed (requests run, errors answered, data swallowed).
    pub consumed: usize,
    /// Close the connection once `out` is written.
    pub close: bool,
    /// Stopped because `max_requests` were run; call again without waiting for input.
    pub yielded: bool,
    /// The pending request needs this many bytes counted from the first unconsumed byte, when known.
    pub want_bytes: Option<usize>,
    /// Stopped because `out` reached [`OUTPUT_BOUND_BYTES`] (before a request, or inside a multi-key
    /// retrieval, which stays unconsumed): call again, without waiting for input, once the unsent output
    /// is below the bound.
    pub output_full: bool,
    /// Stopped to wait for a dump thread (a metadump with no lines ready): call again once the
    /// worker's waker has fired, not before.
    pub parked: bool,
}

/// Which protocol a connection speaks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Mode {
    /// `-B auto`, before the first byte.
    Negotiate,
    /// Text and meta.
    Text,
    /// Binary.
    Binary,
}

/// A connection's protocol session.
pub struct Session {
    ctx: Arc<ServerContext>,
    stats: Arc<ThreadStats>,
    limits: Limits,
    swallow: usize,
    tenancy: Tenancy,
    auth: Auth,
    mode: Mode,
    /// The tenant of the port the connection arrived on: SASL may authenticate only as it.
    port_tenant: Option<TenantId>,
    /// Length of `out` that memcached would have written already (replies before this `process` call,
    /// and up to a binary noop): a binary connection closed for a bad magic loses what follows.
    flushed: usize,
    /// The connection's registry entry: its descriptor (which names it in the `-vv` log and in `watch`
    /// lines, as memcached names it), its peer (`watch connevents`), and the tenant `stats conns`
    /// shows.
    conn: Arc<ConnInfo>,
    /// Keys of the multi-key retrieval at the front of the input already answered (0: none).
    resume: usize,
    /// Bytes granted from `ctx.partial_values` to the storage request at the front of the input.
    partial: usize,
    /// Set once `watch` made the connection a log watcher (`crate::watch`): from then on its input is
    /// read and ignored, and the log bus writes to it.
    watcher: Option<u64>,
    /// A dump under way ([`Flow::Stream`]) and the length of its request, which stays at the front of
    /// the input until the dump is done.
    stream: Option<(Stream, usize)>,
    /// The waker of the worker that runs the connection, which a dump thread wakes when it has lines
    /// ready; `None` where no worker waits for one (UDP, tests): a metadump step then waits itself.
    waker: Option<Arc<Waker>>,
    /// Serves UDP datagrams (`net::udp`): each datagram is a connection of its own (see
    /// [`Session::start_datagram`]), and `watch` does nothing.
    datagrams: bool,
}

impl Session {
    /// A session for the connection the registry entry `conn` describes (the port it arrived on may
    /// name a tenant).
    pub fn new(ctx: Arc<ServerContext>, stats: Arc<ThreadStats>, conn: &Arc<ConnInfo>) -> Session {
        let table = ctx.tenants.current();
        let on_port = conn
            .local
            .tcp_port()
            .and_then(|port| table.port_tenant(port));
        let port_tenant = on_port.map(|(id, _)| id);
        let (tenancy, auth) = match on_port {
            Some((id, spec)) => (
                Tenancy::Fixed(id),
                match spec.password {
                    Some(_) => Auth::Required { only: Some(id) },
                    None => Auth::Done,
                },
            ),
            None if table.auth_required() => (
                Tenancy::Fixed(TenantId::DEFAULT),
                Auth::Required { only: None },
            ),
            None => (Tenancy::routed(&ctx.tenants), Auth::Done),
        };
        let config = ctx.engine.config();
        let limits = Limits {
            item_size_max: config.item_size_max_bytes,
            item_overhead: config.memcached_item_overhead_bytes(),
            // The session negotiates (`mode`); to the text parser 0x80 is an ordinary byte.
            binary_magic_closes: false,
            ..Limits::default()
        };
        let mode = match ctx.settings.protocol {
            Protocol::Ascii => Mode::Text,
            Protocol::Binary => Mode::Binary,
            // Text authentication (`-Y`, passwords without `-S`) reads every byte as text.
            Protocol::Auto if auth != Auth::Done && !ctx.settings.sasl => Mode::Text,
            Protocol::Auto => Mode::Negotiate,
        };
        let session = Session {
            ctx,
            stats,
            limits,
            swallow: 0,
            tenancy,
            auth,
            mode,
            port_tenant,
            flushed: 0,
            conn: conn.clone(),
            resume: 0,
            partial: 0,
            watcher: None,
            stream: None,
            waker: None,
            datagrams: false,
        };
        if session.auth == Auth::Done {
            session.publish_tenant();
        }
        session.conn_event(b"conn_new", None);
        verbose::conn_opened(
            &session.ctx,
            session.conn.fd,
            session.ctx.settings.protocol != Protocol::Ascii,
        );
        session
    }

    /// The waker of the worker that runs this connection (see [`Progress::parked`]).
    pub fn attach_waker(&mut self, waker: Arc<Waker>) {
        self.waker = Some(waker);
    }

    /// Makes this the session of a UDP socket: it serves one datagram at a time (call
    /// [`Session::start_datagram`] before each), and a `watch` in a datagram is ignored, as a UDP
    /// socket cannot stream logs to anyone.
    pub fn serve_datagrams(&mut self) {
        self.datagrams = true;
    }

    /// A new datagram begins: nothing of the previous one carries over. Its protocol is negotiated
    /// anew from its first byte under `-B auto` (as memcached decides per datagram), and a request the
    /// previous datagram left unfinished (a value cut short, data being swallowed, a dump or a
    /// retrieval suspended) is dropped, with the partial-value budget it held.
    pub fn start_datagram(&mut self) {
        if self.ctx.settings.protocol == Protocol::Auto && self.auth == Auth::Done {
            self.mode = Mode::Negotiate;
        }
        self.swallow = 0;
        self.resume = 0;
        self.stream = None;
        self.release_partial();
    }

    /// memcached's `watch connevents` lines: `conn_new` and `conn_close` with the peer's address.
    fn conn_event(&self, kind: &[u8], reason: Option<&str>) {
        use std::io::Write as _;
        let log = &self.ctx.log;
        if !log.wants(crate::watch::stream::CONNEVENTS) {
            return;
        }
        let peer = &self.conn.peer;
        log.emit(crate::watch::stream::CONNEVENTS, |line| {
            line.extend_from_slice(b"type=");
            line.extend_from_slice(kind);
            let _ = match peer {
                Endpoint::Tcp(a) => {
                    write!(line, " rip={} rport={} transport=tcp", a.ip(), a.port())
                }
                Endpoint::Udp(a) => {
                    write!(line, " rip={} rport={} transport=udp", a.ip(), a.port())
                }
                // memcached's words for a UNIX client, whose end has no address.
                Endpoint::Unix(_) => write!(line, " rip=unix rport=0 transport=local"),
            };
            if let Some(reason) = reason {
                let _ = write!(line, " reason={reason}");
            }
            let _ = write!(line, " cfd={}", self.conn.fd);
        });
    }

    /// Handles [`Flow::Watch`]: memcached refuses it while replies to earlier commands are still
    /// pending; otherwise the connection becomes a watcher.
    fn start_watching(&mut self, mask: u32, out: &mut Vec<u8>) {
        if !out.is_empty() {
            response::line(out, "ERROR cannot pipeline other commands before watch");
            return;
        }
        match self.ctx.log.add_watcher(self.conn.fd, mask) {
            Ok(id) => {
                self.watcher = Some(id);
                self.conn.set_watching();
                self.ctx.watchers_changed();
            }
            Err(e) => response::line(out, e.reply()),
        }
    }

    /// Records a fixed tenancy on the connection's registry entry (`stats conns` of a tenant lists
    /// only its own connections).
    fn publish_tenant(&self) {
        if let Tenancy::Fixed(id) = self.tenancy {
            self.conn.set_tenant(id);
        }
    }

    /// Ensures the storage request at the front of the input, which needs `needed` bytes, may be
    /// buffered: within `partial::FREE_BYTES`, or with a grant from the server's budget. False when the
    /// budget cannot cover it.
    fn reserve_partial(&mut self, needed: usize) -> bool {
        if needed <= partial::FREE_BYTES || needed <= self.partial {
            return true;
        }
        self.release_partial();
        if self.ctx.partial_values.try_take(needed) {
            self.partial = needed;
            true
        } else {
            false
        }
    }

    /// Returns the grant of the request at the front of the input (it completed, or was refused).
    fn release_partial(&mut self) {
        if self.partial > 0 {
            self.ctx.partial_values.give_back(self.partial);
            self.partial = 0;
        }
    }

    /// Processes complete requests from `input` (at most `max_requests`), appending replies to `out`.
    pub fn process(&mut self, input: &[u8], out: &mut Vec<u8>, max_requests: usize) -> Progress {
        let mut progress = Progress::default();
        let mut requests = 0;
        if self.watcher.is_some() {
            // A watcher only listens (memcached stops reading it); what it sends is dropped.
            progress.consumed = input.len();
            return progress;
        }
        self.flushed = out.len();
        loop {
            let rest = &input[progress.consumed..];
            if let Some((stream, request_bytes)) = &mut self.stream {
                // One step of the dump per call, like one request: then the worker serves others.
                if out.len() >= OUTPUT_BOUND_BYTES {
                    progress.output_full = true;
                    return progress;
                }
                match stream.step(&self.ctx, self.waker.as_ref(), out) {
                    Step::More => {
                        progress.yielded = true;
                        return progress;
                    }
                    Step::Parked => {
                        progress.parked = true;
                        return progress;
                    }
                    Step::Done => {}
                }
                progress.consumed += *request_bytes;
                self.stream = None;
                continue;
            }
            if self.swallow > 0 {
                let take = self.swallow.min(rest.len());
                self.swallow -= take;
                progress.consumed += take;
                if self.swallow > 0 {
                    progress.want_bytes = Some(self.swallow);
                    return progress;
                }
                continue;
            }
            if rest.is_empty() {
                return progress;
            }
            if out.len() >= OUTPUT_BOUND_BYTES {
                progress.output_full = true;
                return progress;
            }
            if requests >= max_requests {
                progress.yielded = true;
                return progress;
            }
            requests += 1;
            if self.mode == Mode::Negotiate {
                self.mode = if rest[0] == REQUEST_MAGIC {
                    Mode::Binary
                } else {
                    verbose::negotiated(&self.ctx, self.conn.fd);
                    Mode::Text
                };
            }
            if self.mode == Mode::Binary {
                if self.binary_step(rest, out, &mut progress) {
                    return progress;
                }
                continue;
            }
            if self.auth != Auth::Done {
                if self.authenticate(rest, out, &mut progress) {
                    return progress;
                }
                continue;
            }
            self.tenancy.refresh(&self.ctx.tenants);
            let mut parsed = parse(rest, &self.limits);
            let mut refused = false;
            if let Parsed::Incomplete {
                needed: Some(needed),
            } = parsed
            {
                if !self.reserve_partial(needed) {
                    // The budget for partly received values is spent: refuse the store from its line.
                    let refusing = Limits {
                        refuse_incomplete_data: true,
                        ..self.limits
                    };
                    parsed = parse(rest, &refusing);
                    refused = true;
                }
            }
            if !matches!(parsed, Parsed::Incomplete { .. }) {
                self.release_partial();
            }
            // Only complete requests and error lines are logged (a request split across reads once, a
            // retrieval resumed after its output drained once; a connection closed for binary or
            // oversized input not at all).
            let log = match parsed {
                Parsed::Request { .. } | Parsed::Error(_) if self.resume == 0 => {
                    verbose::RequestLog::text(&self.ctx, self.conn.fd, rest, out)
                }
                _ => None,
            };
            match parsed {
                Parsed::Request { request, consumed } => {
                    let flow = if refused {
                        refuse_store(
                            &self.ctx,
                            &self.stats,
                            &self.tenancy,
                            self.conn.fd,
                            request,
                            out,
                        )
                    } else {
                        let resume_at = std::mem::take(&mut self.resume);
                        dispatch_from(
                            &self.ctx,
                            &self.stats,
                            &self.tenancy,
                            self.conn.fd,
                            request,
                            resume_at,
                            out,
                        )
                    };
                    if let Some(log) = log {
                        log.reply(&self.ctx, out);
                    }
                    match flow {
                        Flow::Continue => progress.consumed += consumed,
                        Flow::Swallow(n) => {
                            progress.consumed += consumed;
                            self.swallow = n;
                        }
                        Flow::Close => {
                            progress.consumed += consumed;
                            progress.close = true;
                            return progress;
                        }
                        Flow::Suspended { keys_done } => {
                            self.resume = keys_done;
                            progress.output_full = true;
                            return progress;
                        }
                        Flow::Stream(stream) => self.stream = Some((stream, consumed)),
                        Flow::Watch(_) if self.datagrams => progress.consumed += consumed,
                        Flow::Watch(mask) => {
                            progress.consumed += consumed;
                            self.start_watching(mask, out);
                            if self.watcher.is_some() {
                                progress.consumed = input.len();
                                return progress;
                            }
                        }
                    }
                }
                Parsed::Incomplete { needed } => {
                    progress.want_bytes = needed;
                    return progress;
                }
                Parsed::Error(e) => {
                    progress.consumed += e.consumed;
                    self.swallow = e.swallow;
                    if !e.noreply {
                        response::line(out, e.line);
                    }
                    if let Some(log) = log {
                        log.reply(&self.ctx, out);
                    }
                }
                Parsed::Close => {
                    progress.close = true;
                    return progress;
                }
            }
        }
    }
}

impl Drop for Session {
    /// The connection is closing: a watcher stops, and `watch connevents` hears of it.
    fn drop(&mut self) {
        if let Some(id) = self.watcher.take() {
            self.ctx.log.remove(id);
            self.ctx.watchers_changed();
        }
        self.conn_event(b"conn_close", Some("normal"));
        self.release_partial();
        verbose::conn_closed(&self.ctx, self.conn.fd);
    }
}

#[cfg(test)]
mod tests;
