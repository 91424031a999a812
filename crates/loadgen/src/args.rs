//! Command-line options of `mrcache bench` and the small value types they parse into.
//!
//! [`BenchArgs`] is the one place where every knob and its default is declared; the rest of the
//! crate reads a validated copy of it. Each option type here parses from the text a user types
//! (`10s`, `zipf:0.99`, `p95=500us`, `uniform:100-1000`, `user:pass:3:app1:`) and prints back the
//! same text, so the configuration echoed in a report can be pasted back onto the command line.
//! Passwords are the one exception: they are echoed as `***`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use mrcache_workload::TraceFormat;
use serde::{Serialize, Serializer};

use crate::error::OptionError;

/// Defaults, each with the reason it was chosen.
pub mod defaults {
    /// memcaslap's `-c` is 128; 16 keeps a laptop-sized run from saturating the client itself.
    pub const CONNECTIONS: usize = 16;
    /// One event-loop thread drives many connections; add threads only when the client saturates.
    pub const THREADS: usize = 1;
    /// 90% gets: memcaslap's default get:set of 9:1.
    pub const GET_RATIO: f64 = 0.9;
    /// 100k keys: larger than any CPU cache, small enough to preload in a second.
    pub const KEYS: u64 = 100_000;
    /// 32-byte keys: close to ETC's median key (34 B).
    pub const KEY_SIZE: usize = 32;
    /// Per-request timeout; the text protocol has no request ids, so a timeout resets the connection.
    pub const TIMEOUT: &str = "1s";
    /// Fixed seed: two runs with the same options issue the same request sequence per connection.
    pub const SEED: u64 = 0x6d72_6361_6368_6521;
    /// mutilate stops its binary search once high and low are within 2% of each other.
    pub const QOS_PRECISION: f64 = 0.02;
    /// Bound on the number of QoS search steps, whatever the precision.
    pub const QOS_MAX_STEPS: usize = 12;
    /// Bound on the number of `--scan` steps (each is a full warm-up + duration run).
    pub const SCAN_MAX_STEPS: usize = 100;
}

/// Options of `mrcache bench`: load one or more memcached-compatible servers and measure latency.
#[derive(Debug, Clone, clap::Args, Serialize)]
pub struct BenchArgs {
    /// Servers to load, HOST:PORT, comma separated or repeated. Every server receives the full
    /// workload over the full key space (mutilate semantics); no client-side sharding.
    #[arg(long = "server", short = 's', required = true, value_delimiter = ',')]
    pub servers: Vec<String>,

    /// Connections to each server, spread round-robin over the threads (memcaslap's -c).
    #[arg(long, default_value_t = defaults::CONNECTIONS)]
    pub connections: usize,

    /// The load threads' network I/O: epoll (mio; a read and a write per connection and turn) or uring
    /// (io_uring: every connection's send and receive of a turn in one system call, so that where the
    /// client's own kernel time limits an unpipelined run, the server is what is measured).
    #[arg(long, value_enum, default_value = "epoll")]
    pub io: crate::worker::ClientIo,

    /// Client event-loop threads; each drives its share of the connections with mio.
    #[arg(long, default_value_t = defaults::THREADS)]
    pub threads: usize,

    /// Measured time of the run (and of each QoS search step), e.g. 10s, 500ms.
    #[arg(long, default_value = "10s")]
    pub duration: HumanDuration,

    /// Time before measurement starts; requests are sent but not recorded.
    #[arg(long, default_value = "2s")]
    pub warmup: HumanDuration,

    /// Open loop: total requests per second over all connections, issued on schedule whatever the
    /// replies; latency counts from each request's intended send time. Without it: closed loop.
    /// With --qos it is the upper bound of the search (otherwise a closed-loop run finds one).
    #[arg(long)]
    pub rate: Option<f64>,

    /// Inter-arrival distribution of the open loop: poisson, or etc (Facebook ETC's generalized
    /// Pareto, shape kept, scale set to the rate).
    #[arg(long, default_value = "poisson")]
    pub arrivals: Arrivals,

    /// Fraction of requests that are gets (multi-gets when --multiget > 1); the rest are sets.
    #[arg(long, default_value_t = defaults::GET_RATIO)]
    pub get_ratio: f64,

    /// Number of distinct keys per tenant.
    #[arg(long, default_value_t = defaults::KEYS)]
    pub keys: u64,

    /// Key length in bytes, tenant prefix included (memcached allows up to 250).
    #[arg(long, default_value_t = defaults::KEY_SIZE)]
    pub key_size: usize,

    /// Value sizes: N (fixed), uniform:A-B, or etc (Facebook ETC). A key's size never changes.
    #[arg(long, default_value = "200")]
    pub value_size: ValueSize,

    /// Key popularity: uniform, zipf:S with exponent S >= 0 (rank 1 = key 0 is hottest), or
    /// trace:PATH, the key sequence of a trace file (any format `mrcache sim` reads, compressed or
    /// not), replayed in order by all connections together and looped (see --once). With a trace,
    /// --keys is the trace's number of distinct keys; --get-ratio and --value-size still decide
    /// operations and sizes, a key's size drawn from its id in the trace, so that with the same
    /// --seed and --key-size a key-only trace gets the sizes `mrcache sim --trace` gives it.
    #[arg(long, default_value = "uniform")]
    pub popularity: KeyPopularity,

    /// With --popularity trace:PATH, the trace's format (auto detects it from the name).
    #[arg(long, default_value = "auto", value_parser = parse_trace_format)]
    #[serde(serialize_with = "serialize_display")]
    pub trace_format: TraceFormat,

    /// End the run once this many keys have been requested (all connections together, warm-up
    /// included; a multi-get counts its keys, the sets --lookaside sends after misses do not count),
    /// or when --duration ends if that comes first. Not with --qos or --scan.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,

    /// With --popularity trace:PATH: replay the trace once, then end the run, instead of looping
    /// it until --duration ends (set --duration long enough; with --requests, whichever is fewer).
    /// With --connections 1 and --pipeline 1 the server sees the trace's own order, and each
    /// lookaside set right after the get that missed. Not with --qos or --scan.
    #[arg(long)]
    pub once: bool,

    /// Keys per get: above 1 every get is a multi-get of that many keys.
    #[arg(long, default_value_t = 1)]
    pub multiget: usize,

    /// Lookaside caching: every key a get misses is then set, as an application fills its cache.
    #[arg(long)]
    pub lookaside: bool,

    /// With --lookaside: simulated backend time between the miss and the set.
    #[arg(long, default_value = "0us")]
    pub backend_delay: HumanDuration,

    /// Requests each connection may have on the wire at once (closed loop: always keeps them).
    #[arg(long, default_value_t = 1)]
    pub pipeline: usize,

    /// Find the highest open-loop rate meeting a latency target, e.g. p95=500us or p99=1ms, by
    /// binary search (mutilate style); each step runs --warmup + --duration.
    #[arg(long)]
    pub qos: Option<QosTarget>,

    /// With --qos: run every search step this many times (1-9) and judge it by the run with the
    /// median percentile, so that one disturbed run on a shared machine does not decide the search.
    /// 1 is mutilate's procedure.
    #[arg(long, default_value_t = 1, requires = "qos", value_parser = clap::value_parser!(u32).range(1..=9))]
    pub qos_repeats: u32,

    /// Latency against load: one open-loop run at each rate FROM..TO:STEP (requests/s, e.g.
    /// 20000..200000:20000, at most 100 steps), each --warmup + --duration, as mutilate's --scan.
    /// The report lists every step; its detailed results are the last step's. Draw the steps of
    /// one or more saved --json reports with `mrcache latency-plot`.
    #[arg(long, conflicts_with_all = ["rate", "qos"])]
    pub scan: Option<RateScan>,

    /// Set every key once before measuring (bounded by --preload-timeout).
    #[arg(long)]
    pub preload: bool,

    /// Upper bound on the preload phase.
    #[arg(long, default_value = "60s")]
    pub preload_timeout: HumanDuration,

    /// Per-request timeout; a timed-out connection is closed and reopened.
    #[arg(long, default_value = defaults::TIMEOUT)]
    pub timeout: HumanDuration,

    /// Print one JSON object instead of the human report.
    #[arg(long)]
    pub json: bool,

    /// A tenant, USER:PASS:WEIGHT:KEYPREFIX (repeatable). Its connections authenticate first
    /// (text auth, empty USER = none), get a WEIGHT share of connections and rate, and prefix keys.
    #[arg(long = "tenant")]
    pub tenants: Vec<TenantLoad>,

    /// Seed of every random choice (keys, ops, sizes, arrivals).
    #[arg(long, default_value_t = defaults::SEED)]
    pub seed: u64,

    /// Speak TLS to the servers (memcached's and mrcached's -Z), trusting the CA certificates in
    /// FILE (PEM); each server's certificate must name the IP address it is reached at. The epoll
    /// path only, and without --tenant authentication.
    #[arg(long = "tls-ca", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
}

/// A duration typed as a number and a unit: `ns`, `us`, `ms`, `s`, `m` (bare numbers are seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl FromStr for HumanDuration {
    type Err = OptionError;
    fn from_str(s: &str) -> Result<Self, OptionError> {
        let s = s.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let value: f64 = num
            .parse()
            .map_err(|_| OptionError::BadDuration(s.into()))?;
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "" | "s" => 1.0,
            "m" | "min" => 60.0,
            _ => return Err(OptionError::BadDurationUnit(s.into())),
        };
        Duration::try_from_secs_f64(value * scale)
            .map(HumanDuration)
            .map_err(|_| OptionError::DurationOutOfRange(s.into()))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos();
        if ns == 0 {
            f.write_str("0s")
        } else if ns % 1_000_000_000 == 0 {
            write!(f, "{}s", ns / 1_000_000_000)
        } else if ns % 1_000_000 == 0 {
            write!(f, "{}ms", ns / 1_000_000)
        } else if ns % 1_000 == 0 {
            write!(f, "{}us", ns / 1_000)
        } else {
            write!(f, "{ns}ns")
        }
    }
}

/// Value size distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueSize {
    /// Every value has this many bytes.
    Fixed(usize),
    /// Uniform over `min..=max` bytes.
    Uniform {
        /// Smallest size.
        min: usize,
        /// Largest size.
        max: usize,
    },
    /// Facebook ETC (workloads.md): discrete 0-14 B with p 0.44155, else generalized Pareto.
    Etc,
}

impl FromStr for ValueSize {
    type Err = OptionError;
    fn from_str(s: &str) -> Result<Self, OptionError> {
        if s == "etc" {
            return Ok(ValueSize::Etc);
        }
        if let Some(range) = s.strip_prefix("uniform:") {
            let (a, b) = range
                .split_once('-')
                .ok_or(OptionError::UniformNeedsRange)?;
            let min: usize = a.parse().map_err(|_| OptionError::BadSize(a.into()))?;
            let max: usize = b.parse().map_err(|_| OptionError::BadSize(b.into()))?;
            if min > max {
                return Err(OptionError::UniformMinAboveMax { min, max });
            }
            return Ok(ValueSize::Uniform { min, max });
        }
        s.parse()
            .map(ValueSize::Fixed)
            .map_err(|_| OptionError::BadValueSize(s.into()))
    }
}

impl fmt::Display for ValueSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueSize::Fixed(n) => write!(f, "{n}"),
            ValueSize::Uniform { min, max } => write!(f, "uniform:{min}-{max}"),
            ValueSize::Etc => f.write_str("etc"),
        }
    }
}

/// The `--popularity` option: which keys a bench requests, and how often. The distributions are
/// `mrcache_workload::dist`'s (see `crate::dist`).
#[derive(Debug, Clone, PartialEq)]
pub enum KeyPopularity {
    /// Every key equally likely.
    Uniform,
    /// Zipf with this exponent: P(rank k) proportional to k^-s.
    Zipf(f64),
    /// The key sequence of this trace file, in order.
    Trace(PathBuf),
}

impl FromStr for KeyPopularity {
    type Err = OptionError;
    fn from_str(s: &str) -> Result<Self, OptionError> {
        if s == "uniform" {
            return Ok(KeyPopularity::Uniform);
        }
        if let Some(path) = s.strip_prefix("trace:") {
            if path.is_empty() {
                return Err(OptionError::TraceNeedsFile);
            }
            return Ok(KeyPopularity::Trace(PathBuf::from(path)));
        }
        let exp = s.strip_prefix("zipf:").ok_or(OptionError::BadPopularity)?;
        match exp.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(KeyPopularity::Zipf(v)),
            _ => Err(OptionError::BadZipfExponent(exp.into())),
        }
    }
}

impl fmt::Display for KeyPopularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyPopularity::Uniform => f.write_str("uniform"),
            KeyPopularity::Zipf(s) => write!(f, "zipf:{s}"),
            KeyPopularity::Trace(path) => write!(f, "trace:{}", path.display()),
        }
    }
}

/// Open-loop inter-arrival distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrivals {
    /// Exponential gaps.
    Poisson,
    /// ETC's generalized Pareto gaps, scaled to the rate.
    Etc,
}

impl FromStr for Arrivals {
    type Err = OptionError;
    fn from_str(s: &str) -> Result<Self, OptionError> {
        match s {
            "poisson" => Ok(Arrivals::Poisson),
            "etc" => Ok(Arrivals::Etc),
            _ => Err(OptionError::BadArrivals(s.into())),
        }
    }
}

impl fmt::Display for Arrivals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arrivals::Poisson => "poisson",
            Arrivals::Etc => "etc",
        })
    }
}

/// A latency target: percentile `percentile` (e.g. 95.0) at most `limit`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QosTarget {
    /// The percentile, in (0, 100).
    pub percentile: f64,
    /// The most it may be.
    pub limit: Duration,
}

impl FromStr for QosTarget {
    type Err = OptionError;
    fn from_str(s: &str) -> Result<Self, OptionError> {
        let (p, limit) = s.split_once('=').ok_or(OptionError::BadQosTarget)?;
        let percentile: f64 = p
            .strip_prefix('p')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| OptionError::BadPercentile(p.into()))?;
        if !(percentile > 0.0 && percentile < 100.0) {
            return Err(OptionError::PercentileOutOfRange(percentile));
        }
        let limit = limit.parse::<HumanDuration>()?.0;
        Ok(QosTarget { percentile, limit })
    }
}

impl fmt::Display for QosTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}={}", self.percentile, HumanDuration(self.limit))
    }
}

/// The open-loop rates of `--scan`: `from`, `from + step`, ... up to `to` (inclusive).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateScan {
    /// First rate, requests/s.
    pub from: f64,
    /// Last rate at most, requests/s.
    pub to: f64,
    /// Increment, requests/s.
    pub step: f64,
}

impl RateScan {
    /// The rates in order; `to` is included when the steps land on it (within rounding).
    pub fn rates(&self) -> Vec<f64> {
        let n = ((self.to - self.from) / self.step + 1e-9).floor() as usize;
        (0..=n).map(|i| self.from + i as f64 * self.step).collect()
    }
}

impl FromStr for RateScan {
    type Err = OptionError;
    fn from_str(s: &str) -> Result<Self, OptionError> {
        let usage = || OptionError::BadScan(s.into());
        let (range, step) = s.split_once(':').ok_or_else(usage)?;
        let (from, to) = range.split_once("..").ok_or_else(usage)?;
        let num = |t: &str| t.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let (Some(from), Some(to), Some(step)) = (num(from), num(to), num(step)) else {
            return Err(usage());
        };
        if from <= 0.0 || step <= 0.0 || to < from {
            return Err(OptionError::ScanOutOfOrder(s.into()));
        }
        let scan = RateScan { from, to, step };
        let steps = scan.rates().len();
        if steps > defaults::SCAN_MAX_STEPS {
            return Err(OptionError::ScanTooLong {
                scan: s.into(),
                steps,
            });
        }
        Ok(scan)
    }
}

impl fmt::Display for RateScan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}:{}", self.from, self.to, self.step)
    }
}

/// One `--tenant`: the load one tenant puts on the servers, named by its credentials (empty user
/// = no auth), its weight (share of connections and rate) and its key prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantLoad {
    /// User for text-protocol auth; empty: no auth.
    pub user: String,
    /// Password; empty exactly when the user is.
    pub password: String,
    /// Share of the connections and of the rate, relative to the other tenants.
    pub weight: f64,
    /// Prefix of every key the tenant sends.
    pub key_prefix: String,
}

impl FromStr for TenantLoad {
    type Err = OptionError;
    fn from_str(s: &str) -> Result<Self, OptionError> {
        let mut parts = s.splitn(4, ':');
        let (Some(user), Some(password), Some(weight), Some(key_prefix)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(OptionError::BadTenant(s.into()));
        };
        let weight: f64 = weight
            .parse()
            .map_err(|_| OptionError::BadTenantWeight(weight.into()))?;
        if !(weight.is_finite() && weight > 0.0) {
            return Err(OptionError::TenantWeightNotPositive(weight));
        }
        if key_prefix.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(OptionError::BadKeyPrefix(key_prefix.into()));
        }
        if user.contains(' ') || password.contains(' ') || user.is_empty() != password.is_empty() {
            return Err(OptionError::BadCredentials);
        }
        Ok(TenantLoad {
            user: user.into(),
            password: password.into(),
            weight,
            key_prefix: key_prefix.into(),
        })
    }
}

impl fmt::Display for TenantLoad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pass = if self.password.is_empty() { "" } else { "***" };
        write!(
            f,
            "{}:{}:{}:{}",
            self.user, pass, self.weight, self.key_prefix
        )
    }
}

/// `--trace-format`: one of the trace readers' format names.
fn parse_trace_format(s: &str) -> Result<TraceFormat, OptionError> {
    s.parse().map_err(|e: mrcache_workload::WorkloadError| {
        OptionError::UnknownTraceFormat(e.to_string())
    })
}

fn serialize_display<T: fmt::Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

macro_rules! serialize_as_display {
    ($($t:ty),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}
serialize_as_display!(
    HumanDuration,
    ValueSize,
    KeyPopularity,
    Arrivals,
    QosTarget,
    RateScan,
    TenantLoad
);

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: FromStr + fmt::Display>(s: &str) -> String
    where
        T::Err: fmt::Debug,
    {
        s.parse::<T>().unwrap().to_string()
    }

    #[test]
    fn scans_list_their_rates_and_refuse_nonsense() {
        let scan: RateScan = "20000..100000:20000".parse().unwrap();
        assert_eq!(scan.rates(), [20000.0, 40000.0, 60000.0, 80000.0, 100000.0]);
        assert_eq!(
            round_trip::<RateScan>("20000..100000:20000"),
            "20000..100000:20000"
        );
        // TO need not be on the grid: the last rate is the last step below it.
        assert_eq!(
            "1000..2500:1000".parse::<RateScan>().unwrap().rates(),
            [1000.0, 2000.0]
        );
        assert_eq!("5..5:1".parse::<RateScan>().unwrap().rates(), [5.0]);
        for bad in [
            "",
            "1000",
            "1..2",
            "0..10:1",
            "10..5:1",
            "1..10:0",
            "1..x:1",
            "1..1000:1",
        ] {
            let e = bad.parse::<RateScan>().unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{bad}: {e}");
        }
    }

    #[test]
    fn durations_parse_and_print() {
        assert_eq!(
            "500us".parse::<HumanDuration>().unwrap().0,
            Duration::from_micros(500)
        );
        assert_eq!(
            "1.5s".parse::<HumanDuration>().unwrap().0,
            Duration::from_millis(1500)
        );
        assert_eq!(
            "2".parse::<HumanDuration>().unwrap().0,
            Duration::from_secs(2)
        );
        assert_eq!(round_trip::<HumanDuration>("250ms"), "250ms");
        assert_eq!(round_trip::<HumanDuration>("0us"), "0s");
        assert!("5 parsecs".parse::<HumanDuration>().is_err());
        assert!("-1s".parse::<HumanDuration>().is_err());
    }

    #[test]
    fn specs_round_trip() {
        assert_eq!(round_trip::<ValueSize>("uniform:10-20"), "uniform:10-20");
        assert_eq!(round_trip::<ValueSize>("etc"), "etc");
        assert_eq!("200".parse::<ValueSize>().unwrap(), ValueSize::Fixed(200));
        assert!("uniform:20-10".parse::<ValueSize>().is_err());
        assert_eq!(round_trip::<KeyPopularity>("zipf:0.99"), "zipf:0.99");
        assert_eq!(
            round_trip::<KeyPopularity>("trace:web07.trace.xz"),
            "trace:web07.trace.xz"
        );
        assert!("trace:".parse::<KeyPopularity>().is_err());
        assert!("zipf:-1".parse::<KeyPopularity>().is_err());
        let q: QosTarget = "p99.9=1ms".parse().unwrap();
        assert_eq!((q.percentile, q.limit), (99.9, Duration::from_millis(1)));
        assert_eq!(round_trip::<QosTarget>("p95=500us"), "p95=500us");
        assert!("p100=1ms".parse::<QosTarget>().is_err());
    }

    #[test]
    fn tenants_parse_and_hide_passwords() {
        let t: TenantLoad = "alice:secret:3:app1:".parse().unwrap();
        assert_eq!(t.user, "alice");
        assert_eq!(t.key_prefix, "app1:");
        assert_eq!(t.to_string(), "alice:***:3:app1:");
        let anon: TenantLoad = "::1:b".parse().unwrap();
        assert!(anon.user.is_empty());
        assert!("alice::1:x".parse::<TenantLoad>().is_err());
        assert!("a:b:0:x".parse::<TenantLoad>().is_err());
        assert!("a:b:1:has space".parse::<TenantLoad>().is_err());
    }
}
