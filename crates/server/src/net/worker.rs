//! A worker thread: memcached's `worker_libevent` loop on mio. It owns its connections, its `mio::Poll`
//! and its `ThreadStats`; nothing else touches them.
//!
//! New connections arrive from the listener over an mpsc channel, followed by a `Waker` wake-up. Each
//! connection lives in a slot of `conns` (its mio token is the slot index). Connections that stopped
//! before `WouldBlock` — they yielded after `-R` requests, or used their turn — go on the `ready` queue and
//! run again before the worker blocks in `poll` (it polls with a zero timeout while the queue is not
//! empty, so their neighbours' events are served in between).
//!
//! A connection whose session waits for a dump thread ([`Next::Park`]) is listed in `parked`; the dump
//! thread wakes the worker through the same `Waker` as the listener, and every wake-up queues the
//! parked connections again (a spurious one costs a session step that parks again). A connection is
//! listed before the worker next polls, so a wake-up that came first is still seen by that poll.
//!
//! [`WorkerBase`] is what this worker shares with the io_uring one (`uring/worker.rs`): the handover
//! channel, `-R` turns, and opening and closing a connection (`stats conns`, `curr_connections`).
//!
//! Locks: none of its own on the request path. The connection registry's per-worker mutex (a leaf) is
//! taken on open and close only; the engine's shard locks are taken inside the session.

use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use mio::{Events, Interest, Poll, Token, Waker};

use crate::context::{ServerContext, ThreadStats};
use crate::net::conn::{Conn, Next, Turn, MAX_COMMAND_LINE_BYTES};
use crate::net::registry::{ConnInfo, Endpoint};
use crate::net::stream::ClientStream;
use crate::net::ProtocolSession;

/// The token of the worker's waker; connection tokens are slot indexes below it.
pub const WAKER_TOKEN: Token = Token(usize::MAX);
/// Events taken per `poll`.
const EVENTS_CAPACITY: usize = 1024;

/// A connection handed over by the listener.
pub struct NewConn {
    /// The accepted socket (a TCP one already `TCP_NODELAY`).
    pub stream: ClientStream,
    /// The client's address.
    pub peer: Endpoint,
    /// The listening address it arrived on.
    pub local: Endpoint,
}

/// What a worker holds whichever I/O path runs it (this file's [`Worker`], `uring::UringWorker`): its
/// context and counters, the listener's handover channel and waker, and how it opens a connection.
pub(crate) struct WorkerBase<F> {
    pub(crate) id: usize,
    pub(crate) ctx: Arc<ServerContext>,
    stats: Arc<ThreadStats>,
    /// The poll the listener's waker is registered with (on the epoll path, the connections' too).
    pub(crate) poll: Poll,
    /// Kept alive here (if only the listener held it, the listener's exit would close the eventfd and
    /// drop a wake-up the worker has not yet collected), and given to each session: a dump thread wakes
    /// the worker with it when a parked connection has more ([`Next::Park`]).
    waker: Arc<Waker>,
    inbox: Receiver<NewConn>,
    new_session: F,
    max_read_buffer_bytes: usize,
}

impl<F> WorkerBase<F> {
    pub(crate) fn new(
        id: usize,
        ctx: Arc<ServerContext>,
        poll: Poll,
        waker: Arc<Waker>,
        inbox: Receiver<NewConn>,
        new_session: F,
    ) -> Self {
        let stats = ctx.thread_stats[id].clone();
        // A value of the largest item, its CRLF and its command line must fit in the read buffer.
        let max_read_buffer_bytes = ctx.settings.item_size_max_bytes + 2 + MAX_COMMAND_LINE_BYTES;
        WorkerBase {
            id,
            ctx,
            stats,
            poll,
            waker,
            inbox,
            new_session,
            max_read_buffer_bytes,
        }
    }

    /// The next connection the listener has handed over, if any.
    pub(crate) fn handed_over(&self) -> Option<NewConn> {
        // Empty, or the listener is gone (shutdown): nothing to open either way.
        self.inbox.try_recv().ok()
    }

    /// A connection's turn: `-R` and this worker's counters.
    pub(crate) fn turn(&self, now_secs: u32) -> Turn<'_> {
        Turn {
            max_requests: self.ctx.settings.reqs_per_event,
            stats: &self.stats,
            now_secs,
        }
    }

    /// Opens a handed-over connection in `slot`, over `stream` (its socket as the I/O path wraps it):
    /// lists it for `stats conns` and starts its session.
    pub(crate) fn open_conn<S, T>(
        &self,
        slot: usize,
        stream: T,
        peer: Endpoint,
        local: Endpoint,
        now_secs: u32,
    ) -> Conn<S, T>
    where
        S: ProtocolSession,
        T: crate::net::tls::Transport + AsRawFd,
        F: Fn(Arc<ServerContext>, Arc<ThreadStats>, &Arc<ConnInfo>) -> S,
    {
        let info = Arc::new(ConnInfo::new(stream.as_raw_fd(), peer, local, now_secs));
        self.ctx.connections.insert(self.id, slot, info.clone());
        let mut session = (self.new_session)(self.ctx.clone(), self.stats.clone(), &info);
        session.attach_waker(self.waker.clone());
        Conn::new(stream, session, info, self.max_read_buffer_bytes)
    }

    /// The connection in `slot` is closed: no longer listed, no longer current. Called before its
    /// socket is closed, so that the registry never lists a closed descriptor (`registry.rs`).
    pub(crate) fn closed(&self, slot: usize) {
        self.ctx.connections.remove(self.id, slot);
        self.ctx.conns.curr_connections.fetch_sub(1, Relaxed);
    }

    /// At shutdown: connections handed over but never opened still count as current.
    pub(crate) fn drop_unopened(&self) {
        while let Some(new) = self.handed_over() {
            drop(new);
            self.ctx.conns.curr_connections.fetch_sub(1, Relaxed);
        }
    }
}

struct Slot<S> {
    conn: Conn<S>,
    queued: bool,
    /// Listed in `Worker::parked`.
    parked: bool,
}

/// One worker's state on the epoll path; [`Worker::run`] is the thread body.
pub struct Worker<S, F> {
    base: WorkerBase<F>,
    conns: Vec<Option<Slot<S>>>,
    free_slots: Vec<usize>,
    ready: VecDeque<usize>,
    /// Connections that parked, queued again at the next wake-up (a slot may be stale: its `parked`
    /// flag says).
    parked: Vec<usize>,
}

impl<S, F> Worker<S, F>
where
    S: ProtocolSession,
    F: Fn(Arc<ServerContext>, Arc<ThreadStats>, &Arc<ConnInfo>) -> S,
{
    pub(crate) fn new(base: WorkerBase<F>) -> Self {
        Worker {
            base,
            conns: Vec::new(),
            free_slots: Vec::new(),
            ready: VecDeque::new(),
            parked: Vec::new(),
        }
    }

    /// The event loop; returns when the server shuts down (all its connections closed).
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(EVENTS_CAPACITY);
        loop {
            let timeout = (!self.ready.is_empty()).then_some(std::time::Duration::ZERO);
            if let Err(e) = self.base.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if self.base.ctx.is_shutting_down() {
                break;
            }
            let now_secs = self.base.ctx.clock().now;
            for event in events.iter() {
                if event.token() == WAKER_TOKEN {
                    self.accept_new(now_secs);
                    self.unpark();
                    continue;
                }
                let slot = event.token().0;
                let peer_closed = event.is_read_closed() || event.is_error();
                let writable = event.is_writable() || event.is_write_closed();
                if let Some(Some(s)) = self.conns.get_mut(slot) {
                    s.conn.on_event(event.is_readable(), writable, peer_closed);
                    if !s.queued {
                        s.queued = true;
                        self.ready.push_back(slot);
                    }
                }
            }
            // One turn for each connection that was ready when this round started.
            for _ in 0..self.ready.len() {
                let Some(slot) = self.ready.pop_front() else {
                    break;
                };
                self.run_turn(slot, now_secs);
            }
        }
        self.close_all();
        Ok(())
    }

    fn run_turn(&mut self, slot: usize, now_secs: u32) {
        let Some(Some(s)) = self.conns.get_mut(slot) else {
            return;
        };
        s.queued = false;
        match s.conn.drive(&self.base.turn(now_secs)) {
            Next::Wait => {}
            Next::Again => {
                s.queued = true;
                self.ready.push_back(slot);
            }
            Next::Park => {
                if !s.parked {
                    s.parked = true;
                    self.parked.push(slot);
                }
            }
            Next::Close => self.close(slot),
        }
    }

    /// Queues every parked connection again (see the module notes).
    fn unpark(&mut self) {
        for slot in std::mem::take(&mut self.parked) {
            if let Some(Some(s)) = self.conns.get_mut(slot) {
                if s.parked && !s.queued {
                    s.queued = true;
                    self.ready.push_back(slot);
                }
                s.parked = false;
            }
        }
    }

    /// Registers every connection the listener has handed over.
    fn accept_new(&mut self, now_secs: u32) {
        while let Some(new) = self.base.handed_over() {
            self.open(new, now_secs);
        }
    }

    fn open(&mut self, new: NewConn, now_secs: u32) {
        let NewConn {
            mut stream,
            peer,
            local,
        } = new;
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.conns.len() - 1
        });
        let registered = self.base.poll.registry().register(
            &mut stream,
            Token(slot),
            Interest::READABLE | Interest::WRITABLE,
        );
        if registered.is_err() {
            self.free_slots.push(slot);
            self.base.ctx.conns.curr_connections.fetch_sub(1, Relaxed);
            return;
        }
        let conn = self.base.open_conn(slot, stream, peer, local, now_secs);
        self.conns[slot] = Some(Slot {
            conn,
            queued: true,
            parked: false,
        });
        // Data may have arrived before registration; run it once now.
        self.ready.push_back(slot);
    }

    fn close(&mut self, slot: usize) {
        if let Some(mut s) = self.conns[slot].take() {
            let _ = self.base.poll.registry().deregister(s.conn.stream_mut());
            self.base.closed(slot);
            self.free_slots.push(slot);
        }
    }

    fn close_all(&mut self) {
        for slot in 0..self.conns.len() {
            self.close(slot);
        }
        self.base.drop_unopened();
    }
}
