//! End to end, the operator's side of `mrcached`: a SIGHUP reload is validated exactly as start-up (a
//! tenant on the main port, reserves above `-m`); server-wide commands are for operators (routed
//! connections, `admin = true` tenants) and a tenant sees only its own figures, connections and keys
//! (dumps); the
//! automove ratio is applied; an expired item's memory is reused before a live item is evicted, and the
//! crawler counts what it reclaims; the open-files limit is raised to what `-c` needs or start-up is
//! refused; `stats slabs`/`stats items` are consistent under compact accounting and memcached's under
//! `-o item_accounting=memcached`.
//!
//! These tests assume the slab layout: run under an `MRCACHED_EXTRA_ARGS` that selects another layout,
//! the slab-figure and expired-reuse tests do not apply.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{stat_value as stat, LineClient as Client, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mrcached-ops-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sighup(server: &Server) {
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
}

/// Waits until the server's stderr contains `text`.
fn wait_for_log(server: &Server, text: &str) {
    let deadline = Instant::now() + TIMEOUT;
    while !server.stderr_tail().contains(text) {
        assert!(
            Instant::now() < deadline,
            "never logged {text:?}: {}",
            server.stderr_tail()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs mrcached with `args` expecting it to refuse to start; returns its stderr.
fn refused(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mrcached"))
        .args(["-U", "0", "-l", "127.0.0.1", "-p", "0"])
        .args(common::user_args())
        .args(args)
        .output()
        .expect("run mrcached");
    assert!(!out.status.success(), "started with {args:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_reload_is_validated_as_start_up() {
    let dir = temp_dir("reload");
    let conf = dir.join("tenants.toml");
    let conf_arg = conf.to_str().unwrap().to_string();
    let good = "[[tenant]]\nname = \"alice\"\npassword = \"apw\"\nreserved = \"8MiB\"\n";
    std::fs::write(&conf, good).unwrap();

    // Start-up refuses reserves above -m with a message naming them.
    std::fs::write(
        &conf,
        "[[tenant]]\nname = \"a\"\nreserved = \"40MiB\"\n[[tenant]]\nname = \"b\"\nreserved = \"40MiB\"\n",
    )
    .unwrap();
    let err = refused(&["-m", "64", "--config", &conf_arg]);
    assert!(
        err.contains("--config") && err.contains("reserves sum to 83886080 bytes"),
        "{err}"
    );

    std::fs::write(&conf, good).unwrap();
    let server = Server::start(
        &ServerKind::mrcached(),
        &["-m", "64", "--config", &conf_arg],
    );
    let port = server.port();
    let mut alice = Client::connect(port);
    assert_eq!(alice.auth("alice", "apw"), "STORED");
    assert_eq!(alice.call("set k 0 0 1\r\na\r\n"), "STORED");

    // A reload giving a tenant the main port is refused as start-up refuses it; auth stays on.
    std::fs::write(
        &conf,
        format!("{good}[[tenant]]\nname = \"mallory\"\nport = {port}\n"),
    )
    .unwrap();
    sighup(&server);
    wait_for_log(&server, &format!("port {port} is the main port (-p)"));
    let mut anon = Client::connect(port);
    assert_eq!(anon.call("get k\r\n"), "CLIENT_ERROR unauthenticated");

    // So is one whose reserves exceed the memory limit.
    std::fs::write(
        &conf,
        "[[tenant]]\nname = \"alice\"\npassword = \"apw\"\nreserved = \"65MiB\"\n",
    )
    .unwrap();
    sighup(&server);
    wait_for_log(
        &server,
        "reserves sum to 68157440 bytes, more than the memory limit",
    );
    let stats = alice.call("stats tenants\r\n");
    assert_eq!(
        stat(&stats, "tenant:alice:reserved").as_deref(),
        Some("8388608"),
        "the old configuration stays: {stats}"
    );
    assert_eq!(alice.call("get k\r\n"), "VALUE k 0 1\na\nEND");
}

#[test]
fn server_wide_commands_are_for_operators_and_tenants_see_their_own() {
    let dir = temp_dir("scope");
    let conf = dir.join("tenants.toml");
    std::fs::write(
        &conf,
        "[[tenant]]\nname = \"alice\"\npassword = \"apw\"\n\
         [[tenant]]\nname = \"bob\"\npassword = \"bpw\"\n\
         [[tenant]]\nname = \"ops\"\npassword = \"opw\"\nadmin = true\n",
    )
    .unwrap();
    let server = Server::start(
        &ServerKind::mrcached(),
        &["-m", "64", "-A", "--config", conf.to_str().unwrap()],
    );
    let port = server.port();
    let mut alice = Client::connect(port);
    let mut alice2 = Client::connect(port);
    let mut bob = Client::connect(port);
    let mut ops = Client::connect(port);
    assert_eq!(alice.auth("alice", "apw"), "STORED");
    assert_eq!(alice2.auth("alice", "apw"), "STORED");
    assert_eq!(bob.auth("bob", "bpw"), "STORED");
    assert_eq!(ops.auth("ops", "opw"), "STORED");
    for i in 0..10 {
        assert_eq!(bob.call(&format!("set b{i} 0 0 1\r\nb\r\n")), "STORED");
    }
    assert_eq!(alice.call("set a 0 0 1\r\na\r\n"), "STORED");

    let refusals = [
        ("cache_memlimit 8\r\n", "cache_memlimit"),
        ("stats reset\r\n", "stats reset"),
        ("stats items\r\n", "stats items"),
        ("stats slabs\r\n", "stats slabs"),
        ("stats sizes\r\n", "stats sizes"),
        ("stats detail on\r\n", "stats detail"),
        ("stats detail dump\r\n", "stats detail"),
        ("slabs automove 1\r\n", "slabs automove"),
        ("slabs automove ratio 0.5\r\n", "slabs automove"),
        ("slabs reassign 1 2\r\n", "slabs reassign"),
        ("lru_crawler crawl all\r\n", "lru_crawler"),
        ("lru_crawler sleep 10\r\n", "lru_crawler"),
        ("lru_crawler enable\r\n", "lru_crawler"),
        ("lru mode flat\r\n", "lru"),
        ("verbosity 1\r\n", "verbosity"),
        ("watch\r\n", "watch"),
        ("shutdown\r\n", "shutdown"),
    ];
    for (cmd, what) in refusals {
        assert_eq!(
            alice.call(cmd),
            format!("CLIENT_ERROR {what} not allowed for tenant alice"),
            "{cmd:?}"
        );
    }
    // noreply forms stay silent, and change nothing.
    alice.send(b"cache_memlimit 8 noreply\r\n");
    assert_eq!(alice.call("version\r\n").split(' ').next(), Some("VERSION"));

    // Nothing changed: bob's items are all there, the limit is -m.
    let all = ops.call("stats\r\n");
    assert_eq!(stat(&all, "limit_maxbytes").as_deref(), Some("67108864"));
    assert_eq!(stat(&all, "curr_items").as_deref(), Some("11"));

    // A tenant's `stats`: the process identity and its own figures only.
    let own = alice.call("stats\r\n");
    assert_eq!(stat(&own, "curr_items").as_deref(), Some("1"), "{own}");
    assert_eq!(
        stat(&own, "limit_maxbytes").as_deref(),
        Some("67108864"),
        "{own}"
    );
    assert_eq!(stat(&own, "pid"), stat(&all, "pid"));
    assert!(stat(&own, "curr_connections").is_none(), "{own}");
    assert!(stat(&own, "total_items").is_none(), "{own}");
    assert_eq!(
        stat(&bob.call("stats\r\n"), "curr_items").as_deref(),
        Some("10")
    );
    assert!(alice.call("stats settings\r\n").contains("STAT maxconns "));
    // `stats mrc`: her own curve, no class curves; a class's curve is an operator's.
    let mrc = alice.call("stats mrc\r\n");
    assert!(mrc.contains("STAT tenant:alice:"), "{mrc}");
    assert!(!mrc.contains(":chunk_size "), "{mrc}");
    assert!(!mrc.contains("tenant:bob:"), "{mrc}");
    assert_eq!(
        alice.call("stats mrc 1\r\n"),
        "CLIENT_ERROR stats mrc <class> not allowed for tenant alice"
    );

    // Dumps: a tenant lists its own keys only; the admin tenant lists everyone's.
    assert_eq!(dump(&mut alice, "lru_crawler metadump all\r\n"), ["a"]);
    assert_eq!(dump(&mut alice, "stats cachedump 1 0\r\n"), ["a"]);
    let bobs: Vec<String> = (0..10).map(|i| format!("b{i}")).collect();
    assert_eq!(dump(&mut bob, "lru_crawler metadump 1\r\n"), bobs);
    let mut everyone = bobs.clone();
    everyone.insert(0, "a".to_string());
    assert_eq!(dump(&mut ops, "lru_crawler metadump hash\r\n"), everyone);
    assert_eq!(dump(&mut ops, "stats cachedump 1 0\r\n"), everyone);

    // `stats conns`: alice sees her two connections, no listener and nobody else's.
    let conns = alice.call("stats conns\r\n");
    let addrs = conns.lines().filter(|l| l.contains(":addr ")).count();
    assert_eq!(addrs, 2, "{conns}");
    assert!(!conns.contains("conn_listening"), "{conns}");
    let every = ops.call("stats conns\r\n");
    assert!(every.contains("conn_listening"), "{every}");
    assert!(
        every.lines().filter(|l| l.contains(":addr ")).count() >= 5,
        "{every}"
    );

    // The admin tenant runs them.
    assert_eq!(ops.call("verbosity 1\r\n"), "OK");
    assert_eq!(ops.call("cache_memlimit 64\r\n"), "OK");
    assert!(ops.call("stats slabs\r\n").contains("STAT active_slabs "));
    assert_eq!(ops.call("stats reset\r\n"), "RESET");
}

/// The keys of a metadump or cachedump reply, sorted.
fn dump(c: &mut Client, cmd: &str) -> Vec<String> {
    c.send(cmd.as_bytes());
    let mut keys = Vec::new();
    loop {
        let line = c.line();
        if line == "END" {
            keys.sort();
            return keys;
        }
        let key = line
            .strip_prefix("key=")
            .or_else(|| line.strip_prefix("ITEM "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("not a dump line: {line:?}"));
        keys.push(key.to_string());
    }
}

/// Waits (bounded) until no crawl holds the crawler: `lru_crawler crawl` answers at once and crawls
/// in the background.
fn wait_for_crawl(c: &mut Client) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while stat(&c.call("stats\r\n"), "lru_crawler_running").as_deref() != Some("0") {
        assert!(Instant::now() < deadline, "the crawl never ended");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn routed_connections_are_operators() {
    // `slabs automove` moves class pages: the slab layout's (the log refuses it, memcached_flags.rs).
    let server = Server::start(
        &ServerKind::mrcached(),
        &["-m", "64", "-o", "memory_layout=slab"],
    );
    let mut c = Client::connect(server.port());
    assert_eq!(c.call("cache_memlimit 32\r\n"), "OK");
    assert_eq!(c.call("slabs automove ratio 0.5\r\n"), "OK");
    assert_eq!(
        stat(&c.call("stats settings\r\n"), "slab_automove_ratio").as_deref(),
        Some("0.50")
    );
    assert!(c.call("stats\r\n").contains("STAT curr_connections "));
    // The ratio is applied to memcached's balancer when it runs (memcached takes any number).
    assert_eq!(c.call("slabs automove 1\r\n"), "OK");
    assert_eq!(c.call("slabs automove ratio 2\r\n"), "OK");
    let settings = c.call("stats settings\r\n");
    assert_eq!(
        stat(&settings, "slab_automove_ratio").as_deref(),
        Some("2.00")
    );
    let policy = stat(&settings, "slab_policy").unwrap();
    assert!(
        policy.starts_with("automove") && policy.contains("ratio=2"),
        "{policy}"
    );
    // Also when memcached's balancer was named on the command line without parameters.
    let server = Server::start(
        &ServerKind::mrcached(),
        &["-o", "memory_layout=slab", "--slab-policy", "automove"],
    );
    let mut c = Client::connect(server.port());
    assert_eq!(c.call("slabs automove ratio 0.5\r\n"), "OK");
    let policy = stat(&c.call("stats settings\r\n"), "slab_policy").unwrap();
    assert!(policy.contains("ratio=0.5"), "{policy}");
}

#[test]
fn an_expired_item_is_reused_before_a_live_one_is_evicted() {
    for layout in ["slab", "log"] {
        expired_items_are_reused_first(layout);
    }
}

/// In `layout`: fills memory with items that expire, lets them expire, stores live ones, and checks
/// that no live item was evicted while expired ones held memory.
fn expired_items_are_reused_first(layout: &str) {
    // Without the background reaper, so the reuse happens on allocation (memcached's tail check; the
    // log's cleaner drops expired records as it cleans).
    let layout_option = format!("memory_layout={layout}");
    let server = Server::start(
        &ServerKind::mrcached(),
        &["-m", "2", "-o", "no_lru_crawler", "-o", &layout_option],
    );
    let mut c = Client::connect(server.port());
    let value = "v".repeat(900);
    // Fill memory with items that expire in 2 s (the oldest are evicted as it fills).
    for i in 0..4000 {
        c.send(format!("set e{i} 0 2 {} noreply\r\n{value}\r\n", value.len()).as_bytes());
    }
    let before = c.call("stats\r\n");
    let evicted = stat(&before, "evictions").unwrap();
    let items: u64 = stat(&before, "curr_items").unwrap().parse().unwrap();
    assert!(items > 1000, "{layout}: {before}");
    // Every item was stored by the time of `before` (one connection, in order), so each expires at
    // that `time` + 2 at the latest: wait for the server's clock, the one expiry is judged by, to
    // get there (an item expires when its expiry is at or before the server's now).
    let all_expired = figure(&before, "time") + 2;
    let deadline = Instant::now() + TIMEOUT;
    while figure(&c.call("stats\r\n"), "time") < all_expired {
        assert!(
            Instant::now() < deadline,
            "{layout}: the server's clock did not reach {all_expired}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 0..1000 {
        c.send(format!("set l{i} 0 0 {} noreply\r\n{value}\r\n", value.len()).as_bytes());
    }
    let after = c.call("stats\r\n");
    assert_eq!(
        stat(&after, "evictions"),
        Some(evicted),
        "{layout}: a live item was evicted while expired ones held memory: {after}"
    );
    let reclaimed: u64 = stat(&after, "reclaimed").unwrap().parse().unwrap();
    if layout == "slab" {
        // One expired chunk reused per store, as memcached counts it.
        assert_eq!(reclaimed, 1000, "{after}");
        let items = c.call("stats items\r\n");
        assert!(items.contains(":reclaimed 1000"), "{items}");
    } else {
        // The cleaner drops every expired record of the segments it cleans, at least one per
        // segment's worth of new items.
        assert!((1000..=items).contains(&reclaimed), "{layout}: {after}");
    }
    for i in (0..1000).step_by(97) {
        assert!(
            c.call(&format!("get l{i}\r\n")).starts_with("VALUE"),
            "{layout}"
        );
    }
}

/// Runs mrcached with `-c` under an open-files limit of `soft`/`hard` set in the child before exec.
fn with_nofile(soft: u64, hard: u64, conns: &str) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mrcached"));
    cmd.args(["-U", "0", "-l", "127.0.0.1", "-p", "0", "-c", conns])
        .args(common::user_args())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: soft as libc::rlim_t,
                rlim_max: hard as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().expect("spawn mrcached")
}

/// The soft and hard `Max open files` of process `pid`.
fn nofile_of(pid: u32) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let mut nums = line
        .split_whitespace()
        .filter_map(|w| w.parse::<u64>().ok());
    (nums.next().unwrap(), nums.next().unwrap())
}

#[test]
fn the_open_files_limit_is_raised_to_what_c_needs_or_start_up_refused() {
    // The hard limit allows it: the soft limit is raised to -c plus the reserve.
    let mut child = with_nofile(256, 8192, "4096");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("listening on "), "{line}");
    assert_eq!(nofile_of(child.id()), (4116, 8192));
    child.kill().unwrap();
    child.wait().unwrap();

    // It does not. Without CAP_SYS_RESOURCE (raising a hard limit needs it) start-up is refused as
    // memcached refuses it, with its exit status; with it, both limits are raised.
    let mut child = with_nofile(256, 256, "4096");
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        let mut line = String::new();
        if Instant::now() > deadline {
            break None;
        }
        if nofile_of(child.id()).0 >= 4116 {
            // Privileged: raised, and it serves.
            BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            assert!(line.starts_with("listening on "), "{line}");
            assert_eq!(nofile_of(child.id()), (4116, 4116));
            child.kill().unwrap();
            child.wait().unwrap();
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.and_then(|s| s.code()), Some(71), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("failed to set rlimit for open files")
            && stderr.contains("-c needs 4116 descriptors"),
        "{stderr}"
    );
}

/// `stats slabs` and `stats items` lines of `server` after storing 1,000 items of 100 bytes.
fn slab_figures(server: &Server) -> (String, String) {
    let mut c = Client::connect(server.port());
    let value = "x".repeat(100);
    for i in 0..1000 {
        c.send(format!("set key{i} 0 0 100 noreply\r\n{value}\r\n").as_bytes());
    }
    (c.call("stats slabs\r\n"), c.call("stats items\r\n"))
}

fn figure(reply: &str, name: &str) -> u64 {
    stat(reply, name)
        .unwrap_or_else(|| panic!("no {name}: {reply}"))
        .parse()
        .unwrap()
}

/// What tools such as memcached-tool and Prometheus exporters read from `stats slabs`/`stats items`:
/// under the default compact accounting the figures describe mrcached's own layout and are consistent
/// (chunks hold what they are said to hold, pages are 1 MiB).
#[test]
fn slab_figures_are_consistent_under_the_compact_accounting() {
    let compact = Server::start(&ServerKind::mrcached(), &["-m", "64"]);
    let (slabs, items) = slab_figures(&compact);
    let class = slabs
        .lines()
        .find_map(|l| l.strip_prefix("STAT ")?.split_once(":chunk_size "))
        .map(|(c, _)| c.to_string())
        .unwrap();
    let f = |name: &str| figure(&slabs, &format!("{class}:{name}"));
    let requested = figure(&items, &format!("items:{class}:mem_requested"));
    assert_eq!(f("used_chunks"), 1000);
    assert!(
        f("used_chunks") * f("chunk_size") >= requested,
        "{slabs}{items}"
    );
    assert!(f("chunk_size") * f("chunks_per_page") <= 1 << 20);
    assert_eq!(f("total_chunks"), f("total_pages") * f("chunks_per_page"));
    assert_eq!(f("used_chunks") + f("free_chunks"), f("total_chunks"));
    assert_eq!(
        figure(&slabs, "total_malloced"),
        figure(&slabs, "active_slabs") * (1 << 20)
    );
    // Each item's 100-byte value and 6-or-7-byte key with our 28-byte header.
    assert!((133_000..=136_000).contains(&requested), "{requested}");
}

/// Under `-o item_accounting=memcached` `stats slabs` is memcached 1.6.18's to the byte.
#[test]
#[ignore = "needs memcached"]
fn slab_figures_are_memcached_s_under_its_accounting() {
    let ours = Server::start(
        &ServerKind::mrcached(),
        &[
            "-m",
            "64",
            "-o",
            "item_accounting=memcached",
            "-o",
            "memory_layout=slab",
        ],
    );
    let memcached = Server::start(&ServerKind::memcached(), &["-m", "64"]);
    let (ours_slabs, ours_items) = slab_figures(&ours);
    let (their_slabs, their_items) = slab_figures(&memcached);
    assert_eq!(ours_slabs, their_slabs);
    let requested = |items: &str| {
        items
            .lines()
            .find(|l| l.contains(":mem_requested "))
            .unwrap()
            .to_string()
    };
    assert_eq!(requested(&ours_items), requested(&their_items));
}

/// The reaper (memcached's LRU crawler: `lru_crawler crawl`, and the maintenance thread every second)
/// unlinks expired items and counts them as memcached does, per class and in total.
#[test]
fn the_crawler_reclaims_expired_items_and_counts_them() {
    let server = Server::start(&ServerKind::mrcached(), &["-m", "64"]);
    let mut c = Client::connect(server.port());
    assert_eq!(c.call("set live 0 0 1\r\nl\r\n"), "STORED");
    // A negative exptime stores an item that has already expired.
    for i in 0..50 {
        assert_eq!(c.call(&format!("set gone{i} 0 -1 1\r\ng\r\n")), "STORED");
    }
    assert_eq!(c.call("lru_crawler crawl all\r\n"), "OK");
    wait_for_crawl(&mut c);
    let stats = c.call("stats\r\n");
    assert_eq!(
        stat(&stats, "crawler_reclaimed").as_deref(),
        Some("50"),
        "{stats}"
    );
    assert!(figure(&stats, "crawler_items_checked") >= 51, "{stats}");
    assert_eq!(stat(&stats, "curr_items").as_deref(), Some("1"));
    assert_eq!(stat(&stats, "evictions").as_deref(), Some("0"));
    let items = c.call("stats items\r\n");
    assert!(items.contains(":crawler_reclaimed 50"), "{items}");
}
