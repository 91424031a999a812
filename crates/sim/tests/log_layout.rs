//! The log-structured layout in the simulator: every tenant arbiter runs on it (reserved + pooled
//! `static`, `pooled`, Memshare's credits, mPart's DP, LAMA's QoS partition), no tenant falls below its
//! reserve, the engine's invariants hold, and on ETC sizes the log has fewer misses than slab classes
//! with memcached's demand filling at equal memory.

use mrcache_engine::MemoryLayout;
use mrcache_policy::arbitrate::ArbitratedTenant;
use mrcache_sim::{SimConfig, SimReport, Simulator, SlabPolicy, TenantSetup};
use mrcache_workload::synth::WorkloadSpec;

fn config(memory_mib: u64, layout: MemoryLayout) -> SimConfig {
    let mut config = SimConfig::with_memory(memory_mib << 20);
    config.engine.memory_layout = layout;
    config.window_requests = 100_000;
    config.requests_per_second = 10_000;
    config
}

#[test]
fn every_arbiter_runs_on_the_log_and_keeps_reserves() {
    // mPart's six applications at 1/400 scale: six tenants of different working sets.
    let spec = "mpart-six:scale=400,requests=150000";
    for arbiter in [
        "static",
        "pooled",
        "memshare:credit=3800,shadow=38000",
        "mpart:interval=90000",
        "lama-qos:interval=90000",
    ] {
        let mut c = config(16, MemoryLayout::Log);
        let mut tenants: Vec<ArbitratedTenant> = (0..6)
            .map(|t| {
                let mut a = ArbitratedTenant::new(mrcache_engine::TenantId(t));
                a.reserved_bytes = 1 << 20;
                a
            })
            .collect();
        tenants[0].target_hit_ratio = Some(0.8);
        c.tenants = Some(TenantSetup {
            arbiter: arbiter.parse().unwrap(),
            tenants,
        });
        let stream = WorkloadSpec::parse(spec).unwrap().build(1).unwrap();
        let mut sim = Simulator::new(c, SlabPolicy::by_name("memcached").unwrap()).unwrap();
        for a in stream {
            sim.replay(&a);
        }
        sim.engine().check_invariants().unwrap();
        let report: SimReport = sim.finish();
        assert_eq!(report.policy, "log");
        assert!(
            report.gets > 100_000 && report.misses < report.gets,
            "{arbiter}"
        );
        if arbiter != "pooled" {
            for t in &report.tenants {
                let pages = t.totals.pages.unwrap_or(0);
                assert!(
                    pages >= 1,
                    "{arbiter}: tenant {} holds {pages} segments",
                    t.totals.tenant
                );
            }
        }
    }
}

#[test]
fn on_etc_sizes_the_log_misses_less_than_slab_classes() {
    let spec = "etc:objects=200000,requests=1500000";
    let run = |layout| {
        let stream = WorkloadSpec::parse(spec).unwrap().build(2).unwrap();
        Simulator::run(
            config(24, layout),
            SlabPolicy::by_name("memcached").unwrap(),
            stream,
        )
        .unwrap()
    };
    let (slab, log) = (run(MemoryLayout::Slab), run(MemoryLayout::Log));
    assert_eq!(
        (slab.policy.as_str(), log.policy.as_str()),
        ("memcached", "log")
    );
    assert!(
        log.misses < slab.misses,
        "log {} misses, slab {}",
        log.misses,
        slab.misses
    );
}
