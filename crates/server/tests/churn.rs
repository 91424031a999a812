//! Connection churn: clients that reset their connection mid-request (SO_LINGER 0 after part of a
//! `set`'s value), that connect and close at once, and that close with replies unread, beside
//! pipelined load on other connections. Afterwards `curr_connections` and the server's open descriptors
//! (`/proc/PID/fd`) must be back at their idle values, and `total_connections` must count every
//! connection made. This is the pattern that left connections in `conn_nread` with their descriptors
//! held on the io_uring path (issue 37); scripts/test.sh reruns this file under `-o io=epoll` and
//! `-o memory_layout=slab`, so it holds on both I/O paths and both layouts.
//!
//! Every load is bounded in count and time; the idle check polls with a deadline rather than sleeping.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{stat_value, LineClient, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(30);
/// Abortive closes per run: enough that a leak of a few per ten thousand shows. `MRCACHE_CHURN_CLOSES`
/// sets another count (issue 37's target is 50,000; the suite runs 20,000 to stay quick).
const ABORTIVE_CLOSES: usize = 20_000;

fn abortive_closes() -> usize {
    match std::env::var("MRCACHE_CHURN_CLOSES") {
        Ok(n) => n
            .parse()
            .unwrap_or_else(|e| panic!("MRCACHE_CHURN_CLOSES={n}: {e}")),
        Err(_) => ABORTIVE_CLOSES,
    }
}
/// Connections that pipeline sets and gets meanwhile.
const LOADERS: usize = 3;

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the server's /proc fd directory")
        .count()
}

/// The kernel's count of connections dropped before any `accept` (`TcpExt: ListenDrops` in
/// `/proc/net/netstat`, machine-wide): their clients' connects succeeded, but no server ever saw them.
fn listen_drops() -> u64 {
    let netstat = std::fs::read_to_string("/proc/net/netstat").expect("/proc/net/netstat");
    let mut rows = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (
        rows.next().expect("TcpExt names"),
        rows.next().expect("TcpExt values"),
    );
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find_map(|(n, v)| (n == "ListenDrops").then(|| v.parse().expect("a count")))
        .expect("ListenDrops in TcpExt")
}

fn stats(port: u16) -> String {
    LineClient::connect(port).call("stats\r\n")
}

fn curr_connections(port: u16) -> u64 {
    stat_value(&stats(port), "curr_connections")
        .and_then(|v| v.parse().ok())
        .expect("curr_connections")
}

/// Closes `s` with a reset (SO_LINGER 0) instead of a FIN.
fn reset(s: TcpStream) {
    socket2::SockRef::from(&s)
        .set_linger(Some(Duration::ZERO))
        .unwrap();
    drop(s);
}

/// A small deterministic generator (the test needs variety, not randomness).
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Pipelines batches of sets and gets until `stop`, checking each batch's replies.
fn pipelined_load(port: u16, id: usize, stop: Arc<AtomicBool>) -> usize {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut batch = Vec::new();
    for i in 0..50 {
        batch.extend_from_slice(
            format!("set l{id}:{i} 0 0 10\r\n0123456789\r\nget l{id}:{i}\r\n").as_bytes(),
        );
    }
    let mut batches = 0;
    let mut buf = vec![0u8; 1 << 16];
    while !stop.load(Ordering::Relaxed) {
        c.write_all(&batch).unwrap();
        let mut got = Vec::new();
        while got.windows(5).filter(|w| w == b"END\r\n").count() < 50 {
            let n = c.read(&mut buf).expect("pipelined replies");
            assert!(n > 0, "the server closed a pipelining connection");
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got.windows(8).filter(|w| w == b"STORED\r\n").count(), 50);
        batches += 1;
    }
    batches
}

/// Waits (bounded) until the server is back at `idle_fds` descriptors and `idle_conns` connections.
fn back_to_idle(server: &Server, idle_fds: usize, idle_conns: u64) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        // The probe connection itself is one descriptor and one connection while it is open.
        let conns = curr_connections(server.port());
        let fds = open_fds(server.pid());
        if conns == idle_conns && fds == idle_fds {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not back to idle after {TIMEOUT:?}: curr_connections {conns} (idle {idle_conns}), \
             descriptors {fds} (idle {idle_fds}); stats conns:\n{}",
            LineClient::connect(server.port()).call("stats conns\r\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn abortive_closes_mid_value_beside_pipelined_load_leave_nothing_behind() {
    let server = Server::start(&ServerKind::mrcached(), &["-t", "2", "-c", "256"]);
    let port = server.port();
    let idle_conns = curr_connections(port);
    let idle_fds = open_fds(server.pid());
    let drops_before = listen_drops();
    let total_before: u64 = stat_value(&stats(port), "total_connections")
        .unwrap()
        .parse()
        .unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let loaders: Vec<_> = (0..LOADERS)
        .map(|id| {
            let stop = stop.clone();
            std::thread::spawn(move || pipelined_load(port, id, stop))
        })
        .collect();

    let started = Instant::now();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut made = 0u64;
    for i in 0..abortive_closes() {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "churn took too long"
        );
        let mut c = server.connect(TIMEOUT).expect("connect");
        made += 1;
        match i % 4 {
            // A set whose value is cut off, then a reset: the case that leaked.
            0 | 1 => {
                let size = [10usize, 1000, 100_000, 1_000_000][(next(&mut rng) % 4) as usize];
                let part = (next(&mut rng) as usize) % size;
                let mut req = format!("set churn{i} 0 0 {size}\r\n").into_bytes();
                req.resize(req.len() + part, b'x');
                // The server may reset first (it never does for a valid prefix); either way, reset.
                let _ = c.write_all(&req);
                reset(c);
            }
            // Requests whose replies are never read, then a reset.
            2 => {
                let _ = c.write_all(b"get l0:1 l0:2 l0:3\r\nstats\r\nversion\r\n");
                reset(c);
            }
            // Connect and close at once, half of them with a reset.
            _ => {
                if next(&mut rng).is_multiple_of(2) {
                    reset(c);
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for l in loaders {
        assert!(l.join().expect("a loader panicked") > 0);
    }
    // Every churned connection and the loaders must be counted as accepted (the listener may still be
    // accepting the last of them: connections the client already closed wait in the kernel's backlog).
    // Connections the kernel dropped from a full accept queue were never the server's to count (the
    // listener may lag behind 20,000 connects on a loaded machine); every other one must be counted.
    let dropped = listen_drops() - drops_before;
    let expected_total = (total_before + made + LOADERS as u64).saturating_sub(dropped);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let reply = stats(port);
        let count = |name| -> u64 { stat_value(&reply, name).unwrap().parse().unwrap() };
        // Turned away at `-c` (rejected_connections) is not accepted, as in memcached.
        let (total, rejected) = (count("total_connections"), count("rejected_connections"));
        if total + rejected >= expected_total {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "total_connections {total} (+{rejected} rejected at -c) after {TIMEOUT:?}: fewer than the {made} churned connections \
             (+{LOADERS} loaders) made since {total_before}, less {dropped} the kernel dropped before \
             accept; stderr: {}",
            server.stderr_tail()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    back_to_idle(&server, idle_fds, idle_conns);
    let mut c = LineClient::connect(port);
    assert_eq!(c.call("set after 0 0 1\r\nx\r\n"), "STORED");
}
