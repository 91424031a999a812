//! Errors of building a synthetic workload: a spec that does not parse, a parameter out of range, a
//! distribution that cannot be drawn from, a trace format name that does not exist. Reading a trace
//! has its own error, located by file and byte offset ([`crate::TraceError`]).
//!
//! Each variant keeps the values it names, so callers and tests can match on it; `Display` gives
//! the message a user reads, naming the parameter as it was typed (`workload parameter hours=0: ...`).

use std::fmt;

/// Why a workload spec or a distribution was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkloadError {
    /// A Zipf exponent that is negative, NaN or infinite.
    ZipfExponent {
        /// The exponent given.
        alpha: f64,
    },
    /// A Zipf distribution over no ranks.
    ZipfNoRanks,
    /// A spec parameter without `=`.
    NotKeyValue {
        /// The text between commas.
        pair: String,
    },
    /// A parameter that should be a count (`5M`, `100k`, `1_000`) and is not.
    NotACount {
        /// Parameter name.
        key: &'static str,
        /// Its value as typed.
        value: String,
    },
    /// A parameter that should be a number and is not.
    NotANumber {
        /// Parameter name.
        key: &'static str,
        /// Its value as typed.
        value: String,
    },
    /// A value size that is not `N`, `A-B` (with A <= B) or `etc`.
    BadValueSize {
        /// Parameter name.
        key: &'static str,
        /// Its value as typed.
        value: String,
    },
    /// A popularity that is not `uniform`, `zipf:ALPHA` or `pareto:SIGMA:K`.
    BadPopularity {
        /// Parameter name.
        key: &'static str,
        /// Its value as typed.
        value: String,
    },
    /// A number outside the range its parameter allows.
    OutOfRange {
        /// Parameter name.
        key: &'static str,
        /// The value given.
        value: f64,
        /// What the parameter must be, e.g. "must be positive".
        requirement: &'static str,
    },
    /// A workload name none of the generators has.
    UnknownWorkload {
        /// The name given.
        name: String,
    },
    /// A trace format name none of the readers has.
    UnknownTraceFormat {
        /// The name given.
        name: String,
    },
    /// A parameter the named workload does not take.
    UnknownParameter {
        /// The workload's name.
        workload: String,
        /// The parameter given.
        key: String,
    },
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadError::ZipfExponent { alpha } => {
                write!(f, "zipf alpha {alpha}: s < 0 or is NaN in Zipf distribution")
            }
            WorkloadError::ZipfNoRanks => f.write_str("zipf needs at least one rank"),
            WorkloadError::NotKeyValue { pair } => {
                write!(f, "workload parameter `{pair}` is not key=value")
            }
            WorkloadError::NotACount { key, value } => {
                write!(f, "workload parameter {key}={value}: not a count")
            }
            WorkloadError::NotANumber { key, value } => {
                write!(f, "workload parameter {key}={value}: not a number")
            }
            WorkloadError::BadValueSize { key, value } => {
                write!(f, "workload parameter {key}={value}: expected N, A-B or etc")
            }
            WorkloadError::BadPopularity { key, value } => write!(
                f,
                "workload parameter {key}={value}: expected uniform, zipf:ALPHA or pareto:SIGMA:K"
            ),
            WorkloadError::OutOfRange {
                key,
                value,
                requirement,
            } => write!(f, "workload parameter {key}={value}: {requirement}"),
            WorkloadError::UnknownWorkload { name } => write!(
                f,
                "unknown workload `{name}` (etc, zipf, three-phase, qos, mpart-six, diurnal, noisy-neighbour)"
            ),
            WorkloadError::UnknownTraceFormat { name } => write!(
                f,
                "unknown trace format {name:?}; expected one of {}",
                crate::trace::FORMAT_NAMES
            ),
            WorkloadError::UnknownParameter { workload, key } => {
                write!(f, "workload `{workload}` has no parameter `{key}`")
            }
        }
    }
}

impl std::error::Error for WorkloadError {}
