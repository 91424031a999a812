//! The io_uring path's transport under a [`crate::net::conn::Conn`]: a socket whose reads are served from
//! bytes the worker's multishot receive already delivered, and whose writes are staged for the send the
//! worker submits at the end of the event-loop turn.
//!
//! It keeps the readiness contract `Conn` relies on (see `net/conn.rs`): `read` returns `WouldBlock` when
//! nothing received is left, `write` returns `WouldBlock` while a send is in flight (or the staged bytes
//! reach [`MAX_SEND_BYTES`]), and the worker calls `Conn::on_event` when a receive or a send completes.
//! So `Conn`'s output bound holds unchanged: replies the socket has not taken stay in `Conn`'s write buffer,
//! whose size stops reading past the high-water mark. Input is bounded too: past [`RECV_PAUSE_BYTES`]
//! received and unread, the worker cancels the multishot receive and re-arms it once `Conn` has read the
//! backlog, so TCP flow control pushes back on the client.
//!
//! Invariant: `send_buf` is neither moved nor resized while `send_in_flight` (the kernel reads it).

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};

/// Staged output per send: larger replies go out in several sends (the rest waits in `Conn`'s buffer).
pub const MAX_SEND_BYTES: usize = 256 * 1024;
/// Received-but-unread bytes above which the multishot receive is cancelled until they are read.
pub const RECV_PAUSE_BYTES: usize = 64 * 1024;

/// One connection's socket on the io_uring path; owned by its `Conn`, driven by the worker.
pub struct UringSocket {
    /// Owns the file descriptor (closed when the connection is dropped, after its operations ended).
    stream: TcpStream,
    in_buf: Vec<u8>,
    in_pos: usize,
    eof: bool,
    error: Option<i32>,
    send_buf: Vec<u8>,
    send_pos: usize,
    pub(super) send_in_flight: bool,
    pub(super) recv_armed: bool,
    pub(super) recv_cancelling: bool,
    /// A `write` returned `WouldBlock` since the last send completion: `Conn` holds output and needs a
    /// turn when the send completes (otherwise a completed send needs no turn at all).
    write_blocked: bool,
}

impl UringSocket {
    pub(super) fn new(stream: TcpStream) -> UringSocket {
        UringSocket {
            stream,
            in_buf: Vec::new(),
            in_pos: 0,
            eof: false,
            error: None,
            send_buf: Vec::new(),
            send_pos: 0,
            send_in_flight: false,
            recv_armed: false,
            recv_cancelling: false,
            write_blocked: false,
        }
    }

    /// Bytes received that `Conn` has not read yet.
    pub(super) fn unread(&self) -> usize {
        self.in_buf.len() - self.in_pos
    }

    /// A receive completion's bytes.
    pub(super) fn received(&mut self, data: &[u8]) {
        if self.in_pos == self.in_buf.len() {
            self.in_buf.clear();
            self.in_pos = 0;
        }
        self.in_buf.extend_from_slice(data);
    }

    /// The peer shut down its side (a receive completed with 0).
    pub(super) fn set_eof(&mut self) {
        self.eof = true;
    }

    /// A receive or send failed with `-errno`.
    pub(super) fn set_error(&mut self, errno: i32) {
        self.error.get_or_insert(errno);
    }

    /// The receive should be (re-)armed: not at end of stream, no error, backlog under the bound.
    pub(super) fn wants_recv(&self) -> bool {
        !self.recv_armed && !self.eof && self.error.is_none() && self.unread() < RECV_PAUSE_BYTES
    }

    /// The staged bytes to send next (empty when none, or while a send is in flight).
    pub(super) fn to_send(&self) -> &[u8] {
        if self.send_in_flight {
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
            if self.send_buf.capacity() > 4 * crate::net::conn::WRITE_BUFFER_KEEP_BYTES {
                self.send_buf = Vec::new();
            }
            true
        } else {
            false
        }
    }

    /// The received but unread bytes' buffer is released once empty (an idle connection keeps none).
    pub(super) fn release_idle(&mut self) {
        if self.unread() == 0
            && self.in_buf.capacity() > crate::net::conn::INITIAL_READ_BUFFER_BYTES
        {
            self.in_buf = Vec::new();
            self.in_pos = 0;
        }
    }
}

impl AsRawFd for UringSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }
}

impl Read for UringSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let unread = self.unread();
        if unread > 0 {
            let n = unread.min(buf.len());
            buf[..n].copy_from_slice(&self.in_buf[self.in_pos..self.in_pos + n]);
            self.in_pos += n;
            if self.in_pos == self.in_buf.len() {
                self.in_buf.clear();
                self.in_pos = 0;
            }
            return Ok(n);
        }
        if let Some(errno) = self.error {
            return Err(io::Error::from_raw_os_error(errno));
        }
        if self.eof {
            return Ok(0);
        }
        Err(ErrorKind::WouldBlock.into())
    }
}

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

    fn socket() -> (UringSocket, TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (UringSocket::new(s), c)
    }

    #[test]
    fn reads_what_was_received_then_would_block_then_eof() {
        let (mut s, _c) = socket();
        let mut buf = [0u8; 4];
        assert_eq!(s.read(&mut buf).unwrap_err().kind(), ErrorKind::WouldBlock);
        s.received(b"hello");
        assert_eq!(s.read(&mut buf).unwrap(), 4);
        assert_eq!(&buf, b"hell");
        assert_eq!(s.read(&mut buf).unwrap(), 1);
        assert_eq!(s.unread(), 0);
        s.set_eof();
        assert_eq!(s.read(&mut buf).unwrap(), 0);
        assert!(!s.wants_recv());
    }

    #[test]
    fn writes_stage_until_a_send_is_in_flight() {
        let (mut s, _c) = socket();
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
        let (mut s, _c) = socket();
        let big = vec![7u8; MAX_SEND_BYTES + 10];
        assert_eq!(s.write(&big).unwrap(), MAX_SEND_BYTES);
        assert_eq!(s.write(b"x").unwrap_err().kind(), ErrorKind::WouldBlock);
        assert!(s.wants_recv());
        s.received(&vec![1u8; RECV_PAUSE_BYTES]);
        assert!(!s.wants_recv());
        s.set_error(libc::ECONNRESET);
        let mut buf = vec![0u8; RECV_PAUSE_BYTES];
        assert_eq!(s.read(&mut buf).unwrap(), RECV_PAUSE_BYTES);
        assert_eq!(
            s.read(&mut buf).unwrap_err().raw_os_error(),
            Some(libc::ECONNRESET)
        );
    }
}
