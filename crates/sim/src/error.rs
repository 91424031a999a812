//! Why a simulation could not start: a policy, arbiter or engine configuration refused, or a
//! workload that could not be built. Once a run starts it cannot fail; a trace read error ends the
//! stream and is the caller's to report.
//!
//! Each variant keeps what callers and tests need to tell the cases apart; `Display` is the message
//! of the crate that refused (the policy crate's, the engine's, the workload crate's) unchanged.

use std::fmt;

use mrcache_engine::ConfigError;
use mrcache_units::SizeError;
use mrcache_workload::WorkloadError;

/// Why a simulation or a sweep was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// A slab policy spec that `mrcache_policy::ClassPolicySpec` refused; its message.
    Policy(String),
    /// A tenant arbiter spec that `mrcache_policy::TenantPolicySpec` refused; its message.
    Arbiter(String),
    /// The upper bound was asked to replay without the fixed allocation it replays.
    UpperBoundNeedsCaps,
    /// The dynamic oracle was asked to replay without its schedule, or with tenants of their own.
    OracleNeedsSchedule,
    /// The engine refused the configuration.
    Engine(ConfigError),
    /// A synthetic workload could not be built.
    Workload(WorkloadError),
    /// The caller's request stream could not be made (its own message).
    Stream(String),
    /// A memory size that is not one (`mrcache_units`' grammar).
    Size(SizeError),
    /// A memory size of zero bytes, as given.
    ZeroSize(String),
    /// A memory range that is not `FROM..TO:STEP` with FROM <= TO, as given.
    BadRange(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Policy(message) | SimError::Arbiter(message) | SimError::Stream(message) => {
                f.write_str(message)
            }
            SimError::UpperBoundNeedsCaps => f.write_str(
                "the upper bound replays a fixed allocation: run it through `sweep` or give page_caps",
            ),
            SimError::OracleNeedsSchedule => f.write_str(
                "the dynamic oracle replays a schedule from a first pass (give SimConfig::oracle), \
                 over one memory without tenants of their own",
            ),
            SimError::Engine(e) => write!(f, "{e}"),
            SimError::Workload(e) => write!(f, "{e}"),
            SimError::Size(e) => write!(f, "{e}"),
            SimError::ZeroSize(text) => write!(f, "`{text}`: size must be positive"),
            SimError::BadRange(text) => write!(
                f,
                "`{text}`: expected FROM..TO:STEP, e.g. 128MiB..1GiB:64MiB"
            ),
        }
    }
}

impl std::error::Error for SimError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SimError::Workload(e) => Some(e),
            SimError::Size(e) => Some(e),
            _ => None,
        }
    }
}

impl From<WorkloadError> for SimError {
    fn from(e: WorkloadError) -> Self {
        SimError::Workload(e)
    }
}
