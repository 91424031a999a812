//! Criterion benchmark of the exact LRU profiler on 5M accesses of a skewed synthetic trace
//! (about 60k distinct keys, similar in shape to the cache2k ORM traces).

use criterion::{criterion_group, criterion_main, Criterion};
use mrcache_profile::{AccessObserver, ExactLru, MrcProfiler, MrcQuery, SizeUnit};

const REQUESTS: usize = 5_000_000;
const KEY_SPACE: f64 = 200_000.0;

/// Key `floor(u^3 * KEY_SPACE)` for a SplitMix64 stream `u`: a heavy head and a long tail.
fn skewed_keys(requests: usize) -> Vec<u64> {
    let mut state = 0x5eed_u64;
    (0..requests)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
            (u * u * u * KEY_SPACE) as u64
        })
        .collect()
}

fn exact_lru_5m(c: &mut Criterion) {
    let keys = skewed_keys(REQUESTS);
    let mut group = c.benchmark_group("exact_lru");
    group.sample_size(10);
    group.bench_function("record_5m_and_curve", |b| {
        b.iter(|| {
            let mut profiler = ExactLru::new();
            for &key in &keys {
                profiler.record(key, 100);
            }
            profiler.mrc(&MrcQuery::new(SizeUnit::Objects))
        })
    });
    group.finish();
}

criterion_group!(benches, exact_lru_5m);
criterion_main!(benches);
