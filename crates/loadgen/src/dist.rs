//! Random samplers of the workload: key ranks, value sizes and open-loop inter-arrival gaps.
//!
//! The distributions themselves (Zipf, ETC value sizes, the generalized Pareto) are
//! `mrcache_workload::dist`'s, the ones the simulator's synthetic workloads draw from; this module
//! fits them to the bench's options. Every sampler but the trace is a pure function of the RNG it
//! is handed, so a seeded run is reproducible. A trace ([`KeyTrace`]) is replayed in its own order
//! from one cursor shared by all connections: the sequence of keys is the trace's, their
//! interleaving over connections depends on timing. Invariants: [`KeySampler::sample`] returns an
//! index in `0..n` (index 0 is the most popular key under Zipf, the trace's first key for a
//! trace); [`ValueSizer::size_of`] is a function of the key alone (a key keeps its size for the
//! whole run, as a real object would) and never exceeds [`MAX_VALUE_BYTES`]; a trace key is sized
//! by its id in the trace ([`KeySampler::size_id`]), as `mrcache sim` sizes it, so the same
//! `--seed` gives the simulator's sizes; gaps are finite and non-negative with mean `1 / rate`.
//! A [`RequestBudget`] (`--requests`, `--once`) hands out at most its total of keys over all
//! threads of a phase.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use mrcache_workload::dist::{
    generalized_pareto_quantile, ValueSizeModel, Zipf, ETC_INTERARRIVAL_SHAPE,
};
use mrcache_workload::{open_trace, TraceFormat};
use rand::Rng;

use crate::args::{Arrivals, KeyPopularity, ValueSize};
use crate::BenchError;

/// Largest value the generator sends: memcached's default item limit is 1 MiB including the item
/// header, so stay safely below it. ETC's tail passes this with probability below 1e-9.
pub const MAX_VALUE_BYTES: usize = 1_000_000;

/// Draws key indices in `0..n` by popularity.
#[derive(Debug, Clone)]
pub enum KeySampler {
    /// Every key equally likely.
    Uniform {
        /// Number of keys.
        n: u64,
    },
    /// Key `i` is Zipf rank `i + 1`: key 0 is the hottest.
    Zipf(Zipf),
    /// A trace's keys in its order.
    Trace(Arc<KeyTrace>),
}

impl KeySampler {
    /// A sampler over `n` keys (`--keys`), or over a trace's keys, read here from its file in
    /// `trace_format` (`n` is then unused). Clones share a trace and its cursor.
    pub fn new(
        popularity: &KeyPopularity,
        n: u64,
        trace_format: TraceFormat,
    ) -> Result<Self, BenchError> {
        match popularity {
            KeyPopularity::Trace(path) => Ok(KeySampler::Trace(Arc::new(KeyTrace::load(
                path,
                trace_format,
            )?))),
            _ if n == 0 => Err(BenchError::NoKeys),
            KeyPopularity::Zipf(s) => Zipf::new(n, *s)
                .map(KeySampler::Zipf)
                .map_err(|e| BenchError::InvalidArgs(e.to_string())),
            KeyPopularity::Uniform => Ok(KeySampler::Uniform { n }),
        }
    }

    /// The size of the key space: indices drawn are below it.
    pub fn key_count(&self) -> u64 {
        match self {
            KeySampler::Uniform { n } => *n,
            KeySampler::Zipf(z) => z.ranks(),
            KeySampler::Trace(t) => t.distinct,
        }
    }

    /// Requests in one pass of a trace; None for the endless distributions.
    pub fn trace_len(&self) -> Option<u64> {
        match self {
            KeySampler::Trace(t) => Some(t.keys.len() as u64),
            KeySampler::Uniform { .. } | KeySampler::Zipf(_) => None,
        }
    }

    /// The number a key's value size is drawn from: a trace key's id in the trace (as
    /// `mrcache sim --trace` sizes key-only traces), otherwise the index itself.
    pub fn size_id(&self, index: u64) -> u64 {
        match self {
            KeySampler::Trace(t) => t.ids.get(index as usize).copied().unwrap_or(index),
            KeySampler::Uniform { .. } | KeySampler::Zipf(_) => index,
        }
    }

    /// The index of the next key to request, in `0..key_count()`.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self {
            KeySampler::Uniform { n } => rng.gen_range(0..*n),
            KeySampler::Zipf(z) => z.sample(rng) - 1,
            KeySampler::Trace(t) => t.next(),
        }
    }
}

/// Most requests a trace may hold for replay: 4 bytes each in memory, so 1 GB at this bound.
pub const MAX_TRACE_REQUESTS: usize = 250_000_000;

/// A trace's key sequence for replay: every key renamed to a dense index in order of first
/// appearance (the first key is 0), so the load generator's own fixed-size key names apply.
#[derive(Debug)]
pub struct KeyTrace {
    keys: Box<[u32]>,
    distinct: u64,
    /// The trace's id of every dense index (8 bytes a distinct key): value sizes are drawn from it.
    ids: Box<[u64]>,
    /// Position of the next request, over all connections and phases; wraps around the trace.
    cursor: AtomicUsize,
}

impl KeyTrace {
    /// Reads the whole trace. Errors name the file and offset (the trace readers' errors), or say
    /// the trace is too long to hold.
    pub fn load(path: &Path, format: TraceFormat) -> Result<KeyTrace, BenchError> {
        let reader = open_trace(path, format).map_err(|e| {
            if e.is_unknown_format() {
                BenchError::TraceFormatUnknown {
                    path: path.to_path_buf(),
                }
            } else {
                BenchError::Trace(e)
            }
        })?;
        KeyTrace::from_ids(reader.map(|r| r.map(|req| req.key))).map_err(|e| match e {
            FromIdsError::Read(e) => BenchError::Trace(e),
            FromIdsError::TooLong => BenchError::TraceTooLong {
                path: path.to_path_buf(),
            },
            FromIdsError::Empty => BenchError::TraceEmpty {
                path: path.to_path_buf(),
            },
        })
    }

    /// Builds the sequence from a trace's key ids; the first read error ends it.
    fn from_ids<I, E>(ids: I) -> Result<KeyTrace, FromIdsError<E>>
    where
        I: Iterator<Item = Result<u64, E>>,
    {
        let mut index: HashMap<u64, u32> = HashMap::new();
        let mut keys = Vec::new();
        let mut first_seen = Vec::new();
        for id in ids {
            let id = id.map_err(FromIdsError::Read)?;
            if keys.len() == MAX_TRACE_REQUESTS {
                return Err(FromIdsError::TooLong);
            }
            let next = index.len() as u32; // at most MAX_TRACE_REQUESTS < 2^32 distinct keys
            let dense = *index.entry(id).or_insert_with(|| {
                first_seen.push(id);
                next
            });
            keys.push(dense);
        }
        if keys.is_empty() {
            return Err(FromIdsError::Empty);
        }
        Ok(KeyTrace {
            keys: keys.into_boxed_slice(),
            distinct: index.len() as u64,
            ids: first_seen.into_boxed_slice(),
            cursor: AtomicUsize::new(0),
        })
    }

    /// The key of the next request, looping at the end of the trace.
    fn next(&self) -> u64 {
        let at = self.cursor.fetch_add(1, Relaxed) % self.keys.len();
        u64::from(self.keys[at])
    }
}

#[derive(Debug)]
enum FromIdsError<E> {
    Read(E),
    TooLong,
    Empty,
}

/// At most `total` keys to request over all connections of a phase (`--requests`, `--once`): every
/// key a request names is taken from it first, so the sampler is asked exactly `total` times in all
/// (a trace: its first `total` positions, each once), however the threads interleave.
#[derive(Debug)]
pub struct RequestBudget {
    left: AtomicU64,
}

impl RequestBudget {
    /// A budget of `total` keys.
    pub fn new(total: u64) -> Self {
        RequestBudget {
            left: AtomicU64::new(total),
        }
    }

    /// Takes up to `want` keys; returns how many were granted (0 once the budget is spent).
    pub fn take(&self, want: u64) -> u64 {
        let mut left = self.left.load(Relaxed);
        loop {
            let granted = want.min(left);
            if granted == 0 {
                return 0;
            }
            match self
                .left
                .compare_exchange_weak(left, left - granted, Relaxed, Relaxed)
            {
                Ok(_) => return granted,
                Err(now) => left = now,
            }
        }
    }

    /// True once every key has been handed out.
    pub fn is_spent(&self) -> bool {
        self.left.load(Relaxed) == 0
    }
}

/// Value size of each key, a deterministic function of (seed, key): the workload crate's
/// [`ValueSizeModel`] with sizes capped at [`MAX_VALUE_BYTES`].
#[derive(Debug, Clone)]
pub struct ValueSizer {
    model: ValueSizeModel,
    seed: u64,
}

impl ValueSizer {
    /// The sizer of `--value-size spec`; `seed` fixes which key gets which size.
    pub fn new(spec: ValueSize, seed: u64) -> Self {
        // MAX_VALUE_BYTES < 2^32, so the capped sizes fit the model's u32.
        let cap = |n: usize| n.min(MAX_VALUE_BYTES) as u32;
        let model = match spec {
            ValueSize::Fixed(n) => ValueSizeModel::Fixed(cap(n)),
            ValueSize::Uniform { min, max } => ValueSizeModel::Uniform(cap(min), cap(max)),
            ValueSize::Etc => ValueSizeModel::Etc {
                max: cap(MAX_VALUE_BYTES),
            },
        };
        ValueSizer { model, seed }
    }

    /// The largest size this sizer can return.
    pub fn max_size(&self) -> usize {
        match self.model {
            ValueSizeModel::Fixed(n) | ValueSizeModel::Uniform(_, n) => n as usize,
            ValueSizeModel::Etc { max } => max as usize,
        }
    }

    /// Size of the value stored under key index `key` (of any tenant).
    pub fn size_of(&self, key: u64) -> usize {
        self.model.size(self.seed, key) as usize
    }
}

/// Inter-arrival gaps of one open-loop connection.
#[derive(Debug, Clone, Copy)]
pub struct GapSampler {
    arrivals: Arrivals,
    mean_secs: f64,
}

impl GapSampler {
    /// Gaps with mean `1 / rate` seconds; `rate` must be positive and finite.
    pub fn new(arrivals: Arrivals, rate: f64) -> Self {
        assert!(
            rate.is_finite() && rate > 0.0,
            "arrival rate must be positive"
        );
        GapSampler {
            arrivals,
            mean_secs: 1.0 / rate,
        }
    }

    /// Next gap in seconds.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        match self.arrivals {
            Arrivals::Poisson => -(1.0 - rng.gen::<f64>()).ln() * self.mean_secs,
            // A generalized Pareto with location 0 has mean sigma / (1 - k).
            Arrivals::Etc => {
                let sigma = self.mean_secs * (1.0 - ETC_INTERARRIVAL_SHAPE);
                let u = 1.0 - rng.gen::<f64>(); // in (0, 1]
                generalized_pareto_quantile(u, 0.0, sigma, ETC_INTERARRIVAL_SHAPE)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn rng() -> SmallRng {
        SmallRng::seed_from_u64(7)
    }

    #[test]
    fn key_sampler_stays_in_range() {
        let mut r = rng();
        for pop in [KeyPopularity::Uniform, KeyPopularity::Zipf(1.0)] {
            let ks = KeySampler::new(&pop, 3, TraceFormat::Auto).unwrap();
            assert_eq!(ks.key_count(), 3);
            assert!((0..1000).all(|_| ks.sample(&mut r) < 3));
        }
    }

    fn ids(v: &[u64]) -> impl Iterator<Item = Result<u64, String>> + '_ {
        v.iter().map(|&id| Ok(id))
    }

    #[test]
    fn a_trace_replays_its_keys_in_order_renamed_by_first_appearance_and_loops() {
        let trace = Arc::new(KeyTrace::from_ids(ids(&[900, 7, 900, 42, 7])).unwrap());
        assert_eq!((trace.keys.len(), trace.distinct), (5, 3));
        let ks = KeySampler::Trace(trace);
        assert_eq!(ks.key_count(), 3);
        let mut r = rng();
        let drawn: Vec<u64> = (0..12).map(|_| ks.sample(&mut r)).collect();
        assert_eq!(drawn, [0, 1, 0, 2, 1, 0, 1, 0, 2, 1, 0, 1]);
        // Clones (one per phase) share the cursor: the replay runs on.
        let again = ks.clone();
        assert_eq!(again.sample(&mut r), 0);
        assert_eq!(ks.trace_len(), Some(5));
        // Sizes follow the trace's ids, not the dense indices.
        assert_eq!([ks.size_id(0), ks.size_id(1), ks.size_id(2)], [900, 7, 42]);
        let uniform = KeySampler::new(&KeyPopularity::Uniform, 10, TraceFormat::Auto).unwrap();
        assert_eq!((uniform.trace_len(), uniform.size_id(3)), (None, 3));
    }

    #[test]
    fn a_trace_key_gets_the_size_the_simulator_gives_its_id() {
        let trace = Arc::new(KeyTrace::from_ids(ids(&[123_456, 99, 123_456])).unwrap());
        let ks = KeySampler::Trace(trace);
        let sizer = ValueSizer::new(ValueSize::Etc, 1);
        // `mrcache sim --trace` sizes a key-only trace's request by (seed, trace id); the bench's
        // model differs only in its cap (1,000,000 bytes against 500,000), above these sizes.
        let sim = mrcache_workload::dist::ValueSizeModel::ETC;
        for (index, id) in [(0u64, 123_456u64), (1, 99)] {
            let want = sim.size(1, id) as usize;
            assert!(want < 500_000);
            assert_eq!(sizer.size_of(ks.size_id(index)), want);
        }
    }

    #[test]
    fn a_budget_hands_out_exactly_its_total_over_threads() {
        let budget = RequestBudget::new(7);
        assert_eq!(budget.take(3), 3);
        assert_eq!(budget.take(5), 4, "a multi-get gets what is left");
        assert!(budget.is_spent());
        assert_eq!(budget.take(1), 0);
        let shared = Arc::new(RequestBudget::new(100_000));
        let taken: u64 = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    let b = shared.clone();
                    s.spawn(move || {
                        let mut n = 0;
                        loop {
                            match b.take(3) {
                                0 => return n,
                                k => n += k,
                            }
                        }
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(taken, 100_000);
    }

    #[test]
    fn a_trace_that_fails_or_holds_nothing_is_an_error() {
        let failing = [Ok(1), Err("t.trace: byte 4: partial record".to_string())];
        match KeyTrace::from_ids(failing.into_iter()) {
            Err(FromIdsError::Read(e)) => assert!(e.contains("byte 4"), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            KeyTrace::from_ids(ids(&[])),
            Err(FromIdsError::Empty)
        ));
    }

    #[test]
    fn a_trace_file_loads_through_the_shared_readers() {
        let dir = std::env::temp_dir().join(format!("mrcache-keytrace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("keys.trace"); // cache2k format: big-endian u32 ids
        let bytes: Vec<u8> = [5u32, 6, 5, 5]
            .iter()
            .flat_map(|k| k.to_be_bytes())
            .collect();
        std::fs::write(&path, &bytes).unwrap();
        let popularity = KeyPopularity::Trace(path.clone());
        let KeySampler::Trace(trace) = KeySampler::new(&popularity, 0, TraceFormat::Auto).unwrap()
        else {
            panic!("a trace popularity gives a trace sampler");
        };
        assert_eq!((trace.keys.len(), trace.distinct), (4, 2));
        std::fs::write(&path, &bytes[..6]).unwrap();
        let err = KeyTrace::load(&path, TraceFormat::Auto).unwrap_err();
        assert!(matches!(err, BenchError::Trace(_)), "{err}");
        let err = err.to_string();
        assert!(
            err.contains("keys.trace") && err.contains("byte 4"),
            "{err}"
        );
        let unknown = dir.join("keys.bin");
        std::fs::write(&unknown, &bytes).unwrap();
        let err = KeyTrace::load(&unknown, TraceFormat::Auto).unwrap_err();
        assert!(
            matches!(err, BenchError::TraceFormatUnknown { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("--trace-format"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn quantile(sorted: &[usize], q: f64) -> usize {
        sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
    }

    #[test]
    fn etc_value_sizes_match_the_published_quantiles() {
        let sizer = ValueSizer::new(ValueSize::Etc, 1);
        let mut sizes: Vec<usize> = (0..200_000).map(|k| sizer.size_of(k)).collect();
        assert_eq!(
            sizer.size_of(42),
            sizer.size_of(42),
            "size is a function of the key"
        );
        sizes.sort_unstable();
        let p50 = quantile(&sizes, 0.5);
        let p90 = quantile(&sizes, 0.9);
        assert!((30..=50).contains(&p50), "p50 {p50}");
        assert!((450..=600).contains(&p90), "p90 {p90}");
        let mean = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
        assert!((170.0..220.0).contains(&mean), "mean {mean}");
    }

    #[test]
    fn uniform_value_sizes_cover_the_range() {
        let sizer = ValueSizer::new(ValueSize::Uniform { min: 10, max: 13 }, 3);
        let mut seen = [false; 4];
        for k in 0..1000 {
            seen[sizer.size_of(k) - 10] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(sizer.max_size(), 13);
    }

    #[test]
    fn gaps_have_the_requested_mean() {
        for arrivals in [Arrivals::Poisson, Arrivals::Etc] {
            let g = GapSampler::new(arrivals, 50_000.0);
            let mut r = rng();
            let n = 400_000;
            let mean = (0..n).map(|_| g.sample(&mut r)).sum::<f64>() / n as f64;
            assert!(
                (mean * 50_000.0 - 1.0).abs() < 0.02,
                "{arrivals}: mean gap {mean}"
            );
        }
        // ETC's own scale (sigma 16.0292 us) is recovered at its own rate (mean 18.97 us).
        let g = GapSampler::new(Arrivals::Etc, 1.0 / 18.97e-6);
        let sigma = g.mean_secs * (1.0 - ETC_INTERARRIVAL_SHAPE);
        assert!((sigma * 1e6 - 16.0292).abs() < 0.01, "sigma {sigma}");
    }
}
