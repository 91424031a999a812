//! Properties of the tenant configuration reader (`mrcache_server::tenants::config`), checked on any
//! input: shared by the fuzz target `config` and the stable seed replay
//! (`crates/server/tests/replay_config.rs`), which include this file by path.
//!
//! The input is a `--config` TOML text, optionally followed by a NUL byte and a `-Y` auth file. Checks:
//! - [`parse_config`] never panics; a config it accepts round-trips: written back as TOML (every field,
//!   sizes in units and in bytes, the arbiter by its `Display`, a default `rate_burst` left out) it
//!   parses to the same `ConfigFile`;
//!   its `tenant_policy` prints to a spec that parses back to itself, and builds an arbiter;
//! - [`parse_auth_file`] never panics, and every user it reads is the text before a line's first `:`;
//! - [`TenantsConfig::merge`] accepts only configs with the documented invariants (unique valid names,
//!   no identity for `default`, valid passwords, non-overlapping prefixes, unique non-zero ports,
//!   `reserved <= max`, `0 < target_hit_ratio <= 1`, finite positive weights, `0 < rate_limit <= 1e9`
//!   with a burst of at least 1), keeps config tenants
//!   first in file order and then the auth users the config does not name, and gives each auth user its
//!   password;
//! - an accepted merged config round-trips (written as one TOML file with the passwords, no auth file)
//!   and builds a tenant directory in which each password authenticates its tenant (and a wrong one
//!   does not), each prefix routes to its tenant, each port names its tenant, and a reload with the same
//!   config keeps every id.

use std::collections::HashSet;
use std::fmt::Write as _;

use mrcache_engine::TenantId;
use mrcache_policy::TenantPolicySpec;
use mrcache_server::tenants::config::{parse_auth_file, parse_config, ConfigFile};
use mrcache_server::tenants::{
    ConfiguredTenant, RateLimit, Tenants, TenantsConfig, DEFAULT_TENANT_NAME,
};
use mrcache_units::format_size;

/// Checks one input; panics on a violation.
pub fn check(data: &[u8]) {
    let (config_bytes, auth_bytes) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], Some(&data[nul + 1..])),
        None => (data, None),
    };
    let config_text = String::from_utf8_lossy(config_bytes);
    let file = match parse_config(&config_text) {
        Ok(file) => file,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    check_file_round_trip(&file);
    let users = match auth_bytes.map(String::from_utf8_lossy) {
        Some(text) => match parse_auth_file(&text) {
            Ok(users) => {
                check_users(&text, &users);
                users
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                return;
            }
        },
        None => Vec::new(),
    };
    match TenantsConfig::merge(file.clone(), users.clone()) {
        Ok(config) => {
            check_merged(&file, &users, &config);
            check_invariants(&config);
            check_config_round_trip(&config);
            check_directory(&config);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                write!(out, "\\u{:04X}", c as u32).unwrap();
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML float that reads back as the same `f64`.
fn toml_float(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        // `{:?}` is the shortest text that reads back exactly, and always TOML (`1.0`, `1e-7`).
        format!("{f:?}")
    }
}

/// Writes tenants and an arbiter as a `--config` file.
fn write_toml(tenants: &[ConfiguredTenant], policy: Option<&TenantPolicySpec>) -> String {
    let mut out = String::new();
    if let Some(p) = policy {
        writeln!(out, "tenant_policy = {}", toml_string(&p.to_string())).unwrap();
    }
    for t in tenants {
        out.push_str("\n[[tenant]]\n");
        writeln!(out, "name = {}", toml_string(&t.name)).unwrap();
        if let Some(p) = &t.password {
            writeln!(out, "password = {}", toml_string(p)).unwrap();
        }
        if let Some(p) = &t.prefix {
            writeln!(out, "prefix = {}", toml_string(p)).unwrap();
        }
        if let Some(p) = t.port {
            writeln!(out, "port = {p}").unwrap();
        }
        // As strings: a TOML integer stops at i64::MAX, a size may not. `reserved` in the largest
        // exact unit (`format_size`), `max` as bytes, so both spellings are read back.
        writeln!(out, "reserved = \"{}\"", format_size(t.reserved_bytes)).unwrap();
        if let Some(m) = t.max_bytes {
            writeln!(out, "max = \"{m}\"").unwrap();
        }
        if let Some(r) = t.target_hit_ratio {
            writeln!(out, "target_hit_ratio = {}", toml_float(r)).unwrap();
        }
        writeln!(out, "weight = {}", toml_float(t.weight)).unwrap();
        writeln!(out, "admin = {}", t.admin).unwrap();
        if let Some(limit) = t.rate_limit {
            writeln!(out, "rate_limit = {}", toml_float(limit.ops_per_sec)).unwrap();
            // The default burst is left out (it may not fit a TOML integer); reading it back recomputes it.
            if limit.burst != RateLimit::default_burst(limit.ops_per_sec) {
                writeln!(out, "rate_burst = {}", limit.burst).unwrap();
            }
        }
        if let Some(ranking) = t.ranking {
            writeln!(out, "ranking = \"{}\"", ranking.name()).unwrap();
        }
    }
    out
}

fn has_nan(tenants: &[ConfiguredTenant]) -> bool {
    tenants.iter().any(|t| {
        t.weight.is_nan()
            || t.target_hit_ratio.is_some_and(f64::is_nan)
            || t.rate_limit.is_some_and(|l| l.ops_per_sec.is_nan())
    })
}

fn check_file_round_trip(file: &ConfigFile) {
    if let Some(spec) = &file.tenant_policy {
        let text = spec.to_string();
        let back: TenantPolicySpec = text
            .parse()
            .unwrap_or_else(|e| panic!("tenant_policy {spec:?} prints as {text:?}, refused: {e}"));
        assert_eq!(back.to_string(), text, "tenant_policy print round trip");
        let _ = spec.build();
    }
    let text = write_toml(&file.tenants, file.tenant_policy.as_ref());
    let back = parse_config(&text)
        .unwrap_or_else(|e| panic!("{file:?} written as\n{text}\nis refused: {e}"));
    assert_eq!(
        write_toml(&back.tenants, back.tenant_policy.as_ref()),
        text,
        "config round trip"
    );
    if !has_nan(&file.tenants) {
        assert_eq!(back.tenants, file.tenants, "config round trip");
    }
}

fn check_users(text: &str, users: &[(String, String)]) {
    let lines = text.lines().filter(|l| !l.is_empty()).count();
    assert!(users.len() <= lines);
    for (user, _) in users {
        assert!(!user.contains(':') && !user.contains('\n'));
    }
}

fn check_merged(file: &ConfigFile, users: &[(String, String)], config: &TenantsConfig) {
    assert_eq!(config.tenant_policy, file.tenant_policy);
    let n = file.tenants.len();
    assert!(config.tenants.len() >= n);
    for (merged, given) in config.tenants.iter().zip(&file.tenants) {
        assert_eq!(merged.name, given.name, "config tenants keep their order");
        if given.password.is_some() {
            assert_eq!(merged.password, given.password);
        }
    }
    for (user, password) in users {
        let t = config
            .tenants
            .iter()
            .find(|t| t.name == *user)
            .unwrap_or_else(|| panic!("auth user {user} is not a tenant"));
        assert_eq!(t.password.as_ref(), Some(password));
    }
    let extra: Vec<&str> = config.tenants[n..]
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    let mut expected: Vec<&str> = Vec::new();
    for (user, _) in users {
        if !file.tenants.iter().any(|t| t.name == *user) && !expected.contains(&user.as_str()) {
            expected.push(user);
        }
    }
    assert_eq!(extra, expected, "auth-only users follow in file order");
}

fn valid_text(s: &str) -> bool {
    !s.is_empty() && !s.bytes().any(|b| b == b' ' || b.is_ascii_control())
}

fn check_invariants(config: &TenantsConfig) {
    let mut names = HashSet::new();
    let mut ports = HashSet::new();
    for t in &config.tenants {
        assert!(
            !t.name.is_empty() && t.name.len() <= 64,
            "name {:?}",
            t.name
        );
        assert!(t
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)));
        assert!(names.insert(t.name.as_str()), "duplicate {}", t.name);
        if t.name == DEFAULT_TENANT_NAME {
            assert!(t.password.is_none() && t.prefix.is_none() && t.port.is_none());
        }
        if let Some(p) = &t.password {
            assert!(valid_text(p), "password of {}", t.name);
        }
        if let Some(p) = &t.prefix {
            assert!(valid_text(p), "prefix of {}", t.name);
            for o in &config.tenants {
                if let Some(other) = o.prefix.as_ref().filter(|_| o.name != t.name) {
                    assert!(!other.starts_with(p.as_str()), "{p:?} starts {other:?}");
                }
            }
        }
        if let Some(port) = t.port {
            assert!(port != 0 && ports.insert(port), "port {port}");
        }
        if let Some(max) = t.max_bytes {
            assert!(t.reserved_bytes <= max);
        }
        if let Some(r) = t.target_hit_ratio {
            assert!(r > 0.0 && r <= 1.0, "target_hit_ratio {r}");
        }
        assert!(
            t.weight.is_finite() && t.weight > 0.0,
            "weight {}",
            t.weight
        );
        if let Some(l) = t.rate_limit {
            assert!(
                l.ops_per_sec > 0.0 && l.ops_per_sec <= 1e9 && l.burst >= 1,
                "rate limit {l:?}"
            );
        }
    }
    assert_eq!(
        config.auth_required(),
        config.tenants.iter().any(|t| t.password.is_some())
    );
}

fn check_config_round_trip(config: &TenantsConfig) {
    let text = write_toml(&config.tenants, config.tenant_policy.as_ref());
    let file = parse_config(&text).unwrap_or_else(|e| panic!("written as\n{text}\nrefused: {e}"));
    let back = TenantsConfig::merge(file, Vec::new())
        .unwrap_or_else(|e| panic!("written as\n{text}\nrefused on merge: {e}"));
    assert_eq!(&back, config, "merged config round trip via\n{text}");
}

fn check_directory(config: &TenantsConfig) {
    let tenants = Tenants::new(config.clone(), None, None).expect("a valid config builds");
    let table = tenants.current();
    let ids: Vec<(TenantId, ConfiguredTenant)> =
        table.tenants().map(|(id, t)| (id, t.clone())).collect();
    assert_eq!(ids.len(), config.tenants.len());
    let mut seen = HashSet::new();
    for ((id, t), configured) in ids.iter().zip(&config.tenants) {
        assert_eq!(t, configured);
        assert!(seen.insert(*id), "id {id:?} given twice");
        assert_eq!(*id == TenantId::DEFAULT, t.name == DEFAULT_TENANT_NAME);
        assert_eq!(table.spec(*id), Some(t));
        if let Some(p) = &t.password {
            assert_eq!(
                tenants.authenticate(t.name.as_bytes(), p.as_bytes(), None),
                Some(*id)
            );
            assert_eq!(
                tenants.authenticate(t.name.as_bytes(), p.as_bytes(), Some(*id)),
                Some(*id)
            );
            let mut wrong = p.clone().into_bytes();
            wrong.push(b'x');
            assert_eq!(tenants.authenticate(t.name.as_bytes(), &wrong, None), None);
            assert_eq!(
                tenants.authenticate(t.name.as_bytes(), &p.as_bytes()[1..], None),
                None
            );
        } else {
            assert_eq!(tenants.authenticate(t.name.as_bytes(), b"x", None), None);
        }
        if let Some(p) = &t.prefix {
            let mut key = p.clone().into_bytes();
            assert_eq!(table.route(&key), *id, "prefix {p:?}");
            key.extend_from_slice(b"key");
            assert_eq!(table.route(&key), *id, "prefix {p:?}");
        }
        if let Some(port) = t.port {
            assert_eq!(table.port_tenant(port).map(|(i, _)| i), Some(*id));
        }
    }
    // No prefix holds a control byte, so this key is the default tenant's.
    assert_eq!(table.route(b"\x01key"), TenantId::DEFAULT);
    assert_eq!(table.auth_required(), config.auth_required());
    tenants
        .replace(config.clone())
        .expect("the same config reloads");
    let again: Vec<TenantId> = tenants.current().tenants().map(|(id, _)| id).collect();
    let before: Vec<TenantId> = ids.iter().map(|(id, _)| *id).collect();
    assert_eq!(again, before, "a reload keeps every id");
}
