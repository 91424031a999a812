//! memcached 1.6.18's `-o` options that mrcached used to refuse (`slab_chunk_max`, a bare
//! `slab_automove`, `idle_timeout`, `read_buf_mem_limit`, `temporary_ttl`): the same command lines
//! start both servers, and `stats settings` is compared row by row, byte for byte; bad values are
//! refused by both, with memcached's words where memcached has them.
//!
//! Rows only one server prints are left out: memcached's build-dependent extstore and TLS groups, and
//! mrcached's own rows after memcached's. [`KNOWN_DIFFERENT`] lists the rows that differ by design.

mod common;

use std::collections::HashMap;
use std::process::Command;
use std::time::Duration;

use common::{start_refused, stat_value, user_args, LineClient, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Rows that differ whatever the flags: each server's own port, mrcached's key hash (xxh3) and its
/// LRU (one per class, not memcached's segmented one).
const KNOWN_DIFFERENT: &[&str] = &["tcpport", "hash_algorithm", "lru_segmented"];

/// The rows these options set, which both servers must print.
const ROWS_OF_THE_OPTIONS: &[&str] = &[
    "slab_automove",
    "slab_chunk_max",
    "temp_lru",
    "temporary_ttl",
    "idle_timeout",
    "read_buf_mem_limit",
];

/// `stats settings` of a server started with `args`, as name and value in order.
fn stats_settings(kind: &ServerKind, args: &[&str]) -> Vec<(String, String)> {
    let server = Server::start(kind, args);
    LineClient::connect(server.port())
        .call("stats settings\r\n")
        .lines()
        .filter_map(|l| l.strip_prefix("STAT "))
        .map(|l| {
            let (name, value) = l.split_once(' ').unwrap();
            (name.to_string(), value.to_string())
        })
        .collect()
}

/// Compares mrcached under the slab layout, where memcached's slab options act as memcached's do (under
/// the default log layout no mover runs: see `slab_options_show_their_effect_under_the_log`).
fn same_rows_as_memcached(args: &[&str]) {
    let theirs = stats_settings(&ServerKind::memcached(), args);
    let slab_args = [&["-o", "memory_layout=slab"], args].concat();
    let ours: HashMap<String, String> = stats_settings(&ServerKind::mrcached(), &slab_args)
        .into_iter()
        .collect();
    let mut compared = Vec::new();
    for (name, value) in &theirs {
        if KNOWN_DIFFERENT.contains(&name.as_str()) {
            continue;
        }
        if let Some(ours) = ours.get(name) {
            assert_eq!(ours, value, "{args:?}: STAT {name}");
            compared.push(name.as_str());
        }
    }
    for row in ROWS_OF_THE_OPTIONS {
        assert!(compared.contains(row), "{args:?}: {row} not in both");
    }
}

#[test]
#[ignore = "needs memcached"]
fn options_memcached_accepts_show_as_memcached_shows_them() {
    same_rows_as_memcached(&[]);
    same_rows_as_memcached(&[
        "-o",
        "slab_chunk_max=16384,read_buf_mem_limit=2,temporary_ttl=30,idle_timeout=60,slab_automove",
    ]);
    // Values memcached reads with atoi, and megabytes it multiplies in 32 bits.
    same_rows_as_memcached(&[
        "-o",
        "slab_automove=2,temporary_ttl=abc,idle_timeout=-3,read_buf_mem_limit=5000",
    ]);
    same_rows_as_memcached(&["-o", "slab_automove=0,slab_automove,slab_chunk_max=512"]);
    same_rows_as_memcached(&["-I", "2m", "-o", "slab_chunk_max=1048576,temporary_ttl=0"]);
}

#[test]
fn slab_options_show_their_effect_under_the_log() {
    // Accepted (memcached's command lines start), but no class pages move under the log: `stats
    // settings` says so, also after `slabs automove`, which is acknowledged as memcached does.
    let args = ["-o", "slab_automove=2"];
    let settings: HashMap<String, String> = stats_settings(&ServerKind::mrcached(), &args)
        .into_iter()
        .collect();
    assert_eq!(settings["memory_layout"], "log");
    assert_eq!(settings["slab_automove"], "0");
    assert_eq!(settings["slab_policy"], "none");
    let server = Server::start(&ServerKind::mrcached(), &args);
    let mut c = LineClient::connect(server.port());
    for command in ["slabs automove 1\r\n", "slabs automove ratio 0.5\r\n"] {
        assert_eq!(c.call(command), "OK", "{command:?}");
    }
    let settings = c.call("stats settings\r\n");
    assert_eq!(stat_value(&settings, "slab_automove").as_deref(), Some("0"));
    assert_eq!(
        stat_value(&settings, "slab_policy").as_deref(),
        Some("none")
    );
}

/// Bad values of the options are refused by `kind`, with memcached's words where memcached has them.
fn bad_values_are_refused(kind: &ServerKind) {
    // memcached's own words, which mrcached prints after the option's name.
    for (args, words) in [
        (
            ["-o", "slab_chunk_max=1000"].as_slice(),
            "-I (item_size_max: 1048576) must be evenly divisible by slab_chunk_max (bytes: 1000)",
        ),
        (
            &["-o", "slab_chunk_max=2097152"],
            "slab_chunk_max (bytes: 2097152) cannot be larger than -I (item_size_max 1048576)",
        ),
        (
            &["-I", "2m", "-o", "slab_chunk_max=2097152"],
            "slab_chunk_max (bytes: 2097152) must divide evenly into 1048576 (slab_page_size)",
        ),
    ] {
        let (code, output) = start_refused(kind, args, TIMEOUT);
        assert_eq!(code, Some(64), "{} {args:?}: {output}", kind.name());
        assert!(output.contains(words), "{} {args:?}: {output}", kind.name());
    }
    // A value missing or not a number (memcached crashes on some of those for slab_chunk_max).
    for option in [
        "temporary_ttl",
        "idle_timeout",
        "read_buf_mem_limit",
        "read_buf_mem_limit=abc",
        "read_buf_mem_limit=-1",
    ] {
        let (code, output) = start_refused(kind, &["-o", option], TIMEOUT);
        assert!(
            code.is_some_and(|c| c != 0),
            "{} -o {option}: {code:?} {output}",
            kind.name()
        );
        let key = option.split('=').next().unwrap();
        assert!(
            output.contains(key),
            "{} -o {option}: {output}",
            kind.name()
        );
    }
}

#[test]
fn bad_values_are_refused_by_mrcached() {
    bad_values_are_refused(&ServerKind::mrcached());
}

/// The control: memcached refuses the same values with the same words.
#[test]
#[ignore = "needs memcached"]
fn bad_values_are_refused_by_memcached() {
    bad_values_are_refused(&ServerKind::memcached());
}

/// `MEMCACHED_PORT_FILENAME=FILE`: the ports listened on, as memcached writes them, there once the
/// server announces itself.
#[test]
fn the_port_file_lists_every_socket_as_memcached_writes_it() {
    use std::io::{BufRead, BufReader};
    let dir = std::env::temp_dir().join(format!("mrcached-portfile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ports");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mrcached"))
        .args(["-p", "-1", "-U", "-1", "-l", "127.0.0.1"])
        .args(user_args())
        .env("MEMCACHED_PORT_FILENAME", &file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port_of = |line: String| line.rsplit(':').next().unwrap().trim().to_string();
    let tcp = port_of(lines.next().unwrap().unwrap());
    let udp = port_of(lines.next().unwrap().unwrap());
    let written = std::fs::read_to_string(&file);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        written.unwrap(),
        format!("TCP INET: {tcp}\nUDP INET: {udp}\n"),
        "memcached 1.6.18 writes one `TRANSPORT FAMILY: PORT` line per socket"
    );
}
