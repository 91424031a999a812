//! The log bus behind memcached's `watch`: connections that ask for log streams (fetchers, mutations,
//! evictions, connevents, ...) get one line per event, in memcached 1.6.18's format.
//!
//! Producers (the sessions, and the engine through its eviction observer) call [`LogBus::emit`] when
//! [`LogBus::wants`] says some watcher follows that stream: one relaxed load when nobody watches. A
//! line is formatted once and appended to each interested watcher's buffer; a writer thread (started
//! with the first watcher) sends the buffers on a duplicate of the watcher's socket with non-blocking
//! `send`, so no producer ever waits on a slow watcher.
//!
//! Invariants:
//! - At most [`MAX_WATCHERS`] watchers (memcached's limit); a watcher's unsent bytes never exceed
//!   [`WATCHER_BUFFER_BYTES`]: a line that does not fit is dropped and counted, and the next line that
//!   fits is preceded by memcached's `[skipped: N]` notice.
//! - A watcher's first bytes are `OK\r\n`, then its lines in the order they were emitted (`gid` orders
//!   them server-wide, as in memcached); lines end in `\n`, as memcached's do.
//! - The bus lock is a leaf: nothing else is locked while it is held (the eviction observer runs under a
//!   shard lock and takes only this one). The writer holds it while it sends, with `MSG_DONTWAIT`.
//! - A watcher goes when its session ends (`remove`) or when a send fails (the client went away).

use std::io::Write as _;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::{Condvar, Mutex};

/// Stream bits, by memcached's names (`watch fetchers mutations ...`).
pub mod stream {
    /// `fetchers`: every key a retrieval command (get, gets, gat, gats, mg; binary get and gat) looks
    /// up (`item_get`).
    pub const FETCHERS: u32 = 1;
    /// `mutations`: every storage command (text, `ms` or binary) that reaches the cache (`item_store`).
    pub const MUTATIONS: u32 = 1 << 1;
    /// `evictions`: every live item evicted to make room (`eviction`).
    pub const EVICTIONS: u32 = 1 << 2;
    /// `connevents`: connections opened and closed (`conn_new`, `conn_close`).
    pub const CONNEVENTS: u32 = 1 << 3;
    /// `rawcmds`, `sysevents`, `proxyreqs`, `proxyevents`, `proxyuser`: accepted as memcached accepts
    /// them; mrcached has no source for them (memcached 1.6.18 logs nothing on `rawcmds` either, and the
    /// proxy streams need its proxy), so they stay silent.
    pub const SILENT: u32 = 1 << 4;
}

/// memcached's `WATCHER_LIMIT`.
pub const MAX_WATCHERS: usize = 20;
/// Unsent bytes one watcher may hold (memcached's `LOGGER_WATCHER_BUF_SIZE`).
pub const WATCHER_BUFFER_BYTES: usize = 256 * 1024;
/// How long the writer sleeps when it has nothing to send (it is woken as soon as a line arrives).
const WRITER_IDLE: Duration = Duration::from_millis(100);

/// The streams `watch <args>` names, or `None` for an unknown name (memcached answers `ERROR`). No
/// name is memcached's default, `fetchers`.
pub fn parse_streams(args: &[u8]) -> Option<u32> {
    let mut mask = 0;
    for name in args.split(|&b| b == b' ').filter(|n| !n.is_empty()) {
        mask |= match name {
            b"fetchers" => stream::FETCHERS,
            b"mutations" => stream::MUTATIONS,
            b"evictions" => stream::EVICTIONS,
            b"connevents" => stream::CONNEVENTS,
            b"rawcmds" | b"sysevents" | b"proxyreqs" | b"proxyevents" | b"proxyuser" => {
                stream::SILENT
            }
            _ => return None,
        };
    }
    Some(if mask == 0 { stream::FETCHERS } else { mask })
}

/// Why a watcher could not be added; `reply` is memcached's line.
#[derive(Debug, PartialEq, Eq)]
pub enum AddError {
    /// [`MAX_WATCHERS`] watch already.
    TooMany,
    /// The socket could not be duplicated.
    Failed,
}

impl AddError {
    /// memcached's reply.
    pub fn reply(&self) -> &'static str {
        match self {
            AddError::TooMany => "WATCHER_TOO_MANY log watcher limit reached",
            AddError::Failed => "WATCHER_FAILED failed to add log watcher",
        }
    }
}

struct Watcher {
    id: u64,
    fd: OwnedFd,
    mask: u32,
    buf: Vec<u8>,
    skipped: u64,
}

#[derive(Default)]
struct State {
    watchers: Vec<Watcher>,
    next_id: u64,
    writer_started: bool,
}

/// Counters memcached reports in `stats` (`log_watchers`, `log_watcher_sent`, ...).
#[derive(Debug, Default)]
pub struct LogCounters {
    /// Lines emitted to at least one watcher (`log_worker_written`).
    pub written: AtomicU64,
    /// Lines a watcher missed because its buffer was full (`log_watcher_skipped`).
    pub skipped: AtomicU64,
    /// Lines handed to watchers' buffers (`log_watcher_sent`).
    pub sent: AtomicU64,
}

struct Inner {
    mask: AtomicU32,
    watchers: AtomicU32,
    gid: AtomicU64,
    state: Mutex<State>,
    wake: Condvar,
    counters: LogCounters,
    stopping: AtomicBool,
}

impl Inner {
    /// Republishes the streams watched and the watcher count after `state.watchers` changed.
    fn refresh(&self, state: &State) {
        let mask = state.watchers.iter().fold(0, |m, w| m | w.mask);
        self.mask.store(mask, Relaxed);
        self.watchers.store(state.watchers.len() as u32, Relaxed);
    }
}

/// The server's log bus (one per server, in `ServerContext`).
#[derive(Clone)]
pub struct LogBus {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LogBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogBus")
            .field("watchers", &self.watchers())
            .finish()
    }
}

impl Default for LogBus {
    fn default() -> Self {
        LogBus::new()
    }
}

impl LogBus {
    /// A bus with no watchers (no thread until the first one).
    pub fn new() -> LogBus {
        LogBus {
            inner: Arc::new(Inner {
                mask: AtomicU32::new(0),
                watchers: AtomicU32::new(0),
                gid: AtomicU64::new(0),
                state: Mutex::new(State::default()),
                wake: Condvar::new(),
                counters: LogCounters::default(),
                stopping: AtomicBool::new(false),
            }),
        }
    }

    /// Whether some watcher follows `stream` (one relaxed load).
    #[inline]
    pub fn wants(&self, stream: u32) -> bool {
        self.inner.mask.load(Relaxed) & stream != 0
    }

    /// Watchers now (`stats` `log_watchers`).
    pub fn watchers(&self) -> u32 {
        self.inner.watchers.load(Relaxed)
    }

    /// The bus's counters.
    pub fn counters(&self) -> &LogCounters {
        &self.inner.counters
    }

    /// Makes the socket `fd` a watcher of `mask`: it receives `OK\r\n`, then its streams' lines.
    pub fn add_watcher(&self, fd: i32, mask: u32) -> Result<u64, AddError> {
        let mut state = self.inner.state.lock();
        if state.watchers.len() >= MAX_WATCHERS {
            return Err(AddError::TooMany);
        }
        // SAFETY: dup(2) of a descriptor the caller's connection holds open; the copy is owned here.
        let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if dup < 0 {
            return Err(AddError::Failed);
        }
        // SAFETY: `dup` is a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(dup) };
        state.next_id += 1;
        let id = state.next_id;
        state.watchers.push(Watcher {
            id,
            fd,
            mask,
            buf: b"OK\r\n".to_vec(),
            skipped: 0,
        });
        self.inner.refresh(&state);
        if !state.writer_started {
            state.writer_started = true;
            let weak = Arc::downgrade(&self.inner);
            let spawned = std::thread::Builder::new()
                .name("mrcached-logger".into())
                .spawn(move || writer(weak));
            if spawned.is_err() {
                state.writer_started = false;
                state.watchers.retain(|w| w.id != id);
                self.inner.refresh(&state);
                return Err(AddError::Failed);
            }
        }
        self.inner.wake.notify_one();
        Ok(id)
    }

    /// Ends watcher `id` (its session ended); unsent lines are dropped.
    pub fn remove(&self, id: u64) {
        let mut state = self.inner.state.lock();
        state.watchers.retain(|w| w.id != id);
        self.inner.refresh(&state);
    }

    /// Emits one line of `stream`: `ts=<sec>.<usec> gid=<n> ` then what `body` writes (which must not
    /// end the line). Call only when [`LogBus::wants`] the stream, for cheapness; it checks again.
    pub fn emit(&self, stream: u32, body: impl FnOnce(&mut Vec<u8>)) {
        if !self.wants(stream) {
            return;
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let gid = self.inner.gid.fetch_add(1, Relaxed) + 1;
        let mut line = Vec::with_capacity(160);
        // memcached prints `%d.%d`: the microseconds are not zero-padded.
        let _ = write!(
            line,
            "ts={}.{} gid={gid} ",
            now.as_secs(),
            now.subsec_micros()
        );
        body(&mut line);
        line.push(b'\n');
        let counters = &self.inner.counters;
        counters.written.fetch_add(1, Relaxed);
        let mut state = self.inner.state.lock();
        let mut woke = false;
        for w in state.watchers.iter_mut().filter(|w| w.mask & stream != 0) {
            let notice = if w.skipped > 0 {
                format!("[skipped: {}]\n", w.skipped)
            } else {
                String::new()
            };
            if w.buf.len() + notice.len() + line.len() > WATCHER_BUFFER_BYTES {
                w.skipped += 1;
                counters.skipped.fetch_add(1, Relaxed);
                continue;
            }
            woke |= w.buf.is_empty();
            w.buf.extend_from_slice(notice.as_bytes());
            w.buf.extend_from_slice(&line);
            w.skipped = 0;
            counters.sent.fetch_add(1, Relaxed);
        }
        drop(state);
        if woke {
            self.inner.wake.notify_one();
        }
    }

    /// Stops the writer thread (the server is shutting down).
    pub fn stop(&self) {
        self.inner.stopping.store(true, Relaxed);
        self.inner.wake.notify_one();
    }
}

/// The writer thread: sends each watcher's buffer without blocking; ends when the bus is dropped or
/// stopped.
fn writer(bus: Weak<Inner>) {
    loop {
        let Some(inner) = bus.upgrade() else { return };
        if inner.stopping.load(Relaxed) {
            return;
        }
        let mut state = inner.state.lock();
        if state.watchers.iter().all(|w| w.buf.is_empty()) {
            inner.wake.wait_for(&mut state, WRITER_IDLE);
        }
        let mut failed = Vec::new();
        for w in state.watchers.iter_mut().filter(|w| !w.buf.is_empty()) {
            match send_some(&w.fd, &w.buf) {
                Ok(n) => {
                    w.buf.drain(..n);
                }
                Err(_) => failed.push(w.id),
            }
        }
        if !failed.is_empty() {
            state.watchers.retain(|w| !failed.contains(&w.id));
            inner.refresh(&state);
        }
        let backlogged = state.watchers.iter().any(|w| !w.buf.is_empty());
        drop(state);
        drop(inner);
        if backlogged {
            // The socket is full: give the client a moment to read.
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Sends what the socket takes now; `Ok(0)` when it is full.
fn send_some(fd: &OwnedFd, bytes: &[u8]) -> std::io::Result<usize> {
    // SAFETY: send(2) reads `bytes` for the call; the descriptor is owned by the watcher.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    if n >= 0 {
        return Ok(n as usize);
    }
    let e = std::io::Error::last_os_error();
    match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted => Ok(0),
        _ => Err(e),
    }
}

/// A `fetchers` line: `type=item_get key=<k> status=<s> clsid=<c> cfd=<fd> size=<n>`; `found` is the
/// item's class and value length, or memcached's miss status (`not_found`, `expired`, `flushed`).
pub fn log_fetch(log: &LogBus, key: &[u8], found: Result<(u8, usize), &'static str>, fd: i32) {
    log.emit(stream::FETCHERS, |line| {
        line.extend_from_slice(b"type=item_get key=");
        write_key(line, key);
        let (status, class, size) = match found {
            Ok((class, size)) => ("found", class, size),
            Err(miss) => (miss, 0, 0),
        };
        let _ = write!(line, " status={status} clsid={class} cfd={fd} size={size}");
    });
}

/// A `mutations` line: `type=item_store key=<k> status=<s> cmd=<c> ttl=<t> clsid=<c> cfd=<fd>
/// size=<n>`, with memcached's status and command names.
pub struct StoreEvent<'a> {
    /// The key.
    pub key: &'a [u8],
    /// `stored`, `not_stored`, `exists`, `not_found`, `no_memory`.
    pub status: &'static str,
    /// `set`, `add`, `replace`, `append`, `prepend`, `cas`.
    pub cmd: &'static str,
    /// Seconds to live as given (0: never expires).
    pub ttl: i64,
    /// The item's slab class.
    pub class: u8,
    /// The connection.
    pub fd: i32,
    /// The value's length.
    pub size: usize,
}

/// Emits a [`StoreEvent`] on the `mutations` stream.
pub fn log_store(log: &LogBus, e: &StoreEvent<'_>) {
    log.emit(stream::MUTATIONS, |line| {
        line.extend_from_slice(b"type=item_store key=");
        write_key(line, e.key);
        let _ = write!(
            line,
            " status={} cmd={} ttl={} clsid={} cfd={} size={}",
            e.status, e.cmd, e.ttl, e.class, e.fd, e.size
        );
    });
}

/// memcached's `uriencode` of a key: letters, digits and `-._~` as they are, every other byte `%XX`.
pub fn write_key(out: &mut Vec<u8>, key: &[u8]) {
    for &b in key {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;

    #[test]
    fn streams_parse_as_memcached_names_them() {
        assert_eq!(parse_streams(b""), Some(stream::FETCHERS));
        assert_eq!(
            parse_streams(b" fetchers  mutations"),
            Some(stream::FETCHERS | stream::MUTATIONS)
        );
        assert_eq!(parse_streams(b" proxyreqs"), Some(stream::SILENT));
        assert_eq!(parse_streams(b" deletions"), None);
    }

    #[test]
    fn keys_are_uri_encoded() {
        let mut out = Vec::new();
        write_key(&mut out, b"a%b&c=d~x");
        assert_eq!(out, b"a%25b%26c%3Dd~x");
    }

    #[test]
    fn a_watcher_gets_ok_then_its_streams_and_a_slow_one_skips() {
        let bus = LogBus::new();
        let (ours, theirs) = UnixStream::pair().unwrap();
        let id = bus
            .add_watcher(ours.as_raw_fd(), stream::MUTATIONS)
            .unwrap();
        drop(ours);
        assert!(bus.wants(stream::MUTATIONS) && !bus.wants(stream::FETCHERS));
        bus.emit(stream::FETCHERS, |l| l.extend_from_slice(b"type=item_get"));
        bus.emit(stream::MUTATIONS, |l| {
            l.extend_from_slice(b"type=item_store")
        });
        theirs
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        while !got.ends_with(b"\n") || got.len() < 5 {
            let n = (&theirs).read(&mut buf).unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8(got).unwrap();
        assert!(text.starts_with("OK\r\nts="), "{text}");
        assert!(text.ends_with(" gid=1 type=item_store\n"), "{text}");
        // A watcher that never reads fills its buffer and skips lines; nothing blocks.
        let big = vec![b'x'; 4096];
        for _ in 0..(4 * WATCHER_BUFFER_BYTES / big.len()) {
            bus.emit(stream::MUTATIONS, |l| l.extend_from_slice(&big));
        }
        assert!(bus.counters().skipped.load(Relaxed) > 0);
        bus.remove(id);
        assert_eq!(bus.watchers(), 0);
        assert!(!bus.wants(stream::MUTATIONS));
        bus.stop();
    }
}
