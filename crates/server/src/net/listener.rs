//! The listener (acceptor) thread: memcached's dispatcher. It owns the listening sockets, accepts, enforces
//! `-c`, and hands each connection to a worker round-robin over that worker's channel plus its `Waker`.
//!
//! What it listens on, as memcached does: with `-s PATH` only that UNIX stream socket (no TCP, no UDP,
//! whatever `-p` and `-U` say); otherwise TCP on every `-l` interface (all IPv4 ones without `-l`). A
//! stale socket file at PATH (one that is a socket) is removed before binding, anything else there is
//! an error naming `-s`; the socket file gets `-a`'s permissions before the socket listens, so no client
//! connects under other ones. The file stays at exit, as memcached leaves it. UDP sockets (`-U`) are
//! bound here too, on the same interfaces as TCP, and served by `net::udp`'s thread, not accepted.
//!
//! It also owns shutdown: its poll watches a waker (`ServerContext::request_shutdown`) and, when signals are
//! handled, a self-pipe that signal-hook writes on SIGTERM/SIGINT and another for SIGUSR1 (a graceful
//! stop, which saves the cache with `-e`). On any it stops accepting, sets `shutting_down`, wakes every
//! worker, and returns, closing the listening sockets.
//!
//! Tenant ports (`port` in `--config`) are more listening sockets on the same interfaces; a session
//! learns its tenant from the port it was accepted on. SIGHUP (its own self-pipe) reloads the tenant
//! directory here, on the listener thread, and binds the ports of tenants the reload added; a port
//! whose tenant was removed stays bound until restart and serves as a main listener does (so its new
//! connections must authenticate when auth is on, and are routed by prefix when it is off).
//!
//! With `-o io=uring` it accepts through io_uring instead (`accept_loop_uring`): one multishot accept per
//! listening socket, the signal pipes and waker still on its mio poll, whose descriptor the ring polls.
//! Everything after the accept (`-c`, handing over, tenant ports, SIGHUP, shutdown) is the same code.
//!
//! At `-c` it accepts the extra connection, writes `ERROR Too many open connections`, and closes it
//! (memcached's `maxconns_fast`), counting `rejected_connections`. If accept fails for lack of file
//! descriptors it stops accepting for [`ACCEPT_BACKOFF`] (memcached's `listen_disabled_num`).

use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::path::Path;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::context::ServerContext;
use crate::net::registry::{Endpoint, ListenerInfo};
use crate::net::stream::ClientStream;
use crate::net::worker::NewConn;
use crate::settings::Settings;
use crate::tenants::ServerBounds;

/// memcached's reply to a connection over `-c`.
pub const TOO_MANY_CONNECTIONS: &[u8] = b"ERROR Too many open connections\r\n";
/// How long accepting pauses after running out of file descriptors.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

const WAKER_TOKEN: Token = Token(usize::MAX);
const SIGNAL_TOKEN: Token = Token(usize::MAX - 1);
const RELOAD_TOKEN: Token = Token(usize::MAX - 2);
const GRACEFUL_TOKEN: Token = Token(usize::MAX - 3);

/// The read ends of the signal self-pipes (all `None` when the server handles no signals).
pub struct SignalPipes {
    /// SIGTERM, SIGINT: stop.
    pub stop: Option<UnixStream>,
    /// SIGUSR1: stop gracefully (save the cache with `-e`).
    pub graceful: Option<UnixStream>,
    /// SIGHUP: reload the tenant configuration.
    pub reload: Option<UnixStream>,
}

/// A worker as the listener sees it.
pub struct WorkerPort {
    pub(crate) sender: Sender<NewConn>,
    pub(crate) waker: Arc<Waker>,
}

/// The sockets [`bind_all`] bound.
pub struct Bound {
    /// Listening sockets, to accept on.
    pub listeners: Vec<ListenSocket>,
    /// UDP sockets (`-U`), for `net::udp`.
    pub udp: Vec<std::net::UdpSocket>,
}

/// Binds what the settings ask for (see the module notes): the `-s` UNIX socket alone; or every `-l`
/// address (all IPv4 interfaces without `-l`) with `SO_REUSEADDR` and the `-b` backlog, the tenants'
/// ports, and the `-U` UDP sockets. With `-p 0` the first TCP socket gets an ephemeral port and the others
/// without their own port reuse it; `-U -1` does the same for UDP.
pub fn bind_all(settings: &Settings) -> io::Result<Bound> {
    if let Some(path) = &settings.unix_socket {
        let listener = bind_unix(path, settings.unix_mask, settings.listen_backlog)?;
        return Ok(Bound {
            listeners: vec![listener],
            udp: Vec::new(),
        });
    }
    let mut listeners: Vec<ListenSocket> = bind_main(settings)?
        .into_iter()
        .map(ListenSocket::tcp)
        .collect();
    let ports: Vec<u16> = settings
        .tenants
        .tenants
        .iter()
        .filter_map(|t| t.port)
        .collect();
    for port in ports {
        listeners.extend(
            bind_tenant_port(settings, port)?
                .into_iter()
                .map(ListenSocket::tcp),
        );
    }
    let udp = crate::net::udp::bind(settings)?;
    Ok(Bound { listeners, udp })
}

/// Binds the `-s` socket: removes a stale socket file, binds, gives the file `mask`'s permissions, then
/// listens. Errors name `-s` and the path.
fn bind_unix(path: &Path, mask: u32, backlog: i32) -> io::Result<ListenSocket> {
    use socket2::{Domain, SockAddr, Socket, Type};
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let failed = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!(
                "-s/--unix-socket: failed to listen on UNIX socket {}: {e}",
                path.display()
            ),
        )
    };
    // Only a socket is removed: a regular file (or anything else) at the path is not ours to delete,
    // and binding over it fails with "address in use", as memcached's does.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            std::fs::remove_file(path).map_err(failed)?;
        }
    }
    let addr = SockAddr::unix(path).map_err(failed)?;
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None).map_err(failed)?;
    socket.bind(&addr).map_err(failed)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mask & 0o777))
        .map_err(failed)?;
    socket.listen(backlog).map_err(failed)?;
    socket.set_nonblocking(true).map_err(failed)?;
    let listener = std::os::unix::net::UnixListener::from(std::os::fd::OwnedFd::from(socket));
    Ok(ListenSocket::Unix(
        UnixListener::from_std(listener),
        Arc::from(path),
    ))
}

/// A listening socket of either stream transport.
pub enum ListenSocket {
    /// TCP (`-p`, `-l`, tenant ports).
    Tcp(TcpListener),
    /// The `-s` UNIX socket, with its path.
    Unix(UnixListener, Arc<Path>),
}

impl ListenSocket {
    fn tcp(l: std::net::TcpListener) -> ListenSocket {
        ListenSocket::Tcp(TcpListener::from_std(l))
    }

    /// The bound address (`stats conns`).
    pub fn endpoint(&self) -> io::Result<Endpoint> {
        match self {
            ListenSocket::Tcp(l) => l.local_addr().map(Endpoint::Tcp),
            ListenSocket::Unix(_, path) => Ok(Endpoint::Unix(Some(path.clone()))),
        }
    }

    /// The bound TCP address, for TCP sockets.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        match self {
            ListenSocket::Tcp(l) => l.local_addr().ok(),
            ListenSocket::Unix(..) => None,
        }
    }

    fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            ListenSocket::Tcp(l) => l,
            ListenSocket::Unix(l, _) => l,
        }
    }

    /// Accepts one connection: the stream, the client's address (an error when the client reset the
    /// connection before it was accepted), and the address it arrived on.
    fn accept(&self) -> io::Result<(ClientStream, io::Result<Endpoint>, Endpoint)> {
        match self {
            ListenSocket::Tcp(l) => {
                let (stream, peer) = l.accept()?;
                // A socket whose own address is gone was reset already: treated as a failed peer.
                Ok(match stream.local_addr() {
                    Ok(local) => (
                        ClientStream::Tcp(stream),
                        Ok(Endpoint::Tcp(peer)),
                        Endpoint::Tcp(local),
                    ),
                    Err(e) => (ClientStream::Tcp(stream), Err(e), Endpoint::Tcp(peer)),
                })
            }
            ListenSocket::Unix(l, path) => {
                let (stream, _) = l.accept()?;
                Ok((
                    ClientStream::Unix(stream),
                    Ok(Endpoint::Unix(None)),
                    Endpoint::Unix(Some(path.clone())),
                ))
            }
        }
    }

    /// Wraps a descriptor an io_uring accept completed with, as this socket's kind of stream.
    ///
    /// # Safety
    /// `fd` must be a newly accepted descriptor that nothing else owns.
    unsafe fn adopt(&self, fd: RawFd) -> (ClientStream, io::Result<Endpoint>, Endpoint) {
        match self {
            ListenSocket::Tcp(_) => {
                // SAFETY: the caller hands over ownership of `fd`.
                let stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
                let (peer, local) = match (stream.peer_addr(), stream.local_addr()) {
                    (Ok(peer), Ok(local)) => (Ok(Endpoint::Tcp(peer)), Endpoint::Tcp(local)),
                    // Reset by the peer before it was accepted.
                    (Err(e), Ok(a)) | (Ok(a), Err(e)) => (Err(e), Endpoint::Tcp(a)),
                    (Err(e), Err(_)) => (Err(e), Endpoint::Unix(None)),
                };
                (
                    ClientStream::Tcp(mio::net::TcpStream::from_std(stream)),
                    peer,
                    local,
                )
            }
            ListenSocket::Unix(_, path) => {
                // SAFETY: as above.
                let stream = unsafe { std::os::unix::net::UnixStream::from_raw_fd(fd) };
                (
                    ClientStream::Unix(UnixStream::from_std(stream)),
                    Ok(Endpoint::Unix(None)),
                    Endpoint::Unix(Some(path.clone())),
                )
            }
        }
    }
}

impl AsRawFd for ListenSocket {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            ListenSocket::Tcp(l) => l.as_raw_fd(),
            ListenSocket::Unix(l, _) => l.as_raw_fd(),
        }
    }
}

/// Binds a tenant's port on every interface the main listeners use (none with `-s`: the server then
/// listens on its UNIX socket only).
pub fn bind_tenant_port(settings: &Settings, port: u16) -> io::Result<Vec<std::net::TcpListener>> {
    if settings.unix_socket.is_some() {
        return Err(io::Error::new(
            ErrorKind::Unsupported,
            format!("tenant port {port}: with -s the server listens on its UNIX socket only"),
        ));
    }
    let mut hosts: Vec<SocketAddr> = Vec::new();
    if settings.listen.is_empty() {
        hosts.push(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    for spec in &settings.listen {
        for mut a in spec.resolve(settings.port)? {
            a.set_port(port);
            if !hosts.contains(&a) {
                hosts.push(a);
            }
        }
    }
    hosts
        .into_iter()
        .map(|addr| {
            bind_one(addr, settings.listen_backlog).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("failed to listen on {addr} (tenant port): {e}"),
                )
            })
        })
        .collect()
}

fn bind_main(settings: &Settings) -> io::Result<Vec<std::net::TcpListener>> {
    super::bind_each(settings, settings.port, |addr| {
        let l = bind_one(addr, settings.listen_backlog)
            .map_err(|e| io::Error::new(e.kind(), format!("failed to listen on {addr}: {e}")))?;
        let port = l.local_addr()?.port();
        Ok((l, port))
    })
}

fn bind_one(addr: SocketAddr, backlog: i32) -> io::Result<std::net::TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// The listener thread's state; [`Listener::run`] is the thread body.
pub struct Listener {
    ctx: Arc<ServerContext>,
    poll: Poll,
    listeners: Vec<ListenSocket>,
    signals: Option<UnixStream>,
    /// SIGUSR1's self-pipe: stop gracefully.
    graceful: Option<UnixStream>,
    /// SIGHUP's self-pipe: reload the tenant configuration.
    reload: Option<UnixStream>,
    workers: Vec<WorkerPort>,
    /// Other threads to wake when the listener stops (the UDP thread).
    also_wake: Vec<Arc<Waker>>,
    next_worker: usize,
    /// The ports of the main listeners (all bound ports but the start-up tenants'): a reload may give
    /// none of them to a tenant.
    main_ports: Vec<u16>,
    /// `-o io=uring`: accept with one multishot accept per listening socket on an io_uring instance
    /// (`accept_loop_uring`) instead of `accept` after each epoll event.
    uring_accept: bool,
}

impl Listener {
    /// Takes the bound listening sockets, registers them, and installs the shutdown waker in the
    /// context; `udp` lists the UDP sockets `net::udp` serves, for `stats conns`.
    pub fn new(
        ctx: Arc<ServerContext>,
        bound: Vec<ListenSocket>,
        udp: Vec<ListenerInfo>,
        pipes: SignalPipes,
        workers: Vec<WorkerPort>,
        also_wake: Vec<Arc<Waker>>,
    ) -> io::Result<Listener> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER_TOKEN)?);
        ctx.set_shutdown_waker(waker);
        let mut listeners = Vec::with_capacity(bound.len());
        let mut infos = Vec::with_capacity(bound.len() + udp.len());
        for (i, mut l) in bound.into_iter().enumerate() {
            infos.push(ListenerInfo {
                fd: l.as_raw_fd(),
                addr: l.endpoint()?,
                udp: None,
            });
            poll.registry()
                .register(l.source(), Token(i), Interest::READABLE)?;
            listeners.push(l);
        }
        let tenant_ports: Vec<u16> = ctx
            .settings
            .tenants
            .tenants
            .iter()
            .filter_map(|t| t.port)
            .collect();
        let mut main_ports: Vec<u16> = infos
            .iter()
            .filter_map(|i| i.addr.tcp_port())
            .filter(|p| !tenant_ports.contains(p))
            .collect();
        main_ports.dedup();
        infos.extend(udp);
        let _ = ctx.listeners.set(infos);
        let SignalPipes {
            stop: mut signals,
            mut graceful,
            reload,
        } = pipes;
        if let Some(s) = signals.as_mut() {
            poll.registry()
                .register(s, SIGNAL_TOKEN, Interest::READABLE)?;
        }
        if let Some(s) = graceful.as_mut() {
            poll.registry()
                .register(s, GRACEFUL_TOKEN, Interest::READABLE)?;
        }
        let mut reload = reload;
        if let Some(s) = reload.as_mut() {
            poll.registry()
                .register(s, RELOAD_TOKEN, Interest::READABLE)?;
        }
        Ok(Listener {
            ctx,
            poll,
            listeners,
            signals,
            graceful,
            reload,
            workers,
            also_wake,
            next_worker: 0,
            main_ports,
            uring_accept: false,
        })
    }

    /// Accepts through io_uring multishot accepts (the workers run on io_uring too).
    pub fn with_uring_accept(mut self) -> Listener {
        self.uring_accept = true;
        self
    }

    /// Accepts until shutdown, then wakes the workers so that they close their connections and exit.
    pub fn run(mut self) -> io::Result<()> {
        let result = if self.uring_accept {
            self.accept_loop_uring()
        } else {
            self.accept_loop()
        };
        self.ctx.request_shutdown();
        for w in &self.workers {
            let _ = w.waker.wake();
        }
        for waker in &self.also_wake {
            let _ = waker.wake();
        }
        result
    }

    fn accept_loop(&mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(64);
        let mut paused_until: Option<Instant> = None;
        loop {
            if self.ctx.is_shutting_down() {
                return Ok(());
            }
            let timeout = paused_until.map(|t| t.saturating_duration_since(Instant::now()));
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if let Some(t) = paused_until {
                if Instant::now() < t {
                    // Still paused: only shutdown matters.
                    if self.shutdown_requested(&events) {
                        return Ok(());
                    }
                    continue;
                }
                paused_until = None;
                // Resume: connections may be waiting on any listener without a new edge.
                for i in 0..self.listeners.len() {
                    if !self.accept_all(i) {
                        paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                    }
                }
            }
            if self.on_control_events(&events) {
                return Ok(());
            }
            for event in events.iter() {
                let i = event.token().0;
                if i < self.listeners.len() && paused_until.is_none() && !self.accept_all(i) {
                    paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                }
            }
        }
    }

    /// [`Listener::accept_loop`] on io_uring: one multishot accept per listening socket, so a burst of
    /// connections costs one `io_uring_enter` rather than an `accept` each. The signal pipes, the
    /// shutdown waker and SIGHUP stay on the mio poll, whose descriptor the ring polls. Out of
    /// descriptors, every accept is cancelled for [`ACCEPT_BACKOFF`], as on the epoll path.
    fn accept_loop_uring(&mut self) -> io::Result<()> {
        use io_uring::{cqueue, opcode, types, IoUring};
        const POLL: u64 = u64::MAX;
        const CANCEL: u64 = u64::MAX - 1;
        let mut ring = IoUring::new(64)?;
        let mut events = Events::with_capacity(64);
        let mut armed: Vec<bool> = Vec::new();
        let mut paused_until: Option<Instant> = None;
        let mut poll_armed = false;
        loop {
            if self.ctx.is_shutting_down() {
                return Ok(());
            }
            // Listening sockets not yet on the ring (new, re-armed, or all after a reload) leave mio.
            while armed.len() < self.listeners.len() {
                let _ = self
                    .poll
                    .registry()
                    .deregister(self.listeners[armed.len()].source());
                armed.push(false);
            }
            let mut entries = Vec::new();
            if !poll_armed {
                entries.push(
                    opcode::PollAdd::new(types::Fd(self.poll.as_raw_fd()), libc::POLLIN as u32)
                        .multi(true)
                        .build()
                        .user_data(POLL),
                );
                poll_armed = true;
            }
            if paused_until.is_none() {
                for (i, on) in armed.iter_mut().enumerate() {
                    if !*on {
                        let fd = types::Fd(self.listeners[i].as_raw_fd());
                        entries.push(
                            opcode::AcceptMulti::new(fd)
                                .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
                                .build()
                                .user_data(i as u64),
                        );
                        *on = true;
                    }
                }
            }
            for e in entries {
                // SAFETY: these entries point at no memory.
                while unsafe { ring.submission().push(&e) }.is_err() {
                    ring.submit()?;
                }
            }
            let waited = match paused_until {
                Some(t) => {
                    let ts = types::Timespec::from(t.saturating_duration_since(Instant::now()));
                    let args = types::SubmitArgs::new().timespec(&ts);
                    ring.submitter().submit_with_args(1, &args)
                }
                None => ring.submit_and_wait(1),
            };
            if let Err(e) = waited {
                if !matches!(e.raw_os_error(), Some(libc::EINTR) | Some(libc::ETIME)) {
                    return Err(e);
                }
            }
            if paused_until.is_some_and(|t| Instant::now() >= t) {
                paused_until = None;
            }
            let completions: Vec<(u64, i32, u32)> = ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags()))
                .collect();
            for (ud, res, flags) in completions {
                if ud == CANCEL {
                    continue;
                }
                if ud == POLL {
                    poll_armed = cqueue::more(flags);
                    if let Err(e) = self.poll.poll(&mut events, Some(Duration::ZERO)) {
                        if e.kind() != ErrorKind::Interrupted {
                            return Err(e);
                        }
                    }
                    if self.on_control_events(&events) {
                        return Ok(());
                    }
                    continue;
                }
                let i = ud as usize;
                if !cqueue::more(flags) {
                    if let Some(on) = armed.get_mut(i) {
                        *on = false;
                    }
                }
                if res >= 0 {
                    let Some(listener) = self.listeners.get(i) else {
                        // SAFETY: a descriptor no listener claims, owned by nothing else: closed here.
                        drop(unsafe { std::os::fd::OwnedFd::from_raw_fd(res) });
                        continue;
                    };
                    // SAFETY: the accept completion hands over a new descriptor that nothing else owns.
                    let (stream, peer, local) = unsafe { listener.adopt(res) };
                    self.dispatch(stream, peer, local);
                    continue;
                }
                if res == -libc::ECANCELED {
                    continue;
                }
                if self.accept_failed(&io::Error::from_raw_os_error(-res)) && paused_until.is_none()
                {
                    paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                    for (j, on) in armed.iter().enumerate() {
                        if *on {
                            let cancel =
                                opcode::AsyncCancel::new(j as u64).build().user_data(CANCEL);
                            // SAFETY: a cancel points at no memory.
                            while unsafe { ring.submission().push(&cancel) }.is_err() {
                                ring.submit()?;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Handles the signal pipes' and the shutdown waker's events (both loops poll them with mio):
    /// returns true when the listener must stop; reloads the tenants on SIGHUP otherwise.
    fn on_control_events(&mut self, events: &Events) -> bool {
        if self.shutdown_requested(events) {
            return true;
        }
        if events.iter().any(|e| e.token() == RELOAD_TOKEN) {
            self.reload_tenants();
        }
        false
    }

    fn shutdown_requested(&mut self, events: &Events) -> bool {
        for event in events.iter() {
            let graceful = event.token() == GRACEFUL_TOKEN;
            if event.token() == SIGNAL_TOKEN || graceful {
                let pipe = if graceful {
                    self.graceful.as_mut()
                } else {
                    self.signals.as_mut()
                };
                if let Some(s) = pipe {
                    let mut buf = [0u8; 64];
                    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
                }
                if self.ctx.settings.verbose > 0 {
                    eprintln!("mrcached: signal received, shutting down");
                }
                if graceful {
                    self.ctx.request_graceful_shutdown();
                } else {
                    self.ctx.request_shutdown();
                }
            }
        }
        self.ctx.is_shutting_down()
    }

    /// SIGHUP: re-reads the tenant files. A bad file is logged and the old configuration stays; ports of
    /// new tenants are bound (a failure to bind is logged; the tenant still works by password or prefix).
    fn reload_tenants(&mut self) {
        if let Some(s) = self.reload.as_mut() {
            let mut buf = [0u8; 64];
            while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
        }
        let bounds = ServerBounds {
            main_ports: self.main_ports.clone(),
            memory_limit_bytes: self.ctx.engine.page_limit() as u64
                * self.ctx.engine.geometry().page_size_bytes() as u64,
            ..self.ctx.settings.server_bounds()
        };
        if let Err(e) = self.ctx.tenants.reload(&bounds) {
            eprintln!(
                "mrcached: SIGHUP: tenant configuration not reloaded, keeping the old one: {e}"
            );
            return;
        }
        if self.ctx.settings.verbose > 0 {
            eprintln!("mrcached: SIGHUP: tenant configuration reloaded");
        }
        let bound: Vec<u16> = self
            .listeners
            .iter()
            .filter_map(|l| l.tcp_addr().map(|a| a.port()))
            .collect();
        let table = self.ctx.tenants.current();
        let new_ports: Vec<u16> = table
            .tenants()
            .filter_map(|(_, t)| t.port)
            .filter(|p| !bound.contains(p))
            .collect();
        for port in new_ports {
            match bind_tenant_port(&self.ctx.settings, port) {
                Ok(sockets) => {
                    for l in sockets {
                        let mut l = ListenSocket::tcp(l);
                        let token = Token(self.listeners.len());
                        if let Err(e) =
                            self.poll
                                .registry()
                                .register(l.source(), token, Interest::READABLE)
                        {
                            eprintln!("mrcached: SIGHUP: tenant port {port}: {e}");
                            continue;
                        }
                        self.listeners.push(l);
                        // Connections may already be queued: no edge will announce them.
                        self.accept_all(token.0);
                    }
                }
                Err(e) => eprintln!("mrcached: SIGHUP: {e}"),
            }
        }
    }

    /// Accepts until `WouldBlock`. Returns false when out of descriptors (pause accepting).
    fn accept_all(&mut self, i: usize) -> bool {
        loop {
            match self.listeners[i].accept() {
                Ok((stream, peer, local)) => self.dispatch(stream, peer, local),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    if self.accept_failed(&e) {
                        return false;
                    }
                }
            }
        }
    }

    /// Counts and logs a failed accept (both loops). Returns true when out of descriptors: accepting
    /// pauses for [`ACCEPT_BACKOFF`]; otherwise (the peer gave up before accept, ECONNABORTED, and
    /// similar) the next connection is accepted.
    fn accept_failed(&self, e: &io::Error) -> bool {
        let exhausted = is_resource_exhaustion(e);
        if exhausted {
            self.ctx.conns.listen_disabled_num.fetch_add(1, Relaxed);
        }
        if self.ctx.settings.verbose > 0 {
            if exhausted {
                eprintln!("mrcached: too many open files, not accepting for a while: {e}");
            } else {
                eprintln!("mrcached: accept failed: {e}");
            }
        }
        exhausted
    }

    /// Hands an accepted connection to the next worker. `peer` is an error (ENOTCONN) when the client
    /// reset the connection before it was accepted: it is counted as accepted and closed at once.
    fn dispatch(&mut self, mut stream: ClientStream, peer: io::Result<Endpoint>, local: Endpoint) {
        let conns = &self.ctx.conns;
        if conns.curr_connections.load(Relaxed) >= self.ctx.settings.max_connections {
            // Best effort: a fresh socket's send buffer takes 33 bytes without blocking.
            let _ = stream.write(TOO_MANY_CONNECTIONS);
            conns.rejected_connections.fetch_add(1, Relaxed);
            return;
        }
        // Counted as accepted whatever happens next, as memcached counts every accepted descriptor
        // (a client that reset the connection before this point was accepted all the same).
        conns.total_connections.fetch_add(1, Relaxed);
        if let ClientStream::Tcp(s) = &stream {
            let _ = s.set_nodelay(true);
        }
        // TLS (-Z) on every TCP port; a session that cannot start (no memory) closes the connection.
        let stream = match (self.ctx.tls.get(), stream) {
            (Some(tls), ClientStream::Tcp(s)) => match tls.accept(s) {
                Ok(t) => ClientStream::Tls(Box::new(t)),
                Err(_) => return,
            },
            (_, stream) => stream,
        };
        let Ok(peer) = peer else {
            // Reset by the peer already: nothing to serve.
            return;
        };
        let curr = conns.curr_connections.fetch_add(1, Relaxed) + 1;
        conns.connection_structures.fetch_max(curr, Relaxed);
        let w = &self.workers[self.next_worker];
        self.next_worker = (self.next_worker + 1) % self.workers.len();
        if w.sender
            .send(NewConn {
                stream,
                peer,
                local,
            })
            .is_err()
        {
            conns.curr_connections.fetch_sub(1, Relaxed);
            return;
        }
        let _ = w.waker.wake();
    }
}

fn is_resource_exhaustion(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOBUFS) | Some(libc::ENOMEM)
    )
}
