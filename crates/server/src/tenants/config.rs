//! The tenant configuration: the TOML file of `--config` and memcached's `-Y` file, merged and validated.
//!
//! ```toml
//! tenant_policy = "mpart"  # how memory is divided among tenants (`mrcache_policy::tenant::by_name`);
//!                          # --tenant-policy overrides it
//!
//! [[tenant]]
//! name = "shop"            # required; letters, digits, `_ - .`; "default" names tenant 0
//! password = "s3cret"      # authenticates as `shop` (memcached's text-protocol auth)
//! prefix = "shop:"         # keys starting with it belong to `shop` on unauthenticated connections
//! port = 11311             # connections accepted on this port belong to `shop`
//! reserved = "64MiB"       # never taken from it while it uses it
//! max = "1GiB"             # the most it may hold
//! target_hit_ratio = 0.95  # lama-qos: the least memory meeting it
//! weight = 2.0             # share of the unreserved memory at the start; Memshare's credit multiplier
//! ```
//! The memory fields take effect through the tenant arbiter (`crate::memory`).
//! Unknown keys are errors that name the key. A `-Y` line `user:password` is a tenant with that password
//! and default settings, or gives the password of the config's tenant of that name (if the config gives
//! one too, both must agree).
//!
//! Invariants of a validated [`TenantsConfig`]: names are unique and valid; no tenant but `default` is
//! named `default`, and `default` has no password, prefix or port; prefixes are non-empty and none is a
//! prefix of another (so a key belongs to at most one prefix tenant); ports are unique and non-zero;
//! `reserved <= max`; `0 < target_hit_ratio <= 1`; `weight > 0`; `tenant_policy`, when given, names a tenant
//! arbiter `mrcache_policy::tenant::by_name` accepts.

use std::collections::HashSet;
use std::path::Path;

use serde::Deserialize;

/// The name of tenant 0, which every connection without another identity acts as.
pub const DEFAULT_TENANT_NAME: &str = "default";
/// A tenant's weight when the config gives none.
pub const DEFAULT_WEIGHT: f64 = 1.0;

/// One tenant's validated settings.
#[derive(Clone, Debug, PartialEq)]
pub struct TenantSpec {
    pub name: String,
    pub password: Option<String>,
    pub prefix: Option<String>,
    pub port: Option<u16>,
    /// Memory the tenant is guaranteed: never taken from it while it uses it.
    pub reserved_bytes: u64,
    /// Most memory the tenant may hold, if limited.
    pub max_bytes: Option<u64>,
    pub target_hit_ratio: Option<f64>,
    pub weight: f64,
}

impl TenantSpec {
    fn named(name: &str) -> TenantSpec {
        TenantSpec {
            name: name.to_string(),
            password: None,
            prefix: None,
            port: None,
            reserved_bytes: 0,
            max_bytes: None,
            target_hit_ratio: None,
            weight: DEFAULT_WEIGHT,
        }
    }
}

/// Every configured tenant, in file order (config tenants, then `-Y` users without a config entry), and
/// the file's tenant arbiter.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TenantsConfig {
    pub tenants: Vec<TenantSpec>,
    /// `tenant_policy`: the tenant arbiter the file names, if any (validated).
    pub tenant_policy: Option<String>,
}

/// What `--config` gives, before the `-Y` users are merged in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConfigFile {
    pub tenants: Vec<TenantSpec>,
    pub tenant_policy: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    tenant_policy: Option<String>,
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
}

/// A size in bytes: an integer, or a string such as `"64MiB"`, `"512k"`, `"1g"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ByteSize {
    Bytes(u64),
    Text(String),
}

impl ByteSize {
    fn bytes(&self, field: &str, tenant: &str) -> Result<u64, String> {
        match self {
            ByteSize::Bytes(n) => Ok(*n),
            ByteSize::Text(t) => parse_bytes(t).ok_or_else(|| {
                format!(
                    "tenant {tenant}: {field}: bad size '{t}' (e.g. 1048576, \"64MiB\", \"512k\")"
                )
            }),
        }
    }
}

/// `<number>[unit]`: units `b`, `k`/`kb`/`kib`, `m`/`mb`/`mib`, `g`/`gb`/`gib` (any case), all powers of
/// 1024 as in memcached's `-m`.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let number: u64 = t[..digits].parse().ok()?;
    let shift = match t[digits..].trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    number.checked_mul(1 << shift)
}

impl TenantsConfig {
    /// Reads and merges the files; `None` for either means not given.
    pub fn load(config: Option<&Path>, auth_file: Option<&Path>) -> Result<TenantsConfig, String> {
        let read =
            |p: &Path| std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()));
        let file = match config {
            Some(p) => parse_config(&read(p)?).map_err(|e| format!("{}: {e}", p.display()))?,
            None => ConfigFile::default(),
        };
        let users = match auth_file {
            Some(p) => parse_auth_file(&read(p)?).map_err(|e| format!("{}: {e}", p.display()))?,
            None => Vec::new(),
        };
        TenantsConfig::merge(file, users)
    }

    /// Config tenants plus `-Y` users, validated.
    pub fn merge(file: ConfigFile, users: Vec<(String, String)>) -> Result<TenantsConfig, String> {
        let ConfigFile {
            mut tenants,
            tenant_policy,
        } = file;
        for (user, password) in users {
            match tenants.iter_mut().find(|t| t.name == user) {
                Some(t) => match &t.password {
                    Some(p) if *p != password => {
                        return Err(format!(
                            "tenant {user}: the config and the auth file give different passwords"
                        ))
                    }
                    _ => t.password = Some(password),
                },
                None => {
                    let mut t = TenantSpec::named(&user);
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

    /// Whether any tenant has a password: then connections on the main listeners must authenticate.
    pub fn auth_required(&self) -> bool {
        self.tenants.iter().any(|t| t.password.is_some())
    }

    fn validate(&self) -> Result<(), String> {
        if let Some(spec) = &self.tenant_policy {
            mrcache_policy::tenant::by_name(spec).map_err(|e| format!("tenant_policy: {e}"))?;
        }
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
                return Err(format!(
                    "tenant name '{n}': 1 to 64 letters, digits, '_', '-' or '.'"
                ));
            }
            if !names.insert(n.as_str()) {
                return Err(format!("tenant {n} is configured twice"));
            }
            if n == DEFAULT_TENANT_NAME
                && (t.password.is_some() || t.prefix.is_some() || t.port.is_some())
            {
                return Err(format!(
                    "tenant {n}: the default tenant takes no password, prefix or port"
                ));
            }
            if let Some(p) = &t.password {
                if p.is_empty() || p.bytes().any(|b| b == b' ' || b.is_ascii_control()) {
                    return Err(format!(
                        "tenant {n}: password must be non-empty, without spaces or control characters"
                    ));
                }
            }
            if let Some(prefix) = &t.prefix {
                if prefix.is_empty() || prefix.bytes().any(|b| b == b' ' || b.is_ascii_control()) {
                    return Err(format!(
                        "tenant {n}: prefix must be non-empty, without spaces or control characters"
                    ));
                }
                for o in &self.tenants {
                    if let Some(other) = o.prefix.as_ref().filter(|_| o.name != *n) {
                        if other.starts_with(prefix.as_str()) {
                            return Err(format!(
                                "tenant {n}: prefix '{prefix}' overlaps tenant {}'s prefix '{other}'",
                                o.name
                            ));
                        }
                    }
                }
            }
            if let Some(port) = t.port {
                if port == 0 {
                    return Err(format!("tenant {n}: port must not be 0"));
                }
                if !ports.insert(port) {
                    return Err(format!(
                        "tenant {n}: port {port} is taken by another tenant"
                    ));
                }
            }
            if let Some(max) = t.max_bytes {
                if max < t.reserved_bytes {
                    return Err(format!(
                        "tenant {n}: max ({max} bytes) is below reserved ({} bytes)",
                        t.reserved_bytes
                    ));
                }
            }
            if let Some(r) = t.target_hit_ratio {
                if !(r > 0.0 && r <= 1.0) {
                    return Err(format!(
                        "tenant {n}: target_hit_ratio must be in (0, 1], not {r}"
                    ));
                }
            }
            if !(t.weight.is_finite() && t.weight > 0.0) {
                return Err(format!(
                    "tenant {n}: weight must be a positive number, not {}",
                    t.weight
                ));
            }
        }
        Ok(())
    }
}

/// Parses the TOML of `--config` (before merging with `-Y`, which validates it).
pub fn parse_config(text: &str) -> Result<ConfigFile, String> {
    let file: FileConfig = toml::from_str(text).map_err(|e| e.to_string().trim().to_string())?;
    let tenants = file
        .tenant
        .into_iter()
        .map(|t| {
            let name = t.name.clone();
            Ok(TenantSpec {
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
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(ConfigFile {
        tenants,
        tenant_policy: file.tenant_policy,
    })
}

/// Parses memcached's `-Y` file: one `user:password` per line; the password runs to the end of the line
/// (a `\r` before the `\n` is dropped). Blank lines are skipped; a line without `:` is an error, as in
/// memcached (which also stops at 8 entries; we do not).
pub fn parse_auth_file(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut users = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let Some((user, password)) = line.split_once(':') else {
            return Err(format!(
                "line {}: malformed entry, should be 'user:password'",
                i + 1
            ));
        };
        users.push((user.to_string(), password.to_string()));
    }
    Ok(users)
}
