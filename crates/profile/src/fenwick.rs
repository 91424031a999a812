//! A Fenwick (binary indexed) tree of `u64` sums over positions `0..len`.
//!
//! Invariant: `tree[i - 1]` holds the sum of the values at positions `(i - lowbit(i))..i`.
//! Values are updated with wrapping arithmetic, so a removal is an addition of the negated
//! value; every prefix sum the callers ask for is a sum of non-negative values and never wraps.

/// Prefix sums with `O(log len)` point updates and queries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fenwick {
    tree: Vec<u64>,
}

impl Fenwick {
    /// Builds a tree over `values` in `O(len)`.
    pub(crate) fn from_values(values: &[u64]) -> Self {
        let mut tree = values.to_vec();
        for i in 1..=tree.len() {
            let parent = i + (i & i.wrapping_neg());
            if parent <= tree.len() {
                tree[parent - 1] = tree[parent - 1].wrapping_add(tree[i - 1]);
            }
        }
        Self { tree }
    }

    pub(crate) fn len(&self) -> usize {
        self.tree.len()
    }

    /// Adds `delta` (wrapping) at `position`.
    pub(crate) fn add(&mut self, position: usize, delta: u64) {
        let mut i = position + 1;
        while i <= self.tree.len() {
            self.tree[i - 1] = self.tree[i - 1].wrapping_add(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Subtracts `delta` at `position`.
    pub(crate) fn sub(&mut self, position: usize, delta: u64) {
        self.add(position, delta.wrapping_neg());
    }

    /// Sum of the values at positions `0..=position`.
    pub(crate) fn prefix_sum_inclusive(&self, position: usize) -> u64 {
        let mut i = position + 1;
        let mut sum = 0u64;
        while i > 0 {
            sum = sum.wrapping_add(self.tree[i - 1]);
            i &= i - 1;
        }
        sum
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.tree.capacity() * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_sums_match_naive_sums() {
        let values: Vec<u64> = (0..37).map(|i| (i * 7 % 11) as u64).collect();
        let mut tree = Fenwick::from_values(&values);
        let mut naive = values.clone();
        tree.add(5, 3);
        naive[5] += 3;
        tree.sub(20, naive[20]);
        naive[20] = 0;
        for position in 0..naive.len() {
            let expected: u64 = naive[..=position].iter().sum();
            assert_eq!(
                tree.prefix_sum_inclusive(position),
                expected,
                "at {position}"
            );
        }
        assert_eq!(tree.len(), 37);
    }
}
