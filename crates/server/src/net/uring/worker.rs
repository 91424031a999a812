//! A worker thread on io_uring: the same connections, sessions and fairness as `net/worker.rs`, with the
//! system calls batched. Each event-loop turn is one `io_uring_enter` that submits every send and receive
//! queued in the previous turn and collects every completion that is ready, however many connections they
//! belong to; a turn that queued sends and finds no connection ready enters once more to wait (see
//! `UringWorker::enter`).
//!
//! Per connection there is one multishot receive filling buffers from the worker's [`BufRing`], and at
//! most one send in flight, carrying everything the connection's requests of that turn replied (a
//! pipelined batch goes out in one send). A completed receive's buffer goes to the connection's
//! [`UringSocket`], which `Conn` reads it out of and gives back; the receive is cancelled while the
//! connection holds [`RECV_PAUSE_BYTES`] unread or `Conn` is not reading (its client not taking output,
//! or closing), and re-armed after the turn in which that ends, or after the kernel ended it (out of
//! buffers). A connection that stops reading while it holds buffers has them copied out
//! (`UringSocket::park`), so the ring never stays pinned. The bytes this worker has taken from the
//! kernel and not yet handed to a session are thus bounded by the ring, plus what parked connections
//! hold (each at most what it had received when it stopped reading); the module notes of `socket.rs`
//! compare this with the epoll path.
//!
//! New connections come from the listener as on the epoll path (mpsc channel + `mio::Waker`): the worker
//! keeps the `mio::Poll` the waker is registered with, and a multishot poll on that epoll descriptor turns
//! a wake-up into a completion. A dump thread wakes the worker the same way when a connection that
//! parked for it ([`Next::Park`], see `net/worker.rs`) has more: every wake-up queues the parked
//! connections again.
//!
//! Beside its receive, each connection has a one-shot poll for the peer's shutdown or reset (`KIND_HUP`),
//! because a multishot receive can miss one (see `socket.rs`); when it fires the receive is cancelled and
//! the connection reads what is left directly, so a connection whose client went away is always closed.
//!
//! Invariants: a connection's slot is freed (and its descriptor closed) only when it has no operation in
//! flight, so a completion's user data (kind, slot, generation) never names a reused slot's connection;
//! the generation guards against it anyway. The ring is declared before the buffers and connections, so it
//! is torn down before any memory the kernel may still write to or read from. Every buffer a completion
//! hands over is recycled exactly once: at once when its connection is gone or closing, else by the
//! connection's socket.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use mio::Events;

use super::bufring::BufRing;
use super::socket::{UringSocket, RECV_PAUSE_BYTES};
use super::{build_ring, BUFFER_GROUP, RECV_BUFFERS, RECV_BUFFER_BYTES, RING_ENTRIES};
use crate::context::{ServerContext, ThreadStats};
use crate::net::conn::{Conn, Next};
use crate::net::registry::ConnInfo;
use crate::net::worker::{NewConn, WorkerBase};
use crate::net::ProtocolSession;

/// `IORING_ENTER_GETEVENTS`: run deferred completions even when not waiting for any.
const ENTER_GETEVENTS: u32 = 1;
/// How long shutdown waits for cancelled operations to complete before closing the sockets anyway.
const SHUTDOWN_DRAIN: Duration = Duration::from_secs(1);

const KIND_WAKE: u64 = 1;
const KIND_RECV: u64 = 2;
const KIND_SEND: u64 = 3;
const KIND_CANCEL: u64 = 4;
const KIND_HUP: u64 = 5;
/// What the peer-gone poll waits for: the peer shut down its side, or the connection failed or was reset.
const PEER_GONE_EVENTS: u32 = (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) as u32;

fn user_data(kind: u64, slot: usize, gen: u32) -> u64 {
    (kind << 56) | ((gen as u64 & 0xff_ffff) << 32) | (slot as u64 & 0xffff_ffff)
}

fn split_user_data(ud: u64) -> (u64, usize, u32) {
    (
        ud >> 56,
        (ud & 0xffff_ffff) as usize,
        ((ud >> 32) & 0xff_ffff) as u32,
    )
}

struct Slot<S> {
    conn: Conn<S, UringSocket>,
    gen: u32,
    queued: bool,
    closing: bool,
    /// Listed in `UringWorker::parked`.
    parked: bool,
}

/// One io_uring worker's state; [`UringWorker::run`] is the thread body. Field order matters: `ring`
/// drops first (see the module notes).
pub(crate) struct UringWorker<S, F> {
    ring: IoUring,
    bufs: Rc<BufRing>,
    conns: Vec<Option<Slot<S>>>,
    gens: Vec<u32>,
    free_slots: Vec<usize>,
    ready: VecDeque<usize>,
    /// Connections that parked, with their generation, queued again at the next wake-up.
    parked: Vec<(usize, u32)>,
    completions: Vec<(u64, i32, u32)>,
    /// Submissions that did not fit the submission queue, oldest first (see `push`).
    overflow: VecDeque<squeue::Entry>,
    /// Whether a send was queued since the last enter (see `enter`).
    send_queued: bool,
    base: WorkerBase<F>,
    events: Events,
}

impl<S, F> UringWorker<S, F>
where
    S: ProtocolSession,
    F: Fn(Arc<ServerContext>, Arc<ThreadStats>, &Arc<ConnInfo>) -> S,
{
    /// Makes the worker's ring and receive buffers; called on the worker's own thread (a single-issuer
    /// ring belongs to the thread that made it). The error names the worker.
    pub(crate) fn new(base: WorkerBase<F>) -> io::Result<Self> {
        let id = base.id;
        let could_not_start = |e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("io_uring worker {id} could not start: {e}"),
            )
        };
        let ring = build_ring(RING_ENTRIES).map_err(could_not_start)?;
        // Saves the descriptor lookup on every enter; older kernels simply do without.
        let _ = ring.submitter().register_ring_fd();
        let bufs = Rc::new(
            BufRing::new(&ring, RECV_BUFFERS, RECV_BUFFER_BYTES, BUFFER_GROUP)
                .map_err(could_not_start)?,
        );
        Ok(UringWorker {
            ring,
            bufs,
            conns: Vec::new(),
            gens: Vec::new(),
            free_slots: Vec::new(),
            ready: VecDeque::new(),
            parked: Vec::new(),
            completions: Vec::with_capacity(RING_ENTRIES as usize),
            overflow: VecDeque::new(),
            send_queued: false,
            base,
            events: Events::with_capacity(64),
        })
    }

    /// The event loop; returns when the server shuts down (all its connections closed).
    pub(crate) fn run(mut self) -> io::Result<()> {
        self.arm_wake();
        let result = self.event_loop();
        self.close_all();
        result
    }

    fn event_loop(&mut self) -> io::Result<()> {
        loop {
            self.bufs.commit();
            self.flush_overflow();
            // Block only when no connection is waiting for another turn (as the epoll path polls with a
            // zero timeout then) and every submission is queued.
            if let Err(e) = self.enter(self.ready.is_empty() && self.overflow.is_empty()) {
                match e.raw_os_error() {
                    Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN) => {}
                    _ => return Err(e),
                }
            }
            if self.base.ctx.is_shutting_down() {
                return Ok(());
            }
            let now_secs = self.base.ctx.clock().now;
            self.reap(now_secs);
            // One turn for each connection that was ready when this round started.
            for _ in 0..self.ready.len() {
                let Some(slot) = self.ready.pop_front() else {
                    break;
                };
                self.run_turn(slot, now_secs);
            }
        }
    }

    /// Submits what is queued and collects completions, waiting for one when `wait` and no send is
    /// queued.
    ///
    /// A send to a socket with room completes during the submission, so its completion would end a
    /// wait for one at once. A turn that queued sends therefore submits them without waiting (their
    /// completions are collected), and the next enter waits for the next request, with no timer. One
    /// enter that waits for the sends plus one more needs a timeout (a send that cannot complete at
    /// once leaves the count short and would hold up another connection's request), and that timed
    /// wait cost about 1.5 us of kernel time per request at half of memcached's peak rate, more than
    /// the second enter does (docs/results.md §4.1).
    fn enter(&mut self, wait: bool) -> io::Result<()> {
        let send_queued = std::mem::take(&mut self.send_queued);
        if wait && !send_queued {
            return self.ring.submit_and_wait(1).map(drop);
        }
        let queued = self.ring.submission().len() as u32;
        // SAFETY: no argument is passed; the flags ask only to submit and run completions.
        unsafe {
            self.ring
                .submitter()
                .enter::<libc::sigset_t>(queued, 0, ENTER_GETEVENTS, None)
                .map(drop)
        }
    }

    /// Queues one submission. When the submission queue is full it is handed to the kernel once; if it
    /// is still full (the kernel refused it) the entry waits in `overflow`, in order, for the next turn
    /// (`flush_overflow`), so a persistent failure surfaces as the next enter's error instead of a spin.
    fn push(&mut self, entry: squeue::Entry) {
        if self.overflow.is_empty() {
            // SAFETY: every buffer an entry points at outlives the operation (see the module notes).
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
            // Errors are the next enter's to report (EBUSY and EAGAIN pass, anything else ends the worker).
            let _ = self.ring.submit();
            // SAFETY: as above.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return;
            }
        }
        self.overflow.push_back(entry);
    }

    /// Moves the entries `push` could not queue into the submission queue, as many as fit.
    fn flush_overflow(&mut self) {
        while let Some(entry) = self.overflow.front() {
            // SAFETY: as in `push`.
            if unsafe { self.ring.submission().push(entry) }.is_err() {
                return;
            }
            self.overflow.pop_front();
        }
    }

    fn arm_wake(&mut self) {
        let entry =
            opcode::PollAdd::new(types::Fd(self.base.poll.as_raw_fd()), libc::POLLIN as u32)
                .multi(true)
                .build()
                .user_data(user_data(KIND_WAKE, 0, 0));
        self.push(entry);
    }

    /// Handles every completion that is ready.
    fn reap(&mut self, now_secs: u32) {
        let mut completions = std::mem::take(&mut self.completions);
        completions.clear();
        completions.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
        for &(ud, res, flags) in &completions {
            let (kind, slot, gen) = split_user_data(ud);
            match kind {
                KIND_WAKE => {
                    // Collect the waker's edge so the epoll descriptor is quiet again, then the handovers.
                    let _ = self.base.poll.poll(&mut self.events, Some(Duration::ZERO));
                    self.accept_new(now_secs);
                    self.unpark();
                    if !cqueue::more(flags) {
                        self.arm_wake();
                    }
                }
                KIND_RECV => self.on_recv(slot, gen, res, flags),
                KIND_SEND => self.on_send(slot, gen, res),
                KIND_HUP => self.on_hup(slot, gen, res),
                _ => {}
            }
        }
        self.completions = completions;
    }

    /// The peer-gone poll completed: with the events that fired, or cancelled (the connection closes).
    fn on_hup(&mut self, slot: usize, gen: u32, res: i32) {
        let Some(s) = self.live_slot(slot, gen) else {
            return;
        };
        let sock = s.conn.stream_mut();
        sock.hup_armed = false;
        sock.hup_cancelling = false;
        if res > 0 {
            sock.peer_gone = true;
            // Read on to the end of stream or the error (directly, once the receive has ended).
            s.conn.on_event(true, false, true);
        }
        self.schedule(slot);
    }

    fn live_slot(&mut self, slot: usize, gen: u32) -> Option<&mut Slot<S>> {
        match self.conns.get_mut(slot) {
            Some(Some(s)) if s.gen == gen => Some(s),
            _ => None,
        }
    }

    fn on_recv(&mut self, slot: usize, gen: u32, res: i32, flags: u32) {
        let bid = cqueue::buffer_select(flags);
        if let Some(bid) = bid {
            self.bufs.taken(bid);
        }
        let Some(s) = (match self.conns.get_mut(slot) {
            Some(Some(s)) if s.gen == gen => Some(s),
            _ => None,
        }) else {
            if let Some(bid) = bid {
                self.bufs.recycle(bid);
            }
            return;
        };
        let sock = s.conn.stream_mut();
        if let Some(bid) = bid {
            if res > 0 && !s.closing {
                sock.received(bid, res as usize);
            } else {
                self.bufs.recycle(bid);
            }
        }
        // Once the receive has ended after the peer went, what is left is read directly (`socket.rs`).
        let read_rest = !cqueue::more(flags) && sock.peer_gone;
        if !cqueue::more(flags) {
            sock.recv_armed = false;
            sock.recv_cancelling = false;
        }
        if res > 0 {
            s.conn.on_event(true, false, false);
        } else if res == 0 {
            sock.set_eof();
            s.conn.on_event(true, false, true);
        } else if ![libc::ENOBUFS, libc::ECANCELED, libc::EAGAIN, libc::EINTR].contains(&-res) {
            // Out of buffers, cancelled (backpressure) or interrupted: re-armed after the next turn.
            sock.set_error(-res);
            s.conn.on_event(true, true, true);
        }
        if read_rest {
            s.conn.on_event(true, false, true);
        }
        self.schedule(slot);
    }

    fn on_send(&mut self, slot: usize, gen: u32, res: i32) {
        let Some(Some(s)) = self.conns.get_mut(slot) else {
            return;
        };
        if s.gen != gen {
            return;
        }
        let sock = s.conn.stream_mut();
        if res >= 0 {
            if sock.sent(res as usize) {
                let blocked = sock.take_write_blocked();
                s.conn.on_event(false, true, false);
                if !blocked && !s.closing {
                    // The usual case: the turn's replies are out and `Conn` holds no more; nothing to run.
                    return;
                }
            }
        } else {
            // EAGAIN/EINTR: nothing was sent; the bytes stay staged and go again (`progress_io`).
            sock.sent(0);
            if res != -libc::EAGAIN && res != -libc::EINTR {
                sock.set_error(-res);
                s.conn.on_event(true, true, true);
            }
        }
        self.schedule(slot);
    }

    /// After a completion: a closing connection moves on toward release, an open one gets a turn.
    fn schedule(&mut self, slot: usize) {
        let Some(Some(s)) = self.conns.get_mut(slot) else {
            return;
        };
        if s.closing {
            self.progress_io(slot);
        } else if !s.queued {
            s.queued = true;
            self.ready.push_back(slot);
        }
    }

    fn run_turn(&mut self, slot: usize, now_secs: u32) {
        let Some(Some(s)) = self.conns.get_mut(slot) else {
            return;
        };
        s.queued = false;
        if s.closing {
            return;
        }
        match s.conn.drive(&self.base.turn(now_secs)) {
            Next::Wait => {
                let sock = s.conn.stream_mut();
                // Waiting with input unread: `Conn` is not reading (its client is not taking output).
                sock.park();
                sock.release_idle();
            }
            Next::Again => {
                s.queued = true;
                self.ready.push_back(slot);
            }
            Next::Park => {
                if !s.parked {
                    s.parked = true;
                    self.parked.push((slot, s.gen));
                }
            }
            Next::Close => s.closing = true,
        }
        self.progress_io(slot);
    }

    /// Queues every parked connection again (a dump thread has more for one of them).
    fn unpark(&mut self) {
        for (slot, gen) in std::mem::take(&mut self.parked) {
            if let Some(s) = self.live_slot(slot, gen) {
                let requeue = s.parked && !s.queued && !s.closing;
                s.parked = false;
                if requeue {
                    s.queued = true;
                    self.ready.push_back(slot);
                }
            }
        }
    }

    /// Queues what the connection's socket needs next: its staged send, a (re-)armed receive or a
    /// cancelled one (input backpressure, closing); releases a closing connection with nothing in flight.
    fn progress_io(&mut self, slot: usize) {
        let Some(Some(s)) = self.conns.get_mut(slot) else {
            return;
        };
        let gen = s.gen;
        let closing = s.closing;
        let not_reading = s.conn.not_reading();
        let sock = s.conn.stream_mut();
        let fd = types::Fd(sock.as_raw_fd());
        let mut entries: [Option<squeue::Entry>; 3] = [None, None, None];
        let to_send = sock.to_send();
        if !to_send.is_empty() {
            entries[0] = Some(
                opcode::Send::new(fd, to_send.as_ptr(), to_send.len() as u32)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
                    .user_data(user_data(KIND_SEND, slot, gen)),
            );
            sock.send_in_flight = true;
            self.send_queued = true;
        }
        let pause = not_reading || sock.unread() >= RECV_PAUSE_BYTES;
        if sock.recv_armed && !sock.recv_cancelling && (closing || pause || sock.peer_gone) {
            entries[1] = Some(
                opcode::AsyncCancel2::new(types::CancelBuilder::user_data(user_data(
                    KIND_RECV, slot, gen,
                )))
                .build()
                .user_data(user_data(KIND_CANCEL, slot, gen)),
            );
            sock.recv_cancelling = true;
        } else if !closing && !pause && sock.wants_recv() {
            entries[1] = Some(
                opcode::RecvMulti::new(fd, BUFFER_GROUP)
                    .build()
                    .user_data(user_data(KIND_RECV, slot, gen)),
            );
            sock.recv_armed = true;
        }
        if closing && sock.hup_armed && !sock.hup_cancelling {
            entries[2] = Some(
                opcode::AsyncCancel2::new(types::CancelBuilder::user_data(user_data(
                    KIND_HUP, slot, gen,
                )))
                .build()
                .user_data(user_data(KIND_CANCEL, slot, gen)),
            );
            sock.hup_cancelling = true;
        } else if !closing && !sock.hup_armed && !sock.peer_gone {
            entries[2] = Some(
                opcode::PollAdd::new(fd, PEER_GONE_EVENTS)
                    .build()
                    .user_data(user_data(KIND_HUP, slot, gen)),
            );
            sock.hup_armed = true;
        }
        let release = closing && !sock.in_flight();
        for e in entries.into_iter().flatten() {
            self.push(e);
        }
        if release {
            self.release(slot);
        }
    }

    /// Registers every connection the listener has handed over and arms its receive.
    fn accept_new(&mut self, now_secs: u32) {
        while let Some(new) = self.base.handed_over() {
            self.open(new, now_secs);
        }
    }

    fn open(&mut self, new: NewConn, now_secs: u32) {
        let NewConn {
            stream,
            peer,
            local,
        } = new;
        let Some(stream) = stream.into_owned_fd() else {
            // A TLS stream: never handed to this path (settings keep -Z on epoll).
            self.base
                .ctx
                .conns
                .curr_connections
                .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            return;
        };
        // io_uring waits for readiness itself; a blocking socket keeps a retried operation from failing
        // with EAGAIN.
        set_blocking(&stream);
        let slot = self.free_slots.pop().unwrap_or_else(|| {
            self.conns.push(None);
            self.gens.push(0);
            self.conns.len() - 1
        });
        let conn = self.base.open_conn(
            slot,
            UringSocket::new(stream, self.bufs.clone()),
            peer,
            local,
            now_secs,
        );
        self.conns[slot] = Some(Slot {
            conn,
            gen: self.gens[slot],
            queued: false,
            closing: false,
            parked: false,
        });
        self.progress_io(slot);
    }

    /// Frees a closed connection's slot (closing its socket); only once nothing is in flight on it.
    fn release(&mut self, slot: usize) {
        if let Some(released) = self.conns[slot].take() {
            self.gens[slot] = self.gens[slot].wrapping_add(1) & 0xff_ffff;
            self.base.closed(slot);
            self.free_slots.push(slot);
            // The socket closes only now, once the registry no longer lists it (`registry.rs`).
            drop(released);
        }
    }

    /// Shutdown: cancels every operation, waits (bounded) for them to end, then closes every connection.
    fn close_all(&mut self) {
        self.push(
            opcode::AsyncCancel2::new(types::CancelBuilder::any())
                .build()
                .user_data(user_data(KIND_CANCEL, 0, 0)),
        );
        let deadline = Instant::now() + SHUTDOWN_DRAIN;
        while self.in_flight() && Instant::now() < deadline {
            self.flush_overflow();
            let ts = types::Timespec::new().nsec(10_000_000);
            let args = types::SubmitArgs::new().timespec(&ts);
            let _ = self.ring.submitter().submit_with_args(1, &args);
            let completions: Vec<(u64, i32, u32)> = self
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags()))
                .collect();
            for (ud, _, flags) in completions {
                let (kind, slot, gen) = split_user_data(ud);
                if let Some(bid) = cqueue::buffer_select(flags) {
                    self.bufs.taken(bid);
                    self.bufs.recycle(bid);
                }
                if let Some(s) = self.live_slot(slot, gen) {
                    let sock = s.conn.stream_mut();
                    match kind {
                        KIND_RECV if !cqueue::more(flags) => sock.recv_armed = false,
                        KIND_SEND => sock.send_in_flight = false,
                        KIND_HUP => sock.hup_armed = false,
                        _ => {}
                    }
                }
            }
        }
        for slot in 0..self.conns.len() {
            self.release(slot);
        }
        // Every buffer a completion handed over went back: to the ring, or with its connection.
        debug_assert_eq!(self.bufs.held(), 0);
        self.base.drop_unopened();
    }

    fn in_flight(&self) -> bool {
        self.conns
            .iter()
            .flatten()
            .any(|s| s.conn.stream().in_flight())
    }
}

/// Clears `O_NONBLOCK` on a socket the ring drives (best effort: a socket left non-blocking only makes
/// an operation retried in the kernel end with `EAGAIN`, which the worker handles).
fn set_blocking(fd: &OwnedFd) {
    // SAFETY: fcntl on a descriptor this worker owns; no memory is passed.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_round_trips() {
        let ud = user_data(KIND_SEND, 123_456, 0x00ab_cdef);
        assert_eq!(split_user_data(ud), (KIND_SEND, 123_456, 0x00ab_cdef));
    }
}
