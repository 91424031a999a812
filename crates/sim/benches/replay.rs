//! Replay speed of the simulator on ETC: the slab engine with exact LRU per class, one core, with the
//! workload generated beforehand so the figure is the engine's. Two working sets: one that fits the CPU
//! caches (20k objects) and one that does not (1M objects, ~300 MB of items).
//! `cargo bench -p mrcache-sim --bench replay`

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use mrcache_sim::{SimConfig, Simulator, SlabPolicy};
use mrcache_workload::synth::{Access, WorkloadSpec};

const REQUESTS: u64 = 2_000_000;

fn replay(c: &mut Criterion) {
    let mut group = c.benchmark_group("replay_etc");
    group.sample_size(10);
    group.throughput(Throughput::Elements(REQUESTS));
    for objects in [20_000u64, 1_000_000] {
        let spec = format!("etc:objects={objects},requests={REQUESTS}");
        let stream: Vec<Access> = WorkloadSpec::parse(&spec)
            .unwrap()
            .build(1)
            .unwrap()
            .collect();
        // Warm the cache with one pass so the measured pass is steady state, not cold misses.
        group.bench_function(format!("{objects}_objects_512MiB"), |b| {
            b.iter_batched(
                || {
                    let mut sim =
                        Simulator::new(SimConfig::with_memory(512 << 20), SlabPolicy::memcached())
                            .unwrap();
                    for a in &stream {
                        sim.replay(a);
                    }
                    sim
                },
                |mut sim| {
                    for a in &stream {
                        sim.replay(a);
                    }
                    sim
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
