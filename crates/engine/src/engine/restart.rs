//! Warm restart, the engine's half: walking the live items shard by shard under bounded lock holds
//! ([`Engine::walk_live_items`]), and storing an item with the CAS it was saved with
//! ([`Engine::restore_item`]). The file format and its I/O are the server's.
//!
//! Times stay relative to the engine's clock (`Clock`): a walk reports an item's expiry and last access
//! as the walking clock counts them, and `restore_item` takes them as the restoring clock counts them;
//! the caller converts between the two (`Clock::unix_time`, `Clock::relative`) through the wall clock.
//!
//! Invariants: one call of `walk_live_items` holds one shard lock and inspects at most `max_chunks`
//! chunks; a walk with no concurrent writes reports every live item exactly once (items stored,
//! deleted or moved while it runs may be reported or not). After `restore_item` every new CAS is larger
//! than the restored one.

use super::Engine;
use crate::item::{bits, Item, ItemMut};
use crate::shard::{hash_key, AllocError, WalkPosition};
use crate::tenant::Key;
use crate::Clock;

/// Where a walk over the live items stands; [`ItemCursor::default`] starts at the first shard.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemCursor {
    shard: usize,
    at: WalkPosition,
    done: bool,
}

impl ItemCursor {
    /// Whether every shard has been walked.
    pub fn is_done(&self) -> bool {
        self.done
    }
}

/// The item bits a restart keeps: everything a client can observe; not the list states.
const RESTORED_BITS: u8 = bits::FETCHED | bits::STALE | bits::TOKEN_SENT | bits::KEY_BINARY;

/// Meta-protocol marks an item keeps across a restart: read since stored, stale, win token sent, key
/// sent in base64. Their bit values are stable (a restart file stores them). Only `RESTORED_BITS`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ItemMarks(u8);

impl ItemMarks {
    /// The marks as stored (`crate::item::bits` values, list-state bits masked out).
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Marks from stored bits; unknown bits are dropped.
    pub fn from_bits(bits: u8) -> ItemMarks {
        ItemMarks(bits & RESTORED_BITS)
    }
}

/// One live item as a warm restart saves and restores it. Times are relative seconds on the clock of
/// the engine call that reports or takes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SavedItem<'a> {
    /// Its tenant and key.
    pub key: Key<'a>,
    /// The value, without its CRLF.
    pub value: &'a [u8],
    /// The client's opaque flags.
    pub client_flags: u32,
    /// Relative expiry; 0 never expires.
    pub expiry: u32,
    /// Relative time of its last access.
    pub atime: u32,
    /// Its CAS (0 under `-C`).
    pub cas: u64,
    /// Its meta-protocol marks.
    pub marks: ItemMarks,
}

impl<'a> SavedItem<'a> {
    /// A linked item as a walk of either layout reports it, read where it is stored.
    pub(crate) fn of(it: Item<'a>) -> SavedItem<'a> {
        SavedItem {
            key: it.tenant_key(),
            value: it.value(),
            client_flags: it.client_flags(),
            expiry: it.expiry(),
            atime: it.atime(),
            cas: it.cas(),
            marks: ItemMarks::from_bits(it.bits()),
        }
    }

    /// Writes this item over `it`, a place of either layout just allocated for it: key, value, flags,
    /// times and marks. Not the CAS, which the layout sets as it links the item.
    pub(crate) fn write_to(&self, mut it: ItemMut<'_>) {
        it.init(
            self.key,
            self.client_flags,
            self.expiry,
            self.atime,
            &[self.value],
        );
        it.insert_bits(self.marks.bits());
    }
}

/// What [`Engine::restore_item`] did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RestoreOutcome {
    /// Stored with its CAS.
    Restored,
    /// Its expiry has passed on the restoring clock: not stored.
    Expired,
    /// Larger than this engine's `-I`: not stored.
    TooLarge,
    /// No memory (eviction off, or nothing to evict): not stored.
    OutOfMemory,
}

impl Engine {
    /// Calls `f` on the live items after `cursor`, in one shard, inspecting at most `max_chunks` chunks
    /// under that shard's lock, and advances the cursor (to the next shard once this one is done).
    /// Returns the items visited. `f` runs under the lock: it should copy, not block.
    pub fn walk_live_items(
        &self,
        cursor: &mut ItemCursor,
        max_chunks: usize,
        clock: Clock,
        mut f: impl FnMut(&SavedItem<'_>),
    ) -> usize {
        let Some(shard) = self.shards.get(cursor.shard) else {
            cursor.done = true;
            return 0;
        };
        let mut visited = 0;
        let next = shard.lock().walk_live(cursor.at, max_chunks, clock, |it| {
            visited += 1;
            f(it);
        });
        match next {
            Some(at) => cursor.at = at,
            None => {
                cursor.shard += 1;
                cursor.at = WalkPosition::default();
                cursor.done = cursor.shard >= self.shards.len();
            }
        }
        visited
    }

    /// Stores a saved item under its key (replacing any), with its CAS, flags, expiry, access time and
    /// marks, and raises the CAS counter above its CAS. Under `-C` the item gets CAS 0. An access time
    /// after `clock.now` is taken as `clock.now`.
    pub fn restore_item(&self, item: &SavedItem<'_>, clock: Clock) -> RestoreOutcome {
        if clock.is_expired(item.expiry) {
            return RestoreOutcome::Expired;
        }
        let cas = if self.config.use_cas { item.cas } else { 0 };
        let hash = hash_key(item.key);
        let adjusted = SavedItem {
            atime: item.atime.clamp(1, clock.now),
            cas,
            ..*item
        };
        let result = self.shard_for(hash).lock().restore(&adjusted, hash, clock);
        match result {
            Ok(()) => {
                self.globals.raise_cas_above(cas);
                RestoreOutcome::Restored
            }
            Err(AllocError::TooLarge) => RestoreOutcome::TooLarge,
            Err(AllocError::OutOfMemory) => RestoreOutcome::OutOfMemory,
        }
    }
}
