//! How long does an item walk hold a shard's lock? Wall and thread CPU time of every
//! `Engine::walk_items` batch (a metadump's: 128 buckets) and every `Engine::crawl_expired` batch (the
//! crawler's: 1024 buckets) over a whole walk, on both layouts.
//!
//! `cargo run --release -p mrcache-engine --example walk_batch_time -- [items] [shards] [slab|log|both]`
//!
//! `items` (default 2,000,000) items of 32-byte keys and 100-byte values, a quarter of them already
//! expired (so the crawl unlinks), in `shards` shards (default 4, the server's for `-t 4`). One call is
//! one lock hold, which every request on that shard waits for; each is timed around the call (the
//! engine reads no clock), in wall time and in the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which
//! leaves out time the thread was descheduled: on a shared machine the wall time's tail is the
//! scheduler's, the CPU time's is the engine's.

use std::time::Instant;

use mrcache_engine::{
    ClassSet, Clock, CrawlQuota, Engine, EngineConfig, ItemBatch, Key, MemoryLayout, StoreArgs,
    WalkCursor, WalkFilter,
};

/// The crawler's and a metadump's batch sizes (`crate::crawler` and `dispatch::dump` of the server).
const CRAWL_SLOTS: usize = 1024;
const DUMP_SLOTS: usize = 128;

/// This thread's CPU time, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds at quantile `q` of sorted `v` (0 when empty).
fn quantile(v: &[u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn row(name: &str, mut v: Vec<u64>) {
    v.sort_unstable();
    let us = |ns: u64| ns as f64 / 1e3;
    println!(
        "{name:<26} {:>7} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
        v.len(),
        us(quantile(&v, 0.5)),
        us(quantile(&v, 0.99)),
        us(quantile(&v, 0.999)),
        us(v.last().copied().unwrap_or(0)),
    );
}

/// Times `step` once per call until it says the walk is done: (wall, cpu) nanoseconds of each call.
fn time_calls(mut step: impl FnMut() -> bool) -> (Vec<u64>, Vec<u64>) {
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    loop {
        let (t, c) = (Instant::now(), thread_cpu_ns());
        let done = step();
        cpu.push(thread_cpu_ns() - c);
        wall.push(t.elapsed().as_nanos() as u64);
        if done {
            return (wall, cpu);
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let items: usize = args.next().map_or(2_000_000, |a| a.parse().expect("items"));
    let shards: usize = args.next().map_or(4, |a| a.parse().expect("shards"));
    let layouts = match args.next().as_deref() {
        Some("slab") => vec![MemoryLayout::Slab],
        Some("log") => vec![MemoryLayout::Log],
        _ => vec![MemoryLayout::Slab, MemoryLayout::Log],
    };
    println!("{items} items, {shards} shards; microseconds per call (one shard lock hold)");
    println!(
        "{:<26} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "", "calls", "p50", "p99", "p99.9", "max"
    );
    for layout in layouts {
        let engine = Engine::new(EngineConfig {
            memory_limit_bytes: (items as u64 * 400).max(64 << 20),
            shards,
            memory_layout: layout,
            ..EngineConfig::default()
        })
        .expect("engine");
        let clock = Clock::logical(100);
        let value = [b'v'; 100];
        for i in 0..items {
            let key = format!("{i:032}");
            let args = StoreArgs {
                exptime: if i % 4 == 0 { 10 } else { 0 },
                ..StoreArgs::set(Key::default_tenant(key.as_bytes()), &value)
            };
            engine.store(&args, clock);
        }
        let later = Clock::logical(200);
        let name = |what: &str| format!("{layout:?} {what}");

        let (mut cursor, mut batch, mut listed) = (WalkCursor::default(), ItemBatch::new(), 0);
        let (wall, cpu) = time_calls(|| {
            engine.walk_items(&mut cursor, DUMP_SLOTS, WalkFilter::ALL, later, &mut batch);
            listed += batch.len();
            cursor.is_done()
        });
        row(&name("metadump batch, wall"), wall);
        row(&name("metadump batch, cpu"), cpu);
        assert_eq!(listed, items - items.div_ceil(4), "every live item listed");

        let (mut cursor, mut quota) = (WalkCursor::default(), CrawlQuota::new(ClassSet::ALL, None));
        let mut reclaimed = 0;
        let (wall, cpu) = time_calls(|| {
            reclaimed += engine
                .crawl_expired(&mut cursor, CRAWL_SLOTS, later, &mut quota)
                .reclaimed;
            cursor.is_done()
        });
        row(&name("crawl batch, wall"), wall);
        row(&name("crawl batch, cpu"), cpu);
        assert_eq!(
            reclaimed as usize,
            items.div_ceil(4),
            "every expired item reclaimed"
        );
    }
}
