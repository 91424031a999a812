//! Tenant arbiters: how the cache's pages are divided among tenants. Each arbiter is a pure function of
//! what a driver shows it at a round (per-tenant pages, reserves, limits, counters of the window, curves)
//! and returns a target page count per tenant; the driver reads the engine, calls [`TenantArbiter::round`]
//! and moves pages toward the targets. All of them sit behind one trait and are chosen by name:
//!
//! | name       | what it does                                                                  | source           |
//! |------------|-------------------------------------------------------------------------------|------------------|
//! | `static`   | reserve, plus the unreserved rest split by weight, capped at each max         | Memcachier       |
//! | `pooled`   | one LRU per class shared by all tenants; the static split is only reported    | Memshare baseline|
//! | `memshare` | reserve plus pooled memory moved by shadow-queue credits; idle memory tax     | Memshare Alg. 2-3|
//! | `mpart`    | the DP over tenants' curves within ±max_change, WSS bonus when all fit        | mPart Alg. 1     |
//! | `lama-qos` | the least pages meeting each hit-ratio target, the rest by the DP             | LAMA Alg. 2      |
//!
//! Invariants of every round (checked by the property test below):
//! - the targets add up to exactly `total_pages` (given at least one tenant); when the reserves do not
//!   fit (Σ reserved > total) they are served whole in descending weight until the pages run out;
//! - no target is below its tenant's `reserved_pages` when the reserves fit — except under Memshare's
//!   idle memory tax (`memshare:tax>0`), whose point is to lower an idle tenant's floor to
//!   `reserved·(1 − tax·idle_fraction)`: reserved memory nobody uses is lent out;
//! - no target is above `max_pages` while the caps together can hold `total_pages` (when they cannot,
//!   the exact total wins and the excess is shared by weight past the caps);
//! - no I/O, no clock, no engine; the only randomness (Memshare's pickRandom) is a seeded xorshift, so
//!   a round is a deterministic function of the arbiter's parameters, its past rounds and its input.
//!
//! Parameters follow the name, as for class policies ([`TenantPolicySpec`], `crate::spec`):
//! `mpart:interval=2000000,max_change=0.3,step=1`; an unknown parameter is an error that names it.

mod apportion;
mod memshare;
mod mpart;
mod qos;
mod split;

pub use memshare::{Memshare, MemshareParams};
pub use mpart::{MPart, MPartParams};
pub use qos::{LamaQos, LamaQosParams};
pub use split::{SplitParams, StaticSplit};

use std::fmt;
use std::str::FromStr;

use crate::spec::{Params, SpecError, SpecKind};

/// The tenant arbiter mrcached runs when tenants are configured and none is named, and `mrcache sim`
/// when `--tenant` is given without `--tenant-policy`: mPart, the division of memory that minimises
/// misses by the tenants' miss-ratio curves, moving at most 30% of a tenant's memory a round.
pub const DEFAULT_TENANT_POLICY: TenantPolicySpec = TenantPolicySpec::MPart(MPartParams {
    interval: None,
    step: None,
    max_change: None,
    min_requests: None,
});

/// One tenant as an arbiter sees it at a round. Pages are engine-wide.
#[derive(Clone, Debug)]
pub struct TenantView {
    /// The engine's tenant id (for messages only; Memshare also keys its state by it).
    pub id: u16,
    /// Pages it holds now.
    pub pages: usize,
    /// Never taken away while used (lower bound of every target).
    pub reserved_pages: usize,
    /// Upper bound, if configured.
    pub max_pages: Option<usize>,
    /// QoS target (lama-qos).
    pub target_hit_ratio: Option<f64>,
    /// Share weight, default 1.0 (Memshare credit-size multiplier; static pooled split).
    pub weight: f64,
    /// GETs since the previous round.
    pub gets: u64,
    /// GET misses since the previous round.
    pub get_misses: u64,
    /// GET misses that hit its shadow queue since the previous round (Memshare).
    pub shadow_hits: u64,
    /// Share of its memory not accessed for the arbiter's idle_time (0..=1).
    pub idle_fraction: f64,
    /// Miss ratio it would have with k pages, for k = 0..=total_pages (len total_pages+1), from its MRC over
    /// the recent window; None when no curve is known yet.
    pub curve: Option<Vec<f64>>,
}

impl Default for TenantView {
    /// Everything zero or absent, but the weight 1.0 its documentation promises.
    fn default() -> Self {
        TenantView {
            id: 0,
            pages: 0,
            reserved_pages: 0,
            max_pages: None,
            target_hit_ratio: None,
            weight: 1.0,
            gets: 0,
            get_misses: 0,
            shadow_hits: 0,
            idle_fraction: 0.0,
            curve: None,
        }
    }
}

/// Everything a round decides from.
pub struct ArbiterInput<'a> {
    /// Every tenant, in the order targets are returned.
    pub tenants: &'a [TenantView],
    /// Pages to divide (the memory limit in pages).
    pub total_pages: usize,
    /// Bytes of a page (Memshare counts its credits in bytes).
    pub page_bytes: usize,
}

/// A tenant arbiter.
pub trait TenantArbiter: Send {
    /// The name it is selected by.
    fn name(&self) -> &'static str;
    /// Its name and every parameter value, as `name:key=value,...` (what `--print-config` shows);
    /// `by_name` of it builds the same arbiter.
    fn describe(&self) -> String;
    /// Whether rounds need each tenant's curve (mpart, lama-qos).
    fn needs_curves(&self) -> bool {
        false
    }
    /// Memshare: the shadow queue each tenant should keep, in bytes of evicted items.
    fn shadow_queue_bytes(&self) -> Option<u64> {
        None
    }
    /// Memshare with an idle tax: how long unaccessed memory takes to count as idle.
    fn idle_time_secs(&self) -> Option<u32> {
        None
    }
    /// Pooled: all tenants share one LRU per class, and the targets are reported, not enforced.
    fn shared_pool(&self) -> bool {
        false
    }
    /// Accesses between rounds (its `interval=`).
    fn interval_accesses(&self) -> u64;
    /// Whether a round is due after `accesses_since_round` accesses since the last one.
    fn due(&self, accesses_since_round: u64) -> bool {
        accesses_since_round >= self.interval_accesses()
    }
    /// Target pages per tenant, in input order; the sum equals total_pages exactly whenever the
    /// reserves fit (sum of reserved <= total), and every target >= min(reserved, what fits).
    /// (Memshare's idle tax is the one arbiter that lowers the floor of an idle reserve: see above.)
    fn round(&mut self, input: &ArbiterInput<'_>) -> Vec<usize>;
}

impl std::fmt::Debug for dyn TenantArbiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// Names a [`TenantPolicySpec`] may have.
pub const NAMES: &[&str] = &["static", "pooled", "memshare", "mpart", "lama-qos"];

/// A tenant arbiter and the parameters its spec gave, read once from `NAME[:key=value,...]` (`FromStr`,
/// serde: the tenant file's `tenant_policy`) and valid by construction: [`TenantPolicySpec::build`]
/// cannot fail. Printing it writes the name and the parameters given, which parses back to the same
/// spec; the arbiter's own `describe()` adds every default.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TenantPolicySpec {
    /// `static[:interval=N]`: reserves plus the rest by weight, enforced.
    Static(SplitParams),
    /// `pooled[:interval=N]`: one memory for all; the split is only reported.
    Pooled(SplitParams),
    /// `memshare[:...]`: shadow-queue credits and the idle tax.
    Memshare(MemshareParams),
    /// `mpart[:...]`: the division minimising misses by the curves.
    MPart(MPartParams),
    /// `lama-qos[:...]`: the least memory meeting each hit-ratio target.
    LamaQos(LamaQosParams),
}

impl TenantPolicySpec {
    /// The name it is selected by (one of [`NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            TenantPolicySpec::Static(_) => "static",
            TenantPolicySpec::Pooled(_) => "pooled",
            TenantPolicySpec::Memshare(_) => "memshare",
            TenantPolicySpec::MPart(_) => "mpart",
            TenantPolicySpec::LamaQos(_) => "lama-qos",
        }
    }

    /// A fresh arbiter with these parameters (defaults for those not given).
    pub fn build(&self) -> Box<dyn TenantArbiter> {
        match self {
            TenantPolicySpec::Static(p) => Box::new(p.build(false)),
            TenantPolicySpec::Pooled(p) => Box::new(p.build(true)),
            TenantPolicySpec::Memshare(p) => Box::new(p.build()),
            TenantPolicySpec::MPart(p) => Box::new(p.build()),
            TenantPolicySpec::LamaQos(p) => Box::new(p.build()),
        }
    }
}

impl FromStr for TenantPolicySpec {
    type Err = SpecError;

    fn from_str(spec: &str) -> Result<TenantPolicySpec, SpecError> {
        let mut p = Params::parse(SpecKind::TenantArbiter, spec)?;
        let parsed = match p.name {
            "static" => TenantPolicySpec::Static(SplitParams::parse(&mut p)?),
            "pooled" => TenantPolicySpec::Pooled(SplitParams::parse(&mut p)?),
            "memshare" => TenantPolicySpec::Memshare(MemshareParams::parse(&mut p)?),
            "mpart" => TenantPolicySpec::MPart(MPartParams::parse(&mut p)?),
            "lama-qos" => TenantPolicySpec::LamaQos(LamaQosParams::parse(&mut p)?),
            _ => return Err(p.unknown(NAMES)),
        };
        p.finish()?;
        Ok(parsed)
    }
}

impl fmt::Display for TenantPolicySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TenantPolicySpec::Static(p) | TenantPolicySpec::Pooled(p) => p.write(f, self.name()),
            TenantPolicySpec::Memshare(p) => p.write(f),
            TenantPolicySpec::MPart(p) => p.write(f),
            TenantPolicySpec::LamaQos(p) => p.write(f),
        }
    }
}

impl serde::Serialize for TenantPolicySpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for TenantPolicySpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// The arbiter `spec` names, parsed and built: the tests' shorthand.
#[cfg(test)]
pub(crate) fn by_name(spec: &str) -> Result<Box<dyn TenantArbiter>, SpecError> {
    Ok(spec.parse::<TenantPolicySpec>()?.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A tenant holding `pages` with `reserved` of them reserved, weight 1, no curve.
    pub(super) fn tenant(id: u16, pages: usize, reserved: usize) -> TenantView {
        TenantView {
            id,
            pages,
            reserved_pages: reserved,
            ..TenantView::default()
        }
    }

    pub(super) fn input(tenants: &[TenantView], total_pages: usize) -> ArbiterInput<'_> {
        ArbiterInput {
            tenants,
            total_pages,
            page_bytes: 1 << 20,
        }
    }

    #[test]
    fn names_and_parameters_are_checked() {
        for name in NAMES {
            let arbiter = by_name(name).unwrap();
            assert_eq!(arbiter.name(), *name);
            let described = arbiter.describe();
            assert!(described.starts_with(name), "{described}");
            assert_eq!(by_name(&described).unwrap().describe(), described);
        }
        let unknown = by_name("fair").unwrap_err();
        assert!(matches!(unknown, SpecError::UnknownPolicy { .. }));
        let unknown = unknown.to_string();
        assert!(
            unknown.contains("unknown tenant arbiter `fair`"),
            "{unknown}"
        );
        let extra = by_name("mpart:stepp=2").unwrap_err();
        assert!(matches!(&extra, SpecError::UnknownParameter { key, .. } if key == "stepp"));
        let extra = extra.to_string();
        assert!(
            extra.contains("`stepp`") && extra.contains("tenant arbiter `mpart`"),
            "{extra}"
        );
        assert!(
            matches!(by_name("memshare:tax=x").unwrap_err(), SpecError::BadValue { key, .. } if key == "tax")
        );
        assert!(by_name("memshare:tax=x")
            .unwrap_err()
            .to_string()
            .contains("`tax`"));
        assert!(matches!(
            by_name("memshare:credit").unwrap_err(),
            SpecError::MissingValue { .. }
        ));
        assert!(by_name("memshare:credit")
            .unwrap_err()
            .to_string()
            .contains("`credit`"));
        for bad in [
            "memshare:tax=1.5",
            "memshare:credit=0",
            "mpart:step=0",
            "mpart:max_change=0",
            "lama-qos:max_change=-1",
            "static:interval=0",
        ] {
            assert!(by_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            by_name("mpart:interval=5000,max_change=0.2")
                .unwrap()
                .describe(),
            "mpart:interval=5000,step=auto,max_change=0.2,min_requests=1000"
        );
        let memshare = by_name("memshare:tax=0.5,idle=60,shadow=1000").unwrap();
        assert_eq!(memshare.shadow_queue_bytes(), Some(1000));
        assert_eq!(memshare.idle_time_secs(), Some(60));
        assert_eq!(by_name("memshare").unwrap().idle_time_secs(), None);
        assert!(by_name("pooled").unwrap().shared_pool());
        assert!(!by_name("static").unwrap().shared_pool());
        assert!(by_name("mpart").unwrap().needs_curves());
        assert!(by_name("lama-qos").unwrap().needs_curves());
        assert!(!by_name("memshare").unwrap().needs_curves());
        let mpart = by_name("mpart").unwrap();
        assert!(!mpart.due(1_999_999) && mpart.due(2_000_000));
    }

    #[test]
    fn specs_print_what_they_were_given_and_parse_back() {
        for text in [
            "static",
            "static:interval=10",
            "pooled",
            "pooled:interval=5",
            "memshare",
            "memshare:credit=1000,shadow=2000,tax=0.5,idle=60,interval=10,seed=7",
            "mpart",
            "mpart:interval=5000,step=auto,max_change=0.2,min_requests=10",
            "mpart:step=4",
            "lama-qos",
            "lama-qos:interval=100,max_change=0.3,margin=0.05",
        ] {
            let spec: TenantPolicySpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), text);
            assert_eq!(spec.to_string().parse::<TenantPolicySpec>(), Ok(spec));
            let arbiter = spec.build();
            assert_eq!(arbiter.name(), spec.name());
            let described: TenantPolicySpec = arbiter.describe().parse().unwrap();
            assert_eq!(described.build().describe(), arbiter.describe());
        }
        let spec: TenantPolicySpec = "mpart:max_change=0.2,interval=5000".parse().unwrap();
        assert_eq!(spec.to_string(), "mpart:interval=5000,max_change=0.2");
    }

    #[test]
    fn invalid_specs_say_why() {
        for (text, message) in [
            ("fair", "unknown tenant arbiter `fair` (one of: static, pooled, memshare, mpart, lama-qos)"),
            ("mpart:step", "tenant arbiter parameter `step` needs a value (key=value)"),
            ("mpart:interval=x", "tenant arbiter `mpart`: bad value `x` for `interval`"),
            ("pooled:x=1", "tenant arbiter `pooled` has no parameter `x`"),
            ("static:interval=0", "tenant arbiter `static`: interval must be at least 1"),
            ("memshare:tax=2", "tenant arbiter `memshare`: need credit, shadow and interval >= 1 and tax in [0, 1]"),
            ("mpart:step=0", "tenant arbiter `mpart`: step=0 is not auto or a positive number of pages"),
            ("mpart:max_change=0", "tenant arbiter `mpart`: need interval >= 1 and max_change > 0"),
            ("lama-qos:margin=1", "tenant arbiter `lama-qos`: need 0 <= margin < 1"),
        ] {
            assert_eq!(text.parse::<TenantPolicySpec>().unwrap_err().to_string(), message);
        }
    }

    #[test]
    fn default_weight_is_one() {
        assert_eq!(TenantView::default().weight, 1.0);
    }

    /// A non-increasing curve over `0..=total` from random drops.
    fn curve_from(drops: &[f64], total: usize) -> Vec<f64> {
        let mut mr = 1.0;
        (0..=total)
            .map(|k| {
                if k > 0 {
                    mr = (mr - drops[k % drops.len()]).max(0.0);
                }
                mr
            })
            .collect()
    }

    #[allow(clippy::type_complexity)]
    fn tenants_strategy() -> impl Strategy<
        Value = (
            usize,
            Vec<(
                usize,
                usize,
                Option<usize>,
                f64,
                u64,
                u64,
                f64,
                bool,
                Option<f64>,
            )>,
            Vec<f64>,
        ),
    > {
        (
            0usize..120,
            prop::collection::vec(
                (
                    0usize..80,
                    0usize..30,
                    prop::option::of(0usize..100),
                    prop_oneof![Just(1.0), Just(0.0), 0.0f64..4.0],
                    0u64..5000,
                    0u64..40,
                    0.0f64..=1.0,
                    any::<bool>(),
                    prop::option::of(0.0f64..1.0),
                ),
                1..6,
            ),
            prop::collection::vec(0.0f64..0.08, 1..8),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn every_arbiter_adds_up_and_keeps_reserves_and_caps((total, specs, drops) in tenants_strategy()) {
            let tenants: Vec<TenantView> = specs
                .iter()
                .enumerate()
                .map(|(i, &(pages, reserved, max, weight, gets, shadow_hits, idle, has_curve, target))| TenantView {
                    id: i as u16,
                    pages,
                    reserved_pages: reserved,
                    max_pages: max,
                    target_hit_ratio: target,
                    weight,
                    gets,
                    get_misses: gets / 2,
                    shadow_hits,
                    idle_fraction: idle,
                    curve: has_curve.then(|| curve_from(&drops[i % drops.len()..], total)),
                })
                .collect();
            let reserved: usize = tenants.iter().map(|t| t.reserved_pages).sum();
            let caps: usize = tenants.iter().map(|t| apportion::cap_of(t, total)).sum();
            for spec in ["static", "pooled", "memshare:credit=300000", "memshare:tax=1", "mpart:min_requests=10",
                         "mpart:step=2,max_change=0.5", "lama-qos", "lama-qos:max_change=0.3"] {
                let mut arbiter = by_name(spec).unwrap();
                // Several rounds: Memshare carries its targets from one to the next.
                for _ in 0..3 {
                    let targets = arbiter.round(&input(&tenants, total));
                    prop_assert_eq!(targets.len(), tenants.len());
                    prop_assert_eq!(targets.iter().sum::<usize>(), total, "{} {:?}", spec, targets);
                    if reserved > total {
                        continue;
                    }
                    for (t, &k) in tenants.iter().zip(&targets) {
                        if !spec.contains("tax") {
                            prop_assert!(k >= t.reserved_pages, "{} {:?}", spec, targets);
                        }
                        if caps >= total {
                            prop_assert!(k <= apportion::cap_of(t, total), "{} {:?}", spec, targets);
                        }
                    }
                }
            }
        }
    }

    mod round_trip {
        use super::super::*;
        use crate::spec::Auto;
        use proptest::option::of;
        use proptest::prelude::*;

        fn spec() -> impl Strategy<Value = TenantPolicySpec> {
            let interval = || of(1u64..10_000_000);
            prop_oneof![
                interval().prop_map(|interval| TenantPolicySpec::Static(SplitParams { interval })),
                interval().prop_map(|interval| TenantPolicySpec::Pooled(SplitParams { interval })),
                (
                    of(1u64..1 << 30),
                    of(1u64..1 << 30),
                    of(0.0f64..=1.0),
                    of(any::<u32>()),
                    interval(),
                    of(any::<u64>()),
                )
                    .prop_map(|(credit, shadow, tax, idle, interval, seed)| {
                        TenantPolicySpec::Memshare(MemshareParams {
                            credit,
                            shadow,
                            tax,
                            idle,
                            interval,
                            seed,
                        })
                    }),
                (
                    interval(),
                    of(prop_oneof![
                        Just(Auto::Auto),
                        (1usize..4096).prop_map(Auto::Value)
                    ]),
                    of(0.001f64..10.0),
                    of(any::<u64>()),
                )
                    .prop_map(|(interval, step, max_change, min_requests)| {
                        TenantPolicySpec::MPart(MPartParams {
                            interval,
                            step,
                            max_change,
                            min_requests,
                        })
                    }),
                (interval(), of(0.001f64..10.0), of(0.0f64..1.0)).prop_map(
                    |(interval, max_change, margin)| {
                        TenantPolicySpec::LamaQos(LamaQosParams {
                            interval,
                            max_change,
                            margin,
                        })
                    }
                ),
            ]
        }

        proptest! {
            #[test]
            fn display_then_parse_is_the_identity(spec in spec()) {
                prop_assert_eq!(spec.to_string().parse::<TenantPolicySpec>(), Ok(spec));
            }
        }
    }
}
