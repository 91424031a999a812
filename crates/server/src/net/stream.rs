//! The stream transports a client connection runs over: TCP (`-p`, `-l`), TLS over TCP (`-Z`, see
//! `tls.rs`) or a UNIX stream socket (`-s`).
//!
//! [`ClientStream`] is what the listener hands a worker and what `Conn` reads and writes on the epoll
//! path; the io_uring path takes its descriptor ([`ClientStream::into_owned_fd`]) and works on that, which
//! is the same for both kinds. Everything above the socket (sessions, buffers, `-R` turns, backpressure,
//! `stats conns`) is the same for all; only the address forms differ (`registry::Endpoint`). A TLS
//! stream is served on the epoll path only (it has no descriptor to hand to io_uring alone).
//!
//! Invariant: the stream is non-blocking from accept to close (the io_uring worker makes its descriptor
//! blocking once it owns it; see `uring/worker.rs`).

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use mio::event::Source;

use crate::net::tls::{TlsStream, Transport};
use mio::net::{TcpStream, UnixStream};
use mio::{Interest, Registry, Token};

/// An accepted client socket of either stream transport.
#[derive(Debug)]
pub enum ClientStream {
    /// A TCP connection.
    Tcp(TcpStream),
    /// A UNIX stream socket connection (`-s`).
    Unix(UnixStream),
    /// A TCP connection speaking TLS (`-Z`).
    Tls(Box<TlsStream>),
}

impl ClientStream {
    /// The descriptor, owned: the io_uring path drives the socket itself. `None` for a TLS stream,
    /// whose session is not in the descriptor (settings keep `-Z` off io_uring).
    pub fn into_owned_fd(self) -> Option<OwnedFd> {
        match self {
            ClientStream::Tcp(s) => Some(OwnedFd::from(std::net::TcpStream::from(s))),
            ClientStream::Unix(s) => Some(OwnedFd::from(std::os::unix::net::UnixStream::from(s))),
            ClientStream::Tls(_) => None,
        }
    }
}

impl Read for ClientStream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientStream::Tcp(s) => s.read(buf),
            ClientStream::Unix(s) => s.read(buf),
            ClientStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for ClientStream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            ClientStream::Tcp(s) => s.write(buf),
            ClientStream::Unix(s) => s.write(buf),
            ClientStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            ClientStream::Tcp(s) => s.flush(),
            ClientStream::Unix(s) => s.flush(),
            ClientStream::Tls(s) => s.flush(),
        }
    }
}

impl AsRawFd for ClientStream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            ClientStream::Tcp(s) => s.as_raw_fd(),
            ClientStream::Unix(s) => s.as_raw_fd(),
            ClientStream::Tls(s) => s.tcp().as_raw_fd(),
        }
    }
}

impl Source for ClientStream {
    fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        match self {
            ClientStream::Tcp(s) => s.register(registry, token, interests),
            ClientStream::Unix(s) => s.register(registry, token, interests),
            ClientStream::Tls(s) => s.tcp_mut().register(registry, token, interests),
        }
    }

    fn reregister(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        match self {
            ClientStream::Tcp(s) => s.reregister(registry, token, interests),
            ClientStream::Unix(s) => s.reregister(registry, token, interests),
            ClientStream::Tls(s) => s.tcp_mut().reregister(registry, token, interests),
        }
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        match self {
            ClientStream::Tcp(s) => s.deregister(registry),
            ClientStream::Unix(s) => s.deregister(registry),
            ClientStream::Tls(s) => s.tcp_mut().deregister(registry),
        }
    }
}

impl Transport for ClientStream {
    fn has_unsent(&self) -> bool {
        match self {
            ClientStream::Tls(s) => s.has_unsent(),
            _ => false,
        }
    }

    fn short_read_drains(&self) -> bool {
        match self {
            ClientStream::Tls(s) => s.short_read_drains(),
            _ => true,
        }
    }
}
