//! The online miss-ratio curves as users read them from a running `mrcached`: `stats mrc`, `stats mrc N`,
//! and the admin port's `/mrc` (JSON) and `/metrics` (Prometheus text).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use common::{free_port, http_get, Server, ServerKind};

/// Sends one command and reads up to `END`.
fn command(conn: &mut BufReader<TcpStream>, cmd: &str) -> String {
    conn.get_mut().write_all(cmd.as_bytes()).unwrap();
    let mut reply = String::new();
    loop {
        let mut line = String::new();
        conn.read_line(&mut line).expect("reply");
        reply += &line;
        if line == "END\r\n"
            || line.starts_with("ERROR")
            || line.starts_with("CLIENT_ERROR")
            || line.is_empty()
        {
            return reply;
        }
    }
}

#[test]
fn curves_are_reported_by_stats_and_the_admin_port() {
    let admin_port = free_port();
    let admin = admin_port.to_string();
    let server = Server::start(
        &ServerKind::mrcached(),
        &[
            "-m",
            "16",
            "--admin-port",
            &admin,
            "-o",
            "mrc_sample_rate=0.2",
        ],
    );
    let mut conn = BufReader::new(server.connect(Duration::from_secs(5)).unwrap());
    // A reused key space of 100-byte values (one class), with the lookaside pattern.
    let mut rng = 12345u64;
    for _ in 0..20_000 {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = format!("k{}", (rng >> 33) % 5000);
        let reply = command(&mut conn, &format!("get {key}\r\n"));
        if reply == "END\r\n" {
            conn.get_mut()
                .write_all(format!("set {key} 0 0 100\r\n{}\r\n", "v".repeat(100)).as_bytes())
                .unwrap();
            let mut line = String::new();
            conn.read_line(&mut line).unwrap();
            assert_eq!(line, "STORED\r\n");
        }
    }
    let all = command(&mut conn, "stats mrc\r\n");
    assert!(all.contains("STAT profiling 1\r\n"), "{all}");
    let class_line = all
        .lines()
        .find(|l| l.ends_with(":requests 20000") || l.contains(":requests "))
        .unwrap();
    let class: u8 = class_line
        .trim_start_matches("STAT ")
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let one = command(&mut conn, &format!("stats mrc {class}\r\n"));
    let curve = one
        .lines()
        .find(|l| l.contains(":mrc_pages "))
        .expect("a curve line");
    let points: Vec<(usize, f64)> = curve
        .split_whitespace()
        .nth(2)
        .unwrap()
        .split(',')
        .map(|p| {
            let (pages, ratio) = p.split_once(':').unwrap();
            (pages.parse().unwrap(), ratio.parse().unwrap())
        })
        .collect();
    assert!(!points.is_empty());
    assert!(
        points.windows(2).all(|w| w[1].1 <= w[0].1 + 1e-9),
        "curves never rise: {curve}"
    );
    // 5000 keys of ~170 B fit in one page of this class: at one page only cold misses remain (25%).
    assert!(points[0].1 < 0.4, "{curve}");
    assert_eq!(
        command(&mut conn, "stats mrc 99\r\n"),
        "CLIENT_ERROR bad command line format\r\n"
    );

    let (status, json) = http_get(admin_port, "/mrc");
    assert_eq!(status, 200);
    assert!(
        json.starts_with('{')
            && json.contains("\"curve_pages\"")
            && json.contains("\"profiler_memory_bytes\""),
        "{json}"
    );
    let (status, json) = http_get(admin_port, &format!("/mrc?class={class}"));
    assert_eq!(status, 200);
    assert!(json.contains(&format!("\"class\":{class}")));
    assert_eq!(http_get(admin_port, "/mrc?class=0").0, 400);
    let (status, metrics) = http_get(admin_port, "/metrics");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("# TYPE mrcached_get_hits_total counter"),
        "{metrics}"
    );
    assert_eq!(http_get(admin_port, "/nope").0, 404);
}
