//! Miss-ratio curves and the sizes at which profilers evaluate them.
//!
//! Invariants of an [`Mrc`]: points are sorted by strictly increasing size, every miss ratio
//! lies in `[0, 1]`, and miss ratios never increase with size (a larger LRU cache never misses
//! more). Constructors enforce them, so sampling noise cannot produce a rising curve. Between
//! points a curve is read by linear interpolation; below its first point it rises linearly to a
//! miss ratio of 1 at size 0; beyond its last point it stays flat.

/// The unit of cache size on a curve's x axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SizeUnit {
    /// Number of objects the cache holds.
    Objects,
    /// Bytes of objects the cache holds (sum of the sizes passed to `record`).
    Bytes,
}

/// One evaluated point of a curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MrcPoint {
    /// Cache size in the curve's unit.
    pub size: u64,
    /// Fraction of requests that miss in an LRU cache of `size`.
    pub miss_ratio: f64,
}

/// A miss-ratio curve: sorted `(size, miss_ratio)` points, monotone non-increasing.
#[derive(Debug, Clone, PartialEq)]
pub struct Mrc {
    unit: SizeUnit,
    points: Vec<MrcPoint>,
}

impl Mrc {
    /// Builds a curve from points in any order: sorts them, keeps the first point of each size,
    /// clamps ratios to `[0, 1]` and replaces any rise by the running minimum.
    pub fn from_points(unit: SizeUnit, mut points: Vec<MrcPoint>) -> Self {
        points.sort_by_key(|p| p.size);
        points.dedup_by_key(|p| p.size);
        let mut lowest = 1.0f64;
        for point in &mut points {
            let ratio = if point.miss_ratio.is_nan() {
                1.0
            } else {
                point.miss_ratio
            };
            lowest = lowest.min(ratio.clamp(0.0, 1.0));
            point.miss_ratio = lowest;
        }
        Self { unit, points }
    }

    /// The unit of the x axis.
    pub fn unit(&self) -> SizeUnit {
        self.unit
    }

    /// The points, by strictly increasing size.
    pub fn points(&self) -> &[MrcPoint] {
        &self.points
    }

    /// The miss ratio at `size`, interpolated linearly between the neighbouring points.
    pub fn miss_ratio_at(&self, size: f64) -> f64 {
        let (Some(first), Some(last)) = (self.points.first(), self.points.last()) else {
            return 1.0;
        };
        if size <= 0.0 {
            return 1.0;
        }
        if size >= last.size as f64 {
            return last.miss_ratio;
        }
        let after = self.points.partition_point(|p| (p.size as f64) <= size);
        let (low_size, low_ratio) = match after {
            0 => (0.0, 1.0),
            _ => {
                let p = self.points[after - 1];
                (p.size as f64, p.miss_ratio)
            }
        };
        let high = if after == 0 {
            *first
        } else {
            self.points[after]
        };
        let span = high.size as f64 - low_size;
        if span <= 0.0 {
            return high.miss_ratio;
        }
        low_ratio + (high.miss_ratio - low_ratio) * (size - low_size) / span
    }
}

/// Mean absolute difference between `estimate` and `reference` at the reference's sizes.
pub fn mean_absolute_error(reference: &Mrc, estimate: &Mrc) -> f64 {
    let points = reference.points();
    if points.is_empty() {
        return 0.0;
    }
    let total: f64 = points
        .iter()
        .map(|p| (estimate.miss_ratio_at(p.size as f64) - p.miss_ratio).abs())
        .sum();
    total / points.len() as f64
}

/// Where to evaluate a curve: logarithmically spaced sizes up to the working-set size, plus
/// caller-requested exact sizes (page boundaries, a reference curve's sizes).
#[derive(Debug, Clone, PartialEq)]
pub struct MrcQuery {
    /// The unit of every size asked for.
    pub unit: SizeUnit,
    /// Log-spaced points per factor of ten in size; 0 evaluates only `exact_sizes`.
    pub points_per_decade: u32,
    /// Sizes always evaluated, in `unit`.
    pub exact_sizes: Vec<u64>,
}

/// 20 points a decade: neighbouring sizes differ by 12%, finer than any allocation step.
pub const DEFAULT_POINTS_PER_DECADE: u32 = 20;

impl MrcQuery {
    /// The default query in `unit`: `DEFAULT_POINTS_PER_DECADE` log-spaced points, no exact sizes.
    pub fn new(unit: SizeUnit) -> Self {
        Self {
            unit,
            points_per_decade: DEFAULT_POINTS_PER_DECADE,
            exact_sizes: Vec::new(),
        }
    }

    /// Exactly `sizes`, nothing log-spaced (a reference curve's points, page boundaries).
    pub fn exactly(unit: SizeUnit, sizes: &[u64]) -> Self {
        Self {
            unit,
            points_per_decade: 0,
            exact_sizes: sizes.to_vec(),
        }
    }

    /// Sorted, distinct, positive sizes to evaluate for a working set of `max_size` units:
    /// log-spaced from 1 to `max_size` (inclusive) plus every exact size.
    pub fn sizes(&self, max_size: u64) -> Vec<u64> {
        let mut sizes: Vec<u64> = self
            .exact_sizes
            .iter()
            .copied()
            .filter(|&s| s > 0)
            .collect();
        if self.points_per_decade > 0 && max_size > 0 {
            let step = 10f64.powf(1.0 / f64::from(self.points_per_decade));
            let mut size = 1.0f64;
            while size < max_size as f64 {
                sizes.push(size.round() as u64);
                size *= step;
            }
            sizes.push(max_size);
        }
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(size: u64, miss_ratio: f64) -> MrcPoint {
        MrcPoint { size, miss_ratio }
    }

    #[test]
    fn curves_are_sorted_clamped_and_monotone() {
        let curve = Mrc::from_points(
            SizeUnit::Objects,
            vec![
                point(10, 0.5),
                point(1, 1.2),
                point(5, 0.4),
                point(20, 0.45),
            ],
        );
        let ratios: Vec<f64> = curve.points().iter().map(|p| p.miss_ratio).collect();
        assert_eq!(ratios, vec![1.0, 0.4, 0.4, 0.4]);
        assert_eq!(curve.points()[0].size, 1);
    }

    #[test]
    fn interpolation_between_and_outside_points() {
        let curve = Mrc::from_points(SizeUnit::Bytes, vec![point(10, 0.8), point(20, 0.4)]);
        assert_eq!(curve.miss_ratio_at(0.0), 1.0);
        assert!((curve.miss_ratio_at(5.0) - 0.9).abs() < 1e-12);
        assert!((curve.miss_ratio_at(15.0) - 0.6).abs() < 1e-12);
        assert_eq!(curve.miss_ratio_at(1e9), 0.4);
        let empty = Mrc::from_points(SizeUnit::Bytes, Vec::new());
        assert_eq!(empty.miss_ratio_at(3.0), 1.0);
    }

    #[test]
    fn error_is_zero_against_itself() {
        let curve = Mrc::from_points(SizeUnit::Objects, vec![point(1, 0.9), point(4, 0.2)]);
        assert_eq!(mean_absolute_error(&curve, &curve), 0.0);
        let shifted = Mrc::from_points(SizeUnit::Objects, vec![point(1, 0.8), point(4, 0.1)]);
        assert!((mean_absolute_error(&curve, &shifted) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn query_sizes_are_log_spaced_and_include_exact_points() {
        let query = MrcQuery {
            unit: SizeUnit::Objects,
            points_per_decade: 10,
            exact_sizes: vec![0, 7, 1000],
        };
        let sizes = query.sizes(100);
        assert_eq!(sizes.first(), Some(&1));
        assert!(sizes.contains(&7) && sizes.contains(&1000) && sizes.contains(&100));
        assert!(sizes.windows(2).all(|w| w[0] < w[1]));
        assert!(sizes.len() < 30);
    }
}
