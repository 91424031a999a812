//! `stats` (the general family) and the global `/metrics` series: the [`GENERAL`] table over a
//! [`General`] snapshot, in memcached 1.6.18's order, then ours (`mrcached_version`, the slab policy's
//! and tenant arbiter's figures, the warm restart's `restart_items_*`, the budget for values still
//! arriving `partial_value_*`) and the `/metrics`-only series.
//!
//! The snapshot is taken once per request from the engine, the workers' counters, the connection
//! counters and registry, the maintenance thread's counters and the process; each figure reads one
//! field of it.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};

use mrcache_engine::{ClassCounters, EngineStats};
use mrcache_policy::class::MoveRule;

use super::registry::{counter, fixed, gauge, info, metrics_gauge, Figure, Value};
use crate::context::{ServerContext, ThreadStats};
use crate::settings::{MEMCACHED_COMPAT_VERSION, MRCACHED_VERSION};

/// memcached's initial hash table (`hashpower` 16): reported for tools that read `hash_power_level`; our
/// per-shard index sizes itself.
const REPORTED_HASH_POWER: u32 = 16;
/// memcached's `hash_bytes` for that table: one 8-byte bucket pointer per bucket.
const REPORTED_HASH_BYTES: u64 = (1 << REPORTED_HASH_POWER) * 8;
/// memcached reserves this many descriptors beyond `-c` (`reserved_fds`); reported as memcached does.
const REPORTED_RESERVED_FDS: u64 = 20;

/// Why a constant is constant (the help text of [`Kind::Fixed`](super::registry::Kind) figures).
const NO_RESPONSE_OBJECTS: &str = "memcached's response-object and read-buffer pools: our buffers \
                                   are per connection and bounded, never out of memory";
const ALWAYS_ACCEPTING: &str = "memcached stops accepting at -c; we refuse the connection instead";
const NO_HASH_EXPANSION: &str = "memcached's global hash table; our per-shard index sizes itself";
const NO_CHUNKED_ITEMS: &str = "memcached's chunked items and inline reclaim during slab moves";
const PAGE_MOVES_ARE_INLINE: &str = "a page move runs to completion under its shard lock";
const NO_MALLOC: &str = "every page is counted against -m up front";
const NO_LOG_WORKER_BUFFER: &str =
    "memcached's per-thread log buffers; lines go straight to each watcher's bounded buffer";
const NO_NAPI: &str = "memcached's NAPI-id thread placement";
const NO_GLOBAL_PAGE_POOL: &str = "free pages stay with their pool; none are parked globally";
const NO_SEGMENTED_LRU: &str = "memcached's segmented LRU; we keep one exact LRU per class";

/// Process CPU time (user, system) in microseconds.
fn rusage_micros() -> (u64, u64) {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a `struct rusage` into the pointer we pass, which points to a zeroed,
    // properly aligned `libc::rusage` that lives for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, ru.as_mut_ptr()) };
    if rc != 0 {
        return (0, 0);
    }
    // SAFETY: getrusage returned 0, so it filled the struct (and it was zero-initialised anyway).
    let ru = unsafe { ru.assume_init() };
    let micros = |t: libc::timeval| t.tv_sec.max(0) as u64 * 1_000_000 + t.tv_usec.max(0) as u64;
    (micros(ru.ru_utime), micros(ru.ru_stime))
}

/// The workers' counters, summed.
#[derive(Debug, Default)]
pub(crate) struct ThreadTotals {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub cmd_flush: u64,
    pub cmd_meta: u64,
    pub store_too_large: u64,
    pub store_no_memory: u64,
    pub conn_yields: u64,
    pub auth_cmds: u64,
    pub auth_errors: u64,
}

impl ThreadTotals {
    fn sum<'a>(
        threads: impl Iterator<Item = &'a std::sync::Arc<ThreadStats>> + Clone,
    ) -> ThreadTotals {
        let sum = |counter: fn(&ThreadStats) -> &AtomicU64| -> u64 {
            threads.clone().map(|t| counter(t).load(Relaxed)).sum()
        };
        ThreadTotals {
            bytes_read: sum(|t| &t.bytes_read),
            bytes_written: sum(|t| &t.bytes_written),
            cmd_flush: sum(|t| &t.cmd_flush),
            cmd_meta: sum(|t| &t.cmd_meta),
            store_too_large: sum(|t| &t.store_too_large),
            store_no_memory: sum(|t| &t.store_no_memory),
            conn_yields: sum(|t| &t.conn_yields),
            auth_cmds: sum(|t| &t.auth_cmds),
            auth_errors: sum(|t| &t.auth_errors),
        }
    }
}

/// Everything the general figures read, taken at one moment.
pub(crate) struct General {
    pub pid: u32,
    pub uptime_secs: u64,
    pub unix_time: i64,
    pub rusage_user_micros: u64,
    pub rusage_system_micros: u64,
    pub max_connections: usize,
    pub worker_threads: usize,
    pub curr_connections: usize,
    pub total_connections: u64,
    pub rejected_connections: u64,
    pub connection_structures: usize,
    pub listen_disabled: u64,
    /// `-o idle_timeout` is not 0 (memcached then prints `idle_kicks`), and the connections it closed.
    pub idle_timeout_set: bool,
    pub idle_kicks: u64,
    /// Open client connections (each has one output buffer) and the bytes their buffers hold.
    pub open_connections: usize,
    pub write_buf_bytes: usize,
    pub read_buf_count: usize,
    pub read_buf_bytes: usize,
    pub threads: ThreadTotals,
    pub engine: EngineStats,
    /// The engine's per-class counters, summed.
    pub classes: ClassCounters,
    pub profiler_memory_bytes: usize,
    pub maintainer_runs: u64,
    pub reaper_starts: u64,
    /// The LRU crawler: whether a job holds it, and crawls and metadumps started.
    pub crawler_running: bool,
    pub crawler_starts: u64,
    pub policy_rounds: u64,
    pub policy_pages_moved: u64,
    /// Pages the policy granted that their receivers have not yet taken (lama's `pace=true`).
    pub policy_pages_granted: usize,
    /// Pages moved by each `MoveRule`, in `MoveRule::ALL` order.
    pub policy_moves_by_rule: [u64; MoveRule::ALL.len()],
    pub predicted_miss_ratio: Option<f64>,
    pub observed_miss_ratio: Option<f64>,
    pub arbiter_rounds: u64,
    /// What the warm restart at start-up loaded (all 0 without `-e` or without a saved cache).
    pub restart: crate::restart::RestoreReport,
    /// The engine's shard locks, all shards together: waits, and the longest wait and hold.
    pub locks: mrcache_engine::LockStats,
    /// TLS (`-Z`): on, failed handshakes, seconds since the certificates were loaded.
    pub tls_enabled: bool,
    pub tls_handshake_errors: u64,
    pub tls_secs_since_refresh: u32,
    /// The budget for partly received values (`session/partial.rs`): bytes, bytes held, stores refused.
    pub partial_value_limit: usize,
    pub partial_value_bytes: usize,
    pub partial_value_refused: u64,
    /// The log bus (`watch`): lines written, skipped and sent, and watchers now.
    pub log_written: u64,
    pub log_skipped: u64,
    pub log_sent: u64,
    pub log_watchers: u32,
    /// The log layout's cleaner: bytes of survivors it copied and passes it ran since start (0 under
    /// slab).
    pub cleaner_bytes: u64,
    pub cleaner_passes: u64,
    /// The log layout's eviction policy (the chooser's, `-o log_choose`, or the configured one) and
    /// the chooser's switches since start; `None` under slab.
    pub log_policy: Option<(String, u64)>,
}

impl General {
    pub(crate) fn take(ctx: &ServerContext) -> General {
        let engine = ctx.engine.stats(ctx.clock());
        let registry = ctx.connections.snapshot();
        let (rusage_user_micros, rusage_system_micros) = rusage_micros();
        let (cleaner_bytes, cleaner_passes) = ctx.engine.cleaner_work();
        let m = &ctx.maintenance;
        let load = |a: &AtomicU64| a.load(Relaxed);
        let loadu = |a: &AtomicUsize| a.load(Relaxed);
        let ratio =
            |bits: &AtomicU64| Some(f64::from_bits(bits.load(Relaxed))).filter(|v| !v.is_nan());
        General {
            pid: std::process::id(),
            uptime_secs: ctx.uptime_secs(),
            unix_time: ctx.unix_now(),
            rusage_user_micros,
            rusage_system_micros,
            max_connections: ctx.settings.max_connections,
            worker_threads: ctx.thread_stats.len(),
            curr_connections: loadu(&ctx.conns.curr_connections),
            total_connections: load(&ctx.conns.total_connections),
            rejected_connections: load(&ctx.conns.rejected_connections),
            connection_structures: loadu(&ctx.conns.connection_structures),
            listen_disabled: load(&ctx.conns.listen_disabled_num),
            idle_timeout_set: ctx.settings.idle_timeout_secs != 0,
            idle_kicks: load(&ctx.conns.idle_kicks),
            open_connections: registry.len(),
            write_buf_bytes: registry.iter().map(|c| c.write_buf_bytes()).sum(),
            read_buf_count: registry.iter().filter(|c| c.read_buf_bytes() > 0).count(),
            read_buf_bytes: registry.iter().map(|c| c.read_buf_bytes()).sum(),
            threads: ThreadTotals::sum(ctx.all_thread_stats()),
            classes: engine.class_totals(),
            engine,
            profiler_memory_bytes: ctx.engine.profile_memory_bytes(),
            maintainer_runs: load(&m.runs),
            reaper_starts: load(&m.reaper_starts),
            crawler_running: ctx.crawler.is_running(),
            crawler_starts: ctx.crawler.starts(),
            policy_rounds: load(&m.policy_rounds),
            policy_pages_moved: load(&m.automove_moves),
            policy_pages_granted: ctx.engine.pages_granted(),
            policy_moves_by_rule: m.policy_moves_by_rule.each_ref().map(load),
            predicted_miss_ratio: ratio(&m.policy_predicted_bits),
            observed_miss_ratio: ratio(&m.policy_observed_bits),
            arbiter_rounds: load(&m.arbiter_rounds),
            restart: ctx.restart.get().cloned().unwrap_or_default(),
            locks: mrcache_engine::LockStats::combine(ctx.engine.lock_stats()),
            tls_enabled: ctx.tls.get().is_some(),
            tls_handshake_errors: ctx.tls.get().map_or(0, |t| t.handshake_errors()),
            tls_secs_since_refresh: ctx
                .tls
                .get()
                .map_or(0, |t| t.secs_since_refresh(ctx.clock().now)),
            partial_value_limit: ctx.partial_values.limit(),
            partial_value_bytes: ctx.partial_values.in_use(),
            partial_value_refused: ctx.partial_values.refused(),
            log_written: load(&ctx.log.counters().written),
            log_skipped: load(&ctx.log.counters().skipped),
            log_sent: load(&ctx.log.counters().sent),
            log_watchers: ctx.log.watchers(),
            cleaner_bytes,
            cleaner_passes,
            log_policy: match ctx.engine.chooser_report() {
                Some(r) => Some((r.current.name(), r.switches)),
                None => {
                    (ctx.engine.memory_layout() == mrcache_engine::MemoryLayout::Log).then(|| {
                        let c = ctx.engine.config();
                        let policy = mrcache_engine::LogPolicy {
                            ranking: c.log_ranking,
                            probation: c.log_probation,
                        };
                        (policy.name(), 0)
                    })
                }
            },
        }
    }

    fn limit_bytes(&self) -> u64 {
        self.engine.page_limit as u64 * self.engine.page_size_bytes as u64
    }
}

/// The general figures: memcached 1.6.18's `stats` (less `libevent`), then ours, then `/metrics` only.
#[rustfmt::skip]
pub(crate) const GENERAL: &[Figure<General>] = &[
    info("pid", "pid", "Process id.", |s| s.pid.into()),
    gauge("uptime", "uptime_seconds", "Seconds since the server started.", |s| s.uptime_secs.into()),
    gauge("time", "time_seconds", "The server's Unix time.", |s| s.unix_time.into()),
    info("version", "version", "The memcached version whose protocol mrcached speaks.", |_| Value::Text(MEMCACHED_COMPAT_VERSION.into())),
    info("mrcached_version", "mrcached_version", "mrcached's own version.", |_| Value::Text(MRCACHED_VERSION.into())),
    info("pointer_size", "pointer_size", "Bits in a pointer.", |_| usize::BITS.into()),
    counter("rusage_user", "rusage_user_seconds_total", "CPU time in user mode.", |s| Value::Micros(s.rusage_user_micros)),
    counter("rusage_system", "rusage_system_seconds_total", "CPU time in the kernel.", |s| Value::Micros(s.rusage_system_micros)),
    gauge("max_connections", "max_connections", "Client connections allowed at once (-c).", |s| s.max_connections.into()),
    gauge("curr_connections", "curr_connections", "Client connections open now.", |s| s.curr_connections.into()),
    counter("total_connections", "connections_total", "Client connections accepted.", |s| s.total_connections.into()),
    counter("rejected_connections", "rejected_connections_total", "Connections refused at the -c limit.",
        |s| s.rejected_connections.into()),
    gauge("connection_structures", "connection_structures", "Connection slots allocated.", |s| s.connection_structures.into()),
    fixed("response_obj_oom", 0, NO_RESPONSE_OBJECTS),
    gauge("response_obj_count", "response_objects", "Output buffers (one per open connection).", |s| s.open_connections.into()),
    gauge("response_obj_bytes", "response_obj_bytes", "Bytes held by output buffers.", |s| s.write_buf_bytes.into()),
    gauge("read_buf_count", "read_buffers", "Connections holding unprocessed input.", |s| s.read_buf_count.into()),
    gauge("read_buf_bytes", "read_buf_bytes", "Bytes held by input buffers.", |s| s.read_buf_bytes.into()),
    fixed("read_buf_bytes_free", 0, NO_RESPONSE_OBJECTS),
    fixed("read_buf_oom", 0, NO_RESPONSE_OBJECTS),
    fixed("reserved_fds", REPORTED_RESERVED_FDS, "memcached's descriptors kept beyond -c, reported as it does"),
    counter("cmd_get", "cmd_get_total", "Keys looked up by GET-type commands.", |s| s.engine.counters.get_cmds.into()),
    counter("cmd_set", "cmd_set_total", "Storage commands that reached the engine.", |s| s.classes.set_cmds.into()),
    counter("cmd_flush", "cmd_flush_total", "flush_all commands.", |s| s.threads.cmd_flush.into()),
    counter("cmd_touch", "cmd_touch_total", "Keys touched (touch, gat, gats).", |s| s.engine.counters.touch_cmds.into()),
    counter("cmd_meta", "cmd_meta_total", "Meta commands (mg, ms, md, ma, mn, me).", |s| s.threads.cmd_meta.into()),
    counter("get_hits", "get_hits_total", "GET-type lookups that found the item.", |s| s.classes.get_hits.into()),
    counter("get_misses", "get_misses_total", "GET-type lookups that found nothing.", |s| s.engine.counters.get_misses.into()),
    counter("get_expired", "get_expired_total", "GET-type lookups that found an expired item.", |s| s.engine.counters.get_expired.into()),
    counter("get_flushed", "get_flushed_total", "GET-type lookups that found a flushed item.", |s| s.engine.counters.get_flushed.into()),
    counter("delete_misses", "delete_misses_total", "Deletes of keys not present.", |s| s.engine.counters.delete_misses.into()),
    counter("delete_hits", "delete_hits_total", "Deletes that removed an item.", |s| s.classes.delete_hits.into()),
    counter("incr_misses", "incr_misses_total", "Increments of keys not present.", |s| s.engine.counters.incr_misses.into()),
    counter("incr_hits", "incr_hits_total", "Increments that changed an item.", |s| s.classes.incr_hits.into()),
    counter("decr_misses", "decr_misses_total", "Decrements of keys not present.", |s| s.engine.counters.decr_misses.into()),
    counter("decr_hits", "decr_hits_total", "Decrements that changed an item.", |s| s.classes.decr_hits.into()),
    counter("cas_misses", "cas_misses_total", "CAS commands on keys not present.", |s| s.engine.counters.cas_misses.into()),
    counter("cas_hits", "cas_hits_total", "CAS commands that stored.", |s| s.classes.cas_hits.into()),
    counter("cas_badval", "cas_badval_total", "CAS commands refused for a stale CAS value.", |s| s.classes.cas_badval.into()),
    counter("touch_hits", "touch_hits_total", "Touches that found the item.", |s| s.classes.touch_hits.into()),
    counter("touch_misses", "touch_misses_total", "Touches of keys not present.", |s| s.engine.counters.touch_misses.into()),
    counter("store_too_large", "store_too_large_total", "Stores refused as larger than -I.", |s| s.threads.store_too_large.into()),
    counter("store_no_memory", "store_no_memory_total", "Stores refused for lack of memory.", |s| s.threads.store_no_memory.into()),
    counter("auth_cmds", "auth_cmds_total", "Authentication attempts.", |s| s.threads.auth_cmds.into()),
    counter("auth_errors", "auth_errors_total", "Authentication attempts that failed.", |s| s.threads.auth_errors.into()),
    counter("idle_kicks", "idle_kicks_total", "Connections closed for waiting longer than -o idle_timeout.", |s: &General| s.idle_kicks.into())
        .shown_when(|s| s.idle_timeout_set),
    counter("bytes_read", "read_bytes_total", "Bytes read from clients.", |s| s.threads.bytes_read.into()),
    counter("bytes_written", "written_bytes_total", "Bytes written to clients.", |s| s.threads.bytes_written.into()),
    gauge("limit_maxbytes", "limit_max_bytes", "Memory limit for items (-m, or cache_memlimit).", |s| s.limit_bytes().into()),
    fixed("accepting_conns", 1, ALWAYS_ACCEPTING),
    counter("listen_disabled_num", "listen_disabled_total", "Times accepting stopped for lack of descriptors.",
        |s| s.listen_disabled.into()),
    fixed("time_in_listen_disabled_us", 0, ALWAYS_ACCEPTING),
    gauge("threads", "threads", "Worker threads (-t).", |s| s.worker_threads.into()),
    counter("conn_yields", "conn_yields_total", "Times a connection yielded after -R requests.", |s| s.threads.conn_yields.into()),
    fixed("hash_power_level", REPORTED_HASH_POWER as u64, NO_HASH_EXPANSION),
    fixed("hash_bytes", REPORTED_HASH_BYTES, NO_HASH_EXPANSION),
    fixed("hash_is_expanding", 0, NO_HASH_EXPANSION),
    counter("slab_reassign_rescues", "slab_reassign_rescues_total", "Items relocated by page moves.", |s| s.classes.moves_rescued.into()),
    fixed("slab_reassign_chunk_rescues", 0, NO_CHUNKED_ITEMS),
    counter("slab_reassign_evictions_nomem", "slab_reassign_evictions_nomem_total", "Items evicted by page moves.",
        |s| s.classes.moves_evicted.into()),
    fixed("slab_reassign_inline_reclaim", 0, NO_CHUNKED_ITEMS),
    fixed("slab_reassign_busy_items", 0, PAGE_MOVES_ARE_INLINE),
    fixed("slab_reassign_busy_deletes", 0, PAGE_MOVES_ARE_INLINE),
    fixed("slab_reassign_running", 0, PAGE_MOVES_ARE_INLINE),
    counter("slabs_moved", "slabs_moved_total", "Pages moved between slab classes.", |s| s.engine.counters.slabs_moved.into()),
    gauge("lru_crawler_running", "lru_crawler_running", "1 while a crawl or a metadump holds the LRU crawler.",
        |s| u64::from(s.crawler_running).into()),
    counter("lru_crawler_starts", "lru_crawler_starts_total", "Crawls, metadumps and reaper passes started.",
        |s| (s.reaper_starts + s.crawler_starts).into()),
    counter("lru_maintainer_juggles", "lru_maintainer_juggles_total", "Maintenance thread ticks.", |s| s.maintainer_runs.into()),
    fixed("malloc_fails", 0, NO_MALLOC),
    fixed("log_worker_dropped", 0, NO_LOG_WORKER_BUFFER),
    counter("log_worker_written", "log_lines_total", "Log lines emitted to watchers (watch).", |s| s.log_written.into()),
    counter("log_watcher_skipped", "log_watcher_skipped_total", "Log lines a slow watcher missed (its buffer was full).",
        |s| s.log_skipped.into()),
    counter("log_watcher_sent", "log_watcher_sent_total", "Log lines queued to watchers.", |s| s.log_sent.into()),
    gauge("log_watchers", "log_watchers", "Connections watching log streams.", |s| s.log_watchers.into()),
    counter("ssl_handshake_errors", "ssl_handshake_errors_total", "TLS handshakes that failed (-Z).",
        |s: &General| s.tls_handshake_errors.into())
        .shown_when(|s| s.tls_enabled),
    gauge("time_since_server_cert_refresh", "tls_cert_age_seconds",
        "Seconds since the TLS certificates were loaded (start-up or refresh_certs).",
        |s: &General| s.tls_secs_since_refresh.into())
        .shown_when(|s| s.tls_enabled),
    fixed("unexpected_napi_ids", 0, NO_NAPI),
    fixed("round_robin_fallback", 0, NO_NAPI),
    gauge("bytes", "bytes", "Bytes of items under memcached's accounting.", |s| s.engine.bytes.into()),
    gauge("curr_items", "items", "Items stored.", |s| s.engine.curr_items.into()),
    counter("total_items", "items_stored_total", "Items ever stored.", |s| s.engine.counters.total_items.into()),
    fixed("slab_global_page_pool", 0, NO_GLOBAL_PAGE_POOL),
    counter("expired_unfetched", "expired_unfetched_total", "Items reclaimed after expiring unread.",
        |s| s.classes.expired_unfetched.into()),
    counter("evicted_unfetched", "evicted_unfetched_total", "Items evicted unread.", |s| s.classes.evicted_unfetched.into()),
    fixed("evicted_active", 0, NO_SEGMENTED_LRU),
    counter("evictions", "evictions_total", "Live items evicted to make room.", |s| s.classes.evicted.into()),
    counter("reclaimed", "reclaimed_total", "Expired or flushed items whose memory was reused.", |s| s.classes.reclaimed.into()),
    counter("crawler_reclaimed", "crawler_reclaimed_total", "Expired or flushed items the reaper unlinked.",
        |s| s.engine.counters.expired_reaped.into()),
    counter("crawler_items_checked", "crawler_items_checked_total", "Items the reaper (LRU crawler) inspected.",
        |s| s.classes.crawler_items_checked.into()),
    fixed("lrutail_reflocked", 0, NO_SEGMENTED_LRU),
    fixed("moves_to_cold", 0, NO_SEGMENTED_LRU),
    fixed("moves_to_warm", 0, NO_SEGMENTED_LRU),
    fixed("moves_within_lru", 0, NO_SEGMENTED_LRU),
    fixed("direct_reclaims", 0, NO_SEGMENTED_LRU),
    fixed("lru_bumps_dropped", 0, NO_SEGMENTED_LRU),
    // mrcached's own, after memcached's names, so clients that parse those see them unchanged.
    counter("slab_policy_rounds", "slab_policy_rounds_total", "Rounds the slab class policy ran.", |s| s.policy_rounds.into()),
    counter("slab_policy_pages_moved", "slab_policy_pages_moved_total", "Pages the slab class policy moved.",
        |s| s.policy_pages_moved.into()),
    counter("slab_policy_moves_heuristic", "slab_policy_moves_heuristic_total", "Pages moved by a counter-driven heuristic (the baselines).",
        |s| s.policy_moves_by_rule[MoveRule::Heuristic.index()].into()),
    counter("slab_policy_moves_curve", "slab_policy_moves_curve_total", "Pages moved by LAMA's optimisation over trusted curves (granted ones once taken).",
        |s| s.policy_moves_by_rule[MoveRule::Curve.index()].into()),
    counter("slab_policy_moves_idle", "slab_policy_moves_idle_total", "Pages LAMA took from classes idle for a whole window.",
        |s| s.policy_moves_by_rule[MoveRule::Idle.index()].into()),
    counter("slab_policy_moves_risk", "slab_policy_moves_risk_total", "Pages moved by PSA's risk rule where curves were too noisy.",
        |s| s.policy_moves_by_rule[MoveRule::Risk.index()].into()),
    gauge("slab_policy_pages_granted", "slab_policy_pages_granted", "Pages LAMA granted (pace=true) that their receivers have not yet taken.",
        |s| (s.policy_pages_granted as u64).into()),
    gauge("slab_policy_predicted_miss_ratio", "slab_policy_predicted_miss_ratio", "Miss ratio the last curve-driven round predicted (NaN: none yet).",
        |s| Value::Ratio(s.predicted_miss_ratio)),
    gauge("slab_policy_observed_miss_ratio", "slab_policy_observed_miss_ratio", "Miss ratio observed after that round (NaN: none yet).",
        |s| Value::Ratio(s.observed_miss_ratio)),
    counter("tenant_arbiter_rounds", "tenant_arbiter_rounds_total", "Rounds the tenant arbiter ran.", |s| s.arbiter_rounds.into()),
    counter("restart_items_restored", "restart_items_restored_total", "Items the warm restart (-e) loaded at start-up.",
        |s| s.restart.restored.into()),
    counter("restart_items_expired", "restart_items_expired_total", "Saved items whose TTL ran out while the server was down.",
        |s| s.restart.expired.into()),
    counter("restart_items_tenant_dropped", "restart_items_tenant_dropped_total", "Saved items of tenants no longer configured, dropped.",
        |s| s.restart.tenant_dropped.into()),
    counter("restart_items_unstored", "restart_items_unstored_total", "Saved items that did not fit (over -I, or no memory).",
        |s| s.restart.unstored.into()),
    gauge("partial_value_limit", "partial_value_limit_bytes", "Budget for values still arriving, all connections together.",
        |s| (s.partial_value_limit as u64).into()),
    gauge("partial_value_bytes", "partial_value_bytes", "Bytes of that budget held by values still arriving.",
        |s| (s.partial_value_bytes as u64).into()),
    counter("partial_value_refused", "partial_value_refused_total", "Stores refused as out of memory because that budget was spent.",
        |s| s.partial_value_refused.into()),
    counter("log_cleaner_passes", "log_cleaner_passes_total", "Cleaning passes of the log layout (-o memory_layout=log; 0 under slab).",
        |s| s.cleaner_passes.into()),
    counter("log_cleaner_bytes", "log_cleaner_copied_bytes_total", "Bytes of live items the log layout's cleaner copied into fresh segments.",
        |s| s.cleaner_bytes.into()),
    info("log_policy", "log_policy", "The log layout's eviction policy: the one its chooser runs (-o log_choose), else -o log_ranking and log_probation's; - under slab.",
        |s| Value::Text(s.log_policy.as_ref().map_or_else(|| "-".into(), |p| p.0.clone()))),
    counter("log_policy_switches", "log_policy_switches_total", "Times the log's chooser switched policy (-o log_choose).",
        |s| s.log_policy.as_ref().map_or(0, |p| p.1).into()),
    counter("shard_lock_waits", "shard_lock_waits_total",
        "Times a thread found an engine shard's lock held and waited for it.", |s| s.locks.waits.into()),
    counter("shard_lock_wait_time", "shard_lock_wait_seconds_total",
        "Time threads spent waiting for engine shard locks, all waits together (seconds).",
        |s| Value::Micros(s.locks.wait_ns / 1_000)),
    gauge("shard_lock_longest_wait", "shard_lock_longest_wait_seconds",
        "The longest single wait for an engine shard lock since start or stats reset (seconds).",
        |s| Value::Micros(s.locks.longest_wait_ns / 1_000)),
    gauge("shard_lock_longest_hold", "shard_lock_longest_hold_seconds",
        "The longest any thread held an engine shard lock since start or stats reset (seconds).",
        |s| Value::Micros(s.locks.longest_hold_ns / 1_000)),
    // /metrics only.
    metrics_gauge("pages_in_use", "Pages of -m held by slab classes.", |s| s.engine.pages_in_use.into()),
    metrics_gauge("page_limit", "Pages in -m.", |s| s.engine.page_limit.into()),
    metrics_gauge("profiler_memory_bytes", "Heap bytes of the MRC profilers.", |s| s.profiler_memory_bytes.into()),
];

/// `stats`: the general figures.
pub(crate) fn general(ctx: &ServerContext, out: &mut Vec<u8>) {
    super::registry::write_stats(out, "", GENERAL, &General::take(ctx));
    super::end(out);
}

/// The rows at the head of [`GENERAL`] that identify the process (pid, uptime, time, versions, pointer
/// size): all of the general figures a tenant's `stats` shows, the rest being server-wide.
pub(crate) const IDENTITY_ROWS: usize = 6;

/// The identity rows of the general figures (what a tenant's `stats` starts with).
pub(crate) fn identity(ctx: &ServerContext, out: &mut Vec<u8>) {
    super::registry::write_stats(out, "", &GENERAL[..IDENTITY_ROWS], &General::take(ctx));
}
