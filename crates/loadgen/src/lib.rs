//! mrcache-loadgen: open- and closed-loop load for memcached-compatible servers.
//!
//! The generator behind `mrcache bench`. Many non-blocking connections are multiplexed on a few
//! threads with mio; each thread owns its connections, random streams and histograms outright,
//! and the only cross-thread traffic is a start barrier, one progress message per thread per
//! second, and the final statistics (see `runner`). Latency is measured from each request's
//! *intended* send time, so an open-loop run that falls behind schedule charges the wait to the
//! requests (no coordinated omission). Every run is bounded: warm-up + duration + one request
//! timeout of drain, after which anything unanswered is counted as a timeout.
//!
//! Layout: `args` (options), `dist` (samplers), `request`/`reply` (the wire, client side),
//! `histo` (HdrHistogram), `stats` (what a worker counts), `conn` (one connection's buffers and reply matching), `worker` (one
//! thread's event loop), `runner` (threads, phases, progress), `qos` (rate search), `report`.

mod args;
mod conn;
mod dist;
mod histo;
mod qos;
mod reply;
mod report;
mod request;
mod runner;
mod stats;
mod worker;

use std::fmt;

pub use args::{
    defaults, Arrivals, BenchArgs, HumanDuration, Popularity, QosTarget, RateScan, TenantSpec,
    ValueSize,
};
pub use dist::{GapSampler, KeySampler, ValueSizer, Zipf, MAX_VALUE_BYTES};
pub use histo::{LatencyHistogram, LatencySummary};
pub use qos::{QosSearch, QosStep};
pub use reply::{parse_item, MalformedReply, ReplyItem};
pub use report::{ErrorCounts, OpCounts, PreloadReport, QosReport, Report, ScanStep, TenantReport};

/// The operation types measured separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Get = 0,
    MultiGet = 1,
    Set = 2,
}

impl OpKind {
    pub const ALL: [OpKind; 3] = [OpKind::Get, OpKind::MultiGet, OpKind::Set];

    pub fn name(self) -> &'static str {
        match self {
            OpKind::Get => "get",
            OpKind::MultiGet => "multiget",
            OpKind::Set => "set",
        }
    }
}

/// Why a benchmark could not run or finish. Request-level failures during a run (timeouts,
/// server errors, resets) are not errors of the run: they are counted in [`ErrorCounts`].
#[derive(Debug)]
pub enum BenchError {
    /// The options are inconsistent or out of range.
    InvalidArgs(String),
    /// A `--server` did not resolve to an address.
    Resolve { server: String, reason: String },
    /// A connection could not be opened before the run.
    Connect { server: String, reason: String },
    /// A tenant's credentials were refused.
    Auth {
        server: String,
        user: String,
        reply: String,
    },
    /// Threads or sockets could not be created.
    Io(std::io::Error),
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::InvalidArgs(msg) => write!(f, "invalid bench options: {msg}"),
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
            _ => None,
        }
    }
}

impl From<std::io::Error> for BenchError {
    fn from(e: std::io::Error) -> Self {
        BenchError::Io(e)
    }
}

/// Runs the benchmark `args` describes: optional preload, then one measured run, or a QoS search
/// when `--qos` is given. A progress line is written to `progress` once a second (write errors on
/// it are ignored: progress is advisory). Returns the report; print it with `Display`, or as JSON
/// with serde when `args.json`.
pub fn run(args: &BenchArgs, progress: &mut dyn std::io::Write) -> Result<Report, BenchError> {
    runner::run(args, progress)
}
