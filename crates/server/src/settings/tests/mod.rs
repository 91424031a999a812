//! Unit tests of flag parsing, defaults and the default shard rule.

use std::net::SocketAddr;

use super::*;

fn run(args: &[&str]) -> Result<Settings, SettingsError> {
    let argv = std::iter::once("mrcached").chain(args.iter().copied());
    match Settings::parse_from(argv)? {
        Command::Run(s) | Command::PrintConfig(s) => Ok(s),
        Command::Print(t) => panic!("unexpected print: {t}"),
    }
}

fn err(args: &[&str]) -> String {
    run(args).expect_err("should fail").to_string()
}

#[test]
fn defaults_match_memcached() {
    let s = run(&[]).unwrap();
    assert_eq!(s, Settings::default());
    assert_eq!(s.port, 11211);
    assert_eq!(s.memory_limit_bytes, 64 << 20);
    assert_eq!(s.threads, 4);
    assert_eq!(s.max_connections, 1024);
    assert_eq!(s.reqs_per_event, 20);
    assert_eq!(s.listen_backlog, 1024);
    assert_eq!(s.item_size_max_bytes, 1 << 20);
    assert_eq!((s.growth_factor, s.min_chunk_data_bytes), (1.25, 48));
    assert!(s.use_cas && s.evict_when_full && s.slab_reassign && s.flush_enabled);
    assert!(!s.shutdown_enabled);
    assert_eq!(
        (
            s.slab_automove,
            s.slab_automove_ratio,
            s.slab_automove_window
        ),
        (1, 0.8, 30)
    );
    assert_eq!(s.shards, 1, "64 pages, under 256 pages per shard");
    assert!(s.listen.is_empty());
}

#[test]
fn memcached_flags_map_onto_fields() {
    let s = run(&[
        "-p",
        "0",
        "-l",
        "127.0.0.1,::1",
        "-l",
        "[::1]:99",
        "-m",
        "1024",
        "-t",
        "8",
        "-c",
        "10",
        "-I",
        "2m",
        "-f",
        "1.5",
        "-n",
        "64",
        "-vv",
        "-M",
        "-C",
        "-R",
        "5",
        "-B",
        "ascii",
        "-b",
        "16",
        "-A",
        "-F",
    ])
    .unwrap();
    assert_eq!(s.port, 0);
    assert_eq!(
        s.listen,
        vec![
            ListenSpec {
                host: "127.0.0.1".into(),
                port: None
            },
            ListenSpec {
                host: "::1".into(),
                port: None
            },
            ListenSpec {
                host: "::1".into(),
                port: Some(99)
            },
        ]
    );
    assert_eq!(s.memory_limit_bytes, 1024 << 20);
    assert_eq!(
        (s.threads, s.max_connections, s.item_size_max_bytes),
        (8, 10, 2 << 20)
    );
    assert_eq!(
        (s.growth_factor, s.min_chunk_data_bytes, s.verbose),
        (1.5, 64, 2)
    );
    assert!(!s.evict_when_full && !s.use_cas && s.shutdown_enabled && !s.flush_enabled);
    assert_eq!(
        (s.reqs_per_event, s.listen_backlog, s.protocol),
        (5, 16, Protocol::Ascii)
    );
    assert_eq!(s.page_size_bytes(), 2 << 20);
    assert_eq!(s.shards, 2, "8 threads, but 512 pages allow 2");
    let e = s.engine_config();
    assert_eq!(
        (e.memory_limit_bytes, e.item_size_max_bytes, e.shards),
        (1024 << 20, 2 << 20, 2)
    );
    assert!(!e.use_cas && !e.evict_when_full);
}

#[test]
fn long_flags_and_suffixes() {
    let s = run(&[
        "--port=1",
        "--listen=localhost:5",
        "--memory-limit=512k",
        "--max-item-size=1024",
    ]);
    assert_eq!(s.unwrap().listen[0].port, Some(5));
    let e = err(&["--memory-limit=512k", "--max-item-size=512k"]);
    assert!(e.contains("-I") && e.contains("half"), "{e}");
    let s = run(&["--memory-limit=2g", "--max-item-size=512k", "--threads=3"]).unwrap();
    assert_eq!(s.memory_limit_bytes, 2 << 30);
    assert_eq!(s.item_size_max_bytes, 512 << 10);
    assert_eq!(s.shards, 4);
}

#[test]
fn extended_options() {
    let s = run(&[
        "-o",
        "slab_automove=2,slab_automove_ratio=0.5,slab_automove_window=10",
        "-o",
        "hashpower=20,no_lru_crawler,shards=16,slab_chunk_max=512",
    ])
    .unwrap();
    assert_eq!(
        (
            s.slab_automove,
            s.slab_automove_ratio,
            s.slab_automove_window
        ),
        (2, 0.5, 10)
    );
    assert_eq!(
        (s.recorded.get("hashpower"), s.lru_crawler, s.shards),
        (Some("20"), false, 16)
    );
    let s = run(&["-o", "item_accounting=memcached"]).unwrap();
    assert_eq!(s.item_accounting, ItemAccounting::Memcached);
    assert_eq!(s.engine_config().item_accounting, ItemAccounting::Memcached);
    let s = run(&[]).unwrap();
    assert_eq!(
        s.item_accounting,
        ItemAccounting::Compact,
        "the server's default"
    );
    assert!(err(&["-o", "item_accounting=tight"]).contains("compact or memcached"));
    assert!(err(&["-o", "item_accounting"]).contains("needs a value"));
    let s = run(&["-o", "no_modern"]).unwrap();
    assert!(!s.slab_reassign);
    assert_eq!(s.slab_automove, 0);
    assert!(err(&["-o", "bogus_opt=1"]).contains("bogus_opt"));
    assert!(err(&["-o", "slab_automove=3"]).contains("slab_automove"));
    assert!(err(&["-o", "slab_automove_ratio=0"]).contains("slab_automove_ratio"));
    assert!(err(&["-o", "slab_chunk_max=1000"]).contains("slab_chunk_max"));
    assert!(err(&["-o", "shards=3"]).contains("shards"));
    assert!(err(&["-o", "hashpower=2"]).contains("hashpower"));
    assert!(err(&["-o", "idle_timeout"]).contains("needs a value"));
}

#[test]
fn lru_crawler_options_set_the_crawlers_pace_and_bound() {
    let s = run(&[]).unwrap();
    assert_eq!(
        (s.lru_crawler_sleep_us, s.lru_crawler_tocrawl),
        (100, 0),
        "memcached's"
    );
    let s = run(&["-o", "lru_crawler_sleep=1000000,lru_crawler_tocrawl=500"]).unwrap();
    assert_eq!(
        (s.lru_crawler_sleep_us, s.lru_crawler_tocrawl),
        (1_000_000, 500)
    );
    assert!(err(&["-o", "lru_crawler_sleep=1000001"]).contains("lru_crawler_sleep"));
    assert!(err(&["-o", "lru_crawler_tocrawl=-1"]).contains("lru_crawler_tocrawl"));
    assert!(err(&["-o", "lru_crawler_sleep"]).contains("needs a value"));
}

#[test]
fn refusals_name_the_flag() {
    assert!(err(&["-U", "70000"]).contains("-U"));
    assert!(err(&["-U", "-2"]).contains("-U"));
    assert!(err(&["-a", "999"]).contains("-a"));
    assert!(err(&["-a", "1777"]).contains("-a"));
    assert!(err(&["-s", ""]).contains("-s"));
    assert!(err(&["-B", "bogus"]).contains("-B"));
    assert!(err(&["-t", "0"]).contains("-t"));
    assert!(err(&["-c", "0"]).contains("-c"));
    assert!(err(&["-R", "0"]).contains("-R"));
    assert!(err(&["-f", "1.0"]).contains("-f"));
    assert!(err(&["-n", "0"]).contains("-n"));
    assert!(err(&["-I", "1g"]).contains("-I"));
    assert!(err(&["-I", "512"]).contains("-I"));
    assert!(err(&["-m", "abc"]).contains("-m"));
    assert!(err(&["-l", "[::1"]).contains("-l"));
    assert!(err(&["-p", "70000"]).contains("port"));
    assert!(err(&["--no-such-flag"]).contains("no-such-flag"));
}

#[test]
fn unix_socket_and_udp_flags() {
    // -p -1 is memcached's ephemeral TCP port; here 0 is too.
    assert_eq!(run(&["-p", "-1"]).unwrap().port, 0);
    assert_eq!(run(&["-p", "0"]).unwrap().port, 0);
    assert_eq!(run(&["--port=11300"]).unwrap().port, 11300);
    for bad in ["-2", "65536", "x"] {
        let e = err(&["-p", bad]);
        assert!(
            e.starts_with("-p/--port: invalid port number"),
            "{bad}: {e}"
        );
    }
    let s = run(&[]).unwrap();
    assert_eq!(
        (s.udp_port, s.unix_socket.clone(), s.unix_mask),
        (0, None, 0o700)
    );
    let s = run(&["-s", "/tmp/m.sock", "-a", "755", "-U", "-1"]).unwrap();
    assert_eq!(
        s.unix_socket.as_deref(),
        Some(std::path::Path::new("/tmp/m.sock"))
    );
    assert_eq!((s.unix_mask, s.udp_port), (0o755, -1));
    let d = s.describe();
    assert!(d.contains(&("unix_mask", "0755".to_string())), "{d:?}");
    assert!(d.contains(&("udp_port", "-1".to_string())), "{d:?}");
    assert_eq!(run(&["-U", "11211"]).unwrap().udp_port, 11211);
    assert_eq!(run(&["-a", "0644"]).unwrap().unix_mask, 0o644);
}

#[test]
fn ignored_flags_are_accepted() {
    let s = run(&["-u", "memcache", "-k", "-L", "-U", "0"]).unwrap();
    assert_eq!(s.port, DEFAULT_PORT);
    assert_eq!(s.user.as_deref(), Some("memcache"));
}

#[test]
fn daemon_flags_map_onto_fields() {
    let s = run(&[]).unwrap();
    assert_eq!(
        (s.daemonize, s.enable_coredumps, s.pid_file),
        (false, false, None)
    );
    let s = run(&["-d", "-r", "-P", "/run/m.pid"]).unwrap();
    assert!(s.daemonize && s.enable_coredumps);
    assert_eq!(
        s.pid_file.as_deref(),
        Some(std::path::Path::new("/run/m.pid"))
    );
    let s = run(&["--daemon", "--pidfile=m.pid"]).unwrap();
    assert!(s.daemonize);
    let d = s.describe();
    assert!(d.contains(&("pid_file", "m.pid".to_string())), "{d:?}");
    assert!(d.contains(&("daemonize", "true".to_string())), "{d:?}");
}

/// A daemon works in `/`: the files it opens later are made absolute first, against the directory it
/// was started in; absolute ones stay as they are.
#[test]
fn a_daemon_resolves_its_files_against_the_starting_directory() {
    let mut s = run(&["-d", "-P", "m.pid", "-e", "/var/cache/m.mem"]).unwrap();
    s.resolve_paths().unwrap();
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(s.pid_file, Some(cwd.join("m.pid")));
    assert_eq!(
        s.memory_file.as_deref(),
        Some(std::path::Path::new("/var/cache/m.mem"))
    );
    assert_eq!((s.config_file, s.auth_file), (None, None));
}

#[test]
fn help_version_and_print_config() {
    let help = |a: &str| match Settings::parse_from(["mrcached", a]).unwrap() {
        Command::Print(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(help("-h").contains("--memory-limit"));
    assert!(help("-h").contains("hashpower"));
    assert!(help("-V").contains("1.6.18"));
    assert!(matches!(
        Settings::parse_from(["mrcached", "--print-config"]).unwrap(),
        Command::PrintConfig(_)
    ));
    let d = Settings::default().describe();
    assert!(d.iter().any(|(k, v)| *k == "shards" && v == "1"));
    assert!(d
        .iter()
        .any(|(k, v)| *k == "item_accounting" && v == "compact"));
    assert!(help("-h").contains("item_accounting"));
}

#[test]
fn default_shard_rule() {
    assert_eq!(default_shards(4, 64), 1);
    assert_eq!(default_shards(2, 256), 1);
    assert_eq!(default_shards(2, 512), 2);
    assert_eq!(default_shards(3, 4096), 4);
    assert_eq!(default_shards(16, 4096), 16);
    assert_eq!(default_shards(16, 1024), 4);
    assert_eq!(default_shards(1, 4096), 1);
    assert_eq!(default_shards(6, 768), 2, "768/256 = 3, rounded down to 2");
}

#[test]
fn listen_spec_forms() {
    let p = |s| ListenSpec::parse(s).unwrap();
    assert_eq!(p("10.0.0.1:80").port, Some(80));
    assert_eq!(p("::1").host, "::1");
    assert_eq!(p("[::1]").port, None);
    assert_eq!(p("[::1]:7").to_string(), "[::1]:7");
    assert_eq!(
        p("127.0.0.1").resolve(5).unwrap(),
        vec!["127.0.0.1:5".parse::<SocketAddr>().unwrap()]
    );
}

#[test]
fn slab_policy_defaults_to_lama_and_memcached_flags_still_choose_its_movers() {
    assert_eq!(run(&[]).unwrap().slab_policy_spec().to_string(), "lama-mr");
    assert_eq!(
        run(&["-o", "slab_automove=0"])
            .unwrap()
            .slab_policy_spec()
            .to_string(),
        "memcached"
    );
    assert_eq!(
        run(&["-o", "slab_automove=1,slab_automove_window=10"])
            .unwrap()
            .slab_policy_spec()
            .to_string(),
        "automove:window=10,ratio=0.8"
    );
    assert_eq!(
        run(&["-o", "no_modern"])
            .unwrap()
            .slab_policy_spec()
            .to_string(),
        "memcached"
    );
    assert_eq!(
        run(&[
            "-o",
            "slab_automove=2,memory_layout=slab",
            "--slab-policy",
            "psa:misses=50"
        ])
        .unwrap()
        .slab_policy_spec()
        .to_string(),
        "psa:misses=50"
    );
    assert!(err(&["--slab-policy", "lru"]).contains("--slab-policy"));
    assert!(err(&["--slab-policy", "lama-mr:movs=3"]).contains("`movs`"));
}

/// Writes `text` to a fresh file under the target's temp dir and returns its path.
fn temp_file(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("mrcached-settings-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn auth_file_and_tenant_config() {
    let auth = temp_file("auth", "alice:secret\nbob:pw\n");
    let s = run(&["-Y", &auth]).unwrap();
    let names: Vec<&str> = s.tenants.tenants.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["alice", "bob"]);
    assert!(s.tenants.auth_required());
    let conf = temp_file(
        "tenants.toml",
        "[[tenant]]\nname = \"alice\"\nreserved = \"1MiB\"\n[[tenant]]\nname = \"p\"\nprefix = \"p:\"\nport = 11300\n",
    );
    let s = run(&["-Y", &auth, "--config", &conf]).unwrap();
    assert_eq!(s.tenants.tenants.len(), 3);
    assert_eq!(s.tenants.tenants[0].password.as_deref(), Some("secret"));
    assert!(s
        .describe()
        .iter()
        .any(|(k, v)| *k == "tenants" && v == "alice,p,bob"));
}

#[test]
fn bad_tenant_files_name_the_flag_and_the_problem() {
    let bad = temp_file("bad.toml", "[[tenant]]\nname = \"a\"\nwieght = 2\n");
    let e = err(&["--config", &bad]);
    assert!(e.starts_with("--config:") && e.contains("wieght"), "{e}");
    let e = err(&["-Y", &temp_file("bad-auth", "nocolon\n")]);
    assert!(
        e.starts_with("-Y/--auth-file:") && e.contains("malformed"),
        "{e}"
    );
    assert!(err(&["-Y", "/nonexistent/auth"]).contains("/nonexistent/auth"));
    let clash = temp_file("clash.toml", "[[tenant]]\nname = \"a\"\nport = 11211\n");
    assert!(err(&["--config", &clash]).contains("main port"));
    // A `-l host:port` names a main port too.
    let on_listen = temp_file("clash-l.toml", "[[tenant]]\nname = \"a\"\nport = 4000\n");
    let e = err(&["-l", "127.0.0.1:4000", "--config", &on_listen]);
    assert!(e.contains("port 4000 is the main port"), "{e}");
    // Reserves above -m.
    let reserves = temp_file(
        "reserves.toml",
        "[[tenant]]\nname = \"a\"\nreserved = \"48m\"\n[[tenant]]\nname = \"b\"\nreserved = \"17m\"\n",
    );
    let e = err(&["-m", "64", "--config", &reserves]);
    assert!(
        e.starts_with("--config:") && e.contains("reserves sum to 68157440 bytes"),
        "{e}"
    );
    assert!(run(&["-m", "65", "--config", &reserves]).is_ok());
}

#[test]
fn the_prefix_delimiter_is_the_first_byte_of_d() {
    assert_eq!(run(&[]).unwrap().prefix_delimiter, b':');
    assert_eq!(run(&["-D", "/x"]).unwrap().prefix_delimiter, b'/');
}

#[test]
fn tenant_memory_is_off_without_tenants_and_mpart_with_them() {
    let s = run(&[]).unwrap();
    assert_eq!(s.tenant_pools(), 1);
    assert_eq!(s.tenant_policy_spec(), None);
    assert_eq!(crate::memory::describe_spec(None), "none");
    let e = s.engine_config();
    assert_eq!((e.tenant_pools, e.shadow_queue_bytes), (1, None));
    assert!(s
        .describe()
        .iter()
        .any(|(k, v)| *k == "tenant_policy" && v == "none"));

    let auth = temp_file("memory-auth", "alice:a\nbob:b\n");
    let s = run(&["-Y", &auth]).unwrap();
    assert_eq!(s.tenant_pools(), crate::memory::MIN_TENANT_POOLS);
    assert_eq!(
        s.tenant_policy_spec().map(|p| p.to_string()).as_deref(),
        Some("mpart")
    );
    assert!(
        crate::memory::describe_spec(s.tenant_policy_spec().as_ref())
            .starts_with("mpart:interval=")
    );
    assert_eq!(s.engine_config().tenant_pools, s.tenant_pools());
    assert_eq!(s.engine_config().shadow_queue_bytes, None);

    // The file names one; the flag overrides it; Memshare's shadow queues size the engine's.
    let conf = temp_file(
        "memory.toml",
        "tenant_policy = \"static\"\n[[tenant]]\nname = \"p\"\nprefix = \"p:\"\n",
    );
    let s = run(&["--config", &conf]).unwrap();
    assert_eq!(
        s.tenant_policy_spec().map(|p| p.to_string()).as_deref(),
        Some("static")
    );
    let s = run(&["--config", &conf, "--tenant-policy", "memshare"]).unwrap();
    assert_eq!(
        s.tenant_policy_spec().map(|p| p.to_string()).as_deref(),
        Some("memshare")
    );
    assert!(s.engine_config().shadow_queue_bytes.is_some());
    // A tenant policy alone turns pools on (for tenants a reload will add).
    assert!(run(&["--tenant-policy", "static"]).unwrap().tenant_pools() > 1);
}

#[test]
fn tenant_policy_errors_name_the_flag_or_the_key() {
    let e = err(&["--tenant-policy", "fair"]);
    assert!(
        e.starts_with("--tenant-policy:") && e.contains("unknown tenant arbiter `fair`"),
        "{e}"
    );
    assert!(err(&["--tenant-policy", "mpart:stepp=1"]).contains("`stepp`"));
    let bad = temp_file("bad-policy.toml", "tenant_policy = \"fair\"\n");
    let e = err(&["--config", &bad]);
    assert!(
        e.starts_with("--config:") && e.contains("tenant_policy") && e.contains("`fair`"),
        "{e}"
    );
    // Curves need the profilers.
    let auth = temp_file("curves-auth", "alice:a\n");
    let e = err(&["-Y", &auth, "-o", "mrc_sample_rate=0"]);
    assert!(
        e.contains("mrc_sample_rate=0") && e.contains("mpart"),
        "{e}"
    );
    assert!(run(&[
        "-Y",
        &auth,
        "-o",
        "mrc_sample_rate=0",
        "--tenant-policy",
        "static"
    ])
    .is_ok());
    assert!(
        run(&["-o", "mrc_sample_rate=0"]).is_ok(),
        "no tenants, no arbiter"
    );
}

#[test]
fn help_explains_the_tenant_arbiters() {
    let Command::Print(help) = Settings::parse_from(["mrcached", "-h"]).unwrap() else {
        panic!("-h prints help");
    };
    for name in mrcache_policy::tenant::NAMES {
        assert!(help.contains(name), "{name} in {help}");
    }
    assert!(help.contains("--tenant-policy"));
}

#[test]
fn invalid_policy_specs_are_refused_once_with_their_reason() {
    let refused = |args: &[&str]| run(args).expect_err("should fail");
    let e = refused(&["--slab-policy", "psa:misses=x"]);
    assert!(
        matches!(&e, SettingsError::Policy { flag: "--slab-policy", error: mrcache_policy::SpecError::BadValue { key, .. } } if key == "misses"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "--slab-policy: slab policy `psa`: bad value `x` for `misses`"
    );
    let e = refused(&["--tenant-policy", "lama-qos:margin=1"]);
    assert!(
        matches!(
            &e,
            SettingsError::Policy {
                flag: "--tenant-policy",
                error: mrcache_policy::SpecError::Invalid { .. }
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "--tenant-policy: tenant arbiter `lama-qos`: need 0 <= margin < 1"
    );
    let bad = temp_file("bad-spec.toml", "tenant_policy = \"mpart:step=0\"\n");
    let e = refused(&["--config", &bad]);
    let SettingsError::Tenants {
        flag: "--config",
        error: crate::tenants::ConfigError::InFile { error, .. },
    } = &e
    else {
        panic!("{e:?}");
    };
    assert!(matches!(**error, crate::tenants::ConfigError::Toml(_)));
    assert!(
        e.to_string()
            .contains("step=0 is not auto or a positive number of pages"),
        "{e}"
    );
    // A valid spec is kept as given (in the policy's parameter order) and printed the same way.
    let s = run(&[
        "-o",
        "memory_layout=slab",
        "--slab-policy",
        "lama-art:hit_us=50",
        "--tenant-policy",
        "static:interval=10",
    ])
    .unwrap();
    assert_eq!(s.slab_policy_spec().to_string(), "lama-art:hit_us=50");
    assert!(s
        .describe()
        .contains(&("slab_policy", "lama-art:hit_us=50".to_string())));
    assert_eq!(
        s.tenant_policy.map(|p| p.to_string()).as_deref(),
        Some("static:interval=10")
    );
}

#[test]
fn sizes_take_every_unit_spelling() {
    for (m, bytes) in [
        ("64", 64u64 << 20),
        ("64m", 64 << 20),
        ("64MiB", 64 << 20),
        ("65536k", 64 << 20),
        ("1g", 1 << 30),
        ("1GB", 1 << 30),
    ] {
        assert_eq!(run(&["-m", m]).unwrap().memory_limit_bytes, bytes, "-m {m}");
    }
    for (i, bytes) in [
        ("1024", 1024usize),
        ("2k", 2 << 10),
        ("1m", 1 << 20),
        ("1M", 1 << 20),
        ("2MiB", 2 << 20),
    ] {
        assert_eq!(
            run(&["-I", i]).unwrap().item_size_max_bytes,
            bytes,
            "-I {i}"
        );
    }
    assert!(matches!(
        run(&["-m", "0"]),
        Err(SettingsError::Flag {
            flag: "-m/--memory-limit",
            ..
        })
    ));
    assert_eq!(
        err(&["-m", "1.5g"]),
        "-m/--memory-limit: cannot parse '1.5g' as megabytes"
    );
    assert_eq!(err(&["-I", "1x"]), "-I/--max-item-size: cannot parse '1x'");
    assert_eq!(
        err(&["-I", "512"]),
        "-I/--max-item-size: cannot be less than 1024 bytes"
    );
    assert_eq!(
        err(&["-m", "8192", "-I", "2g"]),
        "-I/--max-item-size: cannot be larger than 1024 megabytes"
    );
}

#[test]
fn memory_file_is_the_warm_restart_file() {
    assert_eq!(run(&[]).unwrap().memory_file, None);
    let s = run(&["-e", "/tmp/cache"]).unwrap();
    assert_eq!(
        s.memory_file.as_deref(),
        Some(std::path::Path::new("/tmp/cache"))
    );
    assert!(s
        .describe()
        .iter()
        .any(|(k, v)| *k == "memory_file" && v == "/tmp/cache"));
    let s = run(&["--memory-file=/tmp/other"]).unwrap();
    assert_eq!(
        s.memory_file.as_deref(),
        Some(std::path::Path::new("/tmp/other"))
    );
    let Command::Print(help) = Settings::parse_from(["mrcached", "-h"]).unwrap() else {
        panic!("-h prints")
    };
    assert!(help.contains("--memory-file <FILE>") && help.contains("shutdown graceful"));
    assert!(!help.contains("-e (restartable cache)"));
}

#[test]
fn protocol_and_sasl_follow_memcached_rules() {
    use super::Protocol::*;
    let auth = temp_file("sasl-auth", "alice:secret\n");
    assert_eq!(run(&[]).unwrap().protocol, Auto);
    assert_eq!(run(&["-B", "binary"]).unwrap().protocol, Binary);
    assert_eq!(run(&["-B", "ascii"]).unwrap().protocol, Ascii);
    // -Y alone: text only, as memcached; -B binary with it needs -S.
    assert_eq!(run(&["-Y", &auth]).unwrap().protocol, Ascii);
    assert!(err(&["-Y", &auth, "-B", "binary"]).contains("-S"));
    // -S alone: binary only; -B auto is our superset; -B ascii is refused as memcached refuses it.
    let s = run(&["-S", "-Y", &auth]).unwrap();
    assert_eq!((s.protocol, s.sasl), (Binary, true));
    assert_eq!(
        run(&["-S", "-B", "auto", "-Y", &auth]).unwrap().protocol,
        Auto
    );
    assert!(err(&["-S", "-B", "ascii", "-Y", &auth]).contains("-B"));
    // -S without any password to check.
    let e = err(&["-S"]);
    assert!(e.contains("-S") && e.contains("-Y"), "{e}");
    let help = match Settings::parse_from(["mrcached", "-h"]) {
        Ok(Command::Print(text)) => text,
        other => panic!("{other:?}"),
    };
    assert!(
        help.contains("--enable-sasl") && help.contains("binary"),
        "{help}"
    );
}

#[test]
fn isolation_options_parse_and_name_themselves() {
    use crate::isolation::{allowed_cpus, SchedPolicy, ServiceCpus};
    let first = allowed_cpus().unwrap().cpus()[0];
    let s = run(&[
        "-o",
        &format!("worker_cpus={first},sched=fifo:20,service_cpus=any"),
    ])
    .unwrap();
    assert_eq!(s.isolation.worker_cpus.unwrap().cpus(), &[first]);
    assert_eq!(s.isolation.sched, SchedPolicy::Fifo(20));
    assert_eq!(s.isolation.service_cpus, ServiceCpus::Any);
    // A comma inside the list continues it (no option name starts with a digit).
    let all = allowed_cpus().unwrap();
    let list = all.to_string();
    let s = run(&[
        "-o",
        &format!("slab_reassign,worker_cpus={list},lru_crawler"),
    ])
    .unwrap();
    assert_eq!(s.isolation.worker_cpus.as_ref(), Some(&all));
    let d = Settings::default();
    assert_eq!(d.isolation.sched, SchedPolicy::Inherit);
    assert!(d.describe().contains(&("sched", "inherit".to_string())));
    assert!(err(&["-o", "worker_cpus=1-0"]).starts_with("-o worker_cpus: "));
    assert!(err(&["-o", "worker_cpus"]).starts_with("-o worker_cpus: needs a value"));
    assert!(err(&["-o", "service_cpus=4096"]).starts_with("-o service_cpus: "));
    assert!(err(&["-o", "sched=deadline"]).starts_with("-o sched: "));
}

#[test]
fn memory_layout_option_picks_the_engine_layout() {
    use mrcache_engine::MemoryLayout;
    assert_eq!(
        run(&[]).unwrap().engine_config().memory_layout,
        MemoryLayout::Log
    );
    let s = run(&["-o", "memory_layout=slab"]).unwrap();
    assert_eq!(s.memory_layout, MemoryLayout::Slab);
    assert_eq!(s.engine_config().memory_layout, MemoryLayout::Slab);
    assert!(s
        .describe()
        .iter()
        .any(|(k, v)| *k == "memory_layout" && v == "slab"));
    assert!(err(&["-o", "memory_layout=heap"]).contains("slab or log"));
    assert!(err(&["-o", "memory_layout"]).contains("needs a value"));
    let help = match Settings::parse_from(["mrcached", "-h"]).unwrap() {
        Command::Print(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(help.contains("memory_layout"));
}

mod options;

#[test]
fn options_of_one_layout_are_refused_under_the_other() {
    for opt in [
        "log_probation=0.1",
        "log_choose=density/clock+p",
        "log_ranking=clock",
    ] {
        let e = err(&["-o", "memory_layout=slab", "-o", opt]);
        assert!(
            e.contains("applies to -o memory_layout=log only"),
            "{opt}: {e}"
        );
    }
    // And the slab policies under the log, while memcached's slab options start, named in a notice.
    let e = err(&["--slab-policy", "lama-mr"]);
    assert!(
        e.starts_with("--slab-policy: applies to -o memory_layout=slab only"),
        "{e}"
    );
    assert!(run(&["-o", "memory_layout=slab", "--slab-policy", "lama-mr"]).is_ok());
    let s = run(&["-f", "1.5", "-o", "slab_automove=2,slab_chunk_max=262144"]).unwrap();
    assert_eq!(
        s.slab_options_without_effect(),
        ["-f", "-o slab_automove", "-o slab_chunk_max"]
    );
    let s = run(&["-f", "1.5", "-o", "memory_layout=slab,slab_automove=2"]).unwrap();
    assert!(s.slab_options_without_effect().is_empty());
    assert!(s.notices().is_empty());
    // TLS options without -Z, and ssl_wbuf_size under it, are accepted and named too.
    let s = run(&["-o", "ssl_chain_cert=/etc/cert.pem"]).unwrap();
    assert_eq!(s.notices(), ["-o ssl_* (TLS is off without -Z): no effect"]);
    let s = run(&["-o", "memory_layout=slab,ssl_wbuf_size=32"]).unwrap();
    assert_eq!(s.notices(), ["-o ssl_* (TLS is off without -Z): no effect"]);
    let mut tls = crate::settings::tls::TlsSettings {
        enabled: true,
        wbuf_bytes: 32 * 1024,
        ..Default::default()
    };
    assert_eq!(
        tls.without_effect(),
        ["ssl_wbuf_size (rustls bounds its own buffers)"]
    );
    tls.wbuf_bytes = crate::settings::tls::DEFAULT_SSL_WBUF_BYTES;
    assert!(tls.without_effect().is_empty());
    let e = err(&["-M", "-o", "memory_layout=log,log_probation=0.1"]);
    assert!(e.contains("-o log_probation") && e.contains("-M"), "{e}");
    let s = run(&[
        "-o",
        "memory_layout=log,log_choose=density/clock+p,log_probation=0.2",
    ])
    .unwrap();
    assert_eq!(s.log_choose.len(), 2);
    assert_eq!(s.log_probation, 0.2);
}
