//! Engine throughput against threads and shards: does the request path scale with cores?
//!
//! `cargo run --release -p mrcache-engine --example thread_scaling -- [threads,..] [shards,..] [ops_per_thread]`
//!
//! Each thread runs the server's hot path without the network: 90% `get` (copying the value out, as a
//! reply would) and 10% `set` of 200-byte values, 32-byte keys drawn uniformly from 100k keys that are
//! stored beforehand (so gets hit), on one shared engine with `-m 64`-sized memory and 1% MRC profiling
//! (the server's defaults). Every thread does the same number of operations; the figure is all threads'
//! operations over the wall time of the slowest. With one shard every operation takes the same lock, so
//! the gap between `shards=1` and `shards=threads` at the same thread count is what the lock costs.
//! Only as many threads as cores give a meaningful scaling figure.

use std::sync::{Arc, Barrier};
use std::time::Instant;

use mrcache_engine::{Clock, Engine, EngineConfig, Key, StoreArgs, TenantId};

const KEYS: usize = 100_000;
const VALUE_BYTES: usize = 200;

fn key_bytes(i: usize) -> Vec<u8> {
    format!("k{i:031}").into_bytes()
}

/// One run: ops/s over all threads.
fn run(threads: usize, shards: usize, ops_per_thread: u64) -> f64 {
    let config = EngineConfig {
        memory_limit_bytes: 64 << 20,
        shards,
        profile_sample_rate: Some(0.01),
        ..EngineConfig::default()
    };
    let engine = Arc::new(Engine::new(config).expect("engine config"));
    let clock = Clock::logical(100);
    let value = vec![b'v'; VALUE_BYTES];
    let keys: Arc<Vec<Vec<u8>>> = Arc::new((0..KEYS).map(key_bytes).collect());
    for k in keys.iter() {
        let key = Key {
            tenant: TenantId::DEFAULT,
            bytes: k,
        };
        engine.store(&StoreArgs::set(key, &value), clock);
    }
    let barrier = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (engine, keys, barrier) = (engine.clone(), keys.clone(), barrier.clone());
            std::thread::spawn(move || {
                let value = vec![b'w'; VALUE_BYTES];
                let mut out = Vec::with_capacity(4096);
                // xorshift64*: cheap, and each thread's stream differs.
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ ((t as u64 + 1) << 32);
                let mut hits = 0u64;
                barrier.wait();
                for _ in 0..ops_per_thread {
                    x ^= x >> 12;
                    x ^= x << 25;
                    x ^= x >> 27;
                    let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
                    let key = Key {
                        tenant: TenantId::DEFAULT,
                        bytes: &keys[(r >> 32) as usize % KEYS],
                    };
                    if r.is_multiple_of(10) {
                        engine.store(&StoreArgs::set(key, &value), clock);
                    } else {
                        out.clear();
                        let hit =
                            engine.get(key, clock, |item| out.extend_from_slice(item.value()));
                        hits += hit.is_some() as u64;
                    }
                }
                hits
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let hits: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let secs = started.elapsed().as_secs_f64();
    assert!(hits > 0, "the preloaded keys must hit");
    (threads as u64 * ops_per_thread) as f64 / secs
}

fn list(arg: Option<String>, default: &[usize]) -> Vec<usize> {
    arg.map_or_else(
        || default.to_vec(),
        |a| a.split(',').map(|n| n.parse().expect("a number")).collect(),
    )
}

fn main() {
    let mut args = std::env::args().skip(1);
    let threads = list(args.next(), &[1, 2]);
    let shards = list(args.next(), &[1, 2]);
    let ops: u64 = args.next().map_or(5_000_000, |a| a.parse().expect("ops"));
    println!(
        "cores {}; {ops} ops per thread; 90% get / 10% set, 100k keys, 200 B values",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "{:>8} {:>7} {:>14} {:>14}",
        "threads", "shards", "M ops/s", "per thread"
    );
    for &t in &threads {
        for &s in &shards {
            let rate = run(t, s, ops);
            println!(
                "{t:>8} {s:>7} {:>14.2} {:>14.2}",
                rate / 1e6,
                rate / 1e6 / t as f64
            );
        }
    }
}
