//! End to end: the LRU crawler and the key dumps against the real binary, beside memcached 1.6.18.
//!
//! - `lru_crawler metadump` and `stats cachedump` print what memcached prints, line for line, for the
//!   same items (times and CAS values compared as what they mean, since the servers start at
//!   different times), and list every stored item on both memory layouts, a tenant only its own.
//! - `lru_crawler crawl` answers at once and crawls in the background: while it runs, another crawl
//!   or a metadump is BUSY; `disable` stops it; it reclaims expired items it finds.
//! - A metadump whose client reads slowly, or not at all, holds up neither the other clients of its
//!   worker nor the crawler once its connection is gone.
//!
//! Dumps are read up to their `END` on a connection of their own (memcached parses what is
//! pipelined behind a metadump only once more bytes arrive).

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{stat_value, LineClient as Client, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(20);
const LAYOUTS: [&str; 2] = ["memory_layout=slab", "memory_layout=log"];

fn mrcached(args: &[&str]) -> Server {
    Server::start(&ServerKind::mrcached(), args)
}

/// Sends `cmd` on a fresh connection and returns the reply up to and including `END\r\n`.
fn dump(server: &Server, cmd: &str) -> String {
    let mut s = server.connect(TIMEOUT).expect("connect");
    s.write_all(cmd.as_bytes()).unwrap();
    read_until_end(&mut s)
}

fn read_until_end(s: &mut TcpStream) -> String {
    let mut reply = Vec::new();
    let mut buf = vec![0; 1 << 16];
    let deadline = Instant::now() + TIMEOUT;
    while !(reply.ends_with(b"END\r\n") && (reply.len() == 5 || reply[reply.len() - 6] == b'\n')) {
        assert!(Instant::now() < deadline, "no END");
        let n = s.read(&mut buf).expect("read");
        assert!(n > 0, "closed before END");
        reply.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&reply).into_owned()
}

/// Stores `count` items `{prefix}{i}` with a 5-byte value through one pipelined write.
fn load(server: &Server, prefix: &str, count: usize, exptime: i64) {
    let mut s = server.connect(TIMEOUT).unwrap();
    let mut req = Vec::with_capacity(count * 40);
    for i in 0..count {
        req.extend_from_slice(
            format!("set {prefix}{i} 0 {exptime} 5 noreply\r\nvalue\r\n").as_bytes(),
        );
    }
    req.extend_from_slice(b"mn\r\n");
    s.write_all(&req).unwrap();
    let mut reply = Vec::new();
    let mut buf = [0; 64];
    while !reply.ends_with(b"MN\r\n") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0);
        reply.extend_from_slice(&buf[..n]);
    }
    assert_eq!(reply, b"MN\r\n", "every set stored");
}

fn stat(c: &mut Client, name: &str) -> String {
    stat_value(&c.call("stats\r\n"), name).unwrap_or_else(|| panic!("no {name}"))
}

/// The memory layout a server runs (`MRCACHED_EXTRA_ARGS` may have chosen it).
fn memory_layout(server: &Server) -> String {
    let settings = Client::connect(server.port()).call("stats settings\r\n");
    stat_value(&settings, "memory_layout").expect("memory_layout")
}

fn wait_for_crawler(c: &mut Client) {
    let deadline = Instant::now() + TIMEOUT;
    while stat(c, "lru_crawler_running") != "0" {
        assert!(Instant::now() < deadline, "the crawl never ended");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One metadump line: its fields by name, checking memcached's layout on the way.
fn metadump_fields(line: &str) -> BTreeMap<&str, &str> {
    let names = ["key", "exp", "la", "cas", "fetch", "cls", "size"];
    let fields: Vec<(&str, &str)> = line.split(' ').filter_map(|f| f.split_once('=')).collect();
    assert_eq!(
        fields.iter().map(|f| f.0).collect::<Vec<_>>(),
        names,
        "{line:?}"
    );
    fields.into_iter().collect()
}

/// Items the format tests store on both servers: odd bytes in keys (URI-encoded by metadump, raw
/// in cachedump), an expiry, a read item, a 250-byte key, and sizes from several classes.
fn store_sample(server: &Server) {
    let mut c = Client::connect(server.port());
    let long = "L".repeat(250);
    let items: Vec<(String, i64, usize)> = vec![
        ("plain".into(), 0, 5),
        ("per%cent".into(), 0, 1),
        ("ütf-8:~._-".into(), 0, 3),
        ("ttl".into(), 1000, 2),
        (long, 0, 4),
        ("mid".into(), 0, 700),
        ("big".into(), 0, 20_000),
    ];
    for (key, exptime, len) in &items {
        let req = format!("set {key} 7 {exptime} {len}\r\n{}\r\n", "v".repeat(*len));
        assert_eq!(c.call(&req), "STORED");
    }
    assert!(c.call("get plain\r\n").starts_with("VALUE plain 7 5"));
    // A key sent in base64: metadump lists its bytes, cachedump skips it.
    assert_eq!(c.exchange(b"ms AQL/ 1 b\r\nx\r\n", 1), ["HD"]);
}

#[test]
#[ignore = "needs memcached"]
fn metadump_prints_what_memcached_prints() {
    let memcached = Server::start(&ServerKind::memcached(), &[]);
    store_sample(&memcached);
    let theirs = dump(&memcached, "lru_crawler metadump all\r\n");
    for layout in LAYOUTS {
        // memcached's item accounting, so that sizes and classes are memcached's.
        let ours_server = mrcached(&["-o", "item_accounting=memcached", "-o", layout]);
        store_sample(&ours_server);
        let now = stat(&mut Client::connect(ours_server.port()), "time");
        let reply = dump(&ours_server, "lru_crawler metadump all\r\n");
        let lines = |text: &str| -> BTreeMap<String, BTreeMap<String, String>> {
            let body = text.strip_suffix("END\r\n").expect("END");
            assert!(!body.contains('\r'), "metadump lines end in a bare newline");
            body.lines()
                .map(|l| {
                    let f = metadump_fields(l);
                    let owned = f
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect();
                    (f["key"].to_string(), owned)
                })
                .collect()
        };
        let (ours_lines, their_lines) = (lines(&reply), lines(&theirs));
        assert_eq!(
            ours_lines.keys().collect::<Vec<_>>(),
            their_lines.keys().collect::<Vec<_>>(),
            "{layout}: the same keys, URI-encoded alike"
        );
        for (key, ours) in &ours_lines {
            let theirs = &their_lines[key];
            for field in ["fetch", "size"] {
                assert_eq!(ours[field], theirs[field], "{layout} {key} {field}");
            }
            // The log files every item under class 1.
            let cls = if memory_layout(&ours_server) == "log" {
                "1"
            } else {
                theirs["cls"].as_str()
            };
            assert_eq!(ours["cls"], cls, "{layout} {key}");
            let now: i64 = now.parse().unwrap();
            let la: i64 = ours["la"].parse().unwrap();
            assert!((now - la).abs() <= 2, "{layout} {key}: la={la} now={now}");
            match theirs["exp"].as_str() {
                "-1" => assert_eq!(ours["exp"], "-1", "{layout} {key}"),
                _ => {
                    let exp: i64 = ours["exp"].parse().unwrap();
                    assert!((exp - now - 1000).abs() <= 2, "{layout} {key}: exp={exp}");
                }
            }
            assert!(ours["cas"].parse::<u64>().unwrap() > 0);
        }
    }
}

#[test]
#[ignore = "needs memcached"]
fn cachedump_prints_what_memcached_prints() {
    let memcached = Server::start(&ServerKind::memcached(), &[]);
    store_sample(&memcached);
    let ours = mrcached(&["-o", "item_accounting=memcached"]);
    store_sample(&ours);
    // memcached lists a class's COLD LRU, which its maintainer moves new items to within a second.
    let sorted = |reply: String| {
        let mut lines: Vec<String> = reply.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let deadline = Instant::now() + TIMEOUT;
    let theirs = loop {
        let theirs = sorted(dump(&memcached, "stats cachedump 1 0\r\n"));
        if theirs.len() == 5 || Instant::now() > deadline {
            break theirs;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let log = memory_layout(&ours) == "log";
    let mut ours = sorted(dump(&ours, "stats cachedump 1 0\r\n"));
    if log {
        // The log files every item under class 1: the class-1 items are memcached's listing.
        assert_eq!(ours.len(), 7 + 1, "{ours:?}");
        ours.retain(|l| {
            !l.starts_with("ITEM LLL") && !l.starts_with("ITEM big ") && !l.starts_with("ITEM mid ")
        });
    }
    // The expiry is a Unix time: the servers started at different times.
    let unix = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .map(|l| match l.split_once("b; ") {
                Some((head, t)) if t != "0 s]" => format!("{head}b; T s]"),
                _ => l.clone(),
            })
            .collect()
    };
    assert_eq!(unix(&ours), unix(&theirs));
    assert!(
        ours.contains(&"ITEM per%cent [1 b; 0 s]".to_string()),
        "{ours:?}"
    );
    assert_eq!(ours.iter().filter(|l| *l == "END").count(), 1);
}

#[test]
fn dumps_list_every_stored_item_on_both_layouts() {
    const ITEMS: usize = 60_000;
    for layout in LAYOUTS {
        let server = mrcached(&["-m", "256", "-o", layout]);
        load(&server, "key:", ITEMS, 0);
        let mut keys: Vec<String> = dump(&server, "lru_crawler metadump all\r\n")
            .lines()
            .filter_map(|l| {
                l.strip_prefix("key=")?
                    .split(' ')
                    .next()
                    .map(str::to_string)
            })
            .collect();
        keys.sort();
        let mut expected: Vec<String> = (0..ITEMS).map(|i| format!("key%3A{i}")).collect();
        expected.sort();
        assert_eq!(keys, expected, "{layout}: each stored item once");
        let listed = dump(&server, "stats cachedump 1 0\r\n");
        assert_eq!(
            listed
                .lines()
                .filter(|l| l.starts_with("ITEM key:"))
                .count(),
            ITEMS
        );
        assert_eq!(
            dump(&server, "stats cachedump 1 10\r\n").lines().count(),
            11,
            "{layout}: the limit, then END"
        );
    }
}

#[test]
fn a_tenant_dumps_only_its_own_keys_on_both_layouts() {
    let dir = std::env::temp_dir().join(format!("mrcached-crawler-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tenants.toml");
    std::fs::write(
        &conf,
        "[[tenant]]\nname = \"alice\"\npassword = \"apw\"\n\
         [[tenant]]\nname = \"bob\"\npassword = \"bpw\"\n\
         [[tenant]]\nname = \"ops\"\npassword = \"opw\"\nadmin = true\n",
    )
    .unwrap();
    for layout in LAYOUTS {
        let server = mrcached(&["--config", conf.to_str().unwrap(), "-o", layout]);
        let keys = |user: &str, password: &str, cmd: &str| {
            let mut c = server.connect(TIMEOUT).unwrap();
            let token = format!("{user} {password}");
            let auth = format!("set auth 0 0 {}\r\n{token}\r\n", token.len());
            c.write_all(auth.as_bytes()).unwrap();
            let mut stored = [0; 8];
            c.read_exact(&mut stored).unwrap();
            assert_eq!(&stored, b"STORED\r\n");
            c.write_all(cmd.as_bytes()).unwrap();
            let mut keys: Vec<String> = read_until_end(&mut c)
                .lines()
                .filter_map(|l| {
                    let rest = l.strip_prefix("key=").or_else(|| l.strip_prefix("ITEM "))?;
                    rest.split(' ').next().map(str::to_string)
                })
                .collect();
            keys.sort();
            keys
        };
        let set = |user: &str, password: &str, key: &str| {
            let mut c = Client::connect(server.port());
            assert_eq!(c.auth(user, password), "STORED");
            assert_eq!(c.call(&format!("set {key} 0 0 1\r\nx\r\n")), "STORED");
        };
        set("alice", "apw", "shared");
        set("alice", "apw", "alices");
        set("bob", "bpw", "shared");
        assert_eq!(
            keys("alice", "apw", "lru_crawler metadump all\r\n"),
            ["alices", "shared"]
        );
        assert_eq!(
            keys("bob", "bpw", "lru_crawler metadump all\r\n"),
            ["shared"]
        );
        assert_eq!(keys("bob", "bpw", "stats cachedump 1 0\r\n"), ["shared"]);
        assert_eq!(
            keys("ops", "opw", "lru_crawler metadump all\r\n"),
            ["alices", "shared", "shared"],
            "{layout}: an admin tenant sees every namespace"
        );
    }
}

#[test]
fn a_crawl_answers_at_once_and_is_busy_until_it_ends_or_is_disabled() {
    let server = mrcached(&[
        "-m",
        "256",
        "-o",
        "lru_crawler_sleep=200000,lru_crawler_tocrawl=0",
    ]);
    load(&server, "k", 100_000, 0);
    let mut c = Client::connect(server.port());
    let settings = c.call("stats settings\r\n");
    assert_eq!(
        stat_value(&settings, "lru_crawler_sleep").as_deref(),
        Some("200000")
    );
    assert_eq!(stat_value(&settings, "lru_crawler").as_deref(), Some("yes"));

    // 200 ms after each batch of a thousand buckets: the crawl lasts many seconds.
    let started = Instant::now();
    assert_eq!(c.call("lru_crawler crawl all\r\n"), "OK");
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "answered at once"
    );
    assert_eq!(
        c.call("lru_crawler crawl 1\r\n"),
        "BUSY currently processing crawler request"
    );
    assert_eq!(
        c.call("lru_crawler metadump all\r\n"),
        "BUSY currently processing crawler request"
    );
    assert_eq!(stat(&mut c, "lru_crawler_running"), "1");
    assert_eq!(c.call("get k7\r\n"), "VALUE k7 0 5\nvalue\nEND");
    // A cachedump does not need the crawler.
    assert_eq!(dump(&server, "stats cachedump 1 2\r\n").lines().count(), 3);

    // `disable` stops it after its current batch; a disabled crawler refuses work.
    assert_eq!(c.call("lru_crawler disable\r\n"), "OK");
    wait_for_crawler(&mut c);
    assert_eq!(
        c.call("lru_crawler crawl all\r\n"),
        "CLIENT_ERROR lru crawler disabled"
    );
    assert_eq!(
        c.call("lru_crawler metadump all\r\n"),
        "CLIENT_ERROR lru crawler disabled"
    );
    assert!(c
        .call("stats settings\r\n")
        .contains("STAT lru_crawler no\n"));
    assert_eq!(c.call("lru_crawler enable\r\n"), "OK");
    assert_eq!(c.call("lru_crawler sleep 0\r\n"), "OK");
    assert_eq!(c.call("lru_crawler tocrawl 10\r\n"), "OK");
    let settings = c.call("stats settings\r\n");
    assert_eq!(
        stat_value(&settings, "lru_crawler_sleep").as_deref(),
        Some("0")
    );
    assert_eq!(
        stat_value(&settings, "lru_crawler_tocrawl").as_deref(),
        Some("10")
    );
    let starts: u64 = stat(&mut c, "lru_crawler_starts").parse().unwrap();
    assert_eq!(c.call("lru_crawler crawl all\r\n"), "OK");
    wait_for_crawler(&mut c);
    assert!(stat(&mut c, "lru_crawler_starts").parse::<u64>().unwrap() > starts);
}

#[test]
fn a_crawl_of_many_expired_items_answers_at_once_and_reclaims_them() {
    for layout in LAYOUTS {
        let server = mrcached(&["-m", "256", "-o", layout]);
        // A negative exptime stores an item that has already expired.
        load(&server, "gone", 200_000, -1);
        load(&server, "live", 10, 0);
        let mut c = Client::connect(server.port());
        let started = Instant::now();
        assert_eq!(c.call("lru_crawler crawl all\r\n"), "OK");
        let answered = started.elapsed();
        assert!(
            answered < Duration::from_millis(100),
            "{layout}: {answered:?}"
        );
        wait_for_crawler(&mut c);
        // The reaper of the maintenance thread may have taken a share; both count as the crawler's.
        assert_eq!(stat(&mut c, "curr_items"), "10", "{layout}");
        assert_eq!(stat(&mut c, "crawler_reclaimed"), "200000", "{layout}");
    }
}

#[test]
fn a_slow_metadump_reader_holds_up_neither_its_worker_nor_the_crawler() {
    // One worker: the dumping connection and the other client share it.
    let server = mrcached(&["-t", "1", "-m", "256"]);
    load(&server, "key", 200_000, 0);
    let mut dumper = server.connect(TIMEOUT).unwrap();
    dumper.write_all(b"lru_crawler metadump all\r\n").unwrap();
    let mut other = Client::connect(server.port());
    // The dumper reads nothing: its output stops at the bound, and the worker serves the other.
    for i in 0..200 {
        let t = Instant::now();
        assert_eq!(
            other.call(&format!("get key{i}\r\n")),
            format!("VALUE key{i} 0 5\nvalue\nEND")
        );
        assert!(
            t.elapsed() < Duration::from_millis(200),
            "get {i} waited {:?}",
            t.elapsed()
        );
    }
    assert_eq!(stat(&mut other, "lru_crawler_running"), "1");
    // Now it reads it all: every item once.
    let reply = read_until_end(&mut dumper);
    assert_eq!(
        reply.lines().filter(|l| l.starts_with("key=key")).count(),
        200_000
    );
    wait_for_crawler(&mut other);
}

/// A dumper that goes away mid-dump frees the crawler: its session ends, and the claim with it, on
/// the default I/O path (io_uring where the kernel runs it) and on epoll.
#[test]
fn a_dumper_that_goes_away_frees_the_crawler() {
    for io in ["io=auto", "io=epoll"] {
        let server = mrcached(&["-t", "1", "-m", "256", "-o", io]);
        load(&server, "key", 200_000, 0);
        let mut other = Client::connect(server.port());
        let mut quitter = server.connect(TIMEOUT).unwrap();
        quitter.write_all(b"lru_crawler metadump all\r\n").unwrap();
        let mut some = [0; 1024];
        quitter.read_exact(&mut some).unwrap();
        assert_eq!(stat(&mut other, "lru_crawler_running"), "1", "{io}");
        drop(quitter);
        wait_for_crawler(&mut other);
        assert!(dump(&server, "lru_crawler metadump 1\r\n").ends_with("END\r\n"));
    }
}

/// A metadump's lines come from a dump thread paced by `lru_crawler sleep`: while the thread sleeps
/// the dumping connection parks and its worker serves others, and each chunk the thread hands over
/// wakes the worker (a lost wake-up would stall the dump until the read deadline), on both I/O paths.
#[test]
fn a_paced_metadump_parks_its_connection_and_is_woken_for_each_chunk() {
    const ITEMS: usize = 50_000;
    for io in ["io=auto", "io=epoll"] {
        let server = mrcached(&["-t", "1", "-m", "256", "-o", io]);
        load(&server, "key", ITEMS, 0);
        let mut other = Client::connect(server.port());
        assert_eq!(other.call("lru_crawler sleep 2000\r\n"), "OK");
        let mut dumper = server.connect(TIMEOUT).unwrap();
        dumper.write_all(b"lru_crawler metadump all\r\n").unwrap();
        let mut first = [0; 4];
        dumper.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"key=", "{io}");
        assert_eq!(
            other.call("get key7\r\n"),
            "VALUE key7 0 5\nvalue\nEND",
            "{io}"
        );
        let reply = String::from_utf8_lossy(&first).into_owned() + &read_until_end(&mut dumper);
        assert_eq!(
            reply.lines().filter(|l| l.starts_with("key=key")).count(),
            ITEMS,
            "{io}: every item once"
        );
        wait_for_crawler(&mut other);
    }
}
