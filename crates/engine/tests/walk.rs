//! Item walks (`Engine::walk_items`, `Engine::crawl_expired`) on both layouts: what a walk reports,
//! that each call is bounded, and the guarantee under concurrent change — every item linked for the
//! whole walk is reported at least once, through page moves, the log's cleaner, index growth and
//! other threads' stores and deletes.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mrcache_engine::{
    ClassId, ClassSet, Clock, CrawlQuota, Engine, EngineConfig, ItemBatch, Key, MemoryLayout,
    StoreArgs, StoreOutcome, TenantId, WalkCursor, WalkFilter,
};

const LAYOUTS: [MemoryLayout; 2] = [MemoryLayout::Slab, MemoryLayout::Log];

fn engine(layout: MemoryLayout, mb: u64, shards: usize) -> Engine {
    Engine::new(EngineConfig {
        memory_limit_bytes: mb << 20,
        shards,
        memory_layout: layout,
        profile_sample_rate: None,
        ..EngineConfig::default()
    })
    .unwrap()
}

fn set(e: &Engine, tenant: u16, key: &[u8], value: &[u8], exptime: i64, clock: Clock) {
    let args = StoreArgs {
        exptime,
        ..StoreArgs::set(Key::new(TenantId(tenant), key), value)
    };
    assert!(matches!(e.store(&args, clock), StoreOutcome::Stored { .. }));
}

/// Every (tenant, key) a whole walk reports, with how often; `between` runs between batches.
fn walk_all(
    e: &Engine,
    max_slots: usize,
    filter: WalkFilter,
    clock: Clock,
    mut between: impl FnMut(usize),
) -> (HashMap<(u16, Vec<u8>), usize>, WalkCursor) {
    let mut cursor = WalkCursor::default();
    let mut batch = ItemBatch::new();
    let mut seen = HashMap::new();
    let mut calls = 0;
    while !cursor.is_done() {
        e.walk_items(&mut cursor, max_slots, filter, clock, &mut batch);
        assert!(
            batch.len() <= max_slots,
            "a call inspects at most max_slots buckets"
        );
        for it in batch.iter() {
            *seen.entry((it.tenant.0, it.key.to_vec())).or_insert(0) += 1;
        }
        calls += 1;
        between(calls);
        assert!(calls < 10_000_000, "the walk ends");
    }
    (seen, cursor)
}

#[test]
fn a_quiet_walk_reports_every_live_item_once_with_its_metadata() {
    for layout in LAYOUTS {
        let e = engine(layout, 16, 4);
        let clock = Clock {
            now: 100,
            process_started_unix: 1_700_000_000,
        };
        for i in 0..3000 {
            set(&e, 0, format!("k{i}").as_bytes(), b"value", 0, clock);
        }
        set(&e, 0, b"ttl", b"abc", 1000, clock);
        set(&e, 0, b"gone", b"x", -1, clock);
        assert!(e.get(Key::default_tenant(b"k7"), clock, |_| ()).is_some());
        let (seen, cursor) = walk_all(&e, 64, WalkFilter::ALL, clock, |_| {});
        assert_eq!(
            seen.len(),
            3001,
            "{layout:?}: every live item, no expired one"
        );
        assert!(seen.values().all(|&n| n == 1), "{layout:?}: each once");
        assert_eq!(cursor.restarts(), 0);

        // The copied metadata is the item's.
        let (mut cursor, mut batch) = (WalkCursor::default(), ItemBatch::new());
        let mut found = HashMap::new();
        while !cursor.is_done() {
            e.walk_items(&mut cursor, 1000, WalkFilter::ALL, clock, &mut batch);
            for it in batch
                .iter()
                .filter(|it| [&b"ttl"[..], b"k7", b"k8"].contains(&it.key))
            {
                assert_eq!(it.class, ClassId(1), "{layout:?}: small items are class 1");
                assert!(it.cas > 0 && it.atime == 100 && !it.key_binary);
                found.insert(it.key.to_vec(), (it.expiry, it.fetched, it.value_len));
            }
        }
        assert_eq!(found[&b"ttl"[..]], (1100, false, 3), "{layout:?}");
        assert_eq!(found[&b"k7"[..]], (0, true, 5), "{layout:?}");
        assert_eq!(found[&b"k8"[..]], (0, false, 5), "{layout:?}");
    }
}

#[test]
fn a_tenant_filter_reports_only_that_tenants_keys() {
    for layout in LAYOUTS {
        let e = engine(layout, 16, 2);
        let clock = Clock::logical(100);
        for i in 0..500 {
            for tenant in 0..3u16 {
                set(&e, tenant, format!("same{i}").as_bytes(), b"v", 0, clock);
            }
        }
        for tenant in 0..3u16 {
            let filter = WalkFilter {
                tenant: Some(TenantId(tenant)),
                ..WalkFilter::ALL
            };
            let (seen, _) = walk_all(&e, 100, filter, clock, |_| {});
            assert_eq!(seen.len(), 500, "{layout:?}");
            assert!(seen.keys().all(|(t, _)| *t == tenant), "{layout:?}");
        }
    }
}

#[test]
fn a_class_filter_reports_only_those_classes() {
    let e = engine(MemoryLayout::Slab, 16, 2);
    let clock = Clock::logical(100);
    for i in 0..200 {
        set(&e, 0, format!("small{i}").as_bytes(), b"v", 0, clock);
        set(
            &e,
            0,
            format!("large{i}").as_bytes(),
            &[b'x'; 2000],
            0,
            clock,
        );
    }
    let mut classes = HashSet::new();
    let (mut cursor, mut batch) = (WalkCursor::default(), ItemBatch::new());
    while !cursor.is_done() {
        e.walk_items(&mut cursor, 50, WalkFilter::ALL, clock, &mut batch);
        classes.extend(batch.iter().map(|it| it.class));
    }
    assert_eq!(classes.len(), 2);
    let small = *classes.iter().min_by_key(|c| c.0).unwrap();
    let filter = WalkFilter {
        tenant: None,
        classes: ClassSet::NONE.with(small.0),
    };
    let (seen, _) = walk_all(&e, 50, filter, clock, |_| {});
    assert_eq!(seen.len(), 200);
    assert!(seen.keys().all(|(_, k)| k.starts_with(b"small")));
    // A class the engine does not have holds nothing.
    let filter = WalkFilter {
        tenant: None,
        classes: ClassSet::NONE.with(63),
    };
    assert!(walk_all(&e, 50, filter, clock, |_| {}).0.is_empty());
}

#[test]
fn items_present_throughout_are_reported_through_growth_cleaning_and_churn() {
    for layout in LAYOUTS {
        // Small memory, so that the churn below evicts, the log cleans and pages move.
        let e = engine(layout, 8, 2);
        let clock = Clock::logical(100);
        for i in 0..2000 {
            set(&e, 0, format!("stable{i}").as_bytes(), b"kept", 0, clock);
        }
        let stable: HashSet<Vec<u8>> = (0..2000)
            .map(|i| format!("stable{i}").into_bytes())
            .collect();
        let mut next = 0u64;
        let (seen, cursor) = walk_all(&e, 32, WalkFilter::ALL, clock, |call| {
            // Between batches: read the stable items (bumps), add many new keys (the index grows
            // and rehashes; the log cleans), delete some of them, and move pages between classes.
            for i in 0..40usize {
                next += 1;
                let key = format!("churn{next}");
                let value = vec![b'c'; 100 + (next as usize * 37) % 3000];
                let _ = e.store(
                    &StoreArgs::set(Key::default_tenant(key.as_bytes()), &value),
                    clock,
                );
                if i.is_multiple_of(3) {
                    e.delete(
                        Key::default_tenant(format!("churn{}", next / 2).as_bytes()),
                        clock,
                    );
                }
                let k = format!("stable{}", (call * 40 + i) % 2000);
                let _ = e.get(Key::default_tenant(k.as_bytes()), clock, |_| ());
            }
            if layout == MemoryLayout::Slab && call.is_multiple_of(5) {
                // Page moves among the churn's classes (class 1's are `page_moves_relocate_…`).
                let _ = e.move_page(ClassId(8), Some(ClassId(12)));
            }
        });
        // Stable keys are never stored again: one still there was there for the whole walk.
        let present: Vec<&Vec<u8>> = stable
            .iter()
            .filter(|k| e.get(Key::default_tenant(k), clock, |_| ()).is_some())
            .collect();
        assert!(
            present.len() > 500,
            "{layout:?}: {} survived",
            present.len()
        );
        let missed = present
            .iter()
            .filter(|k| !seen.contains_key(&(0, (**k).clone())));
        assert_eq!(
            missed.count(),
            0,
            "{layout:?}: a stable item was not reported"
        );
        assert!(
            cursor.restarts() > 0,
            "{layout:?}: the index grew under the walk"
        );
        if layout == MemoryLayout::Log {
            assert!(e.cleaner_work().1 > 0, "the cleaner ran during the walk");
        }
    }
}

#[test]
fn page_moves_relocate_items_without_hiding_them() {
    // Two pages of class 1, then a move of one of them while the walk is half way: the rescued items
    // are relocated into the other page's free chunks and must still be reported.
    let e = engine(MemoryLayout::Slab, 64, 1);
    let clock = Clock::logical(100);
    let keys: Vec<String> = (0..15_000).map(|i| format!("key{i:06}")).collect();
    for k in &keys {
        set(&e, 0, k.as_bytes(), b"v", 0, clock);
    }
    let half: Vec<&String> = keys.iter().step_by(2).collect();
    for k in &half {
        e.delete(Key::default_tenant(k.as_bytes()), clock);
    }
    let mut moved = 0;
    let (seen, _) = walk_all(&e, 256, WalkFilter::ALL, clock, |call| {
        if call == 10 {
            moved += e
                .move_page(ClassId(1), Some(ClassId(3)))
                .map_or(0, |m| m.rescued);
        }
    });
    assert!(moved > 0, "the move relocated items");
    assert_eq!(seen.len(), keys.len() - half.len());
}

#[test]
fn concurrent_writers_never_break_a_walk() {
    for layout in LAYOUTS {
        let e = Arc::new(engine(layout, 8, 4));
        let clock = Clock::logical(100);
        for i in 0..5000 {
            set(&e, 0, format!("stable{i}").as_bytes(), b"kept", 0, clock);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3u64)
            .map(|t| {
                let (e, stop) = (e.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += 1;
                        let key = format!("w{t}-{}", n % 20_000);
                        let value = vec![b'w'; 50 + (n as usize * 13) % 1500];
                        let _ = e.store(
                            &StoreArgs::set(Key::default_tenant(key.as_bytes()), &value),
                            clock,
                        );
                        if n.is_multiple_of(4) {
                            e.delete(
                                Key::default_tenant(format!("w{t}-{}", n / 3 % 20_000).as_bytes()),
                                clock,
                            );
                        }
                    }
                })
            })
            .collect();
        for _ in 0..3 {
            let (seen, _) = walk_all(&e, 64, WalkFilter::ALL, clock, |_| {});
            for i in 0..5000 {
                assert!(
                    seen.contains_key(&(0, format!("stable{i}").into_bytes())),
                    "{layout:?}"
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
    }
}

#[test]
fn a_crawl_unlinks_the_dead_and_counts_per_class() {
    for layout in LAYOUTS {
        let e = engine(layout, 16, 2);
        let clock = Clock::logical(100);
        for i in 0..1000 {
            let exptime = if i % 4 == 0 { 10 } else { 0 };
            set(&e, 0, format!("k{i}").as_bytes(), b"v", exptime, clock);
        }
        let later = Clock::logical(200);
        let mut quota = CrawlQuota::new(ClassSet::ALL, None);
        let mut cursor = WalkCursor::default();
        let (mut checked, mut reclaimed) = (0, 0);
        while !cursor.is_done() {
            let b = e.crawl_expired(&mut cursor, 100, later, &mut quota);
            checked += b.checked;
            reclaimed += b.reclaimed;
        }
        assert_eq!((checked, reclaimed), (1000, 250), "{layout:?}");
        let stats = e.stats(later);
        assert_eq!(
            stats.curr_items, 750,
            "{layout:?}: unlinked, not only counted"
        );
        let sum = |f: fn(&mrcache_engine::ClassCounters) -> u64| {
            stats.classes.iter().map(|k| f(&k.counters)).sum::<u64>()
        };
        assert_eq!(sum(|k| k.crawler_items_checked), 1000, "{layout:?}");
        assert_eq!(sum(|k| k.crawler_reclaimed), 250, "{layout:?}");
        assert_eq!(stats.counters.expired_reaped, 250, "{layout:?}");
        e.check_invariants().unwrap();

        // `tocrawl`: at most this many items of each class; the quota is spent when they are.
        let mut quota = CrawlQuota::new(ClassSet::NONE.with(1), Some(100));
        let mut cursor = WalkCursor::default();
        let mut checked = 0;
        while !cursor.is_done() && !quota.is_spent() {
            checked += e.crawl_expired(&mut cursor, 7, later, &mut quota).checked;
        }
        assert_eq!(checked, 100, "{layout:?}");
        // A class outside the crawl is not inspected.
        let mut quota = CrawlQuota::new(ClassSet::NONE.with(2), None);
        let mut cursor = WalkCursor::default();
        while !cursor.is_done() {
            assert_eq!(
                e.crawl_expired(&mut cursor, 100, later, &mut quota).checked,
                0
            );
        }
    }
}

#[test]
fn an_empty_engine_walk_ends_and_a_done_cursor_stays_done() {
    for layout in LAYOUTS {
        let e = engine(layout, 8, 8);
        let clock = Clock::logical(100);
        let (seen, mut cursor) = walk_all(&e, 1, WalkFilter::ALL, clock, |_| {});
        assert!(seen.is_empty());
        let mut batch = ItemBatch::new();
        set(&e, 0, b"late", b"v", 0, clock);
        e.walk_items(&mut cursor, 1000, WalkFilter::ALL, clock, &mut batch);
        assert!(cursor.is_done() && batch.is_empty());
    }
}
