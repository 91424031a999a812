//! One shard of either memory layout behind one interface, so that the facade (`engine`) states each
//! item semantic once: `AnyShard` forwards every call to the slab shard (`shard::Shard`) or the log
//! shard (`log::LogShard`) it holds.
//!
//! Invariants: an engine's shards are all of one layout (`EngineConfig::memory_layout`); a handle is
//! only ever given back to the shard that returned it, under the same lock hold. Slab-only operations
//! (page moves, class caps) do nothing on a log shard and say so in their results.

use mrcache_profile::ReuseTimeHistogram;

use crate::geometry::{ClassId, Geometry};
use crate::globals::Globals;
use crate::item::{Item, ItemMut};
use crate::log::LogShard;
use crate::profiling::ClassProfilers;
use crate::shard::{
    AllocError, KeyIndex, Miss, PageMoveOutcome, Part, Shard, ShardMeters, Violation, WalkPosition,
};
use crate::stats::{ClassCounters, ClassSnapshot, GlobalCounters, TenantCounters};
use crate::tenant::{Key, TenantId};
use crate::{Clock, SavedItem};

/// A shard of the slab or the log layout.
// An engine holds one per shard, for its whole life, each behind its own mutex: the few hundred bytes
// the smaller variant wastes are nothing, and boxing would add a pointer chase to every request.
#[allow(clippy::large_enum_variant)]
pub(crate) enum AnyShard {
    Slab(Shard),
    Log(LogShard),
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            AnyShard::Slab($s) => $e,
            AnyShard::Log($s) => $e,
        }
    };
}

impl AnyShard {
    #[inline]
    pub(crate) fn item(&self, h: u32) -> Item<'_> {
        each!(self, s => s.item(h))
    }
    #[inline]
    pub(crate) fn item_mut(&mut self, h: u32) -> ItemMut<'_> {
        each!(self, s => s.item_mut(h))
    }
    #[inline]
    pub(crate) fn find(&mut self, key: Key<'_>, hash: u64, clock: Clock) -> Result<u32, Miss> {
        each!(self, s => s.find(key, hash, clock))
    }
    #[inline]
    pub(crate) fn bump(&mut self, h: u32, hash: u64, now: u32) {
        each!(self, s => s.bump(h, hash, now))
    }
    #[inline]
    pub(crate) fn promote(&mut self, h: u32, hash: u64, now: u32) {
        each!(self, s => s.promote(h, hash, now))
    }
    /// Unlinks the item at `h`, whose key hashes to `hash`.
    pub(crate) fn unlink(&mut self, h: u32, hash: u64) {
        match self {
            AnyShard::Slab(s) => s.unlink(h),
            AnyShard::Log(s) => s.unlink(h, hash),
        }
    }
    pub(crate) fn write_and_link(
        &mut self,
        key: Key<'_>,
        hash: u64,
        client_flags: u32,
        expiry: u32,
        parts: &[&[u8]],
        clock: Clock,
    ) -> Result<(u32, u64), AllocError> {
        each!(self, s => s.write_and_link(key, hash, client_flags, expiry, parts, clock))
    }
    #[inline]
    pub(crate) fn part_of_item(&self, h: u32) -> Part {
        each!(self, s => s.part_of_item(h))
    }
    pub(crate) fn class_of_item(&self, h: u32) -> ClassId {
        each!(self, s => s.class_of_item(h))
    }
    #[inline]
    pub(crate) fn part_for(&self, tenant: TenantId, class: ClassId) -> Part {
        each!(self, s => s.part_for(tenant, class))
    }
    /// Counters, profilers and shadow queues: one type in both layouts.
    #[inline]
    fn meters(&self) -> &ShardMeters {
        each!(self, s => &s.meters)
    }
    #[inline]
    fn meters_mut(&mut self) -> &mut ShardMeters {
        each!(self, s => &mut s.meters)
    }
    #[inline]
    pub(crate) fn counters(&mut self) -> &mut GlobalCounters {
        &mut self.meters_mut().counters
    }
    pub(crate) fn global_counters(&self) -> &GlobalCounters {
        &self.meters().counters
    }
    #[inline]
    pub(crate) fn class_counters_mut(&mut self, part: Part) -> &mut ClassCounters {
        each!(self, s => s.class_counters_mut(part))
    }
    #[inline]
    pub(crate) fn tenant_counters_mut(&mut self, tenant: TenantId) -> &mut TenantCounters {
        self.meters_mut().tenant_mut(tenant)
    }
    pub(crate) fn tenant_counters(&self) -> &[TenantCounters] {
        self.meters().tenants()
    }
    /// A GET miss: a shadow hit if the tenant's pool's shadow queue holds the key (Memshare).
    pub(crate) fn note_get_miss(&mut self, tenant: TenantId, hash: u64) -> bool {
        let pool = self.globals().pools.pool_of(tenant);
        self.meters_mut().note_get_miss(pool, tenant, hash)
    }
    pub(crate) fn len(&self) -> usize {
        each!(self, s => s.len())
    }
    /// The hash index of the linked items: what an item walk steps through.
    pub(crate) fn index(&self) -> &KeyIndex {
        each!(self, s => s.index())
    }
    pub(crate) fn geometry(&self) -> &Geometry {
        each!(self, s => s.geometry())
    }
    pub(crate) fn globals(&self) -> &Globals {
        each!(self, s => s.globals())
    }
    pub(crate) fn max_pages(&self) -> usize {
        each!(self, s => s.max_pages())
    }
    pub(crate) fn profilers(&self) -> &ClassProfilers {
        &self.meters().profilers
    }
    /// The per-pool profiler's histogram of `pool`, with its sampling rate.
    pub(crate) fn pool_histogram(&self, pool: usize) -> Option<(ReuseTimeHistogram, f64)> {
        self.meters().pool_histogram(pool)
    }
    pub(crate) fn snapshot(&self, clock: Clock, pool: Option<usize>) -> Vec<ClassSnapshot> {
        each!(self, s => s.snapshot(clock, pool))
    }
    pub(crate) fn idle_bytes(
        &self,
        pool: usize,
        idle_secs: u32,
        clock: Clock,
        max_items: usize,
    ) -> (u64, u64) {
        each!(self, s => s.idle_bytes(pool, idle_secs, clock, max_items))
    }
    pub(crate) fn reset_counters(&mut self) {
        each!(self, s => s.reset_counters())
    }
    pub(crate) fn check_invariants(&self) -> Result<Vec<usize>, Violation> {
        each!(self, s => s.check_invariants())
    }
    pub(crate) fn reap(&mut self, clock: Clock, max_items: usize) -> usize {
        each!(self, s => s.reap(clock, max_items))
    }
    pub(crate) fn shrink_to_budget(&mut self, max_pages: usize, clock: Clock) -> usize {
        match self {
            AnyShard::Slab(s) => s.shrink_to_budget(max_pages),
            AnyShard::Log(s) => s.shrink_to_budget(max_pages, clock),
        }
    }
    pub(crate) fn walk_live(
        &self,
        from: WalkPosition,
        max_chunks: usize,
        clock: Clock,
        f: impl FnMut(&SavedItem<'_>),
    ) -> Option<WalkPosition> {
        each!(self, s => s.walk_live(from, max_chunks, clock, f))
    }
    pub(crate) fn restore(
        &mut self,
        item: &SavedItem<'_>,
        hash: u64,
        clock: Clock,
    ) -> Result<(), AllocError> {
        each!(self, s => s.restore(item, hash, clock))
    }

    // ---- slab only ----

    /// Pages of a partition (0 in the log: it has no page per class).
    pub(crate) fn part_pages(&self, part: Part) -> usize {
        match self {
            AnyShard::Slab(s) => s.part_pages(part),
            AnyShard::Log(_) => 0,
        }
    }
    /// A page move (`None` in the log: memory moves by cleaning, not by pages).
    pub(crate) fn move_page(&mut self, src: Part, dst: Option<Part>) -> Option<PageMoveOutcome> {
        match self {
            AnyShard::Slab(s) => s.move_page(src, dst),
            AnyShard::Log(_) => None,
        }
    }
    /// Fixed class caps (ignored by the log: it has no classes).
    pub(crate) fn set_page_caps(&mut self, caps: Option<Vec<usize>>) {
        if let AnyShard::Slab(s) = self {
            s.set_page_caps(caps)
        }
    }
    /// Under caps, whether memcached's first-page rule still applies (ignored by the log).
    pub(crate) fn set_first_pages_under_caps(&mut self, on: bool) {
        if let AnyShard::Slab(s) = self {
            s.set_first_pages_under_caps(on)
        }
    }
    /// Sets a pool's ranking function (the log's cleaner; the slab layout is always LRU).
    pub(crate) fn set_ranking(&mut self, pool: usize, ranking: crate::config::Ranking) {
        if let AnyShard::Log(s) = self {
            s.set_ranking(pool, ranking)
        }
    }
    /// Sets the log's probationary share (`EngineConfig::log_probation`; the slab layout has none).
    pub(crate) fn set_probation(&mut self, share: f64) {
        if let AnyShard::Log(s) = self {
            s.set_probation(share)
        }
    }
    /// Bytes the log's cleaner copied and the passes it ran (0 for slab).
    pub(crate) fn cleaner_work(&self) -> (u64, u64) {
        match self {
            AnyShard::Slab(_) => (0, 0),
            AnyShard::Log(s) => (s.cleaned_bytes, s.clean_passes),
        }
    }
}
