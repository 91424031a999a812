//! The io_uring network path (`-o io=uring`): workers that batch their system calls, one `io_uring_enter`
//! per event-loop turn for every connection (see `worker.rs`), with multishot receives into a provided
//! buffer ring (`bufring.rs`) and a transport (`socket.rs`) that lets the epoll path's `Conn` run unchanged
//! on top: same protocol session, buffers, `-R` fairness, output backpressure and `stats conns` state.
//! It keeps the epoll path's memory bounds (`tests/hardening.rs` runs on both): received bytes wait in the
//! worker's fixed buffer ring, not in copies per connection, and a connection that stops reading stops
//! receiving (`socket.rs` has the details).
//!
//! What stays shared with the epoll path: the listener thread (`-c`, tenant ports, SIGHUP, shutdown) hands
//! connections over exactly as it does to epoll workers; on this path it accepts with multishot accepts on
//! a ring of its own (`net/listener.rs`, `accept_loop_uring`).
//!
//! [`probe`] checks at start-up that this kernel does what the workers need (ring creation, a provided
//! buffer ring, a multishot receive), so `-o io=auto` can fall back to epoll where io_uring is missing,
//! disabled (`kernel.io_uring_disabled`) or filtered (a container's seccomp profile).

mod bufring;
mod socket;
mod worker;

use std::io::{self, Write};
use std::os::fd::AsRawFd;

use io_uring::{cqueue, opcode, types, IoUring};

pub use socket::UringSocket;
pub(crate) use worker::UringWorker;

/// Submission queue entries per worker ring (the completion queue is four times as large; the kernel
/// keeps overflowing completions rather than dropping them).
const RING_ENTRIES: u32 = 1024;
/// Receive buffers in a worker's provided-buffer ring (a power of two): 256 x 4 KiB, 1 MiB per worker, the
/// most the worker holds of bytes received and not yet read (`socket.rs`). A connection holds a buffer
/// from its receive's completion until `Conn` has read it (the same turn, unless its client is not taking
/// output, when it is copied out); a receive that finds the ring empty ends (`ENOBUFS`) and is re-armed
/// after the turn, when the turn's reads have given buffers back.
const RECV_BUFFERS: u16 = 256;
/// Bytes per receive buffer: a typical request fits one; a large value takes several completions.
const RECV_BUFFER_BYTES: usize = 4 * 1024;
/// The buffer group the receive buffers form.
const BUFFER_GROUP: u16 = 0;

/// A ring for a worker: single issuer with deferred task work where the kernel has them (6.1+: completions
/// are run only when the worker enters, in one batch), else a plain ring.
fn build_ring(entries: u32) -> io::Result<IoUring> {
    let tuned = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(entries * 4)
        .build(entries);
    match tuned {
        Ok(ring) => Ok(ring),
        Err(_) => IoUring::builder().setup_cqsize(entries * 4).build(entries),
    }
}

/// Checks that this kernel can run the io_uring workers: creates a ring, registers a provided-buffer ring,
/// and receives one byte over a socket pair with a multishot receive. The error says what failed.
pub fn probe() -> io::Result<()> {
    let mut ring = build_ring(8).map_err(|e| context(e, "io_uring_setup"))?;
    let bufs = bufring::BufRing::new(&ring, 2, 64, BUFFER_GROUP)
        .map_err(|e| context(e, "registering a provided-buffer ring (Linux 5.19+)"))?;
    let (a, mut b) = std::os::unix::net::UnixStream::pair()?;
    let entry = opcode::RecvMulti::new(types::Fd(a.as_raw_fd()), BUFFER_GROUP)
        .build()
        .user_data(1);
    // SAFETY: the socket and the buffer ring outlive the ring, dropped first below.
    unsafe { ring.submission().push(&entry) }
        .map_err(|_| io::Error::other("io_uring submission queue full"))?;
    b.write_all(b"x")?;
    ring.submit_and_wait(1)
        .map_err(|e| context(e, "io_uring_enter"))?;
    let cqe = ring
        .completion()
        .next()
        .ok_or_else(|| io::Error::other("io_uring: no completion for the probe receive"))?;
    let (res, flags) = (cqe.result(), cqe.flags());
    drop(ring);
    drop(bufs);
    if res < 0 {
        return Err(context(
            io::Error::from_raw_os_error(-res),
            "multishot receive (Linux 6.0+)",
        ));
    }
    if res != 1 || cqueue::buffer_select(flags).is_none() || !cqueue::more(flags) {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "io_uring: this kernel has no multishot receive with provided buffers (Linux 6.0+)",
        ));
    }
    Ok(())
}

fn context(e: io::Error, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("io_uring: {what}: {e}"))
}
