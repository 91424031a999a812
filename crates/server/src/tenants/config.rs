//! The tenant configuration: the TOML file of `--config` and memcached's `-Y` file, merged and validated.
//!
//! ```toml
//! tenant_policy = "mpart"  # how memory is divided among tenants (`mrcache_policy::TenantPolicySpec`);
//!                          # --tenant-policy overrides it
//!
//! [[tenant]]
//! name = "shop"            # required; letters, digits, `_ - .`; "default" names tenant 0
//! password = "s3cret"      # authenticates as `shop` (memcached's text-protocol auth)
//! prefix = "shop:"         # keys starting with it belong to `shop` on unauthenticated connections
//! port = 11311             # connections accepted on this port belong to `shop`
//! reserved = "64MiB"       # never taken from it while it uses it (bytes, or `mrcache_units` sizes)
//! max = "1GiB"             # the most it may hold
//! target_hit_ratio = 0.95  # lama-qos: the least memory meeting it
//! weight = 2.0             # share of the unreserved memory at the start; Memshare's credit multiplier
//! admin = false            # true: may run server-wide commands (stats of all, cache_memlimit, ...)
//! rate_limit = 5000        # requests a second it may sustain, over all its connections (token bucket);
//!                          # beyond it a request gets `SERVER_ERROR tenant rate limit exceeded`
//! rate_burst = 500         # requests it may send at once after being idle (default: 0.1 s of rate_limit)
//! ranking = "density"      # -o memory_layout=log: how the cleaner ranks its items: density
//!                          # (hits per byte), lru, lfu, slru or clock; default: -o log_ranking's
//! ```
//! The memory fields take effect through the tenant arbiter (`crate::memory`).
//! Unknown keys are errors that name the key; every error is a [`ConfigError`]. A `-Y` line `user:password` is a tenant with that password
//! and default settings, or gives the password of the config's tenant of that name (if the config gives
//! one too, both must agree).
//!
//! Invariants of a validated [`TenantsConfig`]: names are unique and valid; no tenant but `default` is
//! named `default`, and `default` has no password, prefix or port; prefixes are non-empty and none is a
//! prefix of another (so a key belongs to at most one prefix tenant); ports are unique and non-zero;
//! `reserved <= max`; `0 < target_hit_ratio <= 1`; `weight > 0`; `0 < rate_limit <= 1e9`, `rate_burst >= 1` and
//! only with a `rate_limit`; `tenant_policy`, when given, is a valid
//! tenant arbiter spec (it is read as a `TenantPolicySpec`, so the file is refused with the spec's reason).
//! Against the server ([`TenantsConfig::check_server`], at start-up and on every reload alike): no
//! tenant port is a main port, the reserves sum to at most the memory limit, and no tenant sets a
//! `ranking` under the slab layout (it would do nothing there).

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use mrcache_engine::Ranking;
use mrcache_policy::TenantPolicySpec;

use super::rate_limit::{RateLimit, MAX_RATE_PER_SEC};
use mrcache_units::{parse_size, SizeError, SizeSyntax, Unit};
use serde::Deserialize;

/// The name of tenant 0, which every connection without another identity acts as.
pub const DEFAULT_TENANT_NAME: &str = "default";
/// A tenant's weight when the config gives none.
pub const DEFAULT_WEIGHT: f64 = 1.0;

/// Why a tenant configuration was refused; the messages are the ones operators see after `--config:`,
/// `-Y/--auth-file:` or `SIGHUP:`.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigError {
    /// A file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// An error inside a file.
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        error: Box<ConfigError>,
    },
    /// TOML syntax, an unknown key, a value of the wrong type, or an invalid `tenant_policy` (the
    /// TOML reader's message, which quotes the line).
    Toml(String),
    /// `reserved` or `max` is not a size.
    BadSize {
        /// The tenant.
        tenant: String,
        /// `reserved` or `max`.
        field: &'static str,
        /// The text given.
        text: String,
    },
    /// A `-Y` line without `:`.
    MalformedAuthLine {
        /// 1-based line number.
        line: usize,
    },
    /// The config and the `-Y` file give one tenant two passwords.
    PasswordMismatch {
        /// The tenant.
        tenant: String,
    },
    /// An invalid tenant name.
    BadName {
        /// The name.
        name: String,
    },
    /// A name given twice.
    Duplicate {
        /// The name.
        name: String,
    },
    /// `default` with a password, prefix or port.
    DefaultIdentity,
    /// An empty password, or one with spaces or control characters.
    BadPassword {
        /// The tenant.
        tenant: String,
    },
    /// An empty prefix, or one with spaces or control characters.
    BadPrefix {
        /// The tenant.
        tenant: String,
    },
    /// One tenant's prefix starts another's.
    PrefixOverlap {
        /// The tenant.
        tenant: String,
        /// Its prefix.
        prefix: String,
        /// The other tenant.
        other: String,
        /// The other tenant's prefix, which starts with `prefix`.
        other_prefix: String,
    },
    /// `port = 0`.
    ZeroPort {
        /// The tenant.
        tenant: String,
    },
    /// Two tenants on one port.
    PortTaken {
        /// The second tenant.
        tenant: String,
        /// The port.
        port: u16,
    },
    /// `max < reserved`.
    MaxBelowReserved {
        /// The tenant.
        tenant: String,
        /// `max` in bytes.
        max: u64,
        /// `reserved` in bytes.
        reserved: u64,
    },
    /// `target_hit_ratio` outside (0, 1].
    TargetHitRatio {
        /// The tenant.
        tenant: String,
        /// The value given.
        value: f64,
    },
    /// `weight` not a positive number.
    Weight {
        /// The tenant.
        tenant: String,
        /// The value given.
        value: f64,
    },
    /// `rate_limit` not in (0, 1e9] requests a second.
    RateLimit {
        /// The tenant.
        tenant: String,
        /// The value given.
        value: f64,
    },
    /// `rate_burst` of 0, or without a `rate_limit`.
    RateBurst {
        /// The tenant.
        tenant: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// `ranking` not one of `Ranking::EXPECTED`.
    Ranking {
        /// The tenant.
        tenant: String,
        /// The value given.
        value: String,
    },
    /// More distinct tenant names than ids over the process's life.
    TooManyNames,
    /// A tenant's `port` is one the main listeners use (`-p`, or a `-l host:port`): connections there
    /// would be that tenant without authenticating.
    MainPort {
        /// The tenant.
        tenant: String,
        /// The port.
        port: u16,
    },
    /// The tenants' `reserved` sum to more than the memory limit: the reserves could not all be kept.
    ReservesOverLimit {
        /// The sum of `reserved`, in bytes.
        total: u64,
        /// The memory limit (`-m`, or `cache_memlimit`), in bytes.
        limit: u64,
    },
    /// A tenant sets `ranking`, which only the log layout has, in a server of the slab layout.
    RankingUnderSlab {
        /// The tenant.
        tenant: String,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, reason } => write!(f, "{}: {reason}", path.display()),
            ConfigError::InFile { path, error } => write!(f, "{}: {error}", path.display()),
            ConfigError::Toml(message) => f.write_str(message),
            ConfigError::BadSize {
                tenant,
                field,
                text,
            } => write!(
                f,
                "tenant {tenant}: {field}: bad size '{text}' (e.g. 1048576, \"64MiB\", \"512k\")"
            ),
            ConfigError::MalformedAuthLine { line } => write!(
                f,
                "line {line}: malformed entry, should be 'user:password'"
            ),
            ConfigError::PasswordMismatch { tenant } => write!(
                f,
                "tenant {tenant}: the config and the auth file give different passwords"
            ),
            ConfigError::BadName { name } => write!(
                f,
                "tenant name '{name}': 1 to 64 letters, digits, '_', '-' or '.'"
            ),
            ConfigError::Duplicate { name } => write!(f, "tenant {name} is configured twice"),
            ConfigError::DefaultIdentity => write!(
                f,
                "tenant {DEFAULT_TENANT_NAME}: the default tenant takes no password, prefix or port"
            ),
            ConfigError::BadPassword { tenant } => write!(
                f,
                "tenant {tenant}: password must be non-empty, without spaces or control characters"
            ),
            ConfigError::BadPrefix { tenant } => write!(
                f,
                "tenant {tenant}: prefix must be non-empty, without spaces or control characters"
            ),
            ConfigError::PrefixOverlap {
                tenant,
                prefix,
                other,
                other_prefix,
            } => write!(
                f,
                "tenant {tenant}: prefix '{prefix}' overlaps tenant {other}'s prefix '{other_prefix}'"
            ),
            ConfigError::ZeroPort { tenant } => write!(f, "tenant {tenant}: port must not be 0"),
            ConfigError::PortTaken { tenant, port } => write!(
                f,
                "tenant {tenant}: port {port} is taken by another tenant"
            ),
            ConfigError::MaxBelowReserved {
                tenant,
                max,
                reserved,
            } => write!(
                f,
                "tenant {tenant}: max ({max} bytes) is below reserved ({reserved} bytes)"
            ),
            ConfigError::TargetHitRatio { tenant, value } => write!(
                f,
                "tenant {tenant}: target_hit_ratio must be in (0, 1], not {value}"
            ),
            ConfigError::Weight { tenant, value } => write!(
                f,
                "tenant {tenant}: weight must be a positive number, not {value}"
            ),
            ConfigError::RateLimit { tenant, value } => write!(
                f,
                "tenant {tenant}: rate_limit must be a number of requests a second in (0, {MAX_RATE_PER_SEC:e}], not {value}"
            ),
            ConfigError::RateBurst { tenant, reason } => {
                write!(f, "tenant {tenant}: rate_burst {reason}")
            }
            ConfigError::Ranking { tenant, value } => write!(
                f,
                "tenant {tenant}: ranking must be {}, not '{value}'",
                mrcache_engine::Ranking::EXPECTED
            ),
            ConfigError::TooManyNames => {
                f.write_str("too many tenant names (65536) in this process's life")
            }
            ConfigError::MainPort { tenant, port } => {
                write!(f, "tenant {tenant}: port {port} is the main port (-p)")
            }
            ConfigError::ReservesOverLimit { total, limit } => write!(
                f,
                "tenant reserves sum to {total} bytes, more than the memory limit of {limit} bytes (-m)"
            ),
            ConfigError::RankingUnderSlab { tenant } => write!(
                f,
                "tenant {tenant}: ranking applies to -o memory_layout=log only (this server runs slab)"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

/// One tenant's validated settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfiguredTenant {
    /// The tenant's name (`name`, or the `-Y` user); `default` is tenant 0.
    pub name: String,
    /// The password it authenticates with (`password`, or its `-Y` line).
    pub password: Option<String>,
    /// Keys of routed connections that start with it are this tenant's (stored whole, prefix included).
    pub prefix: Option<String>,
    /// Connections accepted on this listening port are this tenant.
    pub port: Option<u16>,
    /// Memory the tenant is guaranteed: never taken from it while it uses it.
    pub reserved_bytes: u64,
    /// Most memory the tenant may hold, if limited.
    pub max_bytes: Option<u64>,
    /// The hit ratio the tenant asks for, in (0, 1]: the `lama-qos` arbiter gives it the least memory
    /// that meets it.
    pub target_hit_ratio: Option<f64>,
    /// Its share of the unreserved memory at the start, and Memshare's credit multiplier (> 0; default
    /// [`DEFAULT_WEIGHT`]).
    pub weight: f64,
    /// `admin = true`: the tenant's connections may run server-wide commands (see
    /// `crate::tenants::Scope`); other tenants see and change only their own.
    pub admin: bool,
    /// Its request-rate limit (`rate_limit`, `rate_burst`), if any (`super::rate_limit`).
    pub rate_limit: Option<RateLimit>,
    /// Under `-o memory_layout=log`, how the cleaner ranks its items (`None`: as `-o log_ranking`
    /// says); the slab layout's LRUs ignore it.
    pub ranking: Option<Ranking>,
}

impl ConfiguredTenant {
    fn named(name: &str) -> ConfiguredTenant {
        ConfiguredTenant {
            name: name.to_string(),
            password: None,
            prefix: None,
            port: None,
            reserved_bytes: 0,
            max_bytes: None,
            target_hit_ratio: None,
            weight: DEFAULT_WEIGHT,
            admin: false,
            rate_limit: None,
            ranking: None,
        }
    }
}

/// What a tenant configuration must fit besides itself ([`TenantsConfig::check_server`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerBounds {
    /// The ports of the main listeners (`-p`, and the ports `-l host:port` names).
    pub main_ports: Vec<u16>,
    /// The memory limit in force, in bytes.
    pub memory_limit_bytes: u64,
    /// The server runs the log layout (where a tenant's `ranking` applies).
    pub log_layout: bool,
}

/// Every configured tenant, in file order (config tenants, then `-Y` users without a config entry), and
/// the file's tenant arbiter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TenantsConfig {
    /// The tenants, in file order, then the `-Y` users the file does not name.
    pub tenants: Vec<ConfiguredTenant>,
    /// `tenant_policy`: the tenant arbiter the file names, if any.
    pub tenant_policy: Option<TenantPolicySpec>,
}

/// What `--config` gives, before the `-Y` users are merged in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigFile {
    /// The file's `[[tenant]]` tables, in file order.
    pub tenants: Vec<ConfiguredTenant>,
    /// `tenant_policy`: the tenant arbiter the file names, if any.
    pub tenant_policy: Option<TenantPolicySpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    tenant_policy: Option<TenantPolicySpec>,
    #[serde(default)]
    tenant: Vec<FileTenant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTenant {
    name: String,
    password: Option<String>,
    prefix: Option<String>,
    port: Option<u16>,
    reserved: Option<ByteSize>,
    max: Option<ByteSize>,
    target_hit_ratio: Option<f64>,
    weight: Option<f64>,
    admin: Option<bool>,
    rate_limit: Option<f64>,
    rate_burst: Option<u64>,
    ranking: Option<String>,
}

/// A size in bytes: an integer, or a string such as `"64MiB"`, `"512k"`, `"1g"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ByteSize {
    Bytes(u64),
    Text(String),
}

impl ByteSize {
    fn bytes(&self, field: &'static str, tenant: &str) -> Result<u64, ConfigError> {
        match self {
            ByteSize::Bytes(n) => Ok(*n),
            ByteSize::Text(t) => parse_bytes(t).map_err(|_| ConfigError::BadSize {
                tenant: tenant.to_string(),
                field,
                text: t.clone(),
            }),
        }
    }
}

/// The sizes the file takes: `mrcache_units`' grammar (units `b`, `k`/`kb`/`kib`, `m`/`mb`/`mib`,
/// `g`/`gb`/`gib`, any case, all powers of 1024 as in memcached's `-m`), whole numbers, bare numbers
/// in bytes.
pub const SIZE_SYNTAX: SizeSyntax = SizeSyntax::whole(Unit::Bytes);

/// A size of the file (`reserved`, `max`) by [`SIZE_SYNTAX`].
pub fn parse_bytes(text: &str) -> Result<u64, SizeError> {
    parse_size(text, SIZE_SYNTAX)
}

impl TenantsConfig {
    /// Reads and merges the files; `None` for either means not given.
    pub fn load(
        config: Option<&Path>,
        auth_file: Option<&Path>,
    ) -> Result<TenantsConfig, ConfigError> {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(|e| ConfigError::Read {
                path: p.to_path_buf(),
                reason: e.to_string(),
            })
        };
        let file = match config {
            Some(p) => parse_config(&read(p)?).map_err(in_file(p))?,
            None => ConfigFile::default(),
        };
        let users = match auth_file {
            Some(p) => parse_auth_file(&read(p)?).map_err(in_file(p))?,
            None => Vec::new(),
        };
        TenantsConfig::merge(file, users)
    }

    /// Config tenants plus `-Y` users, validated.
    pub fn merge(
        file: ConfigFile,
        users: Vec<(String, String)>,
    ) -> Result<TenantsConfig, ConfigError> {
        let ConfigFile {
            mut tenants,
            tenant_policy,
        } = file;
        for (user, password) in users {
            match tenants.iter_mut().find(|t| t.name == user) {
                Some(t) => match &t.password {
                    Some(p) if *p != password => {
                        return Err(ConfigError::PasswordMismatch { tenant: user })
                    }
                    _ => t.password = Some(password),
                },
                None => {
                    let mut t = ConfiguredTenant::named(&user);
                    t.password = Some(password);
                    tenants.push(t);
                }
            }
        }
        let config = TenantsConfig {
            tenants,
            tenant_policy,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks the configuration against the server it is to run in: no tenant port is a main port,
    /// the reserves fit in the memory limit, and no tenant sets a `ranking` the layout does not have.
    /// The one check both start-up (`Settings`) and a SIGHUP reload (`Tenants::reload`) make, so a
    /// reload can put in force nothing that start-up would refuse.
    pub fn check_server(&self, server: &ServerBounds) -> Result<(), ConfigError> {
        for t in &self.tenants {
            if let Some(port) = t.port.filter(|p| server.main_ports.contains(p)) {
                return Err(ConfigError::MainPort {
                    tenant: t.name.clone(),
                    port,
                });
            }
        }
        if let Some(t) = (self.tenants.iter()).find(|t| !server.log_layout && t.ranking.is_some()) {
            return Err(ConfigError::RankingUnderSlab {
                tenant: t.name.clone(),
            });
        }
        let total = self
            .tenants
            .iter()
            .fold(0u64, |sum, t| sum.saturating_add(t.reserved_bytes));
        if total > server.memory_limit_bytes {
            return Err(ConfigError::ReservesOverLimit {
                total,
                limit: server.memory_limit_bytes,
            });
        }
        Ok(())
    }

    /// Whether any tenant has a password: then connections on the main listeners must authenticate.
    pub fn auth_required(&self) -> bool {
        self.tenants.iter().any(|t| t.password.is_some())
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let mut names = HashSet::new();
        let mut ports = HashSet::new();
        for t in &self.tenants {
            let n = &t.name;
            if n.is_empty()
                || n.len() > 64
                || !n
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
            {
                return Err(ConfigError::BadName { name: n.clone() });
            }
            if !names.insert(n.as_str()) {
                return Err(ConfigError::Duplicate { name: n.clone() });
            }
            if n == DEFAULT_TENANT_NAME
                && (t.password.is_some() || t.prefix.is_some() || t.port.is_some())
            {
                return Err(ConfigError::DefaultIdentity);
            }
            if let Some(p) = &t.password {
                if p.is_empty() || p.bytes().any(|b| b == b' ' || b.is_ascii_control()) {
                    return Err(ConfigError::BadPassword { tenant: n.clone() });
                }
            }
            if let Some(prefix) = &t.prefix {
                if prefix.is_empty() || prefix.bytes().any(|b| b == b' ' || b.is_ascii_control()) {
                    return Err(ConfigError::BadPrefix { tenant: n.clone() });
                }
                for o in &self.tenants {
                    if let Some(other) = o.prefix.as_ref().filter(|_| o.name != *n) {
                        if other.starts_with(prefix.as_str()) {
                            return Err(ConfigError::PrefixOverlap {
                                tenant: n.clone(),
                                prefix: prefix.clone(),
                                other: o.name.clone(),
                                other_prefix: other.clone(),
                            });
                        }
                    }
                }
            }
            if let Some(port) = t.port {
                if port == 0 {
                    return Err(ConfigError::ZeroPort { tenant: n.clone() });
                }
                if !ports.insert(port) {
                    return Err(ConfigError::PortTaken {
                        tenant: n.clone(),
                        port,
                    });
                }
            }
            if let Some(max) = t.max_bytes {
                if max < t.reserved_bytes {
                    return Err(ConfigError::MaxBelowReserved {
                        tenant: n.clone(),
                        max,
                        reserved: t.reserved_bytes,
                    });
                }
            }
            if let Some(r) = t.target_hit_ratio {
                if !(r > 0.0 && r <= 1.0) {
                    return Err(ConfigError::TargetHitRatio {
                        tenant: n.clone(),
                        value: r,
                    });
                }
            }
            if !(t.weight.is_finite() && t.weight > 0.0) {
                return Err(ConfigError::Weight {
                    tenant: n.clone(),
                    value: t.weight,
                });
            }
            if let Some(limit) = t.rate_limit {
                let rate = limit.ops_per_sec;
                if !(rate > 0.0 && rate <= MAX_RATE_PER_SEC) {
                    return Err(ConfigError::RateLimit {
                        tenant: n.clone(),
                        value: rate,
                    });
                }
                if limit.burst == 0 {
                    return Err(ConfigError::RateBurst {
                        tenant: n.clone(),
                        reason: "must be at least 1",
                    });
                }
            }
        }
        Ok(())
    }
}

/// Wraps an error found inside the file at `path`.
fn in_file(path: &Path) -> impl FnOnce(ConfigError) -> ConfigError + '_ {
    move |e| ConfigError::InFile {
        path: path.to_path_buf(),
        error: Box::new(e),
    }
}

/// Parses the TOML of `--config` (before merging with `-Y`, which validates it).
pub fn parse_config(text: &str) -> Result<ConfigFile, ConfigError> {
    let file: FileConfig =
        toml::from_str(text).map_err(|e| ConfigError::Toml(e.to_string().trim().to_string()))?;
    let tenants = file
        .tenant
        .into_iter()
        .map(|t| {
            let name = t.name.clone();
            let rate_limit = match (t.rate_limit, t.rate_burst) {
                (Some(ops_per_sec), burst) => Some(RateLimit {
                    ops_per_sec,
                    burst: burst.unwrap_or_else(|| RateLimit::default_burst(ops_per_sec)),
                }),
                (None, Some(_)) => {
                    return Err(ConfigError::RateBurst {
                        tenant: name,
                        reason: "needs a rate_limit",
                    })
                }
                (None, None) => None,
            };
            Ok(ConfiguredTenant {
                rate_limit,
                reserved_bytes: match &t.reserved {
                    Some(s) => s.bytes("reserved", &name)?,
                    None => 0,
                },
                max_bytes: match &t.max {
                    Some(s) => Some(s.bytes("max", &name)?),
                    None => None,
                },
                name: t.name,
                password: t.password,
                prefix: t.prefix,
                port: t.port,
                target_hit_ratio: t.target_hit_ratio,
                weight: t.weight.unwrap_or(DEFAULT_WEIGHT),
                admin: t.admin.unwrap_or(false),
                ranking: match &t.ranking {
                    None => None,
                    Some(r) => Some(Ranking::parse(r).ok_or_else(|| ConfigError::Ranking {
                        tenant: name.clone(),
                        value: r.clone(),
                    })?),
                },
            })
        })
        .collect::<Result<_, ConfigError>>()?;
    Ok(ConfigFile {
        tenants,
        tenant_policy: file.tenant_policy,
    })
}

/// Parses memcached's `-Y` file: one `user:password` per line; the password runs to the end of the line
/// (a `\r` before the `\n` is dropped). Blank lines are skipped; a line without `:` is an error, as in
/// memcached (which also stops at 8 entries; we do not).
pub fn parse_auth_file(text: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut users = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let Some((user, password)) = line.split_once(':') else {
            return Err(ConfigError::MalformedAuthLine { line: i + 1 });
        };
        users.push((user.to_string(), password.to_string()));
    }
    Ok(users)
}
