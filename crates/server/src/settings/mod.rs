//! The server's configuration: one `Settings` struct, memcached 1.6.18's flags mapped onto it, defaults
//! from the named constants below, validated once at start-up.
//!
//! - `cli` — the clap command line: each flag once, with its `-h` text and its default;
//!   `Settings::default()` is what an empty command line gives
//! - `options` — memcached's `-o key[=value]` options and ours, one table that generates their
//!   parsing, their `-h` text, their `--print-config` rows and their `stats settings` rows
//! - `listen` — `-l` ([`ListenSpec`]) and `-B` ([`Protocol`])
//! - `error` — [`SettingsError`], each variant naming the flag
//! - `rlimit` — the open-files limit raised to what `-c` needs (at start-up, by the binary)
//! - this module — [`Settings`], the checks across flags, and the printed configuration
//!   (`--print-config`; `stats settings` prints memcached's names from the same fields)
//!
//! Invariants: a `Settings` returned by [`Settings::parse_from`] is valid — every value is in range, the
//! engine accepts [`Settings::engine_config`], and `shards` is a power of two. Errors name the flag that is
//! wrong. Flags memcached has but mrcached does not implement are either accepted and ignored (when ignoring
//! them cannot change what a client sees; `-h` lists them) or refused with a message saying why.

mod cli;
mod error;
mod listen;
pub(crate) mod options;
pub mod rlimit;
pub mod tls;

use std::path::PathBuf;

use mrcache_engine::config::{
    DEFAULT_GROWTH_FACTOR, DEFAULT_MIN_CHUNK_DATA_BYTES, DEFAULT_PAGE_SIZE_BYTES,
};
use mrcache_engine::{EngineConfig, ItemAccounting, MemoryLayout, Ranking};
use mrcache_policy::{ClassPolicySpec, TenantPolicySpec};

pub use error::{OptionError, SettingsError};
pub use listen::{ListenSpec, Protocol};
pub use options::RecordedOptions;

use crate::isolation::Isolation;
use crate::memory;
use crate::tenants::config::ServerBounds;
use crate::tenants::TenantsConfig;

/// The memcached release whose behaviour and `stats` we reproduce.
pub const MEMCACHED_COMPAT_VERSION: &str = "1.6.18";
/// Our own version.
pub const MRCACHED_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `-p 11211`: memcached's registered port.
pub const DEFAULT_PORT: u16 = 11211;
/// `-U 0`: UDP off, memcached 1.6's default (1.5 listened on 11211 by default, an amplification risk).
pub const DEFAULT_UDP_PORT: i32 = 0;
/// `-U -1`: UDP on an ephemeral port (memcached's spelling), announced like `-p 0`'s.
pub const EPHEMERAL_UDP_PORT: i32 = -1;
/// `-a 0700`: memcached's permissions for the `-s` socket file: only its owner may connect.
pub const DEFAULT_UNIX_MASK: u32 = 0o700;
/// `-t 4`: memcached's default worker threads.
pub const DEFAULT_THREADS: usize = 4;
/// `-c 1024`: simultaneous client connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// `-R 20`: requests one connection may run before the worker serves the others (starvation bound).
pub const DEFAULT_REQS_PER_EVENT: usize = 20;
/// `-b 1024`: the listen(2) backlog.
pub const DEFAULT_LISTEN_BACKLOG: i32 = 1024;
/// The class policy when neither `--slab-policy` nor `-o slab_automove` is given (lama-mr); defined in
/// the policy crate, where `mrcache sim` reads it too.
pub use mrcache_policy::class::DEFAULT_SLAB_POLICY;
/// `-o slab_automove=1`: memcached 1.6's mode, reported in `stats settings` (the policy actually run is
/// `slab_policy`).
pub const DEFAULT_SLAB_AUTOMOVE: u32 = 1;
/// `-o slab_automove_ratio=0.8`: the youngest class must be this much younger than the oldest to get a
/// page (the automove policy's own default).
pub const DEFAULT_SLAB_AUTOMOVE_RATIO: f64 = mrcache_policy::class::automove::DEFAULT_RATIO;
/// `-o slab_automove_window=30`: samples (seconds) per class in memcached 1.6.18 (HEAD uses 10; the
/// automove policy's own default).
pub const DEFAULT_SLAB_AUTOMOVE_WINDOW: u32 =
    mrcache_policy::class::automove::DEFAULT_WINDOW as u32;
/// `-o lru_crawler_sleep=100`: memcached's default microseconds the crawler sleeps between batches.
pub const DEFAULT_LRU_CRAWLER_SLEEP_US: u32 = 100;
/// memcached's bound on `lru_crawler_sleep` (option and command): one second.
pub const MAX_LRU_CRAWLER_SLEEP_US: u32 = 1_000_000;
/// Each default shard should own at least this many pages of `-m`. A shard takes pages on its own, and
/// every slab class in use holds at least one page in every shard, so each extra shard costs up to one
/// page per class (about 40 classes in the default geometry). Measured with ETC values and `-t 2`, a
/// second shard held 26% fewer items at `-m 64` and 7% fewer at `-m 256` (docs/results.md §6). At 256
/// pages, about six per class, a shard's first pages stay a small share of it, and a cache gets one
/// shard per worker once it has 256 MiB per worker (e.g. `-t 16` from `-m 4096`).
pub(crate) const MIN_PAGES_PER_DEFAULT_SHARD: usize = 256;
/// `-o item_accounting=compact`: the server places items by the bytes they occupy (class 1 = 80 B), which
/// fits more items in `-m` than memcached's accounting; `-I` stays memcached's either way. Defined in
/// the engine, where `mrcache sim` reads it too (the engine's own `EngineConfig::default()` keeps
/// memcached's, its model of memcached).
pub use mrcache_engine::config::MRCACHED_ITEM_ACCOUNTING as DEFAULT_ITEM_ACCOUNTING;
/// `-o memory_layout=log`: Memshare's log-structured memory. Defined in the engine, where `mrcache sim`
/// reads it too.
pub use mrcache_engine::config::MRCACHED_MEMORY_LAYOUT as DEFAULT_MEMORY_LAYOUT;
/// The admin HTTP port listens on loopback unless told otherwise: it shows the cache's traffic shape.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1";

/// `-t` at most: memcached's limit on worker threads.
pub(crate) const MAX_THREADS: usize = 1024;
/// The engine's limit on shards.
pub(crate) const MAX_SHARDS: usize = 1024;
/// `EX_USAGE` from sysexits.h: the exit status for a bad command line.
pub const EXIT_USAGE: i32 = 64;

/// The effective configuration of one server process.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `-p`: TCP port; 0 picks an ephemeral port and prints `listening on ADDR` once accepting.
    pub port: u16,
    /// `-l`: interfaces; empty means all IPv4 interfaces (memcached's INADDR_ANY).
    pub listen: Vec<ListenSpec>,
    /// `-U`: UDP port on the `-l` interfaces: [`DEFAULT_UDP_PORT`] (0) off, [`EPHEMERAL_UDP_PORT`] (-1)
    /// an ephemeral one, else the port (`net::udp`). Ignored with `-s`, as memcached ignores it.
    pub udp_port: i32,
    /// `-s`: a UNIX stream socket path; with it the server listens on that socket only (no TCP, no UDP),
    /// as memcached does.
    pub unix_socket: Option<PathBuf>,
    /// `-a`: the permissions of the `-s` socket file, [`DEFAULT_UNIX_MASK`] by default.
    pub unix_mask: u32,
    /// `-m` (megabytes): item memory.
    pub memory_limit_bytes: u64,
    /// `-t`: worker threads.
    pub threads: usize,
    /// `-c`: simultaneous client connections; one more is accepted, told `ERROR Too many open connections`
    /// and closed.
    pub max_connections: usize,
    /// `-I`: largest item (memcached's accounting), also the page size when above 1 MiB.
    pub item_size_max_bytes: usize,
    /// `-f`: slab class growth factor.
    pub growth_factor: f64,
    /// `-n`: minimum key + value + flags space of the smallest class.
    pub min_chunk_data_bytes: usize,
    /// `!-C`: items carry CAS values.
    pub use_cas: bool,
    /// `!-M`: evict instead of failing a store when memory is full.
    pub evict_when_full: bool,
    /// `-R`: requests one connection runs before yielding to the others.
    pub reqs_per_event: usize,
    /// `-b`: listen backlog.
    pub listen_backlog: i32,
    /// `-B`: which protocols connections speak (default auto; binary with `-S` alone).
    pub protocol: Protocol,
    /// `-S`: binary connections authenticate with SASL PLAIN against the tenants' passwords.
    pub sasl: bool,
    /// `-A`: the `shutdown` command is allowed.
    pub shutdown_enabled: bool,
    /// `!-F`: `flush_all` is allowed.
    pub flush_enabled: bool,
    /// `!-X`: `stats cachedump` / `lru_crawler metadump` are allowed.
    pub dump_enabled: bool,
    /// `!-W`: `watch` is allowed.
    pub watch_enabled: bool,
    /// `-v` count (`verbosity N` changes the live value in the context).
    pub verbose: u32,
    /// `-D`: the byte ending a key's prefix in `stats detail` (memcached's default `:`).
    pub prefix_delimiter: u8,
    /// `-o slab_reassign` (default on; `no_modern` turns it off): `slabs reassign` is allowed.
    pub slab_reassign: bool,
    /// `-o slab_automove=0|1|2`.
    pub slab_automove: u32,
    /// `-o slab_automove_ratio=F`, in (0, 1].
    pub slab_automove_ratio: f64,
    /// `-o slab_automove_window=N` (seconds of samples).
    pub slab_automove_window: u32,
    /// `--slab-policy`: a class policy by name; `None` follows `slab_automove` if it was given, else
    /// runs [`DEFAULT_SLAB_POLICY`].
    pub slab_policy: Option<ClassPolicySpec>,
    /// `-o slab_automove` (or `no_modern`) was given: the operator asked for memcached's mover.
    pub slab_automove_given: bool,
    /// `-o lru_crawler` / `no_lru_crawler`: the crawler starts on (`crate::crawler`; `lru_crawler
    /// enable|disable` turn it on and off at run time, and the maintenance thread reaps only while on).
    pub lru_crawler: bool,
    /// `-o lru_crawler_sleep=N`: the crawler's pause after each batch, in microseconds (`lru_crawler
    /// sleep` changes the live value).
    pub lru_crawler_sleep_us: u32,
    /// `-o lru_crawler_tocrawl=N`: items of each class one crawl inspects at most, 0 for all
    /// (`lru_crawler tocrawl` changes the live value).
    pub lru_crawler_tocrawl: u32,
    /// The `-o` options accepted, recorded and shown that change nothing else (`hashpower`; see
    /// `options`).
    pub recorded: RecordedOptions,
    /// `-Z` and `-o ssl_*`: TLS for client TCP connections.
    pub tls: tls::TlsSettings,
    /// `-o shards=N` (ours): independent engine lock domains; see `default_shards`.
    pub shards: usize,
    /// `-o item_accounting=compact|memcached` (ours): how item sizes pick slab classes.
    pub item_accounting: ItemAccounting,
    /// `-o memory_layout=log|slab` (ours): Memshare's log (default) or memcached's slab classes.
    pub memory_layout: MemoryLayout,
    /// `-o log_ranking=NAME` (ours): how the log's cleaner ranks the items of pools whose tenant sets
    /// none (`--config` `ranking`).
    pub log_ranking: Ranking,
    /// `-o log_probation=SHARE` (ours): the share of each log pool's segments where new keys wait on
    /// probation (S3-FIFO's small queue), 0 for none.
    pub log_probation: f64,
    /// `-o log_choose=P,P,...` (ours): the log's candidate eviction policies for its chooser (the
    /// first replaces `log_ranking` and `log_probation`); empty: no chooser.
    pub log_choose: Vec<mrcache_engine::LogPolicy>,
    /// `-o log_choose_rate=R` (ours): the share of keys and memory each miniature takes.
    pub log_choose_rate: f64,
    /// `-o mrc_sample_rate=F` (ours): initial sampling rate of the per-class MRC profilers; 0 turns
    /// profiling off.
    pub mrc_sample_rate: f64,
    /// `-o io=auto|uring|epoll` (ours): the network I/O path the workers use; `crate::net::resolve_io`
    /// turns `Auto` into the one this kernel supports and measured best.
    pub io: IoMode,
    /// `--admin-port` (ours): the admin HTTP listener, off when `None`.
    pub admin_port: Option<u16>,
    /// `--admin-listen` (ours): its address, loopback by default.
    pub admin_listen: String,
    /// `-Y`: memcached's `user:password` file; each user is a tenant (see `tenants`).
    pub auth_file: Option<PathBuf>,
    /// `--config` (ours): the tenant configuration file (TOML).
    pub config_file: Option<PathBuf>,
    /// `-e` (memcached's `--memory-file`): the warm-restart file, saved at a graceful stop (SIGUSR1,
    /// `shutdown graceful`) and loaded at start-up; see `crate::restart`.
    pub memory_file: Option<PathBuf>,
    /// `-P`: the pid file, written once the server accepts connections (`crate::daemon`).
    pub pid_file: Option<PathBuf>,
    /// `-u`: the user a process started as root becomes before anything starts (`crate::privileges`);
    /// ignored when not started as root.
    pub user: Option<String>,
    /// `-d`: detach from the terminal before any thread starts (`crate::daemon`).
    pub daemonize: bool,
    /// `-r`: memcached raises the core file limit (mrcached leaves it to the service manager); under
    /// `-d` the daemon keeps its working directory, where core files land, as memcached's does.
    pub enable_coredumps: bool,
    /// `-o idle_timeout=N`: connections waiting for a command more than N seconds are closed
    /// (`crate::net::idle`); 0, or below 0 as memcached reads it, never.
    pub idle_timeout_secs: i32,
    /// The tenants the two files above give, as loaded at start-up (SIGHUP reloads them).
    pub tenants: TenantsConfig,
    /// `-o worker_cpus`, `-o service_cpus`, `-o sched` (ours): where the threads run and the workers'
    /// scheduling policy (`crate::isolation`).
    pub isolation: Isolation,
    /// `--tenant-policy` (ours): the tenant arbiter, overriding the config file's `tenant_policy`; see
    /// `crate::memory` for when tenants have memory of their own.
    pub tenant_policy: Option<TenantPolicySpec>,
}

impl Default for Settings {
    /// What an empty command line gives: every default is the flag's own (see `cli`).
    fn default() -> Self {
        match Settings::parse_from(["mrcached"]) {
            Ok(Command::Run(settings)) => settings,
            other => unreachable!("an empty command line runs the defaults: {other:?}"),
        }
    }
}

/// `-o io=...`: which network I/O path the workers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMode {
    /// The path that measured best here (`crate::net::AUTO_IO_BACKEND`, io_uring) where the kernel
    /// supports it, else epoll (saying why on stderr).
    Auto,
    /// io_uring (multishot accept and receive, provided buffers, batched sends); start-up fails where
    /// the kernel cannot.
    Uring,
    /// epoll through mio (readiness, one `read`/`write` per connection and turn).
    Epoll,
}

impl IoMode {
    /// Parses `-o io=`'s value.
    pub fn parse(s: &str) -> Option<IoMode> {
        match s {
            "auto" => Some(IoMode::Auto),
            "uring" | "io_uring" => Some(IoMode::Uring),
            "epoll" => Some(IoMode::Epoll),
            _ => None,
        }
    }

    /// The option's spelling (`--print-config`, `stats settings`).
    pub fn name(self) -> &'static str {
        match self {
            IoMode::Auto => "auto",
            IoMode::Uring => "uring",
            IoMode::Epoll => "epoll",
        }
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Command {
    /// Serve with these settings.
    Run(Settings),
    /// `--print-config`: print these settings and exit.
    PrintConfig(Settings),
    /// `-h`, `-V`, `-i`: print this text to stdout and exit 0.
    Print(String),
}

/// Default shard count: one lock domain per worker thread rounded up to a power of two, but never fewer
/// than [`MIN_PAGES_PER_DEFAULT_SHARD`] pages per shard (each shard allocates its own pages per class, so at
/// small `-m` many shards would fragment memory), and at least 1.
pub(crate) fn default_shards(threads: usize, pages: usize) -> usize {
    let by_threads = threads.max(1).next_power_of_two();
    let by_pages = prev_power_of_two((pages / MIN_PAGES_PER_DEFAULT_SHARD).max(1));
    by_threads.min(by_pages).min(MAX_SHARDS)
}

fn prev_power_of_two(n: usize) -> usize {
    debug_assert!(n > 0);
    1 << (usize::BITS - 1 - n.leading_zeros())
}

impl Settings {
    /// memcached's slab options this command line gives that the log layout does not use: accepted
    /// so that memcached's command lines start, and named in a notice at start-up.
    pub fn slab_options_without_effect(&self) -> Vec<&'static str> {
        if self.memory_layout != MemoryLayout::Log {
            return Vec::new();
        }
        let given = [
            ("-f", self.growth_factor != DEFAULT_GROWTH_FACTOR),
            (
                "-n",
                self.min_chunk_data_bytes != DEFAULT_MIN_CHUNK_DATA_BYTES,
            ),
            ("-o slab_automove", self.slab_automove_given),
            (
                "-o slab_chunk_max",
                self.recorded.get("slab_chunk_max").is_some(),
            ),
        ];
        given.iter().filter(|(_, g)| *g).map(|(f, _)| *f).collect()
    }

    /// What start-up says about options accepted (so that memcached's command lines start) that
    /// change nothing here: memcached's slab options under the log layout, and the TLS options rustls
    /// has no use for (`TlsSettings::without_effect`).
    pub fn notices(&self) -> Vec<String> {
        let mut notices = Vec::new();
        let slab = self.slab_options_without_effect();
        if !slab.is_empty() {
            notices.push(format!(
                "{} only tune memcached's slab classes and have no effect under the log layout (the \
                 default); add -o memory_layout=slab to use them",
                slab.join(", ")
            ));
        }
        notices.extend(
            self.tls
                .without_effect()
                .into_iter()
                .map(|option| format!("-o {option}: no effect")),
        );
        notices
    }

    /// Range checks memcached makes, naming the flag.
    fn validate(&self) -> Result<(), SettingsError> {
        let err = |flag, why: &str| Err(SettingsError::flag(flag, why));
        // Our options of one layout do nothing under the other: refused, not ignored. (memcached's
        // slab options stay accepted under the log, with a notice, so that its command lines start.)
        let one_layout_only = [
            (
                "-o log_probation",
                self.log_probation > 0.0,
                MemoryLayout::Log,
            ),
            (
                "-o log_choose",
                !self.log_choose.is_empty(),
                MemoryLayout::Log,
            ),
            (
                "-o log_ranking",
                self.log_ranking != EngineConfig::default().log_ranking,
                MemoryLayout::Log,
            ),
            (
                "--slab-policy",
                self.slab_policy.is_some(),
                MemoryLayout::Slab,
            ),
        ];
        if let Some((flag, _, layout)) = (one_layout_only.iter())
            .find(|(_, given, layout)| *given && *layout != self.memory_layout)
        {
            let why = format!("applies to -o memory_layout={} only", layout.name());
            return err(flag, &why);
        }
        if !self.evict_when_full && self.log_probation > 0.0 {
            return err(
                "-o log_probation",
                "nothing is evicted under -M, so no key can wait on probation",
            );
        }
        if self.threads == 0 {
            return err("-t/--threads", "number of threads must be greater than 0");
        }
        if self.threads > MAX_THREADS {
            return err("-t/--threads", &format!("at most {MAX_THREADS} threads"));
        }
        if self.max_connections == 0 {
            return err("-c/--conn-limit", "must be greater than 0");
        }
        if self.reqs_per_event == 0 {
            return err(
                "-R/--max-reqs-per-event",
                "number of requests per event must be greater than 0",
            );
        }
        if self.listen_backlog <= 0 {
            return err("-b/--listen-backlog", "must be greater than 0");
        }
        if !(self.growth_factor > 1.0 && self.growth_factor.is_finite()) {
            return err("-f/--slab-growth-factor", "factor must be greater than 1");
        }
        if self.min_chunk_data_bytes == 0 {
            return err("-n/--slab-min-size", "chunk size must be greater than 0");
        }
        if self.item_size_max_bytes as u64 > self.memory_limit_bytes / 2 {
            return err("-I/--max-item-size", "cannot be larger than half of -m");
        }
        options::check_slab_chunk_max(self)?;
        if let Err(why) = self.tls.check() {
            return err("-Z/--enable-ssl", &why);
        }
        if self.tls.enabled && self.io == IoMode::Uring {
            return err(
                "-o io=uring",
                "TLS connections (-Z) run on the epoll path: use -o io=epoll or io=auto",
            );
        }
        if self.udp_port != 0 && self.unix_socket.is_none() && self.tenants.auth_required() {
            // memcached refuses UDP with -S and with -Y: a datagram cannot log in.
            return err(
                "-U/--udp-port",
                "UDP cannot be used with authentication (-S, -Y or tenant passwords): a datagram \
                 cannot log in (-U 0 disables UDP)",
            );
        }
        if self.unix_socket.is_some() && self.tenants.tenants.iter().any(|t| t.port.is_some()) {
            return err(
                "-s/--unix-socket",
                "tenant ports cannot be served: with -s the server listens on its UNIX socket only",
            );
        }
        if let Err(e) = self.tenants.check_server(&self.server_bounds()) {
            let flag = if self.config_file.is_some() {
                "--config"
            } else {
                "-Y/--auth-file"
            };
            return err(flag, &e.to_string());
        }
        Ok(())
    }

    /// What the tenant configuration must fit at start-up: the main ports (`-p` and each `-l
    /// host:port`) and `-m`. A reload checks the same against the ports bound and the limit in force.
    pub fn server_bounds(&self) -> ServerBounds {
        let mut main_ports = vec![self.port];
        main_ports.extend(self.listen.iter().filter_map(|l| l.port));
        ServerBounds {
            main_ports,
            memory_limit_bytes: self.memory_limit_bytes,
            log_layout: self.memory_layout == MemoryLayout::Log,
        }
    }

    /// Tenant pools the engine keeps (1: one memory for everyone); see `crate::memory::pool_count`.
    pub fn tenant_pools(&self) -> usize {
        memory::pool_count(self.tenant_policy.as_ref(), &self.tenants)
    }

    /// The tenant arbiter's spec at start-up, or `None` when tenants share one memory.
    pub fn tenant_policy_spec(&self) -> Option<TenantPolicySpec> {
        (self.tenant_pools() > 1)
            .then(|| memory::policy_spec(self.tenant_policy.as_ref(), &self.tenants))
    }

    /// The page size the engine will use: 1 MiB, or `-I` when larger.
    pub fn page_size_bytes(&self) -> usize {
        self.item_size_max_bytes.max(DEFAULT_PAGE_SIZE_BYTES)
    }

    /// Whole pages in `-m`.
    pub fn page_budget(&self) -> usize {
        ((self.memory_limit_bytes / self.page_size_bytes() as u64) as usize).max(1)
    }

    /// The engine's configuration.
    pub fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            memory_limit_bytes: self.memory_limit_bytes,
            item_size_max_bytes: self.item_size_max_bytes,
            growth_factor: self.growth_factor,
            min_chunk_data_bytes: self.min_chunk_data_bytes,
            use_cas: self.use_cas,
            item_accounting: self.item_accounting,
            memory_layout: self.memory_layout,
            log_ranking: self.log_ranking,
            log_probation: self.log_probation,
            log_choose: self.log_choose.clone(),
            log_choose_rate: self.log_choose_rate,
            evict_when_full: self.evict_when_full,
            shards: self.shards,
            profile_sample_rate: (self.mrc_sample_rate > 0.0).then_some(self.mrc_sample_rate),
            tenant_pools: self.tenant_pools(),
            shadow_queue_bytes: self
                .tenant_policy_spec()
                .and_then(|spec| spec.build().shadow_queue_bytes()),
            ..EngineConfig::default()
        }
    }

    /// The effective configuration as `name value` pairs (`--print-config`), one per field: the
    /// flags', then the `-o` options' in their table's order.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        let listen = if self.listen.is_empty() {
            "0.0.0.0".to_string()
        } else {
            self.listen
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        vec![
            ("port", self.port.to_string()),
            ("listen", listen),
            ("udp_port", self.udp_port.to_string()),
            (
                "unix_socket",
                self.unix_socket
                    .as_ref()
                    .map_or("none".to_string(), |p| p.display().to_string()),
            ),
            ("unix_mask", format!("{:04o}", self.unix_mask)),
            ("memory_limit_bytes", self.memory_limit_bytes.to_string()),
            ("threads", self.threads.to_string()),
            ("max_connections", self.max_connections.to_string()),
            ("item_size_max_bytes", self.item_size_max_bytes.to_string()),
            ("growth_factor", self.growth_factor.to_string()),
            (
                "min_chunk_data_bytes",
                self.min_chunk_data_bytes.to_string(),
            ),
            ("use_cas", self.use_cas.to_string()),
            ("evict_when_full", self.evict_when_full.to_string()),
            ("reqs_per_event", self.reqs_per_event.to_string()),
            ("listen_backlog", self.listen_backlog.to_string()),
            ("protocol", self.protocol.stats_name().to_string()),
            ("sasl", self.sasl.to_string()),
            ("shutdown_enabled", self.shutdown_enabled.to_string()),
            ("flush_enabled", self.flush_enabled.to_string()),
            ("dump_enabled", self.dump_enabled.to_string()),
            ("watch_enabled", self.watch_enabled.to_string()),
            ("verbose", self.verbose.to_string()),
            ("slab_policy", self.slab_policy_spec().to_string()),
            (
                "admin",
                self.admin_port
                    .map_or("off".to_string(), |p| format!("{}:{p}", self.admin_listen)),
            ),
            ("page_size_bytes", self.page_size_bytes().to_string()),
            ("page_budget", self.page_budget().to_string()),
            ("auth_file", show_path(self.auth_file.as_ref())),
            ("config_file", show_path(self.config_file.as_ref())),
            ("memory_file", show_path(self.memory_file.as_ref())),
            ("pid_file", show_path(self.pid_file.as_ref())),
            ("daemonize", self.daemonize.to_string()),
            (
                "tenants",
                self.tenants
                    .tenants
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            (
                "tenant_policy",
                memory::describe_spec(self.tenant_policy_spec().as_ref()),
            ),
            ("tenant_pools", self.tenant_pools().to_string()),
        ]
        .into_iter()
        .chain(options::print_rows(self))
        .collect()
    }
}

impl Settings {
    /// Makes the files the server opens after start-up absolute, against the working directory now:
    /// a daemon (`-d` without `-r`) works in `/`, and still writes `-P`, saves `-e` and reloads
    /// `--config` and `-Y` where they were named (memcached would open a relative `-P` in `/`).
    pub fn resolve_paths(&mut self) -> std::io::Result<()> {
        for path in [
            &mut self.pid_file,
            &mut self.memory_file,
            &mut self.config_file,
            &mut self.auth_file,
        ]
        .into_iter()
        .flatten()
        {
            *path = std::path::absolute(&*path)?;
        }
        Ok(())
    }

    /// The class policy to run: `--slab-policy`; else, if `-o slab_automove` was given, the one it names
    /// (0: memcached, no moves; 1: memcached's automove with this window and ratio; 2: automove2); else
    /// LAMA.
    pub fn slab_policy_spec(&self) -> ClassPolicySpec {
        if let Some(spec) = self.slab_policy {
            return spec;
        }
        if !self.slab_automove_given {
            return DEFAULT_SLAB_POLICY;
        }
        ClassPolicySpec::automove_mode(
            self.slab_automove,
            self.slab_automove_window as usize,
            self.slab_automove_ratio,
        )
    }
}

/// A file flag's `--print-config` value.
fn show_path(path: Option<&PathBuf>) -> String {
    path.map_or("none".to_string(), |p| p.display().to_string())
}

#[cfg(test)]
mod tests;
