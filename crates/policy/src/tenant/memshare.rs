//! Memshare (Cidon et al.): reserved memory per tenant plus a pool moved by shadow-queue credits
//! (Algorithm 2), and optionally an idle memory tax on the reserves (Algorithm 3).
//!
//! Each tenant's target is its reserve part plus a pooled share, both kept in bytes across rounds (a
//! 64 KB credit is far below a 1 MiB page; rounding every round would lose it). Algorithm 2: a GET miss
//! that hits tenant i's shadow queue (keys it evicted lately) says i would have hit with a little more
//! memory, so i earns a credit of `credit · weight_i` bytes, taken from another tenant picked at random
//! (pickRandom) among those with pooled memory left. The round replays the window's shadow hits in a
//! random interleaving, as they would have arrived one by one.
//!
//! Algorithm 3 (`tax > 0`): a tenant's reserve part becomes `reserved·(1 − tax·idle_fraction)`, and what
//! that frees goes to the tenants with no idle memory in proportion to their reserves (to all tenants by
//! reserve if every one has some idle memory). Reserved memory nobody touches is lent out, and returns
//! as soon as its owner's idle fraction falls.
//!
//! Invariants: reserve parts and pooled shares add up to the memory exactly; no pooled share is
//! negative, so without the tax no target drops below its reserve; a credit never takes a tenant past its
//! max. State is keyed by tenant id: a tenant that appears starts from its weight's share of the pool, one
//! that disappears leaves its share to the others in proportion to theirs.

use std::collections::BTreeMap;
use std::fmt;

use super::apportion::{apportion, cap_of, fill, reserves_short, weight_of};
use super::{ArbiterInput, TenantArbiter, TenantView};
use crate::spec::{shown, write_spec, Params, SpecError};

/// Memshare's credit: "a small chunk (e.g., 64 KB) of the pooled memory".
const DEFAULT_CREDIT_BYTES: u64 = 64 << 10;
/// 10 MB of evicted items per tenant, the shadow queue of Memshare's and mPart's evaluations (larger
/// queues did not raise the hit ratio there).
const DEFAULT_SHADOW_BYTES: u64 = 10 << 20;
/// No idle tax: Algorithm 2 alone.
const DEFAULT_TAX: f64 = 0.0;
/// Five hours, the idle time of Memshare's idle tax evaluation (Table 5).
const DEFAULT_IDLE_SECS: u32 = 18_000;
/// Credits are earned per shadow hit; the driver applies them in batches of this many accesses.
const DEFAULT_INTERVAL: u64 = 1_000;
const DEFAULT_SEED: u64 = 1;
/// A tenant at most this idle counts as using all its memory (Algorithm 3's recipients).
const ACTIVE_IDLE_FRACTION: f64 = 0.01;
/// Credits replayed in one round at most, so that a round's work stays bounded (O(credits · tenants));
/// beyond it every tenant's hits are thinned in proportion. The driver's rounds every 1,000 accesses
/// stay far below.
const MAX_CREDITS_PER_ROUND: u64 = 1 << 24;
/// A donor needs at least this much pooled memory; smaller residues of float arithmetic are not worth
/// a credit.
const MIN_DONOR_BYTES: f64 = 1.0;

/// `memshare`'s parameters as given.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemshareParams {
    /// `credit=B`: bytes a shadow hit earns, at least 1.
    pub credit: Option<u64>,
    /// `shadow=B`: each tenant's shadow queue in bytes, at least 1.
    pub shadow: Option<u64>,
    /// `tax=F`: the idle memory tax, in [0, 1].
    pub tax: Option<f64>,
    /// `idle=S`: seconds unaccessed memory takes to count as idle.
    pub idle: Option<u32>,
    /// `interval=N`: accesses between rounds, at least 1.
    pub interval: Option<u64>,
    /// `seed=N`: pickRandom's seed.
    pub seed: Option<u64>,
}

impl MemshareParams {
    pub(super) fn parse(p: &mut Params<'_>) -> Result<MemshareParams, SpecError> {
        let params = MemshareParams {
            credit: p.get("credit")?,
            shadow: p.get("shadow")?,
            tax: p.get("tax")?,
            idle: p.get("idle")?,
            interval: p.get("interval")?,
            seed: p.get("seed")?,
        };
        let tax = params.tax.unwrap_or(DEFAULT_TAX);
        if [params.credit, params.shadow, params.interval].contains(&Some(0))
            || !(0.0..=1.0).contains(&tax)
        {
            return Err(p.invalid("need credit, shadow and interval >= 1 and tax in [0, 1]"));
        }
        Ok(params)
    }

    pub(super) fn write(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_spec(
            f,
            "memshare",
            &[
                ("credit", shown(&self.credit)),
                ("shadow", shown(&self.shadow)),
                ("tax", shown(&self.tax)),
                ("idle", shown(&self.idle)),
                ("interval", shown(&self.interval)),
                ("seed", shown(&self.seed)),
            ],
        )
    }

    /// The arbiter, defaults filled in.
    pub fn build(&self) -> Memshare {
        Memshare::new(
            self.credit.unwrap_or(DEFAULT_CREDIT_BYTES),
            self.shadow.unwrap_or(DEFAULT_SHADOW_BYTES),
            self.tax.unwrap_or(DEFAULT_TAX),
            self.idle.unwrap_or(DEFAULT_IDLE_SECS),
            self.interval.unwrap_or(DEFAULT_INTERVAL),
            self.seed.unwrap_or(DEFAULT_SEED),
        )
    }
}

/// The Memshare arbiter and its state.
pub struct Memshare {
    credit_bytes: u64,
    shadow_bytes: u64,
    tax: f64,
    idle_secs: u32,
    interval_accesses: u64,
    seed: u64,
    /// xorshift64* state, never 0.
    rng: u64,
    /// Each tenant's pooled share in bytes (its target minus its reserve part), by tenant id.
    pooled_bytes: BTreeMap<u16, f64>,
}

impl Default for Memshare {
    fn default() -> Self {
        Memshare::new(
            DEFAULT_CREDIT_BYTES,
            DEFAULT_SHADOW_BYTES,
            DEFAULT_TAX,
            DEFAULT_IDLE_SECS,
            DEFAULT_INTERVAL,
            DEFAULT_SEED,
        )
    }
}

impl Memshare {
    /// Memshare with these parameters (see `MemshareParams`); `tax` is clamped to [0, 1].
    pub fn new(
        credit_bytes: u64,
        shadow_bytes: u64,
        tax: f64,
        idle_secs: u32,
        interval_accesses: u64,
        seed: u64,
    ) -> Memshare {
        Memshare {
            credit_bytes,
            shadow_bytes,
            tax: tax.clamp(0.0, 1.0),
            idle_secs,
            interval_accesses: interval_accesses.max(1),
            seed,
            // Any fixed non-zero odd constant will do for seed 0; xorshift must not start at 0.
            rng: if seed == 0 {
                0x9e37_79b9_7f4a_7c15
            } else {
                seed
            },
            pooled_bytes: BTreeMap::new(),
        }
    }

    /// xorshift64*.
    fn next_random(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Algorithm 3: reserves less the tax on idle memory, what it frees given to the active tenants in
    /// proportion to their reserves. Without the tax, the reserves.
    fn reserve_parts(&self, tenants: &[TenantView], reserved: &[f64], caps: &[f64]) -> Vec<f64> {
        if self.tax == 0.0 {
            return reserved.to_vec();
        }
        let idle = |t: &TenantView| {
            if t.idle_fraction.is_finite() {
                t.idle_fraction.clamp(0.0, 1.0)
            } else {
                0.0
            }
        };
        let taxed: Vec<f64> = tenants
            .iter()
            .zip(reserved)
            .map(|(t, &r)| r * (1.0 - self.tax * idle(t)))
            .collect();
        let any_active = tenants.iter().any(|t| idle(t) <= ACTIVE_IDLE_FRACTION);
        let by_reserve: Vec<f64> = tenants
            .iter()
            .zip(reserved)
            .map(|(t, &r)| {
                if !any_active || idle(t) <= ACTIVE_IDLE_FRACTION {
                    r
                } else {
                    0.0
                }
            })
            .collect();
        fill(reserved.iter().sum(), &by_reserve, &taxed, caps)
    }

    /// The pooled shares carried from the last round, fitted to this round's pool and tenants.
    fn pooled_shares(&self, tenants: &[TenantView], pool: f64, room: &[f64]) -> Vec<f64> {
        let weights: Vec<f64> = tenants.iter().map(weight_of).collect();
        let weight_sum: f64 = weights.iter().sum();
        let zeros = vec![0.0; tenants.len()];
        let carried: Vec<f64> = tenants
            .iter()
            .zip(&weights)
            .map(|(t, &w)| match self.pooled_bytes.get(&t.id) {
                Some(&bytes) => bytes.max(0.0),
                // Newcomers start from their weight's share of the pool.
                None if weight_sum > 0.0 => pool * w / weight_sum,
                None => 0.0,
            })
            .collect();
        if carried.iter().sum::<f64>() > 0.0 {
            fill(pool, &carried, &zeros, room)
        } else {
            fill(pool, &weights, &zeros, room)
        }
    }

    /// Algorithm 2 over the window's shadow hits, in a random interleaving.
    fn apply_credits(
        &mut self,
        tenants: &[TenantView],
        parts: &[f64],
        pooled: &mut [f64],
        caps: &[f64],
    ) {
        let mut hits_left: Vec<u64> = tenants.iter().map(|t| t.shadow_hits).collect();
        let all_hits: u128 = hits_left.iter().map(|&h| h as u128).sum();
        if all_hits > MAX_CREDITS_PER_ROUND as u128 {
            for h in &mut hits_left {
                *h = (*h as u128 * MAX_CREDITS_PER_ROUND as u128 / all_hits) as u64;
            }
        }
        let mut remaining: u64 = hits_left.iter().sum();
        let mut donors = Vec::with_capacity(tenants.len());
        while remaining > 0 {
            let mut draw = self.next_random() % remaining;
            let i = hits_left
                .iter()
                .position(|&h| {
                    if draw < h {
                        true
                    } else {
                        draw -= h;
                        false
                    }
                })
                .expect("a draw below the hits left falls on a tenant");
            hits_left[i] -= 1;
            remaining -= 1;
            let room = caps[i] - parts[i] - pooled[i];
            let want = (self.credit_bytes as f64 * weight_of(&tenants[i])).min(room);
            if want <= 0.0 {
                continue;
            }
            donors.clear();
            donors.extend((0..tenants.len()).filter(|&j| j != i && pooled[j] >= MIN_DONOR_BYTES));
            if donors.is_empty() {
                continue;
            }
            let j = donors[(self.next_random() % donors.len() as u64) as usize];
            let amount = want.min(pooled[j]);
            pooled[j] -= amount;
            pooled[i] += amount;
        }
    }
}

impl TenantArbiter for Memshare {
    fn name(&self) -> &'static str {
        "memshare"
    }

    fn describe(&self) -> String {
        format!(
            "memshare:credit={},shadow={},tax={},idle={},interval={},seed={}",
            self.credit_bytes,
            self.shadow_bytes,
            self.tax,
            self.idle_secs,
            self.interval_accesses,
            self.seed
        )
    }

    fn shadow_queue_bytes(&self) -> Option<u64> {
        Some(self.shadow_bytes)
    }

    fn idle_time_secs(&self) -> Option<u32> {
        (self.tax > 0.0).then_some(self.idle_secs)
    }

    fn interval_accesses(&self) -> u64 {
        self.interval_accesses
    }

    fn round(&mut self, input: &ArbiterInput<'_>) -> Vec<usize> {
        let tenants = input.tenants;
        let total = input.total_pages;
        if let Some(pages) = reserves_short(tenants, total) {
            return pages;
        }
        let page = input.page_bytes.max(1) as f64;
        let reserved: Vec<f64> = tenants
            .iter()
            .map(|t| t.reserved_pages as f64 * page)
            .collect();
        let caps: Vec<f64> = tenants
            .iter()
            .map(|t| cap_of(t, total) as f64 * page)
            .collect();
        let parts = self.reserve_parts(tenants, &reserved, &caps);
        let pool = (total as f64 * page - reserved.iter().sum::<f64>()).max(0.0);
        let room: Vec<f64> = caps
            .iter()
            .zip(&parts)
            .map(|(c, p)| (c - p).max(0.0))
            .collect();
        let mut pooled = self.pooled_shares(tenants, pool, &room);
        self.apply_credits(tenants, &parts, &mut pooled, &caps);
        self.pooled_bytes = tenants
            .iter()
            .map(|t| t.id)
            .zip(pooled.iter().copied())
            .collect();

        // Whole pages: never below the (taxed) reserve part's whole pages, the rest by largest remainder.
        let target_pages: Vec<f64> = parts
            .iter()
            .zip(&pooled)
            .map(|(r, p)| (r + p) / page)
            .collect();
        let lower: Vec<usize> = tenants
            .iter()
            .zip(&parts)
            .map(|(t, r)| ((r / page + 1e-6).floor() as usize).min(t.reserved_pages))
            .collect();
        let above: Vec<f64> = target_pages
            .iter()
            .zip(&lower)
            .map(|(&x, &l)| (x - l as f64).max(0.0))
            .collect();
        let upper: Vec<usize> = tenants.iter().map(|t| cap_of(t, total)).collect();
        apportion(total, &above, &lower, &upper)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{input, tenant};
    use super::super::{by_name, TenantView};

    fn with_hits(t: TenantView, shadow_hits: u64) -> TenantView {
        TenantView { shadow_hits, ..t }
    }

    #[test]
    fn credits_flow_to_the_tenant_whose_shadow_queue_hits() {
        let mut memshare = by_name("memshare").unwrap();
        let quiet = [tenant(1, 50, 10), tenant(2, 50, 10)];
        // The pool (80 pages) starts split by weight.
        assert_eq!(memshare.round(&input(&quiet, 100)), [50, 50]);
        // 32 credits of 64 KiB: 2 MiB.
        let hits = [with_hits(tenant(1, 50, 10), 32), tenant(2, 50, 10)];
        assert_eq!(memshare.round(&input(&hits, 100)), [52, 48]);
        // Targets carry over: a quiet round keeps them.
        assert_eq!(memshare.round(&input(&quiet, 100)), [52, 48]);
    }

    #[test]
    fn credits_are_scaled_by_weight() {
        let mut memshare = by_name("memshare").unwrap();
        let mut tenants = [
            with_hits(tenant(1, 50, 0), 16),
            with_hits(tenant(2, 50, 0), 16),
        ];
        tenants[0].weight = 3.0;
        tenants[1].weight = 1.0;
        // Initial split 75:25, then 16 credits each: +3 MiB -1 MiB for tenant 1, the reverse for 2.
        assert_eq!(memshare.round(&input(&tenants, 100)), [77, 23]);
    }

    #[test]
    fn no_credit_takes_a_donor_below_its_reserve_or_the_earner_past_its_max() {
        let mut memshare = by_name("memshare:credit=1048576").unwrap();
        let tenants = [
            with_hits(tenant(1, 30, 5), 1000),
            tenant(2, 70, 45),
            TenantView {
                max_pages: Some(20),
                ..tenant(3, 0, 0)
            },
        ];
        for _ in 0..3 {
            assert_eq!(memshare.round(&input(&tenants, 100)), [55, 45, 0]);
        }
        let capped = [
            TenantView {
                max_pages: Some(30),
                ..with_hits(tenant(1, 30, 5), 1000)
            },
            tenant(2, 70, 45),
        ];
        let mut memshare = by_name("memshare:credit=1048576").unwrap();
        assert_eq!(memshare.round(&input(&capped, 100)), [30, 70]);
    }

    #[test]
    fn donors_are_random_but_the_seed_fixes_them() {
        let tenants = [
            with_hits(tenant(1, 34, 0), 64),
            tenant(2, 33, 0),
            tenant(3, 33, 0),
        ];
        let run = |spec: &str| {
            let mut memshare = by_name(spec).unwrap();
            (0..4)
                .map(|_| memshare.round(&input(&tenants, 100)))
                .collect::<Vec<_>>()
        };
        let a = run("memshare:credit=131072,seed=7");
        assert_eq!(a, run("memshare:credit=131072,seed=7"));
        // 4 rounds of 8 MiB: tenant 1 gains 32 MiB on its third of the pool, and both others gave some.
        let last = a.last().unwrap();
        assert!((65..=66).contains(&last[0]), "{a:?}");
        assert!(last[1] < 33 && last[2] < 33, "{a:?}");
    }

    #[test]
    fn idle_tax_gives_an_idle_reserve_to_the_active_tenants_by_reserve() {
        let idle = |t: TenantView| TenantView {
            idle_fraction: 1.0,
            ..t
        };
        let tenants = [
            idle(tenant(1, 30, 30)),
            tenant(2, 10, 10),
            tenant(3, 20, 20),
        ];
        let mut taxed = by_name("memshare:tax=1").unwrap();
        assert_eq!(taxed.round(&input(&tenants, 60)), [0, 20, 40]);
        // Without the tax the reserve is kept.
        assert_eq!(
            by_name("memshare").unwrap().round(&input(&tenants, 60)),
            [30, 10, 20]
        );
        // Half the tax on a half-idle reserve: 30·(1 − 0.25) = 22.5 pages kept.
        let half = [
            TenantView {
                idle_fraction: 0.5,
                ..tenant(1, 30, 30)
            },
            tenant(2, 30, 30),
        ];
        let targets = by_name("memshare:tax=0.5")
            .unwrap()
            .round(&input(&half, 60));
        assert!(targets == [22, 38] || targets == [23, 37], "{targets:?}");
    }
}
