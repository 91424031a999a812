//! Property tests: the engine against a plain `HashMap` + expiry model under random operation sequences,
//! including clock advances, flushes, page moves and reaping.
//!
//! With memory to spare the engine must agree with the model exactly. With tight memory (evictions and page
//! moves) it may forget items, but every hit must return exactly the model's value and flags, and the
//! engine's internal invariants (lists, counts, page budget) must hold after every step.
//!
//! Both memory layouts run every property (`layout()`): slab, and log with each ranking function and
//! cleaning passes of two to four segments.
//!
//! Keys spread over three tenants with overlapping key bytes (`key_of`), and flushes name a tenant, so
//! the model also checks that tenants are separate namespaces.

use std::collections::HashMap;

use mrcache_engine::{
    ArithOutcome, ClassId, Clock, Delta, Engine, EngineConfig, ItemAccounting, Key, MemoryLayout,
    Ranking, StoreArgs, StoreMode, StoreOutcome, TenantId,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Store {
        mode: u8,
        key: u8,
        len: usize,
        flags: u32,
        ttl: i64,
    },
    Get {
        key: u8,
    },
    Delete {
        key: u8,
    },
    Arith {
        key: u8,
        incr: bool,
        delta: u64,
    },
    Touch {
        key: u8,
        ttl: i64,
    },
    Advance {
        secs: u32,
    },
    Flush {
        tenant: u8,
    },
    Reassign {
        src: u8,
        dst: u8,
    },
    Reap,
}

fn op() -> impl Strategy<Value = Op> {
    let len = prop_oneof![0usize..40, 100usize..3000, 20_000usize..200_000];
    prop_oneof![
        8 => (0u8..5, 0u8..40, len, prop_oneof![Just(0u32), any::<u32>()], prop_oneof![Just(0i64), 1i64..20, Just(-1i64)])
            .prop_map(|(mode, key, len, flags, ttl)| Op::Store { mode, key, len, flags, ttl }),
        6 => (0u8..40).prop_map(|key| Op::Get { key }),
        1 => (0u8..40).prop_map(|key| Op::Delete { key }),
        1 => (0u8..40, any::<bool>(), prop_oneof![0u64..1000, Just(u64::MAX)])
            .prop_map(|(key, incr, delta)| Op::Arith { key, incr, delta }),
        1 => (0u8..40, prop_oneof![Just(0i64), 1i64..20]).prop_map(|(key, ttl)| Op::Touch { key, ttl }),
        1 => (1u32..8).prop_map(|secs| Op::Advance { secs }),
        1 => (0u8..TENANTS).prop_map(|tenant| Op::Flush { tenant }),
        1 => (1u8..42, 1u8..42).prop_map(|(src, dst)| Op::Reassign { src, dst }),
        1 => Just(Op::Reap),
    ]
}

fn accounting() -> impl Strategy<Value = ItemAccounting> {
    prop_oneof![
        Just(ItemAccounting::Memcached),
        Just(ItemAccounting::Compact)
    ]
}

/// A memory layout and, for the log, its ranking function, segments per cleaning pass, ghost and
/// probationary share.
fn layout() -> impl Strategy<Value = (MemoryLayout, Ranking, usize, bool, f64)> {
    prop_oneof![
        Just((MemoryLayout::Slab, Ranking::Lru, 2, false, 0.0)),
        (
            prop_oneof![
                Just(Ranking::Lru),
                Just(Ranking::Lfu),
                Just(Ranking::Slru),
                Just(Ranking::Density),
                Just(Ranking::Clock)
            ],
            2usize..5,
            any::<bool>(),
            prop_oneof![Just(0.0), Just(0.1), Just(0.5)]
        )
            .prop_map(|(r, n, ghost, probation)| (
                MemoryLayout::Log,
                r,
                n,
                ghost,
                probation
            )),
    ]
}

#[derive(Clone, Debug, PartialEq)]
struct Entry {
    value: Vec<u8>,
    flags: u32,
    expiry: u32,
}

/// Tenants the keys spread over.
const TENANTS: u8 = 3;

/// The model's key for key number `k`: its tenant byte, then the key bytes, which repeat across tenants.
fn key_of(k: u8) -> Vec<u8> {
    let mut key = vec![k % TENANTS];
    key.extend_from_slice(format!("key:{}", k / TENANTS).as_bytes());
    key
}

/// The engine's key for a model key.
fn ek(model_key: &[u8]) -> Key<'_> {
    Key::new(TenantId(model_key[0] as u16), &model_key[1..])
}

fn value_of(k: u8, len: usize, salt: u64) -> Vec<u8> {
    if len < 20 && salt.is_multiple_of(3) {
        // Small numeric values exercise incr/decr.
        return (salt % 1000).to_string().into_bytes();
    }
    (0..len)
        .map(|i| (k as usize + i + salt as usize) as u8)
        .collect()
}

/// Runs `ops`; with `exact`, misses must match the model too.
fn run(ops: &[Op], config: EngineConfig, exact: bool) -> Result<(), TestCaseError> {
    let engine = Engine::new(config).unwrap();
    let mut model: HashMap<Vec<u8>, Entry> = HashMap::new();
    let mut now = 100u32;
    for (step, op) in ops.iter().enumerate() {
        let clock = Clock::logical(now);
        let live = |m: &HashMap<Vec<u8>, Entry>, k: &[u8]| -> Option<Entry> {
            m.get(k)
                .filter(|e| !(e.expiry != 0 && e.expiry <= now))
                .cloned()
        };
        match *op {
            Op::Store {
                mode,
                key,
                len,
                flags,
                ttl,
            } => {
                let k = key_of(key);
                let v = value_of(key, len, step as u64);
                let mode = [
                    StoreMode::Set,
                    StoreMode::Add,
                    StoreMode::Replace,
                    StoreMode::Append,
                    StoreMode::Prepend,
                ][mode as usize];
                let old = live(&model, &k);
                let out = engine.store(
                    &StoreArgs {
                        mode,
                        client_flags: flags,
                        exptime: ttl,
                        ..StoreArgs::set(ek(&k), &v)
                    },
                    clock,
                );
                let expect = match (mode, &old) {
                    (StoreMode::Add, Some(_))
                    | (StoreMode::Replace | StoreMode::Append | StoreMode::Prepend, None) => None,
                    (StoreMode::Append, Some(o)) => Some(Entry {
                        value: [o.value.clone(), v.clone()].concat(),
                        ..o.clone()
                    }),
                    (StoreMode::Prepend, Some(o)) => Some(Entry {
                        value: [v.clone(), o.value.clone()].concat(),
                        ..o.clone()
                    }),
                    _ => Some(Entry {
                        value: v.clone(),
                        flags,
                        expiry: clock.expiry(ttl),
                    }),
                };
                match (out, expect) {
                    (StoreOutcome::Stored { .. }, Some(e)) => {
                        model.insert(k, e);
                    }
                    (StoreOutcome::NotStored, None) => {}
                    (StoreOutcome::NotStored, Some(_)) if !exact => {
                        // The old item was evicted while making room, or the join does not fit.
                        model.remove(&k);
                    }
                    (StoreOutcome::TooLarge, _) => {
                        model.remove(&k);
                    }
                    (StoreOutcome::Stored { .. }, None) if !exact && mode == StoreMode::Add => {
                        // The model's item was evicted, so add found the key free.
                        model.insert(
                            k,
                            Entry {
                                value: v.clone(),
                                flags,
                                expiry: clock.expiry(ttl),
                            },
                        );
                    }
                    (StoreOutcome::OutOfMemory, _) if !exact => {}
                    (got, want) => {
                        prop_assert!(false, "step {step}: {op:?} gave {got:?}, model {want:?}")
                    }
                }
            }
            Op::Get { key } => {
                let k = key_of(key);
                let got = engine.get(ek(&k), clock, |it| Entry {
                    value: it.value().to_vec(),
                    flags: it.client_flags(),
                    expiry: 0,
                });
                let want = live(&model, &k);
                match (&got, &want) {
                    (Some(g), Some(w)) => prop_assert!(
                        g.value == w.value && g.flags == w.flags,
                        "step {step}: wrong value for {key}"
                    ),
                    (None, None) => {}
                    (None, Some(_)) if !exact => {
                        model.remove(&k);
                    }
                    _ => prop_assert!(
                        false,
                        "step {step}: get {key}: engine {:?} model {:?}",
                        got.is_some(),
                        want.is_some()
                    ),
                }
            }
            Op::Delete { key } => {
                let k = key_of(key);
                let removed = engine.delete(ek(&k), clock);
                let had = live(&model, &k).is_some();
                prop_assert!(
                    removed == had || (!exact && !removed),
                    "step {step}: delete {key}"
                );
                model.remove(&k);
            }
            Op::Arith { key, incr, delta } => {
                let k = key_of(key);
                let out = engine.arith(
                    ek(&k),
                    if incr {
                        Delta::Incr(delta)
                    } else {
                        Delta::Decr(delta)
                    },
                    0,
                    clock,
                );
                match (out, live(&model, &k)) {
                    (ArithOutcome::Value { value, .. }, Some(mut e)) => {
                        let cur = mrcache_engine::parse_decimal(&e.value);
                        prop_assert!(cur.is_some(), "step {step}: arith on non-numeric");
                        let cur = cur.unwrap();
                        let want = if incr {
                            cur.wrapping_add(delta)
                        } else {
                            cur.saturating_sub(delta)
                        };
                        prop_assert_eq!(value, want);
                        let text = want.to_string().into_bytes();
                        e.value = if text.len() <= e.value.len() {
                            let mut padded = text.clone();
                            padded.resize(e.value.len(), b' ');
                            padded
                        } else {
                            text
                        };
                        model.insert(k, e);
                    }
                    (ArithOutcome::NonNumeric, Some(e)) => {
                        prop_assert!(mrcache_engine::parse_decimal(&e.value).is_none())
                    }
                    (ArithOutcome::NotFound, None) => {}
                    (ArithOutcome::NotFound, Some(_)) if !exact => {
                        model.remove(&k);
                    }
                    (ArithOutcome::OutOfMemory, _) if !exact => {
                        model.remove(&k);
                    }
                    (got, want) => {
                        prop_assert!(false, "step {step}: arith {got:?} vs model {want:?}")
                    }
                }
            }
            Op::Touch { key, ttl } => {
                let k = key_of(key);
                let touched = engine.touch(ek(&k), ttl, clock);
                match live(&model, &k) {
                    Some(mut e) => {
                        prop_assert!(touched || !exact, "step {step}: touch missed");
                        if touched {
                            e.expiry = clock.expiry(ttl);
                            model.insert(k, e);
                        } else {
                            model.remove(&k);
                        }
                    }
                    None => prop_assert!(!touched, "step {step}: touched a dead item"),
                }
            }
            Op::Advance { secs } => now += secs,
            Op::Flush { tenant } => {
                engine.flush_all(TenantId(tenant as u16), 0, clock);
                model.retain(|k, _| k[0] != tenant);
            }
            Op::Reassign { src, dst } => {
                engine.reassign(ClassId(src), ClassId(dst));
            }
            Op::Reap => {
                engine.reap_expired(clock, 1000);
            }
        }
        if let Err(e) = engine.check_invariants() {
            prop_assert!(false, "step {step} after {op:?}: {e}");
        }
    }
    // Every model item still live must be readable with its exact bytes (exact mode).
    if exact {
        let clock = Clock::logical(now);
        for (k, e) in &model {
            if e.expiry != 0 && e.expiry <= now {
                continue;
            }
            let got = engine.get(ek(k), clock, |it| it.value().to_vec());
            prop_assert_eq!(got.as_deref(), Some(&e.value[..]));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn matches_model_with_room_to_spare(ops in prop::collection::vec(op().prop_filter("no page moves", |o| !matches!(o, Op::Reassign { .. })), 1..300), item_accounting in accounting(), (memory_layout, log_ranking, log_clean_segments, log_ghost, log_probation) in layout()) {
        let config = EngineConfig { memory_limit_bytes: 512 << 20, item_accounting, memory_layout, log_ranking, log_clean_segments, log_ghost, log_probation, ..EngineConfig::default() };
        run(&ops, config, true)?;
    }

    #[test]
    fn sound_under_pressure_and_page_moves(ops in prop::collection::vec(op(), 1..400), shards in prop_oneof![Just(1usize), Just(2), Just(4)], item_accounting in accounting(), (memory_layout, log_ranking, log_clean_segments, log_ghost, log_probation) in layout()) {
        let config = EngineConfig { memory_limit_bytes: 3 << 20, shards, item_accounting, memory_layout, log_ranking, log_clean_segments, log_ghost, log_probation, ..EngineConfig::default() };
        run(&ops, config, false)?;
    }
}
