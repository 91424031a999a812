//! The log-structured layout: integrity under heavy cleaning (every value carries its own key and a
//! checksum, so an item returned with another item's bytes after compaction is caught), in-place
//! updates, ranking functions, `-M`, and tenant targets moving memory in bytes.

use mrcache_engine::{
    ClassId, Clock, Engine, EngineConfig, Key, LogPolicy, MemoryLayout, Ranking, ReassignOutcome,
    StoreArgs, StoreMode, StoreOutcome, TenantId, UNLIMITED,
};
use rand::{rngs::StdRng, Rng, SeedableRng};

/// A log engine; under the clock, with a tenth of its segments for keys on probation (S3-FIFO).
fn log_engine(memory: u64, shards: usize, pools: usize, ranking: Ranking) -> Engine {
    Engine::new(EngineConfig {
        memory_limit_bytes: memory,
        shards,
        tenant_pools: pools,
        memory_layout: MemoryLayout::Log,
        log_ranking: ranking,
        log_probation: if ranking == Ranking::Clock { 0.1 } else { 0.0 },
        ..EngineConfig::default()
    })
    .unwrap()
}

/// FNV-1a, enough to tell two values apart.
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// A value that names its key and version and ends with the checksum of what precedes it.
fn value_for(key: &[u8], version: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    v.extend_from_slice(key);
    v.push(b'#');
    v.extend_from_slice(version.to_string().as_bytes());
    v.push(b'#');
    let mut i = 0u64;
    while v.len() < len {
        v.push(b'a' + ((version + i) % 26) as u8);
        i += 1;
    }
    let sum = checksum(&v);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

/// Whether `value` is intact and belongs to `key`.
fn intact(key: &[u8], value: &[u8]) -> bool {
    if value.len() < 8 + key.len() + 1 {
        return false;
    }
    let (body, sum) = value.split_at(value.len() - 8);
    checksum(body) == u64::from_le_bytes(sum.try_into().unwrap())
        && body.starts_with(key)
        && body[key.len()] == b'#'
}

#[test]
fn no_item_ever_returns_another_items_bytes_under_heavy_cleaning() {
    for (shards, ranking, seed) in [
        (1, Ranking::Lru, 1),
        (4, Ranking::Lfu, 2),
        (2, Ranking::Slru, 3),
        (2, Ranking::Clock, 4),
    ] {
        // Six segments per shard: each pool of each shard has several to clean.
        let memory_mb = 6 * shards as u64;
        let engine = log_engine(memory_mb << 20, shards, 3, ranking);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut versions = vec![0u64; 6000 * shards];
        let (mut hits, mut stores) = (0u64, 0u64);
        for step in 0..60_000u32 {
            let clock = Clock::logical(100 + step / 100);
            let k = rng.gen_range(0..versions.len());
            let tenant = TenantId((k % 3) as u16);
            let key_bytes = format!("key:{k}");
            let key = Key::new(tenant, key_bytes.as_bytes());
            if rng.gen_bool(0.5) {
                versions[k] += 1;
                // Sizes from tens of bytes to tens of KiB, so records of every size share segments.
                let len = match rng.gen_range(0..10) {
                    0 => rng.gen_range(8_000..40_000),
                    1..=3 => rng.gen_range(500..3_000),
                    _ => rng.gen_range(20..300),
                };
                let value = value_for(key_bytes.as_bytes(), versions[k], len);
                let ttl = if rng.gen_bool(0.05) { 2 } else { 0 };
                let out = engine.store(
                    &StoreArgs {
                        exptime: ttl,
                        ..StoreArgs::set(key, &value)
                    },
                    clock,
                );
                assert!(matches!(out, StoreOutcome::Stored { .. }), "{out:?}");
                stores += 1;
            } else if let Some(v) = engine.get(key, clock, |it| it.value().to_vec()) {
                hits += 1;
                assert!(
                    intact(key_bytes.as_bytes(), &v),
                    "step {step}: key {k} got foreign or torn bytes"
                );
                let rest = &v[key_bytes.len() + 1..];
                let end = rest.iter().position(|&b| b == b'#').unwrap();
                let version: u64 = std::str::from_utf8(&rest[..end]).unwrap().parse().unwrap();
                assert!(
                    version <= versions[k],
                    "step {step}: key {k} from the future"
                );
                assert_eq!(
                    version, versions[k],
                    "step {step}: key {k} returned an old version"
                );
            }
            if step % 5000 == 0 {
                engine.check_invariants().unwrap();
            }
            if step % 5000 == 2500 {
                // A switch of policy (as the chooser makes) between cleanings: nothing is lost.
                let policies = ["clock+p", "density", "lfu+p0.3", "clock"];
                let policy = policies[(step / 5000) as usize % policies.len()];
                engine.apply_log_policy(LogPolicy::parse(policy).unwrap());
            }
        }
        engine.check_invariants().unwrap();
        let (copied, passes) = engine.cleaner_work();
        assert!(passes > 20, "the cleaner ran only {passes} passes");
        assert!(copied > 0, "the cleaner never relocated an item");
        assert!(hits > 1000 && stores > 1000, "{hits} hits, {stores} stores");
        // Within -m, but for the first segment of a pool in a shard, which may go over (as the slab
        // layout's first page of a class).
        assert!(engine.stats(Clock::logical(1000)).pages_in_use <= memory_mb as usize + shards * 3);
    }
}

#[test]
fn same_size_update_stays_in_place_and_a_larger_one_moves() {
    let e = log_engine(64 << 20, 1, 1, Ranking::Lru);
    let c = Clock::logical(100);
    let key = Key::new(TenantId(0), b"k");
    e.store(&StoreArgs::set(key, b"0123456789"), c);
    e.store(&StoreArgs::set(key, b"abcdefghij"), c);
    let s = e.stats(c);
    // One record: the update reused it (the log's bytes equal one item's).
    assert_eq!(s.curr_items, 1);
    assert_eq!(
        e.get(key, c, |it| it.value().to_vec()).unwrap(),
        b"abcdefghij"
    );
    e.store(&StoreArgs::set(key, &[b'x'; 5000]), c);
    assert_eq!(e.get(key, c, |it| it.value().len()).unwrap(), 5000);
    e.store(&StoreArgs::set(key, b"short"), c);
    assert_eq!(e.get(key, c, |it| it.value().to_vec()).unwrap(), b"short");
    e.check_invariants().unwrap();
}

/// `slabs reassign` on the log: its memory is in segments, so no class has a page to spare; ids it does
/// not have, and a class to itself, are answered as on the slab layout.
#[test]
fn reassign_finds_no_class_page_to_spare_in_the_log() {
    let e = log_engine(64 << 20, 2, 1, Ranking::Lru);
    let c = Clock::logical(100);
    for k in 0..5000 {
        let key = format!("k{k}");
        e.store(
            &StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &[b'v'; 3000]),
            c,
        );
    }
    assert!(e.stats(c).pages_in_use >= 10);
    let (one, two) = (ClassId::from_index(1), ClassId::from_index(2));
    assert_eq!(e.reassign(one, two), ReassignOutcome::NoSpare);
    assert_eq!(e.reassign(two, one), ReassignOutcome::NoSpare);
    assert_eq!(e.reassign(one, one), ReassignOutcome::Same);
    assert_eq!(
        e.reassign(one, ClassId::from_index(200)),
        ReassignOutcome::BadClass
    );
    e.check_invariants().unwrap();
}

#[test]
fn lfu_keeps_frequently_used_items_that_lru_would_drop() {
    // A few hot keys, read often but long ago, then a scan of cold keys: LFU keeps the hot ones.
    let hot_kept = |ranking: Ranking| {
        let e = log_engine(4 << 20, 1, 1, ranking);
        let value = vec![b'v'; 1000];
        let mut now = 100;
        for k in 0..200 {
            let key = format!("hot:{k}");
            e.store(
                &StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &value),
                Clock::logical(now),
            );
        }
        for _ in 0..5 {
            for k in 0..200 {
                let key = format!("hot:{k}");
                e.get(
                    Key::new(TenantId(0), key.as_bytes()),
                    Clock::logical(now),
                    |_| (),
                );
            }
            now += 1;
        }
        for k in 0..6000 {
            let key = format!("cold:{k}");
            e.store(
                &StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &value),
                Clock::logical(now + k / 100),
            );
        }
        (0..200)
            .filter(|k| {
                let key = format!("hot:{k}");
                e.get(
                    Key::new(TenantId(0), key.as_bytes()),
                    Clock::logical(now + 100),
                    |_| (),
                )
                .is_some()
            })
            .count()
    };
    let (lru, lfu, slru, density) = (
        hot_kept(Ranking::Lru),
        hot_kept(Ranking::Lfu),
        hot_kept(Ranking::Slru),
        hot_kept(Ranking::Density),
    );
    assert!(lfu > 150, "LFU kept {lfu} of 200 hot items");
    assert!(slru > 150, "SLRU kept {slru} of 200 hot items");
    assert!(density > 150, "density kept {density} of 200 hot items");
    assert!(lru < 50, "LRU kept {lru} of 200 hot items");
}

#[test]
fn density_keeps_the_small_items_when_all_are_used_alike() {
    // Small and large items written and read alike, far more than the log holds: the size-aware rank
    // keeps a larger share of the small ones (as many hits for less memory); LRU keeps both alike.
    let kept = |ranking: Ranking| {
        let e = log_engine(4 << 20, 1, 1, ranking);
        let (small, large) = (vec![b's'; 100], vec![b'l'; 3000]);
        let key = |k: u32| {
            format!(
                "{}:{k}",
                if k.is_multiple_of(2) {
                    "small"
                } else {
                    "large"
                }
            )
        };
        // One second throughout: no item is unused for long enough to count as stale.
        let c = Clock::logical(100);
        for k in 0..8000u32 {
            let value = if k.is_multiple_of(2) { &small } else { &large };
            let name = key(k);
            let key = Key::new(TenantId(0), name.as_bytes());
            e.store(&StoreArgs::set(key, value), c);
            e.get(key, c, |_| ());
        }
        e.check_invariants().unwrap();
        let held = |parity: u32| {
            (0..8000u32)
                .filter(|k| k % 2 == parity)
                .filter(|&k| {
                    let name = key(k);
                    e.get(Key::new(TenantId(0), name.as_bytes()), c, |_| ())
                        .is_some()
                })
                .count() as f64
                / 4000.0
        };
        (held(0), held(1))
    };
    let (lru_small, lru_large) = kept(Ranking::Lru);
    let (small, large) = kept(Ranking::Density);
    assert!(
        (lru_small - lru_large).abs() < 0.15,
        "LRU kept {lru_small:.2} of small, {lru_large:.2} of large items"
    );
    assert!(
        small > 0.9 && small > 2.0 * large,
        "density kept {small:.2} of small, {large:.2} of large items (LRU {lru_small:.2}, {lru_large:.2})"
    );
}

#[test]
fn without_eviction_the_cleaner_only_compacts() {
    let e = Engine::new(EngineConfig {
        memory_limit_bytes: 4 << 20,
        memory_layout: MemoryLayout::Log,
        evict_when_full: false,
        ..EngineConfig::default()
    })
    .unwrap();
    let c = Clock::logical(100);
    let value = vec![b'v'; 10_000];
    let mut stored = 0;
    for k in 0..1000 {
        let key = format!("k{k}");
        match e.store(
            &StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &value),
            c,
        ) {
            StoreOutcome::Stored { .. } => stored += 1,
            StoreOutcome::OutOfMemory => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(stored > 300, "{stored}");
    // Everything stored is still there: nothing was evicted.
    for k in 0..stored {
        let key = format!("k{k}");
        assert!(
            e.get(Key::new(TenantId(0), key.as_bytes()), c, |_| ())
                .is_some(),
            "k{k}"
        );
    }
    // Deleting makes room again: the cleaner compacts the holes away.
    for k in (0..stored).step_by(2) {
        let key = format!("k{k}");
        e.delete(Key::new(TenantId(0), key.as_bytes()), c);
    }
    let key = Key::new(TenantId(0), b"after");
    for i in 0..stored / 4 {
        let key = format!("after{i}");
        assert!(matches!(
            e.store(
                &StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &value),
                c
            ),
            StoreOutcome::Stored { .. }
        ));
    }
    assert!(
        e.store(
            &StoreArgs {
                mode: StoreMode::Add,
                ..StoreArgs::set(key, b"x")
            },
            c
        ) != StoreOutcome::TooLarge
    );
    e.check_invariants().unwrap();
}

#[test]
fn targets_move_memory_between_tenants_in_bytes() {
    // Two tenants write the same stream; tenant 1's target is three times tenant 0's.
    let e = log_engine(32 << 20, 1, 2, Ranking::Lru);
    let seg = e.config().page_size_bytes();
    e.set_pool_target(0, 8);
    e.set_pool_target(1, 24);
    let value = vec![b'v'; 700];
    for i in 0..200_000u32 {
        let t = (i % 2) as u16;
        let key = format!("k{}", i / 2);
        e.store(
            &StoreArgs::set(Key::new(TenantId(t), key.as_bytes()), &value),
            Clock::logical(100 + i / 1000),
        );
    }
    e.check_invariants().unwrap();
    let stats = e.stats(Clock::logical(400));
    let (b0, b1) = (
        stats.tenant(TenantId(0)).bytes,
        stats.tenant(TenantId(1)).bytes,
    );
    let ratio = b1 as f64 / b0 as f64;
    assert!(
        (2.5..3.6).contains(&ratio),
        "bytes {b0} vs {b1}: ratio {ratio}"
    );
    // Targets are met to within a segment or two, not a page per class.
    let held0 = e.pool(0).held;
    assert!(held0 <= 10, "pool 0 holds {held0} segments of {seg} bytes");
    e.set_pool_target(0, UNLIMITED);
}

#[test]
fn cache_memlimit_and_the_reaper_work_on_the_log() {
    let e = log_engine(16 << 20, 2, 1, Ranking::Lru);
    let value = vec![b'v'; 2000];
    for k in 0..20_000 {
        let key = format!("k{k}");
        let ttl = if k % 2 == 0 { 5 } else { 0 };
        e.store(
            &StoreArgs {
                exptime: ttl,
                ..StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &value)
            },
            Clock::logical(100),
        );
    }
    assert!(e.stats(Clock::logical(100)).pages_in_use >= 15);
    // Half the items expire; the reaper finds them in bounded steps.
    let mut reaped = 0;
    for _ in 0..100 {
        reaped += e.reap_expired(Clock::logical(200), 500);
    }
    assert!(reaped > 2000, "reaped {reaped}");
    e.check_invariants().unwrap();
    // A lower limit: segments are cleaned and given back, a bounded number per call.
    e.set_memory_limit(8 << 20, 2);
    for _ in 0..20 {
        e.shrink_to_limit(2);
    }
    let s = e.stats(Clock::logical(200));
    assert!(s.pages_in_use <= 8, "{} segments", s.pages_in_use);
    e.check_invariants().unwrap();
    let live = (1..20_000)
        .step_by(2)
        .filter(|k| {
            let key = format!("k{k}");
            e.get(
                Key::new(TenantId(0), key.as_bytes()),
                Clock::logical(200),
                |it| {
                    assert_eq!(it.value(), &value[..]);
                },
            )
            .is_some()
        })
        .count();
    assert!(live > 1000, "{live} items left");
}

#[test]
fn density_lets_go_of_small_items_of_a_past_phase() {
    // Small items read often, then a long phase of large items only: once the small ones have gone
    // unused for several cleaning cycles they give way, however small.
    let e = log_engine(4 << 20, 1, 1, Ranking::Density);
    let (small, large) = (vec![b's'; 100], vec![b'l'; 1000]);
    let key = |kind: &str, k: u32| format!("{kind}:{k}");
    let c = Clock::logical(100);
    for k in 0..2000 {
        let name = key("small", k);
        let key = Key::new(TenantId(0), name.as_bytes());
        e.store(&StoreArgs::set(key, &small), c);
        for _ in 0..10 {
            e.get(key, c, |_| ());
        }
    }
    let n = 80_000u32;
    for k in 0..n {
        let c = Clock::logical(101 + k / 100);
        let name = key("large", k);
        let key = Key::new(TenantId(0), name.as_bytes());
        e.store(&StoreArgs::set(key, &large), c);
        e.get(key, c, |_| ());
    }
    e.check_invariants().unwrap();
    let end = Clock::logical(101 + n / 100);
    let held = |kind: &str, ks: std::ops::Range<u32>| {
        let len = ks.len() as f64;
        ks.filter(|&k| {
            let name = key(kind, k);
            e.get(Key::new(TenantId(0), name.as_bytes()), end, |_| ())
                .is_some()
        })
        .count() as f64
            / len
    };
    let (old, recent) = (held("small", 0..2000), held("large", n - 1000..n));
    assert!(old < 0.1, "kept {old:.2} of the past phase's small items");
    assert!(
        recent > 0.9,
        "kept {recent:.2} of the last 1000 large items"
    );
}

#[test]
fn a_cleaning_pass_is_spread_over_the_appends_and_survives_what_they_do() {
    // One shard of 8 MiB and about 17 MB of items: every head after the first few comes from the
    // cleaner, and between a pass's steps the requests delete, overwrite (same size, larger, smaller)
    // and read items of its inputs.
    let engine = log_engine(8 << 20, 1, 1, Ranking::Density);
    let mut rng = StdRng::seed_from_u64(7);
    let keys = 60_000usize;
    let mut versions = vec![0u64; keys];
    let mut live = vec![false; keys];
    let (mut copied, mut passes) = engine.cleaner_work();
    let (copied_before, passes_before) = (copied, passes);
    let mut most_copied_by_one = 0;
    for step in 0..200_000u32 {
        let clock = Clock::logical(100 + step / 1000);
        let k = rng.gen_range(0..keys);
        let key_bytes = format!("key:{k}");
        let key = Key::new(TenantId(0), key_bytes.as_bytes());
        match rng.gen_range(0..10) {
            0 => {
                engine.delete(key, clock);
                live[k] = false;
            }
            1..=4 => {
                versions[k] += 1;
                let len = rng.gen_range(100..400);
                let value = value_for(key_bytes.as_bytes(), versions[k], len);
                let out = engine.store(&StoreArgs::set(key, &value), clock);
                assert!(matches!(out, StoreOutcome::Stored { .. }), "{out:?}");
                live[k] = true;
            }
            _ => {
                if let Some(v) = engine.get(key, clock, |it| it.value().to_vec()) {
                    assert!(live[k], "step {step}: key {k} came back after its delete");
                    assert!(
                        intact(key_bytes.as_bytes(), &v),
                        "step {step}: key {k} got foreign or torn bytes"
                    );
                    let version = format!("#{}#", versions[k]);
                    assert!(
                        v[key_bytes.len()..].starts_with(version.as_bytes()),
                        "step {step}: key {k} returned an old version"
                    );
                }
            }
        }
        let (c, p) = engine.cleaner_work();
        most_copied_by_one = most_copied_by_one.max(c - copied);
        (copied, passes) = (c, p);
        if step % 2_000 == 0 {
            engine.check_invariants().unwrap();
        }
    }
    engine.check_invariants().unwrap();
    let passes = passes - passes_before;
    let copied = copied - copied_before;
    eprintln!(
        "{passes} passes, {copied} bytes copied, at most {most_copied_by_one} by one request"
    );
    assert!(passes >= 10, "only {passes} passes");
    assert!(copied > 4 << 20, "only {copied} bytes copied");
    // A pass copies up to a segment (1 MiB); spread over its appends, no request copies more than a
    // few records.
    assert!(
        most_copied_by_one <= 8 << 10,
        "one request copied {most_copied_by_one} bytes"
    );
}

/// A log engine with `probation` of its segments for keys on probation.
fn probation_engine(memory: u64, ranking: Ranking, probation: f64) -> Engine {
    Engine::new(EngineConfig {
        memory_limit_bytes: memory,
        memory_layout: MemoryLayout::Log,
        log_ranking: ranking,
        log_probation: probation,
        ..EngineConfig::default()
    })
    .unwrap()
}

#[test]
fn probation_keeps_a_working_set_through_a_stream_of_one_hit_wonders() {
    // Rounds over 4,000 hot keys, each read once a round (a miss sets it, as a lookaside client does),
    // between which 12,000 keys are written that are never read again. The log (16 segments) holds
    // about 15,600 such items, fewer than a round's 16,000 distinct keys: under exact LRU every hot
    // read would miss (the log's `lru` ranks by whole seconds, one a round here, so it keeps some by
    // chance), and the clock alone keeps none (a hot key is swept before its next read, unread). Keys
    // on probation are evicted unread, and a hot key the ghost recalls enters the main queue, where
    // the clock keeps it while it is read.
    let hot_hits = |ranking: Ranking, probation: f64| {
        let e = probation_engine(16 << 20, ranking, probation);
        let value = vec![b'v'; 1000];
        let (mut hits, mut cold) = (0, 0u64);
        for round in 0..12u32 {
            let clock = Clock::logical(100 + round);
            for k in 0..4000 {
                let key = format!("hot:{k}");
                let key = Key::new(TenantId(0), key.as_bytes());
                if e.get(key, clock, |_| ()).is_some() {
                    hits += usize::from(round >= 4);
                } else {
                    e.store(&StoreArgs::set(key, &value), clock);
                }
                for _ in 0..3 {
                    let key = format!("cold:{cold}");
                    cold += 1;
                    let key = Key::new(TenantId(0), key.as_bytes());
                    e.store(&StoreArgs::set(key, &value), clock);
                }
            }
        }
        e.check_invariants().unwrap();
        hits
    };
    let (lru, clock, probation) = (
        hot_hits(Ranking::Lru, 0.0),
        hot_hits(Ranking::Clock, 0.0),
        hot_hits(Ranking::Clock, 0.1),
    );
    eprintln!("hot hits of 32,000: lru {lru}, clock {clock}, clock with probation {probation}");
    assert!(
        clock < 400,
        "the clock alone hit {clock} of 32,000 hot reads"
    );
    assert!(probation > 28_000, "probation hit {probation} of 32,000");
    assert!(probation > lru + 6_000, "probation {probation}, lru {lru}");
}

#[test]
fn the_clock_keeps_what_is_read_between_sweeps() {
    // 3,000 keys read every round beside 4,000 keys written once: the clock's sweeps pass each item
    // less than once a round (7,000 items' worth of sweeping through a log of about 15,600 in 16
    // segments), so each read renews the one sweep a hot item meets, and the written-once ones go.
    let e = probation_engine(16 << 20, Ranking::Clock, 0.0);
    let value = vec![b'v'; 1000];
    let hot = |k: usize| format!("hot:{k}");
    for k in 0..3000 {
        let key = hot(k);
        e.store(
            &StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &value),
            Clock::logical(100),
        );
    }
    let mut missed = 0;
    for round in 0..10u32 {
        let clock = Clock::logical(101 + round);
        for k in 0..3000 {
            let key = hot(k);
            let key = Key::new(TenantId(0), key.as_bytes());
            if e.get(key, clock, |_| ()).is_none() {
                missed += 1;
                e.store(&StoreArgs::set(key, &value), clock);
            }
        }
        for c in 0..4000 {
            let key = format!("cold:{round}:{c}");
            e.store(
                &StoreArgs::set(Key::new(TenantId(0), key.as_bytes()), &value),
                clock,
            );
        }
    }
    e.check_invariants().unwrap();
    assert!(missed < 300, "{missed} of 30,000 hot reads missed");
}

#[test]
fn the_chooser_switches_to_the_policy_its_miniatures_find_misses_least() {
    // 20,000 small items (100 bytes) and 600 large ones (50 KB), read uniformly at random through a
    // lookaside client, in 16 MiB: all the small ones fit, a third of the large ones do. Density
    // (hits per byte) keeps the small ones and misses far less than clock with probation, which
    // weighs every item alike. An engine that starts with clock+p and may choose density switches,
    // and its misses over the last quarter are close to density's own; with one candidate there is
    // no chooser.
    let run = |policy: &str, choose: &[&str]| {
        let start = LogPolicy::parse(policy).unwrap();
        let e = Engine::new(EngineConfig {
            memory_limit_bytes: 16 << 20,
            memory_layout: MemoryLayout::Log,
            log_ranking: start.ranking,
            log_probation: start.probation,
            log_choose: choose
                .iter()
                .map(|s| LogPolicy::parse(s).unwrap())
                .collect(),
            log_choose_rate: 0.25,
            ..EngineConfig::default()
        })
        .unwrap();
        let (small, large) = (vec![b's'; 100], vec![b'l'; 50_000]);
        let mut rng = StdRng::seed_from_u64(7);
        let mut late_misses = 0;
        const REQUESTS: u32 = 400_000;
        for i in 0..REQUESTS {
            let clock = Clock::logical(100 + i / 10_000);
            let k = rng.gen_range(0..20_600u32);
            let key = format!("key:{k}");
            let key = Key::new(TenantId(0), key.as_bytes());
            if e.get(key, clock, |_| ()).is_none() {
                late_misses += usize::from(i >= REQUESTS / 4 * 3);
                let value = if k < 20_000 { &small } else { &large };
                e.store(&StoreArgs::set(key, value), clock);
            }
        }
        e.check_invariants().unwrap();
        (late_misses, e.chooser_report())
    };
    let (density, none) = run("density", &[]);
    assert!(none.is_none(), "no candidates, no chooser");
    let (clock, _) = run("clock+p", &[]);
    let (chosen, report) = run("clock+p", &["clock+p", "density"]);
    let report = report.expect("a chooser");
    eprintln!("misses in the last 100,000 requests: density {density}, clock+p {clock}, chooser {chosen}; {report:?}");
    assert!(
        density * 2 < clock,
        "the workload tells them apart: {density} vs {clock}"
    );
    assert_eq!(report.current.name(), "density");
    assert!(report.switches >= 1);
    assert!(
        (chosen as f64) < 1.1 * density as f64,
        "chooser {chosen}, density {density}"
    );
}
