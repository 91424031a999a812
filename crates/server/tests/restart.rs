//! Warm restart (`-e FILE`) end to end, against the real binary: a graceful stop (`shutdown graceful`
//! or SIGUSR1) saves the cache and the next start gives back every key with its flags, TTL and CAS,
//! under several slab policies and with tenants; a truncated file, a file saved under another `-m`,
//! and a crash without a save all give a clean start, the bad files kept aside.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(20);
/// Items each filling test stores; sizes span several slab classes.
const ITEMS: u32 = 400;
/// The TTL of every other item.
const TTL_SECS: i64 = 1000;

struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(server: &Server) -> Client {
        Client {
            reader: BufReader::new(server.connect(TIMEOUT).expect("connect")),
        }
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).expect("a reply line");
        l.trim_end_matches("\r\n").to_string()
    }

    fn send(&mut self, cmd: &str) {
        self.reader.get_mut().write_all(cmd.as_bytes()).unwrap();
    }

    fn set(&mut self, key: &str, flags: u32, ttl: i64, value: &[u8]) {
        self.send(&format!("set {key} {flags} {ttl} {}\r\n", value.len()));
        self.reader.get_mut().write_all(value).unwrap();
        self.send("\r\n");
        assert_eq!(self.line(), "STORED", "set {key}");
    }

    /// `gets key`: (flags, cas, value), or `None` on a miss.
    fn gets(&mut self, key: &str) -> Option<(u32, u64, Vec<u8>)> {
        self.send(&format!("gets {key}\r\n"));
        let head = self.line();
        if head == "END" {
            return None;
        }
        let f: Vec<&str> = head.split(' ').collect();
        assert_eq!((f[0], f[1]), ("VALUE", key), "{head}");
        let len: usize = f[3].parse().unwrap();
        let mut value = vec![0u8; len + 2];
        std::io::Read::read_exact(&mut self.reader, &mut value).unwrap();
        value.truncate(len);
        assert_eq!(self.line(), "END");
        Some((f[2].parse().unwrap(), f[4].parse().unwrap(), value))
    }

    /// The remaining TTL (`mg key t`): -1 for none.
    fn ttl(&mut self, key: &str) -> i64 {
        self.send(&format!("mg {key} t\r\n"));
        let reply = self.line();
        reply
            .split(' ')
            .find_map(|t| t.strip_prefix('t'))
            .unwrap_or_else(|| panic!("{key}: {reply}"))
            .parse()
            .unwrap()
    }

    fn stat(&mut self, name: &str) -> String {
        self.stat_of("", name)
    }

    /// One figure of `stats <family>`.
    fn stat_of(&mut self, family: &str, name: &str) -> String {
        self.send(format!("stats {family}").trim_end());
        self.send("\r\n");
        let mut found = None;
        loop {
            let l = self.line();
            if l == "END" {
                return found.unwrap_or_else(|| panic!("no stat {name}"));
            }
            if let Some(v) = l.strip_prefix(&format!("STAT {name} ")) {
                found = Some(v.to_string());
            }
        }
    }
}

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mrcached-restart-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start(args: &[&str]) -> Server {
    Server::start(&ServerKind::mrcached(), args)
}

fn args<'a>(file: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["-A", "-e", file.to_str().unwrap()];
    a.extend_from_slice(extra);
    a
}

/// Waits for the server to exit and returns its status code.
fn wait_exit(server: &mut Server) -> Option<i32> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(status) = server.exit_status() {
            return status.code();
        }
        assert!(
            Instant::now() < deadline,
            "still running: {}",
            server.stderr_tail()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until the server's stderr contains `needle` and returns all of it.
fn wait_stderr(server: &Server, needle: &str) -> String {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let text = server.stderr_tail();
        if text.contains(needle) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "stderr never said {needle:?}: {text}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(server: &Server, sig: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, sig) }, 0);
}

/// What was stored under each key: flags, CAS, TTL given, value.
type Stored = BTreeMap<String, (u32, u64, i64, Vec<u8>)>;

/// Stores [`ITEMS`] items under `prefix` (sizes from a few bytes to 30 KB, every other one with
/// [`TTL_SECS`]) and returns them with their CAS.
fn fill(c: &mut Client, prefix: &str) -> Stored {
    let mut stored = Stored::new();
    for i in 0..ITEMS {
        let key = format!("{prefix}key{i}");
        let value: Vec<u8> = (0..(i as usize * 997) % 30_000)
            .map(|j| b'a' + ((i as usize + j) % 26) as u8)
            .collect();
        let ttl = if i % 2 == 0 { 0 } else { TTL_SECS };
        c.set(&key, i * 7, ttl, &value);
        let (flags, cas, got) = c.gets(&key).unwrap();
        assert_eq!((flags, &got), (i * 7, &value));
        stored.insert(key, (flags, cas, ttl, value));
    }
    // Nothing was evicted: the test's memory holds every item.
    assert_eq!(c.stat("evictions"), "0");
    stored
}

/// Every key is back with its flags, CAS, value and (counting down) TTL.
fn check_all(c: &mut Client, stored: &Stored, down_since: Instant) {
    for (key, (flags, cas, ttl, value)) in stored {
        let left = c.ttl(key);
        if *ttl == 0 {
            assert_eq!(left, -1, "{key}");
        } else {
            let elapsed = down_since.elapsed().as_secs() as i64;
            assert!(
                (ttl - elapsed - 2..=*ttl).contains(&left),
                "{key}: ttl {left} of {ttl} after {elapsed}s"
            );
        }
        let got = c.gets(key).unwrap_or_else(|| panic!("{key} lost"));
        assert_eq!(got, (*flags, *cas, value.clone()), "{key}");
    }
}

/// Fill, graceful stop, start again: everything is back, `stats` counts it, the file is consumed and
/// new CAS values continue above the restored ones.
fn restart_keeps_everything(test: &str, extra: &[&str], stop_by_signal: bool) {
    restart_keeps_everything_into(test, extra, extra, stop_by_signal);
}

/// As [`restart_keeps_everything`], saved by a server with `extra` and loaded by one with `then`.
fn restart_keeps_everything_into(test: &str, extra: &[&str], then: &[&str], stop_by_signal: bool) {
    let dir = temp_dir(test);
    let file = dir.join("cache");
    let started = Instant::now();
    let mut server = start(&args(&file, extra));
    let mut c = Client::connect(&server);
    let stored = fill(&mut c, "");
    if stop_by_signal {
        signal(&server, libc::SIGUSR1);
    } else {
        c.send("shutdown graceful\r\n");
    }
    assert_eq!(wait_exit(&mut server), Some(0), "{}", server.stderr_tail());
    wait_stderr(&server, &format!("saved {ITEMS} items"));
    assert!(file.exists());

    let server = start(&args(&file, then));
    let mut c = Client::connect(&server);
    assert_eq!(c.stat("restart_items_restored"), ITEMS.to_string());
    assert_eq!(c.stat("curr_items"), ITEMS.to_string());
    check_all(&mut c, &stored, started);
    assert!(!file.exists(), "a loaded file is consumed");
    assert_eq!(c.stat_of("settings", "memory_file"), file.to_str().unwrap());
    let max_cas = stored.values().map(|v| v.1).max().unwrap();
    c.set("new", 0, 0, b"v");
    assert!(c.gets("new").unwrap().1 > max_cas);
    wait_stderr(&server, &format!("restored {ITEMS} items"));
}

#[test]
fn shutdown_graceful_keeps_every_item_with_flags_ttl_and_cas() {
    restart_keeps_everything("default", &["-m", "64"], false);
}

#[test]
fn a_file_saved_in_one_layout_loads_into_the_other() {
    let slab = ["-m", "64", "-o", "memory_layout=slab"];
    let log = ["-m", "64", "-o", "memory_layout=log"];
    restart_keeps_everything_into("slab-to-log", &slab, &log, false);
    restart_keeps_everything_into("log-to-slab", &log, &slab, false);
}

#[test]
fn sigusr1_keeps_every_item_under_memcacheds_policies() {
    restart_keeps_everything(
        "memcached",
        &[
            "-m",
            "64",
            "-o",
            "memory_layout=slab",
            "--slab-policy",
            "memcached",
        ],
        true,
    );
    restart_keeps_everything(
        "automove",
        &["-m", "64", "-o", "memory_layout=slab,slab_automove=1"],
        true,
    );
    restart_keeps_everything(
        "twemcache",
        &[
            "-m",
            "64",
            "-o",
            "memory_layout=slab",
            "--slab-policy",
            "twemcache",
        ],
        true,
    );
    restart_keeps_everything(
        "memcached-accounting",
        &[
            "-m",
            "64",
            "-o",
            "memory_layout=slab,item_accounting=memcached",
            "-t",
            "2",
        ],
        true,
    );
}

#[test]
fn tenants_keep_their_items_and_removed_tenants_are_dropped() {
    let dir = temp_dir("tenants");
    let file = dir.join("cache");
    let conf = dir.join("tenants.toml");
    let both = "[[tenant]]\nname = \"alice\"\nprefix = \"a:\"\n[[tenant]]\nname = \"bob\"\nprefix = \"b:\"\n";
    std::fs::write(&conf, both).unwrap();
    let flags = ["-m", "128", "--config", conf.to_str().unwrap()];
    let started = Instant::now();
    let mut server = start(&args(&file, &flags));
    let mut c = Client::connect(&server);
    let alice = fill(&mut c, "a:");
    let bob = fill(&mut c, "b:");
    let plain = fill(&mut c, "");
    c.send("shutdown graceful\r\n");
    assert_eq!(wait_exit(&mut server), Some(0), "{}", server.stderr_tail());

    // Bob is no longer configured: his items are dropped, the others keep their namespaces.
    std::fs::write(&conf, "[[tenant]]\nname = \"alice\"\nprefix = \"a:\"\n").unwrap();
    let server = start(&args(&file, &flags));
    let mut c = Client::connect(&server);
    assert_eq!(c.stat("restart_items_restored"), (2 * ITEMS).to_string());
    assert_eq!(c.stat("restart_items_tenant_dropped"), ITEMS.to_string());
    check_all(&mut c, &alice, started);
    check_all(&mut c, &plain, started);
    for key in bob.keys() {
        assert!(c.gets(key).is_none(), "{key} of a removed tenant");
    }
    c.send("stats tenants\r\n");
    let mut alice_items = None;
    loop {
        let l = c.line();
        if l == "END" {
            break;
        }
        if let Some(v) = l.strip_prefix("STAT tenant:alice:items ") {
            alice_items = Some(v.to_string());
        }
    }
    assert_eq!(
        alice_items.as_deref(),
        Some(&*ITEMS.to_string()),
        "alice's namespace"
    );
}

/// Saves a filled cache with `extra` and returns the file.
fn saved_cache(dir: &Path, extra: &[&str]) -> PathBuf {
    let file = dir.join("cache");
    let mut server = start(&args(&file, extra));
    let mut c = Client::connect(&server);
    fill(&mut c, "");
    signal(&server, libc::SIGUSR1);
    assert_eq!(wait_exit(&mut server), Some(0), "{}", server.stderr_tail());
    assert!(file.exists());
    file
}

/// The files beside `file` whose names start with its name and `.bad-`.
fn set_aside(file: &Path) -> Vec<PathBuf> {
    let name = format!("{}.bad-", file.file_name().unwrap().to_str().unwrap());
    std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(&name))
        .collect()
}

/// A refused file: the message, a clean cache that works, the file renamed aside with its bytes.
fn starts_clean_keeping(file: &Path, extra: &[&str], why: &str, bytes: &[u8]) {
    let server = start(&args(file, extra));
    let text = wait_stderr(&server, "starting with a clean cache");
    assert!(
        text.contains("warm restart: not using") && text.contains(why),
        "{text}"
    );
    let mut c = Client::connect(&server);
    assert_eq!(c.stat("curr_items"), "0");
    assert_eq!(c.stat("restart_items_restored"), "0");
    assert!(c.gets("key1").is_none());
    c.set("key1", 0, 0, b"fresh");
    assert_eq!(c.gets("key1").unwrap().2, b"fresh");
    assert!(!file.exists());
    let aside = set_aside(file);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(std::fs::read(&aside[0]).unwrap(), bytes, "kept as it was");
}

#[test]
fn a_truncated_file_gives_a_clean_start_and_is_kept_aside() {
    let dir = temp_dir("truncated");
    let file = saved_cache(&dir, &["-m", "64"]);
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&file, &bytes).unwrap();
    starts_clean_keeping(&file, &["-m", "64"], "truncated", &bytes);
}

#[test]
fn a_file_saved_with_another_memory_limit_gives_a_clean_start() {
    let dir = temp_dir("other-m");
    let file = saved_cache(&dir, &["-m", "64"]);
    let bytes = std::fs::read(&file).unwrap();
    starts_clean_keeping(&file, &["-m", "128"], "memory_limit_bytes", &bytes);
}

#[test]
fn a_crash_or_a_plain_stop_saves_nothing_and_the_next_start_is_clean() {
    let dir = temp_dir("crash");
    let file = dir.join("cache");
    // SIGKILL with no file ever saved; then SIGTERM: neither writes one.
    for sig in [libc::SIGKILL, libc::SIGTERM] {
        let mut server = start(&args(&file, &["-m", "64"]));
        fill(&mut Client::connect(&server), "");
        signal(&server, sig);
        wait_exit(&mut server);
        assert!(!file.exists(), "signal {sig} saved");
    }
    // A restored cache that then crashes does not come back: the file was consumed.
    let file = saved_cache(&dir, &["-m", "64"]);
    let mut server = start(&args(&file, &["-m", "64"]));
    assert_eq!(
        Client::connect(&server).stat("restart_items_restored"),
        ITEMS.to_string()
    );
    signal(&server, libc::SIGKILL);
    wait_exit(&mut server);
    let server = start(&args(&file, &["-m", "64", "-v"]));
    let text = wait_stderr(&server, "no saved cache");
    assert!(!text.contains("not using"), "{text}");
    let mut c = Client::connect(&server);
    assert_eq!(c.stat("curr_items"), "0");
    assert!(set_aside(&file).is_empty(), "nothing was refused");
}
