//! Warm restart through the engine: a walk reports every live item once (whatever page moves left
//! behind in the chunks), and restoring the walked items into another engine, on a clock that has moved
//! on, gives back every item with its value, flags, remaining TTL, CAS and marks, with later CAS values
//! above the restored ones.

use std::collections::{BTreeMap, HashSet};

use mrcache_engine::{
    ClassId, Clock, Engine, EngineConfig, ItemCursor, ItemFlag, Key, RestoreOutcome, SavedItem,
    StoreArgs, StoreOutcome, TenantId,
};
use proptest::prelude::*;

/// A walked item, copied out of the walk.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Owned {
    tenant: TenantId,
    key: Vec<u8>,
    value: Vec<u8>,
    client_flags: u32,
    expiry: u32,
    atime: u32,
    cas: u64,
    marks: u8,
}

impl Owned {
    fn of(item: &SavedItem<'_>) -> Owned {
        Owned {
            tenant: item.key.tenant,
            key: item.key.bytes.to_vec(),
            value: item.value.to_vec(),
            client_flags: item.client_flags,
            expiry: item.expiry,
            atime: item.atime,
            cas: item.cas,
            marks: item.marks.bits(),
        }
    }
}

fn engine(mb: u64, shards: usize, pools: usize) -> Engine {
    Engine::new(EngineConfig {
        memory_limit_bytes: mb << 20,
        shards,
        tenant_pools: pools,
        ..EngineConfig::default()
    })
    .unwrap()
}

/// Every live item, walking `max_chunks` chunks per call.
fn walk(e: &Engine, max_chunks: usize, clock: Clock) -> Vec<Owned> {
    let mut cursor = ItemCursor::default();
    let mut items = Vec::new();
    let mut calls = 0;
    while !cursor.is_done() {
        e.walk_live_items(&mut cursor, max_chunks, clock, |it| {
            items.push(Owned::of(it))
        });
        calls += 1;
        assert!(calls < 10_000_000, "the walk does not end");
    }
    items
}

fn set(e: &Engine, key: Key<'_>, value: &[u8], flags: u32, ttl: i64, clock: Clock) -> u64 {
    match e.store(
        &StoreArgs {
            client_flags: flags,
            exptime: ttl,
            ..StoreArgs::set(key, value)
        },
        clock,
    ) {
        StoreOutcome::Stored { cas } => cas,
        other => panic!("{other:?}"),
    }
}

#[test]
fn restored_items_keep_value_flags_ttl_cas_and_marks() {
    let before = Clock {
        now: 1000,
        process_started_unix: 1_700_000_000,
    };
    let a = engine(16, 4, 4);
    let mut expected = BTreeMap::new();
    for i in 0..3000u32 {
        let tenant = TenantId((i % 3) as u16);
        let key = format!("key-{i}").into_bytes();
        let value = vec![b'a' + (i % 26) as u8; (i as usize * 37) % 5000];
        // Every fifth item lives 100 s, every seventh 10 s, the rest forever.
        let ttl = if i % 5 == 0 {
            100
        } else if i % 7 == 0 {
            10
        } else {
            0
        };
        let cas = set(&a, Key::new(tenant, &key), &value, i, ttl, before);
        expected.insert((tenant, key), (value, i, ttl, cas));
    }
    // Deleted items are not walked; a read marks an item fetched, `ms I`-style marks survive too.
    for i in (0..3000u32).step_by(11) {
        let tenant = TenantId((i % 3) as u16);
        let key = format!("key-{i}").into_bytes();
        assert!(a.delete(Key::new(tenant, &key), before));
        expected.remove(&(tenant, key));
    }
    let fetched = Key::new(TenantId(1), b"key-1");
    assert!(a.get(fetched, before, |_| ()).is_some());
    let stale = Key::new(TenantId(2), b"key-2");
    a.with_entry(stale, before, |e| e.set_flag(ItemFlag::Stale, true));

    let walked = walk(&a, 7, before);
    assert_eq!(walked.len(), expected.len(), "each live item once");
    let keys: HashSet<_> = walked.iter().map(|w| (w.tenant, w.key.clone())).collect();
    assert_eq!(keys.len(), walked.len());
    let max_cas = walked.iter().map(|w| w.cas).max().unwrap();

    // 50 s of wall time later, in a process that started 900 s after the first.
    let after = Clock {
        now: 150,
        process_started_unix: 1_700_000_900,
    };
    let b = engine(16, 2, 4);
    let mut expired = 0;
    for w in &walked {
        let item = SavedItem {
            key: Key::new(w.tenant, &w.key),
            value: &w.value,
            client_flags: w.client_flags,
            expiry: if w.expiry == 0 {
                0
            } else {
                after.relative(before.unix_time(w.expiry))
            },
            atime: after.relative(before.unix_time(w.atime)),
            cas: w.cas,
            marks: mrcache_engine::ItemMarks::from_bits(w.marks),
        };
        match b.restore_item(&item, after) {
            RestoreOutcome::Restored => {}
            RestoreOutcome::Expired => expired += 1,
            other => panic!("{other:?}"),
        }
    }
    b.check_invariants().unwrap();
    // Marks first: the reads below mark everything fetched.
    b.with_entry(stale, after, |e| assert!(e.item().unwrap().stale()));
    b.with_entry(fetched, after, |e| assert!(e.item().unwrap().fetched()));
    b.with_entry(Key::new(TenantId(0), b"key-3"), after, |e| {
        assert!(!e.item().unwrap().fetched());
    });
    let mut restored = 0;
    for ((tenant, key), (value, flags, ttl, cas)) in &expected {
        let got = b.get(Key::new(*tenant, key), after, |v| {
            (v.value().to_vec(), v.client_flags(), v.cas(), v.ttl_secs())
        });
        if *ttl == 10 {
            assert!(got.is_none(), "expired while down");
            continue;
        }
        let got = got.expect("restored");
        restored += 1;
        let left = if *ttl == 0 { None } else { Some(*ttl - 50) };
        assert_eq!(got, (value.clone(), *flags, *cas, left));
    }
    assert_eq!(restored + expired, walked.len());
    let next = set(&b, Key::new(TenantId(0), b"new"), b"v", 0, 0, after);
    assert_eq!(
        next,
        max_cas + 1,
        "the CAS counter resumes above the restored"
    );
}

#[test]
fn a_walk_holds_one_shard_for_at_most_its_chunks() {
    let clock = Clock::logical(100);
    let e = engine(8, 4, 1);
    for i in 0..500u32 {
        set(
            &e,
            Key::default_tenant(format!("k{i}").as_bytes()),
            b"v",
            0,
            0,
            clock,
        );
    }
    let mut cursor = ItemCursor::default();
    while !cursor.is_done() {
        let n = e.walk_live_items(&mut cursor, 3, clock, |_| {});
        assert!(n <= 3);
    }
    assert_eq!(walk(&e, 1, clock).len(), 500);
    assert_eq!(walk(&e, usize::MAX, clock).len(), 500);
}

#[derive(Clone, Debug)]
enum Op {
    Set { key: u8, len: usize },
    Delete { key: u8 },
    Reassign { src: u8, dst: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    let len = prop_oneof![0usize..60, 200usize..2000, 20_000usize..120_000];
    prop_oneof![
        6 => (any::<u8>(), len).prop_map(|(key, len)| Op::Set { key, len }),
        2 => any::<u8>().prop_map(|key| Op::Delete { key }),
        1 => (1u8..12, 1u8..12).prop_map(|(src, dst)| Op::Reassign { src, dst }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Page moves leave old bytes in reused pages; the walk reports exactly the items a lookup finds.
    #[test]
    fn the_walk_reports_exactly_the_live_items(ops in prop::collection::vec(op(), 1..300), step in 1usize..50) {
        let clock = Clock::logical(100);
        let e = engine(4, 2, 1);
        for op in ops {
            match op {
                Op::Set { key, len } => {
                    let value = vec![key; len];
                    let _ = e.store(&StoreArgs::set(Key::default_tenant(&[key]), &value), clock);
                }
                Op::Delete { key } => {
                    e.delete(Key::default_tenant(&[key]), clock);
                }
                Op::Reassign { src, dst } => {
                    e.reassign(ClassId(src), ClassId(dst));
                }
            }
        }
        let mut live = BTreeMap::new();
        for key in 0..=255u8 {
            if let Some(v) = e.get(Key::default_tenant(&[key]), clock, |v| v.value().to_vec()) {
                live.insert(vec![key], v);
            }
        }
        let walked: BTreeMap<_, _> = walk(&e, step, clock)
            .into_iter()
            .map(|w| (w.key, w.value))
            .collect();
        prop_assert_eq!(walked, live);
    }
}
