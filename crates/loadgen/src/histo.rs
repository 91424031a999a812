//! Latency histograms: HdrHistogram at 1 µs resolution and 3 significant digits.
//!
//! Each worker thread owns its histograms and records without locks; the runner merges them once
//! the threads end (and merges one-second interval copies for the progress line). Values beyond
//! [`HIGHEST_US`] saturate at it rather than being dropped, so a pathological latency still counts.

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::OpKind;

/// Highest trackable latency: one hour, far beyond any run's hard cap.
pub const HIGHEST_US: u64 = 3_600_000_000;
/// 3 significant digits: a reported percentile is within 0.1% of the true sample.
const SIGNIFICANT_DIGITS: u8 = 3;

/// One latency distribution in microseconds.
#[derive(Clone, Debug)]
pub struct LatencyHistogram(Histogram<u64>);

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram over 1 us..=`HIGHEST_US`.
    pub fn new() -> Self {
        // Bounds are constants known to be valid for the crate.
        LatencyHistogram(
            Histogram::new_with_bounds(1, HIGHEST_US, SIGNIFICANT_DIGITS)
                .expect("valid histogram bounds"),
        )
    }

    /// Counts one latency of `us` microseconds (values past the top are recorded at the top).
    pub fn record_us(&mut self, us: u64) {
        self.0.saturating_record(us.min(HIGHEST_US));
    }

    /// Number of latencies recorded.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// Value at percentile `p` in `0..=100` (0 when empty).
    pub fn percentile_us(&self, p: f64) -> u64 {
        if self.0.is_empty() {
            0
        } else {
            self.0.value_at_quantile(p / 100.0)
        }
    }

    /// Adds `other`'s counts to this one.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides and saturating values: adding cannot fail.
        self.0.add(&other.0).expect("histograms share bounds");
    }

    /// Forgets every count.
    pub fn clear(&mut self) {
        self.0.reset();
    }

    /// Count, mean and the percentiles a report prints.
    pub fn summary(&self) -> LatencySummary {
        LatencySummary {
            count: self.count(),
            mean: if self.0.is_empty() {
                0.0
            } else {
                self.0.mean()
            },
            p50: self.percentile_us(50.0),
            p90: self.percentile_us(90.0),
            p95: self.percentile_us(95.0),
            p99: self.percentile_us(99.0),
            p999: self.percentile_us(99.9),
            max: self.0.max(),
        }
    }
}

/// Percentiles of one distribution, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Number of latencies.
    pub count: u64,
    /// Their mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 95th percentile.
    pub p95: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

/// One histogram per operation type plus their total.
#[derive(Clone, Debug, Default)]
pub struct OpHistograms {
    pub per_op: [LatencyHistogram; OpKind::ALL.len()],
    pub total: LatencyHistogram,
}

impl OpHistograms {
    pub fn record(&mut self, op: OpKind, us: u64) {
        self.per_op[op as usize].record_us(us);
        self.total.record_us(us);
    }

    pub fn merge(&mut self, other: &OpHistograms) {
        for (mine, theirs) in self.per_op.iter_mut().zip(&other.per_op) {
            mine.merge(theirs);
        }
        self.total.merge(&other.total);
    }

    pub fn get(&self, op: OpKind) -> &LatencyHistogram {
        &self.per_op[op as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = LatencyHistogram::new();
        for us in 1..=10_000 {
            h.record_us(us);
        }
        let s = h.summary();
        assert_eq!(s.count, 10_000);
        let within = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 1e-3;
        assert!(within(s.p50, 5_000), "p50 {}", s.p50);
        assert!(within(s.p90, 9_000), "p90 {}", s.p90);
        assert!(within(s.p99, 9_900), "p99 {}", s.p99);
        assert!(within(s.p999, 9_990), "p999 {}", s.p999);
        assert!(within(s.max, 10_000));
        assert!((s.mean - 5_000.5).abs() < 10.0);
    }

    #[test]
    fn merging_is_adding_samples_and_huge_values_saturate() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        (0..90).for_each(|_| a.record_us(100));
        (0..10).for_each(|_| b.record_us(u64::MAX));
        a.merge(&b);
        assert_eq!(a.count(), 100);
        assert_eq!(a.percentile_us(90.0), 100);
        assert!(a.percentile_us(95.0) >= HIGHEST_US);
        a.clear();
        assert_eq!(a.summary(), LatencySummary::default());
    }

    #[test]
    fn per_op_histograms_feed_the_total() {
        let mut h = OpHistograms::default();
        h.record(OpKind::Get, 10);
        h.record(OpKind::Set, 20);
        h.record(OpKind::MultiGet, 30);
        assert_eq!(h.total.count(), 3);
        assert_eq!(h.get(OpKind::Set).count(), 1);
        let mut m = OpHistograms::default();
        m.merge(&h);
        m.merge(&h);
        assert_eq!(m.get(OpKind::Get).count(), 2);
    }
}
