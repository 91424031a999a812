//! Replaying requests through the engine.

use mrcache_engine::{Clock, Engine, EngineConfig, Key, StoreArgs, StoreOutcome, TenantId};
use mrcache_policy::arbitrate::{ArbitratedTenant, Arbitration};
use mrcache_policy::class::miss_entropy;
use mrcache_policy::class::ResponseTimeModel;
use mrcache_policy::{Rebalancer, TenantPolicySpec};
use mrcache_workload::synth::Access;
use mrcache_workload::Op;

use std::sync::Arc;

use crate::oracle::{OraclePolicy, OracleSchedule, WindowCursor};
use crate::policy::SlabPolicy;
use crate::report::{ratio, ClassAllocation, SimReport, TenantReport, TenantWindow, Window};
use crate::SimError;

/// The logical clock starts where memcached's real one does.
const CLOCK_START_SECS: u32 = 62;
/// The rebalancer is polled every this many requests: finer than any policy's round (PSA's 1,000
/// misses is the finest), coarse enough that reading the counters costs nothing.
const POLL_REQUESTS: u64 = 1_000;
/// Sampling rate of the class profilers when a policy needs curves and the config sets none: the
/// server's default, so that the simulator sees what a live server would.
pub const DEFAULT_SIM_SAMPLE_RATE: f64 = mrcache_engine::profiling::DEFAULT_SAMPLE_RATE;
/// Share of the simulated memory the profilers may hold when a policy needs curves, by default. The
/// server's 1% (or 4 MiB, where that is more) gives a cache of a few hundred MiB a few thousand keys per
/// class; the simulator's memory is not real, so it profiles every class with enough keys for a stable
/// curve. `SimConfig::profile_memory_share` (`--mrc-memory-share 0.01`) simulates the server's. The
/// default of [`SimConfig::with_memory`] and of `mrcache sim --memcached-defaults`; `mrcache sim` takes
/// the server's by default (`SimDefaults::MRCACHED`).
pub const SIM_PROFILE_MEMORY_SHARE: f64 = 0.1;

/// How to simulate.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The engine as the server would configure it; `shards` should be 1 for exact LRU per class.
    pub engine: EngineConfig,
    /// Requests per window of the reported series.
    pub window_requests: u64,
    /// Requests per logical second.
    pub requests_per_second: u64,
    /// Hit time and miss penalty for the reported mean response time (LAMA eq. 4-5).
    pub response_time: ResponseTimeModel,
    /// A fixed allocation (pages per class index) instead of demand filling: the upper bound's replay.
    pub page_caps: Option<Vec<usize>>,
    /// The dynamic oracle's allocation per window (`mrcache_sim::oracle`): needed by, and only used
    /// with, the `oracle` policy.
    pub oracle: Option<Arc<OracleSchedule>>,
    /// Tenants with memory of their own and the arbiter that divides pages among them; `None` keeps one
    /// memory for every tenant of the workload (each still its own namespace).
    pub tenants: Option<TenantSetup>,
    /// Share of the memory the profilers may hold when a policy needs curves
    /// (`SIM_PROFILE_MEMORY_SHARE` by default; the server's is `PROFILE_MEMORY_SHARE`, 1%).
    pub profile_memory_share: f64,
}

/// The upper memory level of a simulation: a tenant arbiter (`mrcache_policy::TenantPolicySpec`) and the
/// tenants it divides memory among. Tenant `t` gets pool `t`; workload tenants not listed
/// share pool 0.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantSetup {
    /// The arbiter, with its parameters.
    pub arbiter: TenantPolicySpec,
    /// Each tenant's reserve, target and bounds.
    pub tenants: Vec<ArbitratedTenant>,
}

impl SimConfig {
    /// The defaults (memcached's engine settings, no profiling, no tenants) with `memory_bytes` of
    /// memory: `SimDefaults::MEMCACHED`'s; `SimDefaults::MRCACHED.config` gives the server's.
    pub fn with_memory(memory_bytes: u64) -> SimConfig {
        SimConfig {
            engine: EngineConfig {
                memory_limit_bytes: memory_bytes,
                // The demand-filled and automove policies need no curves; curve-driven ones turn it on.
                profile_sample_rate: None,
                ..EngineConfig::default()
            },
            window_requests: 1_000_000,
            requests_per_second: 100_000,
            response_time: ResponseTimeModel::default(),
            page_caps: None,
            oracle: None,
            tenants: None,
            profile_memory_share: SIM_PROFILE_MEMORY_SHARE,
        }
    }
}

/// A running simulation.
pub struct Simulator {
    engine: Engine,
    policy: SlabPolicy,
    /// One class rebalancer per pool in use (one in all without tenants).
    rebalancers: Vec<Rebalancer>,
    arbitration: Option<Arbitration>,
    config: SimConfig,
    key: Vec<u8>,
    value: Vec<u8>,
    now: u32,
    requests: u64,
    gets: u64,
    misses: u64,
    sets: u64,
    page_moves: u64,
    /// Sum of modelled response times of GETs, µs.
    response_us: f64,
    window: WindowCounters,
    windows: Vec<Window>,
    /// GETs and misses per workload tenant, whole run.
    tenant_totals: Vec<(u64, u64)>,
    /// The dynamic oracle's schedule and the window its policy is told of.
    oracle: Option<(Arc<OracleSchedule>, WindowCursor)>,
}

#[derive(Default)]
struct WindowCounters {
    gets: u64,
    misses: u64,
    page_moves: u64,
    /// GETs and misses per workload tenant.
    tenants: Vec<(u64, u64)>,
}

fn count_tenant(counts: &mut Vec<(u64, u64)>, tenant: u16, miss: bool) {
    let i = tenant as usize;
    if counts.len() <= i {
        counts.resize(i + 1, (0, 0));
    }
    counts[i].0 += 1;
    counts[i].1 += miss as u64;
}

impl Simulator {
    /// A simulator of `config` running `policy`. Refused when the policy, the arbiter or the engine
    /// configuration is, or for the upper bound without `page_caps`.
    pub fn new(mut config: SimConfig, policy: SlabPolicy) -> Result<Simulator, SimError> {
        if policy.is_upper_bound() && config.page_caps.is_none() {
            return Err(SimError::UpperBoundNeedsCaps);
        }
        let oracle = match (policy.oracle(), &config.oracle) {
            (None, _) => None,
            (Some(_), Some(schedule)) if config.tenants.is_none() => {
                // The oracle's caps decide every page, window by window (none in a demand-filled one).
                config.page_caps = schedule.caps(0).map(<[usize]>::to_vec);
                Some((schedule.clone(), WindowCursor::default()))
            }
            (Some(_), _) => return Err(SimError::OracleNeedsSchedule),
        };
        let class_policy = match &oracle {
            Some((schedule, cursor)) => {
                Box::new(OraclePolicy::new(schedule.clone(), cursor.clone())) as _
            }
            None => policy.build(),
        };
        let arbiter = match &config.tenants {
            Some(setup) => {
                let arbiter = setup.arbiter.build();
                let pools = setup.tenants.iter().map(|t| t.tenant.index() + 1).max();
                config.engine.tenant_pools = pools.unwrap_or(1);
                config.engine.shadow_queue_bytes = arbiter.shadow_queue_bytes();
                Some(arbiter)
            }
            None => None,
        };
        let needs_curves =
            class_policy.needs_curves() || arbiter.as_ref().is_some_and(|a| a.needs_curves());
        if needs_curves {
            // A rate given (`--mrc-sample-rate`) changes only the rate: the profilers' memory is the
            // simulation's own share (`--mrc-memory-share`), and fixed-size sampling lowers the rate
            // where a class's keys outgrow it.
            config
                .engine
                .profile_sample_rate
                .get_or_insert(DEFAULT_SIM_SAMPLE_RATE);
            config.engine.profile_memory_share = config.profile_memory_share;
        }
        let mut engine_config = config.engine.clone();
        let held = match &oracle {
            Some((schedule, _)) => Some(schedule.pages_held()),
            None => config.page_caps.as_ref().map(|caps| caps.iter().sum()),
        };
        if let Some(held) = held {
            // A fixed allocation with more classes in use than `-m` has pages holds each one's first
            // page beyond the limit, as demand filling does; the budget grows to hold them all (the
            // report still shows the memory asked for).
            let held = held as u64;
            let page = engine_config.page_size_bytes() as u64;
            engine_config.memory_limit_bytes = engine_config.memory_limit_bytes.max(held * page);
        }
        let engine = Engine::new(engine_config).map_err(SimError::Engine)?;
        if let Some(caps) = &config.page_caps {
            engine.set_class_page_caps(Some(caps));
        }
        if policy.oracle().is_some_and(|o| o.past.is_some()) {
            // The online oracle stands for a policy a server could run: memcached's first-page rule
            // applies to it as to every live policy (a class it left without pages takes one back
            // when it stores again), where the clairvoyant one places every page itself.
            engine.set_first_pages_under_caps(true);
        }
        let arbitration = match (arbiter, &config.tenants) {
            (Some(arbiter), Some(setup)) => {
                Some(Arbitration::new(arbiter, setup.tenants.clone(), &engine))
            }
            _ => None,
        };
        let mut rebalancers = vec![Rebalancer::new(class_policy, &engine)];
        for pool in 1..engine.pool_count() {
            rebalancers.push(Rebalancer::for_pool(policy.build(), &engine, pool));
        }
        let value = vec![b'v'; engine.geometry().item_size_max_bytes()];
        Ok(Simulator {
            engine,
            policy,
            rebalancers,
            arbitration,
            config,
            key: Vec::with_capacity(256),
            value,
            now: CLOCK_START_SECS,
            requests: 0,
            gets: 0,
            misses: 0,
            sets: 0,
            page_moves: 0,
            response_us: 0.0,
            window: WindowCounters::default(),
            windows: Vec::new(),
            tenant_totals: Vec::new(),
            oracle,
        })
        .map(|mut sim| {
            if sim.oracle.is_some() {
                // The rebalancer's first poll only starts its window: done now, the first window
                // boundary's poll is a round.
                let clock = sim.clock();
                sim.rebalancers[0].poll(&sim.engine, clock);
            }
            sim
        })
    }

    /// At the start of oracle window `k`: the classes are capped at its allocation, and the policy
    /// told, so that the poll that follows moves the pages. Returns whether a window began.
    fn enter_oracle_window(&mut self) -> bool {
        let Some((schedule, cursor)) = &self.oracle else {
            return false;
        };
        if !self.requests.is_multiple_of(schedule.window_requests) {
            return false;
        }
        let k = (self.requests / schedule.window_requests) as usize;
        if k >= schedule.plans.len() {
            return false;
        }
        cursor.set(k);
        self.engine.set_class_page_caps(schedule.caps(k));
        true
    }

    /// The engine being driven.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    fn clock(&self) -> Clock {
        Clock::logical(self.now)
    }

    /// The key bytes of an access: `key_text`, padded with `.` to the access's key size.
    fn build_key(&mut self, a: &Access) {
        key_text(a.tenant, a.key, &mut self.key);
        let len = (a.key_size as usize).max(self.key.len());
        self.key.resize(len, b'.');
    }

    fn set(&mut self, a: &Access) {
        self.sets += 1;
        let len = (a.value_size as usize).min(self.value.len());
        let outcome = self.engine.store(
            &StoreArgs::set(Key::new(TenantId(a.tenant), &self.key), &self.value[..len]),
            Clock::logical(self.now),
        );
        debug_assert!(!matches!(
            outcome,
            StoreOutcome::NotStored | StoreOutcome::Exists
        ));
    }

    /// Replays one request.
    pub fn replay(&mut self, a: &Access) {
        self.build_key(a);
        match a.op {
            Op::Get => {
                self.gets += 1;
                self.window.gets += 1;
                let bytes = a.key_size as usize + a.value_size as usize;
                let miss = self
                    .engine
                    .get(
                        Key::new(TenantId(a.tenant), &self.key),
                        self.clock(),
                        |_| (),
                    )
                    .is_none();
                count_tenant(&mut self.window.tenants, a.tenant, miss);
                count_tenant(&mut self.tenant_totals, a.tenant, miss);
                if miss {
                    self.misses += 1;
                    self.window.misses += 1;
                    self.response_us += self.config.response_time.miss_time_us(bytes);
                    self.set(a);
                } else {
                    self.response_us += self.config.response_time.hit_time_us(bytes);
                }
            }
            Op::Set | Op::Update => self.set(a),
            Op::Delete => {
                self.engine
                    .delete(Key::new(TenantId(a.tenant), &self.key), self.clock());
            }
            Op::Other => {}
        }
        self.requests += 1;
        if self
            .requests
            .is_multiple_of(self.config.requests_per_second)
        {
            self.now += 1;
        }
        let oracle_window = self.enter_oracle_window();
        if oracle_window || self.requests.is_multiple_of(POLL_REQUESTS) {
            let clock = self.clock();
            if let Some(arbitration) = &mut self.arbitration {
                arbitration.poll(&self.engine, clock);
            }
            let moved: u64 = self
                .rebalancers
                .iter_mut()
                .map(|r| r.poll(&self.engine, clock))
                .sum();
            self.page_moves += moved;
            self.window.page_moves += moved;
        }
        if self.requests.is_multiple_of(self.config.window_requests) {
            self.close_window();
        }
    }

    fn close_window(&mut self) {
        let w = std::mem::take(&mut self.window);
        let pages = self
            .engine
            .stats(self.clock())
            .classes
            .iter()
            .map(|c| c.total_pages)
            .collect();
        let tenants = self.tenant_rows(&w.tenants);
        self.windows.push(Window {
            end_request: self.requests,
            gets: w.gets,
            misses: w.misses,
            miss_ratio: ratio(w.misses, w.gets),
            pages,
            page_moves: w.page_moves,
            tenants,
        });
    }

    /// Each workload tenant's GETs and misses (`counts`, by tenant id) with its pool's pages and target
    /// now; none when the run has no tenants with memory of their own.
    fn tenant_rows(&self, counts: &[(u64, u64)]) -> Vec<TenantWindow> {
        if self.config.tenants.is_none() {
            return Vec::new();
        }
        counts
            .iter()
            .enumerate()
            .map(|(t, &(gets, misses))| {
                let (pages, target_pages) = self.pool_pages(t);
                TenantWindow {
                    tenant: t as u16,
                    gets,
                    misses,
                    miss_ratio: ratio(misses, gets),
                    pages,
                    target_pages,
                }
            })
            .collect()
    }

    /// Pages and target of tenant `t`'s own pool, if it has one.
    fn pool_pages(&self, t: usize) -> (Option<usize>, Option<usize>) {
        if self.config.tenants.is_none()
            || t >= self.engine.pool_count()
            || self.engine.pools_shared()
        {
            return (None, None);
        }
        let p = self.engine.pool(t);
        (
            Some(p.held),
            (p.target != mrcache_engine::UNLIMITED).then_some(p.target),
        )
    }

    /// Ends the run (closing a partial last window) and reports.
    pub fn finish(mut self) -> SimReport {
        if self.window.gets > 0 || self.windows.is_empty() {
            self.close_window();
        }
        let clock = self.clock();
        let stats = self.engine.stats(clock);
        // Under the log layout class policies have no classes to move pages between: "log" names the
        // layout, with the policy only when it is not the demand-filled default.
        let policy = match self.config.engine.memory_layout {
            mrcache_engine::MemoryLayout::Slab => self.policy.name().to_string(),
            mrcache_engine::MemoryLayout::Log if self.policy.name() == "memcached" => "log".into(),
            mrcache_engine::MemoryLayout::Log => format!("log+{}", self.policy.name()),
        };
        SimReport {
            policy,
            miss_entropy: miss_entropy(stats.classes.iter().map(|c| c.counters.inserts)),
            mean_response_us: if self.gets > 0 {
                self.response_us / self.gets as f64
            } else {
                0.0
            },
            memory_bytes: self.config.engine.memory_limit_bytes,
            requests: self.requests,
            gets: self.gets,
            misses: self.misses,
            miss_ratio: ratio(self.misses, self.gets),
            sets: self.sets,
            evictions: stats.class_totals().evicted,
            page_moves: self.page_moves,
            rounds: self.rebalancers.iter().map(|r| r.stats().rounds).sum(),
            mean_prediction_error: self.rebalancers[0].stats().mean_prediction_error(),
            model_miss_ratio: self
                .oracle
                .as_ref()
                .map(|(schedule, _)| schedule.predicted_miss_ratio()),
            chooser: self
                .engine
                .chooser_report()
                .map(|r| crate::report::ChooserSummary {
                    current: r.current.name(),
                    switches: r.switches,
                    candidates: (r.candidates.iter())
                        .map(|(p, gets, ratio)| (p.name(), *gets, *ratio))
                        .collect(),
                }),
            tenant_policy: self.arbitration.as_ref().map(|a| a.arbiter().describe()),
            arbiter_rounds: self.arbitration.as_ref().map_or(0, |a| a.stats().rounds),
            tenants: self
                .tenant_rows(&self.tenant_totals)
                .into_iter()
                .map(|totals| {
                    let own = usize::from(totals.tenant) < self.engine.pool_count();
                    let pool = usize::from(totals.tenant);
                    TenantReport {
                        reserved_pages: own.then(|| self.engine.pool(pool).reserved),
                        miss_entropy: own.then(|| {
                            miss_entropy(
                                self.engine
                                    .pool_classes(pool, clock)
                                    .iter()
                                    .map(|c| c.counters.inserts),
                            )
                        }),
                        totals,
                    }
                })
                .collect(),
            windows: self.windows,
            allocation: stats
                .classes
                .iter()
                .filter(|c| c.total_pages > 0)
                .map(|c| ClassAllocation {
                    class: c.class.0,
                    chunk_size_bytes: c.chunk_size_bytes,
                    pages: c.total_pages,
                    items: c.items,
                })
                .collect(),
        }
    }

    /// Replays a whole stream and reports.
    pub fn run(
        config: SimConfig,
        policy: SlabPolicy,
        stream: impl IntoIterator<Item = Access>,
    ) -> Result<SimReport, SimError> {
        let mut sim = Simulator::new(config, policy)?;
        for a in stream {
            sim.replay(&a);
        }
        Ok(sim.finish())
    }
}

/// The text of a key id, valid in the memcached text protocol (so a trace replays identically against a live
/// server): the id in lowercase hex, prefixed by `t<tenant>:` for tenants other than 0. The simulator also
/// passes the tenant to the engine (`Key::tenant`), so tenants are separate namespaces there; the prefix
/// keeps keys distinct for a live server that has no tenants configured.
pub fn key_text(tenant: u16, id: u64, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.clear();
    if tenant != 0 {
        out.push(b't');
        out.extend_from_slice(tenant.to_string().as_bytes());
        out.push(b':');
    }
    let digits = (16 - id.leading_zeros() as usize / 4).max(1);
    for i in (0..digits).rev() {
        out.push(HEX[((id >> (4 * i)) & 0xf) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::key_text;

    #[test]
    fn key_text_is_hex_and_distinct() {
        let mut k = Vec::new();
        key_text(0, 0, &mut k);
        assert_eq!(k, b"0");
        key_text(0, 0xdead_beef, &mut k);
        assert_eq!(k, b"deadbeef");
        key_text(3, 255, &mut k);
        assert_eq!(k, b"t3:ff");
        key_text(0, u64::MAX, &mut k);
        assert_eq!(k, b"ffffffffffffffff");
    }
}
