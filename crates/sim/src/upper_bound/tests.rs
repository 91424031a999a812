//! The profile against the engine (its classes) and against the simulator (its predictions and
//! the upper bound's allocation, replayed).

use super::*;
use crate::{SimConfig, Simulator, SlabPolicy};
use mrcache_workload::synth::WorkloadSpec;

/// Four slab classes (values 100-300 bytes), a working set of about 30 pages.
const WORKLOAD: &str = "zipf:objects=100000,requests=300000,alpha=0.9,value_size=100-300";

/// ETC's sizes over about 25 classes, whose demand-filled allocation is far from the best.
const ETC_UNIFORM: &str = "etc:objects=100000,requests=400000,popularity=uniform";

fn stream_of(workload: &str) -> Box<dyn Iterator<Item = Access> + Send> {
    WorkloadSpec::parse(workload).unwrap().build(7).unwrap()
}

fn stream() -> Box<dyn Iterator<Item = Access> + Send> {
    stream_of(WORKLOAD)
}

fn profile_of(workload: &str, steady_state_from: u64) -> UpperBound {
    let config = SimConfig::with_memory(16 << 20).engine;
    UpperBoundProfiler::profile(&config, steady_state_from, stream_of(workload))
}

fn profile(steady_state_from: u64) -> UpperBound {
    profile_of(WORKLOAD, steady_state_from)
}

#[test]
fn classes_are_the_engines() {
    // With memory to spare nothing is evicted: each class holds exactly the keys it was asked for.
    let report = Simulator::run(
        SimConfig::with_memory(256 << 20),
        SlabPolicy::memcached(),
        stream(),
    )
    .unwrap();
    let ub = profile(0);
    assert_eq!(ub.requests(), 300_000);
    let profiled: Vec<(u8, usize)> = (0..ub.class_count())
        .filter(|&i| ub.distinct_items(i) > 0)
        .map(|i| (ClassId::from_index(i).0, ub.distinct_items(i)))
        .collect();
    let stored: Vec<(u8, usize)> = report
        .allocation
        .iter()
        .map(|a| (a.class, a.items))
        .collect();
    assert_eq!(profiled, stored);
    assert!(profiled.len() >= 3, "{profiled:?}");
    // Nothing evicted: the exact curves' misses at every class's full data are the cold ones.
    let everything: Vec<usize> = (0..ub.class_count())
        .map(|i| ub.classes[i].pages_for_everything())
        .collect();
    assert!((ub.miss_ratio(&everything, Span::WholeRun) - report.miss_ratio).abs() < 1e-12);
}

#[test]
fn prediction_matches_the_simulator() {
    let window_requests = 50_000;
    let steady_from = crate::steady_state_first_request(300_000, window_requests, 0.5);
    let ub = profile(steady_from);
    for memory_mib in [6u64, 12] {
        let plan = ub.plan(memory_mib << 20);
        let mut config = SimConfig::with_memory(memory_mib << 20);
        config.window_requests = window_requests;
        let report = Simulator::run(config, SlabPolicy::memcached(), stream()).unwrap();
        let measured_pages: Vec<usize> = (0..ub.class_count())
            .map(|i| {
                let class = ClassId::from_index(i).0;
                report
                    .allocation
                    .iter()
                    .find(|a| a.class == class)
                    .map_or(0, |a| a.pages)
            })
            .collect();
        let predicted = &plan.default;
        assert_eq!(predicted.pages.iter().sum::<usize>(), plan.total_pages);
        let moved: usize = predicted
            .pages
            .iter()
            .zip(&measured_pages)
            .map(|(p, m)| p.abs_diff(*m))
            .sum();
        assert!(
            moved <= 2,
            "{memory_mib} MiB: predicted {:?}, measured {measured_pages:?}",
            predicted.pages
        );
        let (whole, steady) = (
            predicted.miss_ratio - report.miss_ratio,
            predicted.steady_state_miss_ratio - report.steady_state_miss_ratio(0.5),
        );
        assert!(
            whole.abs() < 0.01 && steady.abs() < 0.01,
            "{memory_mib} MiB: {whole} {steady}"
        );
        // The exact curves at the measured allocation give the measured misses.
        let replayed = ub.miss_ratio(&measured_pages, Span::WholeRun);
        assert!(
            (replayed - report.miss_ratio).abs() < 0.002,
            "{replayed} {}",
            report.miss_ratio
        );
    }
}

#[test]
fn upper_bound_is_never_worse_than_the_default() {
    // Uniform popularity: every cached item is worth the same, so the default's spread of pages by
    // bytes requested leaves misses for the optimum to save.
    let ub = profile_of(ETC_UNIFORM, 200_000);
    let mut gained = 0.0f64;
    for memory_mib in [4u64, 8, 16, 32] {
        let plan = ub.plan(memory_mib << 20);
        assert!(
            plan.upper_bound.miss_ratio <= plan.default.miss_ratio + 1e-12,
            "{memory_mib} MiB: {plan:?}"
        );
        gained = gained.max(plan.default.miss_ratio - plan.upper_bound.miss_ratio);
        let allocated: usize = plan.upper_bound.pages.iter().sum();
        let fits_all: usize = (0..ub.class_count())
            .map(|i| ub.classes[i].pages_for_everything())
            .sum();
        // Memory beyond every class's data stays unallocated; the first-page rule may hold more.
        let held = plan
            .default
            .pages
            .iter()
            .sum::<usize>()
            .max(plan.total_pages);
        assert_eq!(allocated, held.min(fits_all));
        assert_eq!(plan.upper_bound.pages, ub.upper_bound_allocation(held));
    }
    assert!(
        gained > 0.01,
        "the optimum saves misses somewhere: {gained}"
    );
    let again = profile_of(ETC_UNIFORM, 200_000);
    assert_eq!(ub.plan(32 << 20), again.plan(32 << 20), "deterministic");
}

#[test]
fn more_classes_than_pages_keeps_every_first_page() {
    // ETC's sizes use about 25 classes; 4 MiB holds 4 pages. This used to panic ("feasible: the
    // classes can take more than the total: Infeasible"); the bound now keeps a page per class in use,
    // as the engine's first-page rule does beyond the limit, and replays within those pages.
    let ub = profile_of(ETC_UNIFORM, 0);
    let pages = ub.pages_in(4 << 20);
    let in_use = ub.classes_in_use();
    assert!(in_use > pages, "{in_use} classes, {pages} pages");
    let caps = ub.upper_bound_allocation(pages);
    assert_eq!(caps.iter().sum::<usize>(), in_use);
    for (i, &k) in caps.iter().enumerate() {
        assert_eq!(k, usize::from(ub.classes[i].accesses > 0), "class {i}");
    }
    let mut config = SimConfig::with_memory(4 << 20);
    config.page_caps = Some(caps.clone());
    let bound = Simulator::run(
        config,
        SlabPolicy::by_name("upper-bound").unwrap(),
        stream_of(ETC_UNIFORM),
    )
    .unwrap();
    let default = Simulator::run(
        SimConfig::with_memory(4 << 20),
        SlabPolicy::memcached(),
        stream_of(ETC_UNIFORM),
    )
    .unwrap();
    assert_eq!(bound.memory_bytes, 4 << 20, "the memory asked for");
    let held: usize = bound.allocation.iter().map(|a| a.pages).sum();
    assert_eq!(held, in_use, "every class in use got its page");
    // The exact curves predict the replay, and the bound is no worse than demand filling.
    assert!((ub.miss_ratio(&caps, Span::WholeRun) - bound.miss_ratio).abs() < 0.002);
    assert!(
        bound.miss_ratio <= default.miss_ratio + 1e-9,
        "{bound:?} {default:?}"
    );
}
