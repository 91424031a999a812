//! Unit tests of the memory model: when it is on, how many pools, which arbiter, and what the maintenance
//! thread's `MemoryModel` does to the engine at start, on each tick and on a reload.

use super::*;
use crate::settings::Settings;
use crate::tenants::config::parse_config;
use mrcache_engine::{Engine, Key, StoreArgs};

fn config(text: &str) -> TenantsConfig {
    TenantsConfig::merge(parse_config(text).unwrap(), Vec::new()).unwrap()
}

/// A server context over 32 one-MiB pages in one shard, with the tenants of `file`.
fn ctx(file: &str, cli_policy: Option<&str>) -> ServerContext {
    let settings = Settings {
        memory_limit_bytes: 32 << 20,
        shards: 1,
        tenants: config(file),
        tenant_policy: cli_policy.map(spec),
        ..Settings::default()
    };
    let engine = Engine::new(settings.engine_config()).unwrap();
    ServerContext::new(engine, settings, 1)
}

/// The tenant policy `text` names.
fn spec(text: &str) -> TenantPolicySpec {
    text.parse().unwrap()
}

fn policy(ctx: &ServerContext) -> String {
    ctx.tenant_policy.lock().unwrap().clone()
}

/// Stores `n` 100-byte items of tenant `tenant`.
fn store(ctx: &ServerContext, tenant: u16, n: usize) {
    for i in 0..n {
        let key = format!("k{i}");
        ctx.engine.store(
            &StoreArgs::set(Key::new(TenantId(tenant), key.as_bytes()), &[b'v'; 100]),
            ctx.clock(),
        );
    }
}

#[test]
fn pools_and_the_policy_follow_the_configuration() {
    let none = TenantsConfig::default();
    assert!(!enabled(None, &none));
    assert_eq!(pool_count(None, &none), 1);
    let only_default = config("[[tenant]]\nname = \"default\"\nreserved = 1024\n");
    assert_eq!(
        pool_count(None, &only_default),
        1,
        "the default tenant alone"
    );
    assert_eq!(pool_count(Some(&spec("static")), &none), MIN_TENANT_POOLS);
    assert_eq!(
        pool_count(None, &config("tenant_policy = \"static\"")),
        MIN_TENANT_POOLS
    );
    let many: String = (0..20)
        .map(|i| format!("[[tenant]]\nname = \"t{i}\"\n"))
        .collect();
    assert_eq!(
        pool_count(None, &config(&many)),
        22,
        "20, default, one more"
    );
    let too_many: String = (0..MAX_TENANT_POOLS + 5)
        .map(|i| format!("[[tenant]]\nname = \"t{i}\"\n"))
        .collect();
    assert_eq!(pool_count(None, &config(&too_many)), MAX_TENANT_POOLS);

    let file = config("tenant_policy = \"memshare\"\n[[tenant]]\nname = \"a\"\n");
    assert_eq!(policy_spec(None, &file).to_string(), "memshare");
    assert_eq!(
        policy_spec(Some(&spec("static")), &file).to_string(),
        "static"
    );
    assert_eq!(policy_spec(None, &none), DEFAULT_TENANT_POLICY);
}

#[test]
fn the_default_tenant_is_arbitrated_unless_configured() {
    let t = crate::tenants::Tenants::new(
        config("[[tenant]]\nname = \"a\"\nreserved = \"2MiB\"\nmax = \"8MiB\"\ntarget_hit_ratio = 0.9\nweight = 3.0\n"),
        None,
        None,
    )
    .unwrap();
    let specs = arbitrated_tenants(&t.current());
    assert_eq!(specs.len(), 2);
    assert_eq!(
        specs[0],
        arbitrate::ArbitratedTenant::new(TenantId::DEFAULT)
    );
    let a = &specs[1];
    assert_eq!(a.tenant, TenantId(1));
    assert_eq!(
        (a.reserved_bytes, a.max_bytes, a.target_hit_ratio, a.weight),
        (2 << 20, Some(8 << 20), Some(0.9), 3.0)
    );
    let t = crate::tenants::Tenants::new(
        config("[[tenant]]\nname = \"a\"\n[[tenant]]\nname = \"default\"\nweight = 2.0\n"),
        None,
        None,
    )
    .unwrap();
    let specs = arbitrated_tenants(&t.current());
    assert_eq!(specs.len(), 2);
    assert_eq!((specs[0].tenant, specs[0].weight), (TenantId::DEFAULT, 2.0));
}

#[test]
fn without_tenants_there_is_one_memory_and_no_arbiter() {
    let ctx = ctx("", None);
    let mut model = MemoryModel::new(&ctx);
    assert!(model.arbitration().is_none());
    assert_eq!(model.pools_in_use(), 1);
    assert_eq!(policy(&ctx), "none");
    assert_eq!(ctx.engine.pool(0).target, mrcache_engine::UNLIMITED);
    // A reload that adds tenants cannot add pools: they share the one memory.
    ctx.tenants
        .replace(config("[[tenant]]\nname = \"a\"\n"))
        .unwrap();
    model.tick(&ctx);
    assert_eq!(model.pools_in_use(), 1);
    assert_eq!(policy(&ctx), "none");
}

#[test]
fn reserves_caps_and_starting_targets_are_set_at_start() {
    let ctx = ctx(
        "[[tenant]]\nname = \"a\"\nreserved = \"8MiB\"\n[[tenant]]\nname = \"b\"\nmax = \"4MiB\"\n",
        None,
    );
    let model = MemoryModel::new(&ctx);
    assert_eq!(model.pools_in_use(), 3, "default, a, b");
    assert!(policy(&ctx).starts_with("mpart:"), "{}", policy(&ctx));
    let e = &ctx.engine;
    assert_eq!(e.pool_count(), MIN_TENANT_POOLS);
    assert_eq!(e.pool(1).reserved, 8);
    assert_eq!(e.pool(2).max, 4);
    let targets: Vec<usize> = (0..3).map(|p| e.pool(p).target).collect();
    assert_eq!(targets.iter().sum::<usize>(), 32, "{targets:?}");
    assert!(targets[1] >= 8 && targets[2] <= 4, "{targets:?}");
    assert_eq!(e.pool(5).target, 0, "pools without a tenant hold nothing");
}

#[test]
fn rounds_run_when_due_and_a_reload_is_followed() {
    let ctx = ctx(
        "tenant_policy = \"static:interval=10\"\n[[tenant]]\nname = \"a\"\n[[tenant]]\nname = \"b\"\n",
        None,
    );
    let mut model = MemoryModel::new(&ctx);
    let rounds = || ctx.maintenance.arbiter_rounds.load(Relaxed);
    model.tick(&ctx); // starts the window
    store(&ctx, 1, 20);
    store(&ctx, 2, 20);
    model.tick(&ctx);
    assert_eq!(rounds(), 1);
    assert_eq!(ctx.engine.pool_of(TenantId(1)), 1);

    // The same arbiter with new settings: it keeps running, the reserve is in force.
    ctx.tenants
        .replace(config(
            "tenant_policy = \"static:interval=10\"\n[[tenant]]\nname = \"a\"\nreserved = \"5MiB\"\n[[tenant]]\nname = \"b\"\n",
        ))
        .unwrap();
    model.tick(&ctx);
    assert_eq!(ctx.engine.pool(1).reserved, 5);
    assert_eq!(policy(&ctx), "static:interval=10");

    // Another arbiter: a new arbitration; a new tenant gets a pool and a rebalancer.
    ctx.tenants
        .replace(config(
            "tenant_policy = \"pooled\"\n[[tenant]]\nname = \"a\"\n[[tenant]]\nname = \"b\"\n[[tenant]]\nname = \"c\"\n",
        ))
        .unwrap();
    model.tick(&ctx);
    assert!(policy(&ctx).starts_with("pooled:"), "{}", policy(&ctx));
    assert!(ctx.engine.pools_shared());
    assert_eq!(ctx.engine.pool_of(TenantId(1)), 0, "pooled: one memory");
    assert_eq!(model.pools_in_use(), 4);
    assert_eq!(model.arbitration().unwrap().tenants().len(), 4);
}

#[test]
fn the_flag_overrides_the_file_on_reload_too() {
    let ctx = ctx(
        "tenant_policy = \"memshare\"\n[[tenant]]\nname = \"a\"\n",
        Some("static"),
    );
    let mut model = MemoryModel::new(&ctx);
    assert!(policy(&ctx).starts_with("static:"));
    assert_eq!(ctx.engine.config().shadow_queue_bytes, None);
    ctx.tenants
        .replace(config(
            "tenant_policy = \"pooled\"\n[[tenant]]\nname = \"a\"\n",
        ))
        .unwrap();
    model.tick(&ctx);
    assert!(policy(&ctx).starts_with("static:"), "{}", policy(&ctx));
}

#[test]
fn slabs_automove_switches_every_pool() {
    let ctx = ctx("[[tenant]]\nname = \"a\"\n[[tenant]]\nname = \"b\"\n", None);
    let mut model = MemoryModel::new(&ctx);
    assert!(model
        .rebalancers
        .iter()
        .all(|r| r.policy().name() == "lama-mr"));
    ctx.set_slab_policy(ClassPolicySpec::Memcached);
    model.tick(&ctx);
    assert_eq!(model.rebalancers.len(), 3);
    assert!(model
        .rebalancers
        .iter()
        .all(|r| r.policy().name() == "memcached"));
}
