//! The generators: a single application (ETC, Zipf — one popularity, one size model, one GET/SET mix),
//! LAMA's three-phase workload, and mPart's six applications interleaved as tenants.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::Access;
use crate::dist::{KeySizeModel, Popularity, ValueSizeModel};
use crate::Op;
use crate::WorkloadError;

/// One application: every request picks a key by `popularity`, is a GET with probability `get_ratio`,
/// else a SET.
#[derive(Debug, Clone)]
pub struct SingleApp {
    pub popularity: Popularity,
    pub key_size: KeySizeModel,
    pub value_size: ValueSizeModel,
    pub get_ratio: f64,
    pub tenant: u16,
    seed: u64,
}

impl SingleApp {
    pub fn new(
        popularity: Popularity,
        key_size: KeySizeModel,
        value_size: ValueSizeModel,
        get_ratio: f64,
        seed: u64,
    ) -> SingleApp {
        SingleApp {
            popularity,
            key_size,
            value_size,
            get_ratio,
            tenant: 0,
            seed,
        }
    }

    pub(super) fn access<R: Rng>(&self, rng: &mut R) -> Access {
        let key = self.popularity.sample(rng);
        self.access_to(key, rng)
    }

    fn access_to<R: Rng>(&self, key: u64, rng: &mut R) -> Access {
        let op = if rng.gen::<f64>() < self.get_ratio {
            Op::Get
        } else {
            Op::Set
        };
        Access {
            key,
            key_size: self.key_size.size(self.seed, key),
            value_size: self.value_size.size(self.seed, key),
            op,
            tenant: self.tenant,
        }
    }
}

/// A bounded stream of one application's requests.
pub struct Etc {
    app: SingleApp,
    rng: SmallRng,
    remaining: u64,
}

/// Zipf popularity with fixed or uniform sizes: the same stream type as ETC.
pub type Zipfian = Etc;

impl Etc {
    /// `requests` requests of `app`, drawn from an RNG seeded with `seed`.
    pub fn new(app: SingleApp, requests: u64, seed: u64) -> Etc {
        Etc {
            app,
            rng: SmallRng::seed_from_u64(seed),
            remaining: requests,
        }
    }
}

impl Iterator for Etc {
    type Item = Access;
    fn next(&mut self) -> Option<Access> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        Some(self.app.access(&mut self.rng))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining as usize, Some(self.remaining as usize))
    }
}

/// LAMA §5.1 after Carra et al.: two working sets of `objects` items each. The first third of the requests
/// draws set one by GPD(0, 214.476, 0.348238) over ranks, the last third set two by GPD(0, 312.6175, 0.05);
/// in the middle third the share of set two rises linearly from 0 to 1. Sizes are ETC's.
pub struct ThreePhase {
    first: SingleApp,
    second: SingleApp,
    objects: u64,
    rng: SmallRng,
    requests: u64,
    issued: u64,
}

impl ThreePhase {
    /// Phase 1 draws from `first`, phase 3 from `second` (ids after the first set's), phase 2 moves
    /// from one to the other linearly.
    pub fn new(
        first: SingleApp,
        second: SingleApp,
        objects: u64,
        requests: u64,
        seed: u64,
    ) -> ThreePhase {
        ThreePhase {
            first,
            second,
            objects,
            rng: SmallRng::seed_from_u64(seed),
            requests,
            issued: 0,
        }
    }

    /// The phase (1, 2 or 3) of the request with index `i`.
    pub fn phase_of(&self, i: u64) -> u8 {
        (1 + (3 * i / self.requests.max(1)).min(2)) as u8
    }
}

impl Iterator for ThreePhase {
    type Item = Access;
    fn next(&mut self) -> Option<Access> {
        if self.issued == self.requests {
            return None;
        }
        let third = (self.requests / 3).max(1);
        let share_second = match self.phase_of(self.issued) {
            1 => 0.0,
            2 => (self.issued - third) as f64 / third as f64,
            _ => 1.0,
        };
        self.issued += 1;
        if self.rng.gen::<f64>() < share_second {
            let rank = self.second.popularity.sample(&mut self.rng);
            // The second set's ids follow the first's.
            Some(self.second.access_to(self.objects + rank, &mut self.rng))
        } else {
            Some(self.first.access(&mut self.rng))
        }
    }
}

/// mPart Table 4.1: six applications with 200-byte objects and Zipf popularity, one tenant each, with
/// equal request rates. `scale` divides objects and requests (1 = the thesis's 100M requests per app).
pub struct MpartSix {
    apps: Vec<SingleApp>,
    rng: SmallRng,
    remaining: u64,
}

/// (name, objects, alpha) of mPart's Table 4.1.
pub const MPART_APPS: [(&str, u64, f64); 6] = [
    ("etc", 7_000_000, 0.25),
    ("etc.small", 3_500_000, 0.25),
    ("psa", 7_000_000, 0.85),
    ("psa.small", 3_500_000, 0.85),
    ("ycsb", 10_000_000, 1.0),
    ("ycsb.small", 5_000_000, 1.0),
];

/// mPart's Table 4.1 applications with objects divided by `scale` (at least 1), tenants 0..6 in table
/// order, 16-byte keys and 200-byte values.
pub(super) fn mpart_apps(
    scale: u64,
    get_ratio: f64,
    seed: u64,
) -> Result<Vec<SingleApp>, WorkloadError> {
    let scale = scale.max(1);
    MPART_APPS
        .iter()
        .enumerate()
        .map(|(i, &(_, objects, alpha))| {
            let mut app = SingleApp::new(
                Popularity::zipf(objects / scale, alpha)?,
                KeySizeModel::Fixed(16),
                ValueSizeModel::Fixed(200),
                get_ratio,
                seed,
            );
            app.tenant = i as u16;
            Ok(app)
        })
        .collect()
}

impl MpartSix {
    /// The six applications, objects divided by `scale`, `requests_per_app` requests each on average.
    pub fn new(
        scale: u64,
        requests_per_app: u64,
        get_ratio: f64,
        seed: u64,
    ) -> Result<MpartSix, WorkloadError> {
        Ok(MpartSix {
            apps: mpart_apps(scale, get_ratio, seed)?,
            rng: SmallRng::seed_from_u64(seed),
            remaining: requests_per_app * MPART_APPS.len() as u64,
        })
    }
}

impl Iterator for MpartSix {
    type Item = Access;
    fn next(&mut self) -> Option<Access> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let i = self.rng.gen_range(0..self.apps.len());
        Some(self.apps[i].access(&mut self.rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let make = || {
            let app = SingleApp::new(
                Popularity::zipf(1000, 0.9).unwrap(),
                KeySizeModel::Etc,
                ValueSizeModel::Etc { max: 1 << 20 },
                0.9,
                5,
            );
            Etc::new(app, 1000, 5).collect::<Vec<_>>()
        };
        assert_eq!(make(), make());
    }

    #[test]
    fn three_phase_moves_from_the_first_set_to_the_second() {
        let set =
            |popularity| SingleApp::new(popularity, KeySizeModel::Etc, ValueSizeModel::ETC, 1.0, 1);
        let w = ThreePhase::new(
            set(Popularity::pareto(10_000, 214.476, 0.348238)),
            set(Popularity::pareto(10_000, 312.6175, 0.05)),
            10_000,
            30_000,
            1,
        );
        let all: Vec<Access> = w.collect();
        let second =
            |range: std::ops::Range<usize>| all[range].iter().filter(|a| a.key >= 10_000).count();
        assert_eq!(second(0..10_000), 0);
        assert_eq!(second(20_000..30_000), 10_000);
        let mid = second(10_000..20_000);
        assert!((4_000..6_000).contains(&mid), "{mid}");
    }

    #[test]
    fn mpart_six_tags_six_tenants() {
        let w = MpartSix::new(1000, 100, 1.0, 1).unwrap();
        let mut seen = [0u32; 6];
        for a in w {
            seen[a.tenant as usize] += 1;
            assert_eq!(a.value_size, 200);
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
    }
}
