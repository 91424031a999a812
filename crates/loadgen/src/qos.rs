//! QoS-constrained throughput: the highest offered rate whose latency percentile meets a target.
//!
//! Mutilate's procedure (Leverich & Kozyrakis, EuroSys'14 §2.1): find the peak rate, then binary
//! search on the open-loop target rate, judging each fixed-duration step by its percentile, and stop
//! when high and low are within a relative precision (2%). This module holds only the search; a
//! step is a closure, so the logic is tested against a model of a server. A step passes when its
//! percentile is within the limit and it achieved at least [`MIN_ACHIEVED_FRACTION`] of the rate
//! offered (a server that drops or stalls requests does not "meet" QoS by answering fewer).

use serde::Serialize;

/// A step must complete at least this share of the offered requests to pass.
pub const MIN_ACHIEVED_FRACTION: f64 = 0.95;

/// What one search step measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct QosStep {
    /// Open-loop rate offered, requests/s.
    pub offered_ops: f64,
    /// Completed requests/s in the measured window.
    pub achieved_ops: f64,
    /// The target percentile measured, µs.
    pub percentile_us: u64,
    /// Failed requests of the step (timeouts, errors, resets).
    pub errors: u64,
    /// Whether the step met the target.
    pub met: bool,
}

/// The outcome of a search: every step in order and the best passing one.
#[derive(Clone, Debug, Serialize)]
pub struct QosSearch {
    /// Every step, in the order run.
    pub steps: Vec<QosStep>,
    /// Highest offered rate that met the target; None when even the lowest step failed.
    pub best: Option<QosStep>,
}

/// Search parameters.
#[derive(Clone, Copy, Debug)]
pub struct SearchBounds {
    /// The highest rate worth trying (a measured peak or the user's --rate).
    pub upper_ops: f64,
    /// Stop when `(high - low) / high` falls below this.
    pub precision: f64,
    pub max_steps: usize,
}

/// Judges a step's raw measurements against the target.
pub fn judge(
    offered_ops: f64,
    achieved_ops: f64,
    percentile_us: u64,
    errors: u64,
    limit_us: u64,
) -> QosStep {
    let met = percentile_us <= limit_us
        && achieved_ops >= offered_ops * MIN_ACHIEVED_FRACTION
        && errors == 0;
    QosStep {
        offered_ops,
        achieved_ops,
        percentile_us,
        errors,
        met,
    }
}

/// Which of several runs of one step stands for it: the run with the median percentile (for an even
/// count the lower of the two middle ones, the more favourable). Ties keep the earlier run.
pub fn median_run(percentiles_us: &[u64]) -> usize {
    assert!(!percentiles_us.is_empty(), "a step has at least one run");
    let mut order: Vec<usize> = (0..percentiles_us.len()).collect();
    order.sort_by_key(|&i| (percentiles_us[i], i));
    order[(order.len() - 1) / 2]
}

/// Binary search of the offered rate in `(0, upper_ops]`. `step(rate)` runs one measurement and
/// returns its judged result (built with [`judge`]); an error from a step aborts the search.
/// The upper bound is tried first: a server that meets QoS at its peak needs no search.
pub fn search<E>(
    bounds: SearchBounds,
    mut step: impl FnMut(f64) -> Result<QosStep, E>,
) -> Result<QosSearch, E> {
    let mut steps = Vec::new();
    let mut best: Option<QosStep> = None;
    let mut low = 0.0_f64;
    let mut high = bounds.upper_ops;
    let mut rate = high;
    while steps.len() < bounds.max_steps {
        let result = step(rate)?;
        steps.push(result);
        if result.met {
            low = rate;
            // Passing rates only grow during a binary search, so the latest pass is the best.
            best = Some(result);
        } else {
            high = rate;
        }
        if low >= high || (high - low) / high < bounds.precision {
            break;
        }
        rate = (low + high) / 2.0;
    }
    Ok(QosSearch { steps, best })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// An M/M/1-like server: latency grows as 1 / (1 - load), capacity 100k ops/s.
    fn model_with_limit(rate: f64, limit_us: u64) -> Result<QosStep, Infallible> {
        let capacity = 100_000.0;
        let load = rate / capacity;
        let p95 = if load >= 1.0 {
            u64::MAX
        } else {
            (50.0 / (1.0 - load)) as u64
        };
        Ok(judge(rate, rate.min(capacity), p95, 0, limit_us))
    }

    fn model(rate: f64) -> Result<QosStep, Infallible> {
        model_with_limit(rate, 500)
    }

    #[test]
    fn finds_the_knee_of_a_latency_curve_within_the_precision() {
        // 50 / (1 - r/100k) <= 500  <=>  r <= 90k.
        let bounds = SearchBounds {
            upper_ops: 150_000.0,
            precision: 0.02,
            max_steps: 20,
        };
        let found = search(bounds, model).unwrap();
        let best = found.best.unwrap();
        assert!(best.met && best.offered_ops <= 90_000.0, "{best:?}");
        assert!(best.offered_ops > 90_000.0 * 0.98, "{best:?}");
        assert!(found.steps.len() < 12, "took {} steps", found.steps.len());
        assert!(found
            .steps
            .iter()
            .all(|s| s.met == (s.offered_ops <= 90_000.0)));
    }

    #[test]
    fn a_server_that_meets_qos_at_the_upper_bound_needs_one_step() {
        let bounds = SearchBounds {
            upper_ops: 50_000.0,
            precision: 0.02,
            max_steps: 20,
        };
        let found = search(bounds, model).unwrap();
        assert_eq!(found.steps.len(), 1);
        assert_eq!(found.best.unwrap().offered_ops, 50_000.0);
    }

    #[test]
    fn a_server_that_never_meets_qos_reports_no_best_and_stops() {
        let bounds = SearchBounds {
            upper_ops: 1e6,
            precision: 0.02,
            max_steps: 7,
        };
        let found = search(bounds, |r| model_with_limit(r, 10)).unwrap();
        assert!(found.best.is_none());
        assert_eq!(found.steps.len(), 7);
    }

    #[test]
    fn the_median_run_stands_for_a_step() {
        assert_eq!(median_run(&[300]), 0);
        // One disturbed run (90 ms) among three does not decide the step.
        assert_eq!(median_run(&[120, 90_000, 150]), 2);
        assert_eq!(median_run(&[90_000, 130, 140, 100, 95_000]), 2);
        // Even counts take the lower middle run; ties keep the earlier.
        assert_eq!(median_run(&[400, 100]), 1);
        assert_eq!(median_run(&[200, 200, 200]), 1);
    }

    #[test]
    fn shortfalls_and_errors_fail_a_step() {
        assert!(!judge(1000.0, 900.0, 10, 0, 500).met);
        assert!(!judge(1000.0, 1000.0, 10, 1, 500).met);
        assert!(judge(1000.0, 960.0, 500, 0, 500).met);
    }

    #[test]
    fn step_errors_abort_the_search() {
        let bounds = SearchBounds {
            upper_ops: 1e6,
            precision: 0.02,
            max_steps: 7,
        };
        let r = search(bounds, |_| Err::<QosStep, _>("boom"));
        assert_eq!(r.unwrap_err(), "boom");
    }
}
