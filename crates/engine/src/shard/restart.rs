//! What a warm restart needs of a shard: a walk over its live items in page order, resumable from a
//! position, and the insertion of an item with the CAS, times and meta bits it was saved with.
//!
//! Invariants:
//! - A walk inspects chunks in `(page slot, chunk index)` order, only carved chunks (a page being carved
//!   is read up to its carve cursor: the bytes past it may be a previous class's stale items), and
//!   reports only items that are linked, unexpired and unflushed. A position stays meaningful across
//!   lock releases: an item that stays where it is while a walk is under way is reported exactly once.
//! - A restored item is linked like a stored one (index, LRU head, accounting) but keeps its saved CAS
//!   and is not fed to the profilers: it is not a request.

use super::Shard;
use crate::item::bits;
use crate::shard::AllocError;
use crate::{Clock, SavedItem};

/// Where a walk of one shard stands: the next chunk to inspect.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct WalkPosition {
    pub slot: u32,
    pub chunk: u32,
}

impl Shard {
    /// Calls `f` on each live item from `from` on, inspecting at most `max_chunks` chunks. Returns where
    /// to resume, or `None` when the shard's last page is done.
    pub(crate) fn walk_live(
        &self,
        from: WalkPosition,
        max_chunks: usize,
        clock: Clock,
        mut f: impl FnMut(&SavedItem<'_>),
    ) -> Option<WalkPosition> {
        let mut at = from;
        let mut budget = max_chunks.max(1);
        while (at.slot as usize) < self.pages.len() {
            let Some(page) = &self.pages[at.slot as usize] else {
                at = WalkPosition {
                    slot: at.slot + 1,
                    chunk: 0,
                };
                continue;
            };
            let carved = match self.parts[page.part.index()].carve {
                Some((slot, next)) if slot == at.slot => next,
                _ => page.links.len() as u32,
            };
            while at.chunk < carved {
                if budget == 0 {
                    return Some(at);
                }
                budget -= 1;
                let h = at.slot << self.chunk_bits | at.chunk;
                at.chunk += 1;
                let it = self.item(h);
                if !it.has(bits::LINKED) || self.is_dead(h, clock) {
                    continue;
                }
                f(&SavedItem::of(it));
            }
            at = WalkPosition {
                slot: at.slot + 1,
                chunk: 0,
            };
        }
        None
    }

    /// Stores a saved item under `hash`, replacing any item of its key: its CAS, expiry, access time and
    /// marks as `item` gives them (the caller has already adjusted them to this engine: CAS 0 under `-C`,
    /// the access time within the clock). Allocation may evict, as a store's does. The caller raises the
    /// CAS counter above `item.cas`.
    pub(crate) fn restore(
        &mut self,
        item: &SavedItem<'_>,
        hash: u64,
        clock: Clock,
    ) -> Result<(), AllocError> {
        let (key, client_flags, value_len) = (item.key, item.client_flags, item.value.len());
        if !self
            .geometry
            .within_item_limit(key.bytes.len(), client_flags, value_len)
        {
            return Err(AllocError::TooLarge);
        }
        let total = self
            .geometry
            .item_total_bytes(key.bytes.len(), client_flags, value_len);
        let (part, h) = self.alloc(total, key.tenant, clock)?;
        item.write_to(self.item_mut(h));
        if let Some(old) = self.index_find(key, hash) {
            self.unlink(old);
        }
        self.link_with_cas(part, hash, h, item.cas, false);
        Ok(())
    }
}
