//! End-to-end: short benchmarks against a real memcached started on a free loopback port.
//!
//! The tests that need /usr/bin/memcached are `#[ignore = "needs memcached"]` (scripts/test.sh runs them
//! with `--include-ignored`); run, they fail, saying how to install it, when it is absent.
//! Options go through clap, as `mrcache bench` does.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::bench;
use mrcache_loadgen::BenchError;

mod common;

const MEMCACHED: &str = "/usr/bin/memcached";

struct Memcached {
    child: Child,
    addr: String,
}

impl Memcached {
    /// Starts memcached with `extra` options; panics, saying how to install it, when it is missing.
    fn start(extra: &[&str]) -> Memcached {
        assert!(
            Path::new(MEMCACHED).exists(),
            "{MEMCACHED} not found: these tests load a real memcached; install it with \
             `apt-get install memcached`"
        );
        // A port probed free can be taken before memcached binds it: retry on a fresh one.
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let port_arg = port.to_string();
            let mut args = vec![
                "-U",
                "0",
                "-l",
                "127.0.0.1",
                "-p",
                &port_arg,
                "-m",
                "64",
                "-t",
                "2",
            ];
            // memcached refuses to run as root without -u; as another user -u is ignored.
            args.extend(["-u", "nobody"]);
            args.extend(extra);
            let mut child = Command::new(MEMCACHED)
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn memcached");
            let addr = format!("127.0.0.1:{port}");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                if TcpStream::connect(&addr).is_ok() {
                    return Memcached { child, addr };
                }
                std::thread::yield_now();
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("memcached did not start on a free port");
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs memcached"]
fn closed_loop_after_preload_hits_everything_without_errors() {
    let mc = Memcached::start(&[]);
    let opts = [
        "--connections",
        "8",
        "--keys",
        "5000",
        "--preload",
        "--value-size",
        "uniform:100-300",
        "--json",
    ];
    let (report, progress) = bench(&mc.addr, "1s", "200ms", &opts);
    let report = report.expect("bench runs");
    assert_eq!(report.errors.total(), 0, "{report}");
    assert_eq!(report.preload.unwrap().keys_set, 5000);
    assert_eq!(report.hit_ratio, Some(1.0), "{report}");
    assert!(report.throughput_ops > 1000.0, "{report}");
    assert!(report.ops.get > 0 && report.ops.set > 0);
    let total = report.latency_us["total"];
    assert!(total.p50 > 0 && total.p50 <= total.p99 && total.p99 <= total.max);
    assert!(progress.contains("ops/s"), "progress: {progress:?}");
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    for key in ["p50", "p90", "p95", "p99", "p999", "max"] {
        assert!(
            json["latency_us"]["get"][key].is_u64(),
            "missing latency_us.get.{key}"
        );
    }
    assert!(json["throughput_ops"].is_f64());
    assert_eq!(json["config"]["connections"], 8);
    // The one load thread ran for the whole window: its CPU share is positive and at most one core
    // (a little slack for the clock reads straddling the window's edges).
    let util = report
        .client_cpu_util
        .expect("the thread CPU clock exists on Linux");
    assert!(util > 0.0 && util <= 1.05, "client_cpu_util {util}");
    assert!(
        report.to_string().contains("load generator CPU:"),
        "{report}"
    );
}

#[test]
#[ignore = "needs memcached"]
fn io_uring_closed_loop_pipelined_multiget_matches_every_reply() {
    let mc = Memcached::start(&[]);
    let opts = [
        "--io",
        "uring",
        "--connections",
        "8",
        "--keys",
        "2000",
        "--preload",
        "--pipeline",
        "4",
        "--multiget",
        "3",
        "--value-size",
        "uniform:100-3000",
        "--json",
    ];
    let (report, _) = bench(&mc.addr, "1s", "200ms", &opts);
    let report = report.expect("bench runs");
    assert_eq!(report.errors.total(), 0, "{report}");
    assert_eq!(report.preload.unwrap().keys_set, 2000);
    assert_eq!(report.hit_ratio, Some(1.0), "{report}");
    assert!(report.ops.multiget > 0 && report.ops.set > 0, "{report}");
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["config"]["io"], "uring");
}

/// Writes a cache2k-format trace (big-endian u32 ids) of 1,000 requests cycling over 50 keys into a
/// fresh temporary directory named after `tag`; returns the directory (the caller removes it) and the file.
fn cycle_trace(tag: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("mrcache-bench-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cycle.trace");
    let ids: Vec<u8> = (0..1000u32)
        .flat_map(|i| (10_000 + i % 50).to_be_bytes())
        .collect();
    std::fs::write(&path, ids).unwrap();
    (dir, path)
}

#[test]
#[ignore = "needs memcached"]
fn a_trace_replays_its_keys_and_lookaside_fills_them() {
    let mc = Memcached::start(&[]);
    let (dir, path) = cycle_trace("trace");
    let popularity = format!("trace:{}", path.display());
    let opts = [
        "--connections",
        "2",
        "--popularity",
        &popularity,
        "--get-ratio",
        "1",
        "--lookaside",
        "--key-size",
        "16",
    ];
    let (report, _) = bench(&mc.addr, "500ms", "200ms", &opts);
    std::fs::remove_dir_all(&dir).unwrap();
    let report = report.expect("bench runs");
    assert_eq!(report.errors.total(), 0, "{report}");
    assert_eq!(report.config.keys, 50, "the key space is the trace's");
    // The 50 keys missed once each, during the warm-up, and were filled: every measured get hits.
    assert_eq!(report.hit_ratio, Some(1.0), "{report}");
    assert!(
        report.ops.get > 1000,
        "more than one pass of the trace: {report}"
    );
    assert!(report.to_string().contains("popularity trace:"), "{report}");
}

/// The server's `stats` counter `name`.
fn server_stat(addr: &str, name: &str) -> u64 {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"stats\r\n").unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.ends_with(b"END\r\n") {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "stats ended early");
        buf.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8(buf).unwrap();
    let prefix = format!("STAT {name} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .parse()
        .unwrap()
}

#[test]
#[ignore = "needs memcached"]
fn once_replays_a_trace_exactly_once_in_order_and_requests_caps_a_run() {
    let mc = Memcached::start(&[]);
    // Each key's first request is at position i < 50, then the trace cycles.
    let (dir, path) = cycle_trace("once");
    let popularity = format!("trace:{}", path.display());
    let replay = [
        "--connections",
        "1",
        "--popularity",
        &popularity,
        "--get-ratio",
        "1",
        "--lookaside",
        "--key-size",
        "16",
        "--value-size",
        "etc",
        "--once",
    ];
    // --duration is far longer than the pass: the pass, not the clock, ends the run.
    let started = Instant::now();
    let (report, _) = bench(&mc.addr, "60s", "0s", &replay);
    let report = report.expect("bench runs");
    assert!(started.elapsed() < Duration::from_secs(30), "{report}");
    assert_eq!(report.errors.total(), 0, "{report}");
    assert_eq!(report.ops.get, 1000, "one pass: {report}");
    // In order on one connection, each key misses once, on its first request, and is set then.
    assert_eq!(report.ops.lookaside_set, 50, "{report}");
    assert_eq!(server_stat(&mc.addr, "cmd_get"), 1000);
    assert_eq!(server_stat(&mc.addr, "get_misses"), 50);
    assert_eq!(server_stat(&mc.addr, "cmd_set"), 50);
    assert!(report.measured_secs > 0.0 && report.measured_secs < 30.0);
    // --requests caps the run below one pass (the trace's cursor runs on from where it stopped).
    let mut capped = replay.to_vec();
    capped.extend(["--requests", "300"]);
    let (report, _) = bench(&mc.addr, "60s", "0s", &capped);
    let report = report.expect("bench runs");
    assert_eq!(report.ops.get, 300, "{report}");
    assert_eq!(
        report.hit_ratio,
        Some(1.0),
        "every key was filled: {report}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Options that cannot make a run are refused before any connection: no server is needed (nothing
/// listens on port 1 of 127.0.0.1; a run that went as far as connecting would fail otherwise).
#[test]
fn bad_trace_options_are_refused_before_connecting() {
    let nowhere = "127.0.0.1:1";
    for (options, named) in [
        (
            ["--popularity", "trace:/nonexistent/x.trace"].as_slice(),
            "/nonexistent/x.trace",
        ),
        (&["--once"], "--once"),
        (&["--requests", "10", "--qos", "p99=1ms"], "--qos"),
    ] {
        let err = bench(nowhere, "1s", "0s", options).0.unwrap_err();
        assert!(
            !matches!(err, BenchError::Connect { .. }),
            "{options:?}: {err}"
        );
        assert!(err.to_string().contains(named), "{options:?}: {err}");
    }
}

#[test]
#[ignore = "needs memcached"]
fn open_loop_lookaside_multiget_follows_the_rate_and_fills_misses() {
    let mc = Memcached::start(&[]);
    let opts = [
        "--rate",
        "2000",
        "--multiget",
        "4",
        "--lookaside",
        "--backend-delay",
        "50us",
        "--keys",
        "1000",
        "--key-size",
        "16",
        "--popularity",
        "zipf:0.9",
        "--get-ratio",
        "1",
        "--connections",
        "4",
    ];
    let (report, _) = bench(&mc.addr, "1s", "200ms", &opts);
    let report = report.expect("bench runs");
    assert_eq!(report.errors.total(), 0, "{report}");
    assert_eq!(report.mode, "open");
    // Offered 2000 multi-gets/s: Poisson over one second stays well within 15%.
    let multigets = report.ops.multiget as f64 / report.measured_secs;
    assert!((1700.0..2300.0).contains(&multigets), "{report}");
    assert!(report.ops.lookaside_set > 0, "{report}");
    assert_eq!(report.ops.set, report.ops.lookaside_set);
    let hit = report.hit_ratio.unwrap();
    assert!(hit > 0.0 && hit < 1.0, "{report}");
}

#[test]
#[ignore = "needs memcached"]
fn qos_search_meets_a_loose_target_at_the_given_rate() {
    let mc = Memcached::start(&[]);
    let opts = ["--rate", "1000", "--qos", "p99=100ms"];
    let (report, _) = bench(&mc.addr, "300ms", "100ms", &opts);
    let qos = report.expect("bench runs").qos.expect("qos report");
    assert_eq!(qos.search.steps.len(), 1, "{qos:?}");
    assert!(qos.search.best.unwrap().met);
}

#[test]
#[ignore = "needs memcached"]
fn tenants_authenticate_and_bad_credentials_are_an_error() {
    let dir = std::env::temp_dir().join(format!("mrcache-loadgen-auth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let auth = dir.join("auth");
    std::fs::write(&auth, "alice:pw1\nbob:pw2\n").unwrap();
    let auth = auth.to_str().unwrap().to_string();
    let mc = Memcached::start(&["-Y", &auth]);
    let opts = [
        "--connections",
        "4",
        "--tenant",
        "alice:pw1:3:a:",
        "--tenant",
        "bob:pw2:1:b:",
    ];
    let (report, _) = bench(&mc.addr, "500ms", "0s", &opts);
    let report = report.expect("bench runs");
    assert_eq!(report.errors.total(), 0, "{report}");
    assert_eq!(report.tenants.len(), 2);
    assert!(report.tenants[0].ops > report.tenants[1].ops, "{report}");
    let (bad, _) = bench(&mc.addr, "200ms", "2s", &["--tenant", "alice:nope:1:a:"]);
    assert!(matches!(bad, Err(BenchError::Auth { .. })), "{bad:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_unreachable_server_is_an_error_not_a_statistic() {
    // Bound but never listening: the port stays ours for the whole test (no other test's server
    // can be started on it) and every connection to it is refused.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
    let port = socket.local_addr().unwrap().as_socket().unwrap().port();
    let (report, _) = bench(&format!("127.0.0.1:{port}"), "200ms", "2s", &[]);
    drop(socket);
    assert!(
        matches!(report, Err(BenchError::Connect { .. })),
        "{report:?}"
    );
}
