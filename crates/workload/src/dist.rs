//! The distributions of every workload mrcache generates, in one place: key and value sizes
//! (Facebook ETC, after mutilate), key popularity (uniform, Zipf, generalized Pareto over ranks as
//! LAMA draws its three phases), and the generalized Pareto draw behind ETC's value sizes and
//! inter-arrival gaps. The synthetic generators ([`crate::synth`]) and the load generator
//! (`mrcache bench`) both draw from here, so the two cannot drift apart.
//!
//! Invariants: [`Zipf::sample`] returns a rank in `1..=n`; [`Popularity::sample`] returns a key id in
//! `0..objects`; sizes are drawn per object from a hash of (seed, key id) rather than from the stream
//! RNG, so they are stable for the life of the object without a table.

use rand::Rng;

use crate::WorkloadError;

/// SplitMix64's finaliser: a bijective mix of 64 bits, used to derive per-object uniforms.
fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A uniform in (0, 1) fixed by (seed, key, stream).
fn object_uniform(seed: u64, key: u64, stream: u64) -> f64 {
    let bits = mix64(seed ^ mix64(key ^ stream.wrapping_mul(0xA24B_AED4_963E_E407)));
    ((bits >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// The generalized Pareto quantile `location + sigma * (u^-k - 1) / k` of `u` in (0, 1] (the
/// exponential `location - sigma * ln u` as `k` goes to 0). With `u` uniform on (0, 1] it is a
/// generalized Pareto draw; its mean is `location + sigma / (1 - k)` for `k < 1`.
pub fn generalized_pareto_quantile(u: f64, location: f64, sigma: f64, k: f64) -> f64 {
    if k.abs() < 1e-12 {
        location - sigma * u.ln()
    } else {
        location + sigma * (u.powf(-k) - 1.0) / k
    }
}

/// ETC's inter-arrival gaps: generalized Pareto with location 0, this shape and sigma 16.0292 us
/// (mean 18.97 us); a load generator keeps the shape and sets the scale from its target rate.
pub const ETC_INTERARRIVAL_SHAPE: f64 = 0.154971;

/// Zipf over ranks `1..=n` with exponent `s >= 0` (rank `k` has weight `k^-s`): `rand_distr`'s
/// sampler (O(1) memory whatever `n`), checked at construction so that a bad exponent is a
/// [`WorkloadError`] and every draw is a whole rank. The simulator's synthetic workloads and the load
/// generator both draw through it, so a seed gives the same key sequence in both.
#[derive(Debug, Clone, Copy)]
pub struct Zipf {
    n: u64,
    s: f64,
    inner: rand_distr::Zipf<f64>,
}

impl Zipf {
    /// Zipf over `n >= 1` ranks with a finite exponent `s >= 0`.
    pub fn new(n: u64, s: f64) -> Result<Self, WorkloadError> {
        if !(s.is_finite() && s >= 0.0) {
            return Err(WorkloadError::ZipfExponent { alpha: s });
        }
        if n == 0 {
            return Err(WorkloadError::ZipfNoRanks);
        }
        let inner =
            rand_distr::Zipf::new(n, s).map_err(|_| WorkloadError::ZipfExponent { alpha: s })?;
        Ok(Zipf { n, s, inner })
    }

    /// The number of ranks, `n`.
    pub fn ranks(&self) -> u64 {
        self.n
    }

    /// The exponent `s`.
    pub fn exponent(&self) -> f64 {
        self.s
    }

    /// A rank in `1..=n`; rank 1 is the most probable.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        use rand_distr::Distribution;
        self.inner.sample(rng) as u64
    }
}

/// How large keys are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeySizeModel {
    /// Every key has this many bytes.
    Fixed(u8),
    /// ETC: generalized extreme value, mu 30.7984, sigma 8.20449, k 0.078688 (p50 34 B), clamped to 8..=250.
    Etc,
}

impl KeySizeModel {
    /// The size in bytes of object `key`'s key, a function of (`seed`, `key`) alone.
    pub fn size(&self, seed: u64, key: u64) -> u8 {
        match *self {
            KeySizeModel::Fixed(n) => n,
            KeySizeModel::Etc => {
                let (mu, sigma, k) = (30.7984, 8.20449, 0.078688);
                let e = -object_uniform(seed, key, 1).ln();
                let size = mu + sigma * (e.powf(-k) - 1.0) / k;
                size.round().clamp(8.0, 250.0) as u8
            }
        }
    }
}

/// ETC's discrete small values, 0..=14 bytes, with their (unnormalised) probabilities, from
/// workloads.md.
const ETC_SMALL_VALUES: [f64; 15] = [
    0.00536, 0.00047, 0.17820, 0.09239, 0.00018, 0.02740, 0.00065, 0.00606, 0.00023, 0.00837,
    0.00837, 0.08989, 0.00092, 0.00326, 0.01980,
];
/// Probability that an ETC value comes from the discrete table.
const ETC_SMALL_VALUE_SHARE: f64 = 0.44155;
/// ETC's value sizes above the table: generalized Pareto (location, sigma, shape).
const ETC_VALUE_TAIL: (f64, f64, f64) = (15.0, 214.476, 0.348238);

/// How large values are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueSizeModel {
    /// Every value has this many bytes.
    Fixed(u32),
    /// Uniform in `lo..=hi`.
    Uniform(u32, u32),
    /// ETC: 44.155% from a table over 0..14 bytes, else generalized Pareto (15, 214.476, 0.348238),
    /// capped at `max` bytes.
    Etc {
        /// The largest size returned: the tail is cut here.
        max: u32,
    },
}

impl ValueSizeModel {
    /// ETC's distribution with its tail cut at 500,000 bytes: what `--value-size etc` and the `etc`
    /// workloads use.
    pub const ETC: ValueSizeModel = ValueSizeModel::Etc { max: 500_000 };

    /// The size in bytes of object `key`'s value, a function of (`seed`, `key`) alone.
    pub fn size(&self, seed: u64, key: u64) -> u32 {
        match *self {
            ValueSizeModel::Fixed(n) => n,
            ValueSizeModel::Uniform(lo, hi) => {
                let u = object_uniform(seed, key, 2);
                lo + ((hi - lo + 1) as f64 * u) as u32
            }
            ValueSizeModel::Etc { max } => {
                let u = object_uniform(seed, key, 3);
                if u < ETC_SMALL_VALUE_SHARE {
                    let total: f64 = ETC_SMALL_VALUES.iter().sum();
                    let mut target = u / ETC_SMALL_VALUE_SHARE * total;
                    for (size, p) in ETC_SMALL_VALUES.iter().enumerate() {
                        if target < *p {
                            return size as u32;
                        }
                        target -= p;
                    }
                    return 14;
                }
                let v = object_uniform(seed, key, 4);
                let (location, sigma, shape) = ETC_VALUE_TAIL;
                generalized_pareto_quantile(v, location, sigma, shape).min(max as f64) as u32
            }
        }
    }
}

/// Which object a request asks for.
#[derive(Debug, Clone, Copy)]
pub enum Popularity {
    /// Every object equally likely.
    Uniform {
        /// Number of objects, at least 1.
        objects: u64,
    },
    /// Zipf over ranks 1..=objects with exponent `alpha` (rank r has weight r^-alpha).
    Zipf {
        /// Number of objects, at least 1.
        objects: u64,
        /// The exponent.
        alpha: f64,
        /// The sampler of ranks over `objects`.
        zipf: Zipf,
    },
    /// `floor(GPD(0, sigma, k))` over ranks, wrapped into `objects` (LAMA's three-phase phases).
    Pareto {
        /// Number of objects, at least 1.
        objects: u64,
        /// Scale of the generalized Pareto.
        sigma: f64,
        /// Shape of the generalized Pareto.
        k: f64,
    },
}

impl Popularity {
    /// Uniform over `objects` (at least 1).
    pub fn uniform(objects: u64) -> Popularity {
        Popularity::Uniform {
            objects: objects.max(1),
        }
    }

    /// Zipf with exponent `alpha` (finite, >= 0) over `objects` (at least 1).
    pub fn zipf(objects: u64, alpha: f64) -> Result<Popularity, WorkloadError> {
        let objects = objects.max(1);
        let zipf = Zipf::new(objects, alpha)?;
        Ok(Popularity::Zipf {
            objects,
            alpha,
            zipf,
        })
    }

    /// Generalized Pareto ranks `(0, sigma, k)` wrapped into `objects` (at least 1).
    pub fn pareto(objects: u64, sigma: f64, k: f64) -> Popularity {
        Popularity::Pareto {
            objects: objects.max(1),
            sigma,
            k,
        }
    }

    /// The number of objects: ids drawn are below it.
    pub fn objects(&self) -> u64 {
        match *self {
            Popularity::Uniform { objects }
            | Popularity::Zipf { objects, .. }
            | Popularity::Pareto { objects, .. } => objects,
        }
    }

    /// A key id in `0..objects`. Zipf ranks are scattered over ids by a fixed bijection so that popular
    /// keys are not all adjacent ids.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        match *self {
            Popularity::Uniform { objects } => rng.gen_range(0..objects),
            Popularity::Zipf { objects, zipf, .. } => {
                let rank = zipf.sample(rng) - 1;
                scatter(rank, objects)
            }
            Popularity::Pareto { objects, sigma, k } => {
                let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
                let rank = generalized_pareto_quantile(u, 0.0, sigma, k);
                (rank.min(u64::MAX as f64) as u64) % objects
            }
        }
    }
}

/// A bijection of `0..n` (multiplication by an odd constant modulo the next power of two, cycle-walked).
fn scatter(rank: u64, n: u64) -> u64 {
    if n <= 2 {
        return rank;
    }
    let mask = n.next_power_of_two() - 1;
    let mut x = rank;
    loop {
        x = (x
            .wrapping_mul(0x9E37_79B9_7F4A_7C15 | 1)
            .wrapping_add(0x632B_E59B_D9B4_E019))
            & mask;
        if x < n {
            return x;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn etc_sizes_have_the_published_quantiles() {
        let n = 200_000u64;
        let mut keys: Vec<u8> = (0..n).map(|k| KeySizeModel::Etc.size(7, k)).collect();
        let mut values: Vec<u32> = (0..n)
            .map(|k| ValueSizeModel::Etc { max: 1 << 20 }.size(7, k))
            .collect();
        keys.sort_unstable();
        values.sort_unstable();
        let q = |p: f64| (n as f64 * p) as usize;
        // workloads.md: key p50 34 B, p90 51 B; value p50 39 B, p90 520 B, mean about 194 B.
        assert!(
            (33..=35).contains(&keys[q(0.5)]),
            "key p50 {}",
            keys[q(0.5)]
        );
        assert!(
            (49..=53).contains(&keys[q(0.9)]),
            "key p90 {}",
            keys[q(0.9)]
        );
        assert!(
            (35..=43).contains(&values[q(0.5)]),
            "value p50 {}",
            values[q(0.5)]
        );
        assert!(
            (480..=560).contains(&values[q(0.9)]),
            "value p90 {}",
            values[q(0.9)]
        );
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n as f64;
        assert!((170.0..220.0).contains(&mean), "value mean {mean}");
    }

    #[test]
    fn sizes_are_fixed_per_object() {
        assert_eq!(KeySizeModel::Etc.size(1, 42), KeySizeModel::Etc.size(1, 42));
        let v = ValueSizeModel::Uniform(10, 20);
        assert!((0..1000).all(|k| (10..=20).contains(&v.size(3, k))));
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let p = Popularity::zipf(1000, 1.0).unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[p.sample(&mut rng) as usize] += 1;
        }
        let top = *counts.iter().max().unwrap();
        // Rank 1 of Zipf(1) over 1000 keys has probability 1/H(1000) = 13.4%.
        assert!((12_000..15_000).contains(&top), "top {top}");
        let pareto = Popularity::pareto(500, 214.476, 0.348238);
        assert!((0..1000).all(|_| pareto.sample(&mut rng) < 500));
    }

    #[test]
    fn zipf_matches_its_probability_mass() {
        for &s in &[0.0, 0.5, 0.99, 1.0, 1.2] {
            let n = 20u64;
            let z = Zipf::new(n, s).unwrap();
            let mut counts = vec![0u64; n as usize];
            let draws = 400_000;
            let mut r = SmallRng::seed_from_u64(7);
            for _ in 0..draws {
                let k = z.sample(&mut r);
                assert!((1..=n).contains(&k));
                counts[(k - 1) as usize] += 1;
            }
            let norm: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
            for (i, c) in counts.iter().enumerate() {
                let expected = ((i + 1) as f64).powf(-s) / norm;
                let got = *c as f64 / draws as f64;
                assert!(
                    (got - expected).abs() < 0.004,
                    "s={s} rank {} got {got} want {expected}",
                    i + 1
                );
            }
        }
    }

    #[test]
    fn zipf_over_a_large_key_space_is_cheap_and_skewed() {
        let n = 10_000_000u64;
        let z = Zipf::new(n, 0.99).unwrap();
        let mut r = SmallRng::seed_from_u64(7);
        let draws = 200_000;
        let top = (0..draws).filter(|_| z.sample(&mut r) == 1).count() as f64 / draws as f64;
        // H(n, 0.99) is about 17.8 for n = 1e7, so rank 1 has probability about 0.056.
        let norm: f64 = (1..=n).map(|k| (k as f64).powf(-0.99)).sum();
        assert!(
            (top - 1.0 / norm).abs() < 0.004,
            "P(rank 1) = {top}, want {}",
            1.0 / norm
        );
    }

    #[test]
    fn zipf_refuses_bad_parameters() {
        for s in [-1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                Zipf::new(10, s),
                Err(WorkloadError::ZipfExponent { .. })
            ));
        }
        assert!(matches!(Zipf::new(0, 1.0), Err(WorkloadError::ZipfNoRanks)));
        assert_eq!(
            Popularity::zipf(10, -1.0).unwrap_err().to_string(),
            "zipf alpha -1: s < 0 or is NaN in Zipf distribution"
        );
    }

    #[test]
    fn scatter_is_a_bijection() {
        let n = 1000;
        let mut seen = vec![false; n as usize];
        for r in 0..n {
            let x = scatter(r, n) as usize;
            assert!(!seen[x]);
            seen[x] = true;
        }
    }
}
