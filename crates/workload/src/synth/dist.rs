//! The distributions behind the generators: key and value sizes (Facebook ETC, after mutilate),
//! and key popularity (uniform, Zipf, generalized Pareto over ranks as LAMA draws its three phases).
//!
//! Sizes are drawn per object from a hash of (seed, key id) rather than from the stream RNG, so they are
//! stable for the life of the object without a table.

use rand::Rng;
use rand_distr::{Distribution, Zipf};

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

/// Generalized Pareto quantile: `location + sigma * (u^-k - 1) / k`.
fn gpd_quantile(u: f64, location: f64, sigma: f64, k: f64) -> f64 {
    if k.abs() < 1e-12 {
        location - sigma * u.ln()
    } else {
        location + sigma * (u.powf(-k) - 1.0) / k
    }
}

/// How large keys are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeySizeModel {
    Fixed(u8),
    /// ETC: generalized extreme value, mu 30.7984, sigma 8.20449, k 0.078688 (p50 34 B), clamped to 8..=250.
    Etc,
}

impl KeySizeModel {
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

/// ETC's discrete small values, 0..=14 bytes, with their probabilities (normalised on use).
const ETC_SMALL_VALUES: [f64; 15] = [
    0.00536, 0.00047, 0.17820, 0.09239, 0.00018, 0.02740, 0.00065, 0.00606, 0.00023, 0.00837,
    0.00837, 0.08989, 0.00092, 0.00326, 0.01980,
];
/// Probability that an ETC value comes from the discrete table.
const ETC_SMALL_VALUE_SHARE: f64 = 0.44155;

/// How large values are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueSizeModel {
    Fixed(u32),
    /// Uniform in `lo..=hi`.
    Uniform(u32, u32),
    /// ETC: 44.155% from a table over 0..14 bytes, else generalized Pareto (15, 214.476, 0.348238),
    /// capped at `max` bytes.
    Etc {
        max: u32,
    },
}

impl ValueSizeModel {
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
                gpd_quantile(v, 15.0, 214.476, 0.348238).min(max as f64) as u32
            }
        }
    }
}

/// Which object a request asks for.
#[derive(Debug, Clone, Copy)]
pub enum Popularity {
    Uniform {
        objects: u64,
    },
    /// Zipf over ranks 1..=objects with exponent `alpha` (rank r has weight r^-alpha).
    Zipf {
        objects: u64,
        alpha: f64,
        zipf: Zipf<f64>,
    },
    /// `floor(GPD(0, sigma, k))` over ranks, wrapped into `objects` (LAMA's three-phase phases).
    Pareto {
        objects: u64,
        sigma: f64,
        k: f64,
    },
}

impl Popularity {
    pub fn uniform(objects: u64) -> Popularity {
        Popularity::Uniform {
            objects: objects.max(1),
        }
    }

    pub fn zipf(objects: u64, alpha: f64) -> Result<Popularity, String> {
        let objects = objects.max(1);
        let zipf = Zipf::new(objects, alpha).map_err(|e| format!("zipf alpha {alpha}: {e}"))?;
        Ok(Popularity::Zipf {
            objects,
            alpha,
            zipf,
        })
    }

    pub fn pareto(objects: u64, sigma: f64, k: f64) -> Popularity {
        Popularity::Pareto {
            objects: objects.max(1),
            sigma,
            k,
        }
    }

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
                let rank = zipf.sample(rng) as u64 - 1;
                scatter(rank, objects)
            }
            Popularity::Pareto { objects, sigma, k } => {
                let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
                let rank = gpd_quantile(u, 0.0, sigma, k);
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
