//! The default slab policy on real traffic: a shortened version of docs/results.md's "Slab policies on
//! real traces" (scripts/real-trace-policies.sh). The first requests of a shared cache2k trace, and
//! three whole-trace cells that decided the defaults, ETC value sizes, lookaside, at sizes where the
//! baselines differ; `lama-mr` must miss no more than the best baseline plus 0.5% relative (and, on
//! the shortened trace, no more than memcached's default).
//!
//! The traces live in the shared folder beside the repository (`../shared/traces`, or
//! `MRCACHE_TRACES`); the test fails, naming the folder, when they are missing.

use std::path::PathBuf;

use mrcache_sim::{SimConfig, Simulator, SlabPolicy, TraceSizing, UpperBoundProfiler};
use mrcache_workload::synth::Access;
use mrcache_workload::{open_trace, TraceFormat};

/// The shared traces folder; panics, naming it, when it is missing.
fn traces_dir() -> PathBuf {
    mrcache_workload::trace::shared_traces_dir().unwrap_or_else(|e| panic!("{e}"))
}

/// The first `requests` of a key-only trace with ETC value sizes (the CLI's `--value-size etc`).
fn trace(name: &str, requests: usize) -> Vec<Access> {
    let sizing = TraceSizing::default();
    open_trace(&traces_dir().join(name), TraceFormat::Auto)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .take(requests)
        .map(|r| sizing.access(&r.unwrap_or_else(|e| panic!("{name}: {e}"))))
        .collect()
}

fn miss_ratio(stream: &[Access], memory_bytes: u64, policy: &str) -> f64 {
    let report = Simulator::run(
        SimConfig::with_memory(memory_bytes),
        SlabPolicy::by_name(policy).unwrap(),
        stream.iter().copied(),
    )
    .unwrap();
    report.miss_ratio
}

const BASELINES: [&str; 5] = ["memcached", "automove", "psa", "facebook", "twemcache"];

/// Every baseline's miss ratio and lama-mr's, on `stream` at `memory` bytes.
fn baselines_and_lama(stream: &[Access], memory: u64) -> (Vec<(&'static str, f64)>, f64) {
    let baselines = BASELINES
        .iter()
        .map(|&p| (p, miss_ratio(stream, memory, p)))
        .collect();
    (baselines, miss_ratio(stream, memory, "lama-mr"))
}

fn best(baselines: &[(&str, f64)]) -> f64 {
    baselines.iter().map(|b| b.1).fold(f64::INFINITY, f64::min)
}

#[test]
fn lama_mr_is_never_worse_than_memcached_or_the_best_baseline() {
    let stream = trace("kv/cache2k-orm-night.trace.xz", REQUESTS);
    for memory_mib in MEMORY_MIB {
        let (baselines, lama) = baselines_and_lama(&stream, memory_mib << 20);
        let memcached = baselines[0].1;
        assert!(
            lama <= memcached && lama <= best(&baselines) * 1.005,
            "{memory_mib} MiB: lama-mr {lama:.4} against {baselines:?}"
        );
    }
}

/// `share` of the stream's distinct-object bytes under memcached's accounting, as `mrcache sim --memory
/// P%` sizes it ([`mrcache_sim::UpperBound::memory_for_share`]).
fn memory_for_share(stream: &[Access], share: f64) -> u64 {
    let config = SimConfig::with_memory(64 << 20).engine;
    let mut profiler = UpperBoundProfiler::new(&config, 0);
    for a in stream {
        profiler.record(a);
    }
    profiler.finish().memory_for_share(share, &config).1
}

/// The cells the defaults of docs/results.md §14.6 were made for, whole traces (release build: tens
/// of seconds). orm-busy and orm-night at 32 MiB, where idle classes come back: curves from every key
/// lost 14.2% and 9.8% against memcached while a returning class took its page from the largest class.
/// cloudPhysicsIO at 50% of its distinct bytes, where curves from 1% of the keys were too thin to move
/// pages in time: 5.6% more misses than Twemcache. Each must be within issue 13's target: at most
/// the best baseline plus 0.5% relative.
#[test]
fn lama_mr_holds_where_idle_classes_return_and_where_sampled_curves_were_thin() {
    for (name, memory) in [
        ("kv/cache2k-orm-busy.trace.xz", None),
        ("kv/cache2k-orm-night.trace.xz", None),
        ("block/cloudPhysicsIO.oracleGeneral.bin", Some(0.5)),
    ] {
        let stream = trace(name, usize::MAX);
        let memory = memory.map_or(32 << 20, |share| memory_for_share(&stream, share));
        let (baselines, lama) = baselines_and_lama(&stream, memory);
        assert!(
            lama <= best(&baselines) * 1.005,
            "{name}, {memory} bytes: lama-mr {lama:.5} against {baselines:?}"
        );
    }
}

/// Requests replayed: long enough for several rounds, short enough for a debug build.
const REQUESTS: usize = 1_000_000;
/// One size where every class holds about its first page, one where pages can move.
const MEMORY_MIB: [u64; 2] = [16, 32];
