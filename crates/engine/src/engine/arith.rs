//! incr and decr (and meta `ma`) with memcached's `do_add_delta` rules: 64-bit wrap on incr, floor at
//! 0 on decr, and a result no longer than the old value written in place, padded with spaces.
//!
//! Invariants: an item whose value is not a decimal that fits 64 bits is never changed (`NonNumeric`);
//! every change takes a new CAS.

use super::Engine;
use crate::shard::hash_key;
use crate::tenant::Key;
use crate::Clock;

/// incr or decr.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Delta {
    /// Add, wrapping at 2^64.
    Incr(u64),
    /// Subtract, stopping at 0.
    Decr(u64),
}

/// The result of incr/decr.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ArithOutcome {
    /// The new value was written.
    Value {
        /// The new value.
        value: u64,
        /// The item's new CAS.
        cas: u64,
    },
    /// No live item has the key.
    NotFound,
    /// The stored value is not a decimal number that fits 64 bits.
    NonNumeric,
    /// CAS mismatch (meta `ma C`).
    Exists,
    /// The longer result needed a new chunk and none could be found.
    OutOfMemory,
}

impl Engine {
    /// incr/decr with memcached's rules: 64-bit wrap on incr, floor at 0 on decr, and a result no longer than
    /// the old value is written in place, padded with spaces (memcached's `do_add_delta`). `cas` non-zero
    /// must match (meta `ma C`).
    pub fn arith(&self, key: Key<'_>, delta: Delta, cas: u64, clock: Clock) -> ArithOutcome {
        let hash = hash_key(key);
        let mut shard = self.shard_for(hash).lock();
        let Ok(h) = shard.find(key, hash, clock) else {
            match delta {
                Delta::Incr(_) => shard.counters().incr_misses += 1,
                Delta::Decr(_) => shard.counters().decr_misses += 1,
            }
            return ArithOutcome::NotFound;
        };
        let (current, value_len, old_cas) = {
            let it = shard.item(h);
            (parse_decimal(it.value()), it.value_len(), it.cas())
        };
        if cas != 0 && cas != old_cas {
            return ArithOutcome::Exists;
        }
        let Some(current) = current else {
            return ArithOutcome::NonNumeric;
        };
        let class = shard.part_of_item(h);
        let value = match delta {
            Delta::Incr(d) => {
                shard.class_counters_mut(class).incr_hits += 1;
                current.wrapping_add(d)
            }
            Delta::Decr(d) => {
                shard.class_counters_mut(class).decr_hits += 1;
                current.saturating_sub(d)
            }
        };
        let mut digits = itoa::Buffer::new();
        let text = digits.format(value).as_bytes();
        if text.len() <= value_len {
            let new_cas = shard.globals().next_cas();
            let mut it = shard.item_mut(h);
            let v = it.value_mut();
            v[..text.len()].copy_from_slice(text);
            v[text.len()..].fill(b' ');
            it.set_cas(new_cas);
            return ArithOutcome::Value {
                value,
                cas: new_cas,
            };
        }
        let (flags, expiry) = {
            let it = shard.item(h);
            (it.client_flags(), it.expiry())
        };
        match shard.write_and_link(key, hash, flags, expiry, &[text], clock) {
            Ok((_, cas)) => ArithOutcome::Value { value, cas },
            Err(_) => ArithOutcome::OutOfMemory,
        }
    }
}

/// memcached's `safe_strtoull` on an item value: optional leading whitespace, decimal digits, then the end or
/// whitespace; a value that looks negative is refused.
pub fn parse_decimal(value: &[u8]) -> Option<u64> {
    let s = value.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = &value[s..];
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    if let Some(b) = rest.get(digits) {
        if !b.is_ascii_whitespace() {
            return None;
        }
    }
    std::str::from_utf8(&rest[..digits]).ok()?.parse().ok()
}
