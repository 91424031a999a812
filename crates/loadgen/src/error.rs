//! The load generator's errors: [`OptionError`] for option text that does not parse (clap shows
//! it beside the flag), [`BenchError`] for a benchmark that cannot run.
//!
//! Request-level failures during a run (timeouts, server errors, resets) are not errors of the run:
//! they are counted in [`crate::ErrorCounts`]. Each variant keeps the values it names, so callers
//! and tests can match on it; `Display` is the message a user reads.

use std::fmt;
use std::path::PathBuf;

use mrcache_protocol::KEY_MAX_LENGTH;
use mrcache_workload::TraceError;

use crate::dist::MAX_TRACE_REQUESTS;

/// Why the text of one option does not parse. Texts are quoted as typed.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionError {
    /// A duration whose number does not parse.
    BadDuration(String),
    /// A duration with a unit other than ns, us, ms, s, m.
    BadDurationUnit(String),
    /// A duration too large (or negative) for `Duration`.
    DurationOutOfRange(String),
    /// `uniform:` without `A-B`.
    UniformNeedsRange,
    /// A size in `uniform:A-B` that is not a number.
    BadSize(String),
    /// `uniform:A-B` with A > B.
    UniformMinAboveMax {
        /// A.
        min: usize,
        /// B.
        max: usize,
    },
    /// A value size that is not N, uniform:A-B or etc.
    BadValueSize(String),
    /// `trace:` without a file.
    TraceNeedsFile,
    /// A popularity that is not uniform, zipf:S or trace:PATH.
    BadPopularity,
    /// A Zipf exponent that is not a number >= 0.
    BadZipfExponent(String),
    /// Arrivals other than poisson or etc.
    BadArrivals(String),
    /// A QoS target without `=`.
    BadQosTarget,
    /// A QoS percentile that is not `pNN`.
    BadPercentile(String),
    /// A QoS percentile outside (0, 100).
    PercentileOutOfRange(f64),
    /// A scan that is not FROM..TO:STEP.
    BadScan(String),
    /// A scan whose bounds or step are out of order.
    ScanOutOfOrder(String),
    /// A scan of more than [`crate::defaults::SCAN_MAX_STEPS`] steps.
    ScanTooLong {
        /// The scan as typed.
        scan: String,
        /// Its number of steps.
        steps: usize,
    },
    /// A tenant that is not USER:PASS:WEIGHT:KEYPREFIX.
    BadTenant(String),
    /// A tenant weight that is not a number.
    BadTenantWeight(String),
    /// A tenant weight that is not finite and positive.
    TenantWeightNotPositive(f64),
    /// A tenant key prefix with spaces or control bytes.
    BadKeyPrefix(String),
    /// A user without a password or the other way round, or either with a space.
    BadCredentials,
    /// A `--trace-format` no trace reader has.
    UnknownTraceFormat(String),
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionError::BadDuration(s) => write!(f, "bad duration {s:?}"),
            OptionError::BadDurationUnit(s) => {
                write!(f, "bad duration unit in {s:?} (use ns, us, ms, s, m)")
            }
            OptionError::DurationOutOfRange(s) => write!(f, "duration out of range: {s:?}"),
            OptionError::UniformNeedsRange => f.write_str("uniform value size needs A-B"),
            OptionError::BadSize(s) => write!(f, "bad size {s:?}"),
            OptionError::UniformMinAboveMax { min, max } => {
                write!(f, "uniform:{min}-{max} has min > max")
            }
            OptionError::BadValueSize(s) => {
                write!(f, "bad value size {s:?} (N, uniform:A-B or etc)")
            }
            OptionError::TraceNeedsFile => {
                f.write_str("trace: needs a file, as in trace:web07.trace.xz")
            }
            OptionError::BadPopularity => {
                f.write_str("popularity is uniform, zipf:S or trace:PATH")
            }
            OptionError::BadZipfExponent(s) => {
                write!(f, "bad zipf exponent {s:?} (a number >= 0)")
            }
            OptionError::BadArrivals(s) => write!(f, "bad arrivals {s:?} (poisson or etc)"),
            OptionError::BadQosTarget => f.write_str("qos target is pNN=DURATION"),
            OptionError::BadPercentile(s) => {
                write!(f, "bad percentile {s:?} (p95, p99, p99.9)")
            }
            OptionError::PercentileOutOfRange(p) => write!(f, "percentile {p} outside (0, 100)"),
            OptionError::BadScan(s) => write!(
                f,
                "bad scan {s:?} (FROM..TO:STEP in requests/s, e.g. 20000..200000:20000)"
            ),
            OptionError::ScanOutOfOrder(s) => {
                write!(f, "scan {s:?} needs 0 < FROM <= TO and STEP > 0")
            }
            OptionError::ScanTooLong { scan, steps } => write!(
                f,
                "scan {scan:?} has {steps} steps; at most {} (use a larger STEP)",
                crate::defaults::SCAN_MAX_STEPS
            ),
            OptionError::BadTenant(s) => write!(f, "tenant {s:?} is USER:PASS:WEIGHT:KEYPREFIX"),
            OptionError::BadTenantWeight(s) => write!(f, "bad tenant weight {s:?}"),
            OptionError::TenantWeightNotPositive(w) => {
                write!(f, "tenant weight must be > 0, got {w}")
            }
            OptionError::BadKeyPrefix(p) => {
                write!(f, "tenant key prefix {p:?} has spaces or control bytes")
            }
            OptionError::BadCredentials => {
                f.write_str("tenant user and password: both empty or both without spaces")
            }
            OptionError::UnknownTraceFormat(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for OptionError {}

/// Why a benchmark could not run or finish.
#[derive(Debug)]
pub enum BenchError {
    /// The options are inconsistent or out of range.
    InvalidArgs(String),
    /// `--keys 0` with a synthetic popularity.
    NoKeys,
    /// `--key-size` cannot hold a tenant's prefix, the `k` marker and the largest key index, or
    /// passes memcached's key limit.
    KeySize {
        /// `--key-size`.
        key_size: usize,
        /// The fewest bytes the keys need.
        needed: usize,
        /// The tenant's key prefix.
        prefix: String,
        /// Number of keys.
        keys: u64,
    },
    /// `--popularity trace:PATH` names a file whose format cannot be told from its name.
    TraceFormatUnknown {
        /// The trace file.
        path: PathBuf,
    },
    /// The trace could not be read; the error names the file and byte offset.
    Trace(TraceError),
    /// The trace holds more than `MAX_TRACE_REQUESTS` (250 million) requests.
    TraceTooLong {
        /// The trace file.
        path: PathBuf,
    },
    /// The trace holds no requests.
    TraceEmpty {
        /// The trace file.
        path: PathBuf,
    },
    /// A `--server` did not resolve to an address.
    Resolve {
        /// The server as given.
        server: String,
        /// The resolver's answer.
        reason: String,
    },
    /// A connection could not be opened before the run.
    Connect {
        /// The server as given.
        server: String,
        /// The socket error.
        reason: String,
    },
    /// A tenant's credentials were refused.
    Auth {
        /// The server as given.
        server: String,
        /// The tenant's user.
        user: String,
        /// The server's reply line.
        reply: String,
    },
    /// Threads or sockets could not be created.
    Io(std::io::Error),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::InvalidArgs(msg) => write!(f, "invalid bench options: {msg}"),
            BenchError::NoKeys => f.write_str("invalid bench options: --keys must be at least 1"),
            BenchError::KeySize {
                key_size,
                needed,
                prefix,
                keys,
            } => write!(
                f,
                "invalid bench options: key size {key_size} must be in {needed}..={KEY_MAX_LENGTH} for prefix {prefix:?} and {keys} keys"
            ),
            BenchError::TraceFormatUnknown { path } => write!(
                f,
                "invalid bench options: {}: cannot tell the trace format from the name or first line; pass --trace-format",
                path.display()
            ),
            BenchError::Trace(e) => write!(f, "invalid bench options: {e}"),
            BenchError::TraceTooLong { path } => write!(
                f,
                "invalid bench options: {}: more than {MAX_TRACE_REQUESTS} requests; replay a cut of it",
                path.display()
            ),
            BenchError::TraceEmpty { path } => write!(
                f,
                "invalid bench options: {}: the trace holds no requests",
                path.display()
            ),
            BenchError::Resolve { server, reason } => {
                write!(f, "cannot resolve {server}: {reason}")
            }
            BenchError::Connect { server, reason } => {
                write!(f, "cannot connect to {server}: {reason}")
            }
            BenchError::Auth {
                server,
                user,
                reply,
            } => {
                write!(f, "authentication of {user:?} refused by {server}: {reply}")
            }
            BenchError::Io(e) => write!(f, "bench I/O error: {e}"),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Io(e) => Some(e),
            BenchError::Trace(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::Io(e)
    }
}
