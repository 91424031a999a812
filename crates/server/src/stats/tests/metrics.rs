//! `/metrics` against `stats`: every figure `stats` prints is a series (or, by design, an info label
//! or a documented constant), with the same value, and the exposition is well-formed.

use super::*;

/// A server in `layout` with a tenant, items of many sizes (in several classes under slab), hits,
/// misses and a reset ratio: every figure has something to show.
fn busy_server(layout: mrcache_engine::MemoryLayout) -> ServerContext {
    let mut server = ctx_with_tenants_in(
        in_layout(layout),
        "[[tenant]]\nname = \"a\"\nreserved = \"3MiB\"\ntarget_hit_ratio = 0.9\nweight = 2.5\n\
         rate_limit = 100\nrate_burst = 3\n",
    );
    // Tenant a sends past its burst: the refusals are a figure too.
    let a = crate::tenants::Tenancy::Fixed(mrcache_engine::TenantId(1));
    let admitted = (0..10).filter(|_| server.tenants.admit(&a, b"k")).count();
    assert!((3..10).contains(&admitted), "{admitted}");
    let clock = server.clock();
    for i in 0..100 {
        let key = format!("key{i}");
        let value = vec![b'x'; i * 37];
        let key = mrcache_engine::Key::default_tenant(key.as_bytes());
        server.engine.store(&StoreArgs::set(key, &value), clock);
        server.engine.get(key, clock, |_| ());
        server.engine.get(
            mrcache_engine::Key::default_tenant(b"absent"),
            clock,
            |_| (),
        );
    }
    server
        .maintenance
        .policy_predicted_bits
        .store(0.25f64.to_bits(), Relaxed);
    // `stats` prints `idle_kicks` only under `-o idle_timeout`.
    server.settings.idle_timeout_secs = 30;
    server.conns.idle_kicks.store(2, Relaxed);
    // ... and the TLS figures only under `-Z`.
    let _ = server.tls.set(std::sync::Arc::new(test_tls()));
    server
}

/// A TLS configuration with a self-signed certificate made here.
fn test_tls() -> crate::net::tls::Tls {
    let dir = std::env::temp_dir().join(format!("mrcache-metrics-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let mut settings = crate::settings::tls::TlsSettings {
        enabled: true,
        ..Default::default()
    };
    settings.chain_cert = Some(dir.join("cert.pem"));
    settings.key = Some(dir.join("key.pem"));
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    let tls = crate::net::tls::Tls::load(&settings, 0).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    tls
}

/// `/metrics` samples: `name{labels}` to value.
fn samples(exposition: &str) -> std::collections::HashMap<String, String> {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("sample has a value");
            (series.to_string(), value.to_string())
        })
        .collect()
}

/// `STAT name value` lines of one `stats` reply.
fn stat_lines(out: &[u8]) -> Vec<(String, String)> {
    let text = std::str::from_utf8(out).unwrap();
    assert!(text.ends_with("END\r\n"), "{text}");
    text.lines()
        .filter_map(|l| l.strip_prefix("STAT "))
        .map(|l| {
            let (name, value) = l.split_once(' ').unwrap();
            (name.to_string(), value.to_string())
        })
        .collect()
}

/// The same number, as `stats` and `/metrics` print it (`none` is NaN; seconds may print as `S.UUUUUU`).
fn same_value(stats: &str, metric: &str) -> bool {
    let parse = |v: &str| {
        if v == "none" {
            f64::NAN
        } else {
            v.parse::<f64>().unwrap_or(f64::INFINITY)
        }
    };
    let (a, b) = (parse(stats), parse(metric));
    a == b || (a.is_nan() && b.is_nan())
}

/// Checks one `stats` line against its figure in `table` and the exposition: a counter or gauge is a
/// sample of its family with the same value (`moving` names figures that change between the two
/// snapshots), an alias's family exists, an info figure is a label of `mrcached_info`, and a fixed
/// figure prints its constant.
fn check_on_metrics<S>(
    table: &[registry::Figure<S>],
    stats_name: &str,
    value: &str,
    label: Option<(&str, &str)>,
    exposition: &str,
    moving: &[&str],
) {
    let figure = table
        .iter()
        .find(|f| f.stats == Some(stats_name))
        .unwrap_or_else(|| panic!("`{stats_name}` is printed but is not in the registry"));
    let samples = samples(exposition);
    let labels = label.map_or(String::new(), |(k, v)| format!("{{{k}=\"{v}\"}}"));
    match figure.kind {
        registry::Kind::Counter | registry::Kind::Gauge => {
            let series = format!("mrcached_{}{labels}", figure.metric.unwrap());
            let sample = samples
                .get(&series)
                .unwrap_or_else(|| panic!("`{stats_name}` has no {series} on /metrics"));
            assert!(
                moving.contains(&stats_name) || same_value(value, sample),
                "`{stats_name}` {value} but {series} {sample}"
            );
        }
        registry::Kind::Alias => {
            let series = format!("mrcached_{}{labels}", figure.metric.unwrap());
            assert!(
                samples.contains_key(&series),
                "alias `{stats_name}`: no {series}"
            );
        }
        registry::Kind::Info => {
            let info = exposition
                .lines()
                .find(|l| l.starts_with("mrcached_info{"))
                .expect("mrcached_info");
            let label = format!("{}=\"{value}\"", figure.metric.unwrap());
            assert!(info.contains(&label), "{info} lacks {label}");
        }
        registry::Kind::Fixed => {
            assert!(figure.metric.is_none());
            let registry::Read::Fixed(constant) = figure.read else {
                panic!("fixed `{stats_name}` is read from the snapshot");
            };
            assert_eq!(constant.to_string(), value, "{stats_name}");
        }
    }
}

#[test]
fn every_stats_figure_is_on_metrics() {
    for layout in [
        mrcache_engine::MemoryLayout::Log,
        mrcache_engine::MemoryLayout::Slab,
    ] {
        every_stats_figure_is_on_metrics_in(layout);
    }
}

fn every_stats_figure_is_on_metrics_in(layout: mrcache_engine::MemoryLayout) {
    let server = busy_server(layout);
    let exposition = prometheus(&server);
    let moving = ["uptime", "time", "rusage_user", "rusage_system"];
    let sample = samples(&exposition);
    assert_ne!(
        sample["mrcached_tenant_rate_limited_total{tenant=\"a\"}"],
        "0"
    );
    assert_eq!(
        sample["mrcached_tenant_rate_limit_ops_per_second{tenant=\"a\"}"],
        "100"
    );

    let mut out = Vec::new();
    general(&server, &mut out);
    let lines = stat_lines(&out);
    assert_eq!(
        lines.len(),
        general::GENERAL
            .iter()
            .filter(|f| f.stats.is_some())
            .count()
    );
    for (name, value) in &lines {
        check_on_metrics(general::GENERAL, name, value, None, &exposition, &moving);
    }

    let mut out = Vec::new();
    items(&server, &mut out);
    let lines = stat_lines(&out);
    // The log is one class; slab's items fall in several.
    let several = lines.len() > classes::ITEMS.len();
    assert_eq!(
        several,
        layout == mrcache_engine::MemoryLayout::Slab,
        "{layout:?}"
    );
    for (name, value) in &lines {
        let (class, field) = name
            .strip_prefix("items:")
            .unwrap()
            .split_once(':')
            .unwrap();
        // `age` is seconds since the tail item's last access: on a loaded machine it moves on between
        // the exposition and this listing.
        check_on_metrics(
            classes::ITEMS,
            field,
            value,
            Some(("class", class)),
            &exposition,
            &["age"],
        );
    }

    let mut out = Vec::new();
    slabs(&server, &mut out);
    for (name, value) in &stat_lines(&out) {
        match name.split_once(':') {
            Some((class, field)) => check_on_metrics(
                classes::SLABS,
                field,
                value,
                Some(("class", class)),
                &exposition,
                &[],
            ),
            None => check_on_metrics(classes::SLAB_TOTALS, name, value, None, &exposition, &[]),
        }
    }

    let mut out = Vec::new();
    tenants(&server, None, &mut out);
    let lines = stat_lines(&out);
    assert_eq!(lines.len(), 2 * tenants::TENANTS.len());
    for (name, value) in &lines {
        let (tenant, field) = name
            .strip_prefix("tenant:")
            .unwrap()
            .split_once(':')
            .unwrap();
        check_on_metrics(
            tenants::TENANTS,
            field,
            value,
            Some(("tenant", tenant)),
            &exposition,
            &[],
        );
    }
}

#[test]
fn registry_entries_are_consistent() {
    fn families<S>(table: &[registry::Figure<S>]) -> Vec<&'static str> {
        table
            .iter()
            .filter_map(|f| f.family())
            .map(|(name, _)| name)
            .collect()
    }
    /// `siblings`: the families of the tables whose rows cover this table's (an item's class holds
    /// pages, so `stats slabs` lists every class `stats items` does).
    fn check<S>(table: &[registry::Figure<S>], siblings: &[&str], all: &mut Vec<&'static str>) {
        let mut stats_names = std::collections::HashSet::new();
        for f in table {
            if let Some(name) = f.stats {
                assert!(stats_names.insert(name), "`{name}` twice");
            }
            let fixed = matches!(f.read, registry::Read::Fixed(_));
            assert_eq!(fixed, f.kind == registry::Kind::Fixed, "{:?}", f.stats);
            assert_eq!(fixed, f.metric.is_none(), "{:?}", f.stats);
            assert!(f.stats.is_some() || f.family().is_some(), "{:?}", f.metric);
            assert!(
                !f.help.is_empty() || f.kind == registry::Kind::Alias,
                "{:?}",
                f.stats
            );
            if f.kind == registry::Kind::Alias {
                let family = f.metric.unwrap();
                assert!(
                    families(table).contains(&family) || siblings.contains(&family),
                    "alias {:?} names no family",
                    f.stats
                );
            }
        }
        all.extend(families(table));
    }
    let mut all = Vec::new();
    check(general::GENERAL, &[], &mut all);
    check(classes::ITEMS, &families(classes::SLABS), &mut all);
    check(classes::SLABS, &[], &mut all);
    check(classes::SLAB_TOTALS, &[], &mut all);
    check(tenants::TENANTS, &[], &mut all);
    let mut unique = all.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "a family name is used twice");
    assert!(!all.contains(&"info"), "mrcached_info is the info series");
}

/// Checks a Prometheus text exposition: every family has `# HELP` and `# TYPE` once, before its
/// samples; names match `[a-zA-Z_:][a-zA-Z0-9_:]*`; counters end in `_total` and nothing else does;
/// every sample belongs to the family declared last, appears once, and has a number for a value.
fn assert_well_formed(exposition: &str) {
    let valid_name = |n: &str| {
        let mut chars = n.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    };
    let mut helped = std::collections::HashSet::new();
    let mut typed = std::collections::HashMap::new();
    let mut series = std::collections::HashSet::new();
    let mut current: Option<String> = None;
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect("HELP has text");
            assert!(valid_name(name), "{name}");
            assert!(!help.is_empty(), "{name} has an empty HELP");
            assert!(helped.insert(name.to_string()), "HELP {name} twice");
            current = Some(name.to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("TYPE has a kind");
            assert_eq!(
                current.as_deref(),
                Some(name),
                "TYPE {name} not after its HELP"
            );
            assert!(
                typed.insert(name.to_string(), kind.to_string()).is_none(),
                "TYPE {name} twice"
            );
            match kind {
                "counter" => assert!(name.ends_with("_total"), "counter {name} lacks _total"),
                "gauge" => assert!(!name.ends_with("_total"), "gauge {name} ends in _total"),
                other => panic!("{name}: unexpected type {other}"),
            }
        } else {
            assert!(!line.starts_with('#'), "stray comment {line}");
            let (sample, value) = line.rsplit_once(' ').expect("sample has a value");
            let name = sample.split('{').next().unwrap();
            assert!(valid_name(name), "{name}");
            assert!(name.starts_with("mrcached_"), "{name}");
            assert_eq!(
                current.as_deref(),
                Some(name),
                "{sample} outside its family"
            );
            assert!(typed.contains_key(name), "{name} has no TYPE");
            assert!(series.insert(sample.to_string()), "{sample} twice");
            assert!(
                value.parse::<f64>().is_ok() || ["NaN", "+Inf", "-Inf"].contains(&value),
                "{sample} {value}"
            );
        }
    }
    assert!(!typed.is_empty());
}

#[test]
fn exposition_is_well_formed() {
    use mrcache_engine::MemoryLayout::{Log, Slab};
    assert_well_formed(&prometheus(&busy_server(Log)));
    assert_well_formed(&prometheus(&busy_server(Slab)));
    assert_well_formed(&prometheus(&ctx()));
}

/// Prometheus's own checker (`promtool check metrics`, Debian's `prometheus` package) over the
/// exposition of a busy server and of an idle one: no lint findings (naming, `_total`, units) and no
/// parse errors. Fails, naming the package, where promtool is not installed (`scripts/test.sh`
/// installs it); `PROMTOOL` overrides the path.
#[test]
#[ignore = "needs promtool (prometheus)"]
fn exposition_passes_promtool() {
    use std::io::Write as _;
    let promtool = std::env::var_os("PROMTOOL").unwrap_or_else(|| "promtool".into());
    use mrcache_engine::MemoryLayout::{Log, Slab};
    let servers = [busy_server(Log), busy_server(Slab), ctx()];
    for exposition in servers.iter().map(prometheus) {
        let mut child = std::process::Command::new(&promtool)
            .args(["check", "metrics"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "promtool ({promtool:?}) not found: {e}; this test needs it: apt-get install \
                     prometheus (scripts/test.sh does), or set PROMTOOL"
                )
            });
        child
            .stdin
            .take()
            .unwrap()
            .write_all(exposition.as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "promtool check metrics: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
