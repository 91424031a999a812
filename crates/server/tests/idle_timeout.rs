//! `-o idle_timeout=N`: connections that wait for a command more than N seconds are closed, on both
//! I/O paths, and counted in `stats idle_kicks`, as memcached 1.6.18 does; the same scenario runs
//! against memcached as the control. Closed: a connection that sent nothing, and one that sent half a
//! command line. Left open: one that keeps sending commands, one in the middle of a value, and a
//! `watch` connection.
//!
//! The kicks are waited for with a deadline (memcached's check sleeps up to about two timeouts
//! between passes); every read is bounded.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{stat_value, LineClient, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);
/// How long both servers may take to close an idle connection, with `idle_timeout=1`.
const KICK_DEADLINE: Duration = Duration::from_secs(10);
/// A bounded read of a connection that should be quiet.
const QUIET_READ: Duration = Duration::from_millis(50);

/// Whether the server has closed `stream`: end of stream (or a reset) within [`QUIET_READ`].
fn closed_by_server(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(QUIET_READ)).unwrap();
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) if e.kind() == ErrorKind::ConnectionReset => true,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
        Err(e) => panic!("{e}"),
    }
}

/// Sends `request` on a raw connection and reads its one-line reply.
fn one_line(stream: &mut TcpStream, request: &str) -> String {
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = Vec::new();
    let mut byte = [0u8; 1];
    while !reply.ends_with(b"\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed: {reply:?}");
        reply.push(byte[0]);
    }
    String::from_utf8(reply).unwrap()
}

fn kicks_idle_connections(kind: &ServerKind, args: &[&str]) {
    let args: Vec<&str> = ["-o", "idle_timeout=1"]
        .iter()
        .chain(args)
        .copied()
        .collect();
    let server = Server::start(kind, &args);
    let mut active = LineClient::connect(server.port());
    let settings = active.call("stats settings\r\n");
    assert_eq!(stat_value(&settings, "idle_timeout").as_deref(), Some("1"));
    let connect = || server.connect(TIMEOUT).unwrap();
    let mut idle = connect();
    let mut half_line = connect();
    half_line.write_all(b"get som").unwrap();
    let mut mid_value = connect();
    mid_value.write_all(b"set k 0 0 10\r\nabc").unwrap();
    let mut watcher = connect();
    assert_eq!(one_line(&mut watcher, "watch\r\n"), "OK\r\n");

    let deadline = Instant::now() + KICK_DEADLINE;
    let (mut idle_closed, mut half_line_closed) = (false, false);
    while !(idle_closed && half_line_closed) {
        assert!(
            Instant::now() < deadline,
            "{}: not closed after {KICK_DEADLINE:?}: idle {idle_closed}, half a line \
             {half_line_closed}; stats conns:\n{}",
            kind.name(),
            active.call("stats conns\r\n")
        );
        // Never idle: one command per round.
        assert!(active.call("version\r\n").starts_with("VERSION "));
        idle_closed = idle_closed || closed_by_server(&mut idle);
        half_line_closed = half_line_closed || closed_by_server(&mut half_line);
    }
    for (name, stream) in [("mid-value", &mut mid_value), ("watcher", &mut watcher)] {
        assert!(!closed_by_server(stream), "{}: {name} closed", kind.name());
    }
    let stats = active.call("stats\r\n");
    assert_eq!(
        stat_value(&stats, "idle_kicks").as_deref(),
        Some("2"),
        "{}",
        kind.name()
    );
    // The value still completes.
    assert_eq!(one_line(&mut mid_value, "defghij\r\n"), "STORED\r\n");
}

#[test]
fn epoll_closes_idle_connections() {
    kicks_idle_connections(&ServerKind::mrcached(), &["-o", "io=epoll"]);
}

#[test]
fn io_uring_closes_idle_connections() {
    kicks_idle_connections(&ServerKind::mrcached(), &["-o", "io=uring"]);
}

#[test]
#[ignore = "needs memcached"]
fn memcached_closes_the_same_connections() {
    kicks_idle_connections(&ServerKind::memcached(), &[]);
}

/// Without `-o idle_timeout` nothing is closed and `stats` has no `idle_kicks`, as in memcached.
fn no_idle_kicks_without_a_timeout(kind: &ServerKind) {
    let server = Server::start(kind, &[]);
    let mut c = LineClient::connect(server.port());
    let stats = c.call("stats\r\n");
    assert_eq!(stat_value(&stats, "idle_kicks"), None, "{}", kind.name());
    let settings = c.call("stats settings\r\n");
    assert_eq!(stat_value(&settings, "idle_timeout").as_deref(), Some("0"));
}

#[test]
fn mrcached_has_no_idle_kicks_without_a_timeout() {
    no_idle_kicks_without_a_timeout(&ServerKind::mrcached());
}

#[test]
#[ignore = "needs memcached"]
fn memcached_has_no_idle_kicks_without_a_timeout() {
    no_idle_kicks_without_a_timeout(&ServerKind::memcached());
}
