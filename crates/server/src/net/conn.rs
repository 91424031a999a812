//! One client connection: its socket, its protocol session, and the two buffers between them.
//!
//! Owned by exactly one worker thread for its whole life; nothing here is shared except the `ConnInfo`
//! that `stats conns` reads (relaxed stores of a state byte and a timestamp) and the worker's
//! `ThreadStats` (byte counters only this worker writes).
//!
//! Buffers and their bounds:
//! - The read buffer starts at [`INITIAL_READ_BUFFER_BYTES`] (allocated at the first read) and grows only
//!   when the session needs more unconsumed bytes than fit (a long line, or a value the session asks for
//!   with `Progress::want_bytes`), up to `max_read_buffer_bytes` (the largest item plus a command line).
//!   When it drains it shrinks back, so an idle connection costs only its small buffers.
//! - A read that fills the buffer is followed by another (the buffer growing) before the session runs,
//!   until a read comes up short or [`LINE_READ_BYTES`] are buffered: memcached reads up to its 16 KiB
//!   read buffer at once before it looks for a line, so a long non-get line the client sent in one go is
//!   answered, not closed as an endless line after the first 4 KiB.
//! - The write buffer holds replies not yet accepted by the socket. While it holds
//!   [`OUTPUT_HIGH_WATER_BYTES`] (the session's small `OUTPUT_BOUND_BYTES`) or more the connection is not
//!   read, nor its buffered input run; the session itself stops producing at that bound, between requests
//!   and between the keys of a multi-key retrieval, so one request cannot grow it by more than one value
//!   (or one reply) either. A client that never reads holds at most the bound plus one value; reading and
//!   the suspended request resume once the socket has taken the output.
//!
//! Readiness is edge-triggered (mio): `readable`/`writable` stay true until a syscall returns
//! `WouldBlock`, so a connection that stops early for fairness (`-R`, [`MAX_ROUNDS_PER_DRIVE`]) or for
//! backpressure is re-driven by the worker without a new event.
//!
//! A read that returns fewer bytes than it had room for also ends readability (epoll(7): for a stream
//! socket a short read means the receive queue was empty; bytes that arrive later raise a new edge).
//! That saves the `read` returning `EAGAIN` after every unpipelined request: one syscall in three.
//! The exception is a peer that has shut down or failed: its FIN or error may already be queued behind
//! the bytes just read and raises no further edge, so once the worker has seen such an event the
//! connection reads until `WouldBlock` or end of stream again.

use std::io::{self, ErrorKind};
use std::sync::Arc;

use crate::context::ThreadStats;
use crate::net::registry::{ConnInfo, ConnState};
use crate::net::stream::ClientStream;
use crate::net::tls::Transport;
use crate::net::ProtocolSession;

/// First read buffer: enough for typical command lines and small values.
pub const INITIAL_READ_BUFFER_BYTES: usize = 4 * 1024;
/// Room for a command line in front of a value (memcached's key limit is 250, a `set` line is ~300 bytes;
/// meta commands with many flags stay far below this).
pub const MAX_COMMAND_LINE_BYTES: usize = 64 * 1024;
/// Unsent output at which the connection stops reading and running requests until the client drains it
/// (the bound the session itself keeps to).
pub const OUTPUT_HIGH_WATER_BYTES: usize = crate::session::OUTPUT_BOUND_BYTES;
/// How much a connection reads, in reads that each fill the buffer, before it runs the session (memcached's
/// `READ_BUFFER_SIZE`): a line up to this long that arrives at once is parsed whole.
pub const LINE_READ_BYTES: usize = 16 * 1024;
/// A drained write buffer larger than this is released, so a single large reply is not kept forever.
pub const WRITE_BUFFER_KEEP_BYTES: usize = 64 * 1024;
/// Read/process rounds one connection gets per turn before the worker serves others.
pub const MAX_ROUNDS_PER_DRIVE: usize = 16;

/// What the worker should do with the connection after a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Wait for the next readiness event.
    Wait,
    /// Run it again before polling (it yielded, or has unread input).
    Again,
    /// Close it.
    Close,
    /// Its session waits for another thread (a metadump's dump thread): run it again when the worker's
    /// waker fires (and on its socket's events, as after `Wait`).
    Park,
}

/// Per-turn parameters from the worker.
pub struct Turn<'a> {
    /// `-R`.
    pub max_requests: usize,
    /// The worker's counters; the connection adds `bytes_read`, `bytes_written` and `conn_yields`.
    pub stats: &'a ThreadStats,
    /// Engine clock seconds now (for `stats conns` idle time).
    pub now_secs: u32,
}

/// One client connection running protocol session `S` over transport `T` (a mio TCP or UNIX socket on
/// the epoll path, `net::uring::UringSocket` on the io_uring path); owned by one worker for its whole life.
///
/// The transport is any `Read + Write` that follows the readiness contract above: `read`/`write` return
/// `WouldBlock` when they cannot make progress, and the worker calls [`Conn::on_event`] when they can again.
pub struct Conn<S, T = ClientStream> {
    stream: T,
    session: S,
    info: Arc<ConnInfo>,
    rbuf: Vec<u8>,
    rstart: usize,
    rend: usize,
    /// Do not run the session again until this many unconsumed bytes are buffered (0: any).
    need_bytes: usize,
    /// The session waits for a request's data (a value arriving, or one it refused being discarded):
    /// memcached's `conn_nread` (or `conn_swallow`). An unfinished command line is not this: memcached
    /// reads it in the state it waits for commands in, which `-o idle_timeout` closes.
    awaiting_data: bool,
    max_read_buffer_bytes: usize,
    out: Vec<u8>,
    wpos: usize,
    readable: bool,
    writable: bool,
    /// The last read filled the buffer: read again before running the session (see the module notes).
    filling: bool,
    /// The worker saw the peer's shutdown or an error: read to `WouldBlock`/EOF, never stop at a short read.
    peer_closed: bool,
    eof: bool,
    closing: bool,
}

impl<S: ProtocolSession, T: Transport> Conn<S, T> {
    pub(crate) fn new(
        stream: T,
        session: S,
        info: Arc<ConnInfo>,
        max_read_buffer_bytes: usize,
    ) -> Self {
        Conn {
            stream,
            session,
            info,
            rbuf: Vec::new(),
            rstart: 0,
            rend: 0,
            need_bytes: 0,
            awaiting_data: false,
            max_read_buffer_bytes: max_read_buffer_bytes.max(INITIAL_READ_BUFFER_BYTES),
            out: Vec::new(),
            wpos: 0,
            // Optimistic: the socket may have data from before it was registered.
            readable: true,
            writable: true,
            filling: false,
            peer_closed: false,
            eof: false,
            closing: false,
        }
    }

    pub(crate) fn stream(&self) -> &T {
        &self.stream
    }

    pub(crate) fn stream_mut(&mut self) -> &mut T {
        &mut self.stream
    }

    /// What `stats conns` sees of this connection (shared with the connection registry).
    pub fn info(&self) -> &Arc<ConnInfo> {
        &self.info
    }

    /// Records a readiness event; `peer_closed` when it reports the peer's shutdown or an error.
    pub fn on_event(&mut self, readable: bool, writable: bool, peer_closed: bool) {
        self.readable |= readable || peer_closed;
        self.writable |= writable;
        self.peer_closed |= peer_closed;
    }

    /// Whether the connection reads nothing now: it is closing, or waits for its client to take output
    /// (unsent output at the high-water mark). A transport that receives ahead of `read` (io_uring) stops
    /// receiving meanwhile, as the epoll path leaves the bytes in the socket.
    pub(crate) fn not_reading(&self) -> bool {
        self.closing || self.pending_out() >= OUTPUT_HIGH_WATER_BYTES
    }

    /// Output not yet handed to the socket: replies `Conn` holds, plus one byte for records a TLS
    /// stream holds (their size does not matter, only that a writable socket must take them).
    fn pending_out(&self) -> usize {
        self.out.len() - self.wpos + usize::from(self.stream.has_unsent())
    }

    /// Runs the connection until it would block, must wait for the client to drain output, has used its
    /// turn, or is done.
    pub fn drive(&mut self, turn: &Turn<'_>) -> Next {
        match self.drive_inner(turn) {
            Ok(next) => {
                if next == Next::Wait {
                    self.release_idle_buffers();
                }
                self.publish_state(next);
                next
            }
            Err(_) => Next::Close,
        }
    }

    fn drive_inner(&mut self, turn: &Turn<'_>) -> io::Result<Next> {
        for _ in 0..MAX_ROUNDS_PER_DRIVE {
            if self.pending_out() > 0 && self.writable {
                self.flush(turn.stats)?;
            }
            if self.closing {
                return Ok(if self.pending_out() == 0 {
                    Next::Close
                } else {
                    Next::Wait
                });
            }
            if self.pending_out() >= OUTPUT_HIGH_WATER_BYTES {
                return Ok(Next::Wait);
            }

            let unconsumed = self.rend - self.rstart;
            let read_on = self.filling && self.readable;
            if unconsumed > 0 && unconsumed >= self.need_bytes && !read_on {
                if self.wpos > 0 && self.out.len() >= OUTPUT_HIGH_WATER_BYTES {
                    // The session measures its bound on `out`: drop what was written already.
                    self.out.drain(..self.wpos);
                    self.wpos = 0;
                }
                self.info.set_state(ConnState::ParseCmd);
                self.info.touch(turn.now_secs);
                let p = self.session.process(
                    &self.rbuf[self.rstart..self.rend],
                    &mut self.out,
                    turn.max_requests,
                );
                self.awaiting_data = p.want_bytes.is_some();
                let consumed = p.consumed.min(unconsumed);
                self.rstart += consumed;
                if self.rstart == self.rend {
                    self.rstart = 0;
                    self.rend = 0;
                }
                if p.close {
                    self.closing = true;
                    continue;
                }
                if p.output_full {
                    // Run again (the suspended request first) once the output is below the bound.
                    self.need_bytes = 0;
                    continue;
                }
                if p.parked {
                    self.need_bytes = 0;
                    if self.writable {
                        self.flush(turn.stats)?;
                    }
                    return Ok(Next::Park);
                }
                if p.yielded {
                    ThreadStats::add(&turn.stats.conn_yields, 1);
                    self.need_bytes = 0;
                    if self.writable {
                        self.flush(turn.stats)?;
                    }
                    return Ok(Next::Again);
                }
                let left = self.rend - self.rstart;
                self.need_bytes = if left == 0 {
                    0
                } else {
                    (left + 1).max(p.want_bytes.unwrap_or(0))
                };
                if self.need_bytes > self.max_read_buffer_bytes {
                    // The session asks for more than any valid request needs: refuse to buffer it.
                    return Ok(Next::Close);
                }
                continue;
            }

            if self.eof {
                // The client half-closed: answer what it sent, then close.
                self.closing = true;
                continue;
            }
            if !self.readable {
                return Ok(Next::Wait);
            }
            self.make_room();
            let room = self.rbuf.len() - self.rend;
            self.filling = false;
            match self.stream.read(&mut self.rbuf[self.rend..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.rend += n;
                    ThreadStats::add(&turn.stats.bytes_read, n as u64);
                    if n < room && self.stream.short_read_drains() {
                        if !self.peer_closed {
                            // Drained (see the module notes); the next arrival raises a new edge.
                            self.readable = false;
                        }
                    } else {
                        self.filling = self.rend - self.rstart < LINE_READ_BYTES;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.readable = false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Next::Again)
    }

    /// Ensures free space after `rend` for the next read: compacts, or grows up to what the session needs.
    fn make_room(&mut self) {
        let unconsumed = self.rend - self.rstart;
        let want = self
            .need_bytes
            .max(unconsumed + 1)
            .max(INITIAL_READ_BUFFER_BYTES);
        if self.rend < self.rbuf.len() && self.rbuf.len() - self.rstart >= want {
            return;
        }
        if self.rstart > 0 {
            self.rbuf.copy_within(self.rstart..self.rend, 0);
            self.rstart = 0;
            self.rend = unconsumed;
        }
        if self.rbuf.len() < want {
            // Grow geometrically so a value arriving in pieces is not copied once per piece.
            let new_len = want
                .max(self.rbuf.len() * 2)
                .min(self.max_read_buffer_bytes.max(want));
            self.rbuf.resize(new_len, 0);
            self.info.set_buffers(self.rbuf.len(), self.out.capacity());
        }
    }

    fn flush(&mut self, stats: &ThreadStats) -> io::Result<()> {
        while self.wpos < self.out.len() {
            match self.stream.write(&self.out[self.wpos..]) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.wpos += n;
                    ThreadStats::add(&stats.bytes_written, n as u64);
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.writable = false;
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.wpos == self.out.len() && self.writable && self.stream.has_unsent() {
            match self.stream.flush() {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.writable = false,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.wpos == self.out.len() {
            self.out.clear();
            self.wpos = 0;
        } else if self.wpos > self.out.len() / 2 {
            self.out.drain(..self.wpos);
            self.wpos = 0;
        }
        Ok(())
    }

    /// Shrinks buffers that a large request or reply grew, once they are empty.
    fn release_idle_buffers(&mut self) {
        let mut changed = false;
        if self.rstart == self.rend && self.rbuf.len() > INITIAL_READ_BUFFER_BYTES {
            self.rbuf = vec![0; INITIAL_READ_BUFFER_BYTES];
            self.rstart = 0;
            self.rend = 0;
            changed = true;
        }
        if self.out.is_empty() && self.out.capacity() > WRITE_BUFFER_KEEP_BYTES {
            self.out = Vec::new();
            changed = true;
        }
        if changed {
            self.info.set_buffers(self.rbuf.len(), self.out.capacity());
        }
    }

    fn publish_state(&self, next: Next) {
        let state = match next {
            Next::Close => ConnState::Closing,
            _ if self.pending_out() > 0 => ConnState::Mwrite,
            _ if self.awaiting_data => ConnState::Nread,
            Next::Again => ConnState::ParseCmd,
            Next::Wait | Next::Park => ConnState::Waiting,
        };
        self.info.set_state(state);
    }
}
