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
//! Layout: `args` (options), `dist` (samplers over `mrcache_workload::dist`), `error`,
//! `request`/`reply` (the wire, client side), `histo` (HdrHistogram), `stats` (what a worker
//! counts), `conn` (one connection's buffers and reply matching), `worker` (one thread's event
//! loop), `runner` (threads, phases, progress), `qos` (rate search), `report`.

#![warn(missing_docs)]

mod args;
mod conn;
mod dist;
mod error;
mod histo;
mod qos;
mod reply;
mod report;
mod request;
mod runner;
mod stats;
mod uring;
mod worker;

pub use args::{
    defaults, Arrivals, BenchArgs, HumanDuration, KeyPopularity, QosTarget, RateScan, TenantLoad,
    ValueSize,
};
pub use dist::{GapSampler, KeySampler, RequestBudget, ValueSizer, MAX_VALUE_BYTES};
pub use error::{BenchError, OptionError};
pub use histo::{LatencyHistogram, LatencySummary};
pub use qos::{QosSearch, QosStep};
pub use reply::{parse_item, MalformedReply, ReplyItem, MAX_DATA_BYTES, MAX_LINE_BYTES};
pub use report::{
    ErrorCounts, OpCounts, PreloadReport, QosReport, Report, ScanStep, TenantLoadReport,
};

/// The operation types measured separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// A get of one key.
    Get = 0,
    /// A get of `--multiget` keys.
    MultiGet = 1,
    /// A set.
    Set = 2,
}

impl OpKind {
    /// Every kind, in index order.
    pub const ALL: [OpKind; 3] = [OpKind::Get, OpKind::MultiGet, OpKind::Set];

    /// The kind's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Get => "get",
            OpKind::MultiGet => "multiget",
            OpKind::Set => "set",
        }
    }
}

/// Runs the benchmark `args` describes: optional preload, then one measured run, or a QoS search
/// when `--qos` is given. A progress line is written to `progress` once a second (write errors on
/// it are ignored: progress is advisory). Returns the report; print it with `Display`, or as JSON
/// with serde when `args.json`.
pub fn run(args: &BenchArgs, progress: &mut dyn std::io::Write) -> Result<Report, BenchError> {
    runner::run(args, &mut ProgressLines(progress))
}

/// [`run`], telling `progress` when each phase starts and what each second measured (the CLI draws
/// a bar from it).
pub fn run_with_progress(
    args: &BenchArgs,
    progress: &mut dyn Progress,
) -> Result<Report, BenchError> {
    runner::run(args, progress)
}

/// What a run reports while it runs. Progress is advisory: nothing a callee does here changes the run.
pub trait Progress {
    /// A phase (preload, run, one scan or QoS step) starts; it lasts about `planned` (warm-up plus
    /// measured duration; a preload's timeout, which it usually ends well before), plus a drain.
    fn phase(&mut self, label: &str, planned: std::time::Duration);
    /// One second of the current phase: the time since it started and the progress line
    /// (`[LABEL  ELAPSED STAGE] OPS ops/s  p50 ..us  p99 ..us  errors N`).
    fn tick(&mut self, elapsed: std::time::Duration, line: &str);
}

/// Progress as lines on a writer, one a second (what [`run`] writes); write errors are ignored.
pub struct ProgressLines<W>(pub W);

impl<W: std::io::Write> Progress for ProgressLines<W> {
    fn phase(&mut self, _label: &str, _planned: std::time::Duration) {}

    fn tick(&mut self, _elapsed: std::time::Duration, line: &str) {
        let _ = writeln!(self.0, "{line}");
    }
}
