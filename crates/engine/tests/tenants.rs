//! Tenants are namespaces: the same key bytes under two tenants are two items, every keyed operation
//! reaches only its own tenant's item, `flush_all` flushes one tenant, and the per-tenant counters add up.

use mrcache_engine::{
    ArithOutcome, Clock, Delta, Engine, EngineConfig, ItemFlag, Key, StoreArgs, StoreMode,
    StoreOutcome, TenantId,
};

const A: TenantId = TenantId(1);
const B: TenantId = TenantId(2);

fn engine(shards: usize) -> Engine {
    Engine::new(EngineConfig {
        memory_limit_bytes: 64 << 20,
        shards,
        ..EngineConfig::default()
    })
    .unwrap()
}

fn store(e: &Engine, mode: StoreMode, key: Key<'_>, value: &[u8], cas: u64) -> StoreOutcome {
    e.store(
        &StoreArgs {
            mode,
            cas,
            ..StoreArgs::set(key, value)
        },
        Clock::logical(100),
    )
}

fn get(e: &Engine, key: Key<'_>) -> Option<Vec<u8>> {
    e.get(key, Clock::logical(100), |it| it.value().to_vec())
}

#[test]
fn the_same_key_under_two_tenants_is_two_items() {
    for shards in [1, 4] {
        let e = engine(shards);
        let (a, b, d) = (
            Key::new(A, b"k"),
            Key::new(B, b"k"),
            Key::default_tenant(b"k"),
        );
        assert!(matches!(
            store(&e, StoreMode::Set, a, b"aa", 0),
            StoreOutcome::Stored { .. }
        ));
        assert_eq!(get(&e, b), None);
        assert_eq!(get(&e, d), None);
        assert!(matches!(
            store(&e, StoreMode::Set, b, b"bb", 0),
            StoreOutcome::Stored { .. }
        ));
        assert_eq!(get(&e, a).as_deref(), Some(&b"aa"[..]));
        assert_eq!(get(&e, b).as_deref(), Some(&b"bb"[..]));
        // The view gives back the client's key, nothing of the tenant.
        assert_eq!(
            e.get(a, Clock::logical(100), |it| it.key().to_vec())
                .unwrap(),
            b"k"
        );
        e.check_invariants().unwrap();
    }
}

#[test]
fn no_keyed_operation_crosses_tenants() {
    let e = engine(2);
    let c = Clock::logical(100);
    let (a, b) = (Key::new(A, b"n"), Key::new(B, b"n"));
    let StoreOutcome::Stored { cas } = store(&e, StoreMode::Set, a, b"10", 0) else {
        panic!("stored");
    };
    // B sees nothing of A's item, whatever it tries.
    assert_eq!(
        store(&e, StoreMode::Add, b, b"x", 0),
        StoreOutcome::Stored { cas: cas + 1 }
    );
    assert!(e.delete(b, c));
    assert_eq!(
        store(&e, StoreMode::Replace, b, b"x", 0),
        StoreOutcome::NotStored
    );
    assert_eq!(
        store(&e, StoreMode::Append, b, b"x", 0),
        StoreOutcome::NotStored
    );
    assert_eq!(
        store(&e, StoreMode::Prepend, b, b"x", 0),
        StoreOutcome::NotStored
    );
    assert_eq!(
        store(&e, StoreMode::Cas, b, b"x", cas),
        StoreOutcome::NotFound
    );
    assert_eq!(e.arith(b, Delta::Incr(1), 0, c), ArithOutcome::NotFound);
    assert!(!e.touch(b, 5, c));
    assert!(!e.delete(b, c));
    assert_eq!(e.get_and_touch(b, 5, c, |_| ()), None);
    e.with_entry(b, c, |entry| {
        assert!(!entry.is_occupied());
        entry.set_flag(ItemFlag::Stale, true);
    });
    // A's item is as it was: value, CAS, no expiry, not stale.
    let seen = e.get(a, c, |it| {
        (it.value().to_vec(), it.cas(), it.ttl_secs(), it.stale())
    });
    assert_eq!(seen, Some((b"10".to_vec(), cas, None, false)));
    assert_eq!(
        e.arith(a, Delta::Incr(5), 0, c),
        ArithOutcome::Value {
            value: 15,
            cas: cas + 2
        }
    );
    e.check_invariants().unwrap();
}

#[test]
fn flush_all_flushes_only_its_tenant() {
    let e = engine(1);
    let c = Clock::logical(100);
    for t in [TenantId::DEFAULT, A, B] {
        store(&e, StoreMode::Set, Key::new(t, b"k"), b"v", 0);
    }
    e.flush_all(A, 0, c);
    assert_eq!(get(&e, Key::new(A, b"k")), None);
    assert!(get(&e, Key::new(B, b"k")).is_some());
    assert!(get(&e, Key::default_tenant(b"k")).is_some());
    // A delayed flush of the default tenant spares the others when it comes due.
    e.flush_all(TenantId::DEFAULT, 10, c);
    let later = Clock::logical(111);
    assert_eq!(e.get(Key::default_tenant(b"k"), later, |_| ()), None);
    assert!(e.get(Key::new(B, b"k"), later, |_| ()).is_some());
    // A can store again after its flush.
    assert!(matches!(
        store(&e, StoreMode::Set, Key::new(A, b"k"), b"w", 0),
        StoreOutcome::Stored { .. }
    ));
    assert_eq!(get(&e, Key::new(A, b"k")).as_deref(), Some(&b"w"[..]));
    e.check_invariants().unwrap();
}

#[test]
fn reaping_removes_only_the_flushed_tenants_items() {
    let e = engine(1);
    let c = Clock::logical(100);
    for i in 0..50u32 {
        let k = i.to_string();
        store(&e, StoreMode::Set, Key::new(A, k.as_bytes()), b"v", 0);
        store(&e, StoreMode::Set, Key::new(B, k.as_bytes()), b"v", 0);
    }
    e.flush_all(B, 0, c);
    assert_eq!(e.reap_expired(Clock::logical(101), 1000), 50);
    let stats = e.stats(c);
    assert_eq!((stats.tenant(A).items, stats.tenant(B).items), (50, 0));
    e.check_invariants().unwrap();
}

#[test]
fn tenant_counters_add_up() {
    let e = engine(4);
    let c = Clock::logical(100);
    for i in 0..20u32 {
        let k = i.to_string();
        store(&e, StoreMode::Set, Key::new(A, k.as_bytes()), b"value", 0);
    }
    store(&e, StoreMode::Set, Key::new(B, b"only"), b"v", 0);
    for i in 0..30u32 {
        let k = i.to_string();
        e.get(Key::new(A, k.as_bytes()), c, |_| ());
    }
    e.get(Key::new(B, b"0"), c, |_| ());
    let stats = e.stats(c);
    let (a, b) = (stats.tenant(A), stats.tenant(B));
    assert_eq!(
        (a.items, a.set_cmds, a.get_hits, a.get_misses),
        (20, 20, 20, 10)
    );
    assert_eq!(
        (b.items, b.set_cmds, b.get_hits, b.get_misses),
        (1, 1, 0, 1)
    );
    assert_eq!(stats.tenant(TenantId::DEFAULT).items, 0);
    assert_eq!(a.bytes + b.bytes, stats.bytes);
    assert_eq!((a.items + b.items) as usize, stats.curr_items);
    // `stats reset` zeroes the counters, not the state.
    e.reset_stats();
    let a = e.stats(c).tenant(A);
    assert_eq!((a.items, a.get_hits, a.set_cmds), (20, 0, 0));
    e.delete(Key::new(A, b"0"), c);
    assert_eq!(e.stats(c).tenant(A).items, 19);
}
