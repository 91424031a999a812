//! In-process tests of the network layer with small stand-in protocols (the real session is tested
//! end to end elsewhere): readiness, `-c`, `-R` yields, backpressure, large requests, `stats conns`, shutdown.
//! Every server listens on 127.0.0.1 port 0; no sleeps: every wait is a blocking read with a timeout.
//! Each test runs on both I/O paths (`-o io=epoll` and `-o io=uring`), as `<test>::epoll` and `<test>::uring`.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use mrcache_engine::Engine;

use super::registry::ConnInfo;
use super::{ProtocolSession, Server, ServerOptions};
use crate::context::{ServerContext, ThreadStats};
use crate::session::Progress;
use crate::settings::{IoMode, ListenSpec, Settings};

const IO_TIMEOUT: Duration = Duration::from_secs(20);

/// Line protocol: `echo X` → `X`; `big N` → N bytes of `b` then CRLF; `len N` then N bytes → the length;
/// `conns` → `stats conns`; `quit` closes; `shutdown` stops the server.
struct TestProtocol {
    ctx: Arc<ServerContext>,
}

impl ProtocolSession for TestProtocol {
    fn process(&mut self, input: &[u8], out: &mut Vec<u8>, max_requests: usize) -> Progress {
        let mut consumed = 0;
        let mut done = 0;
        let progress = |consumed, close, yielded, want_bytes| Progress {
            consumed,
            close,
            yielded,
            want_bytes,
            output_full: false,
            parked: false,
        };
        while let Some(nl) = input[consumed..].iter().position(|&b| b == b'\n') {
            if done == max_requests {
                return progress(consumed, false, true, None);
            }
            let line = std::str::from_utf8(&input[consumed..consumed + nl])
                .unwrap()
                .trim_end();
            let line_len = nl + 1;
            let (cmd, arg) = line.split_once(' ').unwrap_or((line, ""));
            match cmd {
                "echo" => {
                    out.extend_from_slice(arg.as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
                "big" => {
                    let n: usize = arg.parse().unwrap();
                    out.resize(out.len() + n, b'b');
                    out.extend_from_slice(b"\r\n");
                }
                "len" => {
                    let n: usize = arg.parse().unwrap();
                    if input.len() - consumed < line_len + n {
                        return progress(consumed, false, false, Some(line_len + n));
                    }
                    consumed += n;
                    out.extend_from_slice(format!("{n}\r\n").as_bytes());
                }
                "conns" => crate::stats::conns(&self.ctx, None, out),
                "quit" => return progress(consumed + line_len, true, false, None),
                "shutdown" => self.ctx.request_shutdown(),
                _ => out.extend_from_slice(b"ERROR\r\n"),
            }
            consumed += line_len;
            done += 1;
        }
        progress(consumed, false, false, None)
    }
}

fn start(io: IoMode, tweak: impl FnOnce(&mut Settings)) -> Server {
    let mut settings = Settings {
        io,
        port: 0,
        listen: vec![ListenSpec::parse("127.0.0.1").unwrap()],
        threads: 2,
        shards: 1,
        ..Settings::default()
    };
    tweak(&mut settings);
    let engine = Engine::new(settings.engine_config()).unwrap();
    let threads = settings.threads;
    let ctx = Arc::new(ServerContext::new(engine, settings, threads));
    let options = ServerOptions {
        handle_signals: false,
        maintenance: false,
    };
    Server::start(
        ctx,
        |ctx, _stats: Arc<ThreadStats>, _conn: &Arc<ConnInfo>| TestProtocol { ctx },
        options,
    )
    .unwrap()
}

fn connect(server: &Server) -> TcpStream {
    let s = TcpStream::connect(server.local_addrs()[0]).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    s
}

fn read_line(r: &mut BufReader<TcpStream>) -> String {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    line
}

fn stop(server: Server) {
    server.shutdown();
    server.wait().unwrap();
}

fn echo_round_trip_counts_bytes(io: IoMode) {
    let server = start(io, |_| {});
    let mut c = connect(&server);
    c.write_all(b"echo hello\r\n").unwrap();
    let mut r = BufReader::new(c.try_clone().unwrap());
    assert_eq!(read_line(&mut r), "hello\r\n");
    let ctx = server.context().clone();
    let read: u64 = ctx
        .thread_stats
        .iter()
        .map(|t| t.bytes_read.load(Relaxed))
        .sum();
    assert_eq!(read, 12);
    assert_eq!(ctx.conns.curr_connections.load(Relaxed), 1);
    assert_eq!(ctx.conns.total_connections.load(Relaxed), 1);
    c.write_all(b"quit\r\n").unwrap();
    let mut rest = Vec::new();
    r.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "quit closes without a reply");
    stop(server);
}

fn connections_over_the_limit_are_told_and_closed(io: IoMode) {
    let server = start(io, |s| s.max_connections = 1);
    let mut first = connect(&server);
    first.write_all(b"echo 1\r\n").unwrap();
    let mut r = BufReader::new(first.try_clone().unwrap());
    assert_eq!(read_line(&mut r), "1\r\n");

    let mut second = connect(&server);
    let mut reply = Vec::new();
    second.read_to_end(&mut reply).unwrap();
    assert_eq!(reply, b"ERROR Too many open connections\r\n");
    let ctx = server.context().clone();
    assert_eq!(ctx.conns.rejected_connections.load(Relaxed), 1);

    first.write_all(b"echo still here\r\n").unwrap();
    assert_eq!(read_line(&mut r), "still here\r\n");
    stop(server);
}

fn pipelined_requests_yield_every_r_requests_and_stay_in_order(io: IoMode) {
    let server = start(io, |s| s.reqs_per_event = 2);
    let mut c = connect(&server);
    let mut batch = String::new();
    for i in 0..50 {
        batch.push_str(&format!("echo {i}\r\n"));
    }
    c.write_all(batch.as_bytes()).unwrap();
    let mut r = BufReader::new(c.try_clone().unwrap());
    for i in 0..50 {
        assert_eq!(read_line(&mut r), format!("{i}\r\n"));
    }
    let yields: u64 = server
        .context()
        .thread_stats
        .iter()
        .map(|t| t.conn_yields.load(Relaxed))
        .sum();
    assert!(yields >= 1, "50 pipelined requests at -R 2 must yield");
    stop(server);
}

fn a_client_that_never_reads_stops_being_read(io: IoMode) {
    let server = start(io, |_| {});
    let c = connect(&server);
    c.set_nonblocking(true).unwrap();
    // Each 1000-byte request asks for a 64 KiB reply; a server without backpressure would read every
    // request and buffer 64x more output than the client sent.
    let mut request = format!("big {}", 64 * 1024).into_bytes();
    request.resize(998, b' ');
    request.extend_from_slice(b"\r\n");
    const CAP_BYTES: usize = 64 * 1024 * 1024;
    let (mut sent, mut partial) = (0usize, 0usize);
    let mut w = &c;
    loop {
        match w.write(&request[partial..]) {
            Ok(n) => {
                partial += n;
                if partial == request.len() {
                    partial = 0;
                    sent += 1;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
        assert!(
            sent * request.len() < CAP_BYTES,
            "the server kept reading a client that never reads"
        );
    }
    // Now drain: every complete request is answered once the client reads.
    c.set_nonblocking(false).unwrap();
    let mut rest = request[partial..].to_vec();
    if partial == 0 {
        rest.clear();
    } else {
        sent += 1;
    }
    let writer = {
        let mut c = c.try_clone().unwrap();
        std::thread::spawn(move || c.write_all(&rest).unwrap())
    };
    let expected = sent * (64 * 1024 + 2);
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 20];
    let mut r = &c;
    while got < expected {
        // A blocking read may be interrupted by a signal (the in-process server's threads share the
        // test's process); only a real error fails the test.
        let n = match r.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => panic!("{e}"),
        };
        assert!(n > 0, "server closed early");
        got += n;
    }
    writer.join().unwrap();
    assert_eq!(got, expected);
    stop(server);
}

fn a_request_larger_than_the_initial_buffer_is_read_whole(io: IoMode) {
    let server = start(io, |_| {});
    let mut c = connect(&server);
    let n = 1_000_000;
    let mut req = format!("len {n}\r\n").into_bytes();
    req.resize(req.len() + n, b'v');
    req.extend_from_slice(b"echo after\r\n");
    let writer = {
        let mut c = c.try_clone().unwrap();
        std::thread::spawn(move || c.write_all(&req).unwrap())
    };
    let mut r = BufReader::new(c.try_clone().unwrap());
    assert_eq!(read_line(&mut r), format!("{n}\r\n"));
    assert_eq!(read_line(&mut r), "after\r\n");
    writer.join().unwrap();
    c.write_all(b"quit\r\n").unwrap();
    stop(server);
}

fn stats_conns_lists_listener_and_clients(io: IoMode) {
    let server = start(io, |_| {});
    let mut c = connect(&server);
    c.write_all(b"conns\r\n").unwrap();
    let mut r = BufReader::new(c.try_clone().unwrap());
    let mut lines = Vec::new();
    loop {
        let l = read_line(&mut r);
        if l == "END\r\n" {
            break;
        }
        lines.push(l);
    }
    let text = lines.concat();
    let listen = server.local_addrs()[0];
    assert!(text.contains(&format!(":addr tcp:{listen}\r\n")), "{text}");
    assert!(text.contains(":state conn_listening\r\n"), "{text}");
    assert!(
        text.contains(&format!(":addr tcp:{}\r\n", c.local_addr().unwrap())),
        "{text}"
    );
    assert!(
        text.contains(&format!(":listen_addr tcp:{listen}\r\n")),
        "{text}"
    );
    assert!(text.contains(":state conn_parse_cmd\r\n"), "{text}");
    assert_eq!(lines.len(), 3 + 4, "{text}");
    stop(server);
}

fn shutdown_from_a_session_closes_everyone(io: IoMode) {
    let server = start(io, |_| {});
    let mut idle = connect(&server);
    let mut c = connect(&server);
    c.write_all(b"echo x\r\n").unwrap();
    let mut r = BufReader::new(c.try_clone().unwrap());
    assert_eq!(read_line(&mut r), "x\r\n");
    c.write_all(b"shutdown\r\n").unwrap();
    server.wait().unwrap();
    let mut rest = Vec::new();
    let _ = idle.read_to_end(&mut rest);
    assert!(rest.is_empty());
    let _ = c.read_to_end(&mut rest);
}

fn ephemeral_port_is_shared_by_all_listen_addresses(io: IoMode) {
    let server = start(io, |s| {
        s.listen = vec![
            ListenSpec::parse("127.0.0.1").unwrap(),
            ListenSpec::parse("127.0.0.2").unwrap(),
        ];
    });
    let addrs = server.local_addrs().to_vec();
    assert_eq!(addrs.len(), 2);
    assert_ne!(addrs[0].port(), 0);
    assert_eq!(addrs[0].port(), addrs[1].port());
    stop(server);
}

/// Runs each test body once per I/O path.
macro_rules! on_both_io_paths {
    ($($name:ident),* $(,)?) => {
        mod on_io_path {
            $(
                mod $name {
                    use crate::settings::IoMode;

                    #[test]
                    fn epoll() {
                        super::super::$name(IoMode::Epoll);
                    }

                    #[test]
                    fn uring() {
                        super::super::$name(IoMode::Uring);
                    }
                }
            )*
        }
    };
}

on_both_io_paths!(
    echo_round_trip_counts_bytes,
    connections_over_the_limit_are_told_and_closed,
    pipelined_requests_yield_every_r_requests_and_stay_in_order,
    a_client_that_never_reads_stops_being_read,
    a_request_larger_than_the_initial_buffer_is_read_whole,
    stats_conns_lists_listener_and_clients,
    shutdown_from_a_session_closes_everyone,
    ephemeral_port_is_shared_by_all_listen_addresses,
);

#[test]
fn uring_is_resolved_and_reported() {
    let server = start(IoMode::Uring, |_| {});
    assert_eq!(server.io_backend(), super::IoBackend::Uring);
    stop(server);
    let server = start(IoMode::Epoll, |_| {});
    assert_eq!(server.io_backend(), super::IoBackend::Epoll);
    stop(server);
}
