//! libmemcached's protocol checker against the real binaries.
//!
//! Runs `memccapable -a|-b -h 127.0.0.1 -p PORT -t 5` (Debian's name for
//! memcapable; `-a` = its 27 ASCII tests, `-b` = its 27 binary tests) against
//! `mrcached` (under the default `-B auto`, and the binary tests again under
//! `-B binary`), and, as a check of this harness, against memcached itself.
//! A run passes iff memccapable exits 0 and prints `All tests passed`.
//!
//! `MEMCCAPABLE_BIN` overrides the tool's path. A missing tool or memcached is
//! a failure that names the package to install, never a silent pass.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Server, ServerKind};

/// 27 tests, each bounded by `-t 5` seconds of I/O timeout; a passing run takes
/// about a second.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn memccapable() -> std::path::PathBuf {
    let path = std::env::var("MEMCCAPABLE_BIN").unwrap_or_else(|_| "/usr/bin/memccapable".into());
    common::require_tool(&path, "memccapable (libmemcached-tools)")
}

/// Runs memccapable's `mode` tests (`-a` ascii, `-b` binary) against a fresh
/// server of `kind` started with `flags`.
fn run_memccapable(kind: &ServerKind, mode: &str, flags: &[&str]) {
    let tool = memccapable();
    let server = Server::start(kind, flags);
    let port = server.port().to_string();
    let (code, output) = common::run_with_deadline(
        Command::new(&tool).args([mode, "-h", "127.0.0.1", "-p", &port, "-t", "5"]),
        RUN_TIMEOUT,
    );
    let last_line = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    println!(
        "memccapable {mode} against {} {flags:?}: {last_line}",
        kind.name()
    );
    assert!(
        code == Some(0) && output.contains("All tests passed"),
        "memccapable {mode} against {} {flags:?} failed (exit {code:?}):\n{output}",
        kind.name()
    );
    // Every test ran: one `[pass]` line per test (27 in each mode).
    let passed = output.lines().filter(|l| l.ends_with("[pass]")).count();
    assert_eq!(
        passed, 27,
        "memccapable {mode}: {passed} tests passed:\n{output}"
    );
}

#[test]
#[ignore = "needs memccapable (libmemcached-tools)"]
fn memccapable_ascii_passes_against_mrcached() {
    run_memccapable(&ServerKind::mrcached(), "-a", &[]);
}

#[test]
#[ignore = "needs memcached and memccapable (libmemcached-tools)"]
fn memccapable_ascii_passes_against_memcached() {
    run_memccapable(&ServerKind::memcached(), "-a", &[]);
}

#[test]
#[ignore = "needs memccapable (libmemcached-tools)"]
fn memccapable_binary_passes_against_mrcached() {
    run_memccapable(&ServerKind::mrcached(), "-b", &[]);
}

#[test]
#[ignore = "needs memccapable (libmemcached-tools)"]
fn memccapable_binary_passes_against_mrcached_binary_only() {
    run_memccapable(&ServerKind::mrcached(), "-b", &["-B", "binary"]);
}

#[test]
#[ignore = "needs memcached and memccapable (libmemcached-tools)"]
fn memccapable_binary_passes_against_memcached() {
    run_memccapable(&ServerKind::memcached(), "-b", &[]);
}
