//! Helpers shared by the crate's unit tests: a skewed synthetic trace and a curve's miss ratios.

use crate::keymap::mix64;
use crate::mrc::Mrc;

/// A skewed synthetic trace: key = floor(u^3 * 50,000) for pseudo-random u seeded by `seed`.
pub(crate) fn skewed_trace(requests: usize, seed: u64) -> Vec<u64> {
    let mut state = seed;
    (0..requests)
        .map(|_| {
            state = mix64(state);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            (u * u * u * 50_000.0) as u64
        })
        .collect()
}

/// The miss ratios of `curve`, in size order.
pub(crate) fn miss_ratios(curve: &Mrc) -> Vec<f64> {
    curve.points().iter().map(|p| p.miss_ratio).collect()
}
