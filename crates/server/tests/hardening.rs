//! Memory under abuse: each test drives one abusive client pattern from issue 19 against an `mrcached`
//! with a small `-m` on loopback, asserts that the server's resident memory (`VmRSS` in
//! `/proc/PID/status`) stays far below what the pattern used to cost, and that the server still answers
//! other connections; the replies that do come back are checked byte for byte (against memcached 1.6.18
//! where the behaviour is memcached's). Every load is bounded in count and every wait in time.
//!
//! Figures before the fix (issue 19, same patterns at larger counts): one `get` line naming a 1 MB value
//! 1,000 times, 959 MB; 50 connections of 100 unread `get big`, 966 MB; 500 stalled 1 MB uploads,
//! 504 MB; `-m 64 -I 32m` with every class used, 1,792 MB malloced. `scripts/abuse.sh` measures the full
//! patterns side by side with memcached.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(30);
/// The large value: 1,000,000 bytes, under the default `-I` of 1 MiB.
const BIG: usize = 1_000_000;

/// The server's resident set in KiB.
fn rss_kb(server: &Server) -> u64 {
    common::proc_status(server.pid(), "VmRSS:")
}

/// The highest RSS seen while polling for `for_how_long` (the server keeps working meanwhile).
fn peak_rss_kb(server: &Server, for_how_long: Duration) -> u64 {
    let deadline = Instant::now() + for_how_long;
    let mut peak = rss_kb(server);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        peak = peak.max(rss_kb(server));
    }
    peak
}

fn start(args: &[&str]) -> Server {
    Server::start(&ServerKind::mrcached(), args)
}

fn connect(server: &Server) -> TcpStream {
    server.connect(TIMEOUT).expect("connect")
}

/// Sends `request` and reads until the reply ends with `end`.
fn call(c: &mut TcpStream, request: &[u8], end: &[u8]) -> Vec<u8> {
    c.write_all(request).unwrap();
    read_until(c, end)
}

fn read_until(c: &mut TcpStream, end: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    while !got.ends_with(end) {
        let n = c.read(&mut buf).expect("reply before the timeout");
        assert!(n > 0, "closed after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
    }
    got
}

fn set_value(c: &mut TcpStream, key: &str, len: usize) {
    let mut req = format!("set {key} 0 0 {len}\r\n").into_bytes();
    req.extend(std::iter::repeat_n(b'v', len));
    req.extend_from_slice(b"\r\n");
    assert_eq!(call(c, &req, b"\r\n"), b"STORED\r\n");
}

/// The server answers a fresh connection.
fn still_answers(server: &Server) {
    let mut c = connect(server);
    assert!(call(&mut c, b"version\r\n", b"\r\n").starts_with(b"VERSION "));
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

#[test]
fn one_get_line_naming_a_large_value_many_times_holds_a_bounded_reply() {
    let server = start(&["-m", "64"]);
    let mut c = connect(&server);
    set_value(&mut c, "big", BIG);
    let base = rss_kb(&server);
    // 300 repeats: 300 MB of reply from a 1.2 KB line (the old server built all of it in memory).
    const REPEATS: usize = 300;
    let mut line = b"get".to_vec();
    for _ in 0..REPEATS {
        line.extend_from_slice(b" big");
    }
    line.extend_from_slice(b"\r\n");
    c.write_all(&line).unwrap();
    // The client does not read for a while: the server must not produce the reply ahead of it.
    let peak = peak_rss_kb(&server, Duration::from_millis(1500));
    still_answers(&server);
    assert!(
        peak < base + 24 * 1024,
        "RSS {:.1} MiB -> {:.1} MiB while a 300 MB reply was pending",
        mib(base),
        mib(peak)
    );
    // Then the whole reply arrives, exactly as one uninterrupted reply.
    let got = read_until(&mut c, b"END\r\n");
    let mut block = format!("VALUE big 0 {BIG}\r\n").into_bytes();
    block.extend(std::iter::repeat_n(b'v', BIG));
    block.extend_from_slice(b"\r\n");
    assert_eq!(got.len(), REPEATS * block.len() + 5);
    assert!(got.chunks(block.len()).take(REPEATS).all(|b| b == block));
    // The connection goes on normally after the resumed request.
    assert_eq!(call(&mut c, b"get nothing\r\n", b"END\r\n"), b"END\r\n");
}

#[test]
#[ignore = "needs memcached"]
fn resumed_multi_key_replies_are_memcacheds_bytes() {
    // Hits and misses, gets and gat, many values past the output bound: the same bytes as memcached
    // (CAS values aside, which both number from the same sets here).
    let mut replies = Vec::new();
    for kind in [ServerKind::mrcached(), ServerKind::memcached()] {
        let server = Server::start(&kind, &["-m", "64"]);
        let mut c = connect(&server);
        set_value(&mut c, "a", 300_000);
        set_value(&mut c, "b", 70_000);
        set_value(&mut c, "c", 5);
        let mut reply = Vec::new();
        for cmd in ["get", "gets", "gat 100", "gats 0"] {
            let mut line = cmd.to_string();
            for i in 0..40 {
                line.push_str([" a", " b", " miss", " c", " b"][i % 5]);
            }
            line.push_str("\r\n");
            reply.extend(call(&mut c, line.as_bytes(), b"END\r\n"));
        }
        // A pipeline of mg after a large get, in one write.
        let mut pipeline = b"get a a a a\r\n".to_vec();
        for _ in 0..20 {
            pipeline.extend_from_slice(b"mg a v k\r\nmg miss v\r\nmg b s v\r\n");
        }
        pipeline.extend_from_slice(b"mn\r\n");
        reply.extend(call(&mut c, &pipeline, b"MN\r\n"));
        replies.push(reply);
    }
    assert!(replies[0].len() > 20_000_000);
    assert!(
        replies[0] == replies[1],
        "mrcached's reply differs from memcached's ({} vs {} bytes)",
        replies[0].len(),
        replies[1].len()
    );
}

#[test]
fn clients_that_never_read_hold_little_memory() {
    let server = start(&["-m", "64"]);
    let mut c = connect(&server);
    set_value(&mut c, "big", BIG);
    let base = rss_kb(&server);
    // 50 connections each ask for 100 x 1 MB (and 50 more pipeline 100 `mg big v`), never reading.
    let mut hogs = Vec::new();
    for i in 0..100 {
        let mut h = connect(&server);
        let one: &[u8] = if i % 2 == 0 {
            b"get big\r\n"
        } else {
            b"mg big v\r\n"
        };
        h.write_all(&one.repeat(100)).unwrap();
        hogs.push(h);
    }
    let peak = peak_rss_kb(&server, Duration::from_millis(2000));
    still_answers(&server);
    // Each connection may hold its bound (64 KiB) and one value; the old server held all 100 values.
    assert!(
        peak < base + 200 * 1024,
        "RSS {:.1} MiB -> {:.1} MiB with 100 connections not reading 100 MB each",
        mib(base),
        mib(peak)
    );
    // A reader still gets its whole pipeline.
    let mut h = hogs.pop().unwrap();
    let header = format!("VA {BIG}\r\n");
    let mut got = vec![0u8; 100 * (header.len() + BIG + 2)];
    h.read_exact(&mut got).unwrap();
    assert!(got.starts_with(header.as_bytes()));
    assert!(got.ends_with(b"v\r\n"));
}

#[test]
fn stalled_uploads_are_bounded_and_refused_as_out_of_memory() {
    let server = start(&["-m", "64"]);
    let base = rss_kb(&server);
    // 200 connections each send a 1,048,000-byte set's line and all but 8,000 bytes of it, then stall.
    const UPLOADS: usize = 200;
    const VALUE: usize = 1_048_000;
    const SENT: usize = 1_040_000;
    let body = vec![b'x'; SENT];
    let mut stalled = Vec::new();
    for i in 0..UPLOADS {
        let mut s = connect(&server);
        s.write_all(format!("set p{i} 0 0 {VALUE}\r\n").as_bytes())
            .unwrap();
        s.write_all(&body).unwrap();
        stalled.push(s);
    }
    let peak = peak_rss_kb(&server, Duration::from_millis(1500));
    assert!(
        peak < base + 64 * 1024,
        "RSS {:.1} MiB -> {:.1} MiB with {UPLOADS} stalled 1 MB uploads",
        mib(base),
        mib(peak)
    );
    // Small stores are untouched; a large one is refused while the budget is held (memcached's reply
    // when memory is pinned by half-read items), and the connection goes on.
    let mut c = connect(&server);
    set_value(&mut c, "small", 1000);
    let mut large = b"set large 0 0 500000\r\n".to_vec();
    c.write_all(&large).unwrap();
    assert_eq!(
        read_until(&mut c, b"\r\n"),
        b"SERVER_ERROR out of memory storing object\r\n"
    );
    large.clear();
    large.extend(std::iter::repeat_n(b'y', 500_000));
    large.extend_from_slice(b"\r\n");
    c.write_all(&large).unwrap();
    assert_eq!(
        call(&mut c, b"get small\r\n", b"END\r\n").len(),
        "VALUE small 0 1000\r\n".len() + 1002 + 5
    );
    let stats = String::from_utf8(call(&mut c, b"stats\r\n", b"END\r\n")).unwrap();
    let refused: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("STAT partial_value_refused "))
        .and_then(|v| v.trim().parse().ok())
        .expect("partial_value_refused");
    assert!(refused >= 1, "{refused}");
    // A stalled upload that completes is stored (it held a grant) or refused (it did not).
    let mut first = stalled.remove(0);
    first.write_all(&vec![b'x'; VALUE - SENT]).unwrap();
    first.write_all(b"\r\n").unwrap();
    let reply = read_until(&mut first, b"\r\n");
    assert!(
        reply == b"STORED\r\n" || reply == b"SERVER_ERROR out of memory storing object\r\n",
        "{}",
        String::from_utf8_lossy(&reply)
    );
    // Once the stalled uploads go away, their budget comes back.
    drop(stalled);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut req = b"set large 0 0 500000\r\n".to_vec();
        req.extend(std::iter::repeat_n(b'y', 500_000));
        req.extend_from_slice(b"\r\n");
        if call(&mut c, &req, b"\r\n") == b"STORED\r\n" {
            break;
        }
        assert!(Instant::now() < deadline, "the budget never came back");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_large_item_size_keeps_memory_within_the_limit() {
    let server = start(&["-m", "64", "-I", "32m"]);
    let mut c = connect(&server);
    // Values from 10 bytes to 30 MB, 1.25 apart: every class is asked for a page.
    let mut len = 10usize;
    let mut i = 0;
    while len < 30 << 20 {
        let mut req = format!("set k{i} 0 0 {len}\r\n").into_bytes();
        req.extend(std::iter::repeat_n(b'v', len));
        req.extend_from_slice(b"\r\n");
        // A class without a page takes the coldest class's page once the first-page excess is spent.
        assert_eq!(call(&mut c, &req, b"\r\n"), b"STORED\r\n", "{len} bytes");
        len = len * 5 / 4 + 1;
        i += 1;
    }
    assert!(i > 50, "values in {i} sizes");
    let stats = String::from_utf8(call(&mut c, b"stats slabs\r\n", b"END\r\n")).unwrap();
    let malloced: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("STAT total_malloced "))
        .and_then(|v| v.trim().parse().ok())
        .expect("total_malloced");
    // The limit plus memcached's own first-page excess (one 1 MiB page per class), not 56 pages of 32 MiB.
    assert!(
        malloced <= 128 << 20,
        "total_malloced {malloced} at -m 64 -I 32m"
    );
    let rss = rss_kb(&server);
    assert!(rss < 300 * 1024, "RSS {:.1} MiB at -m 64 -I 32m", mib(rss));
    still_answers(&server);
}

#[test]
#[ignore = "needs memcached"]
fn a_long_non_get_line_sent_at_once_is_answered_as_memcached_answers_it() {
    let mut results = Vec::new();
    for kind in [ServerKind::mrcached(), ServerKind::memcached()] {
        let server = Server::start(&kind, &[]);
        let mut c = connect(&server);
        for k in ["key00001", "key00300", "key00600"] {
            set_value(&mut c, k, 3);
        }
        let mut outcome = Vec::new();
        // ~5 KB, ~11 KB and ~13 KB lines of gat/gats (not `get `, so not memcached's long-multiget exception),
        // each sent in one write.
        for (cmd, keys) in [("gat 0", 600), ("gats 100", 1200), ("gat 0", 1500)] {
            let mut line = cmd.to_string();
            for k in 1..=keys {
                line.push_str(&format!(" key{k:05}"));
            }
            line.push_str("\r\n");
            assert!(line.len() > 4096);
            outcome.push(call(&mut c, line.as_bytes(), b"END\r\n"));
        }
        // A 40 KB unterminated non-get line: both close the connection.
        let mut endless = b"gat 0".to_vec();
        endless.extend(b" k1".repeat(40_000 / 3));
        // The server may close while the line is still being written.
        let _ = c.write_all(&endless);
        let mut buf = [0u8; 64];
        let closed = matches!(c.read(&mut buf), Ok(0) | Err(_));
        outcome.push(format!("closed: {closed}").into_bytes());
        results.push(outcome);
    }
    for (mine, theirs) in results[0].iter().zip(&results[1]) {
        assert_eq!(
            String::from_utf8_lossy(mine),
            String::from_utf8_lossy(theirs)
        );
    }
}
