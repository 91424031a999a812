//! One client connection: its socket, buffers, the requests it has in flight, and the matching of
//! replies to those requests.
//!
//! Invariants: `inflight` holds the requests written to `wbuf` or the socket, oldest first, and
//! memcached answers in order, so each reply item belongs to `inflight.front()`. With lookaside on,
//! `req_keys` holds the key indices of every in-flight get, in the same order, so a get's misses
//! are exactly its keys that no `VALUE` matched. A fault (reset, malformed or unexpected reply,
//! refused or unanswered auth, timeout, failed reconnect) desynchronises the stream for good: the
//! worker then calls [`Conn::abandon`], which counts what was lost and closes the socket.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::Registry;

use crate::reply::{parse_item, ReplyItem};
use crate::stats::RunStats;
use crate::uring::RingState;
use crate::worker::{Plan, Window};
use crate::OpKind;

/// Initial receive buffer; grows only for values larger than this.
const READ_CHUNK: usize = 64 * 1024;
/// Wait before reconnecting a dropped connection, so a dead server is not hammered.
pub(crate) const RECONNECT_BACKOFF: Duration = Duration::from_millis(100);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnState {
    /// Authenticated (or no auth needed): may send requests.
    Ready,
    /// Non-blocking connect in progress since the given time.
    Connecting(Instant),
    /// Auth request sent, waiting for `STORED`.
    Authenticating,
    /// Closed after a fault; reconnect at the given time.
    Down(Instant),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PendingOp {
    Op(OpKind),
    /// A set issued by the lookaside pattern after a miss.
    LookasideSet,
    Auth,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending {
    pub op: PendingOp,
    /// Keys asked for (gets) — 1 for sets.
    pub keys: u32,
    pub hits: u32,
    /// `req_keys` entries of this get already consumed by VALUE matching.
    pub matched: u32,
    pub intended: Instant,
    pub sent: Instant,
}

/// A lookaside set waiting for its simulated backend delay.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Followup {
    pub ready_at: Instant,
    pub key: u64,
}

/// Why a connection had to be dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    ConnectFailed,
    Reset,
    Protocol,
    AuthRefused,
    Timeout,
}

/// A reply item with what the caller needs, owning nothing borrowed from the read buffer.
enum Item {
    Value(Option<u64>),
    End,
    Stored,
    NotStored,
    Error,
    ClientError(String),
    ServerError(String),
}

pub(crate) struct Conn {
    pub addr: SocketAddr,
    pub tenant: usize,
    pub stream: Option<TcpStream>,
    pub state: ConnState,
    pub wbuf: Vec<u8>,
    wpos: usize,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    pub inflight: VecDeque<Pending>,
    pub req_keys: VecDeque<u64>,
    pub followups: VecDeque<Followup>,
    /// Open loop: the intended send time of the next new request.
    pub next_intended: Option<Instant>,
    /// Preload: the key indices this connection still has to set.
    pub preload: std::ops::Range<u64>,
    /// The wake-up time this connection has in the worker's timer heap, if any.
    pub heap_wake: Option<Instant>,
    /// `--io uring`: the connection's operations in flight (`None` on the epoll path).
    pub ring: Option<RingState>,
    /// `--tls-ca`: the TLS session the requests and replies go through (epoll path only).
    tls: Option<rustls::ClientConnection>,
}

impl Conn {
    pub fn new(addr: SocketAddr, tenant: usize, stream: TcpStream) -> Self {
        Conn {
            addr,
            tenant,
            stream: Some(stream),
            state: ConnState::Ready,
            wbuf: Vec::with_capacity(4096),
            wpos: 0,
            rbuf: vec![0; READ_CHUNK],
            rstart: 0,
            rend: 0,
            inflight: VecDeque::new(),
            req_keys: VecDeque::new(),
            followups: VecDeque::new(),
            next_intended: None,
            preload: 0..0,
            heap_wake: None,
            ring: None,
            tls: None,
        }
    }

    /// Starts a TLS session on the connection's (new) socket; its handshake runs in `flush` and
    /// `read_replies` before the first request goes out.
    pub fn start_tls(&mut self, config: std::sync::Arc<rustls::ClientConfig>) -> io::Result<()> {
        let name = rustls::pki_types::ServerName::IpAddress(self.addr.ip().into());
        let session = rustls::ClientConnection::new(config, name)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        self.tls = Some(session);
        Ok(())
    }

    /// Requests in flight plus lookaside sets waiting to be sent.
    pub fn outstanding(&self) -> usize {
        self.inflight.len() + self.followups.len()
    }

    /// Records that a request was just appended to `wbuf`.
    pub fn push_pending(&mut self, op: PendingOp, keys: u32, intended: Instant, now: Instant) {
        self.inflight.push_back(Pending {
            op,
            keys,
            hits: 0,
            matched: 0,
            intended,
            sent: now,
        });
    }

    /// Writes as much of `wbuf` as the socket takes. On the io_uring path the worker sends `wbuf` at
    /// the end of its turn; this only reports a failed send.
    pub fn flush(&mut self) -> Result<(), Fault> {
        if let Some(r) = &self.ring {
            return if r.send_error {
                Err(Fault::Reset)
            } else {
                Ok(())
            };
        }
        let Some(stream) = self.stream.as_mut() else {
            return Ok(());
        };
        if let Some(tls) = self.tls.as_mut() {
            // Requests go into the session as far as it takes them (before the handshake ends it
            // holds them), and its records out as far as the socket takes them.
            loop {
                while tls.wants_write() {
                    match tls.write_tls(stream) {
                        Ok(0) => return Err(Fault::Reset),
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => return Err(Fault::Reset),
                    }
                }
                if self.wpos == self.wbuf.len() {
                    self.wbuf.clear();
                    self.wpos = 0;
                    return Ok(());
                }
                match tls.writer().write(&self.wbuf[self.wpos..]) {
                    Ok(0) => return Ok(()),
                    Ok(n) => self.wpos += n,
                    Err(_) => return Err(Fault::Reset),
                }
            }
        }
        while self.wpos < self.wbuf.len() {
            match stream.write(&self.wbuf[self.wpos..]) {
                Ok(0) => return Err(Fault::Reset),
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(Fault::Reset),
            }
        }
        self.wbuf.clear();
        self.wpos = 0;
        Ok(())
    }

    /// Reads until the socket is drained, handling every complete reply item on the way.
    ///
    /// Readiness is edge-triggered, so the socket must be drained before waiting again. A read that
    /// returns less than it had room for has drained it (epoll(7)), which saves a `read` returning
    /// `EAGAIN` per reply; when the event reported the server's shutdown or an error
    /// (`peer_closed`), that FIN or error may sit behind the bytes read and raise no new edge, so it
    /// reads on until `WouldBlock` or end of stream.
    pub fn read_replies(
        &mut self,
        plan: &Plan,
        window: &Window,
        stats: &mut RunStats,
        peer_closed: bool,
    ) -> Result<(), Fault> {
        if let Some(r) = self.ring.as_mut() {
            // io_uring: a receive completed; its bytes are already at the end of `rbuf`.
            return match r.received.take() {
                None => Ok(()),
                Some(n) if n <= 0 => Err(Fault::Reset),
                Some(_) => self.handle_replies(plan, window, stats),
            };
        }
        if self.tls.is_some() {
            return self.read_tls_replies(plan, window, stats);
        }
        loop {
            self.make_room();
            let Some(stream) = self.stream.as_mut() else {
                return Ok(());
            };
            let room = self.rbuf.len() - self.rend;
            let drained = match stream.read(&mut self.rbuf[self.rend..]) {
                Ok(0) => return Err(Fault::Reset),
                Ok(n) => {
                    self.rend += n;
                    n < room && !peer_closed
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Err(Fault::Reset),
            };
            self.handle_replies(plan, window, stats)?;
            if drained {
                return Ok(());
            }
        }
    }

    /// `read_replies` over TLS: takes records until the socket is drained (a short read of plaintext
    /// says nothing about the socket), handles the replies they carry, and sends what the session
    /// has to say (handshake messages, requests it held until the handshake ended).
    fn read_tls_replies(
        &mut self,
        plan: &Plan,
        window: &Window,
        stats: &mut RunStats,
    ) -> Result<(), Fault> {
        loop {
            let (Some(stream), Some(tls)) = (self.stream.as_mut(), self.tls.as_mut()) else {
                return Ok(());
            };
            match tls.read_tls(stream) {
                Ok(0) => return Err(Fault::Reset),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Err(Fault::Reset),
            }
            tls.process_new_packets().map_err(|_| Fault::Reset)?;
            loop {
                self.make_room();
                let Some(tls) = self.tls.as_mut() else {
                    return Ok(());
                };
                match tls.reader().read(&mut self.rbuf[self.rend..]) {
                    Ok(0) => return Err(Fault::Reset),
                    Ok(n) => self.rend += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => return Err(Fault::Reset),
                }
            }
            self.handle_replies(plan, window, stats)?;
        }
        self.flush()
    }

    /// Handles every complete reply item in the read buffer (after a read on either I/O path).
    fn handle_replies(
        &mut self,
        plan: &Plan,
        window: &Window,
        stats: &mut RunStats,
    ) -> Result<(), Fault> {
        // One clock read per batch: every reply in it had arrived by now.
        let now = Instant::now();
        while let Some(item) = self.next_item(plan)? {
            self.on_item(item, now, plan, window, stats)?;
        }
        Ok(())
    }

    /// io_uring: room at the end of the read buffer for the next receive (compacted or grown first).
    /// The buffer must not be touched again until that receive completes.
    pub fn recv_target(&mut self) -> (*mut u8, usize) {
        self.make_room();
        let room = self.rbuf.len() - self.rend;
        (self.rbuf[self.rend..].as_mut_ptr(), room)
    }

    /// io_uring: a receive put `n` bytes at the end of the read buffer.
    pub fn ring_received(&mut self, n: usize) {
        self.rend += n;
    }

    /// io_uring: hands over the read buffer (an abandoned socket's receive may still write to it) and
    /// starts a fresh one.
    pub fn take_rbuf(&mut self) -> Vec<u8> {
        std::mem::replace(&mut self.rbuf, vec![0; READ_CHUNK])
    }

    /// Compacts or grows the read buffer so a read has room; a large value may need growth.
    fn make_room(&mut self) {
        if self.rstart == self.rend {
            self.rstart = 0;
            self.rend = 0;
        } else if self.rend == self.rbuf.len() && self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            self.rend -= self.rstart;
            self.rstart = 0;
        }
        if self.rend == self.rbuf.len() {
            // The parser bounds an item's size, so growth is bounded too.
            let len = self.rbuf.len() * 2;
            self.rbuf.resize(len, 0);
        }
    }

    fn next_item(&mut self, plan: &Plan) -> Result<Option<Item>, Fault> {
        let parsed = parse_item(&self.rbuf[self.rstart..self.rend]).map_err(|_| Fault::Protocol)?;
        let Some((item, used)) = parsed else {
            return Ok(None);
        };
        let text = |m: &[u8]| String::from_utf8_lossy(m).into_owned();
        let owned = match item {
            ReplyItem::Value { key, .. } => Item::Value(
                plan.lookaside
                    .then(|| plan.tenants[self.tenant].space.index_of(key))
                    .flatten(),
            ),
            ReplyItem::End => Item::End,
            ReplyItem::Stored => Item::Stored,
            ReplyItem::NotStored | ReplyItem::Exists | ReplyItem::NotFound => Item::NotStored,
            ReplyItem::Error => Item::Error,
            ReplyItem::ClientError(m) => Item::ClientError(text(m)),
            ReplyItem::ServerError(m) => Item::ServerError(text(m)),
        };
        self.rstart += used;
        Ok(Some(owned))
    }

    fn on_item(
        &mut self,
        item: Item,
        now: Instant,
        plan: &Plan,
        window: &Window,
        stats: &mut RunStats,
    ) -> Result<(), Fault> {
        let Some(front) = self.inflight.front_mut() else {
            return Err(Fault::Protocol);
        };
        let is_get = matches!(front.op, PendingOp::Op(OpKind::Get | OpKind::MultiGet));
        match item {
            Item::Value(key) if is_get => {
                front.hits += 1;
                if plan.lookaside {
                    if let Some(key) = key {
                        self.match_hit(key, now, plan, window);
                    }
                }
                return Ok(());
            }
            Item::End if is_get => {}
            Item::Stored if front.op == PendingOp::Auth => {
                self.inflight.pop_front();
                self.state = ConnState::Ready;
                return Ok(());
            }
            Item::Stored | Item::NotStored if !is_get && front.op != PendingOp::Auth => {
                if matches!(item, Item::NotStored) {
                    stats.errors.not_stored += 1;
                }
            }
            _ if front.op == PendingOp::Auth => return Err(Fault::AuthRefused),
            Item::Error | Item::ClientError(_) | Item::ServerError(_) => {
                let p = self.inflight.pop_front().expect("front exists");
                self.drop_req_keys(&p);
                stats.count_error_reply(&item_text(&item));
                return Ok(());
            }
            _ => return Err(Fault::Protocol),
        }
        let p = self.inflight.pop_front().expect("front exists");
        if plan.lookaside && is_get {
            // Keys after the last matched VALUE were all misses.
            for _ in p.matched..p.keys {
                let Some(key) = self.req_keys.pop_front() else {
                    break;
                };
                self.on_miss(key, now, plan, window);
            }
        }
        stats.complete(p, self.tenant, now, window);
        Ok(())
    }

    /// A VALUE for `key`: the get's keys before it (in request order) were misses.
    fn match_hit(&mut self, key: u64, now: Instant, plan: &Plan, window: &Window) {
        let Some(front) = self.inflight.front_mut() else {
            return;
        };
        let mut misses = Vec::new();
        while front.matched < front.keys {
            front.matched += 1;
            // `req_keys` mirrors the in-flight gets, so it only runs dry if that invariant broke.
            let Some(asked) = self.req_keys.pop_front() else {
                break;
            };
            if asked == key {
                break;
            }
            misses.push(asked);
        }
        for miss in misses {
            self.on_miss(miss, now, plan, window);
        }
    }

    fn on_miss(&mut self, key: u64, now: Instant, plan: &Plan, window: &Window) {
        if now < window.measure_end {
            self.followups.push_back(Followup {
                ready_at: now + plan.backend_delay,
                key,
            });
        }
    }

    fn drop_req_keys(&mut self, p: &Pending) {
        if matches!(p.op, PendingOp::Op(OpKind::Get | OpKind::MultiGet)) {
            for _ in p.matched..p.keys {
                self.req_keys.pop_front();
            }
        }
    }

    /// Closes the connection after `fault`, counting the requests it loses, and schedules a
    /// reconnect.
    pub fn abandon(
        &mut self,
        fault: Fault,
        now: Instant,
        window: &Window,
        stats: &mut RunStats,
        registry: &Registry,
    ) {
        let lost = self
            .inflight
            .iter()
            .filter(|p| p.op != PendingOp::Auth && window.is_measured(p.intended))
            .count() as u64;
        match fault {
            Fault::Timeout => stats.errors.timeouts += lost,
            Fault::Reset => {
                stats.errors.connection_resets += 1;
                stats.errors.abandoned += lost;
            }
            Fault::Protocol => {
                stats.errors.protocol += 1;
                stats.errors.abandoned += lost;
            }
            Fault::AuthRefused => stats.errors.auth_failures += 1,
            Fault::ConnectFailed => stats.errors.connect_failures += 1,
        }
        if let Some(mut stream) = self.stream.take() {
            let _ = registry.deregister(&mut stream);
        }
        self.tls = None;
        self.inflight.clear();
        self.req_keys.clear();
        self.followups.clear();
        self.wbuf.clear();
        self.wpos = 0;
        self.rstart = 0;
        self.rend = 0;
        self.state = ConnState::Down(now + RECONNECT_BACKOFF);
    }

    /// True once a non-blocking connect has finished; `Err` if it failed.
    pub fn connect_finished(&mut self) -> io::Result<bool> {
        let Some(stream) = self.stream.as_ref() else {
            return Ok(false);
        };
        if let Some(e) = stream.take_error()? {
            return Err(e);
        }
        match stream.peer_addr() {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn item_text(item: &Item) -> ErrorReply<'_> {
    match item {
        Item::ClientError(m) => ErrorReply::Client(m),
        Item::ServerError(m) => ErrorReply::Server(m),
        _ => ErrorReply::UnknownCommand,
    }
}

/// An error reply, as counted in the statistics.
pub(crate) enum ErrorReply<'a> {
    UnknownCommand,
    Client(&'a str),
    Server(&'a str),
}
