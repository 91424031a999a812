//! An item's life in a shard: written into a chunk and linked (index, LRU, accounting, a new CAS),
//! found (with lazy expiry and flush), promoted on use, and unlinked back to the free list.
//!
//! Invariants:
//! - `link` and `unlink` keep the index, the partition's LRU and item count, its requested bytes and the
//!   tenant's items and bytes in step: each counts exactly the linked items.
//! - A lookup never returns an expired or flushed item: it unlinks it and reports why (`Miss`).
//! - Every use that counts for the profilers (a hit, a store, `add` on an existing key) is recorded once
//!   in the partition's profiler and its pool's.

use super::{AllocError, Miss, Part, Shard};
use crate::item::bits;
use crate::tenant::Key;
use crate::Clock;

impl Shard {
    /// Links a freshly written chunk: index, LRU head, accounting, a new CAS.
    pub(super) fn link(&mut self, part: Part, hash: u64, h: u32) -> u64 {
        let cas = self.globals.next_cas();
        self.link_with_cas(part, hash, h, cas, true);
        cas
    }

    /// Links a written chunk with a given CAS: index, LRU head, accounting, and (`profile`) one use in
    /// the profilers.
    pub(super) fn link_with_cas(&mut self, part: Part, hash: u64, h: u32, cas: u64, profile: bool) {
        let geometry = self.geometry.clone();
        let (requested, tenant) = {
            let mut it = self.item_mut(h);
            it.set_cas(cas);
            it.insert_bits(bits::LINKED);
            let v = it.view();
            (
                geometry.item_total_bytes(v.key_len(), v.client_flags(), v.value_len()),
                v.tenant(),
            )
        };
        self.meters.count_link(tenant, requested);
        self.index.insert(hash, h);
        self.lru_push_head(part, h);
        if profile {
            self.meters.record_use(part, hash, requested);
        }
        let c = self.part_state(part);
        c.items += 1;
        c.requested_bytes += requested as u64;
    }

    /// Removes a linked item from the index and LRU and frees its chunk.
    pub(crate) fn unlink(&mut self, h: u32) {
        let part = self.part_of(h);
        let (requested, tenant) = {
            let v = self.item(h);
            (
                self.geometry
                    .item_total_bytes(v.key_len(), v.client_flags(), v.value_len()),
                v.tenant(),
            )
        };
        self.meters.count_unlink(tenant, requested);
        self.index_remove(h);
        self.lru_unlink(part, h);
        let c = self.part_state(part);
        c.items -= 1;
        c.requested_bytes -= requested as u64;
        self.free_push(part, h);
    }

    /// Replaces linked `old` by freshly written `new` (same key): `new` takes a new CAS and the LRU head.
    pub(super) fn replace(&mut self, hash: u64, old: u32, new: u32) -> u64 {
        self.unlink(old);
        self.link(self.part_of(new), hash, new)
    }

    pub(super) fn unlink_and_take(&mut self, part: Part, h: u32) -> u32 {
        self.unlink(h);
        self.free_unlink(part, h);
        h
    }

    /// Moves a linked item (of key hash `hash`) to the LRU head and records the access time and the use
    /// in the class profiler, without marking it fetched (memcached's `do_item_update`, used by `add` on an
    /// existing key).
    #[inline]
    pub(crate) fn promote(&mut self, h: u32, hash: u64, now: u32) {
        let part = self.part_of(h);
        if self.parts[part.index()].lru_head != h {
            self.lru_unlink(part, h);
            self.lru_push_head(part, h);
        }
        self.item_mut(h).set_atime(now);
        if self.meters.profiling() {
            let it = self.item(h);
            let size =
                self.geometry
                    .item_total_bytes(it.key_len(), it.client_flags(), it.value_len());
            self.meters.record_use(part, hash, size);
        }
    }

    /// Records a read: LRU head, access time, fetched bit, profiler.
    #[inline]
    pub(crate) fn bump(&mut self, h: u32, hash: u64, now: u32) {
        self.promote(h, hash, now);
        self.item_mut(h).insert_bits(bits::FETCHED);
    }

    /// Finds a live item. Expired and flushed items found on the way are unlinked (lazy expiry).
    #[inline]
    pub(crate) fn find(&mut self, key: Key<'_>, hash: u64, clock: Clock) -> Result<u32, Miss> {
        let h = self.index_find(key, hash).ok_or(Miss::Absent)?;
        if let Some(miss) = self.globals.dead_reason(self.item(h), clock) {
            self.unlink(h);
            return Err(miss);
        }
        Ok(h)
    }

    #[inline]
    pub(super) fn is_dead(&self, h: u32, clock: Clock) -> bool {
        self.globals.dead_reason(self.item(h), clock).is_some()
    }

    /// Writes a new item into a fresh chunk and links it, replacing any item of the same key (looked up after
    /// the allocation, which may have evicted it). Returns the chunk and its CAS.
    pub(crate) fn write_and_link(
        &mut self,
        key: Key<'_>,
        hash: u64,
        client_flags: u32,
        expiry: u32,
        parts: &[&[u8]],
        clock: Clock,
    ) -> Result<(u32, u64), AllocError> {
        let value_len = parts.iter().map(|p| p.len()).sum();
        // `-I` is memcached's limit whatever the accounting; `alloc` only checks the accounted size.
        if !self
            .geometry
            .within_item_limit(key.bytes.len(), client_flags, value_len)
        {
            return Err(AllocError::TooLarge);
        }
        let total = self
            .geometry
            .item_total_bytes(key.bytes.len(), client_flags, value_len);
        // Allocation may evict the old item itself; find it again afterwards.
        let (part, h) = self.alloc(total, key.tenant, clock)?;
        self.item_mut(h)
            .init(key, client_flags, expiry, clock.now, parts);
        let cas = match self.index_find(key, hash) {
            Some(old) => self.replace(hash, old, h),
            None => self.link(part, hash, h),
        };
        Ok((h, cas))
    }
}
