//! Allocation policies as functions of curves: no I/O, no clock, no engine. A policy reads each partition's
//! cost at every size it might get and returns a target allocation; the engine's page move carries it out.
//!
//! - `optimizer` — LAMA Algorithm 1 / mPart Algorithm 1: a dynamic program over partitions with any
//!   cost, lower and upper bounds, an exact page total, a reassignment radius N and a granularity r.
//! - `predict` — LAMA §3.5: memcached's demand-filled allocation from footprints (eq. 6) and the miss
//!   ratio it gives (eq. 3), without running the cache.

pub mod optimizer;
pub mod predict;

pub use optimizer::{
    optimal_allocation, plan_moves, Allocation, OptimizeError, PageMove, Partition, Problem,
};
pub use predict::{overall_miss_ratio, predict_default, ClassDemand, DefaultPrediction, Footprint};
