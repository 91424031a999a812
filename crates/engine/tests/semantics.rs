//! memcached's item semantics, one behaviour per test: CAS, flush, incr/decr in place, exact LRU eviction,
//! page moves that shrink a class by its coldest items, first pages, and `-M`.

use mrcache_engine::{
    ArithOutcome, ClassId, Clock, Delta, Engine, EngineConfig, Key, ReassignOutcome, StoreArgs,
    StoreMode, StoreOutcome, TenantId,
};

fn engine(mb: u64) -> Engine {
    Engine::new(EngineConfig {
        memory_limit_bytes: mb << 20,
        ..EngineConfig::default()
    })
    .unwrap()
}

fn set(e: &Engine, key: &[u8], value: &[u8], clock: Clock) -> StoreOutcome {
    store(e, StoreMode::Set, key, value, 0, clock)
}

fn store(
    e: &Engine,
    mode: StoreMode,
    key: &[u8],
    value: &[u8],
    cas: u64,
    clock: Clock,
) -> StoreOutcome {
    e.store(
        &StoreArgs {
            mode,
            cas,
            ..StoreArgs::set(Key::default_tenant(key), value)
        },
        clock,
    )
}

fn get(e: &Engine, key: &[u8], clock: Clock) -> Option<Vec<u8>> {
    e.get(Key::default_tenant(key), clock, |it| it.value().to_vec())
}

/// The `i`th test key: 8 bytes, in order.
fn key(i: usize) -> Vec<u8> {
    format!("k{i:07}").into_bytes()
}

/// A 2 MiB engine (two pages), a 900-byte value, the class it lands in under an 8-byte `key`, and how
/// many such items two pages of that class hold.
fn two_pages_of_one_class() -> (Engine, Vec<u8>, ClassId, usize) {
    let e = engine(2);
    let value = vec![b'x'; 900];
    let total = e.geometry().item_total_bytes(8, 0, value.len());
    let class = e.geometry().class_for(total).unwrap();
    let capacity = 2 * e.geometry().class(class).chunks_per_page;
    (e, value, class, capacity)
}

#[test]
fn cas_values_count_up_from_one_and_guard_updates() {
    let (e, c) = (engine(64), Clock::logical(100));
    assert_eq!(set(&e, b"a", b"1", c), StoreOutcome::Stored { cas: 1 });
    assert_eq!(set(&e, b"b", b"1", c), StoreOutcome::Stored { cas: 2 });
    assert_eq!(
        store(&e, StoreMode::Cas, b"a", b"2", 7, c),
        StoreOutcome::Exists
    );
    assert_eq!(
        store(&e, StoreMode::Cas, b"a", b"2", 1, c),
        StoreOutcome::Stored { cas: 3 }
    );
    assert_eq!(
        store(&e, StoreMode::Cas, b"zz", b"2", 1, c),
        StoreOutcome::NotFound
    );
    assert_eq!(get(&e, b"a", c).as_deref(), Some(&b"2"[..]));
}

#[test]
fn flush_all_hides_older_items_and_consumes_a_cas_value() {
    let (e, c) = (engine(64), Clock::logical(100));
    set(&e, b"a", b"1", c);
    e.flush_all(TenantId::DEFAULT, 0, c);
    assert_eq!(get(&e, b"a", c), None);
    // memcached's immediate flush takes a CAS id for oldest_cas: the next store gets 3, not 2.
    assert_eq!(set(&e, b"a", b"2", c), StoreOutcome::Stored { cas: 3 });
    assert_eq!(get(&e, b"a", c).as_deref(), Some(&b"2"[..]));
    // A delayed flush takes effect later.
    e.flush_all(TenantId::DEFAULT, 10, c);
    assert!(get(&e, b"a", c).is_some());
    assert_eq!(get(&e, b"a", Clock::logical(111)), None);
}

#[test]
fn decr_shrinks_in_place_with_spaces_and_incr_wraps() {
    let (e, c) = (engine(64), Clock::logical(100));
    set(&e, b"n", b"10", c);
    assert!(matches!(
        e.arith(Key::default_tenant(b"n"), Delta::Decr(1), 0, c),
        ArithOutcome::Value { value: 9, .. }
    ));
    assert_eq!(get(&e, b"n", c).as_deref(), Some(&b"9 "[..]));
    assert!(matches!(
        e.arith(Key::default_tenant(b"n"), Delta::Decr(100), 0, c),
        ArithOutcome::Value { value: 0, .. }
    ));
    set(&e, b"m", b"18446744073709551615", c);
    assert!(matches!(
        e.arith(Key::default_tenant(b"m"), Delta::Incr(2), 0, c),
        ArithOutcome::Value { value: 1, .. }
    ));
    set(&e, b"x", b"12abc", c);
    assert_eq!(
        e.arith(Key::default_tenant(b"x"), Delta::Incr(1), 0, c),
        ArithOutcome::NonNumeric
    );
    assert_eq!(
        e.arith(Key::default_tenant(b"nope"), Delta::Incr(1), 0, c),
        ArithOutcome::NotFound
    );
    set(&e, b"g", b"99", c);
    assert!(matches!(
        e.arith(Key::default_tenant(b"g"), Delta::Incr(1), 0, c),
        ArithOutcome::Value { value: 100, .. }
    ));
    assert_eq!(get(&e, b"g", c).as_deref(), Some(&b"100"[..]));
}

#[test]
fn expiry_is_lazy_and_negative_exptime_is_already_expired() {
    let (e, c) = (engine(64), Clock::logical(100));
    let args = |exptime| StoreArgs {
        exptime,
        ..StoreArgs::set(Key::default_tenant(b"t"), b"v")
    };
    e.store(&args(5), c);
    assert!(get(&e, b"t", Clock::logical(104)).is_some());
    assert_eq!(get(&e, b"t", Clock::logical(105)), None);
    assert!(matches!(e.store(&args(-1), c), StoreOutcome::Stored { .. }));
    assert_eq!(get(&e, b"t", c), None);
}

#[test]
fn eviction_is_exact_lru_within_a_class() {
    // 2 MiB = 2 pages; 1000-byte values land in one class holding 1024 items per page... use the class
    // geometry to know the exact capacity of one page.
    let (e, value, class, capacity) = two_pages_of_one_class();
    let c = Clock::logical(100);
    for i in 0..capacity {
        assert!(matches!(
            set(&e, &key(i), &value, c),
            StoreOutcome::Stored { .. }
        ));
    }
    // Touch the oldest item; the next store must evict the second oldest instead.
    assert!(get(&e, &key(0), c).is_some());
    set(&e, &key(capacity), &value, c);
    assert!(get(&e, &key(0), c).is_some());
    assert_eq!(get(&e, &key(1), c), None);
    assert!(get(&e, &key(2), c).is_some());
    let stats = e.stats(c);
    assert_eq!(stats.classes[class.index()].counters.evicted, 1);
    e.check_invariants().unwrap();
}

#[test]
fn page_move_evicts_the_coldest_page_worth_and_keeps_the_rest() {
    let e = engine(4);
    let c = Clock::logical(100);
    let small = vec![b's'; 900];
    let small_class = e
        .geometry()
        .class_for(e.geometry().item_total_bytes(8, 0, 900))
        .unwrap();
    let per_page = e.geometry().class(small_class).chunks_per_page;
    // Fill three pages; then read the first page-worth so they become the hottest.
    let n = 3 * per_page;
    for i in 0..n {
        set(&e, &key(i), &small, c);
    }
    for i in 0..per_page {
        assert!(get(&e, &key(i), c).is_some());
    }
    let dst = ClassId(small_class.0 + 5);
    let moved = e.reassign(small_class, dst);
    assert_eq!(
        moved,
        ReassignOutcome::Moved {
            rescued: per_page,
            evicted: per_page
        }
    );
    // The class lost exactly one page-worth of items, and they were the coldest ones.
    let alive: Vec<usize> = (0..n).filter(|&i| get(&e, &key(i), c).is_some()).collect();
    assert_eq!(alive.len(), 2 * per_page);
    assert!(
        (0..per_page).all(|i| alive.contains(&i)),
        "hot items survive"
    );
    assert!(
        (per_page..2 * per_page).all(|i| !alive.contains(&i)),
        "coldest evicted"
    );
    let stats = e.stats(c);
    assert_eq!(stats.classes[small_class.index()].total_pages, 2);
    assert_eq!(stats.classes[dst.index()].total_pages, 1);
    assert_eq!(stats.counters.slabs_moved, 1);
    e.check_invariants().unwrap();
    assert_eq!(e.reassign(small_class, small_class), ReassignOutcome::Same);
    assert_eq!(
        e.reassign(ClassId(0), ClassId(1)),
        ReassignOutcome::BadClass
    );
    assert_eq!(e.reassign(dst, ClassId(1)), ReassignOutcome::NoSpare);
}

#[test]
fn a_class_always_gets_a_first_page_and_memory_stays_bounded() {
    let e = engine(2);
    let c = Clock::logical(100);
    for i in 0..5000 {
        set(&e, &key(i), &[b'a'; 100], c);
    }
    // Memory is full of small items; a large item still finds a page (taken from the small class).
    assert!(matches!(
        set(&e, b"big", &vec![b'b'; 300_000], c),
        StoreOutcome::Stored { .. }
    ));
    assert!(get(&e, b"big", c).is_some());
    let stats = e.stats(c);
    assert!(
        stats.pages_in_use <= stats.page_limit,
        "{} > {}",
        stats.pages_in_use,
        stats.page_limit
    );
    e.check_invariants().unwrap();
}

#[test]
fn no_evict_mode_reports_out_of_memory() {
    let e = Engine::new(EngineConfig {
        memory_limit_bytes: 2 << 20,
        evict_when_full: false,
        ..EngineConfig::default()
    })
    .unwrap();
    let c = Clock::logical(100);
    let outcomes: Vec<StoreOutcome> = (0..3000)
        .map(|i| set(&e, format!("k{i}").as_bytes(), &[b'v'; 1000], c))
        .collect();
    assert!(outcomes.contains(&StoreOutcome::OutOfMemory));
    assert!(get(&e, b"k0", c).is_some(), "nothing was evicted");
}

#[test]
fn lowering_the_memory_limit_gives_pages_back() {
    let e = engine(8);
    let c = Clock::logical(100);
    for i in 0..40_000 {
        set(&e, format!("k{i}").as_bytes(), &[b'v'; 150], c);
    }
    assert_eq!(e.stats(c).pages_in_use, 8);
    e.set_memory_limit(3 << 20, 100);
    assert_eq!(e.stats(c).pages_in_use, 3);
    e.check_invariants().unwrap();
}

#[test]
fn append_prepend_keep_flags_and_exptime() {
    let (e, c) = (engine(64), Clock::logical(100));
    e.store(
        &StoreArgs {
            client_flags: 42,
            exptime: 50,
            ..StoreArgs::set(Key::default_tenant(b"k"), b"mid")
        },
        c,
    );
    store(&e, StoreMode::Append, b"k", b">", 0, c);
    store(&e, StoreMode::Prepend, b"k", b"<", 0, c);
    let (v, f, ttl) = e
        .get(Key::default_tenant(b"k"), c, |it| {
            (it.value().to_vec(), it.client_flags(), it.ttl_secs())
        })
        .unwrap();
    assert_eq!((v.as_slice(), f, ttl), (&b"<mid>"[..], 42, Some(50)));
    assert_eq!(
        store(&e, StoreMode::Append, b"none", b"x", 0, c),
        StoreOutcome::NotStored
    );
}

#[test]
fn random_page_eviction_empties_whole_pages_of_any_class() {
    let e = engine(4);
    e.set_random_page_eviction(true);
    let c = Clock::logical(100);
    let geometry = e.geometry();
    let small_class = geometry
        .class_for(geometry.item_total_bytes(8, 0, 900))
        .unwrap();
    let per_page = geometry.class(small_class).chunks_per_page;
    // Four pages of small items fill memory.
    for i in 0..4 * per_page {
        set(&e, &key(i), &[b's'; 900], c);
    }
    assert_eq!(e.stats(c).classes[small_class.index()].total_pages, 4);
    // A large class takes its pages by emptying random (here: small) pages, never its own LRU tail
    // until it owns a page.
    let big = |i: usize| format!("b{i:07}").into_bytes();
    for i in 0..10 {
        assert!(matches!(
            set(&e, &big(i), &[b'b'; 200_000], c),
            StoreOutcome::Stored { .. }
        ));
    }
    let stats = e.stats(c);
    let small_pages = stats.classes[small_class.index()].total_pages;
    assert!(small_pages < 4, "no small page was taken");
    // Items of a taken page are gone entirely: the survivors are whole pages' worth.
    let alive = (0..4 * per_page)
        .filter(|&i| get(&e, &key(i), c).is_some())
        .count();
    assert_eq!(alive, small_pages * per_page);
    assert_eq!(
        stats.classes[small_class.index()].counters.evicted as usize,
        (4 - small_pages) * per_page
    );
    assert!(stats.pages_in_use <= stats.page_limit);
    e.check_invariants().unwrap();
}

#[test]
fn page_caps_fix_the_allocation_and_a_zero_cap_stores_nothing() {
    let e = engine(4);
    let c = Clock::logical(100);
    let geometry = e.geometry();
    let small_class = geometry
        .class_for(geometry.item_total_bytes(8, 0, 900))
        .unwrap();
    let big_class = geometry
        .class_for(geometry.item_total_bytes(8, 0, 100_000))
        .unwrap();
    let mut caps = vec![0; geometry.class_count()];
    caps[small_class.index()] = 1;
    caps[big_class.index()] = 3;
    e.set_class_page_caps(Some(&caps));
    for i in 0..5_000 {
        set(&e, &key(i), &[b's'; 900], c);
    }
    // The small class stays at one page and evicts within it, although memory is free.
    let stats = e.stats(c);
    assert_eq!(stats.classes[small_class.index()].total_pages, 1);
    assert!(stats.classes[small_class.index()].counters.evicted > 0);
    for i in 0..30 {
        set(&e, &key(100_000 + i), &[b'b'; 100_000], c);
    }
    assert_eq!(e.stats(c).classes[big_class.index()].total_pages, 3);
    // A class without pages gets no first page under a fixed allocation.
    assert_eq!(
        set(&e, b"mid", &[b'm'; 5_000], c),
        StoreOutcome::OutOfMemory
    );
    // With memcached's first-page rule kept under the caps, it gets one, taken from the largest class
    // since memory is full; other classes still stop at their caps.
    e.set_first_pages_under_caps(true);
    assert!(matches!(
        set(&e, b"mid", &[b'm'; 5_000], c),
        StoreOutcome::Stored { .. }
    ));
    let mid_class = geometry
        .class_for(geometry.item_total_bytes(3, 0, 5_000))
        .unwrap();
    let stats = e.stats(c);
    assert_eq!(stats.classes[mid_class.index()].total_pages, 1);
    assert_eq!(stats.classes[big_class.index()].total_pages, 2);
    assert_eq!(stats.classes[small_class.index()].total_pages, 1);
    assert!(stats.pages_in_use <= stats.page_limit);
    e.set_first_pages_under_caps(false);
    e.set_class_page_caps(None);
    assert!(matches!(
        set(&e, b"mid2", &[b'm'; 5_000], c),
        StoreOutcome::Stored { .. }
    ));
    e.check_invariants().unwrap();
}

#[test]
fn inserts_count_stores_of_absent_keys_per_class() {
    let e = engine(4);
    let c = Clock::logical(100);
    set(&e, b"a", b"1", c);
    set(&e, b"a", b"2", c);
    set(&e, b"b", b"1", c);
    assert_eq!(
        store(&e, StoreMode::Add, b"a", b"3", 0, c),
        StoreOutcome::NotStored
    );
    let class = e
        .geometry()
        .class_for(e.geometry().item_total_bytes(1, 0, 1))
        .unwrap();
    let counters = &e.stats(c).classes[class.index()].counters;
    assert_eq!(counters.inserts, 2);
    assert_eq!(counters.set_cmds, 4);
}

#[test]
fn first_pages_past_the_limit_stay_within_memcacheds_excess_when_pages_are_large() {
    // `-m 64 -I 32m`: pages are 32 MiB, so `-m` holds two. memcached's first-page rule lets each class
    // exceed the limit by one 1 MiB page; here the excess is the same in bytes, not one 32 MiB page per
    // class (that was 56 classes x 32 MiB = 1.75 GiB for a 64 MiB cache).
    let e = Engine::new(EngineConfig {
        memory_limit_bytes: 64 << 20,
        item_size_max_bytes: 32 << 20,
        ..EngineConfig::default()
    })
    .unwrap();
    let c = Clock::logical(100);
    let g = e.geometry();
    let classes: Vec<usize> = g.classes().map(|(_, cg)| cg.chunk_size_bytes).collect();
    let mut stored = 0;
    for (i, chunk) in classes.iter().enumerate() {
        // A value that lands in this class: its chunk less the item's overhead and a short key.
        let value_len = chunk.saturating_sub(120).max(1);
        if matches!(
            set(&e, format!("k{i}").as_bytes(), &vec![b'v'; value_len], c),
            StoreOutcome::Stored { .. }
        ) {
            stored += 1;
        }
    }
    let stats = e.stats(c);
    let bytes = stats.pages_in_use * stats.page_size_bytes;
    let excess_allowed = classes.len() << 20;
    assert!(
        bytes <= (64 << 20) + excess_allowed,
        "{} pages of {} bytes for a 64 MiB limit",
        stats.pages_in_use,
        stats.page_size_bytes
    );
    // Past the allowance a class without a page takes the coldest class's page: every store succeeds.
    assert_eq!(stored, classes.len(), "every class stores");
    e.check_invariants().unwrap();

    // With 1 MiB pages every class still gets its first page past a full limit, as in memcached.
    let e = engine(2);
    for i in 0..5000 {
        set(&e, format!("s{i:07}").as_bytes(), &[b'a'; 100], c);
    }
    let chunk_sizes: Vec<usize> = e
        .geometry()
        .classes()
        .map(|(_, cg)| cg.chunk_size_bytes)
        .collect();
    for (i, chunk) in chunk_sizes.iter().enumerate() {
        let value_len = chunk.saturating_sub(120).max(1);
        assert!(
            matches!(
                set(&e, format!("c{i}").as_bytes(), &vec![b'v'; value_len], c),
                StoreOutcome::Stored { .. }
            ),
            "class of chunk {chunk} got no page"
        );
    }
    e.check_invariants().unwrap();
}

/// A full class whose LRU tail holds expired items: the next stores reuse those items' chunks
/// (`reclaimed`) and evict nothing, so no live item loses its place to an item nobody can read.
#[test]
fn an_expired_tail_item_is_reused_before_a_live_one_is_evicted() {
    let (e, value, class, capacity) = two_pages_of_one_class();
    let c = Clock::logical(100);
    // The three oldest items expire after 10 s; the rest never do.
    for i in 0..capacity {
        let exptime = if i < 3 { 10 } else { 0 };
        let k = key(i);
        let args = StoreArgs {
            exptime,
            ..StoreArgs::set(Key::default_tenant(&k), &value)
        };
        assert!(matches!(e.store(&args, c), StoreOutcome::Stored { .. }));
    }
    let later = Clock::logical(200);
    for i in capacity..capacity + 3 {
        assert!(matches!(
            set(&e, &key(i), &value, later),
            StoreOutcome::Stored { .. }
        ));
    }
    let counters = &e.stats(later).classes[class.index()].counters;
    assert_eq!(counters.evicted, 0, "no live item was evicted");
    assert_eq!(counters.reclaimed, 3);
    assert_eq!(counters.expired_unfetched, 3);
    for i in 3..capacity + 3 {
        assert!(get(&e, &key(i), later).is_some(), "live item {i} kept");
    }
    // With no expired item left at the tail, the next store evicts the oldest live item.
    set(&e, &key(capacity + 3), &value, later);
    assert_eq!(get(&e, &key(3), later), None);
    assert_eq!(e.stats(later).classes[class.index()].counters.evicted, 1);
    e.check_invariants().unwrap();
}

/// The reaper (memcached's LRU crawler) unlinks expired items anywhere within its bound and counts them
/// per class as memcached's `crawler_reclaimed` and `crawler_items_checked`.
#[test]
fn the_reaper_counts_crawler_reclaimed_per_class() {
    let e = engine(64);
    let c = Clock::logical(100);
    for i in 0..10u32 {
        let key = format!("r{i}");
        let args = StoreArgs {
            exptime: if i % 2 == 0 { 5 } else { 0 },
            ..StoreArgs::set(Key::default_tenant(key.as_bytes()), b"v")
        };
        e.store(&args, c);
    }
    let later = Clock::logical(200);
    assert_eq!(e.reap_expired(later, 1000), 5);
    let stats = e.stats(later);
    let sum = |f: fn(&mrcache_engine::ClassCounters) -> u64| {
        stats.classes.iter().map(|k| f(&k.counters)).sum::<u64>()
    };
    assert_eq!(sum(|k| k.crawler_reclaimed), 5);
    assert_eq!(sum(|k| k.crawler_items_checked), 10);
    assert_eq!(stats.counters.expired_reaped, 5);
    assert_eq!(stats.curr_items, 5);
    e.check_invariants().unwrap();
}

/// The slab class of an item with an 8-byte key and a `value_len`-byte value.
fn class_of_value(e: &Engine, value_len: usize) -> ClassId {
    let g = e.geometry();
    g.class_for(g.item_total_bytes(8, 0, value_len)).unwrap()
}

/// Fills all of `e`'s memory with 20,000 items of 900-byte values (one class, the largest).
fn fill_with_small_items(e: &Engine, c: Clock) {
    for i in 0..20_000 {
        set(e, &key(i), &[b's'; 900], c);
    }
}

#[test]
fn a_class_emptied_by_a_move_takes_its_first_page_back_from_the_class_that_got_it() {
    let e = engine(8);
    let c = Clock::logical(100);
    let class_of = |value_len| class_of_value(&e, value_len);
    let (small, mid, big) = (class_of(900), class_of(5_000), class_of(100_000));
    let pages = |class: ClassId| e.stats(c).classes[class.index()].total_pages;
    fill_with_small_items(&e, c);
    assert_eq!(pages(small), 8);
    // Memory is full: the big and the mid class take their first pages from the largest class.
    set(&e, &key(100_000), &[b'b'; 100_000], c);
    set(&e, &key(100_001), &[b'm'; 5_000], c);
    assert_eq!((pages(small), pages(mid), pages(big)), (6, 1, 1));
    // A policy gives the mid class's only page to the big class; when the mid class stores again it
    // takes its page back from the big class, not from the largest.
    e.move_page(mid, Some(big)).unwrap();
    assert_eq!((pages(small), pages(mid), pages(big)), (6, 0, 2));
    set(&e, &key(100_002), &[b'm'; 5_000], c);
    assert_eq!((pages(small), pages(mid), pages(big)), (6, 1, 1));
    // A receiver without a page to spare keeps its last one: the largest class gives instead (here
    // the receiver gave its page back to memory, which the small class then took).
    e.move_page(mid, Some(big)).unwrap();
    e.move_page(big, None).unwrap();
    set(&e, &key(20_000), &[b's'; 900], c);
    assert_eq!((pages(small), pages(mid), pages(big)), (7, 0, 1));
    set(&e, &key(100_003), &[b'm'; 5_000], c);
    assert_eq!((pages(small), pages(mid), pages(big)), (6, 1, 1));
    e.check_invariants().unwrap();
}

/// The class that holds an emptied class's page passes the debt on when it gives away a page it cannot
/// spare: the emptied class's first page then comes from the class that move favoured, not from the
/// largest class (a bystander whose coldest page-worth of items it would cost).
#[test]
fn a_class_that_gives_away_a_borrowed_page_passes_the_debt_on() {
    let e = engine(8);
    let c = Clock::logical(100);
    let class_of = |value_len| class_of_value(&e, value_len);
    let (small, mid, big, other) = (
        class_of(900),
        class_of(5_000),
        class_of(100_000),
        class_of(20_000),
    );
    let pages = |class: ClassId| e.stats(c).classes[class.index()].total_pages;
    fill_with_small_items(&e, c);
    set(&e, &key(100_000), &[b'b'; 100_000], c);
    set(&e, &key(100_001), &[b'm'; 5_000], c);
    set(&e, &key(100_002), &[b'o'; 20_000], c);
    let all = || (pages(small), pages(mid), pages(big), pages(other));
    assert_eq!(all(), (5, 1, 1, 1));
    // mid's page goes to big, and big, holding it, gives a page to other: mid is owed by other now.
    e.move_page(mid, Some(big)).unwrap();
    e.move_page(big, Some(other)).unwrap();
    assert_eq!(all(), (5, 0, 1, 2));
    set(&e, &key(100_003), &[b'm'; 5_000], c);
    assert_eq!(
        all(),
        (5, 1, 1, 1),
        "the page comes from other, not from small"
    );
    // A class that can still spare a page after giving one keeps the debt.
    e.move_page(mid, Some(small)).unwrap();
    e.move_page(small, Some(other)).unwrap();
    assert_eq!(all(), (5, 0, 1, 2));
    set(&e, &key(100_004), &[b'm'; 5_000], c);
    assert_eq!(all(), (4, 1, 1, 2));
    e.check_invariants().unwrap();
}
