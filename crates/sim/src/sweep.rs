//! One workload at many memory sizes and policies, in parallel: the data of a miss-ratio-vs-memory figure.
//!
//! Every run is independent (its own engine and its own copy of the stream, regenerated from the same seed),
//! so the results are the same whatever the thread count.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use mrcache_units::{parse_size, SizeSyntax, Unit};
use mrcache_workload::synth::Access;
use serde::Serialize;

use crate::upper_bound::{oracle_windows, UpperBoundProfiler};
use crate::{SimConfig, SimError, SimReport, Simulator, SlabPolicy};

/// One point of a sweep.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    /// The policy's spec.
    pub policy: String,
    /// The memory limit.
    pub memory_bytes: u64,
    /// GET miss ratio of the whole run.
    pub miss_ratio: f64,
    /// Miss ratio over the last half of the windows.
    pub steady_state_miss_ratio: f64,
    /// Pages moved between classes.
    pub page_moves: u64,
    /// Dynacache's miss entropy (bits) of the run's misses over slab classes.
    pub miss_entropy: f64,
    /// The upper bound's and the dynamic oracle's model miss ratio (`SimReport::model_miss_ratio`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_miss_ratio: Option<f64>,
    /// The run's whole report.
    #[serde(skip)]
    pub report: SimReport,
}

/// Runs every (policy, memory) pair on `threads` threads. `stream` makes a fresh copy of the workload; it
/// is called on the thread that consumes it, so the stream need not be `Send`. Its error becomes a
/// [`SimError`] (a [`mrcache_workload::WorkloadError`] directly; a caller's own text through
/// [`SimError::Stream`]). The first error of any run is returned.
pub fn sweep<F, E>(
    base: &SimConfig,
    memories: &[u64],
    policies: &[SlabPolicy],
    threads: usize,
    stream: F,
) -> Result<Vec<SweepPoint>, SimError>
where
    F: Fn() -> Result<Box<dyn Iterator<Item = Access>>, E> + Sync,
    SimError: From<E>,
{
    // One exact profiling pass serves the upper bound and the dynamic oracle at every size.
    let upper_bound = if policies.iter().any(SlabPolicy::needs_profile) {
        let mut profiler = UpperBoundProfiler::new(&base.engine, 0)
            .with_windows(&oracle_windows(policies, base.window_requests));
        for a in stream()? {
            profiler.record(&a);
        }
        Some(profiler.finish())
    } else {
        None
    };
    let jobs: Vec<(&SlabPolicy, u64)> = policies
        .iter()
        .flat_map(|p| memories.iter().map(move |&m| (p, m)))
        .collect();
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::with_capacity(jobs.len()));
    let first_error = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(policy, memory)) = jobs.get(i) else {
                    break;
                };
                let run = || -> Result<SweepPoint, SimError> {
                    let mut config = base.clone();
                    config.engine.memory_limit_bytes = memory;
                    let model = match &upper_bound {
                        Some(ub) => ub.configure(&mut config, policy)?,
                        None => None,
                    };
                    let mut report = Simulator::run(config, policy.clone(), stream()?)?;
                    report.model_miss_ratio = model.or(report.model_miss_ratio);
                    Ok(SweepPoint {
                        policy: policy.name().to_string(),
                        memory_bytes: memory,
                        miss_ratio: report.miss_ratio,
                        steady_state_miss_ratio: report.steady_state_miss_ratio(0.5),
                        page_moves: report.page_moves,
                        miss_entropy: report.miss_entropy,
                        model_miss_ratio: report.model_miss_ratio,
                        report,
                    })
                };
                match run() {
                    Ok(point) => results.lock().unwrap().push((i, point)),
                    Err(e) => {
                        first_error.lock().unwrap().get_or_insert(e);
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().unwrap() {
        return Err(e);
    }
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    Ok(results.into_iter().map(|(_, p)| p).collect())
}

/// The sizes the tool takes (`--memory`, sweeps, tenant specs): `mrcache_units`' grammar, a bare number
/// being bytes, fractions allowed (`1.5GiB`).
pub const SIZE_SYNTAX: SizeSyntax = SizeSyntax::fractional(Unit::Bytes);

/// `512MiB`, `1GiB`, `64MB` (MB and MiB both mean 2^20, as memcached's `-m` does), or plain bytes; more
/// than zero.
pub fn parse_bytes(text: &str) -> Result<u64, SimError> {
    let bytes = parse_size(text, SIZE_SYNTAX).map_err(SimError::Size)?;
    if bytes == 0 {
        return Err(SimError::ZeroSize(text.to_string()));
    }
    Ok(bytes)
}

/// `128MiB..1GiB:64MiB`: every size from the first to the last, in steps.
pub fn parse_range(text: &str) -> Result<Vec<u64>, SimError> {
    let bad = || SimError::BadRange(text.to_string());
    let (range, step) = text.split_once(':').ok_or_else(bad)?;
    let (from, to) = range.split_once("..").ok_or_else(bad)?;
    let (from, to, step) = (parse_bytes(from)?, parse_bytes(to)?, parse_bytes(step)?);
    if from > to {
        return Err(bad());
    }
    Ok((0..)
        .map(|i| from + i * step)
        .take_while(|&m| m <= to)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mrcache_workload::synth::WorkloadSpec;

    #[test]
    fn sizes_and_ranges() {
        assert_eq!(parse_bytes("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1GiB").unwrap(), 1 << 30);
        assert_eq!(
            parse_range("128MiB..256MiB:64MiB").unwrap(),
            vec![128 << 20, 192 << 20, 256 << 20]
        );
        assert!(parse_bytes("12 parsecs").is_err());
        assert!(parse_range("1GiB..128MiB:1MiB").is_err());
    }

    #[test]
    fn sweep_is_ordered_and_thread_count_independent() {
        let mut base = SimConfig::with_memory(4 << 20);
        base.window_requests = 10_000;
        let spec = WorkloadSpec::parse("zipf:objects=20000,requests=40000").unwrap();
        let run = |threads| {
            sweep(
                &base,
                &[2 << 20, 4 << 20],
                &[SlabPolicy::memcached(), "automove".parse().unwrap()],
                threads,
                || spec.build(1).map(|s| s as Box<dyn Iterator<Item = Access>>),
            )
            .unwrap()
            .into_iter()
            .map(|p| (p.policy, p.memory_bytes, p.miss_ratio))
            .collect::<Vec<_>>()
        };
        let one = run(1);
        assert_eq!(one, run(2));
        assert_eq!(one.len(), 4);
        assert!(one[1].2 < one[0].2);
    }
}
