//! Concurrent clients on `-t 4` must lose no update: counters that are only incremented end at the
//! number of increments that succeeded, no CAS unique is accepted twice (two clients that read the same
//! unique cannot both store with it), and every `append` that answered `STORED` left its token in the
//! value exactly once. Each client is its own connection on its own thread, pipelining nothing, so the
//! server's workers interleave their requests on shared keys as fast as they come.
//! scripts/test.sh reruns this file under `-o io=epoll` and `-o memory_layout=slab`, so it holds on both
//! I/O paths and both layouts. Counts are bounded; every read has a timeout.

mod common;

use std::collections::{HashMap, HashSet};
use std::thread;

use common::{LineClient, Server, ServerKind};

const CLIENTS: usize = 8;
const OPS_PER_CLIENT: usize = 1500;
const COUNTERS: usize = 4;
const CAS_KEYS: usize = 3;
const APPEND_KEYS: usize = 3;

/// What one client saw succeed.
#[derive(Default)]
struct Seen {
    incrs: HashMap<usize, u64>,
    cas_accepted: Vec<(usize, u64)>,
    appended: Vec<(usize, String)>,
}

fn client(port: u16, id: usize) -> Seen {
    let mut c = LineClient::connect(port);
    let mut seen = Seen::default();
    let mut state = 0x2545_f491_4f6c_dd1du64 ^ (id as u64 + 1);
    for n in 0..OPS_PER_CLIENT {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let which = (state >> 8) as usize;
        match n % 3 {
            0 => {
                let k = which % COUNTERS;
                let reply = c.call(&format!("incr counter{k} 1\r\n"));
                assert!(reply.parse::<u64>().is_ok(), "incr: {reply}");
                *seen.incrs.entry(k).or_default() += 1;
            }
            1 => {
                let k = which % CAS_KEYS;
                let got = c.call(&format!("gets cas{k}\r\n"));
                let unique: u64 = got
                    .lines()
                    .next()
                    .and_then(|l| l.split_whitespace().nth(4))
                    .and_then(|u| u.parse().ok())
                    .unwrap_or_else(|| panic!("gets cas{k}: {got}"));
                let value = format!("c{id}n{n}");
                let reply = c.call(&format!(
                    "cas cas{k} 0 0 {} {unique}\r\n{value}\r\n",
                    value.len()
                ));
                match reply.as_str() {
                    "STORED" => seen.cas_accepted.push((k, unique)),
                    "EXISTS" => {}
                    other => panic!("cas: {other}"),
                }
            }
            _ => {
                let k = which % APPEND_KEYS;
                let token = format!(",c{id}n{n}");
                let reply = c.call(&format!("append app{k} 0 0 {}\r\n{token}\r\n", token.len()));
                assert_eq!(reply, "STORED", "append");
                seen.appended.push((k, token[1..].to_string()));
            }
        }
    }
    seen
}

#[test]
fn concurrent_clients_lose_no_increment_cas_or_append() {
    let server = Server::start(&ServerKind::mrcached(), &["-t", "4", "-m", "64"]);
    let port = server.port();
    let mut setup = LineClient::connect(port);
    for k in 0..COUNTERS {
        assert_eq!(
            setup.call(&format!("set counter{k} 0 0 1\r\n0\r\n")),
            "STORED"
        );
    }
    for k in 0..CAS_KEYS {
        assert_eq!(setup.call(&format!("set cas{k} 0 0 1\r\n-\r\n")), "STORED");
    }
    for k in 0..APPEND_KEYS {
        assert_eq!(setup.call(&format!("set app{k} 0 0 1\r\n-\r\n")), "STORED");
    }

    let seen: Vec<Seen> = (0..CLIENTS)
        .map(|id| thread::spawn(move || client(port, id)))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().expect("a client panicked"))
        .collect();

    for k in 0..COUNTERS {
        let expected: u64 = seen.iter().filter_map(|s| s.incrs.get(&k)).sum();
        let got = setup.call(&format!("get counter{k}\r\n"));
        let value = got.lines().nth(1).unwrap_or("");
        assert_eq!(value, expected.to_string(), "counter{k}: {got}");
    }

    let mut accepted = HashSet::new();
    for (k, unique) in seen.iter().flat_map(|s| &s.cas_accepted) {
        assert!(
            accepted.insert((*k, *unique)),
            "CAS unique {unique} of cas{k} was accepted twice"
        );
    }
    assert!(!accepted.is_empty(), "no cas succeeded at all");

    for k in 0..APPEND_KEYS {
        let got = setup.call(&format!("get app{k}\r\n"));
        let value = got.lines().nth(1).unwrap_or("").to_string();
        let mut tokens: HashMap<&str, usize> = HashMap::new();
        for t in value.split(',').skip(1) {
            *tokens.entry(t).or_default() += 1;
        }
        let stored: Vec<&str> = seen
            .iter()
            .flat_map(|s| &s.appended)
            .filter(|(key, _)| *key == k)
            .map(|(_, t)| t.as_str())
            .collect();
        for t in &stored {
            assert_eq!(
                tokens.get(t),
                Some(&1),
                "append token {t} of app{k} is not there exactly once"
            );
        }
        assert_eq!(
            tokens.len(),
            stored.len(),
            "app{k} holds tokens nobody stored"
        );
    }
}
