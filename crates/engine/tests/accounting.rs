//! Item size accounting through the engine: compact accounting places items by the bytes they occupy
//! (more per page), memcached's places them as memcached does, and under both the `-I` limit answers
//! exactly as memcached does (too large for a set, not stored for an append that would exceed it).

use mrcache_engine::{
    ClassId, Clock, Engine, EngineConfig, ItemAccounting, Key, StoreArgs, StoreMode, StoreOutcome,
};

fn engine(accounting: ItemAccounting, mb: u64) -> Engine {
    Engine::new(EngineConfig {
        memory_limit_bytes: mb << 20,
        item_accounting: accounting,
        ..EngineConfig::default()
    })
    .unwrap()
}

fn store(e: &Engine, mode: StoreMode, key: &[u8], flags: u32, value: &[u8]) -> StoreOutcome {
    e.store(
        &StoreArgs {
            mode,
            client_flags: flags,
            ..StoreArgs::set(Key::default_tenant(key), value)
        },
        Clock::logical(100),
    )
}

fn stored(outcome: StoreOutcome) -> bool {
    matches!(outcome, StoreOutcome::Stored { .. })
}

#[test]
fn compact_items_land_in_the_class_of_their_stored_bytes() {
    let c = Clock::logical(100);
    for (accounting, class, size) in [
        (ItemAccounting::Memcached, ClassId(2), 101),
        (ItemAccounting::Compact, ClassId(1), 70),
    ] {
        let e = engine(accounting, 8);
        assert!(stored(store(
            &e,
            StoreMode::Set,
            &[b'k'; 32],
            0,
            &[b'v'; 10]
        )));
        let (cls, total) = e.with_entry(Key::default_tenant(&[b'k'; 32]), c, |entry| {
            (entry.class().unwrap(), entry.total_bytes().unwrap())
        });
        assert_eq!((cls, total), (class, size), "{accounting:?}");
        let stats = e.stats(c);
        assert_eq!(stats.bytes, size as u64);
        assert_eq!(stats.classes[class.index()].items, 1);
        e.check_invariants().unwrap();
    }
}

#[test]
fn compact_fits_more_items_in_the_same_memory() {
    // 2 MiB: two pages of 32-byte keys and 40-byte values; every store past the capacity evicts.
    let c = Clock::logical(100);
    let key = |i: usize| format!("{i:032}").into_bytes();
    let mut held = Vec::new();
    for accounting in [ItemAccounting::Memcached, ItemAccounting::Compact] {
        let e = engine(accounting, 2);
        for i in 0..40_000 {
            assert!(stored(store(&e, StoreMode::Set, &key(i), 0, &[b'v'; 40])));
        }
        let stats = e.stats(c);
        let class = e.geometry().class_for_item(32, 0, 40).unwrap();
        assert_eq!(
            stats.curr_items,
            2 * e.geometry().class(class).chunks_per_page
        );
        held.push(stats.curr_items);
        // The newest items are all readable, byte for byte.
        for i in 40_000 - stats.curr_items..40_000 {
            let v = e
                .get(Key::default_tenant(&key(i)), c, |it| it.value().to_vec())
                .unwrap();
            assert_eq!(v, [b'v'; 40]);
        }
        e.check_invariants().unwrap();
    }
    // memcached: 131 bytes in 152-byte chunks (6898 a page); compact: 98 in 104 (10082 a page).
    assert_eq!(held, [2 * 6898, 2 * 10082]);
}

#[test]
fn too_large_is_memcached_s_answer_under_both_accountings() {
    for accounting in [ItemAccounting::Memcached, ItemAccounting::Compact] {
        let e = engine(accounting, 8);
        // memcached 1.6.18 stores at most 1,048,516 value bytes under a 1-byte key with flags 0.
        let max = vec![b'w'; 1_048_516];
        assert!(
            stored(store(&e, StoreMode::Set, b"a", 0, &max)),
            "{accounting:?}"
        );
        let over = vec![b'w'; 1_048_517];
        assert_eq!(
            store(&e, StoreMode::Set, b"a", 0, &over),
            StoreOutcome::TooLarge
        );
        // A failed set drops the old value, as memcached does.
        assert_eq!(
            e.get(Key::default_tenant(b"a"), Clock::logical(100), |_| ()),
            None
        );
        // Flags add memcached's 4-byte suffix to its accounting, and so to the limit.
        assert_eq!(
            store(&e, StoreMode::Set, b"a", 1, &max),
            StoreOutcome::TooLarge
        );
        assert!(stored(store(&e, StoreMode::Set, b"a", 1, &max[4..])));
        // An append that would pass the limit is not stored and leaves the item as it was.
        assert_eq!(
            store(&e, StoreMode::Append, b"a", 0, b"x"),
            StoreOutcome::NotStored
        );
        assert_eq!(
            e.get(Key::default_tenant(b"a"), Clock::logical(100), |it| it
                .value()
                .len()),
            Some(1_048_512)
        );
        e.check_invariants().unwrap();
    }
}
