//! mrcache's storage engine: memcached's items, slab classes and pages, with one exact LRU per class,
//! and the one operation every allocation policy drives — moving a page from one class to another; or,
//! with `EngineConfig::memory_layout = Log`, Memshare's log-structured memory behind the same facade.
//!
//! Layering: no I/O, no threads of its own, no wall clock. Callers pass a `Clock`; the server passes real
//! time, the simulator logical time, and both run this same code.
//!
//! - `config`   — `EngineConfig`, memcached's defaults, validation
//! - `geometry` — slab classes and item-size accounting (memcached 1.6.18's byte for byte, or compact)
//! - `tenant`   — `TenantId` and `Key`: every keyed operation names its tenant's namespace
//! - `item`     — the item layout inside a chunk
//! - `pool`     — tenant pools: pages per tenant, reserve, cap and target (the upper memory level)
//! - `globals`  — page budget, pools, CAS counter, flush horizons shared by shards
//! - `grants`   — page moves granted ahead, made by the receiver's allocation when it needs the page
//! - `shard`    — hash index + pages + per-class LRU + allocation, eviction, page moves (single-threaded)
//! - `log`      — the log-structured layout (Memshare): segments per tenant pool, hash index, cleaner
//! - `layout`   — `AnyShard`: a shard of either layout behind one interface, for the facade
//! - `engine`   — the thread-safe facade: item semantics over hash-partitioned shards
//! - `profiling` — per-class online MRC profilers on the request path, merged across shards
//! - `stats`    — counters and snapshots
//!
//! The public API is the `Engine` and the types its methods take and return, re-exported here, plus the
//! named defaults of `config` and `profiling`; every other module is private to the crate. The
//! allocation policies that drive page moves (memcached's automove among them) live in `mrcache-policy`.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod clock;
pub mod config;
mod engine;
mod geometry;
mod globals;
mod grants;
mod item;
mod layout;
mod log;
mod pool;
pub mod profiling;
mod shard;
mod stats;
mod tenant;

pub use clock::Clock;
pub use config::{ConfigError, EngineConfig, ItemAccounting, LogPolicy, MemoryLayout, Ranking};
pub use engine::{
    parse_decimal, ArithOutcome, ChooserReport, ClassHistogram, ClassMrc, ClassSet, CrawlBatch,
    CrawlQuota, Delta, Engine, Entry, ItemBatch, ItemCursor, ItemFlag, ItemMarks, ItemView,
    LockClock, LockStats, ReassignOutcome, RestoreOutcome, SavedItem, StoreArgs, StoreMode,
    StoreOutcome, WalkCursor, WalkFilter, WalkedItem, MAX_SHARD_RESTARTS,
};
pub use geometry::{ClassGeometry, ClassId, Geometry};
pub use globals::{Evicted, EvictionObserver};
pub use grants::PageGrant;
pub use pool::{PoolSnapshot, UNLIMITED};
pub use shard::{AllocError, InvariantError, Miss, PageMoveOutcome, Partition, Violation};
pub use stats::{ClassCounters, ClassSnapshot, EngineStats, GlobalCounters, TenantCounters};
pub use tenant::{Key, TenantId};

/// Bytes an item with these key and value lengths takes in a segment of the log layout (its header
/// and a 4-byte prefix, rounded up to 8): what a byte-sized model of the log, such as an anchor
/// simulation in another cache simulator, should charge it.
pub fn log_record_bytes(key_len: usize, value_len: usize) -> usize {
    log::record_bytes(key_len, value_len)
}
