//! `stats items`, `stats slabs` and `stats sizes`, and the per-class `/metrics` series (label
//! `class="<id>"`): the [`ITEMS`] and [`SLABS`] tables over one class's [`ClassSnapshot`], and
//! [`SLAB_TOTALS`] over the whole engine.
//!
//! Layout: under the default compact accounting every figure here describes mrcached's own slab layout
//! (its classes, chunk sizes and the bytes items occupy), not the figures memcached would print for the
//! same data: reported together they stay consistent (`used_chunks * chunk_size >= mem_requested`), so a
//! tool that derives memory or fragmentation from them (memcached-tool, Prometheus exporters) judges it
//! right, where memcached's larger `mem_requested` beside our smaller chunks would not. Under
//! `-o item_accounting=memcached` they equal memcached's (docs/compatibility.md, "Slab figures"; `tests/ops.rs`).
//!
//! `stats items` lists the classes that hold items, `stats slabs` those that hold pages, and each
//! table's `/metrics` families list the same classes. memcached's segmented-LRU figures are printed as
//! memcached prints them in flat LRU mode: our one LRU per class is its `cold` segment.

use mrcache_engine::{ClassSnapshot, EngineStats};

use super::registry::{alias, counter, fixed, gauge, write_stats, Exposition, Figure};
use crate::context::ServerContext;

const NO_SEGMENTED_LRU: &str = "memcached's segmented LRU; we keep one exact LRU per class";
const NO_TAIL_REPAIR: &str =
    "memcached's tail repair of leaked references; we hold no item references";
const NO_FREE_CHUNK_END: &str = "pages are carved into chunks whole, leaving no unused end";

/// `stats items`: `items:<class>:<name>`, for classes that hold items.
#[rustfmt::skip]
pub(crate) const ITEMS: &[Figure<ClassSnapshot>] = &[
    gauge("number", "class_items", "Items stored in each slab class.", |c| c.items.into()),
    fixed("number_hot", 0, NO_SEGMENTED_LRU),
    fixed("number_warm", 0, NO_SEGMENTED_LRU),
    alias("number_cold", "class_items", |c| c.items.into()),
    fixed("age_hot", 0, NO_SEGMENTED_LRU),
    fixed("age_warm", 0, NO_SEGMENTED_LRU),
    gauge("age", "class_tail_age_seconds", "Seconds since the LRU tail item of each class was used.", |c| c.tail_age_secs.into()),
    // The bytes items occupy in mrcached's layout (memcached's accounting under -o item_accounting=memcached);
    // see the module doc for why not memcached's figure under compact accounting.
    gauge("mem_requested", "class_requested_bytes", "Bytes requested by the items of each class.", |c| c.requested_bytes.into()),
    counter("evicted", "class_evictions_total", "Live items evicted from each class.", |c| c.counters.evicted.into()),
    counter("evicted_nonzero", "class_evicted_nonzero_total", "Evicted items of each class that had an expiry time.",
        |c| c.counters.evicted_nonzero.into()),
    gauge("evicted_time", "class_evicted_time_seconds", "Seconds since the last evicted item of each class was used.",
        |c| c.counters.evicted_time.into()),
    counter("outofmemory", "class_outofmemory_total", "Stores into each class that failed for lack of memory.",
        |c| c.counters.outofmemory.into()),
    fixed("tailrepairs", 0, NO_TAIL_REPAIR),
    counter("reclaimed", "class_reclaimed_total", "Expired or flushed items of each class whose chunk was reused.",
        |c| c.counters.reclaimed.into()),
    counter("expired_unfetched", "class_expired_unfetched_total", "Items of each class reclaimed after expiring unread.",
        |c| c.counters.expired_unfetched.into()),
    counter("evicted_unfetched", "class_evicted_unfetched_total", "Items of each class evicted unread.",
        |c| c.counters.evicted_unfetched.into()),
    fixed("evicted_active", 0, NO_SEGMENTED_LRU),
    counter("crawler_reclaimed", "class_crawler_reclaimed_total", "Expired or flushed items of each class the reaper (LRU crawler) unlinked.",
        |c| c.counters.crawler_reclaimed.into()),
    counter("crawler_items_checked", "class_crawler_items_checked_total", "Items of each class the reaper (LRU crawler) inspected.",
        |c| c.counters.crawler_items_checked.into()),
    fixed("lrutail_reflocked", 0, NO_SEGMENTED_LRU),
    fixed("moves_to_cold", 0, NO_SEGMENTED_LRU),
    fixed("moves_to_warm", 0, NO_SEGMENTED_LRU),
    fixed("moves_within_lru", 0, NO_SEGMENTED_LRU),
    fixed("direct_reclaims", 0, NO_SEGMENTED_LRU),
    fixed("hits_to_hot", 0, NO_SEGMENTED_LRU),
    fixed("hits_to_warm", 0, NO_SEGMENTED_LRU),
    alias("hits_to_cold", "class_get_hits_total", |c| c.counters.get_hits.into()),
    fixed("hits_to_temp", 0, NO_SEGMENTED_LRU),
];

/// `stats slabs`: `<class>:<name>`, for classes that hold pages.
#[rustfmt::skip]
pub(crate) const SLABS: &[Figure<ClassSnapshot>] = &[
    // Our real chunks (memcached's sizes under -o item_accounting=memcached; see the module doc).
    gauge("chunk_size", "class_chunk_size_bytes", "Chunk size of each slab class.", |c| c.chunk_size_bytes.into()),
    gauge("chunks_per_page", "class_chunks_per_page", "Chunks in one page of each class.", |c| c.chunks_per_page.into()),
    gauge("total_pages", "class_pages", "Pages held by each slab class.", |c| c.total_pages.into()),
    gauge("total_chunks", "class_chunks", "Chunks in the pages of each class.", |c| (c.total_pages * c.chunks_per_page).into()),
    gauge("used_chunks", "class_used_chunks", "Chunks of each class holding an item.", |c| c.used_chunks.into()),
    gauge("free_chunks", "class_free_chunks", "Chunks of each class free for an item.", |c| c.free_chunks.into()),
    fixed("free_chunks_end", 0, NO_FREE_CHUNK_END),
    counter("get_hits", "class_get_hits_total", "GET-type lookups that found an item of each class.", |c| c.counters.get_hits.into()),
    counter("cmd_set", "class_cmd_set_total", "Storage commands that stored into each class.", |c| c.counters.set_cmds.into()),
    counter("delete_hits", "class_delete_hits_total", "Deletes that removed an item of each class.", |c| c.counters.delete_hits.into()),
    counter("incr_hits", "class_incr_hits_total", "Increments of an item of each class.", |c| c.counters.incr_hits.into()),
    counter("decr_hits", "class_decr_hits_total", "Decrements of an item of each class.", |c| c.counters.decr_hits.into()),
    counter("cas_hits", "class_cas_hits_total", "CAS commands that stored into each class.", |c| c.counters.cas_hits.into()),
    counter("cas_badval", "class_cas_badval_total", "CAS commands refused on an item of each class.", |c| c.counters.cas_badval.into()),
    counter("touch_hits", "class_touch_hits_total", "Touches of an item of each class.", |c| c.counters.touch_hits.into()),
];

/// The lines after the classes in `stats slabs`.
#[rustfmt::skip]
pub(crate) const SLAB_TOTALS: &[Figure<EngineStats>] = &[
    gauge("active_slabs", "active_slabs", "Slab classes holding pages.", |e| active(e).count().into()),
    // Pages x page size: memcached's meaning under either accounting.
    gauge("total_malloced", "total_malloced_bytes", "Bytes of the pages slab classes hold.",
        |e| active(e).map(|c| c.total_pages as u64 * e.page_size_bytes as u64).sum::<u64>().into()),
];

/// The classes `stats slabs` lists: those that hold pages.
fn active(e: &EngineStats) -> impl Iterator<Item = &ClassSnapshot> {
    e.classes.iter().filter(|c| c.total_pages > 0)
}

/// The classes `stats items` lists: those that hold items.
fn with_items(e: &EngineStats) -> impl Iterator<Item = &ClassSnapshot> {
    e.classes.iter().filter(|c| c.items > 0)
}

/// `stats items`: per class that holds items, memcached's `items:<cls>:<name>` figures.
pub(crate) fn items(ctx: &ServerContext, out: &mut Vec<u8>) {
    let e = ctx.engine.stats(ctx.clock());
    for c in with_items(&e) {
        write_stats(out, &format!("items:{}:", c.class.0), ITEMS, c);
    }
    super::end(out);
}

/// `stats slabs`: per class with pages, memcached's `<cls>:<name>` figures, then the totals.
pub(crate) fn slabs(ctx: &ServerContext, out: &mut Vec<u8>) {
    let e = ctx.engine.stats(ctx.clock());
    for c in active(&e) {
        write_stats(out, &format!("{}:", c.class.0), SLABS, c);
    }
    write_stats(out, "", SLAB_TOTALS, &e);
    super::end(out);
}

/// `stats sizes`: memcached needs `-o track_sizes` for this histogram; we do not keep it.
pub(crate) fn sizes(_ctx: &ServerContext, out: &mut Vec<u8>) {
    super::stat(out, "sizes_status", "disabled");
    super::end(out);
}

/// The per-class and slab-total `/metrics` series from one engine snapshot.
pub(crate) fn expose(e: &EngineStats, exposition: &mut Exposition) {
    exposition.global(SLAB_TOTALS, e);
    let label = |c: &ClassSnapshot| c.class.0.to_string();
    let slab_rows: Vec<_> = active(e).map(|c| (label(c), c)).collect();
    exposition.labelled(SLABS, "class", &slab_rows);
    let item_rows: Vec<_> = with_items(e).map(|c| (label(c), c)).collect();
    exposition.labelled(ITEMS, "class", &item_rows);
}
