//! `stats settings`: the effective configuration under memcached's names, in memcached 1.6.18's order
//! (the build-dependent extstore and TLS groups are left out, as in a memcached built without them),
//! then ours. Settings are configuration, not measurements, so they are not in the metrics registry.

use std::sync::atomic::Ordering::Relaxed;

use super::stat;
use crate::context::ServerContext;

/// memcached's default `slab_chunk_max` is half a page.
const SLAB_CHUNK_MAX_DIVISOR: usize = 2;

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// `stats settings`: the effective configuration under memcached's names (the build-dependent extstore
/// and TLS groups are left out, as in a memcached built without them), then ours.
pub(crate) fn settings(ctx: &ServerContext, out: &mut Vec<u8>) {
    let s = &ctx.settings;
    let e = ctx.engine.stats(ctx.clock());
    let inter = if s.listen.is_empty() {
        "NULL".to_string()
    } else {
        s.listen
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    stat(
        out,
        "maxbytes",
        e.page_limit as u64 * e.page_size_bytes as u64,
    );
    stat(out, "maxconns", s.max_connections);
    stat(out, "tcpport", s.port);
    stat(out, "udpport", 0);
    stat(out, "inter", inter);
    stat(out, "verbosity", ctx.verbosity.load(Relaxed));
    stat(out, "oldest", 0);
    stat(out, "evictions", on_off(s.evict_when_full));
    stat(out, "domain_socket", "NULL");
    stat(out, "umask", 700);
    stat(out, "shutdown_command", yes_no(s.shutdown_enabled));
    stat(out, "growth_factor", format!("{:.2}", s.growth_factor));
    stat(out, "chunk_size", s.min_chunk_data_bytes);
    stat(out, "num_threads", s.threads);
    stat(out, "num_threads_per_udp", s.threads);
    stat(out, "stat_key_prefix", char::from(s.prefix_delimiter));
    stat(out, "detail_enabled", yes_no(ctx.detail.enabled()));
    stat(out, "reqs_per_event", s.reqs_per_event);
    stat(out, "cas_enabled", yes_no(s.use_cas));
    stat(out, "tcp_backlog", s.listen_backlog);
    stat(out, "binding_protocol", s.protocol.stats_name());
    stat(out, "auth_enabled_sasl", yes_no(s.sasl));
    // memcached prints the -Y path; a config that sets passwords turns auth on too.
    let auth = match (&ctx.settings.auth_file, &ctx.settings.config_file) {
        (Some(path), _) => path.display().to_string(),
        (None, Some(path)) if ctx.tenants.current().auth_required() => path.display().to_string(),
        _ => "no".to_string(),
    };
    stat(out, "auth_enabled_ascii", auth);
    stat(out, "item_size_max", s.item_size_max_bytes);
    stat(out, "maxconns_fast", "yes");
    stat(out, "hashpower_init", s.hashpower_init);
    stat(out, "slab_reassign", yes_no(s.slab_reassign));
    stat(out, "slab_automove", ctx.automove_mode.load(Relaxed));
    stat(
        out,
        "slab_automove_ratio",
        format!("{:.2}", ctx.automove_ratio()),
    );
    stat(out, "slab_automove_window", s.slab_automove_window);
    stat(
        out,
        "slab_chunk_max",
        s.page_size_bytes() / SLAB_CHUNK_MAX_DIVISOR,
    );
    stat(out, "lru_crawler", yes_no(ctx.crawler.enabled()));
    stat(out, "lru_crawler_sleep", ctx.crawler.sleep_us());
    stat(out, "lru_crawler_tocrawl", ctx.crawler.tocrawl());
    stat(out, "tail_repair_time", 0);
    stat(out, "flush_enabled", yes_no(s.flush_enabled));
    stat(out, "dump_enabled", yes_no(s.dump_enabled));
    stat(out, "hash_algorithm", "xxh3");
    stat(out, "lru_maintainer_thread", "yes");
    stat(out, "lru_segmented", "no");
    stat(out, "hot_lru_pct", 20);
    stat(out, "warm_lru_pct", 40);
    stat(out, "hot_max_factor", "0.20");
    stat(out, "warm_max_factor", "2.00");
    stat(out, "temp_lru", "no");
    stat(out, "temporary_ttl", 61);
    stat(out, "idle_timeout", 0);
    stat(out, "watcher_logbuf_size", 262144);
    stat(out, "worker_logbuf_size", 65536);
    stat(out, "read_buf_mem_limit", 0);
    stat(out, "track_sizes", "no");
    stat(out, "inline_ascii_response", "no");
    stat(out, "num_napi_ids", "(null)");
    // memcached prints `(null)` without `-e`.
    match &s.memory_file {
        Some(path) => stat(out, "memory_file", path.display()),
        None => stat(out, "memory_file", "(null)"),
    }
    stat(out, "shards", ctx.engine.shard_count());
    // The path the workers run (`-o io=auto` resolved); the same probe result the server started with.
    let io = crate::net::resolve_io(s.io).map_or("unavailable", |b| b.name());
    stat(out, "io", io);
    stat(out, "slab_policy", ctx.slab_policy());
    stat(
        out,
        "item_accounting",
        ctx.engine.config().item_accounting.name(),
    );
    stat(out, "memory_layout", ctx.engine.memory_layout().name());
    stat(
        out,
        "tenant_policy",
        ctx.tenant_policy
            .lock()
            .map_or_else(|e| e.into_inner().clone(), |s| s.clone()),
    );
    super::end(out);
}
