//! The two-level memory model in the server (LAMA §4): a tenant arbiter divides the pages among tenant
//! pools, and within each pool the class policy (`--slab-policy`) divides the pool's pages among its slab
//! classes. The pieces are the simulator's (`mrcache_sim::replay` wires the same ones): the engine's pools
//! (`mrcache_engine::pool`), `mrcache_policy::arbitrate::Arbitration` and one
//! `mrcache_policy::Rebalancer::for_pool` per pool. [`MemoryModel`] owns them and is driven by the
//! maintenance thread once a tick.
//!
//! On or off, decided at start-up ([`enabled`]): tenants get memory of their own when the configuration
//! names any tenant besides `default`, or a tenant policy is given (`--tenant-policy`, or `tenant_policy`
//! in `--config`). Otherwise the engine keeps one pool and there is no arbitration: one class rebalancer
//! over all memory, as before tenants had memory.
//!
//! Invariants:
//! - Tenant `t` owns pool `t` for `t <` [`pool_count`]: the tenants configured at start-up plus headroom
//!   for tenants a reload adds. Tenants beyond the pools, and all tenants under the `pooled` arbiter,
//!   store into pool 0 (`stats tenants` shows each tenant's `pool`).
//! - The arbitration covers the default tenant (with default settings unless the configuration names
//!   `default`) and every configured tenant with a pool of its own; pools of removed tenants get target 0,
//!   so their pages go to the others as those allocate.
//! - One class rebalancer per pool in use (pool 0 and the pool of every tenant ever known), all running
//!   the class policy in `ctx.slab_policy`; `slabs automove` switches every one of them.
//! - A reload (SIGHUP) that keeps the arbiter hands it the new tenants (`Arbitration::set_tenants`:
//!   reserves, caps and starting targets set again, the arbiter keeps its state). A reload that names
//!   another arbiter starts a new arbitration; items stay in the pools they are in and move only as
//!   allocations follow the new targets. Shadow queues (Memshare) are sized at start-up: an arbiter that
//!   wants them and did not have them runs without shadow hits until a restart.

use std::sync::atomic::Ordering::Relaxed;

use mrcache_engine::config::MAX_TENANT_POOLS;
use mrcache_engine::TenantId;
use mrcache_policy::arbitrate::{self, Arbitration};
use mrcache_policy::{ClassPolicySpec, Rebalancer, TenantArbiter, TenantPolicySpec};

use crate::context::ServerContext;
use crate::settings::{Settings, SettingsError};
use crate::tenants::{TenantTable, TenantsConfig, DEFAULT_TENANT_NAME};

/// The tenant arbiter when tenants are configured and none is named (mpart); defined in the policy
/// crate, where `mrcache sim` reads it too.
pub use mrcache_policy::tenant::DEFAULT_TENANT_POLICY;
/// The fewest pools a server with tenants keeps, so that a reload can add tenants with memory of their
/// own. A pool without a tenant costs a few counters and no pages; it does thin the profilers' share
/// of memory (the engine sizes them for every pool), hence not more.
pub const MIN_TENANT_POOLS: usize = 16;

/// Whether tenants get memory of their own (decided once, at start-up).
pub fn enabled(cli_policy: Option<&TenantPolicySpec>, config: &TenantsConfig) -> bool {
    cli_policy.is_some()
        || config.tenant_policy.is_some()
        || config.tenants.iter().any(|t| t.name != DEFAULT_TENANT_NAME)
}

/// The engine's `tenant_pools`: 1 without the memory model, else every configured tenant and the
/// default one, plus one, at least [`MIN_TENANT_POOLS`], at most the engine's limit.
pub fn pool_count(cli_policy: Option<&TenantPolicySpec>, config: &TenantsConfig) -> usize {
    if !enabled(cli_policy, config) {
        return 1;
    }
    let others = config
        .tenants
        .iter()
        .filter(|t| t.name != DEFAULT_TENANT_NAME)
        .count();
    (others + 2).clamp(MIN_TENANT_POOLS, MAX_TENANT_POOLS)
}

/// The tenant arbiter's spec: `--tenant-policy`, else the file's `tenant_policy`, else the default.
pub fn policy_spec(
    cli_policy: Option<&TenantPolicySpec>,
    config: &TenantsConfig,
) -> TenantPolicySpec {
    cli_policy
        .or(config.tenant_policy.as_ref())
        .copied()
        .unwrap_or(DEFAULT_TENANT_POLICY)
}

/// What the arbitration divides memory among: the default tenant and every configured tenant, by id.
pub fn arbitrated_tenants(table: &TenantTable) -> Vec<arbitrate::ArbitratedTenant> {
    let mut specs: Vec<arbitrate::ArbitratedTenant> = table
        .tenants()
        .map(|(id, t)| arbitrate::ArbitratedTenant {
            tenant: id,
            reserved_bytes: t.reserved_bytes,
            max_bytes: t.max_bytes,
            target_hit_ratio: t.target_hit_ratio,
            weight: t.weight,
            initial_bytes: None,
        })
        .collect();
    if !specs.iter().any(|s| s.tenant == TenantId::DEFAULT) {
        specs.push(arbitrate::ArbitratedTenant::new(TenantId::DEFAULT));
    }
    specs.sort_by_key(|s| s.tenant.0);
    specs
}

/// Gives every tenant with a pool of its own the ranking function it configures, or the server's
/// (`-o log_ranking`) when it configures none (the log layout's cleaner reads it; the slab layout
/// ignores it). Tenants sharing pool 0 rank as the default tenant.
fn apply_rankings(ctx: &ServerContext, table: &TenantTable) {
    let pools = ctx.engine.pool_count();
    let default = ctx.engine.config().log_ranking;
    for (id, t) in table.tenants() {
        if id.index() < pools {
            ctx.engine
                .set_pool_ranking(id.index(), t.ranking.unwrap_or(default));
        }
    }
}

/// What `stats settings` shows as `tenant_policy`: the arbiter with all its parameters, or `none`.
pub fn describe(arbitration: Option<&Arbitration>) -> String {
    arbitration.map_or_else(|| "none".to_string(), |a| a.arbiter().describe())
}

/// As [`describe`], for the arbiter `spec` names (`None`: no tenant pools).
pub fn describe_spec(spec: Option<&TenantPolicySpec>) -> String {
    spec.map_or_else(|| "none".to_string(), |s| s.build().describe())
}

/// The start-up check of the tenant policy: the one in force can run (one that divides by curves needs
/// the profilers on). Its spec was checked when the flag or the file was read.
pub fn check_settings(settings: &Settings) -> Result<(), SettingsError> {
    let Some(spec) = settings.tenant_policy_spec() else {
        return Ok(());
    };
    if spec.build().needs_curves() && settings.mrc_sample_rate == 0.0 {
        return Err(SettingsError::flag(
            "-o mrc_sample_rate=0",
            format!(
                "the tenant policy {spec} needs miss-ratio curves; give a rate above 0, or \
                 --tenant-policy static, pooled or memshare"
            ),
        ));
    }
    Ok(())
}

/// The arbitration and the class rebalancers, owned by the maintenance thread.
pub struct MemoryModel {
    /// `None` with one pool.
    arbitration: Option<Arbitration>,
    /// `rebalancers[p]` divides pool `p` among its classes.
    rebalancers: Vec<Rebalancer>,
    /// `ctx.slab_policy_generation` the rebalancers' policy came from.
    slab_generation: u64,
    /// `ctx.tenants.generation()` the arbitration's tenants came from.
    tenants_generation: u64,
}

impl MemoryModel {
    /// Starts the arbitration (reserves, caps and starting targets are on the engine when this returns)
    /// and the rebalancers of the pools in use.
    pub fn new(ctx: &ServerContext) -> MemoryModel {
        let table = ctx.tenants.current();
        let arbitration = (ctx.engine.pool_count() > 1).then(|| {
            let spec = policy_spec(ctx.settings.tenant_policy.as_ref(), &table.config);
            Arbitration::new(spec.build(), arbitrated_tenants(&table), &ctx.engine)
        });
        publish_policy(ctx, arbitration.as_ref());
        apply_rankings(ctx, &table);
        let mut model = MemoryModel {
            arbitration,
            rebalancers: Vec::new(),
            slab_generation: ctx.slab_policy_generation.load(Relaxed),
            tenants_generation: ctx.tenants.generation(),
        };
        model.add_rebalancers(ctx);
        model
    }

    /// The arbitration in force, if tenants have memory of their own.
    pub fn arbitration(&self) -> Option<&Arbitration> {
        self.arbitration.as_ref()
    }

    /// Pools with a class rebalancer.
    pub fn pools_in_use(&self) -> usize {
        self.rebalancers.len()
    }

    /// One maintenance round: follows a new slab policy and a reloaded tenant configuration, runs an
    /// arbitration round if one is due, then (with `slab_reassign`) each pool's class rebalancer, and
    /// publishes what they did in `ctx.maintenance`. Returns the pages moved between classes.
    pub fn tick(&mut self, ctx: &ServerContext) -> u64 {
        self.follow_slab_policy(ctx);
        self.follow_reload(ctx);
        let clock = ctx.clock();
        let m = &ctx.maintenance;
        if let Some(arbitration) = &mut self.arbitration {
            if arbitration.poll(&ctx.engine, clock) {
                m.arbiter_rounds.fetch_add(1, Relaxed);
            }
        }
        if !ctx.settings.slab_reassign {
            return 0;
        }
        let mut moved = 0;
        for r in &mut self.rebalancers {
            moved += r.poll(&ctx.engine, clock);
        }
        m.automove_moves.fetch_add(moved, Relaxed);
        let rounds = self.rebalancers.iter().map(|r| r.stats().rounds).sum();
        m.policy_rounds.store(rounds, Relaxed);
        for (i, counter) in m.policy_moves_by_rule.iter().enumerate() {
            let pages = self
                .rebalancers
                .iter()
                .map(|r| r.stats().pages_moved_by_rule[i]);
            counter.store(pages.sum(), Relaxed);
        }
        // One pool: its rebalancer's figures. Several: the mean over the pools that have both.
        let pairs: Vec<(f64, f64)> = self
            .rebalancers
            .iter()
            .filter_map(|r| {
                let s = r.stats();
                Some((s.predicted_miss_ratio?, s.observed_miss_ratio?))
            })
            .collect();
        let mean = |f: fn(&(f64, f64)) -> f64| {
            if pairs.is_empty() {
                f64::NAN
            } else {
                pairs.iter().map(f).sum::<f64>() / pairs.len() as f64
            }
        };
        m.policy_predicted_bits
            .store(mean(|p| p.0).to_bits(), Relaxed);
        m.policy_observed_bits
            .store(mean(|p| p.1).to_bits(), Relaxed);
        if moved > 0 && ctx.settings.verbose > 1 {
            eprintln!(
                "mrcached: {} moved {moved} page(s)",
                self.rebalancers[0].policy().name()
            );
        }
        moved
    }

    /// `slabs automove` changed the class policy: every rebalancer switches.
    fn follow_slab_policy(&mut self, ctx: &ServerContext) {
        let generation = ctx.slab_policy_generation.load(Relaxed);
        if generation == self.slab_generation {
            return;
        }
        self.slab_generation = generation;
        let spec = ctx.slab_policy();
        for r in &mut self.rebalancers {
            r.set_policy(spec.build(), &ctx.engine);
        }
    }

    /// A reload (SIGHUP) put a new tenant configuration in force.
    fn follow_reload(&mut self, ctx: &ServerContext) {
        let generation = ctx.tenants.generation();
        if generation == self.tenants_generation {
            return;
        }
        self.tenants_generation = generation;
        self.add_rebalancers(ctx);
        let table = ctx.tenants.current();
        apply_rankings(ctx, &table);
        let Some(arbitration) = &mut self.arbitration else {
            if enabled(None, &table.config) {
                eprintln!(
                    "mrcached: SIGHUP: tenants share one memory: the server started without tenant \
                     pools (restart it to divide memory among tenants)"
                );
            }
            return;
        };
        let pools = ctx.engine.pool_count();
        for (id, t) in table.tenants() {
            if id.index() >= pools {
                eprintln!(
                    "mrcached: SIGHUP: tenant {} shares pool 0: the server keeps {pools} pools \
                     (restart it to give every tenant memory of its own)",
                    t.name
                );
            }
        }
        let specs = arbitrated_tenants(&table);
        let spec = policy_spec(ctx.settings.tenant_policy.as_ref(), &table.config);
        let arbiter = spec.build();
        if arbiter.describe() == arbitration.arbiter().describe() {
            arbitration.set_tenants(specs, &ctx.engine);
        } else {
            if let Some(why) = unusable(arbiter.as_ref(), ctx) {
                eprintln!(
                    "mrcached: SIGHUP: keeping tenant policy {}: {spec} {why}",
                    arbitration.arbiter().describe()
                );
                arbitration.set_tenants(specs, &ctx.engine);
                return;
            }
            if arbiter.shadow_queue_bytes().is_some()
                && ctx.engine.config().shadow_queue_bytes.is_none()
            {
                eprintln!(
                    "mrcached: SIGHUP: {spec} runs without shadow queues until a restart \
                         (they are sized at start-up)"
                );
            }
            *arbitration = Arbitration::new(arbiter, specs, &ctx.engine);
            eprintln!(
                "mrcached: SIGHUP: tenant policy now {}; items stay in the pools they are in",
                arbitration.arbiter().describe()
            );
        }
        publish_policy(ctx, self.arbitration.as_ref());
    }

    /// A rebalancer for every pool in use: pool 0 and the pool of every tenant ever known (ids are
    /// dense and never reused, and a removed tenant's pool may still hold its items).
    fn add_rebalancers(&mut self, ctx: &ServerContext) {
        let in_use = ctx.tenants.known().len().clamp(1, ctx.engine.pool_count());
        if self.rebalancers.len() >= in_use {
            return;
        }
        let spec: ClassPolicySpec = ctx.slab_policy();
        while self.rebalancers.len() < in_use {
            let pool = self.rebalancers.len();
            self.rebalancers
                .push(Rebalancer::for_pool(spec.build(), &ctx.engine, pool));
        }
    }
}

/// Why `arbiter` cannot run on this server, if it cannot.
pub fn unusable(arbiter: &dyn TenantArbiter, ctx: &ServerContext) -> Option<&'static str> {
    (arbiter.needs_curves() && ctx.engine.config().profile_sample_rate.is_none())
        .then_some("needs miss-ratio curves and profiling is off (-o mrc_sample_rate=0)")
}

fn publish_policy(ctx: &ServerContext, arbitration: Option<&Arbitration>) {
    *ctx.tenant_policy.lock().unwrap_or_else(|e| e.into_inner()) = describe(arbitration);
}

#[cfg(test)]
mod tests;
