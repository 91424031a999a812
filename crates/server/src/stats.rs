//! The `stats` families: memcached 1.6.18's names, in memcached's order, from the engine's snapshot, the
//! workers' `ThreadStats`, the connection counters and registry, and the settings.
//!
//! Each function appends `STAT <name> <value>\r\n` lines and `END\r\n` to `out`; dispatch calls them for
//! `stats`, `stats settings`, `stats items`, `stats slabs`, `stats sizes` and `stats conns`, and calls
//! [`reset`] for `stats reset`. Figures our design does not have (memcached's segmented LRU, hash table
//! expansion, logger, extstore) are printed with the value memcached shows when the feature is idle, so
//! tools that expect the names keep working; `number_cold`/`age` carry our one-LRU-per-class figures, as
//! memcached does in flat LRU mode. Nothing here runs on the request path of other commands.

use std::fmt::Display;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};

use mrcache_engine::{EngineStats, TenantCounters, TenantId, UNLIMITED};

use crate::context::ServerContext;
use crate::settings::{MEMCACHED_COMPAT_VERSION, MRCACHED_VERSION};

/// memcached's initial hash table (`hashpower` 16): reported for tools that read `hash_power_level`; our
/// per-shard index sizes itself.
const REPORTED_HASH_POWER: u32 = 16;
/// memcached reserves this many descriptors beyond `-c` (`reserved_fds`); reported as memcached does.
const REPORTED_RESERVED_FDS: u32 = 20;
/// memcached's default `slab_chunk_max` is half a page.
const SLAB_CHUNK_MAX_DIVISOR: usize = 2;

fn stat(out: &mut Vec<u8>, name: &str, value: impl Display) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "STAT {name} {value}\r\n");
}

fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"END\r\n");
}

fn sum_threads(
    ctx: &ServerContext,
    counter: impl Fn(&crate::context::ThreadStats) -> &AtomicU64,
) -> u64 {
    ctx.thread_stats
        .iter()
        .map(|t| counter(t).load(Relaxed))
        .sum()
}

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

/// Process CPU time (user, system) in seconds with microseconds, as memcached prints it.
fn rusage() -> (String, String) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `struct rusage` into the pointer we pass, which points to a zeroed,
    // properly aligned `libc::rusage` that lives for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return ("0.000000".into(), "0.000000".into());
    }
    // SAFETY: getrusage returned 0, so it filled the struct (and it was zero-initialised anyway).
    let ru = unsafe { ru.assume_init() };
    let fmt = |t: libc::timeval| format!("{}.{:06}", t.tv_sec, t.tv_usec);
    (fmt(ru.ru_utime), fmt(ru.ru_stime))
}

/// One tenant as `stats tenants` and `/metrics` report it.
pub struct TenantRow {
    pub id: TenantId,
    pub name: String,
    /// Whether the configuration in force names it (a removed tenant keeps its items until they go).
    pub configured: bool,
    pub counters: TenantCounters,
    pub reserved_bytes: u64,
    /// 0: no limit.
    pub max_bytes: u64,
    /// 0: no target.
    pub target_hit_ratio: f64,
    pub weight: f64,
    /// The pool it stores into now: its own, or 0 when it has none (more tenants than pools, or the
    /// `pooled` arbiter).
    pub pool: usize,
    /// Its own pool's pages, target, reserve and cap (0 when it has no pool of its own; target and cap
    /// are also 0 when none is set).
    pub pages: usize,
    pub target_pages: usize,
    pub reserved_pages: usize,
    pub max_pages: usize,
}

/// Every tenant ever known (or only `only`), by id: configuration in force and engine counters.
pub fn tenant_rows(ctx: &ServerContext, only: Option<TenantId>) -> Vec<TenantRow> {
    let stats = ctx.engine.stats(ctx.clock());
    let table = ctx.tenants.current();
    let engine = &ctx.engine;
    let limit = |pages: usize| if pages == UNLIMITED { 0 } else { pages };
    ctx.tenants
        .known()
        .into_iter()
        .filter(|(id, _)| only.is_none_or(|o| o == *id))
        .map(|(id, name)| {
            let spec = table.spec(id);
            let own = (id.index() < engine.pool_count()).then(|| engine.pool(id.index()));
            TenantRow {
                id,
                configured: spec.is_some() || id == TenantId::DEFAULT,
                counters: stats.tenant(id),
                reserved_bytes: spec.map_or(0, |s| s.reserved_bytes),
                max_bytes: spec.and_then(|s| s.max_bytes).unwrap_or(0),
                target_hit_ratio: spec.and_then(|s| s.target_hit_ratio).unwrap_or(0.0),
                weight: spec.map_or(crate::tenants::config::DEFAULT_WEIGHT, |s| s.weight),
                pool: engine.pool_of(id),
                pages: own.map_or(0, |p| p.held),
                target_pages: own.map_or(0, |p| limit(p.target)),
                reserved_pages: own.map_or(0, |p| p.reserved),
                max_pages: own.map_or(0, |p| limit(p.max)),
                name,
            }
        })
        .collect()
}

/// `stats tenants`: `STAT tenant:<name>:<field> <value>` for every tenant (a connection that is one
/// tenant sees only itself). `max` and `target_hit_ratio` are 0 when not set. The memory it holds, in
/// pages: `pool` (the pool it stores into), and its own pool's `pages`, `target_pages` (the arbiter's),
/// `reserved_pages` and `max_pages` (0: none), as in [`TenantRow`]; `shadow_hits` counts its GET
/// misses on recently evicted keys (Memshare's shadow queues; 0 without them).
pub fn tenants(ctx: &ServerContext, only: Option<TenantId>, out: &mut Vec<u8>) {
    for row in tenant_rows(ctx, only) {
        let n = &row.name;
        let c = &row.counters;
        stat(out, &format!("tenant:{n}:id"), row.id.0);
        stat(
            out,
            &format!("tenant:{n}:configured"),
            u8::from(row.configured),
        );
        stat(out, &format!("tenant:{n}:items"), c.items);
        stat(out, &format!("tenant:{n}:bytes"), c.bytes);
        stat(out, &format!("tenant:{n}:get_hits"), c.get_hits);
        stat(out, &format!("tenant:{n}:get_misses"), c.get_misses);
        stat(out, &format!("tenant:{n}:cmd_set"), c.set_cmds);
        stat(out, &format!("tenant:{n}:reserved"), row.reserved_bytes);
        stat(out, &format!("tenant:{n}:max"), row.max_bytes);
        stat(
            out,
            &format!("tenant:{n}:target_hit_ratio"),
            row.target_hit_ratio,
        );
        stat(out, &format!("tenant:{n}:weight"), row.weight);
        stat(out, &format!("tenant:{n}:pool"), row.pool);
        stat(out, &format!("tenant:{n}:pages"), row.pages);
        stat(out, &format!("tenant:{n}:target_pages"), row.target_pages);
        stat(
            out,
            &format!("tenant:{n}:reserved_pages"),
            row.reserved_pages,
        );
        stat(out, &format!("tenant:{n}:max_pages"), row.max_pages);
        stat(out, &format!("tenant:{n}:shadow_hits"), c.shadow_hits);
    }
    end(out);
}

/// `stats`: the general figures.
pub fn general(ctx: &ServerContext, out: &mut Vec<u8>) {
    let e = ctx.engine.stats(ctx.clock());
    let classes = e.class_totals();
    let g = &e.counters;
    let conns = &ctx.conns;
    let registry = ctx.connections.snapshot();
    let (read_buf_bytes, write_buf_bytes) = registry.iter().fold((0usize, 0usize), |(r, w), c| {
        (r + c.read_buf_bytes(), w + c.write_buf_bytes())
    });
    let (user, system) = rusage();
    let m = &ctx.maintenance;
    let load = |a: &AtomicU64| a.load(Relaxed);
    let loadu = |a: &AtomicUsize| a.load(Relaxed);

    stat(out, "pid", std::process::id());
    stat(out, "uptime", ctx.uptime_secs());
    stat(out, "time", ctx.unix_now());
    stat(out, "version", MEMCACHED_COMPAT_VERSION);
    stat(out, "mrcached_version", MRCACHED_VERSION);
    stat(out, "pointer_size", usize::BITS);
    stat(out, "rusage_user", user);
    stat(out, "rusage_system", system);
    stat(out, "max_connections", ctx.settings.max_connections);
    stat(out, "curr_connections", loadu(&conns.curr_connections));
    stat(out, "total_connections", load(&conns.total_connections));
    stat(
        out,
        "rejected_connections",
        load(&conns.rejected_connections),
    );
    stat(
        out,
        "connection_structures",
        loadu(&conns.connection_structures),
    );
    stat(out, "response_obj_oom", 0);
    stat(out, "response_obj_count", registry.len());
    stat(out, "response_obj_bytes", write_buf_bytes);
    stat(
        out,
        "read_buf_count",
        registry.iter().filter(|c| c.read_buf_bytes() > 0).count(),
    );
    stat(out, "read_buf_bytes", read_buf_bytes);
    stat(out, "read_buf_bytes_free", 0);
    stat(out, "read_buf_oom", 0);
    stat(out, "reserved_fds", REPORTED_RESERVED_FDS);
    stat(out, "cmd_get", g.get_cmds);
    stat(out, "cmd_set", classes.set_cmds);
    stat(out, "cmd_flush", sum_threads(ctx, |t| &t.cmd_flush));
    stat(out, "cmd_touch", g.touch_cmds);
    stat(out, "cmd_meta", sum_threads(ctx, |t| &t.cmd_meta));
    stat(out, "get_hits", classes.get_hits);
    stat(out, "get_misses", g.get_misses);
    stat(out, "get_expired", g.get_expired);
    stat(out, "get_flushed", g.get_flushed);
    stat(out, "delete_misses", g.delete_misses);
    stat(out, "delete_hits", classes.delete_hits);
    stat(out, "incr_misses", g.incr_misses);
    stat(out, "incr_hits", classes.incr_hits);
    stat(out, "decr_misses", g.decr_misses);
    stat(out, "decr_hits", classes.decr_hits);
    stat(out, "cas_misses", g.cas_misses);
    stat(out, "cas_hits", classes.cas_hits);
    stat(out, "cas_badval", classes.cas_badval);
    stat(out, "touch_hits", classes.touch_hits);
    stat(out, "touch_misses", g.touch_misses);
    stat(
        out,
        "store_too_large",
        sum_threads(ctx, |t| &t.store_too_large),
    );
    stat(
        out,
        "store_no_memory",
        sum_threads(ctx, |t| &t.store_no_memory),
    );
    stat(out, "auth_cmds", sum_threads(ctx, |t| &t.auth_cmds));
    stat(out, "auth_errors", sum_threads(ctx, |t| &t.auth_errors));
    stat(out, "bytes_read", sum_threads(ctx, |t| &t.bytes_read));
    stat(out, "bytes_written", sum_threads(ctx, |t| &t.bytes_written));
    stat(
        out,
        "limit_maxbytes",
        e.page_limit as u64 * e.page_size_bytes as u64,
    );
    stat(out, "accepting_conns", 1);
    stat(out, "listen_disabled_num", load(&conns.listen_disabled_num));
    stat(out, "time_in_listen_disabled_us", 0);
    stat(out, "threads", ctx.thread_stats.len());
    stat(out, "conn_yields", sum_threads(ctx, |t| &t.conn_yields));
    stat(out, "hash_power_level", REPORTED_HASH_POWER);
    stat(out, "hash_bytes", (1u64 << REPORTED_HASH_POWER) * 8);
    stat(out, "hash_is_expanding", 0);
    stat(out, "slab_reassign_rescues", classes.moves_rescued);
    stat(out, "slab_reassign_chunk_rescues", 0);
    stat(out, "slab_reassign_evictions_nomem", classes.moves_evicted);
    stat(out, "slab_reassign_inline_reclaim", 0);
    stat(out, "slab_reassign_busy_items", 0);
    stat(out, "slab_reassign_busy_deletes", 0);
    stat(out, "slab_reassign_running", 0);
    stat(out, "slabs_moved", g.slabs_moved);
    stat(out, "lru_crawler_running", 0);
    stat(out, "lru_crawler_starts", load(&m.reaper_starts));
    stat(out, "lru_maintainer_juggles", load(&m.runs));
    stat(out, "malloc_fails", 0);
    stat(out, "log_worker_dropped", 0);
    stat(out, "log_worker_written", 0);
    stat(out, "log_watcher_skipped", 0);
    stat(out, "log_watcher_sent", 0);
    stat(out, "log_watchers", 0);
    stat(out, "unexpected_napi_ids", 0);
    stat(out, "round_robin_fallback", 0);
    stat(out, "bytes", e.bytes);
    stat(out, "curr_items", e.curr_items);
    stat(out, "total_items", g.total_items);
    stat(out, "slab_global_page_pool", 0);
    stat(out, "expired_unfetched", classes.expired_unfetched);
    stat(out, "evicted_unfetched", classes.evicted_unfetched);
    stat(out, "evicted_active", 0);
    stat(out, "evictions", classes.evicted);
    stat(out, "reclaimed", classes.reclaimed);
    stat(out, "crawler_reclaimed", g.expired_reaped);
    stat(out, "crawler_items_checked", 0);
    stat(out, "lrutail_reflocked", 0);
    stat(out, "moves_to_cold", 0);
    stat(out, "moves_to_warm", 0);
    stat(out, "moves_within_lru", 0);
    stat(out, "direct_reclaims", 0);
    stat(out, "lru_bumps_dropped", 0);
    // mrcached's slab policy (after memcached's names, so clients that parse those see them unchanged).
    stat(out, "slab_policy_rounds", load(&m.policy_rounds));
    stat(out, "slab_policy_pages_moved", load(&m.automove_moves));
    let ratio = |bits: &std::sync::atomic::AtomicU64| {
        let v = f64::from_bits(bits.load(Relaxed));
        if v.is_nan() {
            "none".to_string()
        } else {
            format!("{v:.4}")
        }
    };
    stat(
        out,
        "slab_policy_predicted_miss_ratio",
        ratio(&m.policy_predicted_bits),
    );
    stat(
        out,
        "slab_policy_observed_miss_ratio",
        ratio(&m.policy_observed_bits),
    );
    stat(out, "tenant_arbiter_rounds", load(&m.arbiter_rounds));
    end(out);
}

/// `stats settings`: the effective configuration under memcached's names (the build-dependent extstore
/// and TLS groups are left out, as in a memcached built without them), then ours.
pub fn settings(ctx: &ServerContext, out: &mut Vec<u8>) {
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
    stat(out, "stat_key_prefix", ":");
    stat(out, "detail_enabled", "no");
    stat(out, "reqs_per_event", s.reqs_per_event);
    stat(out, "cas_enabled", yes_no(s.use_cas));
    stat(out, "tcp_backlog", s.listen_backlog);
    stat(out, "binding_protocol", s.protocol.stats_name());
    stat(out, "auth_enabled_sasl", "no");
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
    stat(out, "lru_crawler", yes_no(s.lru_crawler));
    stat(out, "lru_crawler_sleep", 100);
    stat(out, "lru_crawler_tocrawl", 0);
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
    stat(out, "memory_file", "(null)");
    stat(out, "shards", ctx.engine.shard_count());
    stat(out, "slab_policy", ctx.slab_policy());
    stat(
        out,
        "item_accounting",
        ctx.engine.config().item_accounting.name(),
    );
    stat(
        out,
        "tenant_policy",
        ctx.tenant_policy
            .lock()
            .map_or_else(|e| e.into_inner().clone(), |s| s.clone()),
    );
    end(out);
}

/// `stats items`: per class that holds items, memcached's `items:<cls>:<name>` figures.
pub fn items(ctx: &ServerContext, out: &mut Vec<u8>) {
    let e = ctx.engine.stats(ctx.clock());
    for c in e.classes.iter().filter(|c| c.items > 0) {
        let id = c.class.0;
        let k = &c.counters;
        let mut s = |name: &str, v: &dyn Display| stat(out, &format!("items:{id}:{name}"), v);
        s("number", &c.items);
        s("number_hot", &0);
        s("number_warm", &0);
        s("number_cold", &c.items);
        s("age_hot", &0);
        s("age_warm", &0);
        s("age", &c.tail_age_secs);
        s("mem_requested", &c.requested_bytes);
        s("evicted", &k.evicted);
        s("evicted_nonzero", &k.evicted_nonzero);
        s("evicted_time", &k.evicted_time);
        s("outofmemory", &k.outofmemory);
        s("tailrepairs", &0);
        s("reclaimed", &k.reclaimed);
        s("expired_unfetched", &k.expired_unfetched);
        s("evicted_unfetched", &k.evicted_unfetched);
        s("evicted_active", &0);
        s("crawler_reclaimed", &0);
        s("crawler_items_checked", &0);
        s("lrutail_reflocked", &0);
        s("moves_to_cold", &0);
        s("moves_to_warm", &0);
        s("moves_within_lru", &0);
        s("direct_reclaims", &0);
        s("hits_to_hot", &0);
        s("hits_to_warm", &0);
        s("hits_to_cold", &k.get_hits);
        s("hits_to_temp", &0);
    }
    end(out);
}

/// `stats slabs`: per class with pages, memcached's `<cls>:<name>` figures, then the totals.
pub fn slabs(ctx: &ServerContext, out: &mut Vec<u8>) {
    let e = ctx.engine.stats(ctx.clock());
    write_slabs(&e, out);
}

fn write_slabs(e: &EngineStats, out: &mut Vec<u8>) {
    let mut active = 0;
    let mut malloced: u64 = 0;
    for c in e.classes.iter().filter(|c| c.total_pages > 0) {
        active += 1;
        malloced += c.total_pages as u64 * e.page_size_bytes as u64;
        let id = c.class.0;
        let k = &c.counters;
        let mut s = |name: &str, v: &dyn Display| stat(out, &format!("{id}:{name}"), v);
        s("chunk_size", &c.chunk_size_bytes);
        s("chunks_per_page", &c.chunks_per_page);
        s("total_pages", &c.total_pages);
        s("total_chunks", &(c.total_pages * c.chunks_per_page));
        s("used_chunks", &c.used_chunks);
        s("free_chunks", &c.free_chunks);
        s("free_chunks_end", &0);
        s("get_hits", &k.get_hits);
        s("cmd_set", &k.set_cmds);
        s("delete_hits", &k.delete_hits);
        s("incr_hits", &k.incr_hits);
        s("decr_hits", &k.decr_hits);
        s("cas_hits", &k.cas_hits);
        s("cas_badval", &k.cas_badval);
        s("touch_hits", &k.touch_hits);
    }
    stat(out, "active_slabs", active);
    stat(out, "total_malloced", malloced);
    end(out);
}

/// `stats sizes`: memcached needs `-o track_sizes` for this histogram; we do not keep it.
pub fn sizes(_ctx: &ServerContext, out: &mut Vec<u8>) {
    stat(out, "sizes_status", "disabled");
    end(out);
}

/// memcached's address form in `stats conns`: `tcp:1.2.3.4:5` or `tcp6:[::1]:5`.
fn conn_addr(a: &SocketAddr) -> String {
    match a {
        SocketAddr::V4(_) => format!("tcp:{a}"),
        SocketAddr::V6(_) => format!("tcp6:{a}"),
    }
}

/// `stats conns`: every listening socket and client connection, keyed by file descriptor.
pub fn conns(ctx: &ServerContext, out: &mut Vec<u8>) {
    let now = ctx.clock().now;
    enum Row<'a> {
        Listener(&'a crate::net::registry::ListenerInfo),
        Client(std::sync::Arc<crate::net::registry::ConnInfo>),
    }
    let mut rows: Vec<(i32, Row<'_>)> = Vec::new();
    if let Some(ls) = ctx.listeners.get() {
        rows.extend(ls.iter().map(|l| (l.fd, Row::Listener(l))));
    }
    rows.extend(
        ctx.connections
            .snapshot()
            .into_iter()
            .map(|c| (c.fd, Row::Client(c))),
    );
    rows.sort_by_key(|r| r.0);
    for (fd, row) in rows {
        match row {
            Row::Listener(l) => {
                stat(out, &format!("{fd}:addr"), conn_addr(&l.addr));
                stat(out, &format!("{fd}:state"), "conn_listening");
                stat(out, &format!("{fd}:secs_since_last_cmd"), 0);
            }
            Row::Client(c) => {
                stat(out, &format!("{fd}:addr"), conn_addr(&c.peer));
                stat(out, &format!("{fd}:listen_addr"), conn_addr(&c.local));
                stat(out, &format!("{fd}:state"), c.state().name());
                stat(
                    out,
                    &format!("{fd}:secs_since_last_cmd"),
                    now.saturating_sub(c.last_cmd_secs()),
                );
            }
        }
    }
    end(out);
}

/// `stats reset`: zeroes the engine's counters, the workers' counters and the connection totals (not
/// the current figures). Workers update their counters without atomic read-modify-write, so an increment
/// racing with the reset may survive it; memcached has the same property.
pub fn reset(ctx: &ServerContext) {
    ctx.engine.reset_stats();
    for t in &ctx.thread_stats {
        for c in [
            &t.bytes_read,
            &t.bytes_written,
            &t.cmd_flush,
            &t.cmd_meta,
            &t.cmd_touch,
            &t.store_too_large,
            &t.store_no_memory,
            &t.conn_yields,
            &t.auth_cmds,
            &t.auth_errors,
        ] {
            c.store(0, Relaxed);
        }
    }
    ctx.conns.total_connections.store(0, Relaxed);
    ctx.conns.rejected_connections.store(0, Relaxed);
    ctx.conns.listen_disabled_num.store(0, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;
    use mrcache_engine::{Engine, ItemAccounting, StoreArgs};

    fn ctx() -> ServerContext {
        ctx_with(Settings::default())
    }

    fn ctx_with(settings: Settings) -> ServerContext {
        let engine = Engine::new(settings.engine_config()).unwrap();
        ServerContext::new(engine, settings, 2)
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

    #[test]
    fn settings_start_like_memcached() {
        let ctx = ctx();
        let mut out = Vec::new();
        settings(&ctx, &mut out);
        let n = names(&out);
        let head = "maxbytes maxconns tcpport udpport inter verbosity oldest evictions domain_socket umask \
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

    fn slabs_and_items_after_one_set_under(
        accounting: ItemAccounting,
        chunk: &str,
        per_page: &str,
        bytes: &str,
    ) {
        let ctx = ctx_with(Settings {
            item_accounting: accounting,
            ..Settings::default()
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
        let config = crate::tenants::TenantsConfig::merge(
            crate::tenants::config::parse_config(
                "[[tenant]]\nname = \"a\"\nreserved = \"3MiB\"\nmax = \"9MiB\"\n",
            )
            .unwrap(),
            Vec::new(),
        )
        .unwrap();
        let server = ctx_with(Settings {
            tenants: config,
            ..Settings::default()
        });
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
        conns(&ctx, &mut out);
        assert_eq!(out, b"END\r\n");
    }
}
