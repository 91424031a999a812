//! Writes the item sizes `mrcache sim` gives a key-only trace, for simulators outside this workspace
//! (scripts/eviction_anchors.py feeds them to libCacheSim): one little-endian u32 per request, the bytes
//! the log layout's record of that request's item takes (`mrcache_engine::log_record_bytes` of the key
//! and the value), with `mrcache sim`'s defaults (`TraceSizing::default`: 16-byte keys, ETC values of at
//! most 500,000 bytes, seed 1).
//!
//! `cargo run --release -p mrcache-sim --example sized_trace -- TRACE OUT [REQUESTS]`

use std::io::Write;

use mrcache_sim::TraceSizing;
use mrcache_workload::{open_trace, TraceFormat};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [trace, out, rest @ ..] = &args[..] else {
        eprintln!("usage: sized_trace TRACE OUT [REQUESTS]");
        std::process::exit(2);
    };
    let limit = match rest.first().map(|n| n.parse::<usize>()) {
        None => usize::MAX,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("sized_trace: REQUESTS {}: {e}", rest[0]);
            std::process::exit(2);
        }
    };
    let sizing = TraceSizing::default();
    let requests = open_trace(std::path::Path::new(trace), TraceFormat::Auto)
        .unwrap_or_else(|e| panic!("{trace}: {e}"));
    let mut w = std::io::BufWriter::new(
        std::fs::File::create(out).unwrap_or_else(|e| panic!("{out}: {e}")),
    );
    let mut n = 0u64;
    for r in requests.take(limit) {
        let a = sizing.access(&r.unwrap_or_else(|e| panic!("{trace}: {e}")));
        let bytes = mrcache_engine::log_record_bytes(a.key_size.into(), a.value_size as usize);
        w.write_all(&(bytes as u32).to_le_bytes()).unwrap();
        n += 1;
    }
    w.flush().unwrap();
    eprintln!("{n} requests");
}
