//! UDP (`-U PORT`): memcached's datagram protocol, served by one thread of its own.
//!
//! Sockets: one per `-l` interface (all IPv4 ones without `-l`), on `-U`'s port, or on the port a
//! `-l host:port` names, as memcached binds UDP wherever it binds TCP; `-U -1` gives the first an
//! ephemeral port and the others the same one. No `SO_REUSEADDR` (on UDP it would let a second server
//! bind the same port unnoticed); the send buffer is raised toward [`SEND_BUFFER_BYTES`], as memcached
//! raises it, so that a large reply's datagrams rarely wait for room.
//!
//! Design: one thread (`mrcached-udp`, placed as a service thread) serves every UDP socket, whichever
//! network I/O path (`-o io=`) the workers run: UDP carries small gets and sets for clients that
//! tolerate loss, and one thread with blocking-free sockets on a mio poll is the simplest correct way to
//! serve it; the workers' connection machinery (streams, buffers across reads) has nothing to offer a
//! datagram. Each socket has one protocol session (`Session::serve_datagrams`), reset at the start of
//! each datagram, so no state carries from one client's datagram to the next; its counters are the
//! context's `udp_stats`, which `stats` adds to the workers'.
//!
//! A datagram: the frame header is checked (`frame.rs`), then the requests in it run one at a time
//! (`-R` does not apply: a datagram is at most 64 KiB of requests), and each reply is cut into
//! response objects and datagrams as memcached cuts them (`frame.rs`) and sent at once.
//!
//! Bounds: the thread holds one receive buffer ([`frame::MAX_REQUEST_BYTES`]), one reply buffer, which
//! the session keeps under its output bound plus one value (a large retrieval is sent and the buffer
//! emptied between keys), and one datagram. Nothing queues: when the socket's send buffer is full the
//! thread waits for room (or shutdown) before it sends more or reads the next datagram, so a flood of
//! requests backs up in the kernel's receive queue, where the kernel drops what does not fit. A socket
//! gets at most [`MAX_DATAGRAMS_PER_TURN`] datagrams before the others are served.
//!
//! `stats conns` lists each socket as memcached lists its UDP connections (`registry::ListenerInfo`);
//! `watch` in a datagram does nothing; authentication is refused with `-U` at start-up, as memcached
//! refuses it.

pub mod frame;

use std::io::{self, ErrorKind};
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};

use crate::context::{ServerContext, ThreadStats};
use crate::net::registry::{ConnInfo, ConnState, Endpoint, ListenerInfo};
use crate::net::ProtocolSession;
use crate::settings::{Settings, EPHEMERAL_UDP_PORT};

/// memcached's `MAX_SENDBUF_SIZE`: the send buffer asked for (the kernel caps it at `wmem_max`).
pub const SEND_BUFFER_BYTES: usize = 256 * 1024 * 1024;
/// Datagrams one socket is served before the others get a turn.
pub const MAX_DATAGRAMS_PER_TURN: usize = 64;

const WAKER_TOKEN: Token = Token(usize::MAX);

/// Binds the `-U` sockets (none when `-U 0`, or with `-s`); see the module notes. Errors name `-U` and
/// the address.
pub fn bind(settings: &Settings) -> io::Result<Vec<std::net::UdpSocket>> {
    if settings.udp_port == 0 || settings.unix_socket.is_some() {
        return Ok(Vec::new());
    }
    let port = if settings.udp_port == EPHEMERAL_UDP_PORT {
        0
    } else {
        settings.udp_port as u16
    };
    super::bind_each(settings, port, |addr| {
        let socket = bind_one(addr).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("-U/--udp-port: failed to listen on UDP {addr}: {e}"),
            )
        })?;
        let port = socket.local_addr()?.port();
        Ok((socket, port))
    })
}

fn bind_one(addr: SocketAddr) -> io::Result<std::net::UdpSocket> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, None)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    // Best effort: the kernel caps it, and a smaller buffer only makes large replies wait.
    let _ = socket.set_send_buffer_size(SEND_BUFFER_BYTES);
    socket.bind(&addr.into())?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// One UDP socket and its session.
struct Port<S> {
    socket: UdpSocket,
    session: S,
    info: Arc<ConnInfo>,
    /// Datagrams may be waiting (readiness is edge-triggered: true until a receive would block).
    readable: bool,
}

/// The UDP thread's state; [`UdpServer::run`] is the thread body.
pub struct UdpServer<S> {
    ctx: Arc<ServerContext>,
    stats: Arc<ThreadStats>,
    poll: Poll,
    /// Kept alive here: if only the listener held it, the listener's exit would close the eventfd and
    /// drop the wake-up before this thread collects it.
    _waker: Arc<Waker>,
    ports: Vec<Port<S>>,
    /// The datagram received.
    input: Vec<u8>,
    /// One reply (or part of a retrieval's), cut into datagrams once complete.
    output: Vec<u8>,
    /// One datagram being sent.
    frame: Vec<u8>,
}

impl<S: ProtocolSession> UdpServer<S> {
    /// Takes the bound sockets, starts a session for each (`new_session`, as for a connection), and
    /// returns the server, the waker that stops it, and what `stats conns` lists of the sockets.
    pub(crate) fn new<F>(
        ctx: Arc<ServerContext>,
        sockets: Vec<std::net::UdpSocket>,
        new_session: F,
    ) -> io::Result<(UdpServer<S>, Arc<Waker>, Vec<ListenerInfo>)>
    where
        F: Fn(Arc<ServerContext>, Arc<ThreadStats>, &Arc<ConnInfo>) -> S,
    {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER_TOKEN)?);
        let stats = ctx.udp_stats.clone();
        let now = ctx.clock().now;
        let mut ports = Vec::with_capacity(sockets.len());
        let mut infos = Vec::with_capacity(sockets.len());
        for (i, socket) in sockets.into_iter().enumerate() {
            let local = Endpoint::Udp(socket.local_addr()?);
            let mut socket = UdpSocket::from_std(socket);
            poll.registry().register(
                &mut socket,
                Token(i),
                Interest::READABLE | Interest::WRITABLE,
            )?;
            let info = Arc::new(ConnInfo::new(
                socket.as_raw_fd(),
                local.clone(),
                local.clone(),
                now,
            ));
            let mut session = new_session(ctx.clone(), stats.clone(), &info);
            session.serve_datagrams();
            infos.push(ListenerInfo {
                fd: socket.as_raw_fd(),
                addr: local,
                udp: Some(info.clone()),
            });
            ports.push(Port {
                socket,
                session,
                info,
                readable: true,
            });
        }
        let server = UdpServer {
            ctx,
            stats,
            poll,
            _waker: waker.clone(),
            ports,
            input: vec![0; frame::MAX_REQUEST_BYTES],
            output: Vec::new(),
            frame: Vec::with_capacity(frame::MAX_DATAGRAM_BYTES),
        };
        Ok((server, waker, infos))
    }

    /// Serves datagrams until the server shuts down.
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(64);
        loop {
            let busy = self.ports.iter().any(|p| p.readable);
            let timeout = busy.then_some(std::time::Duration::ZERO);
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if self.ctx.is_shutting_down() {
                return Ok(());
            }
            self.note_readable(&events);
            for i in 0..self.ports.len() {
                if self.ports[i].readable && !self.serve_port(i) {
                    return Ok(());
                }
            }
        }
    }

    fn note_readable(&mut self, events: &Events) {
        for event in events.iter() {
            if let Some(port) = self.ports.get_mut(event.token().0) {
                port.readable |= event.is_readable();
            }
        }
    }

    /// Serves up to [`MAX_DATAGRAMS_PER_TURN`] datagrams of socket `i`. Returns false at shutdown.
    fn serve_port(&mut self, i: usize) -> bool {
        for _ in 0..MAX_DATAGRAMS_PER_TURN {
            let received = self.ports[i].socket.recv_from(&mut self.input);
            match received {
                Ok((n, peer)) => {
                    ThreadStats::add(&self.stats.bytes_read, n as u64);
                    if !self.serve_datagram(i, n, peer) {
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    self.ports[i].readable = false;
                    return true;
                }
                // Interrupted, or an error a previous send left on the socket: next datagram.
                Err(_) => {}
            }
        }
        true
    }

    /// Runs the requests of the datagram in `input[..len]` from `peer` and sends the replies. Returns
    /// false at shutdown.
    fn serve_datagram(&mut self, i: usize, len: usize, peer: SocketAddr) -> bool {
        let Some((request_id, _)) = frame::parse_request(&self.input[..len]) else {
            return true;
        };
        let now = self.ctx.clock().now;
        let port = &mut self.ports[i];
        port.info.touch(now);
        port.info.set_state(ConnState::ParseCmd);
        port.session.start_datagram();
        let payload = frame::HEADER_BYTES..len;
        let mut pos = 0;
        let mut alive = true;
        loop {
            let request = &self.input[payload.clone()][pos..];
            self.output.clear();
            let progress = self.ports[i].session.process(request, &mut self.output, 1);
            if progress.close && self.output.is_empty() {
                // memcached's answer to `quit`: a bare header counting no datagrams.
                let bare = frame::header(request_id, 0, 0);
                alive = self.send(i, &bare, peer).unwrap_or(true);
                break;
            }
            let sent = frame::for_each_object(request, &self.output, |object| {
                frame::for_each_datagram(request_id, object, &mut self.frame, |d| {
                    send_datagram(
                        &self.ctx,
                        &mut self.poll,
                        &self.stats,
                        &mut self.ports,
                        i,
                        d,
                        peer,
                    )
                })
            });
            match sent {
                Ok(()) => {}
                Err(SendStop::Failed) => break,
                Err(SendStop::Shutdown) => {
                    alive = false;
                    break;
                }
            }
            pos += progress.consumed;
            if progress.close || !(progress.output_full || progress.yielded) {
                break;
            }
        }
        self.ports[i].info.set_state(ConnState::Waiting);
        if self.output.capacity() > crate::net::conn::WRITE_BUFFER_KEEP_BYTES {
            self.output = Vec::new();
        }
        alive
    }

    /// Sends one datagram (waiting for room): `Some(false)` at shutdown, `None` when it failed.
    fn send(&mut self, i: usize, datagram: &[u8], peer: SocketAddr) -> Option<bool> {
        let UdpServer {
            ctx,
            poll,
            stats,
            ports,
            ..
        } = self;
        match send_datagram(ctx, poll, stats, ports, i, datagram, peer) {
            Ok(()) => Some(true),
            Err(SendStop::Shutdown) => Some(false),
            Err(SendStop::Failed) => None,
        }
    }
}

/// Why a reply stopped being sent.
enum SendStop {
    /// The socket refused the datagram (the rest of the reply is dropped, as memcached drops it).
    Failed,
    /// The server is shutting down.
    Shutdown,
}

/// Sends `datagram` to `peer` on socket `i`, waiting for room in its send buffer when it is full; the
/// readiness of the other sockets seen meanwhile is kept.
fn send_datagram<S>(
    ctx: &ServerContext,
    poll: &mut Poll,
    stats: &ThreadStats,
    ports: &mut [Port<S>],
    i: usize,
    datagram: &[u8],
    peer: SocketAddr,
) -> Result<(), SendStop> {
    let mut events = Events::with_capacity(16);
    loop {
        match ports[i].socket.send_to(datagram, peer) {
            Ok(n) => {
                ThreadStats::add(&stats.bytes_written, n as u64);
                return Ok(());
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => loop {
                match poll.poll(&mut events, None) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => return Err(SendStop::Failed),
                }
                if ctx.is_shutting_down() {
                    return Err(SendStop::Shutdown);
                }
                let mut writable = false;
                for event in events.iter() {
                    if let Some(port) = ports.get_mut(event.token().0) {
                        port.readable |= event.is_readable();
                    }
                    writable |= event.token() == Token(i) && event.is_writable();
                }
                if writable {
                    break;
                }
            },
            Err(_) => return Err(SendStop::Failed),
        }
    }
}
