//! The settings a simulation takes where it is not told otherwise, as two presets: mrcached's
//! ([`SimDefaults::MRCACHED`], `mrcache sim`'s defaults, so that a default simulation predicts a
//! default server) and memcached's model ([`SimDefaults::MEMCACHED`], the simulator's former defaults,
//! `mrcache sim --memcached-defaults`, which [`SimConfig::with_memory`] still gives).
//!
//! Invariant: every value of [`SimDefaults::MRCACHED`] is read from the constant the server reads for
//! the same default (`mrcache_engine::config`, `mrcache_engine::profiling`, `mrcache_policy`), so the
//! two cannot drift apart; the log layout's ranking, probation, chooser and cleaning take
//! `EngineConfig::default()`'s values under both presets, as the server does.

use mrcache_engine::config::{MRCACHED_ITEM_ACCOUNTING, MRCACHED_MEMORY_LAYOUT};
use mrcache_engine::profiling::PROFILE_MEMORY_SHARE;
use mrcache_engine::{ItemAccounting, MemoryLayout};
use mrcache_policy::class::DEFAULT_SLAB_POLICY;
use mrcache_policy::tenant::DEFAULT_TENANT_POLICY;
use mrcache_policy::{ClassPolicySpec, TenantPolicySpec};

use crate::policy::{SimPolicySpec, SlabPolicy};
use crate::replay::{SimConfig, SIM_PROFILE_MEMORY_SHARE};

/// What a simulation runs where its settings are not given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimDefaults {
    /// The memory layout (`--layout`, the server's `-o memory_layout`).
    pub layout: MemoryLayout,
    /// How item sizes pick slab classes (`--item-accounting`, `-o item_accounting`).
    pub item_accounting: ItemAccounting,
    /// The slab policy of the slab layout (`--policy`, the server's `--slab-policy`).
    pub slab_policy: ClassPolicySpec,
    /// The profilers' share of the memory when a policy reads curves (`--mrc-memory-share`).
    pub profile_memory_share: f64,
    /// The tenant arbiter when tenants are given without one (`--tenant-policy`), or `None` where an
    /// arbiter must be named.
    pub tenant_policy: Option<TenantPolicySpec>,
}

impl SimDefaults {
    /// mrcached's defaults: what `mrcached` with no flags runs.
    pub const MRCACHED: SimDefaults = SimDefaults {
        layout: MRCACHED_MEMORY_LAYOUT,
        item_accounting: MRCACHED_ITEM_ACCOUNTING,
        slab_policy: DEFAULT_SLAB_POLICY,
        profile_memory_share: PROFILE_MEMORY_SHARE,
        tenant_policy: Some(DEFAULT_TENANT_POLICY),
    };

    /// memcached's model, the simulator's defaults before it took mrcached's: the slab layout with
    /// memcached's accounting and demand filling, profilers (for the policies given that read curves)
    /// at [`SIM_PROFILE_MEMORY_SHARE`], and no arbiter unless one is named.
    pub const MEMCACHED: SimDefaults = SimDefaults {
        layout: MemoryLayout::Slab,
        item_accounting: ItemAccounting::Memcached,
        slab_policy: ClassPolicySpec::Memcached,
        profile_memory_share: SIM_PROFILE_MEMORY_SHARE,
        tenant_policy: None,
    };

    /// A simulation of `memory_bytes` under these defaults: [`SimConfig::with_memory`] with this
    /// layout, accounting and profilers' share.
    pub fn config(&self, memory_bytes: u64) -> SimConfig {
        let mut config = SimConfig::with_memory(memory_bytes);
        config.engine.memory_layout = self.layout;
        config.engine.item_accounting = self.item_accounting;
        config.profile_memory_share = self.profile_memory_share;
        config
    }

    /// The slab policy, labelled with its canonical text (`lama-mr`, `memcached`).
    pub fn slab_policy(&self) -> SlabPolicy {
        SlabPolicy::of(SimPolicySpec::Class(self.slab_policy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memcached_preset_is_what_with_memory_gives() {
        let given = SimConfig::with_memory(32 << 20);
        let preset = SimDefaults::MEMCACHED.config(32 << 20);
        assert_eq!(preset.engine, given.engine);
        assert_eq!(preset.profile_memory_share, given.profile_memory_share);
        assert_eq!(
            SimDefaults::MEMCACHED.slab_policy(),
            SlabPolicy::memcached()
        );
    }

    #[test]
    fn mrcached_preset_is_the_servers() {
        let d = SimDefaults::MRCACHED;
        assert_eq!(d.layout, MemoryLayout::Log);
        assert_eq!(d.item_accounting, ItemAccounting::Compact);
        assert_eq!(d.slab_policy().name(), "lama-mr");
        assert_eq!(d.profile_memory_share, 0.01);
        assert_eq!(
            d.tenant_policy.map(|p| p.to_string()).as_deref(),
            Some("mpart")
        );
        // Only the layout, the accounting and the share differ from the engine's own defaults.
        let config = d.config(64 << 20);
        let engine = SimConfig::with_memory(64 << 20).engine;
        assert_eq!(config.engine.log_ranking, engine.log_ranking);
        assert_eq!(config.engine.log_probation, engine.log_probation);
        assert_eq!(config.engine.log_choose, engine.log_choose);
        assert_eq!(config.engine.log_choose_rate, engine.log_choose_rate);
        assert_eq!(config.engine.log_ghost, engine.log_ghost);
        assert_eq!(config.engine.log_clean_segments, engine.log_clean_segments);
    }
}
