//! `watch` end to end against the real `mrcached`: the streams memcached 1.6.18 has (fetchers,
//! mutations, evictions, connevents) in its line format, memcached's refusals (unknown stream, `-W`,
//! replies still pending), and a watcher that never reads: the server keeps serving, the watcher's
//! buffer stays bounded and it is told how many lines it missed.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

fn connect(server: &Server) -> BufReader<TcpStream> {
    BufReader::new(server.connect(TIMEOUT).unwrap())
}

fn send(c: &mut BufReader<TcpStream>, bytes: &[u8]) {
    c.get_mut().write_all(bytes).unwrap();
}

fn line(c: &mut BufReader<TcpStream>) -> String {
    let mut l = String::new();
    c.read_line(&mut l).expect("a line");
    l
}

/// Sends `request` and reads `lines` reply lines.
fn exchange(c: &mut BufReader<TcpStream>, request: &[u8], lines: usize) -> String {
    send(c, request);
    (0..lines).map(|_| line(c)).collect()
}

/// Starts a watcher of `streams` and waits for its `OK`.
fn watcher(server: &Server, streams: &str) -> BufReader<TcpStream> {
    let mut w = connect(server);
    assert_eq!(
        exchange(&mut w, format!("watch {streams}\r\n").as_bytes(), 1),
        "OK\r\n"
    );
    w
}

/// The fields after `ts=… gid=…` of a watch line, checking that prefix's form.
fn fields(line: &str) -> &str {
    let rest = line.strip_prefix("ts=").expect(line);
    let (ts, rest) = rest.split_once(' ').expect(line);
    let (secs, micros) = ts.split_once('.').expect(line);
    assert!(
        secs.parse::<u64>().is_ok() && micros.parse::<u32>().is_ok(),
        "{line}"
    );
    let rest = rest.strip_prefix("gid=").expect(line);
    let (gid, rest) = rest.split_once(' ').expect(line);
    assert!(gid.parse::<u64>().is_ok(), "{line}");
    assert!(rest.ends_with('\n') && !rest.ends_with("\r\n"), "{line:?}");
    rest.trim_end()
}

#[test]
fn fetchers_and_mutations_are_logged_in_memcached_form() {
    let server = Server::start(&ServerKind::mrcached(), &[]);
    let mut w = watcher(&server, "fetchers mutations");
    let mut c = connect(&server);
    assert_eq!(
        exchange(&mut c, b"set a%b 5 100 3\r\nbar\r\n", 1),
        "STORED\r\n"
    );
    assert_eq!(
        exchange(&mut c, b"get a%b nope\r\n", 3),
        "VALUE a%b 5 3\r\nbar\r\nEND\r\n"
    );
    assert_eq!(
        exchange(&mut c, b"append k2 0 0 1\r\nx\r\n", 1),
        "NOT_STORED\r\n"
    );
    let store = line(&mut w);
    let store = fields(&store);
    let cfd = store
        .rsplit_once(" cfd=")
        .unwrap()
        .1
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(cfd.parse::<i32>().unwrap() > 0, "{store}");
    let clsid = |l: &str| {
        l.split(' ')
            .find_map(|f| f.strip_prefix("clsid="))
            .unwrap()
            .parse::<u32>()
            .unwrap()
    };
    assert!(clsid(store) > 0, "{store}");
    assert_eq!(
        store,
        format!(
            "type=item_store key=a%25b status=stored cmd=set ttl=100 clsid={} cfd={cfd} size=3",
            clsid(store)
        )
    );
    let hit = line(&mut w);
    assert_eq!(
        fields(&hit),
        format!(
            "type=item_get key=a%25b status=found clsid={} cfd={cfd} size=3",
            clsid(store)
        )
    );
    let miss = line(&mut w);
    assert_eq!(
        fields(&miss),
        format!("type=item_get key=nope status=not_found clsid=0 cfd={cfd} size=0")
    );
    let append = line(&mut w);
    assert!(
        fields(&append).starts_with("type=item_store key=k2 status=not_stored cmd=append ttl=0 "),
        "{append}"
    );
    // The meta commands too: ms is a `set`, mg a fetch.
    assert_eq!(exchange(&mut c, b"ms m1 1 T60\r\nz\r\n", 1), "HD\r\n");
    assert_eq!(exchange(&mut c, b"mg m1 v\r\n", 2), "VA 1\r\nz\r\n");
    let ms = line(&mut w);
    assert!(
        fields(&ms).starts_with("type=item_store key=m1 status=stored cmd=set ttl=60 "),
        "{ms}"
    );
    let mg = line(&mut w);
    assert!(
        fields(&mg).starts_with("type=item_get key=m1 status=found clsid="),
        "{mg}"
    );
}

/// `stats` on `c`: every line through `END`.
fn stats(c: &mut BufReader<TcpStream>) -> String {
    send(c, b"stats\r\n");
    let mut all = String::new();
    loop {
        let l = line(c);
        all.push_str(&l);
        if l == "END\r\n" {
            return all;
        }
    }
}

#[test]
fn connevents_and_evictions() {
    let server = Server::start(&ServerKind::mrcached(), &["-m", "2"]);
    let mut w = watcher(&server, "connevents evictions");
    let mut c = connect(&server);
    let local = c.get_ref().local_addr().unwrap();
    let new = line(&mut w);
    let new = fields(&new);
    assert!(
        new.starts_with(&format!(
            "type=conn_new rip=127.0.0.1 rport={} transport=tcp cfd=",
            local.port()
        )),
        "{new}"
    );
    // 500 KB values: each 1 MiB page holds two, so storing ten in 2 MiB evicts the oldest.
    let value = vec![b'v'; 500_000];
    for i in 0..10 {
        let mut req = format!("set big{i} 0 100 {}\r\n", value.len()).into_bytes();
        req.extend_from_slice(&value);
        req.extend_from_slice(b"\r\n");
        assert_eq!(exchange(&mut c, &req, 1), "STORED\r\n");
    }
    let eviction = line(&mut w);
    let eviction = fields(&eviction);
    // One of the oldest: slab evicts its LRU tail (big0); the log's cleaner ranks the items of its two
    // oldest segments (big0 to big3), all equal here.
    let key = (eviction.strip_prefix("type=eviction key=big"))
        .and_then(|rest| rest.split_once(' '))
        .map(|(n, rest)| (n.parse::<u32>(), rest));
    assert!(
        matches!(key, Some((Ok(0..=3), rest)) if rest.starts_with("fetch=no ttl=100 la=0 clsid=")),
        "{eviction}"
    );
    assert!(eviction.ends_with(" size=500000"), "{eviction}");
    send(&mut c, b"quit\r\n");
    drop(c);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let l = line(&mut w);
        if fields(&l).starts_with("type=conn_close") {
            assert!(
                fields(&l).starts_with(&format!(
                    "type=conn_close rip=127.0.0.1 rport={} transport=tcp reason=normal cfd=",
                    local.port()
                )),
                "{l}"
            );
            break;
        }
        assert!(Instant::now() < deadline);
    }
}

#[test]
fn refusals_as_memcached_answers_them() {
    let server = Server::start(&ServerKind::mrcached(), &[]);
    let mut c = connect(&server);
    assert_eq!(exchange(&mut c, b"watch deletions\r\n", 1), "ERROR\r\n");
    assert_eq!(
        exchange(&mut c, b"get a\r\nwatch\r\n", 2),
        "END\r\nERROR cannot pipeline other commands before watch\r\n"
    );
    // Still an ordinary connection.
    assert_eq!(exchange(&mut c, b"mn\r\n", 1), "MN\r\n");
    // The proxy and system streams are accepted, as memcached accepts them.
    let _w = watcher(&server, "proxyreqs sysevents");
    let mut watchers: Vec<_> = (0..19).map(|_| watcher(&server, "fetchers")).collect();
    assert_eq!(
        exchange(&mut connect(&server), b"watch\r\n", 1),
        "WATCHER_TOO_MANY log watcher limit reached\r\n"
    );
    watchers.pop();
    // A watcher that left frees its place (once its connection is closed).
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut w = connect(&server);
        let reply = exchange(&mut w, b"watch\r\n", 1);
        if reply == "OK\r\n" {
            break;
        }
        assert!(Instant::now() < deadline, "{reply}");
        std::thread::sleep(Duration::from_millis(20));
    }

    let server = Server::start(&ServerKind::mrcached(), &["-W"]);
    let mut c = connect(&server);
    assert_eq!(
        exchange(&mut c, b"watch\r\n", 1),
        "CLIENT_ERROR watch commands not allowed\r\n"
    );
}

#[test]
fn a_watcher_that_never_reads_skips_lines_and_holds_nothing_up() {
    let server = Server::start(&ServerKind::mrcached(), &[]);
    let mut w = connect(&server);
    w.get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    send(&mut w, b"watch fetchers\r\n");
    let mut c = connect(&server);
    // Each get of 10 keys of 200 bytes logs 10 lines of ~290 bytes: 8,000 of them (23 MB) far exceed
    // the watcher's 256 KiB buffer plus what the kernel's socket buffers hold (a few MB), and every one
    // must still be answered promptly.
    let keys: String = (0..10).map(|i| format!(" {i:0>200}")).collect();
    let request = format!("get{keys}\r\n");
    let started = Instant::now();
    for _ in 0..8000 {
        assert_eq!(exchange(&mut c, request.as_bytes(), 1), "END\r\n");
    }
    assert!(started.elapsed() < TIMEOUT);
    let all = stats(&mut c);
    let skipped: u64 = all
        .lines()
        .find_map(|l| l.strip_prefix("STAT log_watcher_skipped "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(skipped > 0, "{all}");
    // Now it reads: its backlog, then a `[skipped: N]` notice before the next line that fits.
    w.get_ref().set_read_timeout(Some(TIMEOUT)).unwrap();
    assert_eq!(line(&mut w), "OK\r\n");
    let mut drained = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    w.get_ref()
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    // Whatever the reader had buffered past `OK` counts too.
    drained.extend_from_slice(w.buffer());
    w.consume(w.buffer().len());
    loop {
        match w.get_mut().read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => drained.extend_from_slice(&buf[..n]),
        }
    }
    assert!(
        drained.len() <= 256 * 1024 + (20 << 20),
        "bounded backlog: {}",
        drained.len()
    );
    w.get_ref().set_read_timeout(Some(TIMEOUT)).unwrap();
    assert_eq!(exchange(&mut c, b"get after\r\n", 1), "END\r\n");
    // Read on to the line of that get (the backlog may not all have arrived yet).
    let deadline = Instant::now() + TIMEOUT;
    let next = loop {
        let l = line(&mut w);
        if l.contains(" key=after ") {
            break l;
        }
        drained.extend_from_slice(l.as_bytes());
        assert!(Instant::now() < deadline, "no line for `get after`");
    };
    let text = String::from_utf8_lossy(&drained);
    assert!(
        text.contains("\n[skipped: "),
        "the watcher is told it missed lines"
    );
    assert!(
        fields(&next).starts_with("type=item_get key=after "),
        "{next}"
    );
}
