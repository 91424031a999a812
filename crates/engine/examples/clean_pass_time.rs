//! How long does the log cleaner hold a shard's lock? Wall time of every `set` on one shard, split into
//! the sets that finished a cleaning pass and the others (which, under the log, advance the pass under
//! way a step), under the log layout and, for comparison, the slab layout.
//!
//! `cargo run --release -p mrcache-engine --example clean_pass_time -- [memory_mib] [sets] [slab|log|both] [policy]`
//!
//! `policy`: the log's ranking, or a ranking with `+p` for probation (`clock+p`: sweeps; see `LogPolicy`).
//!
//! One thread, one shard (so a set's time is how long it held the shard lock, which every request on
//! that shard waits for), 1% MRC profiling (the server's default). 32-byte keys drawn uniformly from
//! 100k, 200-byte values (about 27 MB of items, more than the default 16 MiB holds, so under the log
//! every segment a set needs comes from a cleaning pass), stored once, then `sets` (default 300k) sets,
//! each followed by a get. A set finished a pass when the engine's pass counter
//! (`Engine::cleaner_work`, read outside the timed call) moved during it; the largest number of bytes
//! one set copied is printed too. The engine itself never reads the wall clock (DESIGN.md,
//! fixed decision 3), so the hold is measured here, around the call: in wall time, and in the thread's
//! CPU time (`CLOCK_THREAD_CPUTIME_ID`), which leaves out the time the thread was descheduled — on a
//! shared machine the wall time's tail is the scheduler's (a time slice is about 4 ms), the CPU time's
//! is the engine's work.

use std::time::Instant;

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

use mrcache_engine::{
    Clock, Engine, EngineConfig, Key, LogPolicy, MemoryLayout, Ranking, StoreArgs, TenantId,
};

const KEYS: u64 = 100_000;
const VALUE_BYTES: usize = 200;

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
        "{name:<24} {:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
        v.len(),
        us(v.first().copied().unwrap_or(0)),
        us(quantile(&v, 0.5)),
        us(quantile(&v, 0.99)),
        us(quantile(&v, 0.999)),
        us(v.last().copied().unwrap_or(0)),
    );
}

fn run(layout: MemoryLayout, policy: LogPolicy, memory_mib: u64, sets: u64) {
    let config = EngineConfig {
        memory_limit_bytes: memory_mib << 20,
        shards: 1,
        profile_sample_rate: Some(0.01),
        memory_layout: layout,
        log_ranking: policy.ranking,
        log_probation: policy.probation,
        ..EngineConfig::default()
    };
    let engine = Engine::new(config).expect("engine config");
    let clock = Clock::logical(100);
    let value = vec![b'v'; VALUE_BYTES];
    let key_of = |i: u64| format!("k{i:031}").into_bytes();
    for i in 0..KEYS {
        let k = key_of(i);
        let key = Key {
            tenant: TenantId::DEFAULT,
            bytes: &k,
        };
        engine.store(&StoreArgs::set(key, &value), clock);
    }
    let (mut bytes, mut passes) = engine.cleaner_work();
    let (bytes_before, passes_before) = (bytes, passes);
    let (mut plain, mut cleaning, mut cpu) = (Vec::new(), Vec::new(), Vec::new());
    let mut most_copied = 0;
    let mut out = Vec::with_capacity(4096);
    // xorshift64*: a fixed, cheap key sequence.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..sets {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let k = key_of((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) % KEYS);
        let key = Key {
            tenant: TenantId::DEFAULT,
            bytes: &k,
        };
        let cpu_started = thread_cpu_ns();
        let started = Instant::now();
        engine.store(&StoreArgs::set(key, &value), clock);
        let ns = started.elapsed().as_nanos() as u64;
        cpu.push(thread_cpu_ns() - cpu_started);
        let (b, p) = engine.cleaner_work();
        most_copied = most_copied.max(b - bytes);
        if p > passes {
            cleaning.push(ns);
        } else {
            plain.push(ns);
        }
        (bytes, passes) = (b, p);
        out.clear();
        engine.get(key, clock, |item| out.extend_from_slice(item.value()));
    }
    let ran = passes - passes_before;
    println!(
        "{layout:?} (policy {}): {ran} passes, {:.0} KiB copied per pass, at most {most_copied} bytes by one set",
        policy.name(),
        if ran > 0 {
            (bytes - bytes_before) as f64 / ran as f64 / 1024.0
        } else {
            0.0
        }
    );
    let all: Vec<u64> = plain.iter().chain(&cleaning).copied().collect();
    row("  every set", all);
    row("  every set, thread CPU", cpu);
    row("  sets not finishing one", plain);
    if ran > 0 {
        row("  sets finishing a pass", cleaning);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let memory_mib: u64 = args.next().map_or(16, |a| a.parse().expect("memory_mib"));
    let sets: u64 = args.next().map_or(300_000, |a| a.parse().expect("sets"));
    let layouts: &[MemoryLayout] = match args.next().as_deref() {
        None | Some("both") => &[MemoryLayout::Slab, MemoryLayout::Log],
        Some("slab") => &[MemoryLayout::Slab],
        Some("log") => &[MemoryLayout::Log],
        Some(other) => panic!("layout: expected slab, log or both, got {other:?}"),
    };
    let policy = args.next().map_or(
        LogPolicy {
            ranking: Ranking::default(),
            probation: 0.0,
        },
        |r| {
            LogPolicy::parse(&r).unwrap_or_else(|| {
                panic!(
                    "policy: expected {}, with +p for probation",
                    Ranking::EXPECTED
                )
            })
        },
    );
    println!(
        "-m {memory_mib} MiB, one shard, {sets} sets of 200 B values over 100k keys (µs per set)"
    );
    println!(
        "{:<24} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "", "sets", "min", "p50", "p99", "p99.9", "max"
    );
    for &layout in layouts {
        run(layout, policy, memory_mib, sets);
    }
}
