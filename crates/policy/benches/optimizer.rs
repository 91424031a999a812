//! LAMA Algorithm 1 at LAMA's scale: 40 classes, 1,024 pages, N = 50 (target: under 10 ms).
//! `cargo bench -p mrcache-policy --bench optimizer`

use criterion::{criterion_group, criterion_main, Criterion};
use mrcache_policy::{optimal_allocation, Partition, Problem};

fn problem() -> Problem {
    let pages = 1024;
    let partitions = (0..40)
        .map(|i| Partition {
            // Miss curves of different shapes: power laws with per-class exponents, a few with cliffs.
            cost: (0..=pages)
                .map(|k| {
                    let base =
                        1000.0 * (i + 1) as f64 / (1.0 + k as f64).powf(0.3 + (i % 7) as f64 * 0.1);
                    if i % 5 == 0 && k < 100 + i * 3 {
                        base + 500.0
                    } else {
                        base
                    }
                })
                .collect(),
            current_pages: if i < 24 { 26 } else { 25 },
            min_pages: 0,
        })
        .collect();
    Problem {
        partitions,
        total_pages: pages,
        max_moves: Some(50),
        granularity: 1,
    }
}

fn bench(c: &mut Criterion) {
    let p = problem();
    c.bench_function("lama_algorithm_1_40_classes_1024_pages_n50", |b| {
        b.iter(|| optimal_allocation(&p).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
