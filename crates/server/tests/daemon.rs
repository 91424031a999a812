//! `-d` and `-P`, end to end: the daemon detaches (new session, working in `/`, standard descriptors on
//! `/dev/null`) and its starting process exits 0 only once it serves and its pid file is written; it
//! removes the pid file at a clean stop. Without `-d` the pid file is written and left, as memcached
//! leaves it. A daemon that cannot start, or a pid file that cannot be written, fails the start with
//! the reason on the terminal.
//!
//! A daemon is not our child and its stdout cannot announce a port, so it listens on a port
//! [`free_port`] picked, is found by its pid file, and is killed by a guard whatever the outcome.
//! memcached 1.6.18 runs as the control for what a pid file holds and when it goes; its starting
//! process exits before it serves, so that run polls, with a deadline.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{free_port, run_with_deadline, stat_value, user_args, LineClient, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

/// A fresh directory for one test's files, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("mrcached-daemon-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Kills a process that is not our child (a daemon) when dropped, unless it was seen to exit (its pid
/// may then be another process's).
struct Kill(Option<u32>);

impl Kill {
    /// Sends `sig` and waits, bounded, until the process has exited.
    fn stop_with(&mut self, sig: libc::c_int) {
        let pid = self.0.expect("not stopped yet");
        signal(pid, sig);
        wait_until("the daemon stops", || exited(pid));
        self.0 = None;
    }
}

impl Drop for Kill {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            signal(pid, libc::SIGKILL);
        }
    }
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) takes no memory; at worst the process is already gone.
    unsafe { libc::kill(pid as libc::pid_t, sig) };
}

/// Whether `pid` has exited (gone, or a zombie its new parent has not reaped).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .unwrap()
            .trim_start()
            .starts_with('Z'),
        Err(_) => true,
    }
}

/// Waits, bounded, until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not after {TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The pid a pid file holds, checking its form (`PID\n`).
fn pid_in(file: &Path) -> u32 {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.ends_with('\n'), "{text:?}");
    text.trim_end().parse().unwrap()
}

/// `stats`' `pid` from the server on `port`.
fn served_pid(port: u16) -> u32 {
    let stats = LineClient::connect(port).call("stats\r\n");
    stat_value(&stats, "pid").unwrap().parse().unwrap()
}

fn mrcached() -> Command {
    let ServerKind::Mrcached(path) = ServerKind::mrcached() else {
        unreachable!()
    };
    let mut command = Command::new(path);
    command.args(user_args());
    command
}

fn listen_args(port: u16) -> [String; 6] {
    ["-p", &port.to_string(), "-l", "127.0.0.1", "-U", "0"].map(str::to_string)
}

#[test]
fn a_daemon_detaches_serves_and_removes_its_pid_file_at_a_clean_stop() {
    let dir = Scratch::new("detach");
    let port = free_port();
    // A relative pid file is written where the daemon was started, although it works in `/`.
    let (code, output) = run_with_deadline(
        mrcached()
            .current_dir(&dir.0)
            .args(["-d", "-P", "daemon.pid"])
            .args(listen_args(port)),
        TIMEOUT,
    );
    assert_eq!(code, Some(0), "{output}");
    // The starting process has exited: the daemon serves and its pid file is there already.
    let pid_file = dir.0.join("daemon.pid");
    let pid = pid_in(&pid_file);
    let mut daemon = Kill(Some(pid));
    assert_eq!(served_pid(port), pid);

    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let (pgrp, session) = (fields[2], fields[3]);
    assert_eq!(
        (pgrp, session),
        (&*pid.to_string(), &*pid.to_string()),
        "a session of its own"
    );
    assert_eq!(
        std::fs::read_link(format!("/proc/{pid}/cwd")).unwrap(),
        Path::new("/")
    );
    for fd in 0..=2 {
        assert_eq!(
            std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).unwrap(),
            Path::new("/dev/null"),
            "descriptor {fd}"
        );
    }

    daemon.stop_with(libc::SIGTERM);
    assert!(
        !pid_file.exists(),
        "the pid file is removed at a clean stop"
    );
}

#[test]
fn a_daemon_that_cannot_start_fails_its_start_with_the_reason() {
    let dir = Scratch::new("taken");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let pid_file = dir.0.join("m.pid");
    let (code, output) = run_with_deadline(
        mrcached()
            .arg("-d")
            .arg("-P")
            .arg(&pid_file)
            .args(listen_args(port)),
        TIMEOUT,
    );
    assert_eq!(code, Some(1), "{output}");
    assert!(output.contains("Address already in use"), "{output}");
    assert!(!pid_file.exists());
}

#[test]
fn a_pid_file_that_cannot_be_written_stops_start_up() {
    let dir = Scratch::new("unwritable");
    let pid_file = dir.0.join("no-such-dir/m.pid");
    for daemon in [true, false] {
        let mut command = mrcached();
        if daemon {
            command.arg("-d");
        }
        let (code, output) = run_with_deadline(
            command
                .arg("-P")
                .arg(&pid_file)
                .args(listen_args(free_port())),
            TIMEOUT,
        );
        assert_eq!(code, Some(1), "-d {daemon}: {output}");
        assert!(
            output.contains(&format!(
                "mrcached: -P/--pidfile: cannot write {}: No such file or directory",
                pid_file.display()
            )),
            "-d {daemon}: {output}"
        );
    }
}

/// Without `-d` both servers write the pid file once they serve, and leave it when they stop.
fn without_d_the_pid_file_is_written_and_left(kind: &ServerKind) {
    let dir = Scratch::new(&format!("foreground-{}", kind.name()));
    let pid_file = dir.0.join(format!("{}.pid", kind.name()));
    let mut server = Server::start(kind, &["-P", pid_file.to_str().unwrap()]);
    // memcached writes it just after it starts accepting; mrcached before it says so.
    wait_until("the pid file", || pid_file.exists());
    assert_eq!(pid_in(&pid_file), server.pid(), "{}", kind.name());
    signal(server.pid(), libc::SIGTERM);
    wait_until("a stop on SIGTERM", || server.exit_status().is_some());
    assert!(pid_file.exists(), "{}: the pid file is left", kind.name());
}

#[test]
fn without_d_mrcached_writes_the_pid_file_and_leaves_it() {
    without_d_the_pid_file_is_written_and_left(&ServerKind::mrcached());
}

/// The control for the test above.
#[test]
#[ignore = "needs memcached"]
fn without_d_memcached_writes_the_pid_file_and_leaves_it() {
    without_d_the_pid_file_is_written_and_left(&ServerKind::memcached());
}

/// The control: memcached's daemon writes its pid file once it serves and removes it at a clean stop.
#[test]
#[ignore = "needs memcached"]
fn memcached_daemon_removes_its_pid_file_at_a_clean_stop() {
    let ServerKind::Memcached(path) = ServerKind::memcached() else {
        unreachable!()
    };
    let dir = Scratch::new("memcached");
    let pid_file = dir.0.join("memcached.pid");
    let port = free_port();
    let mut command = Command::new(path);
    command
        .arg("-d")
        .arg("-P")
        .arg(&pid_file)
        .args(listen_args(port))
        .args(user_args());
    let (code, output) = run_with_deadline(&mut command, TIMEOUT);
    assert_eq!(code, Some(0), "{output}");
    wait_until("memcached's pid file", || pid_file.exists());
    let pid = pid_in(&pid_file);
    let mut daemon = Kill(Some(pid));
    assert_eq!(served_pid(port), pid);
    daemon.stop_with(libc::SIGTERM);
    assert!(!pid_file.exists());
}
