//! The connection registry: what `stats conns` can see of every open connection without asking the
//! worker that owns it.
//!
//! Ownership: each worker owns its connections; for each one it publishes an `Arc<ConnInfo>` in its own
//! slot list here, indexed by the connection's slot in the worker. The worker's registry mutex is taken
//! only when a connection opens or closes and when `stats conns` reads it — never per request, and no
//! other lock is taken while it is held (it is a leaf). Per request the worker only stores a state byte
//! and a timestamp with relaxed atomics.
//!
//! A worker removes a connection from the registry before it closes the connection's socket, so while
//! a worker's mutex is held every descriptor it lists is open and is that connection's
//! ([`ConnRegistry::for_each`]; `-o idle_timeout`'s check shuts idle sockets down under it).

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering::Relaxed};

use mrcache_engine::TenantId;
use std::sync::Arc;

use parking_lot::Mutex;

/// What a connection is doing, in memcached's `conn_*` state names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ConnState {
    /// Waiting for the next command (or the rest of its line).
    Waiting = 0,
    /// Running commands.
    ParseCmd = 1,
    /// A command's data is still arriving (or being discarded).
    Nread = 2,
    /// Replies are queued for the socket.
    Mwrite = 3,
    /// Closing.
    Closing = 4,
}

impl ConnState {
    /// memcached's name for the state (`stats conns`).
    pub fn name(self) -> &'static str {
        match self {
            ConnState::Waiting => "conn_waiting",
            ConnState::ParseCmd => "conn_parse_cmd",
            ConnState::Nread => "conn_nread",
            ConnState::Mwrite => "conn_mwrite",
            ConnState::Closing => "conn_closing",
        }
    }

    fn from_u8(v: u8) -> ConnState {
        match v {
            1 => ConnState::ParseCmd,
            2 => ConnState::Nread,
            3 => ConnState::Mwrite,
            4 => ConnState::Closing,
            _ => ConnState::Waiting,
        }
    }
}

/// One end of a socket as `stats conns` names it, for each transport the server listens on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A UNIX stream socket: the path it is bound to (`-s`), or `None` for a client's own end, which
    /// is unnamed.
    Unix(Option<Arc<Path>>),
    /// A UDP address (`-U`).
    Udp(SocketAddr),
}

impl Endpoint {
    /// The TCP port, for tenants named by the port a connection arrived on (UNIX and UDP sockets
    /// name none).
    pub fn tcp_port(&self) -> Option<u16> {
        match self {
            Endpoint::Tcp(a) => Some(a.port()),
            Endpoint::Unix(_) | Endpoint::Udp(_) => None,
        }
    }
}

impl From<SocketAddr> for Endpoint {
    fn from(a: SocketAddr) -> Endpoint {
        Endpoint::Tcp(a)
    }
}

impl fmt::Display for Endpoint {
    /// memcached's form in `stats conns`: `tcp:1.2.3.4:5`, `tcp6:[::1]:5`, `udp:...`, `udp6:...`,
    /// `unix:/path`. A UNIX client's unnamed end prints as memcached prints it, `?:<AF 0>` (it keeps no
    /// address for such a client).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Tcp(a @ SocketAddr::V4(_)) => write!(f, "tcp:{a}"),
            Endpoint::Tcp(a @ SocketAddr::V6(_)) => write!(f, "tcp6:{a}"),
            Endpoint::Udp(a @ SocketAddr::V4(_)) => write!(f, "udp:{a}"),
            Endpoint::Udp(a @ SocketAddr::V6(_)) => write!(f, "udp6:{a}"),
            Endpoint::Unix(Some(path)) => write!(f, "unix:{}", path.display()),
            Endpoint::Unix(None) => f.write_str("?:<AF 0>"),
        }
    }
}

/// One connection as `stats conns` sees it. Immutable fields are set at accept; the atomics are written
/// by the owning worker, except that the idle check (`crate::net::idle`) moves a waiting connection's
/// state to closing, and the session marks a watcher.
#[derive(Debug)]
pub struct ConnInfo {
    /// The socket's file descriptor (memcached keys `stats conns` lines by it).
    pub fd: i32,
    /// The client's address (`stats conns` `<fd>:addr`).
    pub peer: Endpoint,
    /// The listening address the connection arrived on (`stats conns` `<fd>:listen_addr`).
    pub local: Endpoint,
    state: AtomicU8,
    /// Engine clock seconds (`ServerContext::clock().now`) of the last command.
    last_cmd_secs: AtomicU32,
    read_buf_bytes: AtomicUsize,
    write_buf_bytes: AtomicUsize,
    /// The tenant the connection is fixed to ([`NO_TENANT`] while routed or not yet authenticated), so
    /// that a tenant's `stats conns` lists only its own connections.
    tenant: AtomicU32,
    /// `watch` made it a log watcher: it sends no more commands, and is never idle.
    watching: AtomicBool,
}

/// [`ConnInfo`]'s tenant while the connection is not fixed to one.
const NO_TENANT: u32 = u32::MAX;

impl ConnInfo {
    pub(crate) fn new(
        fd: i32,
        peer: impl Into<Endpoint>,
        local: impl Into<Endpoint>,
        now_secs: u32,
    ) -> ConnInfo {
        ConnInfo {
            fd,
            peer: peer.into(),
            local: local.into(),
            state: AtomicU8::new(ConnState::Waiting as u8),
            last_cmd_secs: AtomicU32::new(now_secs),
            read_buf_bytes: AtomicUsize::new(0),
            write_buf_bytes: AtomicUsize::new(0),
            tenant: AtomicU32::new(NO_TENANT),
            watching: AtomicBool::new(false),
        }
    }

    /// Records that the connection now watches logs (`watch`).
    pub(crate) fn set_watching(&self) {
        self.watching.store(true, Relaxed);
    }

    /// memcached's idle test: the connection has waited for a command more than `timeout_secs`
    /// (only a connection waiting for one, or for the rest of its line, with no reply unsent, and not
    /// a watcher). When
    /// it has, its state becomes closing, so that it is claimed once, and not at all if its worker
    /// has just started a command; the caller then closes it.
    pub(crate) fn claim_idle(&self, now_secs: u32, timeout_secs: u32) -> bool {
        now_secs.saturating_sub(self.last_cmd_secs()) > timeout_secs
            && !self.watching.load(Relaxed)
            && self
                .state
                .compare_exchange(
                    ConnState::Waiting as u8,
                    ConnState::Closing as u8,
                    Relaxed,
                    Relaxed,
                )
                .is_ok()
    }

    /// Records the tenant the connection is now fixed to.
    pub fn set_tenant(&self, tenant: TenantId) {
        self.tenant.store(u32::from(tenant.0), Relaxed);
    }

    /// The tenant the connection is fixed to, if any.
    pub fn tenant(&self) -> Option<TenantId> {
        let t = self.tenant.load(Relaxed);
        (t != NO_TENANT).then_some(TenantId(t as u16))
    }

    #[inline]
    pub(crate) fn set_state(&self, state: ConnState) {
        self.state.store(state as u8, Relaxed);
    }

    pub(crate) fn state(&self) -> ConnState {
        ConnState::from_u8(self.state.load(Relaxed))
    }

    #[inline]
    pub(crate) fn touch(&self, now_secs: u32) {
        self.last_cmd_secs.store(now_secs, Relaxed);
    }

    pub(crate) fn last_cmd_secs(&self) -> u32 {
        self.last_cmd_secs.load(Relaxed)
    }

    /// Records the connection's buffer capacities (called when they change, which is rare).
    pub fn set_buffers(&self, read_bytes: usize, write_bytes: usize) {
        self.read_buf_bytes.store(read_bytes, Relaxed);
        self.write_buf_bytes.store(write_bytes, Relaxed);
    }

    pub(crate) fn read_buf_bytes(&self) -> usize {
        self.read_buf_bytes.load(Relaxed)
    }

    pub(crate) fn write_buf_bytes(&self) -> usize {
        self.write_buf_bytes.load(Relaxed)
    }
}

/// A listening socket, or a UDP socket (`stats conns` lists them with the connections, by descriptor).
#[derive(Clone, Debug)]
pub struct ListenerInfo {
    /// The socket's file descriptor (`stats conns` keys its lines by it).
    pub fd: i32,
    /// The bound address, with the real port when ephemeral (`stats conns` `<fd>:addr`).
    pub addr: Endpoint,
    /// A UDP socket's session entry (`net::udp`): its state and the time of its last command.
    pub udp: Option<Arc<ConnInfo>>,
}

/// Per-worker slot lists of open connections.
#[derive(Debug)]
pub struct ConnRegistry {
    workers: Vec<Mutex<Vec<Option<Arc<ConnInfo>>>>>,
}

impl ConnRegistry {
    pub(crate) fn new(workers: usize) -> ConnRegistry {
        ConnRegistry {
            workers: (0..workers).map(|_| Mutex::new(Vec::new())).collect(),
        }
    }

    /// Publishes `info` as worker `worker`'s connection in slot `slot`.
    pub fn insert(&self, worker: usize, slot: usize, info: Arc<ConnInfo>) {
        let mut slots = self.workers[worker].lock();
        if slots.len() <= slot {
            slots.resize(slot + 1, None);
        }
        slots[slot] = Some(info);
    }

    /// Forgets worker `worker`'s connection in slot `slot`.
    pub fn remove(&self, worker: usize, slot: usize) {
        if let Some(s) = self.workers[worker].lock().get_mut(slot) {
            *s = None;
        }
    }

    /// Runs `visit` on every open connection, holding its worker's mutex meanwhile: the connection's
    /// descriptor stays open and its own until `visit` returns (see the module notes).
    pub(crate) fn for_each(&self, mut visit: impl FnMut(&ConnInfo)) {
        for worker in &self.workers {
            for info in worker.lock().iter().flatten() {
                visit(info);
            }
        }
    }

    /// Every open connection, in file descriptor order.
    pub fn snapshot(&self) -> Vec<Arc<ConnInfo>> {
        let mut all: Vec<Arc<ConnInfo>> = self
            .workers
            .iter()
            .flat_map(|w| w.lock().iter().flatten().cloned().collect::<Vec<_>>())
            .collect();
        all.sort_by_key(|c| c.fd);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_snapshot_in_fd_order() {
        let r = ConnRegistry::new(2);
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        r.insert(1, 3, Arc::new(ConnInfo::new(9, a, a, 100)));
        r.insert(0, 0, Arc::new(ConnInfo::new(7, a, a, 100)));
        let fds: Vec<i32> = r.snapshot().iter().map(|c| c.fd).collect();
        assert_eq!(fds, vec![7, 9]);
        r.remove(1, 3);
        r.remove(1, 42);
        assert_eq!(r.snapshot().len(), 1);
        let c = &r.snapshot()[0];
        c.set_state(ConnState::Nread);
        assert_eq!(c.state().name(), "conn_nread");
    }

    #[test]
    fn only_a_connection_waiting_past_the_timeout_is_claimed_and_only_once() {
        let a: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let c = ConnInfo::new(7, a, a, 100);
        assert!(!c.claim_idle(103, 3), "3 s is not more than 3 s");
        for busy in [ConnState::ParseCmd, ConnState::Nread, ConnState::Mwrite] {
            c.set_state(busy);
            assert!(!c.claim_idle(104, 3), "{busy:?}");
        }
        c.set_state(ConnState::Waiting);
        assert!(c.claim_idle(104, 3));
        assert_eq!(c.state(), ConnState::Closing);
        assert!(!c.claim_idle(105, 3), "claimed once");
        let watcher = ConnInfo::new(8, a, a, 100);
        watcher.set_watching();
        assert!(!watcher.claim_idle(200, 3));
    }
}
