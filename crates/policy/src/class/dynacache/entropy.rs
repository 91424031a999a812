//! Dynacache's miss entropy (Dynacache §4.3): how evenly an application's misses spread over its slab
//! classes. The misses per class, divided by their total, are a probability distribution; its Shannon
//! entropy in bits is 0 when every miss falls in one class and log2(n) when they spread evenly over n.
//!
//! Dynacache reads it as a cheap predictor: an application whose misses sit in one class (entropy near 0)
//! gains little from re-dividing its classes' memory, one whose misses are spread (Table 1: 2.71 and 2.40
//! bits for the applications whose misses fell 51% and 65%) gains most. The paper's Table 1 is in bits:
//! application 3 reaches 2.71 over 12 classes, more than ln 12.
//!
//! Invariants: the result is finite, in `[0, log2(classes with misses)]`; no misses (or one class with
//! all of them) gives exactly 0.

/// The entropy, in bits, of the distribution `misses[i] / sum(misses)`; 0 when there are no misses.
pub fn miss_entropy<I>(misses: I) -> f64
where
    I: IntoIterator<Item = u64>,
    I::IntoIter: Clone,
{
    let misses = misses.into_iter();
    let total: u64 = misses.clone().sum();
    if total == 0 {
        return 0.0;
    }
    let total = total as f64;
    let h: f64 = misses
        .filter(|&m| m > 0)
        .map(|m| {
            let p = m as f64 / total;
            -p * p.log2()
        })
        .sum();
    // A single class gives -1 * log2(1) = 0 exactly; rounding never takes a sum of positives below 0.
    h.max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_misses_and_one_class_have_no_entropy() {
        assert_eq!(miss_entropy(Vec::<u64>::new()), 0.0);
        assert_eq!(miss_entropy([0, 0, 0]), 0.0);
        assert_eq!(miss_entropy([0, 1234, 0]), 0.0);
    }

    #[test]
    fn even_spread_over_n_classes_is_log2_n() {
        for n in 1..=40u32 {
            let h = miss_entropy(vec![7u64; n as usize]);
            assert!((h - f64::from(n).log2()).abs() < 1e-12, "n {n}: {h}");
        }
        // Classes without misses do not count.
        assert!((miss_entropy([5, 0, 5, 0, 5, 5]) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn known_values() {
        // 1:3 -> -(1/4 log2 1/4 + 3/4 log2 3/4) = 0.811278...
        assert!((miss_entropy([1, 3]) - 0.811_278_124_459_132_8).abs() < 1e-12);
        // 1:1:2 -> 1.5 bits.
        assert!((miss_entropy([10, 10, 20]) - 1.5).abs() < 1e-12);
        // Scaling the counts changes nothing.
        assert_eq!(miss_entropy([3, 9, 27]), miss_entropy([300, 900, 2700]));
    }

    #[test]
    fn concentration_lowers_it() {
        // Moving misses toward one class never raises the entropy.
        let mut last = f64::INFINITY;
        for k in 0..=100u64 {
            let h = miss_entropy([100 + 10 * k, 100, 100, 100]);
            assert!(h <= last + 1e-12);
            assert!((0.0..=2.0 + 1e-12).contains(&h));
            last = h;
        }
    }
}
