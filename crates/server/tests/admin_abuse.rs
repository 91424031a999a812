//! The admin port under abuse: the requests a hostile local user sent it (issue 37) — a GET announcing a
//! 99,999,999,999-byte body (it used to abort the whole server on the allocation), a 200 MB URL (it used
//! to be buffered whole), a chunked body, a thousand connections that never finish their request (a
//! thread each, before; now a bounded set is served and the rest are turned away with `503`) — must each be refused while the server's resident memory grows by less than
//! 16 MB, its thread count stays bounded, and both the admin port and the cache port keep answering.
//! Bounded in count and time; no sleeps for start-up (the admin GET retries its connect to a deadline).

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{free_port, http_get, proc_status, LineClient, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(30);
/// The most the server's RSS may grow through any of the abusive requests.
const RSS_GROWTH_LIMIT_KB: u64 = 16 * 1024;

/// Sends `request` (as much of it as the server takes) and returns the status line of the reply, or
/// "" when the server closed without one.
fn send(port: u16, request: &[u8]) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s.set_write_timeout(Some(TIMEOUT)).unwrap();
    // The server stops reading once it has refused; a write that fails then is expected.
    let _ = s.write_all(request);
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => reply.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("reading the admin reply: {e}"),
        }
    }
    let reply = String::from_utf8_lossy(&reply);
    reply.lines().next().unwrap_or("").to_string()
}

fn cache_answers(server: &Server) {
    let mut c = LineClient::connect(server.port());
    assert_eq!(c.call("set alive 0 0 1\r\nx\r\n"), "STORED");
}

#[test]
fn abusive_admin_requests_are_refused_and_harm_nothing() {
    let admin_port = free_port();
    let admin = admin_port.to_string();
    let server = Server::start(&ServerKind::mrcached(), &["--admin-port", &admin]);
    let pid = server.pid();
    assert_eq!(http_get(admin_port, "/metrics").0, 200);
    let rss_before = proc_status(pid, "VmRSS:");

    let huge_body = b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n";
    assert!(send(admin_port, huge_body).starts_with("HTTP/1.1 413"));
    let post = b"POST /metrics HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\nxxxx";
    assert!(send(admin_port, post).starts_with("HTTP/1.1 413"));
    let chunked = b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffff\r\n";
    assert!(send(admin_port, chunked).starts_with("HTTP/1.1 413"));
    // A 200 MB URL: refused after the first few KiB; the rest is never held.
    let mut long_url = b"GET /".to_vec();
    long_url.resize(200 << 20, b'a');
    let status = send(admin_port, &long_url);
    assert!(
        status.is_empty() || status.starts_with("HTTP/1.1 431"),
        "{status}"
    );
    drop(long_url);
    let rss_after = proc_status(pid, "VmRSS:");
    assert!(
        rss_after < rss_before + RSS_GROWTH_LIMIT_KB,
        "RSS grew from {rss_before} kB to {rss_after} kB"
    );

    // A thousand connections that send half a request line and wait.
    let threads_before = proc_status(pid, "Threads:");
    let started = Instant::now();
    let slow: Vec<TcpStream> = (0..1000)
        .filter_map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", admin_port)).ok()?;
            let _ = s.write_all(b"GET /metr");
            Some(s)
        })
        .collect();
    assert!(started.elapsed() < TIMEOUT);
    assert!(
        slow.len() >= 500,
        "only {} slow connections opened",
        slow.len()
    );
    let threads = proc_status(pid, "Threads:");
    assert_eq!(
        threads, threads_before,
        "slow admin connections started threads"
    );
    cache_answers(&server);
    drop(slow);

    // Still serving on both ports, with no thread left behind.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        // Until the server has seen the slow connections close, a new one may still be turned away.
        let status = send(admin_port, b"GET /metrics HTTP/1.1\r\n\r\n");
        if status.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(
            status.is_empty() || status.starts_with("HTTP/1.1 503"),
            "{status}"
        );
        assert!(
            Instant::now() < deadline,
            "the admin port never served again"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(http_get(admin_port, "/metrics").1.contains("mrcached_"));
    assert_eq!(proc_status(pid, "Threads:"), threads_before);
    let rss_end = proc_status(pid, "VmRSS:");
    assert!(
        rss_end < rss_before + RSS_GROWTH_LIMIT_KB,
        "RSS grew from {rss_before} kB to {rss_end} kB"
    );
    cache_answers(&server);
}
