//! `--io uring`: the load generator's io_uring path. Each worker keeps one ring; every connection has at
//! most one receive (straight into its read buffer) and one send (its write buffer, swapped out whole,
//! so requests issued meanwhile go in the next send) in flight, and the worker submits everything it
//! queued in one `io_uring_enter` per loop turn, which also collects the completions of every connection
//! and waits for the next timer. So the client spends one system call per turn instead of a `read`
//! and a `write` per connection, and measures the server rather than its own kernel time.
//!
//! Invariants: a buffer an operation points at is neither moved, resized nor freed until that operation
//! completes. While a connection is up that holds because its read buffer is touched only between a
//! receive's completion and the next receive's submission, and its send buffer only when no send is in
//! flight. When a connection is abandoned with operations in flight, its socket and both buffers are
//! moved to [`Retired`] and kept until the last of those operations completes (they are cancelled).
//! Completions carry (kind, connection, generation); a connection's generation changes when it is
//! abandoned, so a completion of an old socket never touches the new one.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use io_uring::{opcode, squeue, types, IoUring};

/// Submission queue entries (the completion queue is four times as large).
const RING_ENTRIES: u32 = 1024;
/// `IORING_ENTER_GETEVENTS`.
const ENTER_GETEVENTS: u32 = 1;

pub(crate) const KIND_RECV: u64 = 1;
pub(crate) const KIND_SEND: u64 = 2;
pub(crate) const KIND_POLL: u64 = 3;
pub(crate) const KIND_CANCEL: u64 = 4;

pub(crate) fn user_data(kind: u64, conn: usize, gen: u32) -> u64 {
    (kind << 56) | ((gen as u64 & 0xff_ffff) << 32) | (conn as u64 & 0xffff_ffff)
}

pub(crate) fn split_user_data(ud: u64) -> (u64, usize, u32) {
    (
        ud >> 56,
        (ud & 0xffff_ffff) as usize,
        ((ud >> 32) & 0xff_ffff) as u32,
    )
}

/// A connection's io_uring state.
#[derive(Debug, Default)]
pub(crate) struct RingState {
    /// Generation of the socket the operations below belong to (see the module notes).
    pub gen: u32,
    pub recv_in_flight: bool,
    /// A receive completed with this result; the bytes (if any) are at the end of the read buffer.
    pub received: Option<i32>,
    pub send_in_flight: bool,
    /// The bytes being sent: the connection's write buffer as it was when the send was submitted.
    pub sending: Vec<u8>,
    pub send_pos: usize,
    /// A send failed.
    pub send_error: bool,
    /// Queued for the end-of-turn submission pass.
    pub dirty: bool,
}

/// What an abandoned connection leaves while its cancelled operations finish.
pub(crate) struct Retired {
    pub conn: usize,
    pub gen: u32,
    pub recv_in_flight: bool,
    pub send_in_flight: bool,
    pub _stream: mio::net::TcpStream,
    pub _rbuf: Vec<u8>,
    pub _sending: Vec<u8>,
}

/// A worker's ring.
pub(crate) struct Ring {
    pub ring: IoUring,
}

impl Ring {
    pub fn new() -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(RING_ENTRIES * 4)
            .build(RING_ENTRIES)
            .or_else(|_| {
                IoUring::builder()
                    .setup_cqsize(RING_ENTRIES * 4)
                    .build(RING_ENTRIES)
            })
            .map_err(|e| io::Error::new(e.kind(), format!("--io uring: io_uring_setup: {e}")))?;
        let _ = ring.submitter().register_ring_fd();
        Ok(Ring { ring })
    }

    /// Queues one entry, submitting first when the queue is full.
    ///
    /// # Safety
    /// Every buffer the entry points at must stay valid until its completion (see the module notes).
    pub unsafe fn push(&mut self, entry: squeue::Entry) {
        // SAFETY: the caller keeps every buffer the entry points at valid until its completion.
        while unsafe { self.ring.submission().push(&entry) }.is_err() {
            let _ = self.ring.submit();
        }
    }

    pub fn recv(&mut self, fd: i32, buf: *mut u8, len: usize, conn: usize, gen: u32) {
        let e = opcode::Recv::new(types::Fd(fd), buf, len as u32)
            .build()
            .user_data(user_data(KIND_RECV, conn, gen));
        // SAFETY: the caller's buffer follows the module's invariants.
        unsafe { self.push(e) }
    }

    pub fn send(&mut self, fd: i32, buf: &[u8], conn: usize, gen: u32) {
        let e = opcode::Send::new(types::Fd(fd), buf.as_ptr(), buf.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(user_data(KIND_SEND, conn, gen));
        // SAFETY: as above.
        unsafe { self.push(e) }
    }

    /// Cancels every operation on `fd` (an abandoned connection's).
    pub fn cancel_fd(&mut self, fd: i32) {
        let e = opcode::AsyncCancel2::new(types::CancelBuilder::fd(types::Fd(fd)).all())
            .build()
            .user_data(user_data(KIND_CANCEL, 0, 0));
        // SAFETY: a cancel points at no buffer.
        unsafe { self.push(e) }
    }

    /// A multishot poll on `fd` (the worker's epoll descriptor, where connects in progress are watched).
    pub fn poll_multi(&mut self, fd: i32) {
        let e = opcode::PollAdd::new(types::Fd(fd), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(user_data(KIND_POLL, 0, 0));
        // SAFETY: a poll points at no buffer.
        unsafe { self.push(e) }
    }

    /// Submits what is queued and waits up to `timeout` for a completion (not at all for zero).
    pub fn enter(&mut self, timeout: Duration) -> io::Result<()> {
        if timeout.is_zero() {
            let queued = self.ring.submission().len() as u32;
            // SAFETY: no argument; submit and run completions.
            return unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(queued, 0, ENTER_GETEVENTS, None)
                    .map(drop)
            };
        }
        let ts = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::ETIME) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The completions ready now: (user data, result, flags).
    pub fn drain(&mut self, out: &mut Vec<(u64, i32, u32)>) {
        out.clear();
        out.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags())),
        );
    }
}

/// Puts a socket in blocking mode: io_uring waits for readiness itself, and a blocking socket keeps an
/// operation it retries from failing with `EAGAIN`.
pub(crate) fn set_blocking(socket: &impl AsRawFd) -> io::Result<()> {
    let off: libc::c_int = 0;
    // SAFETY: FIONBIO reads one int from the pointer, which is valid for the call.
    if unsafe { libc::ioctl(socket.as_raw_fd(), libc::FIONBIO, &off) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_data_round_trips() {
        let ud = user_data(KIND_SEND, 70_000, 0x00ab_cdef);
        assert_eq!(split_user_data(ud), (KIND_SEND, 70_000, 0x00ab_cdef));
    }
}
