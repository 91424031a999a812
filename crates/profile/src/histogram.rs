//! A weighted log-linear histogram of non-negative integer values.
//!
//! Values below `2^sub_bucket_bits` get one bucket each (exact); above that every power of two
//! is split into `2^sub_bucket_bits` equal buckets, so a bucket's width is at most
//! `2^-sub_bucket_bits` of its lower bound. Each bucket keeps the total weight of its values and
//! the weighted sum of the values, so sums of `value * weight` over whole buckets are exact.
//! Buckets grow on demand up to the largest recorded value.

/// Weighted counts and weighted value sums per log-linear bucket.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogHistogram {
    sub_bucket_bits: u32,
    weights: Vec<f64>,
    value_sums: Vec<f64>,
}

impl LogHistogram {
    pub(crate) fn new(sub_bucket_bits: u32) -> Self {
        assert!(
            (1..=20).contains(&sub_bucket_bits),
            "sub_bucket_bits out of range"
        );
        Self {
            sub_bucket_bits,
            weights: Vec::new(),
            value_sums: Vec::new(),
        }
    }

    /// Index of the bucket holding `value`.
    pub(crate) fn bucket_of(&self, value: u64) -> usize {
        let bits = self.sub_bucket_bits;
        if value < (1u64 << bits) {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros();
        let shift = exponent - bits;
        let mantissa = value >> shift;
        (((shift + 1) as usize) << bits) + (mantissa - (1u64 << bits)) as usize
    }

    /// Smallest value of bucket `index`.
    pub(crate) fn bucket_low(&self, index: usize) -> u64 {
        let bits = self.sub_bucket_bits;
        let per_octave = 1usize << bits;
        if index < per_octave {
            return index as u64;
        }
        let shift = (index >> bits) as u32 - 1;
        let mantissa = (per_octave + (index & (per_octave - 1))) as u64;
        mantissa << shift
    }

    /// Number of integer values in bucket `index`.
    pub(crate) fn bucket_width(&self, index: usize) -> u64 {
        let per_octave = 1usize << self.sub_bucket_bits;
        if index < per_octave {
            1
        } else {
            1u64 << ((index >> self.sub_bucket_bits) - 1)
        }
    }

    pub(crate) fn add(&mut self, value: u64, weight: f64) {
        let index = self.bucket_of(value);
        if index >= self.weights.len() {
            self.weights.resize(index + 1, 0.0);
            self.value_sums.resize(index + 1, 0.0);
        }
        self.weights[index] += weight;
        self.value_sums[index] += weight * value as f64;
    }

    /// Adds every bucket of `other`, which must use the same bucket layout.
    pub(crate) fn merge(&mut self, other: &Self) {
        assert_eq!(
            self.sub_bucket_bits, other.sub_bucket_bits,
            "bucket layouts differ"
        );
        if other.weights.len() > self.weights.len() {
            self.weights.resize(other.weights.len(), 0.0);
            self.value_sums.resize(other.weights.len(), 0.0);
        }
        for (index, weight) in other.weights.iter().enumerate() {
            self.weights[index] += weight;
            self.value_sums[index] += other.value_sums[index];
        }
    }

    /// Removes the weights of `earlier`, a snapshot of this same histogram taken before: what was
    /// recorded in between. Float noise is clamped at zero.
    pub(crate) fn subtract(&mut self, earlier: &Self) {
        assert_eq!(
            self.sub_bucket_bits, earlier.sub_bucket_bits,
            "bucket layouts differ"
        );
        for (index, weight) in earlier.weights.iter().enumerate().take(self.weights.len()) {
            self.weights[index] = (self.weights[index] - weight).max(0.0);
            self.value_sums[index] = (self.value_sums[index] - earlier.value_sums[index]).max(0.0);
        }
    }

    /// Number of buckets allocated (one past the highest bucket ever touched).
    pub(crate) fn bucket_count(&self) -> usize {
        self.weights.len()
    }

    pub(crate) fn weight(&self, index: usize) -> f64 {
        self.weights.get(index).copied().unwrap_or(0.0)
    }

    pub(crate) fn value_sum(&self, index: usize) -> f64 {
        self.value_sums.get(index).copied().unwrap_or(0.0)
    }

    pub(crate) fn total_weight(&self) -> f64 {
        self.weights.iter().sum()
    }

    /// Weight of the values `<= value`, counting a partial bucket in proportion to the part of
    /// its width at or below `value` (values are assumed spread evenly inside a bucket).
    pub(crate) fn weight_at_most(&self, value: f64) -> f64 {
        if value < 0.0 {
            return 0.0;
        }
        let whole = value.floor();
        let index = self.bucket_of(whole.min(u64::MAX as f64) as u64);
        let below: f64 = self.weights.iter().take(index).sum();
        let low = self.bucket_low(index) as f64;
        let width = self.bucket_width(index) as f64;
        let fraction = ((whole - low + 1.0) / width).clamp(0.0, 1.0);
        below + self.weight(index) * fraction
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        (self.weights.capacity() + self.value_sums.capacity()) * std::mem::size_of::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_values_without_gaps() {
        let histogram = LogHistogram::new(3);
        for index in 0..200 {
            let low = histogram.bucket_low(index);
            let width = histogram.bucket_width(index);
            assert_eq!(histogram.bucket_of(low), index);
            assert_eq!(histogram.bucket_of(low + width - 1), index);
            assert_eq!(
                histogram.bucket_low(index + 1),
                low + width,
                "gap after {index}"
            );
        }
        assert_eq!(
            histogram.bucket_of(u64::MAX),
            histogram.bucket_of(u64::MAX - 1)
        );
    }

    #[test]
    fn small_values_are_exact_and_partial_buckets_interpolate() {
        let mut histogram = LogHistogram::new(2);
        histogram.add(1, 1.0);
        histogram.add(3, 2.0);
        histogram.add(8, 4.0); // bucket [8, 10)
        assert_eq!(histogram.weight_at_most(0.0), 0.0);
        assert_eq!(histogram.weight_at_most(1.0), 1.0);
        assert_eq!(histogram.weight_at_most(3.0), 3.0);
        assert_eq!(histogram.weight_at_most(8.0), 5.0);
        assert_eq!(histogram.weight_at_most(9.0), 7.0);
        assert_eq!(histogram.total_weight(), 7.0);
        let mut merged = histogram.clone();
        merged.merge(&histogram);
        assert_eq!(merged.total_weight(), 14.0);
        assert_eq!(merged.value_sum(histogram.bucket_of(8)), 64.0);
    }
}
