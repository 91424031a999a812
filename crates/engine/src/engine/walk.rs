//! Item walks: visiting the linked items of every shard in bounded batches while the cache keeps
//! serving, for `lru_crawler metadump`, `stats cachedump` and the LRU crawler.
//!
//! A walk steps through each shard's hash index (`shard::KeyIndex`), one bucket after another, shard
//! after shard. Each call takes one shard lock, inspects at most `max_slots` buckets, copies out what
//! it found ([`Engine::walk_items`]) or unlinks the dead items it found ([`Engine::crawl_expired`]),
//! and returns with the lock released; the [`WalkCursor`] says where to resume. No lock is held
//! between calls, so nothing the caller does with a batch (formatting, writing to a socket, sleeping)
//! holds up a shard.
//!
//! Why the index and not the pages or segments: an entry stays in its bucket for as long as its item
//! stays linked, whatever happens to the item's memory — a page move relocates it into another chunk
//! and the log's cleaner into another segment, and both rewrite the entry where it is. Only a rehash
//! of the table (it grew, or was rehashed in place to clear tombstones) moves entries; the index
//! counts the insertions that may rehash (`KeyIndex::layout_epoch`), and a walk that finds the epoch
//! changed since its last batch in that shard starts the shard again from its first bucket.
//!
//! **The guarantee.** Every item that stays linked from a walk's first call to its last is reported
//! (or inspected, by a crawl) at least once: whether it is read, touched, bumped in its LRU or
//! relocated by a page move or the cleaner meanwhile. Two exceptions, both documented here rather
//! than hidden: a shard whose index was rehashed while it was being walked is walked again from the
//! start, so items of it may be reported twice; and after [`MAX_SHARD_RESTARTS`] such restarts in one
//! shard the walk goes on where it was instead (so that a shard whose index keeps growing under heavy
//! insertion cannot stall the walk for good), and then items of that shard may be missed. Items stored,
//! replaced (a `set` of an existing key links a new item), deleted, evicted or expired during the walk
//! may or may not be reported. Expired and flushed items are never reported; a walk never returns
//! freed memory, since everything it reports is copied out of a linked item under the shard lock.
//!
//! Invariants: one call holds one shard lock and inspects at most `max_slots` buckets (at least one);
//! the cursor only moves forward, except for the restarts above; a finished cursor stays finished.

use super::Engine;
use crate::geometry::ClassId;
use crate::item::bits;
use crate::layout::AnyShard;
use crate::shard::hash_key;
use crate::tenant::TenantId;
use crate::Clock;

/// Restarts of one shard's walk after its index was rehashed under it, before the walk goes on
/// without restarting (see the module's guarantee). A table grows by doubling, so a shard that is
/// filling restarts at most a few times; this bound is for one that keeps rehashing.
pub const MAX_SHARD_RESTARTS: u32 = 8;

/// Class ids a walk or a crawl covers: memcached's class numbers 1 to 63, one bit each. A set may name
/// classes the engine does not have (memcached accepts any id below 64); they hold no items.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ClassSet(u64);

impl ClassSet {
    /// Every class.
    pub const ALL: ClassSet = ClassSet(!1);
    /// No class.
    pub const NONE: ClassSet = ClassSet(0);
    /// The largest class number a set can hold (memcached's `MAX_NUMBER_OF_SLAB_CLASSES - 1`).
    pub const MAX_CLASS: u8 = 63;

    /// This set and class `id`; ids outside `1..=63` are ignored.
    pub fn with(self, id: u8) -> ClassSet {
        if (1..=Self::MAX_CLASS).contains(&id) {
            ClassSet(self.0 | 1 << id)
        } else {
            self
        }
    }

    /// Whether `class` is in the set.
    #[inline]
    pub fn contains(self, class: ClassId) -> bool {
        class.0 <= Self::MAX_CLASS && self.0 & 1 << class.0 != 0
    }
}

/// Which items a walk reports.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WalkFilter {
    /// Only this tenant's items (a tenant's connection), or every tenant's (an operator).
    pub tenant: Option<TenantId>,
    /// Only items of these classes (the log layout files every item under class 1).
    pub classes: ClassSet,
}

impl WalkFilter {
    /// Every live item.
    pub const ALL: WalkFilter = WalkFilter {
        tenant: None,
        classes: ClassSet::ALL,
    };

    fn accepts(&self, tenant: TenantId, class: ClassId) -> bool {
        self.tenant.is_none_or(|t| t == tenant) && self.classes.contains(class)
    }
}

/// Where a walk stands; `WalkCursor::default()` starts one at the first bucket of the first shard.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WalkCursor {
    shard: usize,
    bucket: usize,
    /// The shard index's layout epoch the bucket position refers to.
    epoch: u64,
    /// Restarts of the current shard (see [`MAX_SHARD_RESTARTS`]).
    shard_restarts: u32,
    /// Restarts over the whole walk, for tests and reports.
    total_restarts: u32,
    done: bool,
}

impl WalkCursor {
    /// Whether every shard has been walked.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// How many times a shard's walk started again because its index was rehashed under it.
    pub fn restarts(&self) -> u32 {
        self.total_restarts
    }
}

/// One item as a walk copied it out (its key is in the batch's key bytes).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct CopiedItem {
    key_at: usize,
    key_len: usize,
    tenant: TenantId,
    key_binary: bool,
    expiry: u32,
    atime: u32,
    cas: u64,
    fetched: bool,
    class: ClassId,
    total_bytes: usize,
    value_len: usize,
}

/// One reported item, borrowed from its [`ItemBatch`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WalkedItem<'a> {
    /// The key as the client sent it.
    pub key: &'a [u8],
    /// The tenant whose namespace holds it.
    pub tenant: TenantId,
    /// The key arrived base64-encoded (meta `b`).
    pub key_binary: bool,
    /// Relative expiry on the engine's clock; 0 never expires.
    pub expiry: u32,
    /// Relative time of its last access on the engine's clock.
    pub atime: u32,
    /// Its CAS (0 under `-C`).
    pub cas: u64,
    /// Read since it was stored.
    pub fetched: bool,
    /// Its slab class (class 1 in the log layout).
    pub class: ClassId,
    /// Its size by the engine's item accounting (meta `me`'s `size=`, memcached's `ITEM_ntotal` under
    /// memcached's accounting).
    pub total_bytes: usize,
    /// Bytes of its value (memcached's `nbytes - 2`).
    pub value_len: usize,
}

/// What one [`Engine::walk_items`] call copied out: reused from call to call, so a walk allocates
/// only while its batches grow.
#[derive(Default, Debug)]
pub struct ItemBatch {
    items: Vec<CopiedItem>,
    keys: Vec<u8>,
}

impl ItemBatch {
    /// An empty batch.
    pub fn new() -> ItemBatch {
        ItemBatch::default()
    }

    /// Items in the batch.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the batch holds no item.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items, in walk order.
    pub fn iter(&self) -> impl Iterator<Item = WalkedItem<'_>> + '_ {
        self.items.iter().map(|c| WalkedItem {
            key: &self.keys[c.key_at..c.key_at + c.key_len],
            tenant: c.tenant,
            key_binary: c.key_binary,
            expiry: c.expiry,
            atime: c.atime,
            cas: c.cas,
            fetched: c.fetched,
            class: c.class,
            total_bytes: c.total_bytes,
            value_len: c.value_len,
        })
    }

    fn clear(&mut self) {
        self.items.clear();
        self.keys.clear();
    }
}

/// How many items of each class a crawl may still inspect (memcached's `lru_crawler tocrawl`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrawlQuota {
    /// By class number; 0 for a class outside the crawl or whose quota is spent.
    left: [u64; 64],
}

impl CrawlQuota {
    /// Items of `classes`, at most `per_class` of each (`None`: no limit).
    pub fn new(classes: ClassSet, per_class: Option<u64>) -> CrawlQuota {
        let mut left = [0; 64];
        for (id, slot) in left.iter_mut().enumerate() {
            if classes.contains(ClassId(id as u8)) {
                *slot = per_class.unwrap_or(u64::MAX);
            }
        }
        CrawlQuota { left }
    }

    /// Whether no class may be inspected any more: the crawl can stop.
    pub fn is_spent(&self) -> bool {
        self.left.iter().all(|&n| n == 0)
    }

    /// Takes one inspection of `class`; false if the class is outside the crawl or spent.
    fn take(&mut self, class: ClassId) -> bool {
        match self.left.get_mut(class.0 as usize) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }
}

/// What one [`Engine::crawl_expired`] call did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct CrawlBatch {
    /// Items inspected (memcached's `crawler_items_checked`).
    pub checked: u64,
    /// Expired or flushed items unlinked (memcached's `crawler_reclaimed`).
    pub reclaimed: u64,
}

impl Engine {
    /// Copies into `batch` (emptied first) the live items `filter` accepts from the buckets after
    /// `cursor`, in one shard, inspecting at most `max_slots` buckets under that shard's lock, and
    /// advances the cursor (to the next shard once this one is done). Does nothing once the cursor is
    /// done. See the module notes for what a whole walk reports.
    pub fn walk_items(
        &self,
        cursor: &mut WalkCursor,
        max_slots: usize,
        filter: WalkFilter,
        clock: Clock,
        batch: &mut ItemBatch,
    ) {
        batch.clear();
        self.walk_batch(cursor, max_slots, |shard, buckets| {
            for bucket in buckets {
                let Some(h) = shard.index().handle_at(bucket) else {
                    continue;
                };
                let it = shard.item(h);
                let class = shard.class_of_item(h);
                if !filter.accepts(it.tenant(), class)
                    || shard.globals().dead_reason(it, clock).is_some()
                {
                    continue;
                }
                let key = it.key();
                batch.items.push(CopiedItem {
                    key_at: batch.keys.len(),
                    key_len: key.len(),
                    tenant: it.tenant(),
                    key_binary: it.has(bits::KEY_BINARY),
                    expiry: it.expiry(),
                    atime: it.atime(),
                    cas: it.cas(),
                    fetched: it.has(bits::FETCHED),
                    class,
                    total_bytes: shard.geometry().item_total_bytes(
                        it.key_len(),
                        it.client_flags(),
                        it.value_len(),
                    ),
                    value_len: it.value_len(),
                });
                batch.keys.extend_from_slice(key);
            }
        });
    }

    /// The LRU crawler's step: in the buckets after `cursor`, in one shard, inspecting at most
    /// `max_slots` buckets under that shard's lock, inspects each item of a class `quota` still admits
    /// (taking one from its quota) and unlinks it if it has expired or was flushed; advances the
    /// cursor. Counts each class's inspections and removals as memcached's crawler does
    /// (`crawler_items_checked`, `crawler_reclaimed`).
    pub fn crawl_expired(
        &self,
        cursor: &mut WalkCursor,
        max_slots: usize,
        clock: Clock,
        quota: &mut CrawlQuota,
    ) -> CrawlBatch {
        self.walk_batch(cursor, max_slots, |shard, buckets| {
            let mut done = CrawlBatch::default();
            for bucket in buckets {
                let Some(h) = shard.index().handle_at(bucket) else {
                    continue;
                };
                if !quota.take(shard.class_of_item(h)) {
                    continue;
                }
                let dead = shard.globals().dead_reason(shard.item(h), clock).is_some();
                let part = shard.part_of_item(h);
                let counters = shard.class_counters_mut(part);
                counters.crawler_items_checked += 1;
                done.checked += 1;
                if dead {
                    counters.crawler_reclaimed += 1;
                    done.reclaimed += 1;
                    let hash = hash_key(shard.item(h).tenant_key());
                    // Unlinking empties the bucket and moves no other entry.
                    shard.unlink(h, hash);
                }
            }
            shard.counters().expired_reaped += done.reclaimed;
            done
        })
        .unwrap_or_default()
    }

    /// Runs `step` on the shard the cursor is in, over the next at most `max_slots` bucket positions,
    /// under that shard's lock, and advances the cursor; `None` once the walk is done. Restarts the
    /// shard when its index was rehashed since the cursor's last batch there (see the module notes).
    fn walk_batch<R>(
        &self,
        cursor: &mut WalkCursor,
        max_slots: usize,
        step: impl FnOnce(&mut AnyShard, std::ops::Range<usize>) -> R,
    ) -> Option<R> {
        if cursor.done {
            return None;
        }
        let Some(lock) = self.shards.get(cursor.shard) else {
            cursor.done = true;
            return None;
        };
        let mut shard = lock.lock();
        let (buckets, epoch) = (shard.index().bucket_count(), shard.index().layout_epoch());
        if cursor.bucket > 0 && epoch != cursor.epoch && cursor.shard_restarts < MAX_SHARD_RESTARTS
        {
            cursor.bucket = 0;
            cursor.shard_restarts += 1;
            cursor.total_restarts += 1;
        }
        cursor.epoch = epoch;
        let start = cursor.bucket.min(buckets);
        let end = start.saturating_add(max_slots.max(1)).min(buckets);
        let result = step(&mut shard, start..end);
        drop(shard);
        if end >= buckets {
            cursor.shard += 1;
            cursor.bucket = 0;
            cursor.shard_restarts = 0;
            cursor.done = cursor.shard >= self.shards.len();
        } else {
            cursor.bucket = end;
        }
        Some(result)
    }
}
