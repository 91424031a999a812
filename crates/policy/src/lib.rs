//! Allocation policies as functions of curves: no I/O, no clock, no engine. A policy reads each partition's
//! cost at every size it might get and returns a target allocation; the engine's page move carries it out.
//!
//! - `optimizer` — LAMA Algorithm 1 / mPart Algorithm 1: a dynamic program over partitions with any
//!   cost, lower and upper bounds, an exact page total, a reassignment radius N and a granularity r.

pub mod optimizer;

pub use optimizer::{
    optimal_allocation, plan_moves, Allocation, OptimizeError, PageMove, Partition, Problem,
};
