//! The simulator: the very engine the server runs, driven by a workload under a logical clock.
//!
//! Nothing here models a cache: requests go to `mrcache_engine::Engine` exactly as the server's dispatch
//! sends them, with the lookaside pattern of the papers (a GET that misses is followed by a SET of the
//! object). Time is logical: `requests_per_second` requests make one second, which drives expiry and the
//! once-a-second policies (memcached's automove). No threads, no I/O, no wall clock; the same config and
//! stream give the same report, bit for bit.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod defaults;
mod error;
pub mod oracle;
mod policy;
mod replay;
mod report;
pub mod sweep;
mod trace;
pub mod upper_bound;

pub use defaults::SimDefaults;
pub use error::SimError;
pub use oracle::{OracleSchedule, WindowCurves};
pub use policy::{OracleSpec, SimPolicySpec, SlabPolicy};
pub use replay::{key_text, SimConfig, Simulator, TenantSetup, SIM_PROFILE_MEMORY_SHARE};
pub use report::{
    steady_state_first_request, ClassAllocation, SimReport, TenantReport, TenantWindow, Window,
};
pub use trace::TraceSizing;
pub use upper_bound::{MemoryPlan, PlannedAllocation, Span, UpperBound, UpperBoundProfiler};
