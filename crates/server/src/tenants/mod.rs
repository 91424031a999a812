//! Who a connection is: tenants by password, key prefix or listener port, and the live, reloadable
//! directory of them.
//!
//! - `config` — the TOML file (`--config`) and memcached's `-Y` file, merged and validated
//! - [`Tenants`] — the directory: stable ids by name, the current [`TenantTable`], reload on SIGHUP
//! - [`Tenancy`] — one connection's identity, which turns each key it sends into an engine `Key`
//!
//! Identity rules (decided when a connection opens, never changed by a reload):
//! - On a tenant's `port`, the connection is that tenant. If the tenant has a password it must first
//!   authenticate, and only as that tenant.
//! - On the main listeners, when any tenant has a password (`-Y` or `password` in the config), the
//!   connection must authenticate (memcached's text-protocol auth) and then is the tenant it
//!   authenticated as.
//! - Otherwise the connection is *routed*: each key that starts with a tenant's `prefix` belongs to that
//!   tenant (the key is stored whole, prefix included), every other key to the default tenant, and its
//!   `flush_all` flushes the default tenant only — a prefix tenant is flushed only by a connection that
//!   is that tenant (its port, or its password). A fixed connection sees its tenant's keys as sent,
//!   whatever prefix they carry: it cannot reach another tenant's namespace at all.
//!
//! Ids: the default tenant is 0; every other name gets the next id the first time the directory sees it
//! and keeps it for the life of the process, through reloads that remove and re-add it. Items carry the
//! id, so a re-added tenant finds its data again and a new tenant can never inherit another's items.
//!
//! Rate limits (`rate_limit` in the config; `rate_limit`): each name keeps one [`TenantLimiter`] for the
//! process's life, next to its id; a table lists those of its tenants that have a limit. The request
//! path checks them lock-free through a routed connection's table, and through the current table under
//! the read lock for a fixed one, only while some tenant has a limit (one relaxed load otherwise).
//!
//! Concurrency: the directory is read when a connection opens or authenticates, by routed connections
//! once per request to compare the generation (one relaxed load), and by `stats tenants`; it is written
//! by a reload (the listener thread, on SIGHUP). One `parking_lot::RwLock` around an `Arc<TenantTable>`;
//! readers clone the `Arc` and hold no lock while using it. A leaf lock: nothing else is locked while it
//! is held.

pub mod config;
pub mod rate_limit;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use mrcache_engine::{Key, TenantId};
use parking_lot::RwLock;

pub use config::{ConfigError, ConfiguredTenant, ServerBounds, TenantsConfig, DEFAULT_TENANT_NAME};
pub use rate_limit::{RateLimit, TenantLimiter, RATE_LIMITED_REPLY};

/// The configuration in force: each configured tenant with its id, and the lookups built from them.
#[derive(Debug)]
pub struct TenantTable {
    /// The validated configuration this table was built from.
    pub config: TenantsConfig,
    /// `ids[i]` is the id of `config.tenants[i]`.
    ids: Vec<TenantId>,
    /// Prefix routes for routed connections; prefixes never overlap (validated).
    prefixes: Vec<(Vec<u8>, TenantId)>,
    auth_required: bool,
    /// By id: the limiter of each tenant of this table that has a `rate_limit`.
    limiters: Vec<Option<Arc<TenantLimiter>>>,
}

impl TenantTable {
    /// Every configured tenant with its id.
    pub fn tenants(&self) -> impl Iterator<Item = (TenantId, &ConfiguredTenant)> {
        self.ids.iter().copied().zip(&self.config.tenants)
    }

    /// The configured settings of tenant `id`, if it is configured now.
    pub fn spec(&self, id: TenantId) -> Option<&ConfiguredTenant> {
        self.tenants().find(|(i, _)| *i == id).map(|(_, s)| s)
    }

    /// Whether connections on the main listeners must authenticate.
    pub fn auth_required(&self) -> bool {
        self.auth_required
    }

    /// The tenant whose `port` this is.
    pub fn port_tenant(&self, port: u16) -> Option<(TenantId, &ConfiguredTenant)> {
        self.tenants().find(|(_, s)| s.port == Some(port))
    }

    /// Whether tenant `id` may run a request at `now_ns` (nanoseconds from the directory's epoch):
    /// always, unless this table gives it a rate limit whose bucket is empty.
    #[inline]
    pub fn admit(&self, id: TenantId, now_ns: u64) -> bool {
        match self.limiters.get(id.index()) {
            Some(Some(limiter)) => limiter.admit(now_ns),
            _ => true,
        }
    }

    /// The tenant a routed connection's key belongs to.
    #[inline]
    pub fn route(&self, key: &[u8]) -> TenantId {
        for (prefix, id) in &self.prefixes {
            if key.starts_with(prefix) {
                return *id;
            }
        }
        TenantId::DEFAULT
    }
}

/// Names and ids ever seen; never shrinks, so ids are stable.
#[derive(Debug)]
struct Names {
    ids: HashMap<String, TenantId>,
    /// Names by id (index 0 is the default tenant).
    names: Vec<String>,
    /// Rate limiters by id, one per name for the process's life.
    limiters: Vec<Arc<TenantLimiter>>,
}

impl Names {
    fn id(&mut self, name: &str) -> Result<TenantId, ConfigError> {
        if let Some(id) = self.ids.get(name) {
            return Ok(*id);
        }
        let id = u16::try_from(self.names.len())
            .map(TenantId)
            .map_err(|_| ConfigError::TooManyNames)?;
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        self.limiters.push(Arc::default());
        Ok(id)
    }
}

/// The live tenant directory.
#[derive(Debug)]
pub struct Tenants {
    config_path: Option<PathBuf>,
    auth_file: Option<PathBuf>,
    names: parking_lot::Mutex<Names>,
    current: RwLock<Arc<TenantTable>>,
    /// Bumped by every successful reload, so routed connections pick up new prefixes.
    generation: AtomicU64,
    /// Whether the table in force gives any tenant a rate limit.
    any_rate_limit: AtomicBool,
    /// Time zero of the rate limiters' clock.
    epoch: Instant,
}

impl Tenants {
    /// A directory over `config`, which was loaded from these paths (reload reads them again).
    pub fn new(
        config: TenantsConfig,
        config_path: Option<PathBuf>,
        auth_file: Option<PathBuf>,
    ) -> Result<Tenants, ConfigError> {
        let mut names = Names {
            ids: HashMap::from([(DEFAULT_TENANT_NAME.to_string(), TenantId::DEFAULT)]),
            names: vec![DEFAULT_TENANT_NAME.to_string()],
            limiters: vec![Arc::default()],
        };
        let table = build(config, &mut names)?;
        Ok(Tenants {
            config_path,
            auth_file,
            names: parking_lot::Mutex::new(names),
            any_rate_limit: AtomicBool::new(table.limiters.iter().any(Option::is_some)),
            current: RwLock::new(Arc::new(table)),
            generation: AtomicU64::new(0),
            epoch: Instant::now(),
        })
    }

    /// No tenants: every connection is the default tenant.
    pub fn none() -> Tenants {
        Tenants::new(TenantsConfig::default(), None, None).expect("an empty config is valid")
    }

    /// The table in force.
    pub fn current(&self) -> Arc<TenantTable> {
        self.current.read().clone()
    }

    /// How many reloads have succeeded: routed connections and the maintenance thread compare it with
    /// the one they last saw to pick up a new table.
    pub fn generation(&self) -> u64 {
        self.generation.load(Relaxed)
    }

    /// The path of the `-Y` file, if any.
    pub fn auth_file(&self) -> Option<&PathBuf> {
        self.auth_file.as_ref()
    }

    /// Every tenant ever known, by id: (id, name). Removed tenants stay (their items may remain).
    pub fn known(&self) -> Vec<(TenantId, String)> {
        let names = self.names.lock();
        names
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| (TenantId(i as u16), n.clone()))
            .collect()
    }

    /// Re-reads the files and puts the new configuration in force if it passes every check start-up
    /// makes (the files' own, then [`TenantsConfig::check_server`] against `server`: the main ports
    /// bound and the memory limit in force). On error the old one stays.
    pub fn reload(&self, server: &ServerBounds) -> Result<(), ConfigError> {
        let config = TenantsConfig::load(self.config_path.as_deref(), self.auth_file.as_deref())?;
        config.check_server(server)?;
        self.replace(config)
    }

    /// Puts `config` in force (what `reload` does after reading the files).
    pub fn replace(&self, config: TenantsConfig) -> Result<(), ConfigError> {
        let table = {
            let mut names = self.names.lock();
            build(config, &mut names)?
        };
        let limited = table.limiters.iter().any(Option::is_some);
        *self.current.write() = Arc::new(table);
        self.any_rate_limit.store(limited, Relaxed);
        self.generation.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Whether the request of a connection that is `tenancy`, charged to the tenant of `key`, may run
    /// now under its tenant's rate limit (see the module doc for what it costs). A refused request is
    /// counted in the tenant's `rate_limited`.
    #[inline]
    pub fn admit(&self, tenancy: &Tenancy, key: &[u8]) -> bool {
        if !self.any_rate_limit.load(Relaxed) {
            return true;
        }
        let now_ns = self.epoch.elapsed().as_nanos() as u64;
        match tenancy {
            Tenancy::Routed { table, .. } => table.admit(table.route(key), now_ns),
            Tenancy::Fixed(id) => self.current.read().admit(*id, now_ns),
        }
    }

    /// Tenant `id`'s limiter (its limit in force and its `rate_limited` count), if the id is known.
    pub fn limiter(&self, id: TenantId) -> Option<Arc<TenantLimiter>> {
        self.names.lock().limiters.get(id.index()).cloned()
    }

    /// `stats reset`: every tenant's `rate_limited` back to 0.
    pub fn reset_counters(&self) {
        for l in &self.names.lock().limiters {
            l.reset_counters();
        }
    }

    /// memcached's `authfile_check` against the current table: the tenant `user` names, if its password is
    /// `password`. `only` restricts it to one tenant (a tenant port).
    pub fn authenticate(
        &self,
        user: &[u8],
        password: &[u8],
        only: Option<TenantId>,
    ) -> Option<TenantId> {
        let table = self.current();
        let (id, spec) = table.tenants().find(|(_, s)| s.name.as_bytes() == user)?;
        let expected = spec.password.as_deref()?.as_bytes();
        let matches = constant_time_eq(expected, password);
        (matches && only.is_none_or(|o| o == id)).then_some(id)
    }
}

fn build(config: TenantsConfig, names: &mut Names) -> Result<TenantTable, ConfigError> {
    let ids = config
        .tenants
        .iter()
        .map(|t| names.id(&t.name))
        .collect::<Result<Vec<_>, _>>()?;
    let prefixes = config
        .tenants
        .iter()
        .zip(&ids)
        .filter_map(|(t, id)| t.prefix.as_ref().map(|p| (p.as_bytes().to_vec(), *id)))
        .collect();
    // Every known name's limiter follows the new table: a name it does not limit is unlimited (a
    // connection still holding the old table then sees no limit either).
    let mut limits = vec![None; names.limiters.len()];
    for (t, id) in config.tenants.iter().zip(&ids) {
        limits[id.index()] = t.rate_limit;
    }
    let limiters = names
        .limiters
        .iter()
        .zip(limits)
        .map(|(limiter, limit)| {
            limiter.configure(limit);
            limit.map(|_| limiter.clone())
        })
        .collect();
    Ok(TenantTable {
        limiters,
        auth_required: config.auth_required(),
        config,
        ids,
        prefixes,
    })
}

/// Compares without stopping at the first difference, so timing does not tell how much of a guess was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One connection's identity: how its keys map to tenants, and which tenant its `flush_all` flushes.
#[derive(Clone, Debug)]
pub enum Tenancy {
    /// Every key is this tenant's (authenticated, or on a tenant's port).
    Fixed(TenantId),
    /// Keys go to the tenant whose prefix they start with, else to the default tenant; the table is
    /// refreshed when the directory's generation moves.
    Routed {
        /// The table the connection routes by.
        table: Arc<TenantTable>,
        /// The directory's generation `table` was taken at.
        generation: u64,
    },
}

impl Tenancy {
    /// A routed identity over the directory's current table.
    pub fn routed(tenants: &Tenants) -> Tenancy {
        Tenancy::Routed {
            generation: tenants.generation(),
            table: tenants.current(),
        }
    }

    /// Picks up a reloaded table (routed connections only); one relaxed load when nothing changed.
    #[inline]
    pub fn refresh(&mut self, tenants: &Tenants) {
        if let Tenancy::Routed { generation, .. } = self {
            if *generation != tenants.generation() {
                *self = Tenancy::routed(tenants);
            }
        }
    }

    /// The engine key for the key bytes a client sent.
    #[inline]
    pub fn key<'k>(&self, bytes: &'k [u8]) -> Key<'k> {
        match self {
            Tenancy::Fixed(id) => Key::new(*id, bytes),
            Tenancy::Routed { table, .. } => Key::new(table.route(bytes), bytes),
        }
    }

    /// The one tenant a fixed connection is (what `stats tenants` shows it); `None` when routed.
    pub fn own_tenant(&self) -> Option<TenantId> {
        match self {
            Tenancy::Fixed(id) => Some(*id),
            Tenancy::Routed { .. } => None,
        }
    }

    /// What the connection may see and change beyond its own keys (see [`Scope`]).
    pub fn scope(&self, tenants: &Tenants) -> Scope {
        match self {
            Tenancy::Routed { .. } => Scope::Operator,
            Tenancy::Fixed(id) => {
                let table = tenants.current();
                match table.spec(*id) {
                    Some(spec) if spec.admin => Scope::Operator,
                    Some(spec) => Scope::Tenant(*id, spec.name.clone()),
                    // A tenant a reload removed keeps its identity, and no more rights than before.
                    None => Scope::Tenant(*id, format!("#{}", id.0)),
                }
            }
        }
    }

    /// The tenant `flush_all` flushes.
    pub fn flush_tenant(&self) -> TenantId {
        match self {
            Tenancy::Fixed(id) => *id,
            Tenancy::Routed { .. } => TenantId::DEFAULT,
        }
    }
}

/// What a connection may do beyond its own keys.
///
/// - [`Scope::Operator`]: every command, server-wide (`stats` of everything, `stats reset`,
///   `cache_memlimit`, `slabs`, `lru`, `lru_crawler`, `verbosity`, `shutdown`, `watch`, `stats detail`),
///   and dumps of every tenant's keys. Routed connections (the main port when no tenant has a
///   password: whoever reaches it can reach every prefix tenant's keys anyway) and connections of a
///   tenant with `admin = true`.
/// - [`Scope::Tenant`]: its own figures only (`stats` shows the process identity and its own counters,
///   `stats conns` its own connections, `stats tenants`/`stats mrc` its own row), its own `flush_all`,
///   dumps of its own keys (`lru_crawler metadump`, `stats cachedump`), and the read-only `stats
///   settings`; every server-wide command is refused with `CLIENT_ERROR <command> not allowed for
///   tenant <name>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// May run server-wide commands.
    Operator,
    /// One tenant (id and name), limited to its own figures and data.
    Tenant(TenantId, String),
}

#[cfg(test)]
mod tests;
