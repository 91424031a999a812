//! mrcache's storage engine: memcached's items, slab classes and pages, with one exact LRU per class,
//! and the one operation every allocation policy drives — moving a page from one class to another.
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
//! - `shard`    — hash index + pages + per-class LRU + allocation, eviction, page moves (single-threaded)
//! - `engine`   — the thread-safe facade: item semantics over hash-partitioned shards
//! - `profiling` — per-class online MRC profilers on the request path, merged across shards
//! - `stats`    — counters and snapshots
//! - `automove` — memcached 1.6's automove (slab_automove=1) as a pure function of class samples

pub mod automove;
pub mod clock;
pub mod config;
pub mod engine;
pub mod geometry;
pub mod globals;
pub mod item;
pub mod pool;
pub mod profiling;
pub mod shard;
pub mod stats;
pub mod tenant;

pub use clock::Clock;
pub use config::{ConfigError, EngineConfig, ItemAccounting};
pub use engine::{
    parse_decimal, ArithOutcome, ClassHistogram, ClassMrc, Delta, Engine, Entry, ItemFlag,
    ItemView, ReassignOutcome, StoreArgs, StoreMode, StoreOutcome,
};
pub use geometry::{ClassGeometry, ClassId, Geometry};
pub use pool::{PoolSnapshot, UNLIMITED};
pub use shard::{AllocError, Miss, PageMove};
pub use stats::{ClassCounters, ClassSnapshot, EngineStats, GlobalCounters, TenantCounters};
pub use tenant::{Key, TenantId};
