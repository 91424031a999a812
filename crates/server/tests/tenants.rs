//! End to end: tenants against the real `mrcached` binary. Two tenants with passwords (`-Y` plus
//! `--config`) try every command on each other's keys; wrong passwords and unauthenticated commands are
//! refused; a port tenant and prefix tenants are isolated; SIGHUP adds a tenant without losing data.
//! Memory: a tenant's reserve keeps its working set through a neighbour's flood (and without pools the
//! flood evicts it); the tenant arbiter runs, reports its pools, targets and curves (`stats tenants`,
//! `stats mrc`, `/mrc`, `/metrics`), and a reload switches it.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{free_port, http_get, stat_value, LineClient as Client, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mrcached-tenants-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start(args: &[&str]) -> Server {
    Server::start(&ServerKind::mrcached(), args)
}

/// Starts mrcached with the flags `flags(port)` gives for a tenant port; when another test's server took
/// that port between `free_port` and the bind (the server then exits), tries again with a fresh port.
fn start_with_tenant_port(mut flags: impl FnMut(u16) -> Vec<String>) -> (Server, u16) {
    for attempt in 1..=5 {
        let port = free_port();
        let args = flags(port);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| start(&args)));
        match started {
            Ok(server) => return (server, port),
            Err(e) if attempt < 5 => eprintln!("tenant port {port} was taken, retrying: {e:?}"),
            Err(e) => std::panic::resume_unwind(e),
        }
    }
    unreachable!()
}

#[test]
fn password_tenants_are_isolated_and_reload_keeps_data() {
    let dir = temp_dir();
    let auth = dir.join("auth");
    let conf = dir.join("tenants.toml");
    std::fs::write(&auth, "alice:apw\nbob:bpw\n").unwrap();
    let mut config = String::new();
    let (server, carol_port) = start_with_tenant_port(|carol_port| {
        config = format!(
            "[[tenant]]\nname = \"alice\"\nreserved = \"2MiB\"\ntarget_hit_ratio = 0.9\n\n[[tenant]]\nname = \"carol\"\nport = {carol_port}\n"
        );
        std::fs::write(&conf, &config).unwrap();
        vec![
            "-Y".to_string(),
            auth.to_str().unwrap().to_string(),
            "--config".to_string(),
            conf.to_str().unwrap().to_string(),
        ]
    });
    let port = server.port();

    // Unauthenticated: everything but the auth set is refused; a wrong password fails.
    let mut anon = Client::connect(port);
    for cmd in [
        "get k\r\n",
        "mg k v\r\n",
        "flush_all\r\n",
        "stats\r\n",
        "delete k noreply\r\n",
    ] {
        assert_eq!(anon.call(cmd), "CLIENT_ERROR unauthenticated", "{cmd:?}");
    }
    assert_eq!(
        anon.auth("alice", "bpw"),
        "CLIENT_ERROR authentication failure"
    );
    assert_eq!(
        anon.auth("mallory", "x"),
        "CLIENT_ERROR authentication failure"
    );
    assert_eq!(anon.call("get k\r\n"), "CLIENT_ERROR unauthenticated");

    let mut alice = Client::connect(port);
    let mut bob = Client::connect(port);
    assert_eq!(alice.auth("alice", "apw"), "STORED");
    assert_eq!(bob.auth("bob", "bpw"), "STORED");
    assert_eq!(alice.call("set k 5 0 5\r\nalice\r\n"), "STORED");
    assert_eq!(alice.call("set n 0 0 2\r\n10\r\n"), "STORED");
    let gets = alice.call("gets k\r\n");
    let cas: u64 = gets
        .lines()
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    // Bob tries every command on alice's keys and sees an empty namespace.
    for (cmd, reply) in [
        ("get k\r\n", "END"),
        ("gets k\r\n", "END"),
        ("gat 0 k\r\n", "END"),
        ("gats 0 k\r\n", "END"),
        ("touch k 1\r\n", "NOT_FOUND"),
        ("incr n 1\r\n", "NOT_FOUND"),
        ("decr n 1\r\n", "NOT_FOUND"),
        ("delete k\r\n", "NOT_FOUND"),
        ("append k 0 0 1\r\nx\r\n", "NOT_STORED"),
        ("prepend k 0 0 1\r\nx\r\n", "NOT_STORED"),
        ("replace k 0 0 1\r\nx\r\n", "NOT_STORED"),
        (&format!("cas k 0 0 1 {cas}\r\nx\r\n"), "NOT_FOUND"),
        ("mg k v\r\n", "EN"),
        ("md k\r\n", "NF"),
        ("ma n\r\n", "NF"),
        ("ms k 1 MR\r\nx\r\n", "NS"),
        ("flush_all\r\n", "OK"),
        ("add k 0 0 3\r\nbob\r\n", "STORED"),
        ("set n 0 0 1\r\n1\r\n", "STORED"),
        ("incr n 5\r\n", "6"),
        ("get k\r\n", "VALUE k 0 3\nbob\nEND"),
    ] {
        assert_eq!(bob.call(cmd), reply, "bob: {cmd:?}");
    }
    // Alice's items are exactly as she left them, CAS included.
    assert_eq!(alice.call("gets k\r\n"), gets);
    assert_eq!(alice.call("get n\r\n"), "VALUE n 0 2\n10\nEND");
    // Her flush_all flushes only her.
    assert_eq!(alice.call("set tmp 0 0 1\r\nt\r\n"), "STORED");
    assert_eq!(alice.call("flush_all\r\n"), "OK");
    assert_eq!(alice.call("get tmp k\r\n"), "END");
    assert_eq!(bob.call("get k\r\n"), "VALUE k 0 3\nbob\nEND");
    assert_eq!(alice.call("set k 5 0 5\r\nalice\r\n"), "STORED");
    assert_eq!(alice.call("set n 0 0 2\r\n10\r\n"), "STORED");

    // Carol is named by her port: no password, her own namespace.
    let mut carol = Client::connect(carol_port);
    assert_eq!(carol.call("get k\r\n"), "END");
    assert_eq!(carol.call("set k 0 0 5\r\ncarol\r\n"), "STORED");
    assert_eq!(alice.call("get k\r\n"), "VALUE k 5 5\nalice\nEND");

    // A tenant sees its own row of `stats tenants`.
    let stats = alice.call("stats tenants\r\n");
    assert!(stats.contains("STAT tenant:alice:items 2"), "{stats}");
    assert!(
        stats.contains("STAT tenant:alice:reserved 2097152"),
        "{stats}"
    );
    assert!(!stats.contains("tenant:bob:"), "{stats}");

    // SIGHUP: dave appears, bob is removed; data and open connections survive.
    std::fs::write(&auth, "alice:apw\ndave:dpw\n").unwrap();
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut dave = Client::connect(port);
        if dave.auth("dave", "dpw") == "STORED" {
            assert_eq!(dave.call("get k\r\n"), "END");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "dave never became a tenant: {}",
            server.stderr_tail()
        );
    }
    assert_eq!(
        Client::connect(port).auth("bob", "bpw"),
        "CLIENT_ERROR authentication failure"
    );
    assert_eq!(
        bob.call("get k\r\n"),
        "VALUE k 0 3\nbob\nEND",
        "bob's open connection keeps working"
    );
    assert_eq!(
        alice.call("get k n\r\n"),
        "VALUE k 5 5\nalice\nVALUE n 0 2\n10\nEND"
    );
    assert_eq!(carol.call("get k\r\n"), "VALUE k 0 5\ncarol\nEND");

    // A bad file on reload is logged and the old configuration stays.
    std::fs::write(&conf, "[[tenant]]\nname = \"alice\"\nbogus = 1\n").unwrap();
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + TIMEOUT;
    while !server.stderr_tail().contains("bogus") {
        assert!(Instant::now() < deadline, "no reload error logged");
        std::thread::yield_now();
    }
    assert_eq!(Client::connect(port).auth("dave", "dpw"), "STORED");
    assert_eq!(
        Client::connect(carol_port).call("get k\r\n"),
        "VALUE k 0 5\ncarol\nEND"
    );
}

#[test]
fn prefix_and_port_tenants_are_isolated() {
    let dir = temp_dir();
    let conf = dir.join("prefixes.toml");
    let (server, q_port) = start_with_tenant_port(|q_port| {
        std::fs::write(
            &conf,
            format!(
                "[[tenant]]\nname = \"p1\"\nprefix = \"p1:\"\n[[tenant]]\nname = \"p2\"\nprefix = \"p2:\"\n[[tenant]]\nname = \"q\"\nport = {q_port}\n"
            ),
        )
        .unwrap();
        vec!["--config".to_string(), conf.to_str().unwrap().to_string()]
    });
    let mut main = Client::connect(server.port());
    let mut q = Client::connect(q_port);
    for key in ["p1:x", "p2:x", "x"] {
        assert_eq!(main.call(&format!("set {key} 0 0 1\r\nm\r\n")), "STORED");
    }
    // The port tenant sees none of them, whatever prefix it sends, and cannot change them.
    for cmd in [
        "get p1:x p2:x x\r\n",
        "mg p1:x v\r\n",
        "delete p2:x\r\n",
        "touch x 1\r\n",
    ] {
        let reply = q.call(cmd);
        assert!(
            matches!(reply.as_str(), "END" | "EN" | "NOT_FOUND"),
            "{cmd:?}: {reply}"
        );
    }
    assert_eq!(q.call("set p1:x 0 0 1\r\nq\r\n"), "STORED");
    assert_eq!(q.call("flush_all\r\n"), "OK");
    assert_eq!(q.call("get p1:x\r\n"), "END");
    assert_eq!(
        main.call("get p1:x p2:x x\r\n"),
        "VALUE p1:x 0 1\nm\nVALUE p2:x 0 1\nm\nVALUE x 0 1\nm\nEND"
    );
    // A routed connection's flush_all flushes the default tenant only.
    assert_eq!(main.call("flush_all\r\n"), "OK");
    assert_eq!(
        main.call("get p1:x p2:x x\r\n"),
        "VALUE p1:x 0 1\nm\nVALUE p2:x 0 1\nm\nEND"
    );
    let stats = main.call("stats tenants\r\n");
    for line in [
        "STAT tenant:p1:items 1",
        "STAT tenant:p2:items 1",
        "STAT tenant:default:items 0",
        "STAT tenant:q:items 0",
    ] {
        assert!(stats.contains(line), "{line} in {stats}");
    }
}

/// Bytes of every value in the reserve test: one slab class for both tenants, so that without pools of
/// their own (`pooled`) they would share one LRU.
const FLOOD_VALUE_BYTES: usize = 1000;
/// Keys one pipelined batch stores.
const FLOOD_BATCH_KEYS: usize = 500;

/// Stores `keys` under `prefix` with `noreply`, in pipelined batches, then waits for the server to have
/// run them all (`mn` answers after every request before it).
fn store_noreply(client: &mut Client, prefix: &str, keys: std::ops::Range<usize>) {
    let value = "v".repeat(FLOOD_VALUE_BYTES);
    let mut batch = String::new();
    for i in keys {
        batch.push_str(&format!(
            "set {prefix}{i} 0 0 {FLOOD_VALUE_BYTES} noreply\r\n{value}\r\n"
        ));
        if batch.len() > FLOOD_BATCH_KEYS * FLOOD_VALUE_BYTES {
            client.send(batch.as_bytes());
            batch.clear();
        }
    }
    client.send(batch.as_bytes());
    assert_eq!(client.call("mn\r\n"), "MN");
}

/// How many of `keys` under `prefix` hit, asked 100 to a `get`.
fn hits(client: &mut Client, prefix: &str, keys: std::ops::Range<usize>) -> usize {
    let keys: Vec<usize> = keys.collect();
    let mut found = 0;
    for chunk in keys.chunks(100) {
        let names: Vec<String> = chunk.iter().map(|i| format!("{prefix}{i}")).collect();
        let reply = client.call(&format!("get {}\r\n", names.join(" ")));
        found += reply.lines().filter(|l| l.starts_with("VALUE ")).count();
    }
    found
}

/// One figure of the connection's own row of `stats tenants`.
fn tenant_stat(client: &mut Client, tenant: &str, field: &str) -> usize {
    let stats = client.call("stats tenants\r\n");
    let name = format!("STAT tenant:{tenant}:{field} ");
    stats
        .lines()
        .find_map(|l| l.strip_prefix(&name))
        .unwrap_or_else(|| panic!("no {name} in {stats}"))
        .parse()
        .unwrap()
}

/// What [`flood`] saw.
struct Flood {
    /// a's keys.
    working_set: usize,
    /// The share of them that hit after b's flood.
    hit_ratio: f64,
    /// a's pages and reserved pages after the flood.
    pages: usize,
    reserved_pages: usize,
}

/// Tenant `a` (reserve 13 of 32 pages) stores a working set (`keys`, or batches until its pool holds
/// more pages than its reserve) and reads it back; then `b` stores four times the memory, and `a` reads
/// its working set again.
fn flood(tenant_policy: &str, keys: Option<usize>) -> Flood {
    let dir = temp_dir();
    let auth = dir.join(format!("flood-{tenant_policy}.auth"));
    let conf = dir.join(format!("flood-{tenant_policy}.toml"));
    std::fs::write(&auth, "a:apw\nb:bpw\n").unwrap();
    std::fs::write(&conf, "[[tenant]]\nname = \"a\"\nreserved = \"13MiB\"\n").unwrap();
    let server = start(&[
        "-m",
        "32",
        "-Y",
        auth.to_str().unwrap(),
        "--config",
        conf.to_str().unwrap(),
        "--tenant-policy",
        tenant_policy,
    ]);
    let mut a = Client::connect(server.port());
    let mut b = Client::connect(server.port());
    assert_eq!(
        a.auth("a", "bpw"),
        "CLIENT_ERROR authentication failure",
        "a wrong password is refused"
    );
    assert_eq!(a.auth("a", "apw"), "STORED");
    assert_eq!(b.auth("b", "bpw"), "STORED");
    let reserved_pages = tenant_stat(&mut a, "a", "reserved_pages");

    let mut working_set = 0;
    match keys {
        Some(n) => {
            store_noreply(&mut a, "a", 0..n);
            working_set = n;
        }
        None => {
            while tenant_stat(&mut a, "a", "pages") <= reserved_pages {
                assert!(
                    working_set < 100_000,
                    "a's pool never grew past its reserve"
                );
                store_noreply(&mut a, "a", working_set..working_set + FLOOD_BATCH_KEYS);
                working_set += FLOOD_BATCH_KEYS;
            }
        }
    }
    assert_eq!(hits(&mut a, "a", 0..working_set), working_set);
    // b sees none of a's keys, and floods: 4 x 32 MiB of sets.
    assert_eq!(hits(&mut b, "a", 0..100), 0);
    let flood_keys = 4 * 32 * (1 << 20) / FLOOD_VALUE_BYTES;
    store_noreply(&mut b, "b", 0..flood_keys);
    if tenant_stat(&mut b, "b", "pool") != 0 {
        let b_pages = tenant_stat(&mut b, "b", "pages");
        assert!(
            b_pages > 0 && b_pages <= 32 - reserved_pages,
            "b holds {b_pages} pages"
        );
    }
    Flood {
        working_set,
        hit_ratio: hits(&mut a, "a", 0..working_set) as f64 / working_set as f64,
        pages: tenant_stat(&mut a, "a", "pages"),
        reserved_pages,
    }
}

#[test]
fn a_reserve_protects_a_tenant_from_a_flooding_neighbour() {
    let reserved = flood("mpart", None);
    assert_eq!(reserved.reserved_pages, 13, "13 MiB in 1 MiB pages");
    assert!(
        reserved.hit_ratio >= 0.9,
        "a kept {:.3} of its working set",
        reserved.hit_ratio
    );
    assert!(
        reserved.pages >= reserved.reserved_pages,
        "a holds {} pages, reserved {}",
        reserved.pages,
        reserved.reserved_pages
    );
    // The same traffic in one shared memory: b's flood evicts much of a's working set (under the
    // slab layout's LRU more than half; the log's density ranking keeps about half, as a's keys are
    // read and b's are not).
    let pooled = flood("pooled", Some(reserved.working_set));
    assert!(
        pooled.hit_ratio < 0.75,
        "pooled: a kept {:.3} of its working set",
        pooled.hit_ratio
    );
}

/// Runs the lookaside pattern (get, and set on a miss) over `keys` keys under `prefix`, `rounds` times.
fn lookaside(client: &mut Client, prefix: &str, keys: usize, rounds: usize) {
    for _ in 0..rounds {
        for i in 0..keys {
            let key = format!("{prefix}{i}");
            if client.call(&format!("get {key}\r\n")) == "END" {
                assert_eq!(
                    client.call(&format!("set {key} 0 0 3\r\nabc\r\n")),
                    "STORED"
                );
            }
        }
    }
}

#[test]
fn the_tenant_arbiter_runs_reports_and_follows_a_reload() {
    let dir = temp_dir();
    let conf = dir.join("arbiter.toml");
    let tenants =
        "[[tenant]]\nname = \"x\"\nprefix = \"x:\"\nreserved = \"4MiB\"\nmax = \"40MiB\"\n\
                   [[tenant]]\nname = \"y\"\nprefix = \"y:\"\n";
    std::fs::write(
        &conf,
        format!("tenant_policy = \"mpart:interval=500,min_requests=50\"\n{tenants}"),
    )
    .unwrap();
    let admin_port = free_port();
    let admin = admin_port.to_string();
    // One shard: the profilers' 1% of 64 MiB then covers both tenants' pools; every key sampled, so that
    // a few hundred keys make a curve.
    let server = start(&[
        "-m",
        "64",
        "-o",
        "shards=1,mrc_sample_rate=1",
        "--admin-port",
        &admin,
        "--config",
        conf.to_str().unwrap(),
    ]);
    let mut c = Client::connect(server.port());
    let settings = c.call("stats settings\r\n");
    assert_eq!(
        stat_value(&settings, "tenant_policy").as_deref(),
        Some("mpart:interval=500,step=auto,max_change=0.3,min_requests=50"),
        "{settings}"
    );
    // Rounds start once the maintenance thread has seen a window of 500 accesses.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        lookaside(&mut c, "x:", 200, 2);
        lookaside(&mut c, "y:", 100, 2);
        let rounds = stat_value(&c.call("stats\r\n"), "tenant_arbiter_rounds").unwrap();
        if rounds != "0" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no arbiter round: {}",
            server.stderr_tail()
        );
    }

    let stats = c.call("stats tenants\r\n");
    let field = |tenant: &str, name: &str| -> usize {
        stat_value(&stats, &format!("tenant:{tenant}:{name}"))
            .unwrap_or_else(|| panic!("no {tenant}:{name} in {stats}"))
            .parse()
            .unwrap()
    };
    for (tenant, id) in [("default", 0), ("x", 1), ("y", 2)] {
        assert_eq!(field(tenant, "pool"), id, "{stats}");
    }
    assert_eq!(
        (field("x", "reserved_pages"), field("x", "max_pages")),
        (4, 40)
    );
    assert_eq!(field("y", "max_pages"), 0, "no cap");
    let targets: usize = ["default", "x", "y"]
        .iter()
        .map(|t| field(t, "target_pages"))
        .sum();
    assert_eq!(targets, 64, "the targets divide all memory: {stats}");
    assert!(field("x", "target_pages") >= 4 && field("x", "target_pages") <= 40);
    assert!(
        field("x", "pages") >= 1 && field("y", "pages") >= 1,
        "{stats}"
    );

    // Each tenant's curve, by `stats mrc` and `/mrc`; pages and targets by `/metrics`.
    let mrc = c.call("stats mrc\r\n");
    for tenant in ["x", "y"] {
        let bytes = stat_value(&mrc, &format!("tenant:{tenant}:mrc_bytes"))
            .unwrap_or_else(|| panic!("no curve of {tenant}: {mrc}"));
        let first: f64 = bytes
            .split(',')
            .next()
            .unwrap()
            .split(':')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(first < 0.5, "{tenant}'s keys fit one page: {bytes}");
        assert!(stat_value(&mrc, &format!("tenant:{tenant}:mrc_pages")).is_some());
    }
    let (status, json) = http_get(admin_port, "/mrc");
    assert_eq!(status, 200);
    assert!(
        json.contains("\"tenants\":[") && json.contains("\"tenant\":\"x\""),
        "{json}"
    );
    let (_, metrics) = http_get(admin_port, "/metrics");
    for series in [
        "mrcached_tenant_pages{tenant=\"x\"}",
        "mrcached_tenant_target_pages{tenant=\"y\"}",
        "mrcached_tenant_arbiter_rounds_total",
    ] {
        assert!(metrics.contains(series), "{series} in {metrics}");
    }

    // SIGHUP with another tenant policy: a new arbitration, reported at once by the next tick.
    std::fs::write(&conf, format!("tenant_policy = \"static\"\n{tenants}")).unwrap();
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + TIMEOUT;
    while !stat_value(&c.call("stats settings\r\n"), "tenant_policy")
        .is_some_and(|p| p.starts_with("static:"))
    {
        assert!(
            Instant::now() < deadline,
            "the tenant policy did not change: {}",
            server.stderr_tail()
        );
        std::thread::yield_now();
    }
    // The message is written after the switch, and stderr is drained by a thread: wait for it.
    while !server.stderr_tail().contains("tenant policy now static") {
        assert!(Instant::now() < deadline, "{}", server.stderr_tail());
        std::thread::yield_now();
    }
    // Items stay where they were.
    assert_eq!(c.call("get x:0\r\n"), "VALUE x:0 0 3\nabc\nEND");
}
