//! The shard's hash index: one `u64` per linked item in a `hashbrown::HashTable`, holding
//! `tag << 32 | handle` where `tag` is the low 32 bits of the key's hash (`Key::hash`).
//!
//! Invariants:
//! - Exactly the linked items are indexed, each once; an entry's handle points at a chunk whose item has
//!   that key (a lookup compares the tag first, then the tenant and key bytes in the item).
//! - The table probes with `spread(tag)`, so resizing rehashes from the entries alone and never touches
//!   item memory.

use super::{chunk_of, Shard};
use crate::item::Item;
use crate::tenant::Key;

/// A 64-bit hash of a key in its tenant (`Key::hash`). Shards use the high half, the index the low half,
/// profilers the whole.
#[inline]
pub(crate) fn hash_key(key: Key<'_>) -> u64 {
    key.hash()
}

/// The index stores `tag << 32 | handle` where `tag` is the low 32 bits of the key hash; this spreads a tag
/// into the 64-bit hash the table probes with, so resizing never touches item memory.
#[inline]
fn spread(tag: u32) -> u64 {
    (tag as u64 | 1 << 32).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl Shard {
    #[inline]
    pub(super) fn index_find(&self, key: Key<'_>, hash: u64) -> Option<u32> {
        let tag = hash as u32;
        let (pages, bits) = (&self.pages, self.chunk_bits);
        self.index
            .find(spread(tag), |&e| {
                (e >> 32) as u32 == tag && Item(chunk_of(pages, bits, e as u32)).tenant_key() == key
            })
            .map(|&e| e as u32)
    }

    #[inline]
    pub(super) fn index_insert(&mut self, hash: u64, h: u32) {
        let tag = hash as u32;
        self.index
            .insert_unique(spread(tag), (tag as u64) << 32 | h as u64, |&e| {
                spread((e >> 32) as u32)
            });
    }

    /// Points the index entry of the item at `old` to `new` (same key, relocated or replaced).
    pub(super) fn index_repoint(&mut self, old: u32, new: u32) {
        let hash = hash_key(self.item(old).tenant_key());
        let tag = hash as u32;
        let entry = self
            .index
            .find_mut(spread(tag), |&e| e as u32 == old)
            .expect("linked item is indexed");
        *entry = (tag as u64) << 32 | new as u64;
    }

    pub(super) fn index_remove(&mut self, h: u32) {
        let hash = hash_key(self.item(h).tenant_key());
        let tag = hash as u32;
        match self.index.find_entry(spread(tag), |&e| e as u32 == h) {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => unreachable!("linked item is indexed"),
        }
    }
}
