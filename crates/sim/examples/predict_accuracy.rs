//! How well LAMA eq. 6 predicts memcached's default allocation: profiles a workload once, replays it through
//! the simulator (`memcached` policy) at every size of a sweep, and prints a markdown table of predicted
//! against measured miss ratios, whole run and steady state (the last half of the windows), with the exact
//! curves read at the measured allocation (which isolates the error of the predicted allocation).
//!
//! `cargo run --release -p mrcache-sim --example predict_accuracy -- WORKLOAD FROM..TO:STEP [WINDOW_REQUESTS] [SEED] [THREADS]`

use mrcache_engine::ClassId;
use mrcache_sim::sweep::{parse_range, sweep};
use mrcache_sim::{steady_state_first_request, SimConfig, Span, UpperBoundProfiler};
use mrcache_workload::synth::{Access, WorkloadSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let workload = args
        .next()
        .ok_or("usage: WORKLOAD FROM..TO:STEP [WINDOW_REQUESTS] [SEED] [THREADS]")?;
    let memories = parse_range(&args.next().ok_or("give a memory range")?)?;
    let number = |text: Option<String>, default: u64| {
        text.map_or(Ok(default), |t| t.parse::<u64>().map_err(|e| e.to_string()))
    };
    let window_requests = number(args.next(), 500_000)?;
    let seed = number(args.next(), 1)?;
    let threads = number(args.next(), 2)? as usize;
    let spec = WorkloadSpec::parse(&workload)?;
    let stream = || {
        spec.build(seed)
            .map(|s| s as Box<dyn Iterator<Item = Access>>)
    };

    let requests = stream()?.count() as u64;
    let steady_from = steady_state_first_request(requests, window_requests, 0.5);
    let mut base = SimConfig::with_memory(memories[0]);
    base.window_requests = window_requests;
    let profile = UpperBoundProfiler::profile(&base.engine, steady_from, stream()?);
    let points = sweep(
        &base,
        &memories,
        &[mrcache_sim::SlabPolicy::memcached()],
        threads,
        stream,
    )?;

    println!("| memory (MiB) | cold start M (requests) | predicted | measured | error | predicted steady | measured steady | error | exact curves at measured pages | pages placed differently | upper bound (steady) |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for point in &points {
        let plan = profile.plan(point.memory_bytes);
        let measured_pages: Vec<usize> = (0..profile.class_count())
            .map(|i| {
                let class = ClassId::from_index(i).0;
                let held = point.report.allocation.iter().find(|a| a.class == class);
                held.map_or(0, |a| a.pages)
            })
            .collect();
        let misplaced: usize = plan
            .default
            .pages
            .iter()
            .zip(&measured_pages)
            .map(|(p, m)| p.abs_diff(*m))
            .sum::<usize>()
            / 2;
        let cold_start = plan
            .cold_start_accesses
            .map_or_else(|| "never full".into(), |m| format!("{m:.0}"));
        println!(
            "| {} | {cold_start} | {:.4} | {:.4} | {:+.4} | {:.4} | {:.4} | {:+.4} | {:.4} | {misplaced} | {:.4} ({:.4}) |",
            point.memory_bytes >> 20,
            plan.default.miss_ratio,
            point.miss_ratio,
            plan.default.miss_ratio - point.miss_ratio,
            plan.default.steady_state_miss_ratio,
            point.steady_state_miss_ratio,
            plan.default.steady_state_miss_ratio - point.steady_state_miss_ratio,
            profile.miss_ratio(&measured_pages, Span::WholeRun),
            plan.upper_bound.miss_ratio,
            plan.upper_bound.steady_state_miss_ratio,
        );
    }
    Ok(())
}
