use super::config::{parse_auth_file, parse_bytes, parse_config};
use super::*;

fn config(text: &str) -> Result<TenantsConfig, ConfigError> {
    TenantsConfig::merge(parse_config(text)?, Vec::new())
}

#[test]
fn a_full_tenant_parses() {
    let c = config(
        r#"
        [[tenant]]
        name = "shop"
        password = "pw"
        prefix = "shop:"
        port = 11311
        reserved = "64MiB"
        max = 1073741824
        target_hit_ratio = 0.95
        weight = 2.5
        [[tenant]]
        name = "default"
        reserved = "8m"
        "#,
    )
    .unwrap();
    let shop = &c.tenants[0];
    assert_eq!(shop.password.as_deref(), Some("pw"));
    assert_eq!(shop.prefix.as_deref(), Some("shop:"));
    assert_eq!(shop.port, Some(11311));
    assert_eq!(shop.reserved_bytes, 64 << 20);
    assert_eq!(shop.max_bytes, Some(1 << 30));
    assert_eq!(shop.target_hit_ratio, Some(0.95));
    assert_eq!(shop.weight, 2.5);
    assert_eq!(c.tenants[1].reserved_bytes, 8 << 20);
    assert!(c.auth_required());
}

#[test]
fn unknown_keys_are_errors_that_name_the_key() {
    let e = config("[[tenant]]\nname = \"a\"\npasword = \"x\"\n").unwrap_err();
    assert!(matches!(e, ConfigError::Toml(_)), "{e:?}");
    assert!(e.to_string().contains("pasword"), "{e}");
    let e = config("[server]\nport = 1\n").unwrap_err().to_string();
    assert!(e.contains("server"), "{e}");
}

#[test]
fn bad_values_are_refused() {
    for (text, needle) in [
        (
            "[[tenant]]\nname = \"a\"\nreserved = \"12 parsecs\"",
            "reserved",
        ),
        (
            "[[tenant]]\nname = \"a\"\nmax = \"1k\"\nreserved = \"2k\"",
            "below reserved",
        ),
        (
            "[[tenant]]\nname = \"a\"\ntarget_hit_ratio = 1.5",
            "target_hit_ratio",
        ),
        ("[[tenant]]\nname = \"a\"\nweight = 0.0", "weight"),
        ("[[tenant]]\nname = \"a\"\nport = 0", "port"),
        ("[[tenant]]\nname = \"a b\"", "tenant name"),
        (
            "[[tenant]]\nname = \"a\"\n[[tenant]]\nname = \"a\"",
            "twice",
        ),
        (
            "[[tenant]]\nname = \"default\"\npassword = \"x\"",
            "default tenant",
        ),
        ("[[tenant]]\nname = \"a\"\nprefix = \"\"", "prefix"),
        (
            "[[tenant]]\nname = \"a\"\nprefix = \"ab\"\n[[tenant]]\nname = \"b\"\nprefix = \"abc\"",
            "overlaps",
        ),
        (
            "[[tenant]]\nname = \"a\"\nport = 5\n[[tenant]]\nname = \"b\"\nport = 5",
            "port 5",
        ),
        ("[[tenant]]\nname = \"a\"\nport = 70000", "port"),
        ("[[tenant]]\npassword = \"x\"", "name"),
    ] {
        let e = config(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text:?}: {e}");
    }
}

#[test]
fn tenant_policy_is_a_validated_top_level_key() {
    let c = config("tenant_policy = \"memshare:tax=0.5\"\n[[tenant]]\nname = \"a\"\n").unwrap();
    assert_eq!(
        c.tenant_policy.map(|p| p.to_string()).as_deref(),
        Some("memshare:tax=0.5")
    );
    assert_eq!(
        config("[[tenant]]\nname = \"a\"\n").unwrap().tenant_policy,
        None
    );
    for (text, needle) in [
        ("tenant_policy = \"fair\"", "unknown tenant arbiter `fair`"),
        ("tenant_policy = \"mpart:stepp=2\"", "`stepp`"),
        ("tenant_policy = \"mpart:step=0\"", "step=0 is not auto"),
        ("tenant_policy = 3", "tenant_policy"),
    ] {
        let e = config(text).unwrap_err();
        assert!(matches!(e, ConfigError::Toml(_)), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains("tenant_policy") && e.contains(needle),
            "{text:?}: {e}"
        );
    }
}

#[test]
fn sizes() {
    let parse_bytes = |t: &str| parse_bytes(t).ok();
    assert_eq!(parse_bytes("64MiB"), Some(64 << 20));
    assert_eq!(parse_bytes("512k"), Some(512 << 10));
    assert_eq!(parse_bytes("1 GB"), Some(1 << 30));
    assert_eq!(parse_bytes("100"), Some(100));
    assert_eq!(parse_bytes("1.5g"), None);
    assert_eq!(parse_bytes("-1"), None);
}

#[test]
fn auth_file_users_are_tenants() {
    let users = parse_auth_file("alice:secret\r\nbob:p:w\n\n").unwrap();
    assert_eq!(
        users,
        [
            ("alice".into(), "secret".into()),
            ("bob".into(), "p:w".into())
        ]
    );
    let e = parse_auth_file("nocolon\n").unwrap_err();
    assert_eq!(e, ConfigError::MalformedAuthLine { line: 1 });
    assert!(e.to_string().contains("line 1"));
    let config_tenants = parse_config("[[tenant]]\nname = \"alice\"\nreserved = 1024").unwrap();
    let c = TenantsConfig::merge(config_tenants.clone(), users.clone()).unwrap();
    assert_eq!(c.tenants.len(), 2);
    assert_eq!(c.tenants[0].password.as_deref(), Some("secret"));
    assert_eq!(c.tenants[0].reserved_bytes, 1024);
    let mut clash = config_tenants;
    clash.tenants[0].password = Some("other".into());
    let e = TenantsConfig::merge(clash, users).unwrap_err();
    assert!(matches!(e, ConfigError::PasswordMismatch { .. }));
    assert!(e.to_string().contains("different passwords"));
}

#[test]
fn ids_are_stable_across_reloads_and_auth_follows_the_table() {
    let two = config(
        "[[tenant]]\nname = \"a\"\npassword = \"pa\"\n[[tenant]]\nname = \"b\"\npassword = \"pb\"",
    )
    .unwrap();
    let t = Tenants::new(two, None, None).unwrap();
    let a = t.authenticate(b"a", b"pa", None).unwrap();
    let b = t.authenticate(b"b", b"pb", None).unwrap();
    assert_eq!((a, b), (TenantId(1), TenantId(2)));
    assert_eq!(t.authenticate(b"a", b"pb", None), None);
    assert_eq!(
        t.authenticate(b"a", b"pa", Some(b)),
        None,
        "a tenant port admits only its tenant"
    );
    assert_eq!(t.authenticate(b"default", b"", None), None);
    // Reload: a goes, c comes; b keeps its id, c gets a new one, a's name keeps its id for later.
    let g = t.generation();
    t.replace(config("[[tenant]]\nname = \"c\"\npassword = \"pc\"\n[[tenant]]\nname = \"b\"\npassword = \"pb2\"").unwrap())
        .unwrap();
    assert!(t.generation() > g);
    assert_eq!(t.authenticate(b"a", b"pa", None), None);
    assert_eq!(t.authenticate(b"b", b"pb", None), None);
    assert_eq!(t.authenticate(b"b", b"pb2", None), Some(TenantId(2)));
    assert_eq!(t.authenticate(b"c", b"pc", None), Some(TenantId(3)));
    t.replace(config("[[tenant]]\nname = \"a\"\npassword = \"pa\"").unwrap())
        .unwrap();
    assert_eq!(t.authenticate(b"a", b"pa", None), Some(TenantId(1)));
    assert_eq!(t.known().len(), 4);
}

#[test]
fn routed_keys_follow_prefixes() {
    let t = Tenants::new(
        config(
            "[[tenant]]\nname = \"a\"\nprefix = \"a:\"\n[[tenant]]\nname = \"b\"\nprefix = \"b:\"",
        )
        .unwrap(),
        None,
        None,
    )
    .unwrap();
    let mut r = Tenancy::routed(&t);
    assert_eq!(r.key(b"a:1").tenant, TenantId(1));
    assert_eq!(r.key(b"b:1").tenant, TenantId(2));
    assert_eq!(r.key(b"c:1").tenant, TenantId::DEFAULT);
    assert_eq!(r.key(b"a:1").bytes, b"a:1", "the key is kept whole");
    assert_eq!(r.flush_tenant(), TenantId::DEFAULT);
    t.replace(config("[[tenant]]\nname = \"c\"\nprefix = \"c:\"").unwrap())
        .unwrap();
    r.refresh(&t);
    assert_eq!(r.key(b"a:1").tenant, TenantId::DEFAULT);
    assert_eq!(r.key(b"c:1").tenant, TenantId(3));
    let fixed = Tenancy::Fixed(TenantId(2));
    assert_eq!(fixed.key(b"a:1").tenant, TenantId(2));
    assert_eq!(fixed.flush_tenant(), TenantId(2));
}

#[test]
fn the_server_check_refuses_main_ports_and_reserves_above_the_limit() {
    let c = config(
        "[[tenant]]\nname = \"a\"\nport = 11311\nreserved = \"40m\"\nadmin = true\n\
         [[tenant]]\nname = \"b\"\nreserved = \"24m\"\n",
    )
    .unwrap();
    assert!(c.tenants[0].admin && !c.tenants[1].admin);
    let bounds = |ports: &[u16], mb: u64| ServerBounds {
        main_ports: ports.to_vec(),
        memory_limit_bytes: mb << 20,
        log_layout: true,
    };
    assert_eq!(c.check_server(&bounds(&[11211], 64)), Ok(()));
    assert_eq!(
        c.check_server(&bounds(&[11211, 11311], 64)),
        Err(ConfigError::MainPort {
            tenant: "a".into(),
            port: 11311
        })
    );
    let err = c.check_server(&bounds(&[11211], 63)).unwrap_err();
    assert_eq!(
        err,
        ConfigError::ReservesOverLimit {
            total: 64 << 20,
            limit: 63 << 20
        }
    );
    assert!(err.to_string().contains("reserves sum to 67108864 bytes"));
    // A tenant's ranking exists only in the log layout.
    let ranked = TenantsConfig::merge(
        parse_config("[[tenant]]\nname = \"r\"\nprefix = \"r:\"\nranking = \"lru\"\n").unwrap(),
        Vec::new(),
    )
    .unwrap();
    assert_eq!(ranked.check_server(&bounds(&[11211], 64)), Ok(()));
    let slab = ServerBounds {
        log_layout: false,
        ..bounds(&[11211], 64)
    };
    let err = ranked.check_server(&slab).unwrap_err();
    assert_eq!(err, ConfigError::RankingUnderSlab { tenant: "r".into() });
    assert!(err.to_string().contains("memory_layout=log only"), "{err}");
}

#[test]
fn a_removed_or_plain_tenant_is_no_operator() {
    let t = Tenants::new(
        config("[[tenant]]\nname = \"ops\"\nadmin = true\n[[tenant]]\nname = \"app\"\n").unwrap(),
        None,
        None,
    )
    .unwrap();
    let id = |name: &str| {
        t.known()
            .into_iter()
            .find(|(_, n)| n == name)
            .map(|(id, _)| id)
            .unwrap()
    };
    assert_eq!(Tenancy::Fixed(id("ops")).scope(&t), Scope::Operator);
    assert_eq!(
        Tenancy::Fixed(id("app")).scope(&t),
        Scope::Tenant(id("app"), "app".into())
    );
    assert_eq!(Tenancy::routed(&t).scope(&t), Scope::Operator);
    let app = id("app");
    t.replace(config("[[tenant]]\nname = \"ops\"\nadmin = true\n").unwrap())
        .unwrap();
    assert!(matches!(Tenancy::Fixed(app).scope(&t), Scope::Tenant(..)));
}

#[test]
fn rate_limits_parse_validate_and_follow_reloads() {
    use super::rate_limit::RateLimit;
    let c = config("[[tenant]]\nname = \"a\"\nprefix = \"a:\"\nrate_limit = 5000\n").unwrap();
    assert_eq!(
        c.tenants[0].rate_limit,
        Some(RateLimit {
            ops_per_sec: 5000.0,
            burst: 500
        })
    );
    let c = config("[[tenant]]\nname = \"a\"\nrate_limit = 2.5\nrate_burst = 3\n").unwrap();
    assert_eq!(c.tenants[0].rate_limit.unwrap().burst, 3);
    for (text, why) in [
        ("rate_limit = 0", "rate_limit must be"),
        ("rate_limit = -1", "rate_limit must be"),
        ("rate_limit = 2e9", "rate_limit must be"),
        (
            "rate_limit = 10\nrate_burst = 0",
            "rate_burst must be at least 1",
        ),
        ("rate_burst = 4", "rate_burst needs a rate_limit"),
        ("rate_limit = \"fast\"", "rate_limit"),
    ] {
        let e = config(&format!("[[tenant]]\nname = \"a\"\n{text}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{text}: {e}");
    }

    // The directory charges a routed key to its prefix tenant; a reload changes the limit in force and
    // keeps the count; a tenant the reload no longer limits is unlimited.
    let tenants = Tenants::new(
        config("[[tenant]]\nname = \"a\"\nprefix = \"a:\"\nrate_limit = 1\nrate_burst = 2\n")
            .unwrap(),
        None,
        None,
    )
    .unwrap();
    let routed = Tenancy::routed(&tenants);
    assert!(tenants.admit(&routed, b"a:1") && tenants.admit(&routed, b"a:2"));
    assert!(!tenants.admit(&routed, b"a:3"));
    assert!((0..100).all(|_| tenants.admit(&routed, b"other")));
    let a = TenantId(1);
    assert!(!tenants.admit(&Tenancy::Fixed(a), b"x"));
    assert_eq!(tenants.limiter(a).unwrap().limited(), 2);
    tenants
        .replace(config("[[tenant]]\nname = \"a\"\nprefix = \"a:\"\n").unwrap())
        .unwrap();
    assert!((0..100).all(|_| tenants.admit(&Tenancy::Fixed(a), b"x")));
    assert!(
        (0..100).all(|_| tenants.admit(&routed, b"a:1")),
        "an old table sees no limit either"
    );
    assert_eq!(tenants.limiter(a).unwrap().limited(), 2);
    tenants.reset_counters();
    assert_eq!(tenants.limiter(a).unwrap().limited(), 0);
}

#[test]
fn ranking_names_the_log_cleaners_function() {
    use mrcache_engine::Ranking;
    let c =
        config("[[tenant]]\nname = \"a\"\nranking = \"lfu\"\n[[tenant]]\nname = \"b\"\n").unwrap();
    let ranking = |name: &str| c.tenants.iter().find(|t| t.name == name).unwrap().ranking;
    assert_eq!(ranking("a"), Some(Ranking::Lfu));
    assert_eq!(ranking("b"), None, "the server's -o log_ranking");
    let e = config("[[tenant]]\nname = \"a\"\nranking = \"mru\"\n").unwrap_err();
    assert!(
        e.to_string().contains(
            "ranking must be lru, lfu, slru (segmented LRU), density (hits per byte) or clock, not 'mru'"
        ),
        "{e}"
    );
}
