//! The default engine on a short real trace (issue 36's "done when"): arc-OLTP (914,145 block requests,
//! read as keys) with the ETC value sizes `mrcache sim` gives a key-only trace, every request a GET and
//! every miss a SET (lookaside), at 50% and 75% of the distinct items' bytes. The server's default
//! (the log layout, its default ranking, compact accounting) must miss no more than slab + memcached
//! at the same `-m`, and no more than S3-FIFO at the same bytes as libCacheSim simulated it (0.5%
//! relative tolerance). The libCacheSim figures are recorded in `fixtures/default_eviction.json` with
//! the command that produced them (`scripts/eviction-anchors.sh --sized-fixture`); its objects are
//! charged their log records' bytes.
//!
//! Not every size passes: at 25% and 35% of this trace the default misses 0.8% and 1.6% more than
//! S3-FIFO, and on caches of a few segments far more (docs/results.md §15.10). Those cells are
//! reported there, not checked here; this test keeps the sizes where the default is at or below both
//! from regressing.
//!
//! The traces live in the shared folder beside the repository (`../shared/traces`, or
//! `MRCACHE_TRACES`); the test fails, naming the folder, when they are missing.

use mrcache_engine::{ItemAccounting, MemoryLayout};
use mrcache_sim::{SimConfig, SimDefaults, Simulator, SlabPolicy, TraceSizing};
use mrcache_workload::synth::Access;
use mrcache_workload::{open_trace, Op, TraceFormat};

const FIXTURE: &str = include_str!("fixtures/default_eviction.json");
const TOLERANCE: f64 = 1.005;

fn lookaside_stream(fixture: &serde_json::Value) -> Vec<Access> {
    let dir = mrcache_workload::trace::shared_traces_dir().unwrap_or_else(|e| panic!("{e}"));
    let name = fixture["trace"].as_str().unwrap();
    let requests = fixture["requests"].as_u64().unwrap() as usize;
    let sizing = TraceSizing {
        key_size: fixture["key_size"].as_u64().unwrap() as u8,
        ..TraceSizing::default()
    };
    let stream: Vec<Access> = open_trace(&dir.join(name), TraceFormat::Auto)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .take(requests)
        .map(|r| Access {
            op: Op::Get,
            ..sizing.access(&r.unwrap_or_else(|e| panic!("{name}: {e}")))
        })
        .collect();
    assert_eq!(
        stream.len(),
        requests,
        "{name} is shorter than the fixture's"
    );
    stream
}

fn miss_ratio(stream: &[Access], config: SimConfig, policy: SlabPolicy) -> f64 {
    let report = Simulator::run(config, policy, stream.iter().copied()).unwrap();
    report.miss_ratio
}

/// The default: what `mrcached` and `mrcache sim` run given no flags (`SimDefaults::MRCACHED`: the log
/// layout, demand-filled as the log has no classes, and the server's accounting).
fn default_miss_ratio(stream: &[Access], memory: u64) -> f64 {
    let defaults = SimDefaults::MRCACHED;
    let policy = match defaults.layout {
        MemoryLayout::Slab => defaults.slab_policy(),
        MemoryLayout::Log => SlabPolicy::memcached(),
    };
    miss_ratio(stream, defaults.config(memory), policy)
}

/// Slab + memcached at the same `-m`, with the server's accounting (`-o item_accounting=compact`).
fn slab_miss_ratio(stream: &[Access], memory: u64) -> f64 {
    let mut config = SimConfig::with_memory(memory);
    config.engine.memory_layout = MemoryLayout::Slab;
    config.engine.item_accounting = ItemAccounting::Compact;
    miss_ratio(stream, config, SlabPolicy::memcached())
}

#[test]
fn the_default_misses_no_more_than_slab_and_s3fifo_on_a_real_trace() {
    let fixture: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
    let stream = lookaside_stream(&fixture);
    let mut failures = Vec::new();
    for cell in fixture["sizes"].as_array().unwrap() {
        let memory = cell["memory_bytes"].as_u64().unwrap();
        let s3fifo = cell["s3fifo_miss_ratio"].as_f64().unwrap();
        let default = default_miss_ratio(&stream, memory);
        let slab = slab_miss_ratio(&stream, memory);
        eprintln!(
            "{memory} bytes: default (log) {default:.6}, slab + memcached {slab:.6}, S3-FIFO {s3fifo:.6}"
        );
        if default > slab * TOLERANCE {
            failures.push(format!(
                "{memory} bytes: the default misses {default:.6}, slab + memcached {slab:.6}"
            ));
        }
        if default > s3fifo * TOLERANCE {
            failures.push(format!(
                "{memory} bytes: the default misses {default:.6}, libCacheSim's S3-FIFO {s3fifo:.6}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
