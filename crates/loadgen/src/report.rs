//! The result of a benchmark: serialisable (`--json`) and printable for people.
//!
//! Latencies are microseconds from each request's intended send time. `throughput_ops` counts
//! requests intended inside the measured window and answered, divided by the window's length.
//! Every failure is counted in [`ErrorCounts`]; a report with non-zero errors says so in its
//! first lines rather than hiding them in a total.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::args::BenchArgs;
use crate::histo::LatencySummary;
use crate::qos::QosSearch;
use crate::stats::RunStats;
use crate::OpKind;

/// Failures during a run, by kind. Request counts unless noted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ErrorCounts {
    /// Measured requests unanswered after `--timeout` (or at the end of the drain).
    pub timeouts: u64,
    /// `SERVER_ERROR` replies.
    pub server_errors: u64,
    /// `CLIENT_ERROR` replies.
    pub client_errors: u64,
    /// `ERROR` replies (command unknown to the server).
    pub unknown_command: u64,
    /// Connections closed by the peer or failed with an I/O error (events).
    pub connection_resets: u64,
    /// Replies that were not valid memcached replies or matched no request (events).
    pub protocol: u64,
    /// Measured requests lost when their connection was reset or desynchronised.
    pub abandoned: u64,
    /// Reconnection attempts that failed (events).
    pub connect_failures: u64,
    /// Tenant authentications refused or unanswered on reconnect (events).
    pub auth_failures: u64,
    /// Open-loop arrivals (or preload keys) never sent before the run's end.
    pub unsent: u64,
    /// `NOT_STORED`/`EXISTS`/`NOT_FOUND` answers to sets: counted, not failures.
    pub not_stored: u64,
}

impl ErrorCounts {
    /// Everything but `not_stored`.
    pub fn total(&self) -> u64 {
        self.timeouts
            + self.server_errors
            + self.client_errors
            + self.unknown_command
            + self.connection_resets
            + self.protocol
            + self.abandoned
            + self.connect_failures
            + self.auth_failures
            + self.unsent
    }

    /// Adds `o`'s counts to these.
    pub fn add(&mut self, o: &ErrorCounts) {
        self.timeouts += o.timeouts;
        self.server_errors += o.server_errors;
        self.client_errors += o.client_errors;
        self.unknown_command += o.unknown_command;
        self.connection_resets += o.connection_resets;
        self.protocol += o.protocol;
        self.abandoned += o.abandoned;
        self.connect_failures += o.connect_failures;
        self.auth_failures += o.auth_failures;
        self.unsent += o.unsent;
        self.not_stored += o.not_stored;
    }
}

/// Completed measured requests by type.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct OpCounts {
    /// Single-key gets.
    pub get: u64,
    /// Multi-key gets.
    pub multiget: u64,
    /// Sets.
    pub set: u64,
    /// Sets issued by the lookaside pattern (included in `set`).
    pub lookaside_set: u64,
    /// All requests.
    pub total: u64,
}

/// One `--tenant`'s share of the bench's results (the load it put on the servers and what it got
/// back; the simulator's per-tenant results are `mrcache_sim::TenantReport`).
#[derive(Clone, Debug, Serialize)]
pub struct TenantLoadReport {
    /// The tenant's user, `prefix "..."` when it has none, `default` without `--tenant`.
    pub tenant: String,
    /// Completed measured requests.
    pub ops: u64,
    /// Completed requests per second of the measured window.
    pub throughput_ops: f64,
    /// Key hits over keys asked by its gets; None when no get completed.
    pub hit_ratio: Option<f64>,
    /// All its operations together.
    pub latency_us: LatencySummary,
}

/// The preload phase.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct PreloadReport {
    /// Keys stored.
    pub keys_set: u64,
    /// How long the preload took.
    pub secs: f64,
    /// Failed sets.
    pub errors: ErrorCounts,
}

/// The QoS search, when `--qos` was given.
#[derive(Clone, Debug, Serialize)]
pub struct QosReport {
    /// The target, as typed (`p95=500us`).
    pub target: String,
    /// The search's upper bound and where it came from.
    pub upper_ops: f64,
    /// `--rate` (the user's) or `closed-loop peak run` (measured first).
    pub upper_source: &'static str,
    /// The steps and the best one.
    #[serde(flatten)]
    pub search: QosSearch,
}

/// One step of `--scan`: an open-loop run at one offered rate.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ScanStep {
    /// The rate offered, requests/s.
    pub offered_ops: f64,
    /// Completed requests/s.
    pub throughput_ops: f64,
    /// Key hits over keys asked by gets; None when no get completed.
    pub hit_ratio: Option<f64>,
    /// All operations together, from each request's intended send time.
    pub latency_us: LatencySummary,
    /// Everything in [`ErrorCounts::total`].
    pub errors: u64,
}

impl ScanStep {
    pub(crate) fn new(offered_ops: f64, measured_secs: f64, stats: &RunStats) -> ScanStep {
        ScanStep {
            offered_ops,
            throughput_ops: stats.ops.iter().sum::<u64>() as f64 / measured_secs,
            hit_ratio: ratio(stats.key_hits, stats.key_misses),
            latency_us: stats.latency.total.summary(),
            errors: stats.errors.total(),
        }
    }
}

/// The result of `mrcache bench`.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The options the run used (passwords hidden).
    pub config: BenchArgs,
    /// `closed` or `open`.
    pub mode: &'static str,
    /// Open loop: the rate offered, requests/s.
    pub offered_ops: Option<f64>,
    /// Length of the measured window.
    pub measured_secs: f64,
    /// Completed requests per second of the measured window.
    pub throughput_ops: f64,
    /// Key hits over keys asked by gets; None when no get completed.
    pub hit_ratio: Option<f64>,
    /// Completed measured requests by type.
    pub ops: OpCounts,
    /// Per operation type (`get`, `multiget`, `set`, those that ran) and `total`.
    pub latency_us: BTreeMap<&'static str, LatencySummary>,
    /// Delay between a request's intended and actual send: waiting for a pipeline slot on its
    /// connection plus the client's own scheduling lag. Part of every latency above.
    pub send_delay_us: LatencySummary,
    /// Failed requests by cause.
    pub errors: ErrorCounts,
    /// The text of the last failure, if any.
    pub last_error: Option<String>,
    /// Share of the measured window the load threads were on a CPU (1.0 = every thread busy all
    /// the time). In a closed loop, near 1.0 means the client, not the server, may have limited the
    /// throughput. In an open loop the threads spin before each send time, so it reads high by design.
    pub client_cpu_util: Option<f64>,
    /// How many load threads `client_cpu_util` averages over.
    #[serde(skip)]
    client_threads: usize,
    /// Per tenant, with `--tenant`.
    pub tenants: Vec<TenantLoadReport>,
    /// With `--preload`.
    pub preload: Option<PreloadReport>,
    /// With `--qos`.
    pub qos: Option<QosReport>,
    /// `--scan`: every step in order (the fields above are the last step's).
    pub scan: Option<Vec<ScanStep>>,
}

/// Closed-loop client CPU share from which the text report warns that the client may be the bottleneck.
const CLIENT_BOUND_UTIL: f64 = 0.9;

fn ratio(hits: u64, misses: u64) -> Option<f64> {
    let asked = hits + misses;
    (asked > 0).then(|| hits as f64 / asked as f64)
}

impl Report {
    pub(crate) fn new(
        config: &BenchArgs,
        offered_ops: Option<f64>,
        measured_secs: f64,
        stats: &RunStats,
    ) -> Report {
        let ops = OpCounts {
            get: stats.ops[OpKind::Get as usize],
            multiget: stats.ops[OpKind::MultiGet as usize],
            set: stats.ops[OpKind::Set as usize],
            lookaside_set: stats.lookaside_sets,
            total: stats.ops.iter().sum(),
        };
        let mut latency_us = BTreeMap::new();
        for op in OpKind::ALL {
            let h = stats.latency.get(op);
            if h.count() > 0 {
                latency_us.insert(op.name(), h.summary());
            }
        }
        latency_us.insert("total", stats.latency.total.summary());
        let tenant_names: Vec<String> = if config.tenants.is_empty() {
            vec!["default".into()]
        } else {
            config
                .tenants
                .iter()
                .map(|t| {
                    if t.user.is_empty() {
                        format!("prefix {:?}", t.key_prefix)
                    } else {
                        t.user.clone()
                    }
                })
                .collect()
        };
        let tenants = if config.tenants.is_empty() {
            Vec::new()
        } else {
            stats
                .tenants
                .iter()
                .zip(tenant_names)
                .map(|(t, tenant)| TenantLoadReport {
                    tenant,
                    ops: t.ops,
                    throughput_ops: t.ops as f64 / measured_secs,
                    hit_ratio: ratio(t.key_hits, t.key_misses),
                    latency_us: t.latency.summary(),
                })
                .collect()
        };
        // Serialize and Display already hide passwords; this keeps them out of Debug output too.
        let mut config = config.clone();
        for t in &mut config.tenants {
            if !t.password.is_empty() {
                t.password = "***".into();
            }
        }
        Report {
            config,
            mode: if offered_ops.is_some() {
                "open"
            } else {
                "closed"
            },
            offered_ops,
            measured_secs,
            throughput_ops: ops.total as f64 / measured_secs,
            hit_ratio: ratio(stats.key_hits, stats.key_misses),
            ops,
            latency_us,
            send_delay_us: stats.send_delay.summary(),
            errors: stats.errors,
            last_error: stats.last_error.clone(),
            client_cpu_util: (stats.client_threads > 0 && measured_secs > 0.0)
                .then(|| stats.client_cpu_secs / (measured_secs * stats.client_threads as f64)),
            client_threads: stats.client_threads,
            tenants,
            preload: None,
            qos: None,
            scan: None,
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let servers = self.config.servers.join(",");
        match self.offered_ops {
            Some(r) => writeln!(f, "open loop at {r:.0} req/s against {servers}")?,
            None => writeln!(
                f,
                "closed loop (pipeline {}) against {servers}",
                self.config.pipeline
            )?,
        }
        writeln!(
            f,
            "{} connections/server on {} threads, get ratio {}, {} keys of {} B, values {}, popularity {}",
            self.config.connections,
            self.config.threads,
            self.config.get_ratio,
            self.config.keys,
            self.config.key_size,
            self.config.value_size,
            self.config.popularity,
        )?;
        if let Some(p) = &self.preload {
            writeln!(
                f,
                "preload: {} keys set in {:.2}s, {} errors",
                p.keys_set,
                p.secs,
                p.errors.total()
            )?;
        }
        if let Some(q) = &self.qos {
            writeln!(
                f,
                "QoS search for {} (upper bound {:.0} req/s from {}):",
                q.target, q.upper_ops, q.upper_source
            )?;
            writeln!(
                f,
                "  {:>12} {:>12} {:>10} {:>7}  met",
                "offered/s", "achieved/s", "pctl(us)", "errors"
            )?;
            for s in &q.search.steps {
                let met = if s.met { "yes" } else { "no" };
                writeln!(
                    f,
                    "  {:>12.0} {:>12.0} {:>10} {:>7}  {met}",
                    s.offered_ops, s.achieved_ops, s.percentile_us, s.errors
                )?;
            }
            match &q.search.best {
                Some(b) => writeln!(
                    f,
                    "QoS-constrained throughput: {:.0} req/s (details below)",
                    b.achieved_ops
                )?,
                None => writeln!(f, "QoS target not met at any rate tried (last step below)")?,
            }
        }
        if let Some(steps) = &self.scan {
            writeln!(f, "latency against load (total, us):")?;
            writeln!(
                f,
                "  {:>12} {:>12} {:>7} {:>7} {:>7} {:>7} {:>8} {:>7}",
                "offered/s", "achieved/s", "p50", "p95", "p99", "p99.9", "max", "errors"
            )?;
            for s in steps {
                let l = &s.latency_us;
                writeln!(
                    f,
                    "  {:>12.0} {:>12.0} {:>7} {:>7} {:>7} {:>7} {:>8} {:>7}",
                    s.offered_ops, s.throughput_ops, l.p50, l.p95, l.p99, l.p999, l.max, s.errors
                )?;
            }
            writeln!(f, "last step in detail:")?;
        }
        writeln!(
            f,
            "throughput {:.0} ops/s over {:.1}s ({} ops), hit ratio {}",
            self.throughput_ops,
            self.measured_secs,
            self.ops.total,
            self.hit_ratio
                .map_or("n/a".to_string(), |h| format!("{:.2}%", h * 100.0)),
        )?;
        writeln!(
            f,
            "latency (us)   count      mean    p50    p90    p95    p99  p99.9      max"
        )?;
        for (name, s) in &self.latency_us {
            write_latency_row(f, name, s)?;
        }
        write_latency_row(f, "send delay", &self.send_delay_us)?;
        if let Some(u) = self.client_cpu_util {
            write!(
                f,
                "load generator CPU: {:.0}% of its {} thread(s)",
                u * 100.0,
                self.client_threads
            )?;
            if self.offered_ops.is_none() && u >= CLIENT_BOUND_UTIL {
                write!(
                    f,
                    " - the client may be what limits this throughput (more --threads, on more cores)"
                )?;
            }
            writeln!(f)?;
        }
        for t in &self.tenants {
            writeln!(
                f,
                "tenant {:<16} {:>10.0} ops/s  hit ratio {}  p95 {}us  p99 {}us",
                t.tenant,
                t.throughput_ops,
                t.hit_ratio
                    .map_or("n/a".to_string(), |h| format!("{:.2}%", h * 100.0)),
                t.latency_us.p95,
                t.latency_us.p99,
            )?;
        }
        let e = &self.errors;
        if e.total() == 0 {
            writeln!(f, "errors: none")?;
        } else {
            writeln!(
                f,
                "errors: {} (timeouts {}, server {}, client {}, unknown command {}, resets {}, protocol {}, \
                 abandoned {}, connect {}, auth {}, unsent {})",
                e.total(),
                e.timeouts,
                e.server_errors,
                e.client_errors,
                e.unknown_command,
                e.connection_resets,
                e.protocol,
                e.abandoned,
                e.connect_failures,
                e.auth_failures,
                e.unsent,
            )?;
        }
        if e.not_stored > 0 {
            writeln!(f, "sets not stored: {}", e.not_stored)?;
        }
        if let Some(last) = &self.last_error {
            writeln!(f, "last error reply: {last}")?;
        }
        Ok(())
    }
}

fn write_latency_row(f: &mut fmt::Formatter<'_>, name: &str, s: &LatencySummary) -> fmt::Result {
    writeln!(
        f,
        "  {:<10} {:>9} {:>9.1} {:>6} {:>6} {:>6} {:>6} {:>6} {:>8}",
        name, s.count, s.mean, s.p50, s.p90, s.p95, s.p99, s.p999, s.max
    )
}
