//! Allocation policies as functions of curves and counters: no I/O, no wall clock. A policy reads each
//! partition's counters and cost at every size it might get and returns page moves; the engine's page
//! move carries them out.
//!
//! - `optimizer` — LAMA Algorithm 1 / mPart Algorithm 1: a dynamic program over partitions with any
//!   cost, lower and upper bounds, an exact page total, a reassignment radius N and a granularity r.
//! - `class` — the slab-class policies by name (memcached, automove, twemcache, psa, facebook, lama-mr,
//!   lama-art), each a function of class counters and curves.
//! - `tenant` — the tenant arbiters by name (static, pooled, memshare, mpart, lama-qos): target pages
//!   per tenant from reserves, weights, shadow-queue hits, idle memory and curves.
//! - `arbitrate` — the tenant arbiters' driver: reads each tenant pool, runs the arbiter when it is due,
//!   hands the engine each pool's target pages.
//! - `rebalance` — the driver the server and the simulator share: reads the engine, runs the policy
//!   when it is due, moves the pages, keeps the counts.
//! - `spec` — the `NAME[:key=value,...]` syntax of policy specs and its errors.
//! - `predict` — LAMA §3.5: memcached's demand-filled allocation from footprints (eq. 6) and the miss
//!   ratio it gives (eq. 3), without running the cache.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod arbitrate;
pub mod class;
pub mod optimizer;
pub mod predict;
pub mod rebalance;
pub mod spec;
pub mod tenant;

pub use class::{ClassPolicy, ClassPolicySpec};
pub use optimizer::{
    optimal_allocation, plan_moves, plan_moves_ranked, Allocation, OptimizeError, PageMove,
    Partition, Problem,
};
pub use predict::{overall_miss_ratio, predict_default, ClassDemand, DefaultPrediction, Footprint};
pub use rebalance::{RebalanceStats, Rebalancer};
pub use spec::{SpecError, SpecKind};
pub use tenant::{ArbiterInput, TenantArbiter, TenantPolicySpec, TenantView};
