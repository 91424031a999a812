//! Tenant pools: the upper memory level. Each tenant with a pool of its own keeps its pages apart from the
//! others'; reserves are never taken; caps bound a pool; pools below their target take pages from pools
//! above theirs as they allocate; shared mode puts everyone in one pool; shadow queues count GET misses
//! on recently evicted keys.

use mrcache_engine::{
    Clock, Engine, EngineConfig, Key, StoreArgs, StoreOutcome, TenantId, UNLIMITED,
};
use proptest::prelude::*;

const MIB: u64 = 1024 * 1024;

fn engine(pages: u64, pools: usize, shards: usize) -> Engine {
    Engine::new(EngineConfig {
        memory_limit_bytes: pages * MIB,
        tenant_pools: pools,
        shards,
        ..EngineConfig::default()
    })
    .unwrap()
}

fn set(e: &Engine, tenant: u16, i: u64, value: &[u8]) -> StoreOutcome {
    let key = format!("key:{i}");
    e.store(
        &StoreArgs::set(Key::new(TenantId(tenant), key.as_bytes()), value),
        Clock::logical(1),
    )
}

fn hit(e: &Engine, tenant: u16, i: u64) -> bool {
    let key = format!("key:{i}");
    e.get(
        Key::new(TenantId(tenant), key.as_bytes()),
        Clock::logical(2),
        |_| (),
    )
    .is_some()
}

/// About 2,700 items of this size fill a 1 MiB page of their class.
const VALUE: [u8; 300] = [7u8; 300];

#[test]
fn a_reserve_survives_a_flood_from_another_tenant() {
    let e = engine(16, 2, 1);
    e.set_pool_limits(1, 6, UNLIMITED);
    e.set_pool_target(1, 6);
    e.set_pool_target(0, 10);
    for i in 0..20_000 {
        assert!(matches!(set(&e, 1, i, &VALUE), StoreOutcome::Stored { .. }));
    }
    let held = e.pool(1).held;
    assert!(held >= 6, "tenant 1 filled its reserve: {held} pages");
    for i in 0..200_000 {
        set(&e, 0, i, &VALUE);
    }
    assert!(e.pool(1).held >= 6, "{:?}", e.pool(1));
    let kept = (0..20_000).filter(|&i| hit(&e, 1, i)).count();
    assert!(kept >= 6 * 2500, "tenant 1 kept {kept} of its items");
    e.check_invariants().unwrap();
}

#[test]
fn a_pool_below_target_takes_pages_from_one_above() {
    let e = engine(16, 2, 2);
    for i in 0..100_000 {
        set(&e, 0, i, &VALUE);
    }
    assert!(e.pool(0).held >= 15, "{:?}", e.pool(0));
    e.set_pool_target(0, 8);
    e.set_pool_target(1, 8);
    for i in 0..100_000 {
        set(&e, 1, i, &VALUE);
    }
    let (p0, p1) = (e.pool(0).held, e.pool(1).held);
    assert_eq!(p1, 8, "tenant 1 reached its target ({p0} / {p1})");
    assert!(p0 <= 8 + 1, "tenant 0 gave its surplus ({p0} / {p1})");
    e.check_invariants().unwrap();
}

#[test]
fn a_cap_bounds_a_pool() {
    let e = engine(32, 2, 1);
    e.set_pool_limits(1, 0, 4);
    for i in 0..100_000 {
        set(&e, 1, i, &VALUE);
    }
    assert_eq!(e.pool(1).held, 4);
    for i in 0..100_000 {
        set(&e, 0, i, &VALUE);
    }
    assert!(e.pool(0).held >= 27, "{:?}", e.pool(0));
    e.check_invariants().unwrap();
}

#[test]
fn shared_pools_put_every_tenant_in_pool_zero_and_keep_namespaces() {
    let e = engine(8, 3, 1);
    e.set_pools_shared(true);
    set(&e, 2, 1, b"two");
    set(&e, 1, 1, b"one");
    assert_eq!(e.pool(2).held, 0);
    assert!(e.pool(0).held >= 1);
    let read = |t: u16| {
        e.get(Key::new(TenantId(t), b"key:1"), Clock::logical(2), |v| {
            v.value().to_vec()
        })
    };
    assert_eq!(read(2).as_deref(), Some(&b"two"[..]));
    assert_eq!(read(1).as_deref(), Some(&b"one"[..]));
    assert_eq!(read(0), None);
}

#[test]
fn shadow_queues_count_misses_on_recently_evicted_keys() {
    let e = Engine::new(EngineConfig {
        memory_limit_bytes: 4 * MIB,
        tenant_pools: 2,
        shadow_queue_bytes: Some(MIB),
        ..EngineConfig::default()
    })
    .unwrap();
    for i in 0..20_000 {
        set(&e, 1, i, &VALUE);
    }
    // Of the ~16,000 evicted keys, the shadow holds the last 1 MiB of them (about 2,900 items).
    let alive = (0..20_000).filter(|&i| hit(&e, 1, i)).count();
    let shadow_hits =
        |e: &Engine, t: u16| e.stats(Clock::logical(2)).tenant(TenantId(t)).shadow_hits;
    let first = shadow_hits(&e, 1);
    assert!(alive < 12_000, "{alive} alive");
    assert!((2_500..=3_300).contains(&first), "{first} shadow hits");
    assert_eq!(shadow_hits(&e, 0), 0);
    (0..20_000).for_each(|i| {
        hit(&e, 1, i);
    });
    assert_eq!(shadow_hits(&e, 1), first, "a shadow hit leaves the queue");
}

#[test]
fn every_pool_is_profiled_as_a_whole() {
    let e = engine(256, 2, 2);
    for round in 0..3 {
        for i in 0..50_000 {
            set(&e, 1, i + round, &VALUE);
        }
    }
    let (h, rate) = e.pool_histogram(1).expect("pool 1 profiled");
    assert!(h.requests() > 0 && rate > 0.0);
    assert!(e.pool_histogram(0).is_none(), "pool 0 never used");
    assert!(
        engine(8, 1, 1).pool_histogram(0).is_none(),
        "no pool profilers with one pool"
    );
}

#[derive(Debug, Clone)]
enum Op {
    Set {
        tenant: u16,
        key: u16,
        len: u16,
    },
    Get {
        tenant: u16,
        key: u16,
    },
    Target {
        pool: usize,
        pages: usize,
    },
    Limits {
        pool: usize,
        reserved: usize,
        max: usize,
    },
    Move {
        pool: usize,
        src: u8,
        dst: u8,
    },
    Shared(bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0u16..4, 0u16..2000, 1u16..3000).prop_map(|(tenant, key, len)| Op::Set { tenant, key, len }),
        5 => (0u16..4, 0u16..2000).prop_map(|(tenant, key)| Op::Get { tenant, key }),
        1 => (0usize..3, 0usize..10).prop_map(|(pool, pages)| Op::Target { pool, pages }),
        1 => (0usize..3, 0usize..4, 1usize..12).prop_map(|(pool, reserved, max)| Op::Limits { pool, reserved, max }),
        1 => (0usize..3, 1u8..12, 1u8..12).prop_map(|(pool, src, dst)| Op::Move { pool, src, dst }),
        1 => any::<bool>().prop_map(Op::Shared),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Whatever tenants store, whatever targets, limits and moves are set, the shards' structures and
    /// the pool table agree, and a tenant reads only what it stored.
    #[test]
    fn pools_stay_consistent(ops in prop::collection::vec(op(), 1..400), shards in prop_oneof![Just(1usize), Just(2)]) {
        let e = engine(8, 3, shards);
        let mut last: std::collections::HashMap<(u16, u16), u16> = Default::default();
        for op in ops {
            match op {
                Op::Set { tenant, key, len } => {
                    let value = vec![(tenant as u8) ^ (key as u8); len as usize];
                    if let StoreOutcome::Stored { .. } = set(&e, tenant, key as u64, &value) {
                        last.insert((tenant, key), len);
                    }
                }
                Op::Get { tenant, key } => {
                    let k = format!("key:{key}");
                    let got = e.get(Key::new(TenantId(tenant), k.as_bytes()), Clock::logical(2), |v| v.value().to_vec());
                    if let Some(v) = got {
                        prop_assert_eq!(Some(&(v.len() as u16)), last.get(&(tenant, key)));
                        prop_assert!(v.iter().all(|&b| b == (tenant as u8) ^ (key as u8)));
                    }
                }
                Op::Target { pool, pages } => e.set_pool_target(pool, pages),
                Op::Limits { pool, reserved, max } => e.set_pool_limits(pool, reserved, max),
                Op::Move { pool, src, dst } => {
                    let (src, dst) = (mrcache_engine::ClassId(src), mrcache_engine::ClassId(dst));
                    e.move_page_in(pool, src, Some(dst));
                }
                Op::Shared(on) => e.set_pools_shared(on),
            }
            prop_assert!(e.check_invariants().is_ok(), "{:?}", e.check_invariants());
        }
    }
}

/// A pool below its target whose class tail holds an expired item reuses that item's chunk instead of
/// taking a page (and its live items) from a pool above its target.
#[test]
fn an_expired_item_is_reused_before_a_page_is_taken_from_another_pool() {
    let e = engine(16, 2, 1);
    let store = |tenant: u16, i: u64, exptime: i64, now: u32| {
        let key = format!("key:{i}");
        e.store(
            &StoreArgs {
                exptime,
                ..StoreArgs::set(Key::new(TenantId(tenant), key.as_bytes()), &VALUE)
            },
            Clock::logical(now),
        )
    };
    // Tenant 1 fills one page with items that expire; tenant 0 then fills the rest of memory.
    let total = e.geometry().item_total_bytes(8, 0, VALUE.len());
    let class = e.geometry().class_for(total).unwrap();
    let per_page = e.geometry().class(class).chunks_per_page as u64;
    for i in 0..per_page {
        assert!(matches!(store(1, i, 10, 1), StoreOutcome::Stored { .. }));
    }
    for i in 0..100_000 {
        store(0, i, 0, 1);
    }
    e.set_pool_target(0, 8);
    e.set_pool_target(1, 8);
    let before = (e.pool(0).held, e.pool(1).held);
    let evicted_before = e
        .stats(Clock::logical(50))
        .classes
        .iter()
        .map(|c| c.counters.evicted)
        .sum::<u64>();
    // Later, tenant 1's items have expired: its next stores reuse them, no page moves.
    for i in 100_000..100_050 {
        assert!(matches!(store(1, i, 0, 50), StoreOutcome::Stored { .. }));
    }
    assert_eq!((e.pool(0).held, e.pool(1).held), before);
    let stats = e.stats(Clock::logical(50));
    let evicted = stats
        .classes
        .iter()
        .map(|c| c.counters.evicted)
        .sum::<u64>();
    assert_eq!(evicted, evicted_before, "no live item of tenant 0 evicted");
    let reclaimed = stats
        .classes
        .iter()
        .map(|c| c.counters.reclaimed)
        .sum::<u64>();
    assert_eq!(reclaimed, 50);
    e.check_invariants().unwrap();
}
