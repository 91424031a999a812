//! `-u`, end to end, against memcached 1.6.18's behaviour: started as root, mrcached refuses to run
//! without `-u` (memcached's message and `EX_USAGE`), refuses a user the system does not know
//! (`EX_NOUSER`), and with `-u nobody` serves as nobody, with nobody's group and no supplementary
//! groups, having dropped root before binding its port (so a port below 1024 is refused, as
//! memcached refuses it). Started as another user, `-u` is ignored, even naming no user at all.
//!
//! These tests are about root: they need it, and fail (they are not skipped) without it; the project's
//! test runs have it. memcached runs as the control in tests of their own, ignored unless asked for
//! (`--include-ignored`, as scripts/test.sh runs them), where a missing memcached fails them.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{nobody, require_tool, run_with_deadline, Announced, LineClient, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Started as root without `-u`, with an empty one or with a user the system does not know: the
/// arguments, memcached's exit status and its message.
const ROOT_REFUSALS: [(&[&str], i32, &str); 3] = [
    (&[], 64, "can't run as root without the -u switch\n"),
    (&["-u", ""], 64, "can't run as root without the -u switch\n"),
    (
        &["-u", "no-such-user-mrcached"],
        67,
        "can't find the user no-such-user-mrcached to switch to\n",
    ),
];

/// Debian's memcached (`MEMCACHED_BIN` overrides it); a test that needs it fails without it.
fn memcached() -> String {
    let ServerKind::Memcached(path) = ServerKind::memcached() else {
        unreachable!()
    };
    path.to_str().unwrap().to_string()
}

fn require_root() {
    assert!(
        mrcache_server::privileges::running_as_root(),
        "this test needs root (what -u does depends on it); run the suite as root"
    );
}

/// Exit status and output of `program` with `args` on 127.0.0.1:`port`, expected to refuse to start.
fn refused(program: &str, port: &str, args: &[&str]) -> (Option<i32>, String) {
    run_with_deadline(
        Command::new(program)
            .args(["-U", "0", "-l", "127.0.0.1", "-p", port])
            .args(args),
        TIMEOUT,
    )
}

/// The ids in one line (`Uid:`, `Gid:`, `Groups:`) of /proc/PID/status.
fn ids(pid: u32, field: &str) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("/proc status")
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("{field} in /proc status"))
        .split_whitespace()
        .map(|id| id.parse().unwrap())
        .collect()
}

#[test]
fn root_without_u_or_with_an_unknown_user_is_refused_as_memcached_refuses_it() {
    require_root();
    let mrcached = env!("CARGO_BIN_EXE_mrcached");
    for (args, status, message) in ROOT_REFUSALS {
        assert_eq!(
            refused(mrcached, "0", args),
            (Some(status), message.to_string()),
            "mrcached {args:?}"
        );
    }
}

/// The control for the test above: memcached refuses the same command lines with these words.
#[test]
#[ignore = "needs memcached"]
fn memcached_refuses_root_without_u_or_with_an_unknown_user() {
    require_root();
    let memcached = memcached();
    for (args, status, message) in ROOT_REFUSALS {
        assert_eq!(
            refused(&memcached, "0", args),
            (Some(status), message.to_string()),
            "memcached {args:?} (the control)"
        );
    }
}

#[test]
fn root_with_u_serves_as_that_user_having_dropped_root_before_binding() {
    require_root();
    let (uid, gid) = nobody();
    let server = Announced::start(Command::new(env!("CARGO_BIN_EXE_mrcached")).args([
        "-U",
        "0",
        "-l",
        "127.0.0.1",
        "-p",
        "0",
        "-t",
        "2",
        "-u",
        "nobody",
    ]));
    let pid = server.child.id();
    assert_eq!(ids(pid, "Uid:"), [uid; 4], "real, effective, saved, fs uid");
    assert_eq!(ids(pid, "Gid:"), [gid; 4], "real, effective, saved, fs gid");
    assert!(ids(pid, "Groups:").is_empty(), "no supplementary groups");
    // Every thread, not only the first.
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap();
        assert!(status.contains(&format!("\nUid:\t{uid}\t")), "{status}");
    }
    let mut c = LineClient::connect(server.addr.port());
    assert_eq!(c.call("set k 0 0 1\r\nv\r\n"), "STORED");
    assert_eq!(c.call("get k\r\n"), "VALUE k 0 1\nv\nEND");

    // Root is gone before the sockets are bound: port 1 needs it, under mrcached as under memcached.
    let (status, output) = refused(env!("CARGO_BIN_EXE_mrcached"), "1", &["-u", "nobody"]);
    assert!(
        status.is_some_and(|s| s != 0) && output.contains("Permission denied"),
        "{status:?} {output}"
    );
}

/// The control: memcached with `-u nobody` cannot bind port 1 either.
#[test]
#[ignore = "needs memcached"]
fn memcached_drops_root_before_binding() {
    require_root();
    let (status, output) = refused(&memcached(), "1", &["-u", "nobody"]);
    assert!(
        status.is_some_and(|s| s != 0) && output.contains("Permission denied"),
        "memcached, the control: {status:?} {output}"
    );
}

#[test]
fn a_process_that_is_not_root_ignores_u() {
    require_root();
    let setpriv = require_tool("/usr/bin/setpriv", "setpriv (util-linux)");
    let (uid, gid) = nobody();
    let server = Announced::start(
        Command::new(setpriv)
            .arg(format!("--reuid={uid}"))
            .arg(format!("--regid={gid}"))
            .arg("--clear-groups")
            .arg(env!("CARGO_BIN_EXE_mrcached"))
            .args(["-U", "0", "-l", "127.0.0.1", "-p", "0"])
            .args(["-u", "no-such-user-mrcached"]),
    );
    assert_eq!(ids(server.child.id(), "Uid:")[1], uid);
    let mut c = LineClient::connect(server.addr.port());
    assert_eq!(c.call("version\r\n").split(' ').next(), Some("VERSION"));
}
