//! The simulator end to end: determinism (the same seed gives the same numbers, bit for bit), the miss
//! ratio falling with memory, and the engine's invariants after a long run with page moves.

use mrcache_sim::upper_bound::{oracle_windows, UpperBoundProfiler};
use mrcache_sim::{SimConfig, SimReport, Simulator, SlabPolicy};
use mrcache_workload::synth::WorkloadSpec;

fn run(spec: &str, memory_mib: u64, policy: &str, seed: u64) -> SimReport {
    let stream = || WorkloadSpec::parse(spec).unwrap().build(seed).unwrap();
    let mut config = SimConfig::with_memory(memory_mib << 20);
    config.window_requests = 50_000;
    config.requests_per_second = 5_000;
    let policy = SlabPolicy::by_name(policy).unwrap();
    if policy.needs_profile() {
        // The upper bound and the oracle replay what a first exact pass planned.
        let mut profiler = UpperBoundProfiler::new(&config.engine, 0)
            .with_windows(&oracle_windows([&policy], config.window_requests));
        for a in stream() {
            profiler.record(&a);
        }
        profiler.finish().configure(&mut config, &policy).unwrap();
    }
    Simulator::run(config, policy, stream()).unwrap()
}

#[test]
fn same_seed_same_report_bit_for_bit() {
    let spec = "etc:objects=50000,requests=200000";
    let a = serde_json::to_string(&run(spec, 8, "automove", 3)).unwrap();
    let b = serde_json::to_string(&run(spec, 8, "automove", 3)).unwrap();
    assert_eq!(a, b);
    let c = serde_json::to_string(&run(spec, 8, "automove", 4)).unwrap();
    assert_ne!(a, c, "a different seed gives a different stream");
}

#[test]
fn more_memory_fewer_misses() {
    // One slab class: with ETC's ~25 classes, memories below ~32 MiB hold only each class's first page,
    // exactly as memcached's first-page rule does, and the curve is flat there.
    let spec = "zipf:objects=100000,requests=400000,value_size=200";
    let ratios: Vec<f64> = [4, 8, 16, 32]
        .iter()
        .map(|&m| run(spec, m, "memcached", 1).miss_ratio)
        .collect();
    assert!(ratios.windows(2).all(|w| w[1] < w[0]), "{ratios:?}");
    assert!(
        ratios[3] < 0.5 && ratios[0] > ratios[3] + 0.05,
        "{ratios:?}"
    );
}

#[test]
fn report_accounts_for_every_request() {
    let r = run(
        "zipf:objects=20000,requests=100000,get_ratio=0.9",
        4,
        "memcached",
        9,
    );
    assert_eq!(r.requests, 100_000);
    assert_eq!(r.windows.iter().map(|w| w.gets).sum::<u64>(), r.gets);
    assert_eq!(r.windows.iter().map(|w| w.misses).sum::<u64>(), r.misses);
    // Lookaside: every miss stores the object, plus the explicit 10% SETs.
    assert_eq!(r.sets, r.misses + (r.requests - r.gets));
    assert!(r.allocation.iter().map(|a| a.pages).sum::<usize>() <= 4);
}

#[test]
fn every_policy_runs_deterministically_with_the_engine_intact() {
    let spec = "etc:objects=60000,requests=300000,popularity=uniform";
    for policy in SlabPolicy::names() {
        let a = run(spec, 8, policy, 5);
        let b = run(spec, 8, policy, 5);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap(),
            "{policy}"
        );
        assert!(a.gets > 0 && a.misses <= a.gets, "{policy}");
    }
}

#[test]
fn lama_beats_demand_filling_on_etc_sizes() {
    // Uniform popularity (mutilate's, as in LAMA §5.2): every cached item is worth the same, so
    // memory belongs to the classes of small items; demand filling spreads it by bytes requested.
    let spec = "etc:objects=150000,requests=1500000,popularity=uniform";
    let stream = || WorkloadSpec::parse(spec).unwrap().build(2).unwrap();
    let mut config = SimConfig::with_memory(16 << 20);
    config.window_requests = 100_000;
    let memcached = Simulator::run(config.clone(), SlabPolicy::memcached(), stream()).unwrap();
    let lama = Simulator::run(
        config,
        SlabPolicy::by_name("lama-mr:interval=100000,min_interval=100000").unwrap(),
        stream(),
    )
    .unwrap();
    let (m, l) = (
        memcached.steady_state_miss_ratio(0.3),
        lama.steady_state_miss_ratio(0.3),
    );
    assert!(lama.page_moves > 0);
    assert!(l < m * 0.95, "lama-mr {l:.4} vs memcached {m:.4}");
}

#[test]
fn a_given_sampling_rate_keeps_the_simulators_profile_memory() {
    // `--mrc-sample-rate` changes the rate only: the profilers keep the simulator's memory share
    // (the server's 1% would profile a few classes of a small cache, with few keys each) unless
    // another is given (`--mrc-memory-share`).
    let curves = SlabPolicy::by_name("lama-mr").unwrap();
    for rate in [None, Some(1.0)] {
        let mut config = SimConfig::with_memory(32 << 20);
        config.engine.profile_sample_rate = rate;
        let sim = Simulator::new(config, curves.clone()).unwrap();
        let engine = sim.engine().config();
        let default = mrcache_engine::profiling::DEFAULT_SAMPLE_RATE;
        assert_eq!(engine.profile_sample_rate, Some(rate.unwrap_or(default)));
        assert_eq!(
            engine.profile_memory_share,
            mrcache_sim::SIM_PROFILE_MEMORY_SHARE
        );
    }
    // The server's share, asked for.
    let mut config = SimConfig::with_memory(32 << 20);
    config.profile_memory_share = mrcache_engine::profiling::PROFILE_MEMORY_SHARE;
    let sim = Simulator::new(config, curves).unwrap();
    assert_eq!(sim.engine().config().profile_memory_share, 0.01);
}
