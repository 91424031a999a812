//! The `stats` families against memcached 1.6.18's names and order, and `/metrics` against `stats`.

use super::*;
use crate::settings::Settings;
use mrcache_engine::{Engine, ItemAccounting, MemoryLayout, StoreArgs};

fn ctx() -> ServerContext {
    ctx_with(Settings::default())
}

fn ctx_with(settings: Settings) -> ServerContext {
    let engine = Engine::new(settings.engine_config()).unwrap();
    ServerContext::new(engine, settings, 2)
}

/// The default settings in `layout`.
fn in_layout(layout: mrcache_engine::MemoryLayout) -> Settings {
    Settings {
        memory_layout: layout,
        ..Settings::default()
    }
}

/// The default settings in memcached's slab layout, for the figures of its slab classes.
fn slab() -> Settings {
    in_layout(mrcache_engine::MemoryLayout::Slab)
}

/// A server whose `--config` is `toml`.
fn ctx_with_tenants(toml: &str) -> ServerContext {
    ctx_with_tenants_in(Settings::default(), toml)
}

/// A server with `settings` whose `--config` is `toml`.
fn ctx_with_tenants_in(settings: Settings, toml: &str) -> ServerContext {
    let config = crate::tenants::TenantsConfig::merge(
        crate::tenants::config::parse_config(toml).unwrap(),
        Vec::new(),
    )
    .unwrap();
    ctx_with(Settings {
        tenants: config,
        ..settings
    })
}

fn names(out: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(out).unwrap();
    assert!(text.ends_with("END\r\n"), "{text}");
    text.lines()
        .filter_map(|l| l.strip_prefix("STAT "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

fn value(out: &[u8], name: &str) -> String {
    let text = std::str::from_utf8(out).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("STAT {name} ")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .to_string()
}

/// memcached 1.6.18's `stats` names, in its order (measured on Debian 1.6.18).
const MEMCACHED_GENERAL: &str = "pid uptime time version libevent pointer_size rusage_user rusage_system \
    max_connections curr_connections total_connections rejected_connections connection_structures \
    response_obj_oom response_obj_count response_obj_bytes read_buf_count read_buf_bytes \
    read_buf_bytes_free read_buf_oom reserved_fds cmd_get cmd_set cmd_flush cmd_touch cmd_meta get_hits \
    get_misses get_expired get_flushed delete_misses delete_hits incr_misses incr_hits decr_misses \
    decr_hits cas_misses cas_hits cas_badval touch_hits touch_misses store_too_large store_no_memory \
    auth_cmds auth_errors bytes_read bytes_written limit_maxbytes accepting_conns listen_disabled_num \
    time_in_listen_disabled_us threads conn_yields hash_power_level hash_bytes hash_is_expanding \
    slab_reassign_rescues slab_reassign_chunk_rescues slab_reassign_evictions_nomem \
    slab_reassign_inline_reclaim slab_reassign_busy_items slab_reassign_busy_deletes \
    slab_reassign_running slabs_moved lru_crawler_running lru_crawler_starts lru_maintainer_juggles \
    malloc_fails log_worker_dropped log_worker_written log_watcher_skipped log_watcher_sent \
    log_watchers unexpected_napi_ids round_robin_fallback bytes curr_items total_items \
    slab_global_page_pool expired_unfetched evicted_unfetched evicted_active evictions reclaimed \
    crawler_reclaimed crawler_items_checked lrutail_reflocked moves_to_cold moves_to_warm \
    moves_within_lru direct_reclaims lru_bumps_dropped";

/// memcached prints `idle_kicks` after `auth_errors` only while `-o idle_timeout` is not 0 (even
/// below 0, which closes nothing); `stats reset` zeroes it.
#[test]
fn idle_kicks_is_shown_only_with_an_idle_timeout() {
    let mut out = Vec::new();
    general(&ctx(), &mut out);
    assert!(!names(&out).contains(&"idle_kicks".to_string()));
    for timeout in [5, -3] {
        let ctx = ctx_with(Settings {
            idle_timeout_secs: timeout,
            ..Settings::default()
        });
        ctx.conns.idle_kicks.store(4, Relaxed);
        let mut out = Vec::new();
        general(&ctx, &mut out);
        let names = names(&out);
        let at = names.iter().position(|n| n == "idle_kicks").unwrap();
        assert_eq!(
            (names[at - 1].as_str(), names[at + 1].as_str()),
            ("auth_errors", "bytes_read")
        );
        assert_eq!(value(&out, "idle_kicks"), "4");
        reset(&ctx);
        let mut out = Vec::new();
        general(&ctx, &mut out);
        assert_eq!(value(&out, "idle_kicks"), "0");
    }
}

#[test]
fn general_has_memcached_names_in_order() {
    let ctx = ctx();
    let mut out = Vec::new();
    general(&ctx, &mut out);
    let ours: Vec<String> = names(&out)
        .into_iter()
        .filter(|n| {
            n != "mrcached_version"
                && !n.starts_with("slab_policy_")
                && n != "tenant_arbiter_rounds"
                && !n.starts_with("restart_items_")
                && !n.starts_with("partial_value_")
                && !n.starts_with("log_cleaner_")
                && !n.starts_with("log_policy")
                && !n.starts_with("shard_lock_")
        })
        .collect();
    let theirs: Vec<&str> = MEMCACHED_GENERAL
        .split_whitespace()
        .filter(|n| *n != "libevent")
        .collect();
    assert_eq!(ours, theirs);
    assert_eq!(value(&out, "version"), "1.6.18");
    assert_eq!(value(&out, "limit_maxbytes"), "67108864");
    assert_eq!(value(&out, "threads"), "2");
}

/// The log layout's cleaner shows its work in `stats`: stores past `-m` make it run; slab reports 0.
#[test]
fn log_cleaner_work_is_a_general_figure() {
    for (layout, cleans) in [(MemoryLayout::Log, true), (MemoryLayout::Slab, false)] {
        let ctx = ctx_with(Settings {
            memory_limit_bytes: 4 << 20,
            memory_layout: layout,
            ..Settings::default()
        });
        let clock = ctx.clock();
        let value = vec![b'v'; 200];
        for i in 0..100_000 {
            let key = format!("key{i}");
            let key = mrcache_engine::Key::default_tenant(key.as_bytes());
            ctx.engine.store(&StoreArgs::set(key, &value), clock);
        }
        let mut out = Vec::new();
        general(&ctx, &mut out);
        let passes: u64 = value_of(&out, "log_cleaner_passes");
        let bytes: u64 = value_of(&out, "log_cleaner_bytes");
        assert_eq!(passes > 0, cleans, "{layout:?}: {passes} passes");
        assert_eq!(bytes > 0, cleans, "{layout:?}: {bytes} bytes");
    }
}

fn value_of(out: &[u8], name: &str) -> u64 {
    value(out, name).parse().unwrap()
}

#[test]
fn settings_start_like_memcached() {
    let ctx = ctx();
    let mut out = Vec::new();
    settings(&ctx, &mut out);
    let n = names(&out);
    let head =
        "maxbytes maxconns tcpport udpport inter verbosity oldest evictions domain_socket umask \
        shutdown_command growth_factor chunk_size num_threads num_threads_per_udp stat_key_prefix \
        detail_enabled reqs_per_event cas_enabled tcp_backlog binding_protocol auth_enabled_sasl \
        auth_enabled_ascii item_size_max maxconns_fast hashpower_init slab_reassign slab_automove \
        slab_automove_ratio slab_automove_window slab_chunk_max lru_crawler";
    let head: Vec<&str> = head.split_whitespace().collect();
    assert_eq!(&n[..head.len()], &head[..]);
    assert_eq!(value(&out, "maxbytes"), "67108864");
    assert_eq!(value(&out, "slab_automove_ratio"), "0.80");
    assert_eq!(value(&out, "growth_factor"), "1.25");
    assert_eq!(value(&out, "slab_chunk_max"), "524288");
    assert_eq!(value(&out, "binding_protocol"), "auto-negotiate");
    assert_eq!(value(&out, "evictions"), "on");
}

#[test]
fn slabs_and_items_after_one_set() {
    // memcached's figures under its accounting (as `-o item_accounting=memcached`); compact accounts
    // the 28 bytes the item occupies, in the 80-byte class 1.
    for (accounting, chunk, per_page, bytes) in [
        (ItemAccounting::Memcached, "96", "10922", "61"),
        (ItemAccounting::Compact, "80", "13107", "30"),
    ] {
        slabs_and_items_after_one_set_under(accounting, chunk, per_page, bytes);
    }
}

#[test]
fn slabs_under_the_log_show_one_class_whose_pages_are_segments() {
    let ctx = ctx();
    assert_eq!(
        ctx.engine.memory_layout(),
        mrcache_engine::MemoryLayout::Log
    );
    let clock = ctx.clock();
    for (key, len) in [("a", 1), ("b", 5000)] {
        let value = vec![b'x'; len];
        let key = mrcache_engine::Key::default_tenant(key.as_bytes());
        ctx.engine.store(&StoreArgs::set(key, &value), clock);
    }
    let mut out = Vec::new();
    slabs(&ctx, &mut out);
    assert_eq!(value(&out, "1:used_chunks"), "2");
    assert_eq!(value(&out, "1:total_pages"), "1");
    assert_eq!(value(&out, "active_slabs"), "1");
    assert_eq!(value(&out, "total_malloced"), "1048576");
    assert!(
        !names(&out).iter().any(|n| n.starts_with("2:")),
        "one class"
    );
    let mut out = Vec::new();
    items(&ctx, &mut out);
    assert_eq!(value(&out, "items:1:number"), "2");
}

fn slabs_and_items_after_one_set_under(
    accounting: ItemAccounting,
    chunk: &str,
    per_page: &str,
    bytes: &str,
) {
    let ctx = ctx_with(Settings {
        item_accounting: accounting,
        ..slab()
    });
    let clock = ctx.clock();
    ctx.engine.store(
        &StoreArgs::set(mrcache_engine::Key::default_tenant(b"a"), b"x"),
        clock,
    );
    let mut out = Vec::new();
    slabs(&ctx, &mut out);
    assert_eq!(value(&out, "1:chunk_size"), chunk);
    assert_eq!(value(&out, "1:chunks_per_page"), per_page);
    assert_eq!(value(&out, "1:used_chunks"), "1");
    assert_eq!(value(&out, "active_slabs"), "1");
    assert_eq!(value(&out, "total_malloced"), "1048576");
    assert_eq!(
        names(&out)[..3],
        ["1:chunk_size", "1:chunks_per_page", "1:total_pages"]
    );

    let mut out = Vec::new();
    items(&ctx, &mut out);
    assert_eq!(value(&out, "items:1:number"), "1");
    assert_eq!(value(&out, "items:1:mem_requested"), bytes);
    assert_eq!(names(&out).len(), 28);

    let mut out = Vec::new();
    general(&ctx, &mut out);
    assert_eq!(value(&out, "curr_items"), "1");
    assert_eq!(value(&out, "bytes"), bytes);
    reset(&ctx);
    let mut out = Vec::new();
    general(&ctx, &mut out);
    assert_eq!(value(&out, "cmd_set"), "0");
    assert_eq!(value(&out, "curr_items"), "1", "reset keeps items");
}

#[test]
fn tenants_report_their_pools() {
    let server =
        ctx_with_tenants("[[tenant]]\nname = \"a\"\nreserved = \"3MiB\"\nmax = \"9MiB\"\n");
    let memory = crate::memory::MemoryModel::new(&server);
    let mut out = Vec::new();
    tenants(&server, None, &mut out);
    assert_eq!(value(&out, "tenant:a:pool"), "1");
    assert_eq!(value(&out, "tenant:a:reserved_pages"), "3");
    assert_eq!(value(&out, "tenant:a:max_pages"), "9");
    assert_eq!(value(&out, "tenant:a:pages"), "0");
    assert_eq!(value(&out, "tenant:a:shadow_hits"), "0");
    assert_eq!(value(&out, "tenant:default:max_pages"), "0", "no cap");
    let targets: usize = ["default", "a"]
        .iter()
        .map(|t| {
            value(&out, &format!("tenant:{t}:target_pages"))
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(targets, 64);
    let mut out = Vec::new();
    settings(&server, &mut out);
    assert_eq!(
        value(&out, "tenant_policy"),
        crate::memory::describe(memory.arbitration())
    );
    let mut out = Vec::new();
    general(&server, &mut out);
    assert_eq!(value(&out, "tenant_arbiter_rounds"), "0");

    // Without tenants: one pool, which the default tenant's row shows.
    let ctx = ctx();
    let mut out = Vec::new();
    tenants(&ctx, None, &mut out);
    assert_eq!(value(&out, "tenant:default:pool"), "0");
    assert_eq!(value(&out, "tenant:default:target_pages"), "0");
    let mut out = Vec::new();
    settings(&ctx, &mut out);
    assert_eq!(value(&out, "tenant_policy"), "none");
}

#[test]
fn sizes_disabled_and_conns_empty() {
    let ctx = ctx();
    let mut out = Vec::new();
    sizes(&ctx, &mut out);
    assert_eq!(out, b"STAT sizes_status disabled\r\nEND\r\n");
    let mut out = Vec::new();
    conns(&ctx, None, &mut out);
    assert_eq!(out, b"END\r\n");
}

mod metrics;

#[test]
fn tenant_miss_entropy_spreads_with_the_classes_missed() {
    let ctx = ctx_with(slab());
    let entropy = |ctx: &ServerContext| {
        let mut out = Vec::new();
        tenants(ctx, None, &mut out);
        value(&out, "tenant:default:miss_entropy")
            .parse::<f64>()
            .unwrap()
    };
    assert_eq!(entropy(&ctx), 0.0, "no misses yet");
    let clock = ctx.clock();
    let set = |key: String, bytes: usize| {
        ctx.engine.store(
            &StoreArgs::set(
                mrcache_engine::Key::default_tenant(key.as_bytes()),
                &vec![b'v'; bytes],
            ),
            clock,
        );
    };
    // Four new keys in one class: one class holds every miss.
    for i in 0..4 {
        set(format!("small{i}"), 10);
    }
    assert_eq!(entropy(&ctx), 0.0);
    // Four more in a much larger class: misses split evenly over two classes, one bit.
    for i in 0..4 {
        set(format!("large{i}"), 5000);
    }
    assert!((entropy(&ctx) - 1.0).abs() < 1e-9, "{}", entropy(&ctx));
    // Overwriting a key is not a miss.
    set("large0".to_string(), 5000);
    assert!((entropy(&ctx) - 1.0).abs() < 1e-9);
}
mod pinned;
