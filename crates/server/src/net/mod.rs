//! The network layer: memcached's threading model on mio.
//!
//! Threads and ownership (details in `docs/threads-and-locks.md`):
//! - **listener** (`listener.rs`, one thread): owns the listening sockets (TCP, or the `-s` UNIX socket:
//!   `stream.rs` is either kind of connection); accepts, enforces `-c`, hands each connection to a worker
//!   round-robin (mpsc channel + `mio::Waker`); owns shutdown (signals, the context's waker) and wakes
//!   the workers and the UDP thread when it stops.
//! - **workers** (`-t` threads): each owns its connections (`conn.rs`: socket, session, buffers) and its
//!   `ThreadStats`. A connection never moves between workers. Two I/O paths run the same `Conn`
//!   (`-o io=`, resolved once at start by [`resolve_io`]): epoll (`worker.rs`, a `mio::Poll` per worker)
//!   and io_uring (`uring/`, a ring per worker, one `io_uring_enter` per event-loop turn).
//! - **udp** (`udp/`, one thread, only with `-U`): serves every UDP socket on either I/O path, one
//!   datagram at a time, with a session per socket and counters of its own.
//! - **maintenance** (`maintenance.rs`, one thread): reaper, page release, tenant arbiter and automove, once
//!   a second; with `-o idle_timeout`, it also closes idle connections (`idle.rs`).
//! - **crawler** (`crate::crawler`, one thread): runs `lru_crawler crawl` jobs in bounded batches; idle
//!   otherwise.
//!
//! Placement (`crate::isolation`, `-o worker_cpus/service_cpus/sched`): each thread pins itself and sets
//! its policy first thing, and [`Server::start`] waits for that before it goes on, so a placement the
//! machine refuses stops start-up with an error naming the option (the workers already running are
//! woken and joined; nothing has been accepted yet).
//!
//! Locks: on the request path only the engine's shard locks (inside the session). The connection
//! registry's per-worker mutex (`registry.rs`) is a leaf taken on connection open/close and by
//! `stats conns`. Everything else shared is atomics in `ServerContext`.

pub mod conn;
pub mod idle;
pub mod listener;
pub mod maintenance;
pub mod registry;
pub mod stream;
pub mod tls;
pub mod udp;
pub mod uring;
pub mod worker;

#[cfg(test)]
mod tests;

use std::io;
use std::net::SocketAddr;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

use mio::{Poll, Waker};

use crate::context::{ServerContext, ThreadStats};
use crate::isolation::ThreadPlacement;
use crate::session::{Progress, Session};
use crate::settings::IoMode;
use listener::{Listener, WorkerPort};
use maintenance::Maintenance;
use registry::ConnInfo;
use worker::{Worker, WorkerBase, WAKER_TOKEN};

/// What a connection needs from the protocol: bytes in, replies out. The server runs
/// [`crate::session::Session`]; tests of this layer run small stand-ins.
///
/// Contract: `process` consumes a prefix of `input` (`Progress::consumed`), appends replies to `out`
/// (never removes from it), runs at most `max_requests` requests, and sets `yielded` when it stopped
/// because of that bound. When it stops on an incomplete request it may say how many unconsumed bytes it
/// needs (`want_bytes`, counted from the start of the unconsumed input); it is called again once more bytes
/// have arrived.
pub trait ProtocolSession: Send + 'static {
    /// Runs the complete requests at the start of `input`, appending their replies to `out` (see the
    /// contract above).
    fn process(&mut self, input: &[u8], out: &mut Vec<u8>, max_requests: usize) -> Progress;

    /// Gives the session its worker's waker, which wakes the worker for a session that parked
    /// ([`Progress::parked`]); called once, when the worker opens the connection.
    fn attach_waker(&mut self, _waker: Arc<Waker>) {}

    /// Makes this the session of a UDP socket (`udp.rs`), before its first datagram.
    fn serve_datagrams(&mut self) {}

    /// A new datagram begins: nothing of the previous one carries over (see
    /// [`Session::start_datagram`]).
    fn start_datagram(&mut self) {}
}

impl ProtocolSession for Session {
    #[inline]
    fn process(&mut self, input: &[u8], out: &mut Vec<u8>, max_requests: usize) -> Progress {
        Session::process(self, input, out, max_requests)
    }

    fn attach_waker(&mut self, waker: Arc<Waker>) {
        Session::attach_waker(self, waker);
    }

    fn serve_datagrams(&mut self) {
        Session::serve_datagrams(self);
    }

    fn start_datagram(&mut self) {
        Session::start_datagram(self);
    }
}

/// The network I/O path the workers run (`-o io=` once resolved).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoBackend {
    /// `uring/`: io_uring.
    Uring,
    /// `worker.rs`: epoll through mio.
    Epoll,
}

impl IoBackend {
    /// The name `-o io=` and `stats settings` use.
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Uring => "uring",
            IoBackend::Epoll => "epoll",
        }
    }
}

/// What `-o io=auto` picks where the kernel supports both. io_uring, because it batches every
/// connection's sends and receives of a turn into one system call: side by side with epoll and
/// memcached it spends less CPU per unpipelined request, serves more closed-loop throughput and has
/// the lower tail under load, with the same memory bounds (`tests/hardening.rs` runs on both); the
/// figures are in docs/results.md §4.1.
pub const AUTO_IO_BACKEND: IoBackend = IoBackend::Uring;

/// Whether this kernel can run the io_uring workers ([`uring::probe`], run once per process).
pub fn uring_support() -> Result<(), String> {
    static PROBE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    PROBE
        .get_or_init(|| uring::probe().map_err(|e| e.to_string()))
        .clone()
}

/// Resolves `-o io=`: `auto` is [`AUTO_IO_BACKEND`] where the kernel supports it, else epoll; `uring` on a
/// kernel that cannot is an error naming the option and the reason.
pub fn resolve_io(mode: IoMode) -> io::Result<IoBackend> {
    match mode {
        IoMode::Epoll => Ok(IoBackend::Epoll),
        IoMode::Uring => uring_support().map(|()| IoBackend::Uring).map_err(|why| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "-o io=uring: this kernel cannot run it ({why}); use -o io=epoll or io=auto"
                ),
            )
        }),
        IoMode::Auto => Ok(match uring_support() {
            Ok(()) => AUTO_IO_BACKEND,
            Err(_) => IoBackend::Epoll,
        }),
    }
}

/// How [`Server::start`] behaves beyond the settings.
#[derive(Clone, Copy, Debug)]
pub struct ServerOptions {
    /// Install SIGTERM/SIGINT/SIGUSR1 handlers that shut the server down (SIGUSR1 gracefully: see
    /// `ServerContext::request_graceful_shutdown`) and SIGHUP's (reload); the binary does, in-process
    /// tests do not, since handlers are process-wide.
    pub handle_signals: bool,
    /// Run the maintenance thread.
    pub maintenance: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            handle_signals: true,
            maintenance: true,
        }
    }
}

/// A running server: its threads and bound addresses.
pub struct Server {
    ctx: Arc<ServerContext>,
    io: IoBackend,
    local_addrs: Vec<SocketAddr>,
    udp_addrs: Vec<SocketAddr>,
    listener: JoinHandle<io::Result<()>>,
    udp: Option<JoinHandle<io::Result<()>>>,
    workers: Vec<JoinHandle<io::Result<()>>>,
    maintenance: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
    crawler: JoinHandle<()>,
    signal_ids: Vec<signal_hook::SigId>,
}

impl Server {
    /// Binds the listening sockets and starts every thread. When this returns the sockets accept
    /// connections (the kernel queues them until the listener thread runs). `new_session` makes each
    /// connection's protocol session from the worker's counters and the connection's registry entry
    /// (its descriptor, which names it in logs, its peer, and the local address it arrived on).
    pub fn start<S, F>(
        ctx: Arc<ServerContext>,
        new_session: F,
        options: ServerOptions,
    ) -> io::Result<Server>
    where
        S: ProtocolSession,
        F: Fn(Arc<ServerContext>, Arc<ThreadStats>, &Arc<ConnInfo>) -> S + Clone + Send + 'static,
    {
        Server::start_prepared(ctx, new_session, options, |_| Ok(()))
    }

    /// [`Server::start`], running `prepare` once the sockets are bound and the memory model is set up
    /// but before the listener accepts a connection (the binary loads a warm restart there).
    pub fn start_prepared<S, F>(
        ctx: Arc<ServerContext>,
        new_session: F,
        options: ServerOptions,
        prepare: impl FnOnce(&Arc<ServerContext>) -> io::Result<()>,
    ) -> io::Result<Server>
    where
        S: ProtocolSession,
        F: Fn(Arc<ServerContext>, Arc<ThreadStats>, &Arc<ConnInfo>) -> S + Clone + Send + 'static,
    {
        let io = resolve_io(ctx.settings.io)?;
        if ctx.settings.verbose > 0 {
            eprintln!("mrcached: network I/O: {}", io.name());
        } else if ctx.settings.io == IoMode::Auto && io != AUTO_IO_BACKEND {
            if let Err(why) = uring_support() {
                eprintln!("mrcached: network I/O: epoll (io_uring unavailable: {why})");
            }
        }
        let listener::Bound {
            listeners: bound,
            udp: udp_sockets,
        } = listener::bind_all(&ctx.settings)?;
        let local_addrs: Vec<SocketAddr> = bound.iter().filter_map(|l| l.tcp_addr()).collect();
        let udp_addrs = udp_sockets
            .iter()
            .map(|s| s.local_addr())
            .collect::<io::Result<Vec<_>>>()?;

        let isolation = &ctx.settings.isolation;
        if let Some(warning) = isolation.warning(ctx.thread_stats.len()) {
            eprintln!("mrcached: warning: {warning}");
        }
        let mut ports = Vec::new();
        let mut workers = Vec::new();
        let mut placed = Ok(());
        for id in 0..ctx.thread_stats.len() {
            let poll = Poll::new()?;
            let waker = Arc::new(Waker::new(poll.registry(), WAKER_TOKEN)?);
            let (sender, inbox) = mpsc::channel();
            ports.push(WorkerPort {
                sender,
                waker: waker.clone(),
            });
            let name = format!("mrcached-worker-{id}");
            let placement = isolation.worker(id);
            let base = WorkerBase::new(id, ctx.clone(), poll, waker, inbox, new_session.clone());
            let spawned = match io {
                IoBackend::Epoll => spawn_placed(
                    name,
                    placement,
                    || Ok(()),
                    move || Ok(Worker::new(base)),
                    Worker::run,
                ),
                // The ring is made on the worker's thread: a single-issuer ring belongs to the thread
                // that made it.
                IoBackend::Uring => spawn_placed(
                    name,
                    placement,
                    || Ok(()),
                    move || uring::UringWorker::new(base),
                    uring::UringWorker::run,
                ),
            };
            match spawned {
                Ok(handle) => workers.push(handle),
                Err(e) => {
                    placed = Err(e);
                    break;
                }
            }
        }
        // Kept to stop the workers should a later thread fail to start (the listener owns the ports).
        let wakers: Vec<Arc<Waker>> = ports.iter().map(|p| p.waker.clone()).collect();
        if let Err(e) = placed {
            stop_workers(&ctx, &wakers, workers);
            return Err(e);
        }

        let mut signal_ids = Vec::new();
        let reload = if options.handle_signals {
            let (read_end, write_end) = std::os::unix::net::UnixStream::pair()?;
            read_end.set_nonblocking(true)?;
            write_end.set_nonblocking(true)?;
            signal_ids.push(signal_hook::low_level::pipe::register(
                signal_hook::consts::SIGHUP,
                write_end,
            )?);
            Some(mio::net::UnixStream::from_std(read_end))
        } else {
            None
        };
        let signals = if options.handle_signals {
            let (read_end, write_end) = std::os::unix::net::UnixStream::pair()?;
            read_end.set_nonblocking(true)?;
            write_end.set_nonblocking(true)?;
            for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
                signal_ids.push(signal_hook::low_level::pipe::register(
                    sig,
                    write_end.try_clone()?,
                )?);
            }
            Some(mio::net::UnixStream::from_std(read_end))
        } else {
            None
        };
        // SIGUSR1 on a pipe of its own: memcached's graceful stop, which saves the cache with `-e`.
        let graceful = if options.handle_signals {
            let (read_end, write_end) = std::os::unix::net::UnixStream::pair()?;
            read_end.set_nonblocking(true)?;
            write_end.set_nonblocking(true)?;
            signal_ids.push(signal_hook::low_level::pipe::register(
                signal_hook::consts::SIGUSR1,
                write_end,
            )?);
            Some(mio::net::UnixStream::from_std(read_end))
        } else {
            None
        };

        // Built before the listener runs, so that the tenants' reserves and targets are in force before
        // the first request (and before `prepare` loads a warm restart into the pools).
        let maintenance = options.maintenance.then(|| Maintenance::new(ctx.clone()));
        prepare(&ctx)?;
        let (udp_server, udp_infos) = if udp_sockets.is_empty() {
            (None, Vec::new())
        } else {
            match udp::UdpServer::new(ctx.clone(), udp_sockets, new_session.clone()) {
                Ok((server, waker, infos)) => (Some((server, waker)), infos),
                Err(e) => {
                    stop_workers(&ctx, &wakers, workers);
                    return Err(e);
                }
            }
        };
        let listener = Listener::new(
            ctx.clone(),
            bound,
            udp_infos,
            listener::SignalPipes {
                stop: signals,
                graceful,
                reload,
            },
            ports,
            udp_server.iter().map(|(_, w)| w.clone()).collect(),
        )?;
        let listener = match io {
            IoBackend::Uring => listener.with_uring_accept(),
            IoBackend::Epoll => listener,
        };
        // The service threads' CPUs were checked against the allowed set at start-up and they keep the
        // normal policy, so placing them can only fail if the allowed set shrank since; then the
        // server stops here, as for a worker.
        let service = isolation.service();
        let maintenance = match maintenance {
            Some(m) => {
                let (stop, stop_rx) = mpsc::channel();
                let placed = spawn_placed(
                    "mrcached-maintenance".into(),
                    service.clone(),
                    || (),
                    move || Ok(m),
                    move |m| m.run(stop_rx),
                );
                match placed {
                    Ok(handle) => Some((stop, handle)),
                    Err(e) => {
                        stop_workers(&ctx, &wakers, workers);
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        // The UDP thread serves requests but is not a worker: it runs where the service threads run.
        let udp = match udp_server {
            Some((server, waker)) => match spawn_placed(
                "mrcached-udp".into(),
                service.clone(),
                || Ok(()),
                move || Ok(server),
                udp::UdpServer::run,
            ) {
                Ok(handle) => Some((handle, waker)),
                Err(e) => {
                    stop_workers(&ctx, &wakers, workers);
                    stop_maintenance(maintenance);
                    return Err(e);
                }
            },
            None => None,
        };
        let crawler_ctx = ctx.clone();
        let crawler = match spawn_placed(
            "mrcached-crawler".into(),
            service.clone(),
            || (),
            move || Ok(crawler_ctx),
            |ctx| ctx.crawler.run(&ctx),
        ) {
            Ok(handle) => handle,
            Err(e) => {
                stop_workers(&ctx, &wakers, workers);
                stop_maintenance(maintenance);
                stop_udp(udp);
                return Err(e);
            }
        };
        let listener = match spawn_placed(
            "mrcached-listener".into(),
            service,
            || Ok(()),
            move || Ok(listener),
            Listener::run,
        ) {
            Ok(handle) => handle,
            Err(e) => {
                stop_workers(&ctx, &wakers, workers);
                stop_maintenance(maintenance);
                stop_udp(udp);
                ctx.crawler.stop();
                let _ = crawler.join();
                return Err(e);
            }
        };

        Ok(Server {
            ctx,
            io,
            local_addrs,
            udp_addrs,
            listener,
            udp: udp.map(|(handle, _)| handle),
            workers,
            maintenance,
            crawler,
            signal_ids,
        })
    }

    /// The bound TCP addresses (with the real port when `-p 0`); none with `-s`.
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// The bound UDP addresses (with the real port when `-U -1`); none without `-U`.
    pub fn udp_addrs(&self) -> &[SocketAddr] {
        &self.udp_addrs
    }

    /// The network I/O path the workers run.
    pub fn io_backend(&self) -> IoBackend {
        self.io
    }

    /// The context the server runs with.
    pub fn context(&self) -> &Arc<ServerContext> {
        &self.ctx
    }

    /// Asks the server to stop; [`Server::wait`] then returns.
    pub fn shutdown(&self) {
        self.ctx.request_shutdown();
    }

    /// Blocks until the server has shut down and every thread has exited.
    pub fn wait(self) -> io::Result<()> {
        let mut result = join(self.listener);
        for w in self.workers {
            result = result.and(join(w));
        }
        if let Some(udp) = self.udp {
            result = result.and(join(udp));
        }
        if let Some((stop, handle)) = self.maintenance {
            drop(stop);
            let _ = handle.join();
        }
        self.ctx.crawler.stop();
        let _ = self.crawler.join();
        for id in self.signal_ids {
            signal_hook::low_level::unregister(id);
        }
        result
    }
}

/// Stops the workers of a server whose start-up failed: nothing was accepted yet, so they hold no
/// connection; each wakes, sees the shutdown and exits.
/// Binds one socket per `-l` address (every interface without `-l`) on `port`, TCP's or UDP's:
/// `bind` makes one and says the port it got. Where the port is 0 and an address names none, the
/// sockets after the first take the port the first was given, so that all listen on one port.
pub(crate) fn bind_each<T>(
    settings: &crate::settings::Settings,
    port: u16,
    bind: impl Fn(SocketAddr) -> io::Result<(T, u16)>,
) -> io::Result<Vec<T>> {
    let mut addrs: Vec<(SocketAddr, bool)> = Vec::new();
    if settings.listen.is_empty() {
        addrs.push((SocketAddr::from(([0, 0, 0, 0], port)), false));
    }
    for spec in &settings.listen {
        for a in spec.resolve(port)? {
            addrs.push((a, spec.port.is_some()));
        }
    }
    let mut bound = Vec::with_capacity(addrs.len());
    let mut ephemeral: Option<u16> = None;
    for (mut addr, explicit_port) in addrs {
        if let (0, false, Some(p)) = (addr.port(), explicit_port, ephemeral) {
            addr.set_port(p);
        }
        let (socket, got) = bind(addr)?;
        if ephemeral.is_none() && port == 0 {
            ephemeral = Some(got);
        }
        bound.push(socket);
    }
    Ok(bound)
}

fn stop_workers(
    ctx: &ServerContext,
    wakers: &[Arc<Waker>],
    workers: Vec<JoinHandle<io::Result<()>>>,
) {
    ctx.request_shutdown();
    for waker in wakers {
        let _ = waker.wake();
    }
    for w in workers {
        let _ = join(w);
    }
}

/// Stops the UDP thread of a server whose start-up failed (shutdown is already requested).
fn stop_udp(udp: Option<(JoinHandle<io::Result<()>>, Arc<Waker>)>) {
    if let Some((handle, waker)) = udp {
        let _ = waker.wake();
        let _ = join(handle);
    }
}

/// Stops the maintenance thread of a server whose start-up failed (dropping its channel ends its loop).
fn stop_maintenance(maintenance: Option<(mpsc::Sender<()>, JoinHandle<()>)>) {
    if let Some((stop, handle)) = maintenance {
        drop(stop);
        let _ = handle.join();
    }
}

/// Spawns a thread that places itself (`crate::isolation`), then makes its state with `start` and runs
/// `run` on it, and waits until the thread has placed itself and started: when placing or starting fails
/// the thread returns `skipped()` without running, and the error (which names the option, or what could
/// not start) is returned here.
fn spawn_placed<W, T: Send + 'static>(
    name: String,
    placement: ThreadPlacement,
    skipped: fn() -> T,
    start: impl FnOnce() -> io::Result<W> + Send + 'static,
    run: impl FnOnce(W) -> T + Send + 'static,
) -> io::Result<JoinHandle<T>> {
    let (started_tx, started_rx) = mpsc::sync_channel(1);
    let thread_name = name.clone();
    let handle = std::thread::Builder::new()
        .name(thread_name)
        .spawn(
            move || match placement.apply_to_current_thread().and_then(|()| start()) {
                Ok(state) => {
                    let _ = started_tx.send(Ok(()));
                    run(state)
                }
                Err(e) => {
                    let _ = started_tx.send(Err(e));
                    skipped()
                }
            },
        )?;
    match started_rx.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => {
            let _ = handle.join();
            Err(e)
        }
        Err(_) => {
            let _ = handle.join();
            Err(io::Error::other(format!("{name} died while starting")))
        }
    }
}

fn join(handle: JoinHandle<io::Result<()>>) -> io::Result<()> {
    handle
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("a server thread panicked")))
}
