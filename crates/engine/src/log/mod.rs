//! The log-structured layout (Memshare §3–4): one shard's items appended to segments of one page each,
//! whatever their size, with a hash index over them and a cleaner that ranks, evicts and compacts.
//!
//! A segment belongs to one tenant pool. Each pool appends to its own head segment; a full head joins
//! the pool's queue of full segments (oldest first). When a pool needs a segment and memory is full,
//! the cleaner (`clean`) takes the oldest full segments of the pool with the lowest *need* (target bytes
//! over the bytes it holds), keeps the items its ranking function ranks highest, compacts them into
//! one segment fewer and frees the last: that segment goes to the pool that asked. So memory moves
//! between pools item by item, in bytes, and no size class exists to calcify.
//!
//! **Probation** (`EngineConfig::log_probation`, S3-FIFO's small queue): a pool of at least eight
//! segments here appends keys it does not know to a second head, whose full segments form a
//! probationary queue of about that share of its segments. Sweeping it (`sweep`) moves the items read
//! since they were written to the pool's *tail* (the main-queue segment sweeps write survivors to)
//! and evicts the rest into the ghost; a key the ghost recalls is appended to the main head. Under the
//! clock ranking the main queue is swept too, each item kept while it is read between sweeps.
//!
//! A record in a segment is a 4-byte prefix (record length in 8-byte units, and a 5-bit access count
//! for LFU and segmented LRU) followed by an item in exactly the slab layout's format (`crate::item`),
//! padded to 8 bytes. Handles are `segment slot << off_bits | offset / 8`; they stay valid while the
//! shard lock is held and change only when the cleaner relocates an item (it repoints the index).
//!
//! Invariants (checked by `check_invariants`):
//! - Records tile each segment from 0 to its `used` offset; a record is live iff its item has `LINKED`.
//! - Exactly the live records are indexed, each once; each segment's `live` bytes and `items` count its
//!   live records, and each pool's `live_bytes`, `items` and `requested_bytes` sum its segments'.
//! - A segment is held by exactly one pool (its heads, its queues, its tail, or the inputs of the
//!   cleaning pass under way); the pool table's `held` counts them over all shards, and every held segment was
//!   taken from the page budget. The cleaner's spares and the pass's outputs (`clean_segments - 1`
//!   together) are beside the budget; an output's live records count in the pass's victim.
//! - Cleaning runs in steps under the shard lock (`clean`): each step scans or moves a bounded number of
//!   records, and a pass copies at most `clean_segments - 1` segments of survivors: with the default
//!   of two, one segment's worth of work, spread over the appends that fill a head.
//!
//! Files: `mod` (layout, index, items), `alloc` (appending and where segments come from), `clean`
//! (the cleaner, victim choice and ranked passes), `sweep` (sweeps), `ghost` (evicted keys), `report` (snapshots, walks, restore, reaping and the invariant
//! checker).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::config::{EngineConfig, Ranking};
use crate::geometry::{ClassId, Geometry};
use crate::globals::Globals;
use crate::item::{bits, Item, ItemMut, HEADER_BYTES};
use crate::profiling::ShardProfiling;
use crate::shard::{AllocError, KeyIndex, Miss, Part, ShardMeters};
use crate::stats::ClassCounters;
use crate::tenant::{Key, TenantId};
use crate::Clock;

mod alloc;
mod clean;
mod ghost;
mod report;
mod sweep;

/// Bytes before the item in a record.
pub(crate) const PREFIX: usize = 4;
/// Records start at multiples of this.
const ALIGN: usize = 8;
/// Bits of the prefix that hold the record length in `ALIGN` units.
const LEN_BITS: u32 = 27;
/// The access count saturates here (5 bits).
const FREQ_MAX: u32 = (1 << (32 - LEN_BITS)) - 1;

/// The access count a key recalled by the ghost starts with (one use: it outranks items never read).
const GHOST_FREQ: u32 = 1;

/// The one class the log reports everything under (`stats slabs` shows class 1: the log).
pub(crate) const LOG_CLASS: ClassId = ClassId(1);

/// Bytes a record of an item with these key and value lengths takes in a segment.
#[inline]
pub(crate) fn record_bytes(key_len: usize, value_len: usize) -> usize {
    (PREFIX + HEADER_BYTES + key_len + value_len).next_multiple_of(ALIGN)
}

/// One segment: a page of records appended front to back.
pub(super) struct Segment {
    mem: Box<[u8]>,
    /// Bytes appended so far (records tile `0..used`).
    used: usize,
    /// Bytes of live records.
    live: usize,
    /// Live records.
    items: usize,
    pool: usize,
    /// When it last joined its pool's queue: became the head, or was written by a cleaning pass.
    born: u32,
    /// An input of the cleaning pass under way: its records are never rewritten in place.
    cleaning: bool,
    /// Of its pool's probationary queue (its probation head or full probation queue).
    probation: bool,
}

/// One tenant pool's part of the log in this shard.
pub(super) struct PoolLog {
    head: Option<u32>,
    /// Full segments of the main queue, oldest first: the cleaner's candidates.
    full: VecDeque<u32>,
    /// With probation: where new keys are appended, and the probationary queue's full segments,
    /// oldest first (see the module doc).
    probation_head: Option<u32>,
    probation: VecDeque<u32>,
    /// The main-queue segment that sweeps (`sweep`) move the items they keep to, until it is full
    /// and joins the back of the main queue.
    tail: Option<u32>,
    items: usize,
    /// Record bytes of live items.
    live_bytes: u64,
    /// Live items' bytes by the engine's item accounting (`mem_requested`).
    requested_bytes: u64,
    counters: ClassCounters,
    ranking: Ranking,
}

impl PoolLog {
    fn segments(&self) -> usize {
        self.full.len()
            + self.probation.len()
            + [self.head, self.probation_head, self.tail]
                .iter()
                .filter(|s| s.is_some())
                .count()
    }

    /// Segments of the probationary queue, its head included.
    fn probation_segments(&self) -> usize {
        self.probation.len() + usize::from(self.probation_head.is_some())
    }
}

/// One shard of the log layout. Single-threaded, like `shard::Shard`; see the module invariants.
pub(crate) struct LogShard {
    geometry: Arc<Geometry>,
    globals: Arc<Globals>,
    evict_when_full: bool,
    seg_bytes: usize,
    off_bits: u32,
    /// Segments one cleaning pass takes.
    clean_segments: usize,
    /// Shards of the engine: a pool's target is shared among them.
    shards: usize,
    index: KeyIndex,
    segs: Vec<Option<Segment>>,
    free_slots: Vec<u32>,
    pools: Vec<PoolLog>,
    /// Counters, profilers and shadow queues, as the slab layout keeps them.
    pub(crate) meters: ShardMeters,
    /// Empty segments beside the page budget that the next pass writes its survivors to
    /// (`clean_segments - 1` of them, with the pass's outputs, from the first pass on).
    spares: Vec<u32>,
    /// The cleaning pass under way, if any (`clean`).
    pass: Option<clean::Cleaning>,
    /// A sweep is due for this pool's next segment; it starts when that pool's fuller head is nearly
    /// full (`clean::LogShard::step`).
    sweep_for: Option<usize>,
    /// Keys evicted lately, when `log_ghost` or probation is on (`ghost`).
    ghost: Option<Box<ghost::Ghost>>,
    /// The share of each pool's segments kept for keys on probation (`EngineConfig::log_probation`).
    probation_share: f64,
    /// Where the reaper resumes: segment slot and offset.
    reap_at: (u32, usize),
    /// Bytes the cleaner copied and passes it ran, since start (not reset by `stats reset`).
    pub(crate) cleaned_bytes: u64,
    pub(crate) clean_passes: u64,
}

#[inline]
fn read_prefix(mem: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(mem[off..off + 4].try_into().unwrap())
}

#[inline]
fn prefix_len(p: u32) -> usize {
    (p & ((1 << LEN_BITS) - 1)) as usize * ALIGN
}

#[inline]
fn prefix_freq(p: u32) -> u32 {
    p >> LEN_BITS
}

#[inline]
fn make_prefix(len: usize, freq: u32) -> u32 {
    (len / ALIGN) as u32 | freq.min(FREQ_MAX) << LEN_BITS
}

impl LogShard {
    /// One shard of the log as `config` describes it (`evict_when_full`, `shards` and the `log_*` fields).
    pub(crate) fn new(
        geometry: Arc<Geometry>,
        globals: Arc<Globals>,
        profiling: &ShardProfiling,
        config: &EngineConfig,
    ) -> LogShard {
        let (evict_when_full, ranking) = (config.evict_when_full, config.log_ranking);
        let (clean_segments, shards) = (config.log_clean_segments, config.shards);
        let seg_bytes = geometry.page_size_bytes();
        assert!(seg_bytes / ALIGN < 1 << LEN_BITS, "segment too large");
        let units = seg_bytes.div_ceil(ALIGN);
        let off_bits = usize::BITS - (units - 1).max(1).leading_zeros();
        let pools = globals.pools.len();
        LogShard {
            geometry,
            evict_when_full,
            seg_bytes,
            off_bits,
            clean_segments,
            shards,
            index: KeyIndex::default(),
            segs: Vec::new(),
            free_slots: Vec::new(),
            pools: (0..pools)
                .map(|_| PoolLog {
                    head: None,
                    full: VecDeque::new(),
                    probation_head: None,
                    probation: VecDeque::new(),
                    tail: None,
                    items: 0,
                    live_bytes: 0,
                    requested_bytes: 0,
                    counters: ClassCounters::default(),
                    ranking,
                })
                .collect(),
            meters: ShardMeters::new(profiling, pools),
            globals,
            spares: Vec::new(),
            pass: None,
            ghost: (config.log_ghost || config.log_probation > 0.0).then(Box::default),
            // Under `-M` nothing is evicted, so nothing can be on probation.
            probation_share: if evict_when_full {
                config.log_probation
            } else {
                0.0
            },
            sweep_for: None,
            reap_at: (0, 0),
            cleaned_bytes: 0,
            clean_passes: 0,
        }
    }

    /// Most segments one shard can address.
    pub(crate) fn max_pages(&self) -> usize {
        1usize << (32 - self.off_bits)
    }

    #[inline]
    fn handle(&self, slot: u32, off: usize) -> u32 {
        slot << self.off_bits | (off / ALIGN) as u32
    }

    #[inline]
    fn split(&self, h: u32) -> (usize, usize) {
        (
            (h >> self.off_bits) as usize,
            (h & ((1 << self.off_bits) - 1)) as usize * ALIGN,
        )
    }

    #[inline]
    fn seg(&self, slot: usize) -> &Segment {
        self.segs[slot].as_ref().expect("handle to a held segment")
    }

    #[inline]
    fn seg_mut(&mut self, slot: usize) -> &mut Segment {
        self.segs[slot].as_mut().expect("handle to a held segment")
    }

    /// Segment `a` to read and segment `b` to write (distinct slots).
    fn two_segs(&mut self, a: usize, b: usize) -> (&Segment, &mut Segment) {
        assert_ne!(a, b, "two distinct segments");
        let (lo, hi) = self.segs.split_at_mut(a.max(b));
        let (x, y) = (&mut lo[a.min(b)], &mut hi[0]);
        let (src, dst) = if a < b { (x, y) } else { (y, x) };
        (
            src.as_ref().expect("handle to a held segment"),
            dst.as_mut().expect("handle to a held segment"),
        )
    }

    #[inline]
    pub(crate) fn item(&self, h: u32) -> Item<'_> {
        let (slot, off) = self.split(h);
        Item(&self.seg(slot).mem[off + PREFIX..])
    }

    #[inline]
    pub(crate) fn item_mut(&mut self, h: u32) -> ItemMut<'_> {
        let (slot, off) = self.split(h);
        ItemMut(&mut self.seg_mut(slot).mem[off + PREFIX..])
    }

    #[inline]
    fn prefix(&self, h: u32) -> u32 {
        let (slot, off) = self.split(h);
        read_prefix(&self.seg(slot).mem, off)
    }

    #[inline]
    fn set_prefix(&mut self, h: u32, p: u32) {
        let (slot, off) = self.split(h);
        self.seg_mut(slot).mem[off..off + 4].copy_from_slice(&p.to_le_bytes());
    }

    #[inline]
    fn pool_of_handle(&self, h: u32) -> usize {
        self.seg(self.split(h).0).pool
    }

    pub(crate) fn part_of_item(&self, h: u32) -> Part {
        Part::new(self.pool_of_handle(h), LOG_CLASS)
    }

    pub(crate) fn class_of_item(&self, _h: u32) -> ClassId {
        LOG_CLASS
    }

    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// The hash index of the linked items (an item walk steps through its buckets).
    pub(crate) fn index(&self) -> &KeyIndex {
        &self.index
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub(crate) fn globals(&self) -> &Globals {
        &self.globals
    }

    /// Sets how `pool` ranks its items from the next cleaning pass on.
    pub(crate) fn set_ranking(&mut self, pool: usize, ranking: Ranking) {
        if let Some(p) = self.pools.get_mut(pool) {
            p.ranking = ranking;
        }
    }

    /// Sets the probationary share from now on (the chooser's switch): keys on probation stay there
    /// until swept, and a share of 0 lets the queue drain. The ghost starts when first needed.
    pub(crate) fn set_probation(&mut self, share: f64) {
        self.probation_share = if self.evict_when_full { share } else { 0.0 };
        if share > 0.0 && self.ghost.is_none() {
            self.ghost = Some(Box::default());
        }
    }

    /// The item's size by the engine's accounting (`mem_requested`, profilers).
    #[inline]
    fn accounted(&self, it: Item<'_>) -> usize {
        self.geometry
            .item_total_bytes(it.key_len(), it.client_flags(), it.value_len())
    }

    /// The record of `key` in the index (the slab layout's `KeyIndex`, over record handles).
    #[inline]
    fn index_find(&self, key: Key<'_>, hash: u64) -> Option<u32> {
        self.index.find(hash, |h| self.item(h).tenant_key() == key)
    }

    // ---- items ----

    /// Removes a live item: index, accounting; its record stays in the segment as dead bytes.
    pub(crate) fn unlink(&mut self, h: u32, hash: u64) {
        let it = self.item(h);
        let (tenant, requested) = (it.tenant(), self.accounted(it));
        let rec = prefix_len(self.prefix(h));
        self.index.remove(hash, h);
        self.item_mut(h).remove_bits(bits::LINKED);
        let (slot, _) = self.split(h);
        let seg = self.seg_mut(slot);
        seg.live -= rec;
        seg.items -= 1;
        let pool = seg.pool;
        let p = &mut self.pools[pool];
        p.items -= 1;
        p.live_bytes -= rec as u64;
        p.requested_bytes -= requested as u64;
        self.meters.count_unlink(tenant, requested);
    }

    /// Links a written record: its CAS and `LINKED`, the index, accounting.
    fn link_written(&mut self, hash: u64, h: u32, cas: u64) {
        let rec = prefix_len(self.prefix(h));
        {
            let mut it = self.item_mut(h);
            it.set_cas(cas);
            it.insert_bits(bits::LINKED);
        }
        let it = self.item(h);
        let (requested, tenant) = (self.accounted(it), it.tenant());
        self.index.insert(hash, h);
        let (slot, _) = self.split(h);
        let seg = self.seg_mut(slot);
        seg.live += rec;
        seg.items += 1;
        let pool = seg.pool;
        let p = &mut self.pools[pool];
        p.items += 1;
        p.live_bytes += rec as u64;
        p.requested_bytes += requested as u64;
        self.meters.count_link(tenant, requested);
    }

    /// Finds a live item; expired and flushed items found on the way are unlinked (lazy expiry).
    #[inline]
    pub(crate) fn find(&mut self, key: Key<'_>, hash: u64, clock: Clock) -> Result<u32, Miss> {
        let h = self.index_find(key, hash).ok_or(Miss::Absent)?;
        if let Some(miss) = self.globals.dead_reason(self.item(h), clock) {
            self.unlink(h, hash);
            return Err(miss);
        }
        Ok(h)
    }

    #[inline]
    fn is_dead(&self, h: u32, clock: Clock) -> bool {
        self.globals.dead_reason(self.item(h), clock).is_some()
    }

    /// A use without a read (`add` on an existing key): access time, access count, profilers.
    #[inline]
    pub(crate) fn promote(&mut self, h: u32, hash: u64, now: u32) {
        self.item_mut(h).set_atime(now);
        let p = self.prefix(h);
        if prefix_freq(p) < FREQ_MAX {
            self.set_prefix(h, p + (1 << LEN_BITS));
        }
        if self.meters.profiling() {
            let size = self.accounted(self.item(h));
            self.meters.record_use(self.part_of_item(h), hash, size);
        }
    }

    /// A read: as `promote`, and the fetched bit.
    #[inline]
    pub(crate) fn bump(&mut self, h: u32, hash: u64, now: u32) {
        self.promote(h, hash, now);
        self.item_mut(h).insert_bits(bits::FETCHED);
    }

    /// Writes a new item for `key` and links it, replacing any item of the key. In place when the old
    /// record is of the same pool and large enough; otherwise appended to the pool's head segment
    /// (which may run the cleaner). Returns the handle and the new CAS.
    pub(crate) fn write_and_link(
        &mut self,
        key: Key<'_>,
        hash: u64,
        client_flags: u32,
        expiry: u32,
        parts: &[&[u8]],
        clock: Clock,
    ) -> Result<(u32, u64), AllocError> {
        let value_len: usize = parts.iter().map(|p| p.len()).sum();
        let h = self.place(key, hash, client_flags, value_len, false, clock)?;
        self.item_mut(h)
            .init(key, client_flags, expiry, clock.now, parts);
        let cas = self.globals.next_cas();
        self.link_written(hash, h, cas);
        let size = self.accounted(self.item(h));
        self.meters.record_use(self.part_of_item(h), hash, size);
        Ok((h, cas))
    }

    /// Where a new item of `key` goes, with any old item of the key already unlinked: the old record
    /// (in place) if it is of the same pool and large enough, else a fresh record appended. With
    /// probation, a fresh record of a key the shard does not know goes to the probationary queue; one
    /// that replaces a live item goes to that item's queue, and one the ghost recalls, or that is
    /// `known` (restored), to the main queue.
    fn place(
        &mut self,
        key: Key<'_>,
        hash: u64,
        client_flags: u32,
        value_len: usize,
        known: bool,
        clock: Clock,
    ) -> Result<u32, AllocError> {
        if !self
            .geometry
            .within_item_limit(key.bytes.len(), client_flags, value_len)
        {
            return Err(AllocError::TooLarge);
        }
        let rec = record_bytes(key.bytes.len(), value_len);
        if rec > self.seg_bytes {
            return Err(AllocError::TooLarge);
        }
        let pool = self.globals.pools.pool_of(key.tenant);
        let old = self.index_find(key, hash);
        if let Some(old) = old {
            let old_rec = prefix_len(self.prefix(old));
            let slot = self.split(old).0;
            if self.pool_of_handle(old) == pool && old_rec >= rec && !self.seg(slot).cleaning {
                self.unlink(old, hash);
                // The record keeps its length (the tail past the new item is padding); the count restarts.
                self.set_prefix(old, make_prefix(old_rec, 0));
                return Ok(old);
            }
        }
        // Back soon after its eviction: it has been used before, unlike a key written for the first time.
        let recalled = old.is_none() && self.ghost.as_mut().is_some_and(|g| g.recall(hash));
        let probation = match old {
            Some(old) => self.seg(self.split(old).0).probation,
            None => !recalled && !known && self.on_probation(pool),
        };
        // Appending may run the cleaner, which may evict or move the old item: look it up afterwards
        // (only if there was one: cleaning never links an item).
        let h = self.append(pool, rec, probation, clock)?;
        if let Some(old) = old.and_then(|_| self.index_find(key, hash)) {
            self.unlink(old, hash);
        } else if recalled && self.probation_share == 0.0 {
            // Without probation the ghost's head start is an access counted.
            self.set_prefix(h, make_prefix(rec, GHOST_FREQ));
        }
        Ok(h)
    }

    #[inline]
    pub(crate) fn class_counters_mut(&mut self, part: Part) -> &mut ClassCounters {
        &mut self.pools[part.pool()].counters
    }

    #[inline]
    pub(crate) fn part_for(&self, tenant: TenantId, _class: ClassId) -> Part {
        Part::new(self.globals.pools.pool_of(tenant), LOG_CLASS)
    }

    /// An item about to be evicted goes into the shadow queue, and the ghost if `ghost`.
    fn remember_evicted(&mut self, h: u32, hash: u64, ghost: bool) {
        let live_items = self.index.len();
        if let Some(g) = self.ghost.as_mut().filter(|_| ghost) {
            g.remember(hash, live_items);
        }
        let pool = self.pool_of_handle(h);
        if self.meters.remembers_evictions(pool) {
            let size = self.accounted(self.item(h)) as u64;
            self.meters.remember_evicted(pool, hash, size);
        }
    }
}
