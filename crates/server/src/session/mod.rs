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
//! - `watcher`: once `watch` succeeded, the log bus (`crate::watch`) writes to the connection and its
//!   input is read and dropped; the session's drop ends the watcher. Opening and dropping a session
//!   are `watch connevents`' `conn_new` and `conn_close`.
//!
//! At verbosity 2 (`-vv`, or `verbosity 2`) each command line and the first line of its reply go to
//! stderr as memcached writes them (`verbose.rs`); below that the cost is one relaxed load per request.
//!
//! Invariants: `consumed` never exceeds `input.len()`; replies are only appended; a request is run only
//! once complete, so a partial request costs nothing but its buffered bytes.

mod auth;
mod verbose;

pub(crate) use verbose::log_noreply;

use std::net::SocketAddr;
use std::sync::Arc;

use mrcache_engine::TenantId;
use mrcache_protocol::{parse, response, Limits, Parsed};

use crate::context::{ServerContext, ThreadStats};
use crate::dispatch::{dispatch_conn, Flow};
use crate::settings::Protocol;
use crate::tenants::Tenancy;
use auth::Auth;

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
}

/// A connection's protocol session.
pub struct Session {
    ctx: Arc<ServerContext>,
    stats: Arc<ThreadStats>,
    limits: Limits,
    swallow: usize,
    tenancy: Tenancy,
    auth: Auth,
    /// The connection's descriptor, which names it in the `-vv` log (as memcached names it).
    fd: i32,
    /// Set once `watch` made the connection a log watcher (`crate::watch`): from then on its input is
    /// read and ignored, and the log bus writes to it.
    watcher: Option<u64>,
    /// The client's address (`watch connevents`, and whether there is a real connection to log as
    /// closed at `-vv`); `None` when the descriptor is no connected socket (unit tests).
    peer: Option<SocketAddr>,
}

impl Session {
    /// A session for connection `fd` accepted on `local` (its port may name a tenant).
    pub fn new(
        ctx: Arc<ServerContext>,
        stats: Arc<ThreadStats>,
        local: SocketAddr,
        fd: i32,
    ) -> Session {
        let table = ctx.tenants.current();
        let (tenancy, auth) = match table.port_tenant(local.port()) {
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
            // memcached negotiates the protocol on a connection's first byte: under `-B auto` a leading 0x80
            // is a binary client, which we close; afterwards (and under `-B ascii`) it is an ordinary byte.
            // Before authentication every byte goes to the auth parser, so nothing negotiates there.
            binary_magic_closes: ctx.settings.protocol != Protocol::Ascii && auth == Auth::Done,
            ..Limits::default()
        };
        let session = Session {
            ctx,
            stats,
            limits,
            swallow: 0,
            tenancy,
            auth,
            fd,
            watcher: None,
            peer: None,
        };
        let mut session = session;
        session.peer = peer_of(fd).or_else(|| session.ctx.connections.find(fd).map(|c| c.peer));
        if session.auth == Auth::Done {
            session.publish_tenant();
        }
        session.conn_event(b"conn_new", None);
        verbose::conn_opened(
            &session.ctx,
            fd,
            session.ctx.settings.protocol != Protocol::Ascii,
        );
        session
    }

    /// memcached's `watch connevents` lines: `conn_new` and `conn_close` with the peer's address.
    fn conn_event(&self, kind: &[u8], reason: Option<&str>) {
        use std::io::Write as _;
        let log = &self.ctx.log;
        if !log.wants(crate::watch::stream::CONNEVENTS) {
            return;
        }
        let Some(peer) = self.peer else {
            return;
        };
        log.emit(crate::watch::stream::CONNEVENTS, |line| {
            line.extend_from_slice(b"type=");
            line.extend_from_slice(kind);
            let _ = write!(
                line,
                " rip={} rport={} transport=tcp",
                peer.ip(),
                peer.port()
            );
            if let Some(reason) = reason {
                let _ = write!(line, " reason={reason}");
            }
            let _ = write!(line, " cfd={}", self.fd);
        });
    }

    /// Handles [`Flow::Watch`]: memcached refuses it while replies to earlier commands are still
    /// pending; otherwise the connection becomes a watcher.
    fn start_watching(&mut self, mask: u32, out: &mut Vec<u8>) {
        if !out.is_empty() {
            response::line(out, "ERROR cannot pipeline other commands before watch");
            return;
        }
        match self.ctx.log.add_watcher(self.fd, mask) {
            Ok(id) => {
                self.watcher = Some(id);
                self.ctx.watchers_changed();
            }
            Err(e) => response::line(out, e.reply()),
        }
    }

    /// Records a fixed tenancy on the connection's registry entry (`stats conns` of a tenant lists
    /// only its own connections).
    fn publish_tenant(&self) {
        if let Tenancy::Fixed(id) = self.tenancy {
            if let Some(info) = self.ctx.connections.find(self.fd) {
                info.set_tenant(id);
            }
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
        loop {
            let rest = &input[progress.consumed..];
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
            if requests >= max_requests {
                progress.yielded = true;
                return progress;
            }
            requests += 1;
            if self.auth != Auth::Done {
                if self.authenticate(rest, out, &mut progress) {
                    return progress;
                }
                continue;
            }
            self.tenancy.refresh(&self.ctx.tenants);
            let parsed = parse(rest, &self.limits);
            if !matches!(parsed, Parsed::Incomplete { .. }) {
                if self.limits.binary_magic_closes {
                    verbose::negotiated(&self.ctx, self.fd);
                }
                self.limits.binary_magic_closes = false;
            }
            // Only complete requests and error lines are logged (a request split across reads once; a
            // connection closed for binary or oversized input not at all).
            let log = match parsed {
                Parsed::Request { .. } | Parsed::Error(_) => {
                    verbose::CommandLog::start(&self.ctx, self.fd, rest, out)
                }
                Parsed::Incomplete { .. } | Parsed::Close => None,
            };
            match parsed {
                Parsed::Request { request, consumed } => {
                    progress.consumed += consumed;
                    let flow =
                        dispatch_conn(&self.ctx, &self.stats, &self.tenancy, self.fd, request, out);
                    if let Some(log) = log {
                        log.reply(out);
                    }
                    match flow {
                        Flow::Continue => {}
                        Flow::Swallow(n) => self.swallow = n,
                        Flow::Close => {
                            progress.close = true;
                            return progress;
                        }
                        Flow::Watch(mask) => {
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
                        log.reply(out);
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

/// The peer of socket `fd` (`getpeername`, one syscall; the connection registry would need a scan).
fn peer_of(fd: i32) -> Option<SocketAddr> {
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor is the connection's, open for the whole call; it is only borrowed.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    socket2::SockRef::from(&borrowed)
        .peer_addr()
        .ok()?
        .as_socket()
}

impl Drop for Session {
    /// The connection is closing: a watcher stops, and `watch connevents` hears of it.
    fn drop(&mut self) {
        if let Some(id) = self.watcher.take() {
            self.ctx.log.remove(id);
            self.ctx.watchers_changed();
        }
        self.conn_event(b"conn_close", Some("normal"));
        if self.peer.is_some() {
            verbose::conn_closed(&self.ctx, self.fd);
        }
    }
}

#[cfg(test)]
mod tests;
