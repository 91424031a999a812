//! libmemcached's protocol checker against the real binaries.
//!
//! Runs `memccapable -a -h 127.0.0.1 -p PORT -t 5` (Debian's name for
//! memcapable; `-a` = the 27 ASCII tests, since mrcached speaks text and meta
//! only) against `mrcached`, and, as a check of this harness, against memcached
//! itself. A run passes iff memccapable exits 0 and prints `All tests passed`.
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

fn run_memccapable(kind: &ServerKind) {
    let tool = memccapable();
    let server = Server::start(kind, &[]);
    let port = server.port().to_string();
    let (code, output) = common::run_with_deadline(
        Command::new(&tool).args(["-a", "-h", "127.0.0.1", "-p", &port, "-t", "5"]),
        RUN_TIMEOUT,
    );
    let last_line = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    println!("memccapable against {}: {last_line}", kind.name());
    assert!(
        code == Some(0) && output.contains("All tests passed"),
        "memccapable against {} failed (exit {code:?}):\n{output}",
        kind.name()
    );
}

#[test]
fn memccapable_ascii_passes_against_mrcached() {
    run_memccapable(&ServerKind::mrcached());
}

#[test]
fn memccapable_ascii_passes_against_memcached() {
    run_memccapable(&ServerKind::memcached());
}
