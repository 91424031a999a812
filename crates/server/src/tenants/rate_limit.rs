//! Per-tenant request-rate limits (`rate_limit`, `rate_burst` in `--config`): one token bucket per
//! tenant, shared by all its connections on every worker, so that one tenant cannot take all of a
//! worker (Leverich & Kozyrakis §4.3, §5: rate limiting inside memcached as an isolation measure).
//!
//! The bucket is kept as GCRA (the generic cell rate algorithm), which is a token bucket written as one
//! number: the *theoretical arrival time* `tat` of the next request if the tenant sent exactly at its
//! rate. With `interval = 1 s / rate` and `tolerance = burst × interval`, a request at time `now` is
//! admitted when `max(tat, now) + interval <= now + tolerance`, and then `tat` becomes that sum. A
//! tenant idle for `burst` intervals may therefore send `burst` requests at once, and at most `rate`
//! a second after that: exactly a bucket of `burst` tokens refilled at `rate`.
//!
//! Concurrency: one `AtomicU64` (`tat`) updated by compare-and-swap, so the check is lock-free; an
//! admitted request costs one load and one CAS on the tenant's cache line, a refused one a load and a
//! counter increment. Time is passed in (nanoseconds from the directory's epoch), so the arithmetic is
//! tested without a clock.
//!
//! Each tenant name keeps one [`TenantLimiter`] for the life of the process (like its id), so its
//! `rate_limited` count survives reloads; a reload that changes the tenant's rate or burst re-arms the
//! bucket full, one that leaves them alone keeps its state. (The limit's fields are separate atomics: a
//! request racing with a reload may be judged once by a mix of the old and the new limit.)

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A rate above this is refused: one request per nanosecond is the clock's resolution.
pub const MAX_RATE_PER_SEC: f64 = 1e9;
/// Without `rate_burst`, a tenant may send this share of a second's worth of requests at once
/// (100 ms of its rate, at least one request): enough for a client's pipelined batch, too little to
/// hold a worker for long.
pub const DEFAULT_BURST_SECONDS: f64 = 0.1;
/// What a refused request gets, memcached-style (its other refusals are `SERVER_ERROR <reason>`).
pub const RATE_LIMITED_REPLY: &str = "SERVER_ERROR tenant rate limit exceeded";

const NANOS_PER_SEC: f64 = 1e9;

/// A validated rate limit: `ops_per_sec` in (0, [`MAX_RATE_PER_SEC`]], `burst >= 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimit {
    /// Requests a second the tenant may sustain.
    pub ops_per_sec: f64,
    /// Requests it may send at once after being idle.
    pub burst: u64,
}

impl RateLimit {
    /// The burst [`DEFAULT_BURST_SECONDS`] of `ops_per_sec` gives.
    pub fn default_burst(ops_per_sec: f64) -> u64 {
        ((ops_per_sec * DEFAULT_BURST_SECONDS).ceil() as u64).max(1)
    }

    /// Nanoseconds between requests at the sustained rate (at least 1).
    fn interval_ns(&self) -> u64 {
        ((NANOS_PER_SEC / self.ops_per_sec).round() as u64).max(1)
    }
}

/// The GCRA step: the new theoretical arrival time if a request at `now_ns` is admitted, else `None`.
#[inline]
pub fn gcra(tat_ns: u64, now_ns: u64, interval_ns: u64, tolerance_ns: u64) -> Option<u64> {
    let next = tat_ns.max(now_ns).saturating_add(interval_ns);
    (next <= now_ns.saturating_add(tolerance_ns)).then_some(next)
}

/// One tenant's bucket and counter (see the module doc); shared by every connection of the tenant.
#[derive(Debug, Default)]
pub struct TenantLimiter {
    /// 0: no limit.
    interval_ns: AtomicU64,
    tolerance_ns: AtomicU64,
    tat_ns: AtomicU64,
    /// Requests refused since start or `stats reset`.
    limited: AtomicU64,
    /// The limit in force, for `stats tenants` (`ops_per_sec` as f64 bits; 0: none).
    rate_bits: AtomicU64,
    burst: AtomicU64,
}

impl TenantLimiter {
    /// Puts `limit` in force (`None`: unlimited). A changed limit starts with a full bucket.
    pub fn configure(&self, limit: Option<RateLimit>) {
        let (interval, tolerance, rate, burst) = match limit {
            Some(l) => {
                let interval = l.interval_ns();
                (
                    interval,
                    interval.saturating_mul(l.burst),
                    l.ops_per_sec,
                    l.burst,
                )
            }
            None => (0, 0, 0.0, 0),
        };
        if self.interval_ns.load(Relaxed) == interval
            && self.tolerance_ns.load(Relaxed) == tolerance
        {
            return;
        }
        self.tat_ns.store(0, Relaxed);
        self.tolerance_ns.store(tolerance, Relaxed);
        self.interval_ns.store(interval, Relaxed);
        self.rate_bits.store(rate.to_bits(), Relaxed);
        self.burst.store(burst, Relaxed);
    }

    /// Whether a request at `now_ns` may run; a refused one is counted.
    #[inline]
    pub fn admit(&self, now_ns: u64) -> bool {
        let interval = self.interval_ns.load(Relaxed);
        if interval == 0 {
            return true;
        }
        let tolerance = self.tolerance_ns.load(Relaxed);
        let mut tat = self.tat_ns.load(Relaxed);
        loop {
            let Some(next) = gcra(tat, now_ns, interval, tolerance) else {
                self.limited.fetch_add(1, Relaxed);
                return false;
            };
            match self
                .tat_ns
                .compare_exchange_weak(tat, next, Relaxed, Relaxed)
            {
                Ok(_) => return true,
                Err(seen) => tat = seen,
            }
        }
    }

    /// Requests refused since start or `stats reset`.
    pub fn limited(&self) -> u64 {
        self.limited.load(Relaxed)
    }

    /// The limit in force: (ops/s, burst), zeros when none.
    pub fn limit(&self) -> (f64, u64) {
        (
            f64::from_bits(self.rate_bits.load(Relaxed)),
            self.burst.load(Relaxed),
        )
    }

    /// `stats reset`.
    pub fn reset_counters(&self) {
        self.limited.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_full_bucket_admits_the_burst_then_the_rate() {
        let l = TenantLimiter::default();
        l.configure(Some(RateLimit {
            ops_per_sec: 1000.0,
            burst: 5,
        }));
        let t0 = 10 * MS;
        assert_eq!((0..5).filter(|_| l.admit(t0)).count(), 5);
        assert!(!l.admit(t0));
        assert_eq!(l.limited(), 1);
        // One interval (1 ms) later one more token has come back, not two.
        assert!(l.admit(t0 + MS));
        assert!(!l.admit(t0 + MS));
        // Idle for the whole burst: the bucket is full again, and no fuller.
        let t1 = t0 + 100 * MS;
        assert_eq!((0..10).filter(|_| l.admit(t1)).count(), 5);
        assert_eq!(l.limited(), 7);
    }

    #[test]
    fn sustained_traffic_gets_the_rate() {
        let l = TenantLimiter::default();
        l.configure(Some(RateLimit {
            ops_per_sec: 100.0,
            burst: 1,
        }));
        // Offered at 1000/s for one second: 100 admitted (one per 10 ms), plus the first.
        let admitted = (0..1000).filter(|i| l.admit(i * MS)).count();
        assert!((100..=101).contains(&admitted), "{admitted}");
    }

    #[test]
    fn unlimited_and_reconfigured() {
        let l = TenantLimiter::default();
        assert!((0..1000).all(|_| l.admit(0)));
        let limit = RateLimit {
            ops_per_sec: 10.0,
            burst: 1,
        };
        l.configure(Some(limit));
        assert!(l.admit(5 * MS));
        assert!(!l.admit(5 * MS));
        // The same limit again keeps the state; a different one starts full.
        l.configure(Some(limit));
        assert!(!l.admit(5 * MS));
        l.configure(Some(RateLimit { burst: 2, ..limit }));
        assert!(l.admit(5 * MS));
        assert_eq!(l.limit(), (10.0, 2));
        l.configure(None);
        assert!(l.admit(5 * MS) && l.admit(5 * MS));
        assert_eq!(l.limit(), (0.0, 0));
    }

    #[test]
    fn default_burst_is_a_tenth_of_a_second_at_least_one() {
        assert_eq!(RateLimit::default_burst(5000.0), 500);
        assert_eq!(RateLimit::default_burst(3.0), 1);
        assert_eq!(gcra(0, 0, 10, 5), None);
        assert_eq!(gcra(0, 100, 10, 10), Some(110));
    }
}
