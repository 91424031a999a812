//! Turns validated options into phases (preload, measured run, QoS steps) and runs each phase on
//! its worker threads.
//!
//! Threading of a phase: every worker opens its connections (blocking connect and tenant auth, so a
//! refused connection or credential is an error of the run, not a statistic), reports readiness and
//! waits for a start time. The runner then fixes the common start time and sends it; they share
//! nothing else but a progress channel, on which each sends one [`Tick`] per second. The runner
//! prints one progress line per second and merges the workers' statistics when they end. A phase
//! lasts at most warm-up + duration + one timeout of drain after the start.

use std::io::{Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::args::{defaults, BenchArgs, TenantLoad};
use crate::dist::{GapSampler, KeySampler, RequestBudget, ValueSizer, MAX_VALUE_BYTES};
use crate::histo::LatencyHistogram;
use crate::qos::{self, SearchBounds};
use crate::report::{PreloadReport, QosReport, Report, ScanStep};
use crate::request::{push_auth, KeySpace};
use crate::stats::{RunStats, Tick};
use crate::worker::{ConnSpec, LoadMode, Plan, TenantPlan, Window, Worker, TICK};
use crate::{BenchError, Progress};

/// Largest multi-get: keeps a request line well inside memcached's 2 KiB-per-key-ish limits.
const MAX_MULTIGET: usize = 100;
/// Longest single phase accepted (warm-up + duration), a guard against typos like `10h`.
const MAX_PHASE: Duration = Duration::from_secs(24 * 3600);

/// What a phase measured.
struct PhaseResult {
    stats: RunStats,
    elapsed: Duration,
}

/// The phase-independent part of a run: where to connect, and the load's shape.
struct Setup {
    addrs: Vec<(String, SocketAddr)>,
    tenants: Vec<TenantLoad>,
    /// Key popularity, built once (a trace is read once; every phase's clone shares its cursor).
    keys: KeySampler,
}

pub(crate) fn run(args: &BenchArgs, progress: &mut dyn Progress) -> Result<Report, BenchError> {
    let setup = validate(args)?;
    let preload = if args.preload {
        let plan = plan(args, &setup, LoadMode::Preload)?;
        let specs = conn_specs(args, &setup, None, true);
        let timing = (Duration::ZERO, args.preload_timeout.0);
        let r = run_phase(&plan, &specs, args, timing, 0, "preload", progress)?;
        Some(PreloadReport {
            keys_set: r.stats.ops.iter().sum(),
            secs: r.elapsed.as_secs_f64(),
            errors: r.stats.errors,
        })
    } else {
        None
    };
    let measured_secs = args.duration.0.as_secs_f64();
    let timing = (args.warmup.0, args.duration.0);
    let mut report = match (args.qos, args.scan) {
        (None, Some(scan)) => {
            let rates = scan.rates();
            let plan = plan(args, &setup, LoadMode::Open)?;
            let mut steps = Vec::with_capacity(rates.len());
            let mut last = None;
            for (i, &rate) in rates.iter().enumerate() {
                let specs = conn_specs(args, &setup, Some(rate), false);
                let label = format!("scan {rate:.0}/s");
                let r = run_phase(&plan, &specs, args, timing, i as u64 + 1, &label, progress)?;
                steps.push(ScanStep::new(rate, measured_secs, &r.stats));
                last = Some((rate, r.stats));
            }
            let (rate, stats) = last.expect("a scan has at least one rate");
            let mut report = Report::new(args, Some(rate), measured_secs, &stats);
            report.scan = Some(steps);
            report
        }
        (None, None) => {
            let mode = if args.rate.is_some() {
                LoadMode::Open
            } else {
                LoadMode::Closed
            };
            let mut plan = plan(args, &setup, mode)?;
            plan.budget = request_limit(args, &setup.keys).map(|n| Arc::new(RequestBudget::new(n)));
            let specs = conn_specs(args, &setup, args.rate, false);
            let r = run_phase(&plan, &specs, args, timing, 1, "run", progress)?;
            // A bounded run may end before --duration: its window is what actually ran.
            let measured_secs = if plan.budget.is_some() {
                r.elapsed
                    .saturating_sub(args.warmup.0)
                    .min(args.duration.0)
                    .as_secs_f64()
            } else {
                measured_secs
            };
            Report::new(args, args.rate, measured_secs, &r.stats)
        }
        (Some(target), _) => {
            let (upper_ops, upper_source) = match args.rate {
                Some(rate) => (rate, "--rate"),
                None => {
                    let plan = plan(args, &setup, LoadMode::Closed)?;
                    let specs = conn_specs(args, &setup, None, false);
                    let r = run_phase(&plan, &specs, args, timing, 1, "peak", progress)?;
                    (
                        r.stats.ops.iter().sum::<u64>() as f64 / measured_secs,
                        "closed-loop peak run",
                    )
                }
            };
            let plan = plan(args, &setup, LoadMode::Open)?;
            let limit_us = target.limit.as_micros() as u64;
            let bounds = SearchBounds {
                upper_ops: upper_ops.max(1.0),
                precision: defaults::QOS_PRECISION,
                max_steps: defaults::QOS_MAX_STEPS,
            };
            let mut best_run: Option<(f64, RunStats)> = None;
            let mut last_run: Option<(f64, RunStats)> = None;
            let mut step_no = 1;
            let search = qos::search(bounds, |rate| {
                step_no += 1;
                let specs = conn_specs(args, &setup, Some(rate), false);
                let mut runs = Vec::with_capacity(args.qos_repeats as usize);
                for run in 1..=args.qos_repeats {
                    let label = if args.qos_repeats > 1 {
                        format!("qos {rate:.0}/s #{run}")
                    } else {
                        format!("qos {rate:.0}/s")
                    };
                    runs.push(run_phase(
                        &plan, &specs, args, timing, step_no, &label, progress,
                    )?);
                }
                let pctls: Vec<u64> = runs
                    .iter()
                    .map(|r| r.stats.latency.total.percentile_us(target.percentile))
                    .collect();
                let median = qos::median_run(&pctls);
                let pctl = pctls[median];
                let r = runs.swap_remove(median);
                let achieved = r.stats.ops.iter().sum::<u64>() as f64 / measured_secs;
                let step = qos::judge(rate, achieved, pctl, r.stats.errors.total(), limit_us);
                if step.met {
                    best_run = Some((rate, r.stats));
                } else {
                    last_run = Some((rate, r.stats));
                }
                Ok::<_, BenchError>(step)
            })?;
            let (rate, stats) = best_run
                .or(last_run)
                .expect("the search runs at least one step");
            let mut report = Report::new(args, Some(rate), measured_secs, &stats);
            report.qos = Some(QosReport {
                target: target.to_string(),
                upper_ops,
                upper_source,
                search,
            });
            report
        }
    };
    report.preload = preload;
    report.config.keys = setup.keys.key_count();
    Ok(report)
}

/// Checks the options and resolves the servers.
fn validate(args: &BenchArgs) -> Result<Setup, BenchError> {
    let bad = |msg: String| Err(BenchError::InvalidArgs(msg));
    if args.connections == 0 || args.threads == 0 || args.pipeline == 0 {
        return bad("--connections, --threads and --pipeline must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&args.get_ratio) {
        return bad(format!("--get-ratio {} is not in [0, 1]", args.get_ratio));
    }
    let keys = KeySampler::new(&args.popularity, args.keys, args.trace_format)?;
    if args.once && keys.trace_len().is_none() {
        return bad("--once replays a trace: it needs --popularity trace:PATH".into());
    }
    if (args.once || args.requests.is_some()) && (args.qos.is_some() || args.scan.is_some()) {
        return bad("--requests and --once bound a single run: not with --qos or --scan".into());
    }
    if !(1..=MAX_MULTIGET).contains(&args.multiget) {
        return bad(format!("--multiget must be in 1..={MAX_MULTIGET}"));
    }
    if args.duration.0.is_zero() || args.warmup.0 + args.duration.0 > MAX_PHASE {
        return bad("--duration must be positive and warm-up + duration at most 24h".into());
    }
    if args.timeout.0.is_zero() {
        return bad("--timeout must be positive".into());
    }
    if let Some(rate) = args.rate {
        if !(rate.is_finite() && rate > 0.0) {
            return bad(format!("--rate {rate} must be a positive number"));
        }
    }
    let sizer = ValueSizer::new(args.value_size, args.seed);
    if matches!(args.value_size, crate::ValueSize::Fixed(n) | crate::ValueSize::Uniform { max: n, .. } if n > MAX_VALUE_BYTES)
    {
        return bad(format!(
            "values above {MAX_VALUE_BYTES} bytes are not supported"
        ));
    }
    debug_assert!(sizer.max_size() <= MAX_VALUE_BYTES);
    let tenants = if args.tenants.is_empty() {
        vec![TenantLoad {
            user: String::new(),
            password: String::new(),
            weight: 1.0,
            key_prefix: String::new(),
        }]
    } else {
        args.tenants.clone()
    };
    if args.connections < tenants.len() {
        return bad(format!(
            "{} tenants need at least as many --connections",
            tenants.len()
        ));
    }
    for t in &tenants {
        KeySpace::new(&t.key_prefix, args.key_size, keys.key_count())?;
    }
    let mut addrs = Vec::new();
    for server in &args.servers {
        let addr = server
            .to_socket_addrs()
            .map_err(|e| BenchError::Resolve {
                server: server.clone(),
                reason: e.to_string(),
            })?
            .next()
            .ok_or_else(|| BenchError::Resolve {
                server: server.clone(),
                reason: "no address".into(),
            })?;
        addrs.push((server.clone(), addr));
    }
    if addrs.is_empty() {
        return bad("at least one --server is needed".into());
    }
    Ok(Setup {
        addrs,
        tenants,
        keys,
    })
}

/// How many keys a bounded run requests: `--requests`, one pass of the trace with `--once`, or
/// the fewer of the two; None when the run is bounded by time only.
fn request_limit(args: &BenchArgs, keys: &KeySampler) -> Option<u64> {
    let once = keys.trace_len().filter(|_| args.once);
    match (args.requests, once) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn plan(args: &BenchArgs, setup: &Setup, mode: LoadMode) -> Result<Plan, BenchError> {
    let sizer = ValueSizer::new(args.value_size, args.seed);
    let mut tenants = Vec::new();
    for t in &setup.tenants {
        tenants.push(TenantPlan {
            space: KeySpace::new(&t.key_prefix, args.key_size, setup.keys.key_count())?,
            user: t.user.clone(),
            password: t.password.clone(),
        });
    }
    Ok(Plan {
        mode,
        pipeline: args.pipeline,
        get_ratio: args.get_ratio,
        multiget: args.multiget,
        lookaside: args.lookaside,
        backend_delay: args.backend_delay.0,
        keys: setup.keys.clone(),
        value: vec![b'v'; sizer.max_size()],
        sizer,
        tenants,
        timeout: args.timeout.0,
        io: args.io,
        budget: None,
        tls: tls_config(args)?,
    })
}

/// `--tls-ca`: a rustls client configuration trusting the CAs of the file.
fn tls_config(args: &BenchArgs) -> Result<Option<Arc<rustls::ClientConfig>>, BenchError> {
    use rustls::pki_types::pem::PemObject;
    let Some(path) = &args.tls_ca else {
        return Ok(None);
    };
    let bad = |why: String| BenchError::InvalidArgs(format!("--tls-ca {}: {why}", path.display()));
    if args.io != crate::worker::ClientIo::Epoll {
        return Err(bad("TLS runs on --io epoll only".into()));
    }
    if args.tenants.iter().any(|t| !t.user.is_empty()) {
        return Err(bad(
            "TLS with --tenant authentication is not supported".into()
        ));
    }
    let mut roots = rustls::RootCertStore::empty();
    let certs =
        rustls::pki_types::CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))?;
    for cert in certs {
        roots
            .add(cert.map_err(|e| bad(e.to_string()))?)
            .map_err(|e| bad(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(bad("no certificate in it".into()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Some(Arc::new(config)))
}

/// Splits `total` into shares proportional to `weights`, each at least 1 (largest remainder).
fn apportion(total: usize, weights: &[f64]) -> Vec<usize> {
    let n = weights.len();
    let spare = total - n;
    let sum: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights.iter().map(|w| spare as f64 * w / sum).collect();
    let mut shares: Vec<usize> = exact.iter().map(|e| 1 + e.floor() as usize).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
    let mut left = total - shares.iter().sum::<usize>();
    for &i in order.iter().cycle().take(n.max(1) * 2) {
        if left == 0 {
            break;
        }
        shares[i] += 1;
        left -= 1;
    }
    shares
}

/// The connections of a phase: `--connections` per server, shared among tenants by weight. An
/// open-loop `rate` is split by tenant weight, then evenly over that tenant's connections.
fn conn_specs(args: &BenchArgs, setup: &Setup, rate: Option<f64>, preload: bool) -> Vec<ConnSpec> {
    let weights: Vec<f64> = setup.tenants.iter().map(|t| t.weight).collect();
    let weight_sum: f64 = weights.iter().sum();
    let shares = apportion(args.connections, &weights);
    let servers = setup.addrs.len();
    let mut specs = Vec::new();
    for (_, addr) in &setup.addrs {
        for (tenant, &conns) in shares.iter().enumerate() {
            let per_conn =
                rate.map(|r| r * weights[tenant] / weight_sum / (conns * servers) as f64);
            for c in 0..conns as u64 {
                let keys = setup.keys.key_count();
                let range = if preload {
                    (keys * c / conns as u64)..(keys * (c + 1) / conns as u64)
                } else {
                    0..0
                };
                specs.push(ConnSpec {
                    addr: *addr,
                    tenant,
                    gaps: per_conn.map(|r| GapSampler::new(args.arrivals, r)),
                    preload: range,
                });
            }
        }
    }
    specs
}

/// Opens one connection and authenticates it, blocking, before the phase starts.
fn open(
    addr: SocketAddr,
    tenant: &TenantPlan,
    timeout: Duration,
) -> Result<mio::net::TcpStream, BenchError> {
    let server = addr.to_string();
    let fail = |e: std::io::Error| BenchError::Connect {
        server: server.clone(),
        reason: e.to_string(),
    };
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout).map_err(fail)?;
    s.set_nodelay(true).map_err(fail)?;
    if !tenant.user.is_empty() {
        let mut req = Vec::new();
        push_auth(&mut req, &tenant.user, &tenant.password);
        s.set_read_timeout(Some(timeout)).map_err(fail)?;
        s.write_all(&req).map_err(fail)?;
        let mut reply = Vec::new();
        let mut chunk = [0u8; 256];
        while !reply.ends_with(b"\r\n") && reply.len() < 1024 {
            let n = s.read(&mut chunk).map_err(fail)?;
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&chunk[..n]);
        }
        if reply != b"STORED\r\n" {
            let reply = String::from_utf8_lossy(&reply).trim_end().to_string();
            return Err(BenchError::Auth {
                server,
                user: tenant.user.clone(),
                reply,
            });
        }
    }
    s.set_nonblocking(true).map_err(fail)?;
    Ok(mio::net::TcpStream::from_std(s))
}

/// Runs one phase: `timing` is (warm-up, measured duration); `phase` varies the random streams.
fn run_phase(
    plan: &Plan,
    specs: &[ConnSpec],
    args: &BenchArgs,
    timing: (Duration, Duration),
    phase: u64,
    label: &str,
    progress: &mut dyn Progress,
) -> Result<PhaseResult, BenchError> {
    let threads = args.threads.min(specs.len()).max(1);
    let mut per_thread: Vec<Vec<ConnSpec>> = vec![Vec::new(); threads];
    for (i, spec) in specs.iter().enumerate() {
        per_thread[i % threads].push(spec.clone());
    }
    let (ready_tx, ready_rx) = mpsc::channel::<Result<(), BenchError>>();
    let (tick_tx, tick_rx) = mpsc::channel::<Tick>();
    let (warmup, duration) = timing;
    let timeout = plan.timeout;
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        // Each worker waits for its start time on its own channel; None (or a hang-up) aborts.
        let mut gates = Vec::new();
        for (t, mine) in per_thread.into_iter().enumerate() {
            let (ready_tx, tick_tx) = (ready_tx.clone(), tick_tx.clone());
            let (gate_tx, gate_rx) = mpsc::channel::<Option<Instant>>();
            let seed =
                args.seed ^ (phase << 32) ^ (t as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let body = move || {
                let worker = mine
                    .iter()
                    .map(|s| open(s.addr, &plan.tenants[s.tenant], timeout))
                    .collect::<Result<Vec<_>, _>>()
                    .and_then(|streams| {
                        Worker::new(plan, &mine, streams, SmallRng::seed_from_u64(seed), tick_tx)
                            .map_err(BenchError::Io)
                    });
                let worker = match worker {
                    Ok(w) => {
                        let _ = ready_tx.send(Ok(()));
                        w
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return None;
                    }
                };
                let start = gate_rx.recv().ok().flatten()?;
                let measure_start = start + warmup;
                let window = Window {
                    measure_start,
                    measure_end: measure_start + duration,
                    drain_deadline: measure_start + duration + timeout,
                };
                Some(worker.run(start, window))
            };
            let spawned = std::thread::Builder::new()
                .name(format!("mrcache-bench-{t}"))
                .spawn_scoped(scope, body);
            match spawned {
                Ok(h) => {
                    handles.push(h);
                    gates.push(gate_tx);
                }
                // Dropping `gates` on return releases the workers already started, as aborted.
                Err(e) => return Err(BenchError::Io(e)),
            }
        }
        drop((ready_tx, tick_tx));
        let mut first_error = None;
        for _ in 0..threads {
            if let Ok(Err(e)) = ready_rx.recv() {
                first_error.get_or_insert(e);
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let start = Instant::now();
        for gate in &gates {
            let _ = gate.send(Some(start));
        }
        progress.phase(label, warmup + duration);
        report_progress(&tick_rx, start, warmup, duration, label, progress);
        let mut stats = RunStats::new(plan.tenants.len());
        for h in handles {
            match h.join() {
                Ok(Some(s)) => stats.merge(&s),
                Ok(None) => {}
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        Ok(PhaseResult {
            stats,
            elapsed: start.elapsed(),
        })
    })
}

/// Reports one line per second until every worker has hung up.
fn report_progress(
    ticks: &mpsc::Receiver<Tick>,
    start: Instant,
    warmup: Duration,
    duration: Duration,
    label: &str,
    out: &mut dyn Progress,
) {
    let mut ops = 0u64;
    let mut errors = 0u64;
    let mut latency = LatencyHistogram::new();
    // Print a little after each tick so every worker's tick for that second has arrived.
    let mut next_print = start + TICK + Duration::from_millis(100);
    loop {
        let wait = next_print.saturating_duration_since(Instant::now());
        match ticks.recv_timeout(wait) {
            Ok(t) => {
                ops += t.ops;
                errors += t.errors;
                latency.merge(&t.latency);
            }
            Err(RecvTimeoutError::Timeout) => {
                let elapsed = next_print.duration_since(start) - Duration::from_millis(100);
                let stage = if elapsed <= warmup {
                    "warmup"
                } else if elapsed <= warmup + duration {
                    "measure"
                } else {
                    "drain"
                };
                let line = format!(
                    "[{label} {:>6.1}s {stage:<7}] {:>10.0} ops/s  p50 {:>6}us  p99 {:>7}us  errors {}",
                    elapsed.as_secs_f64(),
                    ops as f64 / TICK.as_secs_f64(),
                    latency.percentile_us(50.0),
                    latency.percentile_us(99.0),
                    errors,
                );
                out.tick(elapsed, &line);
                ops = 0;
                latency.clear();
                next_print += TICK;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_respects_weights_and_gives_everyone_one() {
        assert_eq!(apportion(16, &[1.0]), vec![16]);
        assert_eq!(apportion(10, &[3.0, 1.0]), vec![7, 3]);
        assert_eq!(apportion(2, &[100.0, 1.0]), vec![1, 1]);
        let s = apportion(17, &[1.0, 1.0, 1.0]);
        assert_eq!(s.iter().sum::<usize>(), 17);
        assert!(s.iter().all(|&c| (5..=6).contains(&c)));
    }
}
