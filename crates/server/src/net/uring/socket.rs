//! The io_uring path's transport under a [`crate::net::conn::Conn`]: a socket whose reads are served from
//! the provided buffers the worker's multishot receive filled, and whose writes are staged for the send
//! the worker submits at the end of the event-loop turn.
//!
//! It keeps the readiness contract `Conn` relies on (see `net/conn.rs`): `read` returns `WouldBlock` when
//! nothing received is left (and a short read only once everything received was read), `write` returns
//! `WouldBlock` while a send is in flight (or the staged bytes reach [`MAX_SEND_BYTES`]), and the worker
//! calls `Conn::on_event` when a receive or a send completes.
//!
//! Memory: the input side costs what the epoll path costs, plus at most a share of the worker's fixed
//! buffer ring. A receive completion's buffer is not copied: the socket keeps its id and `Conn` reads
//! straight out of the ring (one copy, as `read(2)` makes on the epoll path), giving the buffer back as
//! soon as it is read. So bytes received and not yet read live in the ring, whose size is fixed per
//! worker, and in no allocation that grows with the number of connections or how fast they send. What
//! keeps one connection from holding too much of the ring (and the kernel from taking bytes the epoll
//! path would have left in the socket buffer):
//! - past [`RECV_PAUSE_BYTES`] received and unread (what the epoll path reads ahead of the session,
//!   `conn::LINE_READ_BYTES`), or while `Conn` reads nothing because its client is not taking output,
//!   the worker cancels the multishot receive, and re-arms it once `Conn` reads again, so TCP flow
//!   control pushes back on the client as it does on the epoll path;
//! - a connection that stops reading while it holds buffers (its client not taking output) has them
//!   copied out ([`UringSocket::park`]) into a buffer of its own, at most what it held, so no client can
//!   pin the ring.
//!
//! The output side: `Conn`'s output bound holds unchanged (replies the socket has not taken stay in
//! `Conn`'s write buffer, whose size stops reading past the high-water mark); on top of it the socket
//! stages at most [`MAX_SEND_BYTES`] for the send in flight, released when the connection goes idle.
//!
//! The peer's end: besides the multishot receive, the worker keeps a one-shot poll for `POLLRDHUP`,
//! `POLLHUP` and `POLLERR` on every open connection. A multishot receive can miss a reset or a shutdown
//! that races with its re-arming in the kernel (seen on 6.18 when a client resets a connection in the
//! middle of a large value: the receive stayed armed for good, the connection in `conn_nread` with its
//! descriptor held). When that poll fires the socket is [`UringSocket::peer_gone`]: the worker cancels
//! the receive, and once it has ended (no completion can then be outstanding, so order is kept) `read`
//! takes what is left straight from the socket with non-blocking `recv(2)` calls, down to the end of
//! stream or the error, which closes the connection as on the epoll path.
//!
//! Invariants: `send_buf` is neither moved nor resized while `send_in_flight` (the kernel reads it).
//! Every buffer id in `held` is owned by this socket: read from, then recycled exactly once (by `read`,
//! `park` or on drop).

use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::rc::Rc;

use super::bufring::BufRing;
use crate::net::conn::{LINE_READ_BYTES, WRITE_BUFFER_KEEP_BYTES};

/// Staged output per send: larger replies go out in several sends (the rest waits in `Conn`'s buffer).
/// The session's output bound: staging adds no more than `Conn` may itself hold unsent.
pub const MAX_SEND_BYTES: usize = crate::session::OUTPUT_BOUND_BYTES;
/// Received-but-unread bytes at which the multishot receive is cancelled until they are read: what the
/// epoll path reads from the socket before it runs the session.
pub const RECV_PAUSE_BYTES: usize = LINE_READ_BYTES;

/// One connection's socket on the io_uring path; owned by its `Conn`, driven by the worker.
pub struct UringSocket {
    /// Owns the file descriptor, a TCP or UNIX stream socket (closed when the connection is dropped,
    /// after its operations ended).
    stream: OwnedFd,
    /// The worker's receive buffers, where the ids in `held` point.
    ring: Rc<BufRing>,
    /// Received buffers not read yet, oldest first: (buffer id, bytes in it).
    held: VecDeque<(u16, u32)>,
    /// Bytes of the front buffer in `held` already read.
    front_pos: usize,
    /// Unread bytes in `held`.
    held_bytes: usize,
    /// Bytes copied out of the ring by `park`, read before `held`.
    spill: Vec<u8>,
    spill_pos: usize,
    eof: bool,
    error: Option<i32>,
    send_buf: Vec<u8>,
    send_pos: usize,
    pub(super) send_in_flight: bool,
    pub(super) recv_armed: bool,
    pub(super) recv_cancelling: bool,
    /// The peer-gone poll is in flight.
    pub(super) hup_armed: bool,
    pub(super) hup_cancelling: bool,
    /// The peer-gone poll fired: the peer shut down or reset. No receive is armed again; once the one in
    /// flight has ended, `read` reads the socket directly.
    pub(super) peer_gone: bool,
    /// A `write` returned `WouldBlock` since the last send completion: `Conn` holds output and needs a
    /// turn when the send completes (otherwise a completed send needs no turn at all).
    write_blocked: bool,
}

impl UringSocket {
    pub(super) fn new(stream: OwnedFd, ring: Rc<BufRing>) -> UringSocket {
        UringSocket {
            stream,
            ring,
            held: VecDeque::new(),
            front_pos: 0,
            held_bytes: 0,
            spill: Vec::new(),
            spill_pos: 0,
            eof: false,
            error: None,
            send_buf: Vec::new(),
            send_pos: 0,
            send_in_flight: false,
            recv_armed: false,
            recv_cancelling: false,
            hup_armed: false,
            hup_cancelling: false,
            peer_gone: false,
            write_blocked: false,
        }
    }

    /// Bytes received that `Conn` has not read yet.
    pub(super) fn unread(&self) -> usize {
        self.spill.len() - self.spill_pos + self.held_bytes
    }

    /// Receive buffers this socket holds.
    #[cfg(test)]
    fn held_buffers(&self) -> usize {
        self.held.len()
    }

    /// A receive completion filled `len` bytes of ring buffer `bid`, which this socket now owns.
    pub(super) fn received(&mut self, bid: u16, len: usize) {
        let len = len.min(self.ring.buf_bytes());
        if len == 0 {
            self.ring.recycle(bid);
            return;
        }
        self.held.push_back((bid, len as u32));
        self.held_bytes += len;
    }

    /// The peer shut down its side (a receive completed with 0).
    pub(super) fn set_eof(&mut self) {
        self.eof = true;
    }

    /// A receive or send failed with `-errno`.
    pub(super) fn set_error(&mut self, errno: i32) {
        self.error.get_or_insert(errno);
    }

    /// The receive should be (re-)armed: not at end of stream, no error, the peer still there, backlog
    /// under the bound.
    pub(super) fn wants_recv(&self) -> bool {
        !self.recv_armed
            && !self.eof
            && !self.peer_gone
            && self.error.is_none()
            && self.unread() < RECV_PAUSE_BYTES
    }

    /// Whether anything of the worker's is in flight on this socket (it may be closed only when not).
    pub(super) fn in_flight(&self) -> bool {
        self.recv_armed || self.send_in_flight || self.hup_armed
    }

    /// After the peer went: reads the socket itself, without waiting (see the module notes).
    fn read_directly(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes; the descriptor is this socket's own.
        let n = unsafe {
            libc::recv(
                self.stream.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        match n {
            0 => {
                self.eof = true;
                Ok(0)
            }
            n if n > 0 => Ok(n as usize),
            _ => {
                let e = io::Error::last_os_error();
                if !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) {
                    self.error = e.raw_os_error();
                }
                Err(e)
            }
        }
    }

    /// The staged bytes to send next (empty when none, while a send is in flight, or once the socket
    /// has failed: a send on a reset connection fails again forever, so nothing is retried after an
    /// error and a closing connection is not kept alive by its unsendable output).
    pub(super) fn to_send(&self) -> &[u8] {
        if self.send_in_flight || self.error.is_some() {
            &[]
        } else {
            &self.send_buf[self.send_pos..]
        }
    }

    /// Whether a `write` was refused since the last call (and forgets it).
    pub(super) fn take_write_blocked(&mut self) -> bool {
        std::mem::take(&mut self.write_blocked)
    }

    /// A send completed having sent `n` bytes of [`UringSocket::to_send`]. Returns true when all staged
    /// bytes are out.
    pub(super) fn sent(&mut self, n: usize) -> bool {
        self.send_in_flight = false;
        self.send_pos += n;
        if self.send_pos >= self.send_buf.len() {
            self.send_pos = 0;
            self.send_buf.clear();
            true
        } else {
            false
        }
    }

    /// `Conn` stopped reading (it waits for its client to take output, or closes): the buffers it has not
    /// read are copied into the socket's own spill buffer and given back to the ring, so a client that
    /// does not read cannot pin the worker's receive buffers. Costs at most what the socket held.
    pub(super) fn park(&mut self) {
        if self.held.is_empty() {
            return;
        }
        self.spill.drain(..self.spill_pos);
        self.spill_pos = 0;
        self.spill.reserve_exact(self.held_bytes);
        let mut pos = std::mem::take(&mut self.front_pos);
        while let Some((bid, len)) = self.held.pop_front() {
            self.spill
                .extend_from_slice(&self.ring.data(bid, len as usize)[pos..]);
            self.ring.recycle(bid);
            pos = 0;
        }
        self.held_bytes = 0;
    }

    /// An idle connection (`Conn` waits for the client) keeps no input or staged output buffers beyond
    /// small ones: the spill buffer goes once read, a staged-output buffer a large reply grew goes once
    /// sent.
    pub(super) fn release_idle(&mut self) {
        if self.spill_pos == self.spill.len() && self.spill.capacity() > 0 {
            self.spill = Vec::new();
            self.spill_pos = 0;
        }
        if !self.send_in_flight
            && self.send_buf.is_empty()
            && self.send_buf.capacity() > WRITE_BUFFER_KEEP_BYTES
        {
            self.send_buf = Vec::new();
        }
        if self.held.is_empty() && self.held.capacity() > 16 {
            self.held = VecDeque::new();
        }
    }
}

impl Drop for UringSocket {
    fn drop(&mut self) {
        // Dropped only once no receive is in flight (see the worker's module notes): the ring gets back
        // every buffer this socket still holds.
        for (bid, _) in self.held.drain(..) {
            self.ring.recycle(bid);
        }
    }
}

impl AsRawFd for UringSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }
}

impl Read for UringSocket {
    /// Copies as much as fits of what was received: a read shorter than `buf` means nothing is left.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        if self.spill_pos < self.spill.len() {
            let k = (self.spill.len() - self.spill_pos).min(buf.len());
            buf[..k].copy_from_slice(&self.spill[self.spill_pos..self.spill_pos + k]);
            self.spill_pos += k;
            n = k;
            if self.spill_pos == self.spill.len() {
                self.spill.clear();
                self.spill_pos = 0;
            }
        }
        while n < buf.len() {
            let Some(&(bid, len)) = self.held.front() else {
                break;
            };
            let data = &self.ring.data(bid, len as usize)[self.front_pos..];
            let k = data.len().min(buf.len() - n);
            buf[n..n + k].copy_from_slice(&data[..k]);
            n += k;
            self.held_bytes -= k;
            self.front_pos += k;
            if self.front_pos == len as usize {
                self.held.pop_front();
                self.front_pos = 0;
                self.ring.recycle(bid);
            }
        }
        if n > 0 {
            return Ok(n);
        }
        if let Some(errno) = self.error {
            return Err(io::Error::from_raw_os_error(errno));
        }
        if self.eof {
            return Ok(0);
        }
        if self.peer_gone && !self.recv_armed && !buf.is_empty() {
            return self.read_directly(buf);
        }
        Err(ErrorKind::WouldBlock.into())
    }
}

impl crate::net::tls::Transport for UringSocket {}

impl Write for UringSocket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(errno) = self.error {
            return Err(io::Error::from_raw_os_error(errno));
        }
        let room = MAX_SEND_BYTES.saturating_sub(self.send_buf.len());
        if self.send_in_flight || room == 0 {
            self.write_blocked = true;
            return Err(ErrorKind::WouldBlock.into());
        }
        let n = room.min(buf.len());
        self.send_buf.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, squeue, types, IoUring};
    use std::net::TcpStream;

    /// Tiny buffers, so that a few bytes span several of them.
    const BUF: usize = 16;

    struct Setup {
        ring: IoUring,
        bufs: Rc<BufRing>,
        sock: UringSocket,
        client: TcpStream,
    }

    fn setup() -> Setup {
        let ring = IoUring::new(8).expect("io_uring (this test needs it)");
        let bufs = Rc::new(BufRing::new(&ring, 8, BUF, 0).expect("a provided-buffer ring"));
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let sock = UringSocket::new(s.into(), bufs.clone());
        Setup {
            ring,
            bufs,
            sock,
            client,
        }
    }

    /// The client sends `data`; the socket receives it into ring buffers, one completion per buffer,
    /// as the worker hands them over.
    fn receive(t: &mut Setup, data: &[u8]) {
        t.client.write_all(data).unwrap();
        let mut got = 0;
        while got < data.len() {
            // The worker publishes recycled buffers before every enter.
            t.bufs.commit();
            let entry = opcode::Recv::new(
                types::Fd(t.sock.as_raw_fd()),
                std::ptr::null_mut(),
                BUF as u32,
            )
            .buf_group(0)
            .build()
            .flags(squeue::Flags::BUFFER_SELECT);
            // SAFETY: the socket and the buffer ring outlive the operation (waited for below).
            unsafe { t.ring.submission().push(&entry) }.unwrap();
            t.ring.submit_and_wait(1).unwrap();
            let cqe = t.ring.completion().next().unwrap();
            assert!(cqe.result() > 0, "recv: {}", cqe.result());
            let bid = io_uring::cqueue::buffer_select(cqe.flags()).unwrap();
            t.bufs.taken(bid);
            t.sock.received(bid, cqe.result() as usize);
            got += cqe.result() as usize;
        }
    }

    #[test]
    fn reads_straight_out_of_ring_buffers_and_gives_each_back_once_read() {
        let mut t = setup();
        let mut buf = [0u8; 20];
        assert_eq!(
            t.sock.read(&mut buf).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        let data: Vec<u8> = (0..40u8).collect();
        receive(&mut t, &data);
        assert_eq!(t.sock.held_buffers(), 3);
        assert_eq!(t.bufs.held(), 3);
        assert_eq!(t.sock.unread(), 40);
        // A read as long as its buffer spans ring buffers; the first one is back in the ring.
        assert_eq!(t.sock.read(&mut buf).unwrap(), 20);
        assert_eq!(&buf[..], &data[..20]);
        assert_eq!(t.bufs.held(), 2);
        // A short read means everything was read: every buffer is back.
        assert_eq!(t.sock.read(&mut buf[..]).unwrap(), 20);
        assert_eq!(&buf[..], &data[20..]);
        assert_eq!((t.sock.unread(), t.bufs.held()), (0, 0));
        let mut big = [0u8; 64];
        receive(&mut t, b"tail");
        assert_eq!(t.sock.read(&mut big).unwrap(), 4);
        assert_eq!(&big[..4], b"tail");
        t.sock.set_eof();
        assert_eq!(t.sock.read(&mut big).unwrap(), 0);
        assert!(!t.sock.wants_recv());
    }

    #[test]
    fn parking_copies_held_input_out_of_the_ring_in_order() {
        let mut t = setup();
        let data: Vec<u8> = (100..150u8).collect();
        receive(&mut t, &data);
        let mut buf = [0u8; 5];
        assert_eq!(t.sock.read(&mut buf).unwrap(), 5);
        t.sock.park();
        assert_eq!(t.bufs.held(), 0, "parking gives every buffer back");
        assert_eq!(t.sock.unread(), 45);
        // What arrives after parking is read after what was parked.
        receive(&mut t, b"after");
        assert_eq!(t.bufs.held(), 1);
        let mut rest = vec![0u8; 100];
        assert_eq!(t.sock.read(&mut rest).unwrap(), 50);
        assert_eq!(&rest[..45], &data[5..]);
        assert_eq!(&rest[45..50], b"after");
        assert_eq!((t.sock.unread(), t.bufs.held()), (0, 0));
        t.sock.release_idle();
        assert_eq!(t.sock.spill.capacity(), 0);
    }

    #[test]
    fn a_dropped_socket_gives_its_buffers_back() {
        let mut t = setup();
        receive(&mut t, &[7u8; 40]);
        assert_eq!(t.bufs.held(), 3);
        let Setup { bufs, sock, .. } = t;
        drop(sock);
        assert_eq!(bufs.held(), 0);
    }

    #[test]
    fn writes_stage_until_a_send_is_in_flight() {
        let mut t = setup();
        let s = &mut t.sock;
        assert_eq!(s.write(b"abc").unwrap(), 3);
        assert_eq!(s.write(b"de").unwrap(), 2);
        assert_eq!(s.to_send(), b"abcde");
        s.send_in_flight = true;
        assert_eq!(s.write(b"f").unwrap_err().kind(), ErrorKind::WouldBlock);
        assert!(s.to_send().is_empty());
        assert!(!s.sent(2));
        assert_eq!(s.to_send(), b"cde");
        assert!(s.sent(3));
        assert!(s.to_send().is_empty());
    }

    #[test]
    fn staging_is_bounded_and_receive_pauses_on_backlog() {
        let mut t = setup();
        let big = vec![7u8; MAX_SEND_BYTES + 10];
        assert_eq!(t.sock.write(&big).unwrap(), MAX_SEND_BYTES);
        assert_eq!(
            t.sock.write(b"x").unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        assert!(t.sock.take_write_blocked());
        assert!(t.sock.sent(MAX_SEND_BYTES));
        assert!(t.sock.wants_recv());
        // A backlog at the bound (parked, so the tiny ring is not what limits it) stops receiving.
        let chunk = vec![1u8; 8 * BUF];
        while t.sock.unread() < RECV_PAUSE_BYTES {
            receive(&mut t, &chunk);
            t.sock.park();
        }
        assert!(!t.sock.wants_recv());
        t.sock.set_error(libc::ECONNRESET);
        let mut buf = vec![0u8; 2 * RECV_PAUSE_BYTES];
        let unread = t.sock.unread();
        assert_eq!(t.sock.read(&mut buf).unwrap(), unread);
        assert_eq!(
            t.sock.read(&mut buf).unwrap_err().raw_os_error(),
            Some(libc::ECONNRESET)
        );
    }
}
