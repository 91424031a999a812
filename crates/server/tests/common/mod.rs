//! Shared helpers for the end-to-end tests: start a server process on a free
//! 127.0.0.1 port, wait until it accepts connections, and stop it on drop.
//!
//! Two kinds of server are supported:
//! - `mrcached` (the binary of this package) is started with `-p 0` and
//!   announces its port with one stdout line `listening on 127.0.0.1:PORT`;
//!   reading that line is the readiness signal.
//! - Debian's `memcached` is started on a port we pick by binding
//!   `127.0.0.1:0` and dropping the listener; readiness is a connect-retry loop
//!   with a deadline. If the port was taken in between, memcached exits and we
//!   retry with another port, a bounded number of times.
//!
//! Every wait is bounded by a deadline, and every child is killed and reaped
//! when its [`Server`] is dropped, so a failing test leaves no process behind.
//!
//! A test that needs a tool cargo does not build (Debian's memcached, memccapable, chromium, pymemcache,
//! dpkg-dev, systemd-analyze, promtool) is `#[ignore = "needs TOOL"]`, so a bare `cargo test` passes;
//! scripts/test.sh installs the tools and runs with `-- --include-ignored`, where a missing tool fails the
//! test with its name ([`require_tool`]), never a silent pass.
//!
//! `MRCACHED_EXTRA_ARGS` (whitespace-separated) is appended to every `mrcached` command line, so
//! scripts/test.sh can run the same suites again under another configuration (a memory layout, an I/O
//! path) without a copy of each test.

#![allow(dead_code)] // each test binary uses a different subset of the helpers

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long a server may take to start accepting connections.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// How many bytes of a server's stderr we keep for diagnostics.
const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// How to install the reference tools, for failure messages.
pub const INSTALL_HINT: &str = "apt-get install memcached libmemcached-tools";

/// Arguments from `MRCACHED_EXTRA_ARGS`, appended to every `mrcached` started here.
pub fn extra_mrcached_args() -> Vec<String> {
    std::env::var("MRCACHED_EXTRA_ARGS")
        .map(|v| v.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Which server program a [`Server`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// Our binary, which prints `listening on ADDR` once it accepts.
    Mrcached(PathBuf),
    /// The reference memcached 1.6.18, readiness by connect-retry.
    Memcached(PathBuf),
}

impl ServerKind {
    /// The `mrcached` binary cargo built for this package's integration tests.
    pub fn mrcached() -> Self {
        ServerKind::Mrcached(PathBuf::from(env!("CARGO_BIN_EXE_mrcached")))
    }

    /// Debian's memcached (`MEMCACHED_BIN` overrides the path). Panics, naming the package to
    /// install, when it is missing: a test that needs the reference server fails without it, it does
    /// not pass by skipping.
    pub fn memcached() -> Self {
        let path = std::env::var_os("MEMCACHED_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/memcached"));
        ServerKind::Memcached(require_tool(path, "memcached"))
    }

    /// A short name for messages.
    pub fn name(&self) -> &'static str {
        match self {
            ServerKind::Mrcached(_) => "mrcached",
            ServerKind::Memcached(_) => "memcached",
        }
    }
}

/// The path of an external reference tool. Panics with the tool's name and how to install it when it
/// is missing.
pub fn require_tool(path: impl Into<PathBuf>, what: &str) -> PathBuf {
    let path = path.into();
    assert!(
        path.is_file(),
        "{what} not found at {path:?}: this test needs it; install it ({INSTALL_HINT})"
    );
    path
}

/// A running server process, killed and reaped on drop.
pub struct Server {
    kind: ServerKind,
    child: Child,
    addr: SocketAddr,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
}

impl Server {
    /// Starts `kind` bound to 127.0.0.1 on a free port with the extra memcached
    /// flags `args` (for example `["-B", "ascii"]`). `-U 0 -l 127.0.0.1` and the
    /// port flag are always added, identically for both kinds.
    pub fn start(kind: &ServerKind, args: &[&str]) -> Server {
        match kind {
            ServerKind::Mrcached(path) => Self::start_mrcached(kind, path, args),
            ServerKind::Memcached(path) => Self::start_memcached(kind, path, args),
        }
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Which program this is.
    pub fn kind(&self) -> &ServerKind {
        &self.kind
    }

    /// Opens a client connection with the given read/write timeout.
    pub fn connect(&self, timeout: Duration) -> std::io::Result<TcpStream> {
        let stream = TcpStream::connect_timeout(&self.addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    /// The server's process id (to send it signals).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` if the process has exited.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last few KiB the server wrote to stderr, for failure messages.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&tail).into_owned()
    }

    fn start_mrcached(kind: &ServerKind, path: &PathBuf, args: &[&str]) -> Server {
        let mut command = Command::new(path);
        command
            .args(["-U", "0", "-l", "127.0.0.1", "-p", "0"])
            .args(user_args())
            .args(args)
            .args(extra_mrcached_args());
        let (child, stderr_tail, announced) = spawn_announced(&mut command);
        let mut server = Server {
            kind: kind.clone(),
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            stderr_tail,
        };
        match announced {
            Ok(addr) => {
                server.addr = addr;
                server
            }
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "{path:?} did not print `listening on ADDR` within {STARTUP_TIMEOUT:?}; \
                 stderr:\n{}",
                server.stderr_tail()
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!(
                "{path:?} closed stdout before printing `listening on ADDR` (exit: {:?}); \
                 stderr:\n{}",
                server.exit_status(),
                server.stderr_tail()
            ),
        }
    }

    fn start_memcached(kind: &ServerKind, path: &PathBuf, args: &[&str]) -> Server {
        const ATTEMPTS: usize = 5;
        let mut last_error = String::new();
        for _ in 0..ATTEMPTS {
            let port = free_port();
            let mut command = Command::new(path);
            command
                .args(["-U", "0", "-l", "127.0.0.1", "-p", &port.to_string()])
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .args(user_args());
            let mut child = command
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {path:?}: {e}"));
            let stderr_tail = collect_stderr(&mut child);
            let mut server = Server {
                kind: kind.clone(),
                child,
                addr: SocketAddr::from(([127, 0, 0, 1], port)),
                stderr_tail,
            };
            match server.wait_until_accepting() {
                Ok(()) => return server,
                Err(e) => last_error = e,
            }
        }
        panic!("memcached did not start after {ATTEMPTS} attempts: {last_error}");
    }

    /// Connect-retry loop with a deadline; fails early if the process exits.
    ///
    /// A connect to a loopback port nothing listens on yet can succeed against itself: when the kernel
    /// picks the target port as the probe's own source port, TCP's simultaneous open connects the
    /// socket to itself, and that socket then holds the port the server is about to bind (a CI run saw
    /// memcached's first case reset and every later connect refused). Such a probe does not count,
    /// nor does one answered while the server has exited (another process took the port first), nor
    /// one answered by a listener that is not this child's (another test's server on the same port,
    /// answering while ours is still failing to bind): see [`listens_on`].
    fn wait_until_accepting(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let mut backoff = Duration::from_millis(2);
        loop {
            if let Ok(probe) = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)) {
                if probe.local_addr().ok() != probe.peer_addr().ok()
                    && self.exit_status().is_none()
                    && listens_on(self.pid(), self.port()) != Some(false)
                {
                    return Ok(());
                }
            }
            if let Some(status) = self.exit_status() {
                return Err(format!(
                    "exited with {status}; stderr:\n{}",
                    self.stderr_tail()
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "not accepting on {} after {STARTUP_TIMEOUT:?}",
                    self.addr
                ));
            }
            thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP/1.0 GET against the admin port; retries the connect until `deadline` (start-up).
pub fn http_get(port: u16, path: &str) -> (u16, String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut stream = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => break s,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::yield_now();
            }
            Err(e) => panic!("admin port {port}: {e}"),
        }
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

/// Ports [`free_port`] picks from: below Linux's default ephemeral range (32768–60999), so the
/// kernel does not hand the port to a client's source port or to a `-p 0` server between our pick
/// and the server's bind.
const PICKED_PORTS: std::ops::Range<u16> = 20_000..32_768;

/// A port that was free a moment ago: a random one of [`PICKED_PORTS`] that binds, released at once
/// (or, if none of a few tries binds, one the kernel picks).
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    static PICKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    for _ in 0..16 {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u64(PICKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let span = u64::from(PICKED_PORTS.end - PICKED_PORTS.start);
        let port = PICKED_PORTS.start + (hasher.finish() % span) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

/// Whether process `pid` holds the socket listening on 127.0.0.1:`port`, read from Linux's
/// `/proc/net/tcp` and `/proc/PID/fd`; `None` where those cannot be read (the connect probe alone
/// then decides).
pub fn listens_on(pid: u32, port: u16) -> Option<bool> {
    const LISTEN: &str = "0A";
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let local = format!("0100007F:{port:04X}");
    let inode = table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&local.as_str()) && fields.get(3) == Some(&LISTEN))
            .then(|| fields.get(9).map(|inode| format!("socket:[{inode}]")))
            .flatten()
    });
    let Some(inode) = inode else {
        return Some(false);
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| target.as_os_str() == inode.as_str())
    }))
}

/// `-u root` when the tests run as root, else nothing: memcached and mrcached both refuse to run as
/// root without `-u` (memcached's own test harness adds the same two words).
pub fn user_args() -> &'static [&'static str] {
    if running_as_root() {
        &["-u", "root"]
    } else {
        &[]
    }
}

fn running_as_root() -> bool {
    // The effective uid is the second field of `Uid:` in /proc/self/status.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|id| id == "0"))
        })
        .unwrap_or(false)
}

/// Drains the child's stderr in a thread, keeping only the last few KiB.
fn collect_stderr(child: &mut Child) -> Arc<Mutex<Vec<u8>>> {
    let tail = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut stderr) = child.stderr.take() {
        let tail = Arc::clone(&tail);
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                tail.extend_from_slice(&buf[..n]);
                let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                tail.drain(..excess);
            }
        });
    }
    tail
}

/// Spawns `command` with no stdin and its stdout and stderr piped; panics, naming it, if it cannot run.
fn spawn_piped(command: &mut Command) -> Child {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"))
}

/// Exit status and output of `kind` started on 127.0.0.1 with `args`, which it should refuse (a
/// server that starts anyway is killed at `timeout`, giving no status).
pub fn start_refused(kind: &ServerKind, args: &[&str], timeout: Duration) -> (Option<i32>, String) {
    let (ServerKind::Mrcached(path) | ServerKind::Memcached(path)) = kind;
    let port = free_port().to_string();
    let mut command = Command::new(path);
    command
        .args(["-p", &port, "-l", "127.0.0.1", "-U", "0"])
        .args(user_args())
        .args(args);
    run_with_deadline(&mut command, timeout)
}

/// Runs a command to completion with a deadline, returning its exit code and
/// combined stdout+stderr; the child is killed if the deadline passes.
pub fn run_with_deadline(command: &mut Command, timeout: Duration) -> (Option<i32>, String) {
    let mut child = spawn_piped(command);
    let output = Arc::new(Mutex::new(Vec::new()));
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut pipe| {
        let output = Arc::clone(&output);
        thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                output
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&buf[..n]);
            }
        })
    })
    .collect();

    let deadline = Instant::now() + timeout;
    let code = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    for reader in readers {
        let _ = reader.join();
    }
    let text =
        String::from_utf8_lossy(&output.lock().unwrap_or_else(|e| e.into_inner())).into_owned();
    (code, text)
}

/// How long a [`LineClient`] waits for a reply line.
pub const LINE_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// A text-protocol client that reads replies line by line (the tenants and ops tests).
pub struct LineClient {
    reader: BufReader<TcpStream>,
}

impl LineClient {
    pub fn connect(port: u16) -> LineClient {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(LINE_CLIENT_TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        LineClient {
            reader: BufReader::new(s),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).unwrap();
    }

    pub fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).expect("a reply line");
        l.trim_end_matches("\r\n").to_string()
    }

    /// Sends `bytes` in one write and reads `lines` reply lines.
    pub fn exchange(&mut self, bytes: &[u8], lines: usize) -> Vec<String> {
        self.send(bytes);
        (0..lines).map(|_| self.line()).collect()
    }

    /// Sends `cmd` and returns the reply: one line, or every line through `END` for retrievals and stats.
    pub fn call(&mut self, cmd: &str) -> String {
        self.send(cmd.as_bytes());
        self.reply()
    }

    /// Reads one reply (see [`LineClient::call`]), to a request sent before.
    pub fn reply(&mut self) -> String {
        let first = self.line();
        if !(first.starts_with("VALUE ") || first.starts_with("STAT ") || first.starts_with("VA "))
        {
            return first;
        }
        let mut all = first;
        loop {
            let l = self.line();
            let done = l == "END" || all.starts_with("VA ");
            all.push('\n');
            all.push_str(&l);
            if done {
                return all;
            }
        }
    }

    pub fn auth(&mut self, user: &str, password: &str) -> String {
        let token = format!("{user} {password}");
        self.call(&format!("set auth 0 0 {}\r\n{token}\r\n", token.len()))
    }
}

/// A numeric field of `/proc/PID/status` (`VmRSS:` in kB, `Threads:`); panics naming it when absent.
pub fn proc_status(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the server's /proc status")
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc status"))
}

/// The value of `STAT <name> <value>` in a reply of `stats` lines.
pub fn stat_value(reply: &str, name: &str) -> Option<String> {
    let name = format!("STAT {name} ");
    reply
        .lines()
        .find_map(|l| l.strip_prefix(&name))
        .map(str::to_string)
}

/// The `.txt` files directly in `dir`, in name order (the conformance case files).
pub fn txt_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .collect();
    files.sort();
    files
}

/// A process started by [`Announced::start`], killed and reaped on drop.
pub struct Announced {
    /// The process (for its pid and exit status).
    pub child: Child,
    /// The address from its `listening on ADDR` line.
    pub addr: SocketAddr,
}

impl Announced {
    /// Starts `command` (an `mrcached -p 0`, or a script that execs one) and waits, up to the start-up
    /// deadline, for its `listening on ADDR` line on stdout; panics with its exit status and output
    /// otherwise. Stdout is drained afterwards, so the process never blocks on it.
    pub fn start(command: &mut Command) -> Announced {
        let (mut child, stderr_tail, announced) = spawn_announced(command);
        match announced {
            Ok(addr) => Announced { child, addr },
            Err(e) => {
                let _ = child.kill();
                let status = child.wait();
                let tail = stderr_tail
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                panic!(
                    "{command:?} did not announce its address ({e:?}; exit {status:?}); \
                     stderr:\n{}",
                    String::from_utf8_lossy(&tail)
                );
            }
        }
    }
}

/// Spawns `command` with its stdout and stderr piped and waits, up to the start-up deadline, for
/// its `listening on ADDR` line; a thread goes on draining stdout, so the process never blocks on
/// it. Returns the child, its stderr's tail, and the address or why none came.
fn spawn_announced(
    command: &mut Command,
) -> (
    Child,
    Arc<Mutex<Vec<u8>>>,
    Result<SocketAddr, mpsc::RecvTimeoutError>,
) {
    let mut child = spawn_piped(command);
    let stderr_tail = collect_stderr(&mut child);
    let stdout = child.stdout.take().expect("stdout is piped");
    let (line_tx, line_rx) = mpsc::channel::<String>();
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
            let _ = line_tx.send(std::mem::take(&mut line));
        }
    });
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    let announced = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match line_rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(addr) = line.trim_end().strip_prefix("listening on ") {
                    break Ok(addr
                        .parse()
                        .unwrap_or_else(|e| panic!("bad address in {line:?}: {e}")));
                }
            }
            Err(e) => break Err(e),
        }
    };
    (child, stderr_tail, announced)
}

impl Drop for Announced {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nobody's user and group ids, from /etc/passwd.
pub fn nobody() -> (u32, u32) {
    let passwd = std::fs::read_to_string("/etc/passwd").expect("/etc/passwd");
    passwd
        .lines()
        .find_map(|l| {
            let fields: Vec<&str> = l.split(':').collect();
            (fields.first() == Some(&"nobody"))
                .then(|| (fields[2].parse().unwrap(), fields[3].parse().unwrap()))
        })
        .expect("a nobody user in /etc/passwd")
}
