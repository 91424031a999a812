//! End to end: the latency-isolation options against the real `mrcached` binary (`crate::isolation`,
//! `tenants::rate_limit`).
//!
//! - `-o worker_cpus` pins each worker to its CPU and the listener/maintenance threads to the workers'
//!   CPUs (or to `service_cpus`), read back from `/proc/PID/task/*/status`; bad lists are refused with
//!   exit status 64 and a message naming the option.
//! - `-o sched=fifo:PRIO` runs the workers under SCHED_FIFO (read back from `/proc/PID/task/*/stat`) when
//!   the process may, and without the privilege (CAP_SYS_NICE removed from the bounding set by
//!   setpriv(1), which must be installed) start-up fails naming the option, instead of serving without it.
//! - `rate_limit` in `--config` answers `SERVER_ERROR tenant rate limit exceeded` beyond the burst,
//!   counts it in `stats tenants`, recovers at the configured rate, is shared by a tenant's connections,
//!   and follows a SIGHUP reload (a bad value is refused and the old limit stays).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use mrcache_server::isolation::CpuList;

use common::{
    require_tool, run_with_deadline, stat_value, user_args, LineClient as Client, Server,
    ServerKind,
};

const TIMEOUT: Duration = Duration::from_secs(10);

fn mrcached_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_mrcached"))
}

/// One thread of a process as /proc shows it.
#[derive(Debug)]
struct ThreadInfo {
    comm: String,
    cpus: String,
    /// stat(5) field 41 (0 SCHED_OTHER, 1 SCHED_FIFO, 2 SCHED_RR) and field 40 (rt_priority).
    policy: u32,
    rt_priority: u32,
}

fn threads(pid: u32) -> Vec<ThreadInfo> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).expect("/proc/PID/task") {
        let dir = entry.unwrap().path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let status = read("status");
        let cpus = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_string())
            .unwrap_or_default();
        let stat = read("stat");
        // Fields after the parenthesised comm, which may contain spaces: field 3 is the first.
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let fields: Vec<&str> = after.split_whitespace().collect();
        let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse().ok()).unwrap_or(0);
        out.push(ThreadInfo {
            comm: read("comm").trim().to_string(),
            cpus,
            policy: field(41),
            rt_priority: field(40),
        });
    }
    out
}

/// The threads whose name starts with `prefix` (comm is cut at 15 bytes: `mrcached-worker`).
fn named<'a>(all: &'a [ThreadInfo], prefix: &str) -> Vec<&'a ThreadInfo> {
    all.iter().filter(|t| t.comm.starts_with(prefix)).collect()
}

/// The CPUs this test may run on (the server inherits them), as /proc lists them.
fn allowed_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap();
    CpuList::parse(list.trim()).unwrap().cpus().to_vec()
}

/// Runs mrcached to its exit (it must exit: these command lines are refused) and returns its status
/// and output.
fn run_refused(prefix: &[&str], args: &[&str]) -> (Option<i32>, String) {
    let (program, pre) = match prefix.split_first() {
        Some((p, rest)) => (PathBuf::from(p), rest.to_vec()),
        None => (mrcached_bin(), Vec::new()),
    };
    let mut command = Command::new(program);
    command.args(pre);
    if !prefix.is_empty() {
        command.arg(mrcached_bin());
    }
    command
        .args(["-U", "0", "-l", "127.0.0.1", "-p", "0"])
        .args(user_args())
        .args(args);
    run_with_deadline(&mut command, TIMEOUT)
}

#[test]
fn worker_cpus_pins_each_worker_and_the_service_threads() {
    let allowed = allowed_cpus();
    // Two CPUs where there are two, so that "each worker its own CPU" is visible.
    let cpus: Vec<usize> = allowed.iter().rev().take(2).copied().collect();
    let list = cpus
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mut sorted = cpus.clone();
    sorted.sort_unstable();

    let opt = format!("worker_cpus={list}");
    let server = Server::start(&ServerKind::mrcached(), &["-t", "4", "-o", &opt]);
    let all = threads(server.pid());
    let workers = named(&all, "mrcached-worker");
    assert_eq!(workers.len(), 4, "{all:?}");
    let mut got: Vec<String> = workers.iter().map(|t| t.cpus.clone()).collect();
    got.sort();
    // Worker i on the i-th CPU (ascending), in turn: with 2 CPUs two workers each, with 1 all four.
    let mut want: Vec<String> = (0..4)
        .map(|i| sorted[i % sorted.len()].to_string())
        .collect();
    want.sort();
    assert_eq!(got, want, "{all:?}");
    // The listener and maintenance threads follow the workers' CPUs by default.
    // As /proc writes the list: ranges collapsed (`2-3`), as `CpuList` displays it.
    let whole = CpuList::parse(&list).unwrap().to_string();
    for name in ["mrcached-listen", "mrcached-mainte"] {
        let t = named(&all, name);
        assert_eq!(t.len(), 1, "{name}: {all:?}");
        assert_eq!(t[0].cpus, whole, "{name}");
    }
    drop(server);

    // service_cpus gives them their own CPU; `any` leaves them unpinned.
    let own = allowed[0].to_string();
    let service = format!("service_cpus={own}");
    let server = Server::start(
        &ServerKind::mrcached(),
        &[
            "-t",
            "1",
            "-o",
            &format!("worker_cpus={}", sorted[0]),
            "-o",
            &service,
        ],
    );
    let all = threads(server.pid());
    assert_eq!(named(&all, "mrcached-listen")[0].cpus, own, "{all:?}");
    assert_eq!(named(&all, "mrcached-mainte")[0].cpus, own, "{all:?}");
    assert_eq!(
        named(&all, "mrcached-worker")[0].cpus,
        sorted[0].to_string()
    );
    drop(server);
    let server = Server::start(
        &ServerKind::mrcached(),
        &[
            "-t",
            "1",
            "-o",
            &format!("worker_cpus={},service_cpus=any", sorted[0]),
        ],
    );
    let all = threads(server.pid());
    let main = all
        .iter()
        .find(|t| t.comm == "mrcached")
        .unwrap()
        .cpus
        .clone();
    assert_eq!(named(&all, "mrcached-listen")[0].cpus, main, "{all:?}");
    assert_eq!(
        named(&all, "mrcached-worker")[0].cpus,
        sorted[0].to_string()
    );
}

#[test]
fn bad_cpu_lists_are_refused_naming_the_option() {
    let outside = allowed_cpus().iter().max().unwrap() + 1;
    let outside_opt = format!("worker_cpus={outside}");
    let cases: [(&str, &str, &str); 6] = [
        ("worker_cpus=abc", "-o worker_cpus", "not a CPU number"),
        ("worker_cpus=1-0", "-o worker_cpus", "backwards"),
        ("worker_cpus=0,0", "-o worker_cpus", "twice"),
        ("worker_cpus=4096", "-o worker_cpus", "beyond"),
        (
            &outside_opt,
            "-o worker_cpus",
            "not in this process's allowed CPUs",
        ),
        ("service_cpus=x", "-o service_cpus", "not a CPU number"),
    ];
    for (opt, option, why) in cases {
        let (status, output) = run_refused(&[], &["-o", opt]);
        assert_eq!(status, Some(64), "-o {opt}: {output}");
        assert!(
            output.contains(option) && output.contains(why),
            "-o {opt}: {output}"
        );
    }
    // A CPU allowed to the machine but not to this process (taskset narrows the allowed set).
    let allowed = allowed_cpus();
    if allowed.len() >= 2 {
        let taskset = require_tool("/usr/bin/taskset", "taskset (util-linux)");
        let only = allowed[0].to_string();
        let opt = format!("worker_cpus={}", allowed[1]);
        let (status, output) =
            run_refused(&[taskset.to_str().unwrap(), "-c", &only], &["-o", &opt]);
        assert_eq!(status, Some(64), "{output}");
        assert!(
            output.contains("-o worker_cpus") && output.contains("allowed CPUs"),
            "{output}"
        );
    }
    for bad in ["fifo", "fifo:0", "fifo:100", "idle", "other:1"] {
        let (status, output) = run_refused(&[], &["-o", &format!("sched={bad}")]);
        assert_eq!(status, Some(64), "sched={bad}: {output}");
        assert!(output.contains("-o sched"), "sched={bad}: {output}");
    }
}

#[test]
fn sched_fifo_runs_the_workers_real_time() {
    // Root (or CAP_SYS_NICE) is what this test is about; the project's test runs have it.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(str::to_string))
        .unwrap();
    assert_eq!(
        euid, "0",
        "this test needs root (SCHED_FIFO for the workers); run the suite as root"
    );
    for (opt, policy) in [("sched=fifo:10", 1), ("sched=rr:7", 2)] {
        let server = Server::start(&ServerKind::mrcached(), &["-t", "2", "-o", opt]);
        let all = threads(server.pid());
        let workers = named(&all, "mrcached-worker");
        assert_eq!(workers.len(), 2, "{all:?}");
        let prio: u32 = opt.rsplit(':').next().unwrap().parse().unwrap();
        for w in &workers {
            assert_eq!((w.policy, w.rt_priority), (policy, prio), "{opt}: {all:?}");
        }
        for name in ["mrcached-listen", "mrcached-mainte"] {
            assert_eq!(named(&all, name)[0].policy, 0, "{name} stays SCHED_OTHER");
        }
        // It serves.
        let mut c = server.connect(TIMEOUT).unwrap();
        c.write_all(b"set k 0 0 1\r\nv\r\nget k\r\n").unwrap();
        let mut r = BufReader::new(c);
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert_eq!(line, "STORED\r\n");
    }
}

#[test]
fn sched_fifo_without_the_privilege_fails_start_up_naming_the_option() {
    // setpriv removes CAP_SYS_NICE from the bounding and inheritable sets, so even root's mrcached
    // cannot take a real-time policy. Without setpriv this test fails: it is not skipped.
    let setpriv = require_tool("/usr/bin/setpriv", "setpriv (util-linux)");
    let drop = [
        setpriv.to_str().unwrap(),
        "--inh-caps=-sys_nice",
        "--bounding-set=-sys_nice",
    ];
    for opt in ["sched=fifo:10", "sched=rr:5"] {
        let (status, output) = run_refused(&drop, &["-o", opt]);
        assert_eq!(
            status,
            Some(1),
            "-o {opt} without CAP_SYS_NICE must not start: {output}"
        );
        assert!(
            output.contains(&format!("-o {opt}")) && output.contains("not permitted"),
            "{output}"
        );
        assert!(output.contains("CAP_SYS_NICE"), "{output}");
    }
    // The same drop leaves normal scheduling alone: the server starts (the test's control).
    let (status, output) = run_with_deadline(
        Command::new(&setpriv)
            .args(&drop[1..])
            .arg(mrcached_bin())
            .arg("--print-config")
            .args(["-o", "sched=other"]),
        TIMEOUT,
    );
    assert_eq!(status, Some(0), "{output}");
    assert!(output.contains("sched = other"), "{output}");
}

/// One figure of `stats tenants` on `c` (empty when it is missing).
fn tenant_stat(c: &mut Client, name: &str) -> String {
    stat_value(&c.call("stats tenants\r\n"), name).unwrap_or_default()
}

const RATE_LIMITED: &str = "SERVER_ERROR tenant rate limit exceeded";

fn rate_config(rate: &str, burst: &str) -> String {
    format!(
        "[[tenant]]\nname = \"busy\"\nprefix = \"b:\"\nrate_limit = {rate}\nrate_burst = {burst}\n\n\
         [[tenant]]\nname = \"calm\"\nprefix = \"c:\"\n"
    )
}

#[test]
fn rate_limit_refuses_beyond_the_burst_and_recovers() {
    let dir = std::env::temp_dir().join(format!("mrcached-isolation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("rate.toml");
    // One request a second, five at once: nothing refills within the exchanges below.
    std::fs::write(&conf, rate_config("1", "5")).unwrap();
    let server = Server::start(
        &ServerKind::mrcached(),
        &["--config", conf.to_str().unwrap()],
    );
    let port = server.port();
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    let refused = RATE_LIMITED;

    // Eight requests in one write: the burst of five passes, the rest are refused, sets included (their
    // data is consumed, not taken for a command); the second connection shares the bucket.
    let start = Instant::now();
    let mut batch = Vec::new();
    for i in 0..4 {
        batch.extend_from_slice(format!("set b:{i} 0 0 1\r\nx\r\n").as_bytes());
    }
    for i in 0..4 {
        batch.extend_from_slice(format!("get b:{i}\r\n").as_bytes());
    }
    a.send(&batch);
    let replies: Vec<String> = (0..8).map(|_| a.reply()).collect();
    assert_eq!(&replies[..4], ["STORED"; 4]);
    assert_eq!(replies[4], "VALUE b:0 0 1\nx\nEND");
    let in_time = start.elapsed() < Duration::from_millis(900);
    if in_time {
        assert_eq!(&replies[5..], [refused; 3], "{replies:?}");
        assert_eq!(b.exchange(b"get b:0\r\n", 1), [refused]);
        // noreply does not hide the refusal, and the refused set's data is not taken for a command.
        assert_eq!(b.exchange(b"set b:9 0 0 1 noreply\r\ny\r\n", 1), [refused]);
    }
    assert!(
        in_time,
        "the exchanges took {:?}: too slow to test a 1/s refill",
        start.elapsed()
    );
    // Another tenant is not limited.
    for _ in 0..20 {
        assert_eq!(b.exchange(b"get c:x\r\n", 1), ["END"]);
    }
    assert_eq!(tenant_stat(&mut a, "tenant:busy:rate_limited"), "5");
    assert_eq!(tenant_stat(&mut a, "tenant:busy:rate_limit"), "1");
    assert_eq!(tenant_stat(&mut a, "tenant:busy:rate_burst"), "5");
    assert_eq!(tenant_stat(&mut a, "tenant:calm:rate_limited"), "0");

    // Recovery: a second after the burst one token is back (one request passes, the next is refused).
    // A refused request leaves the bucket as it is, so asking until one passes waits for the refill.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let reply = a.call("get b:1\r\n");
        if reply != refused {
            assert_eq!(reply, "VALUE b:1 0 1\nx\nEND");
            break;
        }
        assert!(Instant::now() < deadline, "no token came back");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        start.elapsed() >= Duration::from_millis(950),
        "a token came back {:?} after the burst, before its second",
        start.elapsed()
    );
    assert_eq!(a.call("get b:1\r\n"), refused);
    drop(server);

    // SIGHUP: a bad value is refused and the old limit stays; a good one takes effect.
    let server = Server::start(
        &ServerKind::mrcached(),
        &["--config", conf.to_str().unwrap()],
    );
    let mut a = Client::connect(server.port());
    std::fs::write(&conf, rate_config("-3", "5")).unwrap();
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + TIMEOUT;
    while !server.stderr_tail().contains("rate_limit must be") {
        assert!(
            Instant::now() < deadline,
            "no reload error: {}",
            server.stderr_tail()
        );
        std::thread::yield_now();
    }
    assert_eq!(tenant_stat(&mut a, "tenant:busy:rate_limit"), "1");
    std::fs::write(&conf, rate_config("1000000", "1000")).unwrap();
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + TIMEOUT;
    while tenant_stat(&mut a, "tenant:busy:rate_limit") != "1000000" {
        assert!(Instant::now() < deadline, "{}", server.stderr_tail());
        std::thread::yield_now();
    }
    assert_eq!(tenant_stat(&mut a, "tenant:busy:rate_burst"), "1000");
    let mut batch = Vec::new();
    for _ in 0..50 {
        batch.extend_from_slice(b"get b:nothing\r\n");
    }
    assert_eq!(a.exchange(&batch, 50), vec!["END"; 50]);
    // A burst without a rate is refused at start-up, naming the file's key.
    std::fs::write(
        &conf,
        "[[tenant]]\nname = \"busy\"\nprefix = \"b:\"\nrate_burst = 5\n",
    )
    .unwrap();
    let (status, output) = run_refused(&[], &["--config", conf.to_str().unwrap()]);
    assert_eq!(status, Some(64), "{output}");
    assert!(
        output.contains("--config") && output.contains("rate_burst needs a rate_limit"),
        "{output}"
    );
}
