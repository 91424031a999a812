//! State shared by all shards of one engine: the page budget, the tenant pools, the CAS counter, each
//! tenant's flush horizon and the page grants (`grants`, behind a leaf lock of its own).
//!
//! All fields are atomics touched only on stores, page moves and flushes, never written on a plain read
//! path (a hit reads its tenant's horizon with two or three relaxed loads). Memory ordering is relaxed
//! throughout: each value is independent, and every shard decision that depends on them is made under that
//! shard's lock.
//!
//! Flush horizons are per tenant (`flush_all` flushes only the caller's tenant). They live in blocks of
//! `HORIZONS_PER_BLOCK`, each allocated the first time a tenant in it flushes, so the whole `u16` id space
//! costs a table of pointers until tenants flush; a tenant whose block does not exist has never flushed.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

use crate::grants::PageGrants;
use crate::item::Item;
use crate::pool::PoolTable;
use crate::shard::Miss;
use crate::tenant::TenantId;
use crate::Clock;

/// Tenants per lazily allocated block of flush horizons: 256 x 16 bytes, and 256 blocks span every id.
const HORIZONS_PER_BLOCK: usize = 256;
const HORIZON_BLOCKS: usize = (u16::MAX as usize + 1) / HORIZONS_PER_BLOCK;

/// Pages of `-m` handed out to shards. `in_use` may exceed `limit` only by first pages
/// (`try_take_first_page`, at most `first_page_allowance` of them past the limit) or after the limit is
/// lowered; `over_limit` tells shards to give pages back, and only in the second case.
#[derive(Debug)]
pub struct PageBudget {
    limit: AtomicUsize,
    in_use: AtomicUsize,
    /// Most pages a partition's first page may take past `limit` (see `first_page_allowance`).
    first_page_allowance: AtomicUsize,
    /// Set when the limit was lowered and pages must be given back; first pages over the limit alone
    /// never ask for that (memcached keeps them too).
    shrinking: std::sync::atomic::AtomicBool,
}

impl PageBudget {
    pub fn new(limit: usize) -> PageBudget {
        PageBudget {
            limit: AtomicUsize::new(limit),
            in_use: AtomicUsize::new(0),
            first_page_allowance: AtomicUsize::new(usize::MAX),
            shrinking: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Takes one page if that keeps `in_use <= limit`.
    pub fn try_take(&self) -> bool {
        let limit = self.limit.load(Relaxed);
        self.in_use
            .fetch_update(Relaxed, Relaxed, |n| (n < limit).then_some(n + 1))
            .is_ok()
    }

    /// Takes one page for a partition's first page: past the limit, but never more than
    /// `first_page_allowance` pages past it.
    pub fn try_take_first_page(&self) -> bool {
        let ceiling = self
            .limit
            .load(Relaxed)
            .saturating_add(self.first_page_allowance.load(Relaxed));
        self.in_use
            .fetch_update(Relaxed, Relaxed, |n| (n < ceiling).then_some(n + 1))
            .is_ok()
    }

    /// Bounds the first pages taken past the limit (unbounded until set).
    pub fn set_first_page_allowance(&self, pages: usize) {
        self.first_page_allowance.store(pages, Relaxed);
    }

    pub fn give_back(&self) {
        self.in_use.fetch_sub(1, Relaxed);
    }

    /// Whether pages must be given back: the limit was lowered below what is in use. Cleared once back
    /// within the limit.
    pub fn over_limit(&self) -> bool {
        if !self.shrinking.load(Relaxed) {
            return false;
        }
        let over = self.in_use.load(Relaxed) > self.limit.load(Relaxed);
        if !over {
            self.shrinking.store(false, Relaxed);
        }
        over
    }

    pub fn in_use(&self) -> usize {
        self.in_use.load(Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Relaxed)
    }

    pub fn set_limit(&self, pages: usize) {
        self.limit.store(pages, Relaxed);
        self.shrinking.store(true, Relaxed);
    }
}

/// Engine-wide state.
#[derive(Debug)]
pub struct Globals {
    pub budget: PageBudget,
    /// Each tenant pool's pages, reserve, cap and target.
    pub pools: PoolTable,
    /// Page moves granted ahead, per pool.
    pub grants: PageGrants,
    use_cas: bool,
    cas: AtomicU64,
    /// Each tenant's flush horizon, in blocks allocated on a tenant's first flush.
    horizons: Box<[OnceLock<Box<[FlushHorizon]>>]>,
    /// Twemcache's random slab eviction: a full class takes a random page (of any class), evicting all it
    /// holds, instead of evicting its own LRU tail.
    random_page_eviction: AtomicBool,
    /// Told of every eviction while `observing_evictions` is set (memcached's `watch evictions`); see
    /// [`Evicted`].
    eviction_observer: ObserverSlot,
    observing_evictions: AtomicBool,
}

/// The installed eviction observer (a closure, so `Debug` by hand).
#[derive(Default)]
struct ObserverSlot(OnceLock<EvictionObserver>);

impl std::fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "ObserverSlot(installed)"
        } else {
            "ObserverSlot(none)"
        })
    }
}

/// A live item evicted to make room, as an eviction observer sees it (memcached's `watch evictions`
/// fields). Borrowed from the shard for the duration of the call, which runs under the shard's lock:
/// an observer must only copy what it needs and take no lock but its own leaf lock.
#[derive(Clone, Copy, Debug)]
pub struct Evicted<'a> {
    /// The key as the client sent it.
    pub key: &'a [u8],
    /// It was read at least once after it was stored.
    pub fetched: bool,
    /// Seconds it had left to live, or -1 if it never expired.
    pub ttl_secs: i64,
    /// Seconds since it was last accessed.
    pub last_access_secs: u32,
    /// Its slab class.
    pub class: crate::geometry::ClassId,
    /// Its value's length.
    pub value_len: usize,
}

impl<'a> Evicted<'a> {
    /// The eviction of `item`, of `class`, at `now`.
    pub(crate) fn of(
        item: crate::item::Item<'a>,
        class: crate::geometry::ClassId,
        now: u32,
    ) -> Evicted<'a> {
        let (expiry, atime) = (item.expiry(), item.atime());
        Evicted {
            key: item.key(),
            fetched: item.has(crate::item::bits::FETCHED),
            ttl_secs: if expiry == 0 {
                -1
            } else {
                i64::from(expiry) - i64::from(now)
            },
            last_access_secs: now.saturating_sub(atime),
            class,
            value_len: item.value_len(),
        }
    }
}

/// What `Engine::set_eviction_observer` installs.
pub type EvictionObserver = Box<dyn Fn(&Evicted<'_>) + Send + Sync>;

impl Globals {
    pub fn new(page_limit: usize, use_cas: bool, pools: usize) -> Globals {
        Globals {
            budget: PageBudget::new(page_limit),
            pools: PoolTable::new(pools),
            grants: PageGrants::new(pools),
            use_cas,
            cas: AtomicU64::new(0),
            horizons: (0..HORIZON_BLOCKS).map(|_| OnceLock::new()).collect(),
            random_page_eviction: AtomicBool::new(false),
            eviction_observer: ObserverSlot::default(),
            observing_evictions: AtomicBool::new(false),
        }
    }

    /// Installs the eviction observer (once; a second one is ignored and `false` returned).
    pub fn set_eviction_observer(&self, observer: EvictionObserver) -> bool {
        self.eviction_observer.0.set(observer).is_ok()
    }

    /// Turns calls to the eviction observer on or off (one relaxed load per eviction when off).
    pub fn observe_evictions(&self, on: bool) {
        self.observing_evictions.store(on, Relaxed);
    }

    /// The observer, when installed and on.
    #[inline]
    pub fn eviction_observer(&self) -> Option<&EvictionObserver> {
        if self.observing_evictions.load(Relaxed) {
            self.eviction_observer.0.get()
        } else {
            None
        }
    }

    pub fn random_page_eviction(&self) -> bool {
        self.random_page_eviction.load(Relaxed)
    }

    pub fn set_random_page_eviction(&self, on: bool) {
        self.random_page_eviction.store(on, Relaxed);
    }

    /// The next CAS value (memcached's `get_cas_id`: the first is 1), or 0 under `-C`.
    pub fn next_cas(&self) -> u64 {
        if self.use_cas {
            self.cas.fetch_add(1, Relaxed) + 1
        } else {
            0
        }
    }

    /// Makes every later CAS value larger than `cas` (a warm restart restores items with their CAS).
    pub fn raise_cas_above(&self, cas: u64) {
        if self.use_cas {
            self.cas.fetch_max(cas, Relaxed);
        }
    }

    fn horizon(&self, tenant: TenantId) -> Option<&FlushHorizon> {
        let block = self.horizons[tenant.index() / HORIZONS_PER_BLOCK].get()?;
        Some(&block[tenant.index() % HORIZONS_PER_BLOCK])
    }

    /// memcached's `flush_all [delay]` for one tenant at relative time `now`; `new_oldest` is the relative
    /// time the flush takes effect (`now` for an immediate flush).
    pub fn flush(&self, tenant: TenantId, new_oldest: u32, now: u32) {
        let block = self.horizons[tenant.index() / HORIZONS_PER_BLOCK].get_or_init(|| {
            (0..HORIZONS_PER_BLOCK)
                .map(|_| FlushHorizon::default())
                .collect()
        });
        let horizon = &block[tenant.index() % HORIZONS_PER_BLOCK];
        if self.use_cas {
            let oldest_live = new_oldest.saturating_sub(1);
            horizon.oldest_live.store(oldest_live, Relaxed);
            if oldest_live <= now {
                horizon.oldest_cas.store(self.next_cas(), Relaxed);
            }
        } else {
            horizon.oldest_live.store(new_oldest, Relaxed);
        }
    }

    /// Why `it` can no longer be read at `clock`: its expiry passed, or a flush of its tenant took
    /// effect after it was stored; `None` while it is live. Both layouts' lookups, reapers and cleaners
    /// judge an item by this one test.
    #[inline]
    pub(crate) fn dead_reason(&self, it: Item<'_>, clock: Clock) -> Option<Miss> {
        if clock.is_expired(it.expiry()) {
            Some(Miss::Expired)
        } else if self.is_flushed(it.tenant(), it.atime(), it.cas(), clock.now) {
            Some(Miss::Flushed)
        } else {
            None
        }
    }

    /// memcached's `item_is_flushed`, against the item's tenant's horizon.
    #[inline]
    pub fn is_flushed(&self, tenant: TenantId, atime: u32, cas: u64, now: u32) -> bool {
        let Some(horizon) = self.horizon(tenant) else {
            return false;
        };
        let oldest_live = horizon.oldest_live.load(Relaxed);
        if oldest_live == 0 || oldest_live > now {
            return false;
        }
        let oldest_cas = horizon.oldest_cas.load(Relaxed);
        atime <= oldest_live || (oldest_cas != 0 && cas != 0 && cas < oldest_cas)
    }
}

/// One tenant's flush horizon.
#[derive(Debug, Default)]
struct FlushHorizon {
    /// memcached's `settings.oldest_live`: items last accessed at or before it are flushed, once it is due.
    oldest_live: AtomicU32,
    /// memcached's `settings.oldest_cas`: items with a smaller CAS are flushed (immediate flush with CAS).
    oldest_cas: AtomicU64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flush_reaches_only_its_tenant() {
        let g = Globals::new(1, true, 1);
        let (t1, t300) = (TenantId(1), TenantId(300));
        let cas = g.next_cas();
        g.flush(t1, 10, 10);
        assert!(g.is_flushed(t1, 5, cas, 10));
        assert!(!g.is_flushed(TenantId::DEFAULT, 5, cas, 10));
        assert!(
            !g.is_flushed(t300, 5, cas, 10),
            "other block never allocated"
        );
        g.flush(TenantId(u16::MAX), 10, 10);
        assert!(g.is_flushed(TenantId(u16::MAX), 5, cas, 10));
    }
}
