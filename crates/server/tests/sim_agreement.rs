//! The simulator and the server are the same engine: a trace replayed through `mrcache_sim` and through a
//! live `mrcached` (over TCP, with the lookaside pattern: get, and set on a miss) with the same memory and
//! policy must give exactly the same hit count.
//!
//! The server runs with one shard (`-t 1`), automove off (the simulator's `memcached` policy), and no
//! item expiry involved, so its real clock cannot change any decision. Both layouts are checked.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use common::{Server, ServerKind};
use mrcache_engine::MemoryLayout;
use mrcache_sim::{key_text, SimConfig, Simulator, SlabPolicy};
use mrcache_workload::synth::{Access, WorkloadSpec};
use mrcache_workload::Op;

fn workload(spec: &str) -> Vec<Access> {
    WorkloadSpec::parse(spec)
        .unwrap()
        .build(11)
        .unwrap()
        .collect()
}

/// Replays through a live server; returns (gets, misses).
fn replay_live(stream: &[Access], memory_mib: u64, layout: MemoryLayout) -> (u64, u64) {
    let mrcached = ServerKind::mrcached();
    let mem = memory_mib.to_string();
    let options = format!(
        "slab_automove=0,shards=1,item_accounting=memcached,memory_layout={}",
        layout.name()
    );
    let server = Server::start(&mrcached, &["-m", &mem, "-t", "1", "-o", &options]);
    let conn = server.connect(Duration::from_secs(5)).expect("connect");
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut writer = conn;
    let value = vec![b'v'; 600_000];
    let (mut gets, mut misses) = (0, 0);
    let mut key = Vec::new();
    let mut line = Vec::new();
    for a in stream {
        key_text(a.tenant, a.key, &mut key);
        key.resize((a.key_size as usize).max(key.len()), b'.');
        let key_str = std::str::from_utf8(&key).unwrap();
        gets += 1;
        write!(writer, "get {key_str}\r\n").unwrap();
        let mut hit = false;
        loop {
            line.clear();
            reader.read_until(b'\n', &mut line).expect("reply");
            if line.starts_with(b"END") {
                break;
            }
            assert!(
                line.starts_with(b"VALUE "),
                "unexpected reply {:?}",
                String::from_utf8_lossy(&line)
            );
            let len: usize = std::str::from_utf8(&line)
                .unwrap()
                .split_whitespace()
                .nth(3)
                .unwrap()
                .parse()
                .unwrap();
            let mut data = vec![0u8; len + 2];
            std::io::Read::read_exact(&mut reader, &mut data).unwrap();
            hit = true;
        }
        if !hit {
            misses += 1;
            let len = a.value_size as usize;
            write!(writer, "set {key_str} 0 0 {len}\r\n").unwrap();
            writer.write_all(&value[..len]).unwrap();
            writer.write_all(b"\r\n").unwrap();
            line.clear();
            reader.read_until(b'\n', &mut line).unwrap();
            assert_eq!(line, b"STORED\r\n", "set {key_str}");
        }
    }
    (gets, misses)
}

/// Replays `spec` both ways at `memory_mib`, in each layout; asserts equal misses and at least
/// `min_evictions` evictions.
fn agree(spec: &str, memory_mib: u64, min_evictions: u64) {
    // The live client issues every request as a lookaside GET; so does the simulator here.
    let stream: Vec<Access> = workload(spec)
        .into_iter()
        .map(|a| Access { op: Op::Get, ..a })
        .collect();
    for layout in [MemoryLayout::Slab, MemoryLayout::Log] {
        let mut config = SimConfig::with_memory(memory_mib << 20);
        config.engine.memory_layout = layout;
        let sim = Simulator::run(config, SlabPolicy::memcached(), stream.iter().copied()).unwrap();
        let (gets, misses) = replay_live(&stream, memory_mib, layout);
        eprintln!(
            "{spec} at {memory_mib} MiB, {}: simulator {} gets, {} misses, {} evictions; server {misses} misses",
            layout.name(),
            sim.gets,
            sim.misses,
            sim.evictions
        );
        assert_eq!(gets, sim.gets);
        assert!(
            sim.evictions >= min_evictions,
            "the cache must be under pressure for the test to mean something"
        );
        assert_eq!(misses, sim.misses, "{}", layout.name());
    }
}

/// A few slab classes competing for pages, under heavy eviction.
#[test]
fn simulator_and_server_agree_under_eviction() {
    agree(
        "zipf:objects=100000,requests=80000,alpha=0.9,key_size=24,value_size=100-1500",
        12,
        10_000,
    );
}

/// ETC's ~25 classes in less memory than one page each: classes live on memcached's first pages.
#[test]
fn simulator_and_server_agree_on_first_pages() {
    agree(
        "etc:objects=200000,requests=100000,popularity=zipf:0.9",
        4,
        100,
    );
}
