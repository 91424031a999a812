//! `-s PATH` and `-a MASK`: mrcached on a UNIX stream socket, as memcached 1.6.18 serves one, on both I/O
//! paths (the default, io_uring where the kernel has it, and `-o io=epoll`): the socket file and its
//! permissions, a stale socket file replaced, errors naming `-s`, TCP off, the text, meta and binary
//! protocols over `std::os::unix::net::UnixStream`, `stats conns` and `stats settings` in memcached's
//! forms, and pymemcache as a real client.
//!
//! Each server gets a directory of its own under the system temp directory, removed on drop. Readiness
//! is a connect to the socket, retried until a deadline (nothing is printed on stdout for `-s`).

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{extra_mrcached_args, STARTUP_TIMEOUT};

const TIMEOUT: Duration = Duration::from_secs(10);

/// A directory of the test's own, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "mrcached-unix-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// mrcached on a UNIX socket, killed and reaped on drop.
struct UnixServer {
    child: Child,
    socket: PathBuf,
    _dir: TempDir,
}

impl UnixServer {
    /// Starts mrcached with `-s DIR/m.sock` and `args`, and waits until the socket accepts.
    fn start(args: &[&str]) -> UnixServer {
        let dir = TempDir::new("srv");
        let socket = dir.path("m.sock");
        UnixServer::start_at(dir, socket, args)
    }

    fn start_at(dir: TempDir, socket: PathBuf, args: &[&str]) -> UnixServer {
        let mut child = spawn(&socket, args);
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if UnixStream::connect(&socket).is_ok() {
                return UnixServer {
                    child,
                    socket,
                    _dir: dir,
                };
            }
            if let Ok(Some(status)) = child.try_wait() {
                let mut err = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut err);
                panic!("mrcached exited with {status} before accepting on {socket:?}: {err}");
            }
            assert!(
                Instant::now() < deadline,
                "mrcached did not accept on {socket:?} within {STARTUP_TIMEOUT:?}"
            );
            std::thread::yield_now();
        }
    }

    fn connect(&self) -> UnixStream {
        let s = UnixStream::connect(&self.socket).unwrap();
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s.set_write_timeout(Some(TIMEOUT)).unwrap();
        s
    }
}

impl Drop for UnixServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// mrcached with `-s socket` (and `-p 0`, which `-s` turns off), `MRCACHED_EXTRA_ARGS`, then `args`.
fn spawn(socket: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_mrcached"))
        .args(["-p", "0", "-s"])
        .arg(socket)
        .args(common::user_args())
        .args(extra_mrcached_args())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mrcached")
}

/// Sends `request` and reads until the reply ends with `end`.
fn exchange(s: &mut UnixStream, request: &[u8], end: &[u8]) -> Vec<u8> {
    s.write_all(request).unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    while !reply.ends_with(end) {
        let n = s.read(&mut buf).expect("reply before the timeout");
        assert!(
            n > 0,
            "connection closed; got {:?}",
            String::from_utf8_lossy(&reply)
        );
        reply.extend_from_slice(&buf[..n]);
    }
    reply
}

fn text(s: &mut UnixStream, request: &str, end: &str) -> String {
    String::from_utf8(exchange(s, request.as_bytes(), end.as_bytes())).unwrap()
}

/// A binary-protocol request header (24 bytes) followed by extras, key and value.
fn binary_request(opcode: u8, opaque: u32, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
    let body = (extras.len() + key.len() + value.len()) as u32;
    let mut r = vec![0x80, opcode];
    r.extend_from_slice(&(key.len() as u16).to_be_bytes());
    r.push(extras.len() as u8);
    r.extend_from_slice(&[0, 0, 0]);
    r.extend_from_slice(&body.to_be_bytes());
    r.extend_from_slice(&opaque.to_be_bytes());
    r.extend_from_slice(&[0; 8]);
    r.extend_from_slice(extras);
    r.extend_from_slice(key);
    r.extend_from_slice(value);
    r
}

/// Reads one binary response: (status, opaque, value after extras and key).
fn binary_response(s: &mut UnixStream) -> (u16, u32, Vec<u8>) {
    let mut header = [0u8; 24];
    s.read_exact(&mut header).unwrap();
    assert_eq!(header[0], 0x81, "response magic");
    let key_len = u16::from_be_bytes([header[2], header[3]]) as usize;
    let extras_len = header[4] as usize;
    let status = u16::from_be_bytes([header[6], header[7]]);
    let body = u32::from_be_bytes(header[8..12].try_into().unwrap()) as usize;
    let opaque = u32::from_be_bytes(header[12..16].try_into().unwrap());
    let mut rest = vec![0u8; body];
    s.read_exact(&mut rest).unwrap();
    (status, opaque, rest[extras_len + key_len..].to_vec())
}

/// Text, meta and binary clients, a large value, and what `stats` says of the socket, on one I/O path.
fn serves_every_protocol(io: &[&str]) {
    let mut args = vec!["-a", "0750"];
    args.extend_from_slice(io);
    let server = UnixServer::start(&args);
    let meta = std::fs::symlink_metadata(&server.socket).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o750, "-a 0750");

    let mut c = server.connect();
    assert_eq!(
        text(&mut c, "set foo 5 0 6\r\nfooval\r\n", "\r\n"),
        "STORED\r\n"
    );
    assert_eq!(
        text(&mut c, "get foo\r\n", "END\r\n"),
        "VALUE foo 5 6\r\nfooval\r\nEND\r\n"
    );
    assert_eq!(
        text(&mut c, "mg foo v f\r\nmn\r\n", "MN\r\n"),
        "VA 6 f5\r\nfooval\r\nMN\r\n"
    );
    assert_eq!(text(&mut c, "incr n 1\r\n", "\r\n"), "NOT_FOUND\r\n");

    // A value larger than the read and write buffers, both ways.
    let big: String = (0..300_000)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    assert_eq!(
        text(
            &mut c,
            &format!("set big 0 0 {}\r\n{big}\r\n", big.len()),
            "\r\n"
        ),
        "STORED\r\n"
    );
    assert_eq!(
        text(&mut c, "get big\r\n", "END\r\n"),
        format!("VALUE big 0 {}\r\n{big}\r\nEND\r\n", big.len())
    );

    // The binary protocol on a connection of its own (negotiated from the first byte).
    let mut b = server.connect();
    b.write_all(&binary_request(0x00, 7, &[], b"foo", &[]))
        .unwrap();
    let (status, opaque, value) = binary_response(&mut b);
    assert_eq!((status, opaque, value.as_slice()), (0, 7, &b"fooval"[..]));
    let extras = [0u8, 0, 0, 1, 0, 0, 0, 0];
    b.write_all(&binary_request(0x01, 8, &extras, b"bin", b"x"))
        .unwrap();
    assert_eq!(binary_response(&mut b).0, 0, "binary set");
    assert_eq!(
        text(&mut c, "get bin\r\n", "END\r\n"),
        "VALUE bin 1 1\r\nx\r\nEND\r\n"
    );

    // memcached's forms: the listener's path, the client's unnamed end, the settings.
    let path = server.socket.display().to_string();
    let conns = text(&mut c, "stats conns\r\n", "END\r\n");
    assert!(conns.contains(&format!(":addr unix:{path}\r\n")), "{conns}");
    assert!(conns.contains(":state conn_listening\r\n"), "{conns}");
    assert!(conns.contains(":addr ?:<AF 0>\r\n"), "{conns}");
    assert!(
        conns.contains(&format!(":listen_addr unix:{path}\r\n")),
        "{conns}"
    );
    assert!(!conns.contains("tcp"), "-s turns TCP off: {conns}");
    let settings = text(&mut c, "stats settings\r\n", "END\r\n");
    assert!(
        settings.contains(&format!("STAT domain_socket {path}\r\n")),
        "{settings}"
    );
    assert!(settings.contains("STAT umask 750\r\n"), "{settings}");
    assert!(settings.contains("STAT udpport 0\r\n"), "{settings}");
}

#[test]
fn serves_text_meta_and_binary_on_the_default_io_path() {
    serves_every_protocol(&[]);
}

#[test]
fn serves_text_meta_and_binary_on_epoll() {
    serves_every_protocol(&["-o", "io=epoll"]);
}

/// pymemcache, a real client, over the socket (its `Client('/path')` form), on both I/O paths.
fn pymemcache_works(io: &[&str]) {
    let python = common::require_tool("/usr/bin/python3", "python3");
    let check = Command::new(&python)
        .args(["-c", "import pymemcache"])
        .status()
        .unwrap();
    assert!(
        check.success(),
        "this test needs python3-pymemcache (apt-get install python3-pymemcache)"
    );
    let server = UnixServer::start(io);
    let script = r#"
import sys
from pymemcache.client.base import Client
c = Client(sys.argv[1], connect_timeout=10, timeout=10)
assert c.set("a", b"1") is True
assert c.get("a") == b"1"
assert c.set_many({"b": b"2", "c": b"3"}) == []
assert c.get_many(["a", "b", "c", "missing"]) == {"a": b"1", "b": b"2", "c": b"3"}
assert c.incr("a", 41) == 42
value, cas = c.gets("b")
assert value == b"2"
assert c.cas("b", b"22", cas) is True
assert c.get("b") == b"22"
assert c.delete("c") is True
assert c.get("c") is None
big = b"z" * 500000
assert c.set("big", big) is True
assert c.get("big") == big
stats = c.stats()
assert stats[b"curr_items"] >= 3, stats
settings = c.stats("settings")
assert settings[b"domain_socket"] == sys.argv[1].encode(), settings
print("ok")
"#;
    let out = Command::new(&python)
        .args(["-c", script])
        .arg(&server.socket)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "pymemcache over {:?}: {}\n{}",
        server.socket,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs pymemcache (python3-pymemcache)"]
fn pymemcache_over_the_socket_on_the_default_io_path() {
    pymemcache_works(&[]);
}

#[test]
#[ignore = "needs pymemcache (python3-pymemcache)"]
fn pymemcache_over_the_socket_on_epoll() {
    pymemcache_works(&["-o", "io=epoll"]);
}

#[test]
fn the_default_mask_is_0700_and_a_stale_socket_file_is_replaced() {
    let dir = TempDir::new("stale");
    let socket = dir.path("m.sock");
    // A socket file left behind by a server that is gone.
    drop(UnixListener::bind(&socket).unwrap());
    assert!(UnixStream::connect(&socket).is_err(), "nothing listens");
    let server = UnixServer::start_at(dir, socket, &[]);
    let meta = std::fs::symlink_metadata(&server.socket).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);
    let mut c = server.connect();
    assert!(text(&mut c, "version\r\n", "\r\n").starts_with("VERSION "));
}

#[test]
fn sigterm_stops_the_server_and_leaves_the_socket_file() {
    let mut server = UnixServer::start(&[]);
    let mut c = server.connect();
    assert!(text(&mut c, "version\r\n", "\r\n").starts_with("VERSION "));
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(
        unsafe { libc::kill(server.child.id() as i32, libc::SIGTERM) },
        0
    );
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = server.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still running after SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0));
    let mut buf = [0u8; 8];
    assert_eq!(c.read(&mut buf).unwrap_or(0), 0, "the connection is closed");
    // As memcached leaves it; the next start removes it.
    assert!(std::fs::symlink_metadata(&server.socket).is_ok());
}

/// Runs mrcached with `-s socket` to its exit; returns its status and stderr.
fn fails_to_start(socket: &Path) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mrcached"))
        .arg("-s")
        .arg(socket)
        .args(common::user_args())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_unusable_path_is_an_error_naming_the_flag() {
    let dir = TempDir::new("bad");
    // Not a socket: left alone, and the server does not start.
    let file = dir.path("data.txt");
    std::fs::write(&file, "keep me").unwrap();
    let (code, err) = fails_to_start(&file);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("-s") && err.contains("data.txt"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    // A directory that does not exist.
    let (code, err) = fails_to_start(&dir.path("no/such/dir/m.sock"));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("-s") && err.contains("No such file"), "{err}");
    // A path longer than a socket address holds.
    let (code, err) = fails_to_start(&dir.path(&"x".repeat(200)));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("-s"), "{err}");
    // A mask that is not octal is a usage error.
    let out = Command::new(env!("CARGO_BIN_EXE_mrcached"))
        .args(["-s", "/tmp/x.sock", "-a", "0999"])
        .args(common::user_args())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("-a"));
}
