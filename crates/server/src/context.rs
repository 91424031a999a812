//! What every connection of the server shares: the engine, the effective settings, the clock, and the
//! counters that `stats` prints.
//!
//! Ownership: the `ServerContext` is created once in `main` and shared as `Arc<ServerContext>` by the
//! listener, the workers and the maintenance thread. Each worker owns one `ThreadStats` (only it writes,
//! `stats` reads with relaxed loads); connection-level counters are atomics updated by the listener and
//! workers on accept/close, never per request.
//!
//! Extensions for the network layer (see `docs/threads-and-locks.md`): the connection registry that
//! `stats conns` reads (a leaf lock per worker, taken on open/close and by `stats conns`, never per
//! request), the listening sockets, the maintenance thread's counters, and `request_shutdown` (or
//! `request_graceful_shutdown`, which also asks for the warm-restart save), which any thread (a signal,
//! the `shutdown` command) calls to stop the server.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use mrcache_engine::{Clock, Engine};
use mrcache_policy::ClassPolicySpec;

use crate::net::registry::{ConnRegistry, ListenerInfo};
use crate::settings::Settings;
use crate::tenants::Tenants;

/// memcached starts its relative clock this many seconds in (`ITEM_UPDATE_INTERVAL + 2`), so that relative
/// time 0 ("never expires") is never "now".
pub const CLOCK_START_OFFSET_SECS: i64 = 62;

/// Per-worker counters of work that is not about one key (the engine counts those).
#[derive(Debug, Default)]
pub struct ThreadStats {
    /// Bytes read from client sockets, added by the connection after each read (`stats bytes_read`).
    pub bytes_read: AtomicU64,
    /// Bytes written to client sockets, added by the connection after each write (`stats bytes_written`).
    pub bytes_written: AtomicU64,
    /// `flush_all` commands, counted by the dispatcher (`stats cmd_flush`).
    pub cmd_flush: AtomicU64,
    /// Meta commands (`mg`, `ms`, `md`, `ma`, `mn`, `me`), counted by the dispatcher (`stats cmd_meta`).
    pub cmd_meta: AtomicU64,
    /// Not incremented anywhere: `stats cmd_touch` comes from the engine's `touch_cmds`. Only `stats
    /// reset` writes it (zero).
    pub cmd_touch: AtomicU64,
    /// Stores (`set` family and `ms`) refused as larger than `-I`, counted by the dispatcher (`stats
    /// store_too_large`).
    pub store_too_large: AtomicU64,
    /// Stores refused because the engine found no memory for them, counted by the dispatcher (`stats
    /// store_no_memory`).
    pub store_no_memory: AtomicU64,
    /// Times a connection gave up its turn after `-R` requests in one event, counted by the connection
    /// (`stats conn_yields`).
    pub conn_yields: AtomicU64,
    /// Authentication attempts: credential blocks checked, and blocks too large to check (answered as a
    /// failure), counted by the session's auth exchange (`stats auth_cmds`).
    pub auth_cmds: AtomicU64,
    /// Authentication attempts that failed, counted by the session's auth exchange (`stats auth_errors`).
    pub auth_errors: AtomicU64,
}

impl ThreadStats {
    /// Adds `n` to a counter owned by this worker.
    #[inline]
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.store(counter.load(Relaxed) + n, Relaxed);
    }
}

/// Connection counters (memcached's `curr_connections` and friends).
#[derive(Debug, Default)]
pub struct ConnCounters {
    /// Client connections open now: the listener adds one on accept, the worker takes it off on close;
    /// the listener refuses connections at `-c` (`stats curr_connections`).
    pub curr_connections: AtomicUsize,
    /// Client connections accepted since start or `stats reset`, counted by the listener (`stats
    /// total_connections`).
    pub total_connections: AtomicU64,
    /// Connections the listener closed at once because `-c` connections were already open (`stats
    /// rejected_connections`).
    pub rejected_connections: AtomicU64,
    /// The most connections open at once, kept by the listener on accept (`stats connection_structures`).
    pub connection_structures: AtomicUsize,
    /// Times the listener stopped accepting because it ran out of file descriptors.
    pub listen_disabled_num: AtomicU64,
    /// Connections closed for waiting longer than `-o idle_timeout`, counted by the maintenance
    /// thread's idle check (`stats idle_kicks`, `crate::net::idle`).
    pub idle_kicks: AtomicU64,
}

/// The state shared by the whole server.
pub struct ServerContext {
    /// The cache: the sessions' commands, the maintenance thread and `stats` all go through it.
    pub engine: Engine,
    /// The effective settings from the command line, fixed after start (what may change at run time has
    /// its own field here).
    pub settings: Settings,
    /// The tenant directory (`--config`, `-Y`), reloaded on SIGHUP.
    pub tenants: Tenants,
    /// Connection counts, written by the listener and the workers on accept and close.
    pub conns: ConnCounters,
    /// One per worker thread, indexed by worker id.
    pub thread_stats: Vec<Arc<ThreadStats>>,
    /// The UDP thread's (`net::udp`); `stats` adds them to the workers'.
    pub udp_stats: Arc<ThreadStats>,
    /// `verbosity N` sets it; `-v` counts start it.
    pub verbosity: AtomicU32,
    /// memcached's `slab_automove` mode (0, 1 or 2), changed by `slabs automove N`.
    pub automove_mode: AtomicU32,
    /// memcached's `slab_automove_ratio`, as f64 bits, changed by `slabs automove ratio F`.
    pub automove_ratio_bits: AtomicU64,
    /// The class policy the rebalancer runs (`--slab-policy`, or what `slab_automove` names); `slabs
    /// automove` replaces it, and bumps `slab_policy_generation` so the rebalancer picks it up.
    pub slab_policy: std::sync::Mutex<ClassPolicySpec>,
    /// How many times `slab_policy` was replaced; the maintenance thread rebuilds its rebalancers when
    /// it differs from the one they were built at.
    pub slab_policy_generation: AtomicU64,
    /// The tenant arbiter in force with its parameters (`none` without tenant pools), for `stats
    /// settings`; the maintenance thread, which owns the arbitration, rewrites it when a reload changes it.
    pub tenant_policy: std::sync::Mutex<String>,
    /// Set when the server should stop (SIGTERM, SIGINT, SIGUSR1, `shutdown` with `-A`).
    pub shutting_down: AtomicBool,
    /// Set with `shutting_down` by a graceful stop (SIGUSR1, `shutdown graceful`): with `-e`, the cache
    /// is saved once every thread has stopped (`crate::restart`).
    graceful: AtomicBool,
    /// What the warm restart at start-up loaded (`stats`); set once, before the listener accepts.
    pub restart: OnceLock<crate::restart::RestoreReport>,
    /// Every open client connection, per worker (`stats conns`).
    pub connections: ConnRegistry,
    /// Bytes of partly received values the sessions may buffer, all connections together.
    pub partial_values: crate::session::PartialValueBudget,
    /// The bound listening sockets, set once by the listener before it accepts.
    pub listeners: OnceLock<Vec<ListenerInfo>>,
    /// What the maintenance thread has done (`stats`).
    pub maintenance: MaintenanceStats,
    /// The LRU crawler: its run-time settings, its one job slot and its thread's mailbox.
    pub crawler: crate::crawler::Crawler,
    /// TLS (`-Z`): the certificates in use and the handshake counters; set once at start-up, before
    /// the first connection, when TLS is on.
    pub tls: OnceLock<Arc<crate::net::tls::Tls>>,
    /// `stats detail`: per-prefix counts, off until `stats detail on`.
    pub detail: crate::stats::detail::DetailStats,
    /// `watch`: the log streams and their watchers.
    pub log: crate::watch::LogBus,
    /// Wakes the listener so that it notices `shutting_down`; set once by the listener.
    shutdown_waker: OnceLock<Arc<mio::Waker>>,
    started: Instant,
    process_started_unix: i64,
}

/// memcached's `watch evictions`: the engine tells the log bus of each eviction (only while someone
/// watches the stream: `ServerContext::watchers_changed` turns the observer on and off).
fn install_eviction_log(engine: &Engine, log: &crate::watch::LogBus) {
    use crate::watch::{stream, write_key};
    use std::io::Write as _;
    let log = log.clone();
    engine.set_eviction_observer(Box::new(move |e| {
        log.emit(stream::EVICTIONS, |line| {
            line.extend_from_slice(b"type=eviction key=");
            write_key(line, e.key);
            let _ = write!(
                line,
                " fetch={} ttl={} la={} clsid={} size={}",
                if e.fetched { "yes" } else { "no" },
                e.ttl_secs,
                e.last_access_secs,
                e.class.0,
                e.value_len
            );
        });
    }));
}

impl ServerContext {
    /// A watcher came or went: the engine reports evictions only while someone watches them.
    pub fn watchers_changed(&self) {
        self.engine
            .observe_evictions(self.log.wants(crate::watch::stream::EVICTIONS));
    }

    /// The context of a server with `workers` worker threads (one `ThreadStats` and one registry slot
    /// each); the clock starts now, and the engine's shard locks are timed by [`monotonic_nanos`].
    pub fn new(mut engine: Engine, settings: Settings, workers: usize) -> ServerContext {
        engine.time_locks(monotonic_nanos);
        let now_unix = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let prefix_delimiter = settings.prefix_delimiter;
        let log = crate::watch::LogBus::new();
        install_eviction_log(&engine, &log);
        let crawler = crate::crawler::Crawler::new(
            settings.lru_crawler,
            settings.lru_crawler_sleep_us,
            settings.lru_crawler_tocrawl,
        );
        ServerContext {
            verbosity: AtomicU32::new(settings.verbose),
            automove_mode: AtomicU32::new(settings.slab_automove),
            automove_ratio_bits: AtomicU64::new(settings.slab_automove_ratio.to_bits()),
            slab_policy: std::sync::Mutex::new(settings.slab_policy_spec()),
            slab_policy_generation: AtomicU64::new(0),
            tenant_policy: std::sync::Mutex::new(crate::memory::describe_spec(
                settings.tenant_policy_spec().as_ref(),
            )),
            tenants: Tenants::new(
                settings.tenants.clone(),
                settings.config_file.clone(),
                settings.auth_file.clone(),
            )
            .expect("a validated config has fewer than 65536 tenants"),
            partial_values: crate::session::PartialValueBudget::new(
                settings.memory_limit_bytes,
                settings.item_size_max_bytes,
            ),
            engine,
            settings,
            conns: ConnCounters::default(),
            thread_stats: (0..workers)
                .map(|_| Arc::new(ThreadStats::default()))
                .collect(),
            udp_stats: Arc::new(ThreadStats::default()),
            shutting_down: AtomicBool::new(false),
            graceful: AtomicBool::new(false),
            restart: OnceLock::new(),
            connections: ConnRegistry::new(workers),
            listeners: OnceLock::new(),
            maintenance: MaintenanceStats::new(),
            crawler,
            tls: OnceLock::new(),
            detail: crate::stats::detail::DetailStats::new(prefix_delimiter),
            log,
            shutdown_waker: OnceLock::new(),
            started: Instant::now(),
            process_started_unix: now_unix - CLOCK_START_OFFSET_SECS,
        }
    }

    /// The engine clock now: memcached's `current_time`, from a monotonic source.
    pub fn clock(&self) -> Clock {
        Clock {
            now: (self.started.elapsed().as_secs() as i64 + CLOCK_START_OFFSET_SECS) as u32,
            process_started_unix: self.process_started_unix,
        }
    }

    /// Every request-serving thread's counters: the workers' and the UDP thread's.
    pub fn all_thread_stats(&self) -> impl Iterator<Item = &Arc<ThreadStats>> + Clone {
        self.thread_stats
            .iter()
            .chain(std::iter::once(&self.udp_stats))
    }

    /// Seconds since start (`stats uptime`).
    pub fn uptime_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// The Unix time now as the server sees it (`stats time`): start time plus monotonic elapsed time.
    pub fn unix_now(&self) -> i64 {
        self.process_started_unix + self.clock().now as i64
    }

    /// Replaces the slab policy; the rebalancer switches at its next tick.
    pub fn set_slab_policy(&self, spec: ClassPolicySpec) {
        *self.slab_policy.lock().unwrap_or_else(|e| e.into_inner()) = spec;
        self.slab_policy_generation.fetch_add(1, Relaxed);
    }

    /// The class policy in force.
    pub fn slab_policy(&self) -> ClassPolicySpec {
        *self.slab_policy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// memcached's `slab_automove_ratio` in force (`stats settings`; `slabs automove N` builds its
    /// policy with it).
    pub fn automove_ratio(&self) -> f64 {
        f64::from_bits(self.automove_ratio_bits.load(Relaxed))
    }

    /// Asks the whole server to stop: the listener stops accepting, workers close their connections, and
    /// every thread exits. Safe to call from any thread, any number of times.
    pub fn request_shutdown(&self) {
        self.shutting_down
            .store(true, std::sync::atomic::Ordering::Release);
        if let Some(waker) = self.shutdown_waker.get() {
            // A failed wake leaves the listener to notice on its next event; nothing else to do here.
            let _ = waker.wake();
        }
    }

    /// A graceful stop (memcached's SIGUSR1, `shutdown graceful`): as `request_shutdown`, and with `-e`
    /// the cache is saved once every thread has stopped.
    pub fn request_graceful_shutdown(&self) {
        self.graceful
            .store(true, std::sync::atomic::Ordering::Release);
        self.request_shutdown();
    }

    /// Whether the stop was graceful (`request_graceful_shutdown`).
    pub fn is_graceful_shutdown(&self) -> bool {
        self.graceful.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether `request_shutdown` has been called.
    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Installs the listener's waker (first call wins).
    pub(crate) fn set_shutdown_waker(&self, waker: Arc<mio::Waker>) {
        let _ = self.shutdown_waker.set(waker);
    }
}

/// Counters of the maintenance thread (memcached's crawler and maintainer figures).
#[derive(Debug, Default)]
pub struct MaintenanceStats {
    /// Ticks run (memcached's `lru_maintainer_juggles`).
    pub runs: AtomicU64,
    /// Reaper passes started (memcached's `lru_crawler_starts`).
    pub reaper_starts: AtomicU64,
    /// Expired or flushed items unlinked by the reaper (memcached's `crawler_reclaimed`).
    pub reaped_items: AtomicU64,
    /// Pages given back after the limit was lowered.
    pub pages_released: AtomicU64,
    /// Pages moved by the slab policy.
    pub automove_moves: AtomicU64,
    /// Rounds the slab policy ran (summed over the tenant pools' rebalancers).
    pub policy_rounds: AtomicU64,
    /// Pages the slab policy moved, by the rule that moved them (`MoveRule::index`), summed likewise.
    pub policy_moves_by_rule: [AtomicU64; mrcache_policy::class::MoveRule::ALL.len()],
    /// Rounds the tenant arbiter ran.
    pub arbiter_rounds: AtomicU64,
    /// The last curve-driven round's predicted miss ratio for the window after it, and the miss ratio
    /// observed in that window, as f64 bits (NaN: none yet); with tenant pools, the mean over the pools
    /// that have both.
    pub policy_predicted_bits: AtomicU64,
    /// The observed half of that pair (`stats slab_policy_observed_miss_ratio`), as f64 bits.
    pub policy_observed_bits: AtomicU64,
}

impl MaintenanceStats {
    /// All counters zero, the predicted and observed miss ratios NaN (none yet).
    pub fn new() -> MaintenanceStats {
        MaintenanceStats {
            policy_predicted_bits: AtomicU64::new(f64::NAN.to_bits()),
            policy_observed_bits: AtomicU64::new(f64::NAN.to_bits()),
            ..MaintenanceStats::default()
        }
    }
}

/// Nanoseconds of a monotonic clock, for the engine's shard-lock figures (`stats` `shard_lock_*`).
pub fn monotonic_nanos() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    u64::try_from(START.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
}
