//! Measures replay speed: ETC through the slab engine with LRU, one core.
//! `cargo run --release -p mrcache-sim --example replay_speed -- [requests] [memory_mib] [objects] [mrc_rate]`
//! (`mrc_rate` > 0 turns the engine's online MRC profiling on at that sampling rate).

use std::time::Instant;

use mrcache_sim::{SimConfig, Simulator, SlabPolicy};
use mrcache_workload::synth::{Access, WorkloadSpec};

fn main() {
    let mut args = std::env::args().skip(1);
    let requests: u64 = args
        .next()
        .map_or(5_000_000, |a| a.parse().expect("requests"));
    let memory_mib: u64 = args.next().map_or(256, |a| a.parse().expect("memory MiB"));
    let objects: u64 = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("objects"));
    let mrc_rate: f64 = args
        .next()
        .map_or(0.0, |a| a.parse().expect("mrc sampling rate"));
    let spec = format!("etc:objects={objects},requests={requests}");
    // Generate first so that the figure is the engine's speed, then the two together.
    let t = Instant::now();
    let stream: Vec<Access> = WorkloadSpec::parse(&spec)
        .unwrap()
        .build(1)
        .unwrap()
        .collect();
    let gen_secs = t.elapsed().as_secs_f64();
    let mut config = SimConfig::with_memory(memory_mib << 20);
    config.engine.profile_sample_rate = (mrc_rate > 0.0).then_some(mrc_rate);
    let t = Instant::now();
    let report = Simulator::run(config, SlabPolicy::memcached(), stream).unwrap();
    let replay_secs = t.elapsed().as_secs_f64();
    println!(
        "{requests} ETC requests, {objects} objects, {memory_mib} MiB, mrc rate {mrc_rate}: generate {:.2} M req/s, replay {:.2} M req/s, miss ratio {:.4}",
        requests as f64 / gen_secs / 1e6,
        requests as f64 / replay_secs / 1e6,
        report.miss_ratio
    );
}
