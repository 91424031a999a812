//! Failure handling against small misbehaving servers run in-process: errors are counted, dropped
//! connections are reopened, silent servers time out, and every run ends on time. Each test runs on both
//! of the load generator's I/O paths (`--io epoll` and `--io uring`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use mrcache_loadgen::Report;

mod common;

/// A run that must complete, however the server misbehaves.
fn bench(addr: &str, duration: &str, io: &str, options: &[&str]) -> Report {
    let mut options = options.to_vec();
    options.extend(["--io", io]);
    common::bench(addr, duration, "0s", &options)
        .0
        .expect("bench runs")
}

/// Serves each connection on its own thread with `handle`; returns the address.
fn serve(handle: fn(TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || handle(stream));
        }
    });
    addr
}

/// Misses every get, refuses every set with SERVER_ERROR, and hangs up after 50 commands.
fn flaky(stream: TcpStream) {
    let mut out = stream.try_clone().unwrap();
    let mut input = BufReader::new(stream);
    let mut line = String::new();
    for _ in 0..50 {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let reply: &[u8] = if line.starts_with("get ") {
            b"END\r\n"
        } else if let Some(len) = line.split(' ').nth(4) {
            let mut data = vec![0; len.trim().parse::<usize>().unwrap() + 2];
            input.read_exact(&mut data).unwrap();
            b"SERVER_ERROR out of memory storing object\r\n"
        } else {
            b"ERROR\r\n"
        };
        if out.write_all(reply).is_err() {
            return;
        }
    }
}

/// Reads everything, answers nothing.
fn silent(mut stream: TcpStream) {
    let mut sink = [0u8; 4096];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
}

fn server_errors_and_hang_ups_are_counted_and_connections_reopened(io: &str) {
    let addr = serve(flaky);
    let report = bench(
        &addr,
        "500ms",
        io,
        &["--connections", "2", "--get-ratio", "0.5"],
    );
    assert!(report.errors.server_errors > 0, "{report}");
    assert!(report.errors.connection_resets > 0, "{report}");
    assert!(
        report
            .last_error
            .as_deref()
            .unwrap_or("")
            .starts_with("SERVER_ERROR"),
        "{report}"
    );
    // Each connection serves only 50 commands, so more than 100 replies means reconnects worked.
    assert!(
        report.ops.get + report.errors.server_errors > 100,
        "{report}"
    );
    assert_eq!(report.hit_ratio, Some(0.0));
}

fn a_silent_server_times_out_within_the_run_bound(io: &str) {
    let addr = serve(silent);
    let started = Instant::now();
    let report = bench(
        &addr,
        "300ms",
        io,
        &["--timeout", "200ms", "--connections", "3"],
    );
    // Bound: duration + one timeout of drain, plus start-up slack.
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        started.elapsed()
    );
    assert!(report.errors.timeouts >= 3, "{report}");
    assert_eq!(report.ops.total, 0);
}

fn an_open_loop_against_a_silent_server_reports_its_backlog_as_unsent(io: &str) {
    let addr = serve(silent);
    let report = bench(
        &addr,
        "300ms",
        io,
        &["--timeout", "100ms", "--rate", "1000"],
    );
    // 300 arrivals were due; the few sent time out, the rest could never be sent.
    assert!(
        report.errors.unsent + report.errors.timeouts > 200,
        "{report}"
    );
    assert_eq!(report.throughput_ops, 0.0);
}

/// Runs each test body once per client I/O path.
macro_rules! on_both_io_paths {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn epoll() {
                    super::$name("epoll");
                }

                #[test]
                fn uring() {
                    super::$name("uring");
                }
            }
        )*
    };
}

on_both_io_paths!(
    server_errors_and_hang_ups_are_counted_and_connections_reopened,
    a_silent_server_times_out_within_the_run_bound,
    an_open_loop_against_a_silent_server_reports_its_backlog_as_unsent,
);
