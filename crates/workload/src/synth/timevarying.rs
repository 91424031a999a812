//! mPart §4.2–4.3: the time-varying (diurnal) and noisy-neighbour workloads, both built on the six
//! applications of Table 4.1 (one tenant each).
//!
//! Both run on a simulated clock: `requests` requests are spread evenly over `hours` simulated hours, so
//! request `i` happens at hour `i * hours / requests` ([`Timeline::hour_of`]). Which tenant issues
//! request `i` depends on that hour; the key, sizes and operation then come from the tenant's own
//! application, as in `mpart-six`.
//!
//! **The day curve.** The thesis (§4.2) draws each hour's inter-arrival gaps from a generalized Pareto
//! distribution with the per-hour parameters of Atikoglu et al.'s Table 6, but reproduces neither that
//! table nor the resulting curve, and the table is not among this project's references. We therefore use
//! a smooth day curve of our own, documented here and not taken from either paper: application `t`'s
//! relative request rate at hour `h` is
//!
//! ```text
//! rate_t(h) = 1 + a * cos(2π (h − 12 − 4t) / 24),   a = (peak_ratio − 1) / (peak_ratio + 1)
//! ```
//!
//! a cosine with mean 1 that peaks at noon of application 0's day and is `peak_ratio` (default 2)
//! times higher at its peak than at its trough twelve hours later; each application's curve is 4 hours
//! behind the previous one (workloads.md: "staggered 4 hours between applications"). Six curves 4 hours
//! apart cover the day evenly, so their sum is constant: the total request rate is flat and spreading
//! requests evenly over the hours is exact, only the mix of tenants changes.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::generators::{mpart_apps, SingleApp, MPART_APPS};
use super::Access;
use crate::dist::{KeySizeModel, Popularity, ValueSizeModel};
use crate::WorkloadError;

/// Hours between the peaks of consecutive applications of `diurnal`.
pub const DIURNAL_STAGGER_HOURS: f64 = 4.0;
/// Hour of the day at which application 0 of `diurnal` peaks.
pub const DIURNAL_PEAK_HOUR: f64 = 12.0;
/// Default ratio of an application's peak rate to its trough rate.
pub const DIURNAL_PEAK_RATIO: f64 = 2.0;

/// The noisy neighbour of mPart §4.3: Zipf with this exponent...
pub const NOISY_ALPHA: f64 = 0.9;
/// ...over this many objects (divided by `scale`).
pub const NOISY_OBJECTS: u64 = 100_000_000;
/// Its tenant index, after the six applications.
pub const NOISY_TENANT: u16 = MPART_APPS.len() as u16;

/// Where requests fall in simulated time: `requests` requests spread evenly over `hours` hours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeline {
    /// Number of requests in the whole stream.
    pub requests: u64,
    /// Simulated hours the stream spans.
    pub hours: f64,
}

impl Timeline {
    /// The simulated hour of request `i` (0-based): `i * hours / requests`.
    pub fn hour_of(&self, i: u64) -> f64 {
        i as f64 * self.hours / self.requests.max(1) as f64
    }

    /// The index of the first request at or after `hour`: `ceil(hour * requests / hours)`, at most
    /// `requests`.
    pub fn first_request_at(&self, hour: f64) -> u64 {
        if hour <= 0.0 {
            return 0;
        }
        let i = (hour * self.requests as f64 / self.hours).ceil();
        if i >= self.requests as f64 {
            self.requests
        } else {
            i as u64
        }
    }
}

/// The day curve of the module docs: relative request rates of the six applications by hour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DayCurve {
    amplitude: f64,
}

impl DayCurve {
    /// A curve whose peak is `peak_ratio` (at least 1) times its trough.
    pub fn new(peak_ratio: f64) -> Result<DayCurve, WorkloadError> {
        if !(peak_ratio.is_finite() && peak_ratio >= 1.0) {
            return Err(WorkloadError::OutOfRange {
                key: "peak_ratio",
                value: peak_ratio,
                requirement: "must be at least 1",
            });
        }
        Ok(DayCurve {
            amplitude: (peak_ratio - 1.0) / (peak_ratio + 1.0),
        })
    }

    /// Application `tenant`'s relative request rate at simulated hour `hour` (mean 1 over a day; hours
    /// past 24 wrap to the next day).
    pub fn rate(&self, tenant: usize, hour: f64) -> f64 {
        let phase = (hour - Self::peak_hour(tenant)) / 24.0;
        1.0 + self.amplitude * (std::f64::consts::TAU * phase).cos()
    }

    /// The hour of the day (0..24) at which application `tenant` peaks: `12 + 4 * tenant` mod 24.
    pub fn peak_hour(tenant: usize) -> f64 {
        (DIURNAL_PEAK_HOUR + DIURNAL_STAGGER_HOURS * tenant as f64).rem_euclid(24.0)
    }
}

fn check_hours(hours: f64) -> Result<(), WorkloadError> {
    if hours.is_finite() && hours > 0.0 {
        Ok(())
    } else {
        Err(WorkloadError::OutOfRange {
            key: "hours",
            value: hours,
            requirement: "must be positive",
        })
    }
}

/// mPart §4.2: the six applications with request rates following [`DayCurve`], each 4 hours behind
/// the previous. Request `i` is issued by tenant `t` with probability `rate_t(h) / Σ rate(h)` where `h`
/// is its hour; the weights are re-evaluated once per simulated minute.
pub struct Diurnal {
    apps: Vec<SingleApp>,
    curve: DayCurve,
    timeline: Timeline,
    rng: SmallRng,
    issued: u64,
    /// The minute the cumulative weights were computed for.
    minute: u64,
    cumulative: Vec<f64>,
}

impl Diurnal {
    /// `scale` divides objects as in `mpart-six`; `requests` is the total over all tenants.
    pub fn new(
        scale: u64,
        requests: u64,
        hours: f64,
        peak_ratio: f64,
        get_ratio: f64,
        seed: u64,
    ) -> Result<Diurnal, WorkloadError> {
        check_hours(hours)?;
        Ok(Diurnal {
            apps: mpart_apps(scale, get_ratio, seed)?,
            curve: DayCurve::new(peak_ratio)?,
            timeline: Timeline { requests, hours },
            rng: SmallRng::seed_from_u64(seed),
            issued: 0,
            minute: u64::MAX,
            cumulative: vec![0.0; MPART_APPS.len()],
        })
    }

    /// Where this stream's requests fall in simulated time.
    pub fn timeline(&self) -> Timeline {
        self.timeline
    }

    /// The simulated hour of request `i`.
    pub fn hour_of(&self, i: u64) -> f64 {
        self.timeline.hour_of(i)
    }

    /// The probability that a request at `hour` comes from `tenant`.
    pub fn share(&self, tenant: usize, hour: f64) -> f64 {
        let total: f64 = (0..self.apps.len()).map(|t| self.curve.rate(t, hour)).sum();
        self.curve.rate(tenant, hour) / total
    }
}

impl Iterator for Diurnal {
    type Item = Access;
    fn next(&mut self) -> Option<Access> {
        if self.issued >= self.timeline.requests {
            return None;
        }
        let minute = (self.timeline.hour_of(self.issued) * 60.0) as u64;
        self.issued += 1;
        if minute != self.minute {
            self.minute = minute;
            let hour = (minute as f64 + 0.5) / 60.0;
            let mut sum = 0.0;
            for (t, c) in self.cumulative.iter_mut().enumerate() {
                sum += self.curve.rate(t, hour);
                *c = sum;
            }
        }
        let total = *self.cumulative.last().expect("six applications");
        let u = self.rng.gen::<f64>() * total;
        let t = self
            .cumulative
            .iter()
            .position(|&c| u < c)
            .unwrap_or(self.apps.len() - 1);
        Some(self.apps[t].access(&mut self.rng))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.timeline.requests - self.issued) as usize;
        (left, Some(left))
    }
}

/// mPart §4.3: the six applications at equal rates plus a noisy neighbour (tenant 6, Zipf 0.9 over
/// 100M objects divided by `scale`, 16-byte keys, 200-byte values) that issues nothing before
/// `enter_hour` and a share `noisy_share` of all requests from then on, i.e. from request
/// [`NoisyNeighbour::enter_index`] = `ceil(enter_hour * requests / hours)`.
pub struct NoisyNeighbour {
    apps: Vec<SingleApp>,
    noisy: SingleApp,
    noisy_share: f64,
    timeline: Timeline,
    enter_index: u64,
    rng: SmallRng,
    issued: u64,
}

impl NoisyNeighbour {
    /// The noisy neighbour's popularity instead of Zipf 0.9 (e.g. uniform: no locality at all).
    pub fn with_noisy_popularity(mut self, popularity: Popularity) -> NoisyNeighbour {
        self.noisy.popularity = popularity;
        self
    }

    /// `scale` divides every tenant's objects; `requests` is the total over all seven tenants.
    pub fn new(
        scale: u64,
        requests: u64,
        hours: f64,
        enter_hour: f64,
        noisy_share: f64,
        get_ratio: f64,
        seed: u64,
    ) -> Result<NoisyNeighbour, WorkloadError> {
        check_hours(hours)?;
        if !(enter_hour.is_finite() && enter_hour >= 0.0) {
            return Err(WorkloadError::OutOfRange {
                key: "enter_hour",
                value: enter_hour,
                requirement: "must be a non-negative hour",
            });
        }
        if !(0.0..=1.0).contains(&noisy_share) {
            return Err(WorkloadError::OutOfRange {
                key: "noisy_share",
                value: noisy_share,
                requirement: "must be in 0..=1",
            });
        }
        let mut noisy = SingleApp::new(
            Popularity::zipf(NOISY_OBJECTS / scale.max(1), NOISY_ALPHA)?,
            KeySizeModel::Fixed(16),
            ValueSizeModel::Fixed(200),
            get_ratio,
            seed,
        );
        noisy.tenant = NOISY_TENANT;
        let timeline = Timeline { requests, hours };
        Ok(NoisyNeighbour {
            apps: mpart_apps(scale, get_ratio, seed)?,
            noisy,
            noisy_share,
            timeline,
            enter_index: timeline.first_request_at(enter_hour),
            rng: SmallRng::seed_from_u64(seed),
            issued: 0,
        })
    }

    /// Where this stream's requests fall in simulated time.
    pub fn timeline(&self) -> Timeline {
        self.timeline
    }

    /// The simulated hour of request `i`.
    pub fn hour_of(&self, i: u64) -> f64 {
        self.timeline.hour_of(i)
    }

    /// The index of the first request that the noisy neighbour may issue.
    pub fn enter_index(&self) -> u64 {
        self.enter_index
    }
}

impl Iterator for NoisyNeighbour {
    type Item = Access;
    fn next(&mut self) -> Option<Access> {
        if self.issued >= self.timeline.requests {
            return None;
        }
        let entered = self.issued >= self.enter_index;
        self.issued += 1;
        if entered && self.rng.gen::<f64>() < self.noisy_share {
            return Some(self.noisy.access(&mut self.rng));
        }
        let t = self.rng.gen_range(0..self.apps.len());
        Some(self.apps[t].access(&mut self.rng))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.timeline.requests - self.issued) as usize;
        (left, Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests per tenant in each of `buckets` equal slices of the stream.
    fn counts_by_slice(
        stream: impl Iterator<Item = Access>,
        requests: u64,
        buckets: usize,
    ) -> Vec<[u64; 7]> {
        let mut counts = vec![[0u64; 7]; buckets];
        for (i, a) in stream.enumerate() {
            let b = (i as u64 * buckets as u64 / requests) as usize;
            counts[b][a.tenant as usize] += 1;
        }
        counts
    }

    #[test]
    fn timeline_spreads_requests_evenly() {
        let t = Timeline {
            requests: 1000,
            hours: 10.0,
        };
        assert_eq!(t.hour_of(0), 0.0);
        assert_eq!(t.hour_of(500), 5.0);
        assert_eq!(t.first_request_at(5.0), 500);
        assert_eq!(t.first_request_at(5.001), 501);
        assert_eq!(t.first_request_at(0.0), 0);
        assert_eq!(t.first_request_at(11.0), 1000);
    }

    #[test]
    fn day_curve_peaks_staggered_and_sums_flat() {
        let c = DayCurve::new(2.0).unwrap();
        for t in 0..6 {
            let peak = DayCurve::peak_hour(t);
            assert_eq!(peak, (12.0 + 4.0 * t as f64) % 24.0);
            let ratio = c.rate(t, peak) / c.rate(t, peak + 12.0);
            assert!((ratio - 2.0).abs() < 1e-9, "{ratio}");
        }
        for h in 0..48 {
            let sum: f64 = (0..6).map(|t| c.rate(t, h as f64 * 0.5)).sum();
            assert!((sum - 6.0).abs() < 1e-9, "{sum}");
        }
        assert!(DayCurve::new(0.5).is_err());
    }

    #[test]
    fn diurnal_is_deterministic() {
        let make = |seed| {
            Diurnal::new(1000, 5000, 24.0, 2.0, 0.9, seed)
                .unwrap()
                .collect::<Vec<_>>()
        };
        assert_eq!(make(3), make(3));
        assert_ne!(make(3), make(4));
    }

    #[test]
    fn diurnal_shares_follow_the_day_curve() {
        let requests = 480_000;
        let w = Diurnal::new(1000, requests, 24.0, 2.0, 1.0, 7).unwrap();
        let expected_peak = w.share(0, 12.0);
        let counts = counts_by_slice(w, requests, 24);
        let share = |hour: usize, t: usize| {
            counts[hour][t] as f64 / counts[hour].iter().sum::<u64>() as f64
        };
        // Tenant 0 peaks at hour 12 (share 4/3 / 6 = 0.222) and bottoms at hour 0 (0.111).
        let (peak, trough) = (share(12, 0), share(0, 0));
        assert!(
            (peak - expected_peak).abs() < 0.02,
            "{peak} vs {expected_peak}"
        );
        assert!(peak > 1.6 * trough, "peak {peak}, trough {trough}");
        // Tenant 1 peaks 4 hours later.
        assert!(share(16, 1) > 1.6 * share(4, 1));
        assert!(counts.iter().all(|c| c[6] == 0));
    }

    #[test]
    fn noisy_neighbour_enters_at_its_hour_with_its_share() {
        let requests = 200_000;
        let w = NoisyNeighbour::new(1000, requests, 10.0, 5.0, 0.5, 1.0, 2).unwrap();
        assert_eq!(w.enter_index(), 100_000);
        assert_eq!(w.hour_of(100_000), 5.0);
        let all: Vec<Access> = w.collect();
        assert_eq!(all.len(), requests as usize);
        assert!(all[..100_000]
            .iter()
            .all(|a| a.tenant != NOISY_TENANT && a.tenant < 6));
        let noisy = all[100_000..]
            .iter()
            .filter(|a| a.tenant == NOISY_TENANT)
            .count() as f64
            / 100_000.0;
        assert!((noisy - 0.5).abs() < 0.01, "{noisy}");
        // Its keys range over 100M / 1000 objects, the others share the rest equally.
        assert!(all
            .iter()
            .filter(|a| a.tenant == NOISY_TENANT)
            .all(|a| a.key < 100_000 && a.value_size == 200));
        let counts = counts_by_slice(all.into_iter(), requests, 2);
        for t in 0..6 {
            assert!((15_000..18_400).contains(&counts[0][t]), "{counts:?}");
        }
    }

    #[test]
    fn noisy_neighbour_is_deterministic() {
        let make = || {
            NoisyNeighbour::new(1000, 5000, 10.0, 5.0, 0.5, 0.9, 9)
                .unwrap()
                .collect::<Vec<_>>()
        };
        assert_eq!(make(), make());
    }

    #[test]
    fn bad_parameters_are_named() {
        let e = |r: Result<NoisyNeighbour, WorkloadError>| r.err().unwrap().to_string();
        assert!(e(NoisyNeighbour::new(1, 10, 0.0, 5.0, 0.5, 1.0, 1)).contains("hours"));
        assert!(e(NoisyNeighbour::new(1, 10, 10.0, -1.0, 0.5, 1.0, 1)).contains("enter_hour"));
        assert!(e(NoisyNeighbour::new(1, 10, 10.0, 5.0, 1.5, 1.0, 1)).contains("noisy_share"));
        assert!(Diurnal::new(1, 10, 24.0, 0.0, 1.0, 1)
            .err()
            .unwrap()
            .to_string()
            .contains("peak_ratio"));
    }
}
