//! The shard's hash index (`KeyIndex`, the log layout's too): one `u64` per linked item in a
//! `hashbrown::HashTable`, holding `tag << 32 | handle` where `tag` is the low 32 bits of the key's hash
//! (`Key::hash`). A handle means whatever the layout makes of it (a chunk, a record).
//!
//! Invariants:
//! - Exactly the linked items are indexed, each once; an entry's handle points at a chunk whose item has
//!   that key (a lookup compares the tag first, then the tenant and key bytes in the item).
//! - The table probes with `spread(tag)`, so resizing rehashes from the entries alone and never touches
//!   item memory.
//! - An entry stays in its bucket until it is removed, or until an insertion rehashes the table (grows
//!   it, or rehashes it in place to clear tombstones); `repoint` rewrites it where it is. Every
//!   insertion that may rehash first bumps `layout_epoch`, so an item walk (`crate::engine::walk`)
//!   that resumes at a bucket index knows whether the index still means what it meant.

use hashbrown::HashTable;

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

/// The table's entry for handle `h` of a key whose hash has low half `tag`.
#[inline]
fn entry_of(tag: u32, h: u32) -> u64 {
    (tag as u64) << 32 | h as u64
}

/// The index of linked items by key hash; the layout says which handle holds which key.
#[derive(Default)]
pub(crate) struct KeyIndex {
    table: HashTable<u64>,
    /// Bumped before every insertion that may move entries between buckets (see the invariants).
    layout_epoch: u64,
}

impl KeyIndex {
    /// The handle indexed under `hash` whose item `is_key` accepts (the tag is compared first).
    #[inline]
    pub(crate) fn find(&self, hash: u64, is_key: impl Fn(u32) -> bool) -> Option<u32> {
        let tag = hash as u32;
        self.table
            .find(spread(tag), |&e| {
                (e >> 32) as u32 == tag && is_key(e as u32)
            })
            .map(|&e| e as u32)
    }

    #[inline]
    pub(crate) fn insert(&mut self, hash: u64, h: u32) {
        // hashbrown rehashes (grows, or rehashes in place) only on an insertion that finds no growth
        // left; counting every such insertion over-approximates by the few that reuse a tombstone.
        if self.table.len() == self.table.capacity() {
            self.layout_epoch += 1;
        }
        let tag = hash as u32;
        self.table
            .insert_unique(spread(tag), entry_of(tag, h), |&e| spread((e >> 32) as u32));
    }

    /// Points the entry of handle `old` (key hash `hash`) to `new` (same key, relocated).
    ///
    /// The entry is matched whole (tag and handle), so this stays right while a relocation is under way
    /// and some new handles equal old handles of entries not yet repointed: an entry of another key with
    /// handle `old` has another tag, and one with the same tag and handle is the same value, which it
    /// does not matter which of the two is rewritten.
    pub(crate) fn repoint(&mut self, hash: u64, old: u32, new: u32) {
        let tag = hash as u32;
        let entry = self
            .table
            .find_mut(spread(tag), |&e| e == entry_of(tag, old))
            .expect("linked item is indexed");
        *entry = entry_of(tag, new);
    }

    /// Removes the entry of handle `h` (key hash `hash`).
    pub(crate) fn remove(&mut self, hash: u64, h: u32) {
        let tag = hash as u32;
        match self
            .table
            .find_entry(spread(tag), |&e| e == entry_of(tag, h))
        {
            Ok(entry) => {
                entry.remove();
            }
            Err(_) => unreachable!("linked item is indexed"),
        }
    }

    /// Linked items.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Buckets of the table: the positions an item walk steps through.
    pub(crate) fn bucket_count(&self) -> usize {
        self.table.num_buckets()
    }

    /// The handle indexed in bucket `bucket`, if that bucket holds an entry.
    #[inline]
    pub(crate) fn handle_at(&self, bucket: usize) -> Option<u32> {
        self.table.get_bucket(bucket).map(|&e| e as u32)
    }

    /// Changes whenever entries may have moved between buckets (see the invariants).
    pub(crate) fn layout_epoch(&self) -> u64 {
        self.layout_epoch
    }
}

impl Shard {
    #[inline]
    pub(super) fn index_find(&self, key: Key<'_>, hash: u64) -> Option<u32> {
        let (pages, bits) = (&self.pages, self.chunk_bits);
        self.index
            .find(hash, |h| Item(chunk_of(pages, bits, h)).tenant_key() == key)
    }

    /// Points the index entry of the item at `old` to `new` (same key, relocated or replaced).
    pub(super) fn index_repoint(&mut self, old: u32, new: u32) {
        let hash = hash_key(self.item(old).tenant_key());
        self.index.repoint(hash, old, new);
    }

    pub(super) fn index_remove(&mut self, h: u32) {
        let hash = hash_key(self.item(h).tenant_key());
        self.index.remove(hash, h);
    }
}
