//! Storage commands: set, add, replace, append, prepend and cas (and meta `ms`), with memcached
//! 1.6.18's `do_store_item` rules.
//!
//! Invariants: one store holds one shard lock from lookup to link, so it is atomic for its key; it
//! decides everything it writes (flags, expiry, the old value to join, meta bits) before allocating,
//! then writes once. A store that fails leaves the old item as it was, except a too-large `set`, which
//! drops it as memcached does.

use super::Engine;
use crate::item::bits;
use crate::shard::{hash_key, AllocError};
use crate::tenant::Key;
use crate::Clock;

/// What a storage command asks for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreMode {
    /// Store unconditionally.
    Set,
    /// Store only if no live item has the key.
    Add,
    /// Store only if a live item has the key.
    Replace,
    /// Add the value after the live item's (keeping its flags and expiry).
    Append,
    /// Add the value before the live item's (keeping its flags and expiry).
    Prepend,
    /// Store only if the item's CAS equals `StoreArgs::cas`.
    Cas,
}

/// One storage request.
#[derive(Copy, Clone, Debug)]
pub struct StoreArgs<'a> {
    /// Which storage command.
    pub mode: StoreMode,
    /// The tenant and key.
    pub key: Key<'a>,
    /// The client's opaque 32-bit flags, returned with the value.
    pub client_flags: u32,
    /// Protocol exptime (relative seconds, absolute Unix time, 0 = never, negative = already expired).
    pub exptime: i64,
    /// The data block, without its CRLF.
    pub value: &'a [u8],
    /// CAS to compare: required for `Cas`; for `Append`/`Prepend`/`Set` a non-zero value is compared too
    /// (meta `ms C`).
    pub cas: u64,
    /// Meta `ms I`: a CAS older than the item's still stores, marking the item stale.
    pub invalidate: bool,
    /// Meta `b`: the key arrived base64-encoded; remembered on the item so replies echo it that way.
    pub key_binary: bool,
}

impl<'a> StoreArgs<'a> {
    /// A plain `set` of `value` under `key`: no flags, no expiry, no CAS. Other requests start from it
    /// with struct update syntax (`StoreArgs { mode: StoreMode::Add, ..StoreArgs::set(key, value) }`).
    pub fn set(key: Key<'a>, value: &'a [u8]) -> StoreArgs<'a> {
        StoreArgs {
            mode: StoreMode::Set,
            key,
            client_flags: 0,
            exptime: 0,
            value,
            cas: 0,
            invalidate: false,
            key_binary: false,
        }
    }
}

/// The result of a store, as memcached replies it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreOutcome {
    /// Stored (`STORED`).
    Stored {
        /// The new item's CAS.
        cas: u64,
    },
    /// The mode's condition failed (`NOT_STORED`).
    NotStored,
    /// CAS mismatch.
    Exists,
    /// `cas` on a missing item.
    NotFound,
    /// Larger than `-I` (`SERVER_ERROR object too large for cache`).
    TooLarge,
    /// No chunk could be found (`SERVER_ERROR out of memory storing object`).
    OutOfMemory,
}

impl Engine {
    /// set/add/replace/append/prepend/cas, with memcached's rules.
    pub fn store(&self, args: &StoreArgs<'_>, clock: Clock) -> StoreOutcome {
        let outcome = self.store_locked(args, clock);
        let whole = matches!(
            args.mode,
            StoreMode::Set | StoreMode::Add | StoreMode::Replace | StoreMode::Cas
        );
        if let (Some(c), StoreOutcome::Stored { .. }, true) = (&self.chooser, &outcome, whole) {
            if c.samples(hash_key(args.key)) {
                c.set(args.key, args.client_flags, args.value.len(), clock);
            }
        }
        outcome
    }

    /// `store` under the key's shard lock.
    fn store_locked(&self, args: &StoreArgs<'_>, clock: Clock) -> StoreOutcome {
        let class =
            self.geometry
                .class_for_item(args.key.bytes.len(), args.client_flags, args.value.len());
        let Some(class) = class else {
            if args.mode == StoreMode::Set {
                // memcached drops the old value so that a failed set never leaves stale data.
                self.delete(args.key, clock);
            }
            return StoreOutcome::TooLarge;
        };
        let hash = hash_key(args.key);
        let mut shard = self.shard_for(hash).lock();
        let part = shard.part_for(args.key.tenant, class);
        shard.class_counters_mut(part).set_cmds += 1;
        shard.tenant_counters_mut(args.key.tenant).set_cmds += 1;
        let old = shard.find(args.key, hash, clock).ok();
        // What to write: flags, expiry, the old value to join (append/prepend) and meta bits to set.
        let mut flags = args.client_flags;
        let mut expiry = clock.expiry(args.exptime);
        let mut joined_with: Option<Vec<u8>> = None;
        let mut mark = 0;
        match (args.mode, old) {
            (StoreMode::Add, Some(old)) => {
                // memcached: add on an existing item fails but promotes it.
                shard.promote(old, hash, clock.now);
                return StoreOutcome::NotStored;
            }
            (StoreMode::Replace | StoreMode::Append | StoreMode::Prepend, None) => {
                return StoreOutcome::NotStored;
            }
            (StoreMode::Cas, None) => {
                shard.counters().cas_misses += 1;
                return StoreOutcome::NotFound;
            }
            (StoreMode::Cas, Some(old)) => {
                let (old_cas, old_expiry, old_bits) = {
                    let it = shard.item(old);
                    (it.cas(), it.expiry(), it.bits())
                };
                let old_class = shard.part_of_item(old);
                // Meta `ms I`: an older CAS replaces the value but keeps the TTL and marks it stale.
                let invalidating = args.cas != old_cas && args.invalidate && args.cas < old_cas;
                if args.cas != old_cas && !invalidating {
                    shard.class_counters_mut(old_class).cas_badval += 1;
                    return StoreOutcome::Exists;
                }
                shard.class_counters_mut(old_class).cas_hits += 1;
                if invalidating {
                    expiry = old_expiry;
                    mark = bits::STALE | (old_bits & bits::TOKEN_SENT);
                }
            }
            (StoreMode::Append | StoreMode::Prepend, Some(old)) => {
                let it = shard.item(old);
                if args.cas != 0 && args.cas != it.cas() {
                    return StoreOutcome::Exists;
                }
                (flags, expiry) = (it.client_flags(), it.expiry());
                let joined_len = it.value().len() + args.value.len();
                if !self
                    .geometry
                    .within_item_limit(args.key.bytes.len(), flags, joined_len)
                {
                    return StoreOutcome::NotStored;
                }
                // The joined value is written from a copy: allocation may evict or move the old item.
                joined_with = Some(it.value().to_vec());
            }
            (StoreMode::Set | StoreMode::Add | StoreMode::Replace, old) => {
                if args.cas != 0 {
                    // Meta `ms C` on set: compare like cas.
                    match old {
                        None => return StoreOutcome::NotFound,
                        Some(old) if shard.item(old).cas() != args.cas => {
                            return StoreOutcome::Exists
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        let parts: [&[u8]; 2] = match &joined_with {
            None => [args.value, &[]],
            Some(old_value) if args.mode == StoreMode::Append => [old_value, args.value],
            Some(old_value) => [args.value, old_value],
        };
        let result = shard.write_and_link(args.key, hash, flags, expiry, &parts, clock);
        if let (Err(_), Some(_)) = (&result, &joined_with) {
            // memcached answers a failed append or prepend NOT_STORED, whatever the reason.
            return StoreOutcome::NotStored;
        }
        if let (Ok((h, _)), true) = (&result, mark != 0) {
            shard.item_mut(*h).insert_bits(mark);
        }
        match result {
            Ok((h, cas)) => {
                if old.is_none() {
                    let class = shard.part_of_item(h);
                    shard.class_counters_mut(class).inserts += 1;
                }
                if args.key_binary {
                    shard.item_mut(h).insert_bits(bits::KEY_BINARY);
                }
                StoreOutcome::Stored { cas }
            }
            Err(AllocError::TooLarge) => StoreOutcome::TooLarge,
            Err(AllocError::OutOfMemory) => StoreOutcome::OutOfMemory,
        }
    }
}
