//! What callers see of an item while its shard is locked: `ItemView` (read-only, for get-type commands)
//! and `Entry` (read-modify-write of one key, for the meta protocol), plus the statistics each counts.

use crate::geometry::ClassId;
use crate::item::{bits, Item};
use crate::layout::AnyShard;
use crate::shard::{AllocError, Miss};
use crate::tenant::{Key, TenantId};
use crate::Clock;

/// A read-only view of a live item, handed to callbacks under the shard lock.
#[derive(Copy, Clone)]
pub struct ItemView<'a> {
    pub(super) item: Item<'a>,
    pub(super) now: u32,
}

impl<'a> ItemView<'a> {
    /// The key as the client sent it: nothing of its tenant.
    pub fn key(&self) -> &'a [u8] {
        self.item.key()
    }
    /// The value, without its CRLF.
    pub fn value(&self) -> &'a [u8] {
        self.item.value()
    }
    /// The client's opaque flags.
    pub fn client_flags(&self) -> u32 {
        self.item.client_flags()
    }
    /// The item's CAS (0 under `-C`).
    pub fn cas(&self) -> u64 {
        self.item.cas()
    }
    /// Seconds until expiry, or `None` if it never expires.
    pub fn ttl_secs(&self) -> Option<i64> {
        match self.item.expiry() {
            0 => None,
            e => Some(e as i64 - self.now as i64),
        }
    }
    /// Seconds since the last access.
    pub fn idle_secs(&self) -> u32 {
        self.now.saturating_sub(self.item.atime())
    }
    /// Whether it was read since it was stored.
    pub fn fetched(&self) -> bool {
        self.item.has(bits::FETCHED)
    }
    /// Whether it was invalidated (meta `md I`, `ms I`) and is served as stale.
    pub fn stale(&self) -> bool {
        self.item.has(bits::STALE)
    }
    /// Whether a meta client already got the win token to recache it.
    pub fn token_sent(&self) -> bool {
        self.item.has(bits::TOKEN_SENT)
    }
    /// Whether the key was stored base64-encoded (meta `b`).
    pub fn key_binary(&self) -> bool {
        self.item.has(bits::KEY_BINARY)
    }
}

/// A key's slot under its shard lock, for commands that read and modify in one step (the meta protocol).
pub struct Entry<'s> {
    pub(super) shard: &'s mut AnyShard,
    pub(super) key: Key<'s>,
    pub(super) hash: u64,
    pub(super) clock: Clock,
    pub(super) handle: Option<u32>,
    pub(super) miss: Miss,
}

impl Entry<'_> {
    /// The live item, if any.
    pub fn item(&self) -> Option<ItemView<'_>> {
        self.handle.map(|h| ItemView {
            item: self.shard.item(h),
            now: self.clock.now,
        })
    }

    /// Whether a live item has the key.
    pub fn is_occupied(&self) -> bool {
        self.handle.is_some()
    }

    /// Records a read: LRU head, access time, fetched bit.
    pub fn bump(&mut self) {
        if let Some(h) = self.handle {
            self.shard.bump(h, self.hash, self.clock.now);
        }
    }

    /// Sets the expiry from a protocol exptime.
    pub fn set_exptime(&mut self, exptime: i64) {
        if let Some(h) = self.handle {
            let expiry = self.clock.expiry(exptime);
            self.shard.item_mut(h).set_expiry(expiry);
        }
    }

    /// Sets (`on`) or clears the meta bits `STALE` / `TOKEN_SENT` / `FETCHED` named by `ItemFlag`.
    pub fn set_flag(&mut self, flag: ItemFlag, on: bool) {
        if let Some(h) = self.handle {
            let bit = flag.bit();
            let mut it = self.shard.item_mut(h);
            if on {
                it.insert_bits(bit)
            } else {
                it.remove_bits(bit)
            }
        }
    }

    /// Gives the item a fresh CAS value and returns it.
    pub fn renew_cas(&mut self) -> u64 {
        match self.handle {
            Some(h) => {
                let cas = self.shard.globals().next_cas();
                self.shard.item_mut(h).set_cas(cas);
                cas
            }
            None => 0,
        }
    }

    /// Unlinks the item. Returns whether there was one.
    pub fn remove(&mut self) -> bool {
        match self.handle.take() {
            Some(h) => {
                self.shard.unlink(h, self.hash);
                true
            }
            None => false,
        }
    }

    /// Stores a new item under this key (replacing any), returning its CAS.
    pub fn insert(
        &mut self,
        client_flags: u32,
        exptime: i64,
        value: &[u8],
    ) -> Result<u64, AllocError> {
        let expiry = self.clock.expiry(exptime);
        let (h, cas) = self.shard.write_and_link(
            self.key,
            self.hash,
            client_flags,
            expiry,
            &[value],
            self.clock,
        )?;
        self.handle = Some(h);
        Ok(cas)
    }

    /// Why the lookup found nothing (absent, expired, flushed); meaningful when not occupied.
    pub fn miss_reason(&self) -> Miss {
        self.miss
    }

    /// Counts a get-type lookup in the statistics (hit if occupied).
    pub fn count_get(&mut self) {
        count_get(
            self.shard,
            self.key.tenant,
            self.hash,
            self.handle,
            self.miss,
        );
    }

    /// Counts a touch in the statistics.
    pub fn count_touch(&mut self) {
        self.shard.counters().touch_cmds += 1;
        match self.handle {
            Some(h) => {
                let class = self.shard.part_of_item(h);
                self.shard.class_counters_mut(class).touch_hits += 1;
            }
            None => self.shard.counters().touch_misses += 1,
        }
    }

    /// Counts a delete in the statistics.
    pub fn count_delete(&mut self) {
        match self.handle {
            Some(h) => {
                let class = self.shard.part_of_item(h);
                self.shard.class_counters_mut(class).delete_hits += 1;
            }
            None => self.shard.counters().delete_misses += 1,
        }
    }

    /// The slab class of the item (meta `me`).
    pub fn class(&self) -> Option<ClassId> {
        self.handle.map(|h| self.shard.class_of_item(h))
    }

    /// The item's accounted size (meta `me` `size=`): memcached's under `ItemAccounting::Memcached`, the
    /// bytes it occupies under `Compact`; the size its class (`cls=`) was chosen by.
    pub fn total_bytes(&self) -> Option<usize> {
        self.handle.map(|h| {
            let it = self.shard.item(h);
            self.shard
                .geometry()
                .item_total_bytes(it.key_len(), it.client_flags(), it.value_len())
        })
    }
}

/// Item bits the meta protocol reads and writes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ItemFlag {
    /// Read since it was stored (`bits::FETCHED`).
    Fetched,
    /// Invalidated and served as stale (`bits::STALE`).
    Stale,
    /// A recache win token went out (`bits::TOKEN_SENT`).
    TokenSent,
    /// The key arrived base64-encoded (meta `b`).
    KeyBinary,
}

impl ItemFlag {
    fn bit(self) -> u8 {
        match self {
            ItemFlag::Fetched => bits::FETCHED,
            ItemFlag::Stale => bits::STALE,
            ItemFlag::TokenSent => bits::TOKEN_SENT,
            ItemFlag::KeyBinary => bits::KEY_BINARY,
        }
    }
}

pub(super) fn count_get(
    shard: &mut AnyShard,
    tenant: TenantId,
    hash: u64,
    handle: Option<u32>,
    miss: Miss,
) {
    shard.counters().get_cmds += 1;
    match handle {
        Some(h) => {
            let class = shard.part_of_item(h);
            shard.class_counters_mut(class).get_hits += 1;
            shard.tenant_counters_mut(tenant).get_hits += 1;
        }
        None => {
            shard.counters().get_misses += 1;
            shard.tenant_counters_mut(tenant).get_misses += 1;
            shard.note_get_miss(tenant, hash);
            match miss {
                Miss::Expired => shard.counters().get_expired += 1,
                Miss::Flushed => shard.counters().get_flushed += 1,
                Miss::Absent => {}
            }
        }
    }
}
