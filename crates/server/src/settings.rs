//! The server's configuration: one `Settings` struct, memcached 1.6.18's flags mapped onto it, defaults
//! from the named constants below, validated once at start-up.
//!
//! Invariants: a `Settings` returned by [`Settings::parse_from`] is valid — every value is in range, the
//! engine accepts [`Settings::engine_config`], and `shards` is a power of two. Errors name the flag that is
//! wrong. Flags memcached has but mrcached does not implement are either accepted and ignored (when ignoring
//! them cannot change what a client sees; `-h` lists them) or refused with a message saying why.

use std::fmt;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use clap::{ArgAction, Parser};
use mrcache_engine::config::{
    DEFAULT_GROWTH_FACTOR, DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_MIN_CHUNK_DATA_BYTES,
    DEFAULT_PAGE_SIZE_BYTES,
};
use mrcache_engine::{EngineConfig, ItemAccounting};

use crate::memory;
use crate::tenants::TenantsConfig;

/// The memcached release whose behaviour and `stats` we reproduce.
pub const MEMCACHED_COMPAT_VERSION: &str = "1.6.18";
/// Our own version.
pub const MRCACHED_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `-p 11211`: memcached's registered port.
pub const DEFAULT_PORT: u16 = 11211;
/// `-t 4`: memcached's default worker threads.
pub const DEFAULT_THREADS: usize = 4;
/// `-c 1024`: simultaneous client connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// `-R 20`: requests one connection may run before the worker serves the others (starvation bound).
pub const DEFAULT_REQS_PER_EVENT: usize = 20;
/// `-b 1024`: the listen(2) backlog.
pub const DEFAULT_LISTEN_BACKLOG: i32 = 1024;
/// The class policy when neither `--slab-policy` nor `-o slab_automove` is given: LAMA minimising
/// misses (pages go where the classes' curves say they save the most).
pub const DEFAULT_SLAB_POLICY: &str = "lama-mr";
/// `-o slab_automove=1`: memcached 1.6's mode, reported in `stats settings` (the policy actually run is
/// `slab_policy`).
pub const DEFAULT_SLAB_AUTOMOVE: u32 = 1;
/// `-o slab_automove_ratio=0.8`: the youngest class must be this much younger than the oldest to get a page.
pub const DEFAULT_SLAB_AUTOMOVE_RATIO: f64 = 0.8;
/// `-o slab_automove_window=30`: samples (seconds) per class in memcached 1.6.18 (HEAD uses 10).
pub const DEFAULT_SLAB_AUTOMOVE_WINDOW: u32 = 30;
/// memcached's `hashpower` limits; we accept the option for compatibility and ignore it.
pub const HASHPOWER_RANGE: std::ops::RangeInclusive<u32> = 12..=64;
/// Each default shard should own at least this many pages of `-m`. A shard takes pages on its own, and
/// every slab class in use holds at least one page in every shard, so each extra shard costs up to one
/// page per class (about 40 classes in the default geometry). Measured with ETC values and `-t 2`, a
/// second shard held 26% fewer items at `-m 64` and 7% fewer at `-m 256` (docs/results.md §6). At 256
/// pages, about six per class, a shard's first pages stay a small share of it, and a cache gets one
/// shard per worker once it has 256 MiB per worker (e.g. `-t 16` from `-m 4096`).
pub const MIN_PAGES_PER_DEFAULT_SHARD: usize = 256;
/// `-o item_accounting=compact`: the server places items by the bytes they occupy (class 1 = 80 B), which
/// fits more items in `-m` than memcached's accounting (docs/results.md §6); `-I` stays memcached's either
/// way. The engine's own default stays memcached's, for the simulator.
pub const DEFAULT_ITEM_ACCOUNTING: ItemAccounting = ItemAccounting::Compact;
/// The admin HTTP port listens on loopback unless told otherwise: it shows the cache's traffic shape.
pub const DEFAULT_ADMIN_LISTEN: &str = "127.0.0.1";

/// The engine's limit on shards.
pub const MAX_SHARDS: usize = 1024;
/// `EX_USAGE` from sysexits.h: the exit status for a bad command line.
pub const EXIT_USAGE: i32 = 64;

/// `-B`: which protocols a connection may speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// `-B ascii`: text and meta only.
    Ascii,
    /// `-B auto` (memcached's default): memcached would also sniff binary; we speak text and meta only.
    Auto,
}

impl Protocol {
    /// memcached's `binding_protocol` name in `stats settings`.
    pub fn stats_name(self) -> &'static str {
        match self {
            Protocol::Ascii => "ascii",
            Protocol::Auto => "auto-negotiate",
        }
    }
}

/// One `-l` entry: an interface, and a port when given as `host:port`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListenSpec {
    pub host: String,
    /// `None`: use `-p`.
    pub port: Option<u16>,
}

impl ListenSpec {
    /// Parses memcached's `-l` forms: `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 address.
    pub fn parse(s: &str) -> Result<ListenSpec, SettingsError> {
        let bad = || SettingsError(format!("-l/--listen: cannot parse '{s}' as an address"));
        if s.is_empty() {
            return Err(bad());
        }
        if let Some(rest) = s.strip_prefix('[') {
            let (host, after) = rest.split_once(']').ok_or_else(bad)?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(bad)?
                        .parse()
                        .map_err(|_| bad())?,
                ),
            };
            return Ok(ListenSpec {
                host: host.to_string(),
                port,
            });
        }
        match s.matches(':').count() {
            0 => Ok(ListenSpec {
                host: s.to_string(),
                port: None,
            }),
            1 => {
                let (host, port) = s.split_once(':').ok_or_else(bad)?;
                Ok(ListenSpec {
                    host: host.to_string(),
                    port: Some(port.parse().map_err(|_| bad())?),
                })
            }
            _ => Ok(ListenSpec {
                host: s.to_string(),
                port: None,
            }),
        }
    }

    /// Resolves to socket addresses with `default_port` where no port was given.
    pub fn resolve(&self, default_port: u16) -> std::io::Result<Vec<SocketAddr>> {
        let port = self.port.unwrap_or(default_port);
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        Ok((self.host.as_str(), port).to_socket_addrs()?.collect())
    }
}

impl fmt::Display for ListenSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            Some(p) => write!(f, "{host}:{p}"),
            None => f.write_str(&host),
        }
    }
}

/// The effective configuration of one server process.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// `-p`: TCP port; 0 picks an ephemeral port and prints `listening on ADDR` once accepting.
    pub port: u16,
    /// `-l`: interfaces; empty means all IPv4 interfaces (memcached's INADDR_ANY).
    pub listen: Vec<ListenSpec>,
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
    /// `-B`: text/meta only in both accepted forms.
    pub protocol: Protocol,
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
    pub slab_policy: Option<String>,
    /// `-o slab_automove` (or `no_modern`) was given: the operator asked for memcached's mover.
    pub slab_automove_given: bool,
    /// `-o lru_crawler` / `no_lru_crawler`: the maintenance thread reaps expired items.
    pub lru_crawler: bool,
    /// `-o hashpower=N`: accepted and ignored (our index grows by itself); shown in `stats settings`.
    pub hashpower_init: u32,
    /// `-o shards=N` (ours): independent engine lock domains; see [`default_shards`].
    pub shards: usize,
    /// `-o item_accounting=compact|memcached` (ours): how item sizes pick slab classes.
    pub item_accounting: ItemAccounting,
    /// `-o mrc_sample_rate=F` (ours): initial sampling rate of the per-class MRC profilers; 0 turns
    /// profiling off.
    pub mrc_sample_rate: f64,
    /// `--admin-port` (ours): the admin HTTP listener, off when `None`.
    pub admin_port: Option<u16>,
    /// `--admin-listen` (ours): its address, loopback by default.
    pub admin_listen: String,
    /// `-Y`: memcached's `user:password` file; each user is a tenant (see `tenants`).
    pub auth_file: Option<PathBuf>,
    /// `--config` (ours): the tenant configuration file (TOML).
    pub config_file: Option<PathBuf>,
    /// The tenants the two files above give, as loaded at start-up (SIGHUP reloads them).
    pub tenants: TenantsConfig,
    /// `--tenant-policy` (ours): the tenant arbiter, overriding the config file's `tenant_policy`; see
    /// `crate::memory` for when tenants have memory of their own.
    pub tenant_policy: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        let mut s = Settings {
            port: DEFAULT_PORT,
            listen: Vec::new(),
            memory_limit_bytes: DEFAULT_MEMORY_LIMIT_BYTES,
            threads: DEFAULT_THREADS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            item_size_max_bytes: DEFAULT_PAGE_SIZE_BYTES,
            growth_factor: DEFAULT_GROWTH_FACTOR,
            min_chunk_data_bytes: DEFAULT_MIN_CHUNK_DATA_BYTES,
            use_cas: true,
            evict_when_full: true,
            reqs_per_event: DEFAULT_REQS_PER_EVENT,
            listen_backlog: DEFAULT_LISTEN_BACKLOG,
            protocol: Protocol::Auto,
            shutdown_enabled: false,
            flush_enabled: true,
            dump_enabled: true,
            watch_enabled: true,
            verbose: 0,
            slab_reassign: true,
            slab_automove: DEFAULT_SLAB_AUTOMOVE,
            slab_automove_ratio: DEFAULT_SLAB_AUTOMOVE_RATIO,
            slab_automove_window: DEFAULT_SLAB_AUTOMOVE_WINDOW,
            slab_policy: None,
            slab_automove_given: false,
            lru_crawler: true,
            hashpower_init: 0,
            shards: 1,
            item_accounting: DEFAULT_ITEM_ACCOUNTING,
            mrc_sample_rate: mrcache_engine::profiling::DEFAULT_SAMPLE_RATE,
            admin_port: None,
            admin_listen: DEFAULT_ADMIN_LISTEN.to_string(),
            auth_file: None,
            config_file: None,
            tenants: TenantsConfig::default(),
            tenant_policy: None,
        };
        s.shards = default_shards(s.threads, s.page_budget());
        s
    }
}

/// A bad command line; the message names the flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingsError(pub String);

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SettingsError {}

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
pub fn default_shards(threads: usize, pages: usize) -> usize {
    let by_threads = threads.max(1).next_power_of_two();
    let by_pages = prev_power_of_two((pages / MIN_PAGES_PER_DEFAULT_SHARD).max(1));
    by_threads.min(by_pages).min(MAX_SHARDS)
}

fn prev_power_of_two(n: usize) -> usize {
    debug_assert!(n > 0);
    1 << (usize::BITS - 1 - n.leading_zeros())
}

const AFTER_HELP: &str = "\
Extended options (-o key[=value],...):
   slab_reassign           allow `slabs reassign` (default: on)
   slab_automove=N         memcached's movers instead of the default lama-mr (see --slab-policy):
                           0: manual only, 1: memcached's age balancer, 2: move on eviction
   slab_automove_ratio=F   youngest/oldest age ratio that triggers a move (default: 0.8)
   slab_automove_window=N  seconds of samples per class (default: 30)
   slab_chunk_max=N        only the default (half a page) is supported
   lru_crawler, no_lru_crawler  reap expired items in the background (default: on)
   modern, no_modern       no_modern turns slab_reassign and automove off, as in memcached
   shards=N                mrcached: engine lock domains, a power of two (default: threads rounded up
                           to a power of two, at most one per 256 pages of -m)
   item_accounting=A       mrcached: how an item's size picks its slab class: compact (the bytes it
                           occupies; class 1 is 80 B; default) or memcached (memcached's item header and
                           classes, as in the simulator). -I limits items as memcached does either way
   mrc_sample_rate=F       mrcached: initial sampling rate of the per-class miss-ratio-curve profilers,
                           in [0, 1]; 0 turns profiling off (default: 0.01; profilers use at most 1% of -m)
   ignored for compatibility: hashpower=N, no_hashexpand, hash_algorithm, maxconns_fast,
                           lru_maintainer, no_lru_maintainer, lru_crawler_sleep, lru_crawler_tocrawl,
                           hot_lru_pct, warm_lru_pct, hot_max_factor, warm_max_factor,
                           worker_logbuf_size, watcher_logbuf_size

Accepted and ignored: -u (run it under your service manager's user), -r, -k, -L, -P, -D.
Not supported: -d (use your service manager), -s/-a (UNIX sockets), -S (SASL authentication),
-e (restartable cache), -Z (TLS), -U other than 0 (UDP), -B binary.";

/// memcached's command line, as clap sees it. Field docs are the `-h` text.
#[derive(Parser, Debug)]
#[command(
    name = "mrcached",
    about = "mrcached: a memcached 1.6.18-compatible cache server (text and meta protocols)",
    disable_version_flag = true,
    after_help = AFTER_HELP
)]
struct Cli {
    /// TCP port to listen on (0: ephemeral; prints `listening on ADDR:PORT`)
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_PORT)]
    port: u16,
    /// UDP port; only 0 (off) is supported
    #[arg(short = 'U', long = "udp-port", default_value_t = 0)]
    udp_port: u16,
    /// interfaces to listen on, comma-separated or repeated (default: all IPv4 interfaces)
    #[arg(short = 'l', long = "listen", value_delimiter = ',', action = ArgAction::Append)]
    listen: Vec<String>,
    /// item memory in megabytes (a k/m/g suffix gives another unit)
    #[arg(short = 'm', long = "memory-limit", default_value = "64")]
    memory_limit: String,
    /// number of worker threads
    #[arg(short = 't', long = "threads", default_value_t = DEFAULT_THREADS)]
    threads: usize,
    /// max simultaneous connections
    #[arg(short = 'c', long = "conn-limit", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    conn_limit: usize,
    /// max item size in bytes, k/m suffixes allowed (min 1k, max 1024m, at most half of -m)
    #[arg(short = 'I', long = "max-item-size", default_value = "1m")]
    max_item_size: String,
    /// chunk size growth factor
    #[arg(short = 'f', long = "slab-growth-factor", default_value_t = DEFAULT_GROWTH_FACTOR)]
    slab_growth_factor: f64,
    /// min space used for key+value+flags
    #[arg(short = 'n', long = "slab-min-size", default_value_t = DEFAULT_MIN_CHUNK_DATA_BYTES)]
    slab_min_size: usize,
    /// verbose: -v errors and warnings, -vv also client commands (to stderr)
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    verbose: u8,
    /// return an error when memory is exhausted instead of evicting
    #[arg(short = 'M', long = "disable-evictions")]
    disable_evictions: bool,
    /// disable use of CAS
    #[arg(short = 'C', long = "disable-cas")]
    disable_cas: bool,
    /// max requests per event (per connection, before serving others)
    #[arg(short = 'R', long = "max-reqs-per-event", default_value_t = DEFAULT_REQS_PER_EVENT)]
    max_reqs_per_event: usize,
    /// protocol: ascii or auto (both mean text + meta); binary is not supported
    #[arg(short = 'B', long = "protocol", default_value = "auto")]
    protocol: String,
    /// listen backlog
    #[arg(short = 'b', long = "listen-backlog", default_value_t = DEFAULT_LISTEN_BACKLOG)]
    listen_backlog: i32,
    /// enable the ascii "shutdown" command
    #[arg(short = 'A', long = "enable-shutdown")]
    enable_shutdown: bool,
    /// disable the flush_all command
    #[arg(short = 'F', long = "disable-flush-all")]
    disable_flush_all: bool,
    /// disable stats cachedump and lru_crawler metadump
    #[arg(short = 'X', long = "disable-dumping")]
    disable_dumping: bool,
    /// disable watch commands
    #[arg(short = 'W', long = "disable-watch")]
    disable_watch: bool,
    /// extended options, comma-separated key[=value] (see below)
    #[arg(short = 'o', long = "extended", action = ArgAction::Append)]
    extended: Vec<String>,
    /// slab allocation policy, NAME[:key=value,...]: memcached (no moves), automove, automove2
    /// (memcached's slab_automove=1 and 2), twemcache, psa, facebook, lama-mr, lama-art (LAMA: pages go
    /// where the classes' miss-ratio curves say they save the most misses or response time); overrides
    /// -o slab_automove (default: lama-mr, or memcached's mover when -o slab_automove is given)
    #[arg(long = "slab-policy", value_name = "POLICY")]
    slab_policy: Option<String>,
    /// how memory is divided among tenants, NAME[:key=value,...]: static (each tenant its reserve plus a
    /// share of the rest by weight), pooled (one memory for all, as memcached; reserves are not kept),
    /// memshare (reserves, and the rest moved toward the tenants whose recently evicted keys are asked
    /// for again; Memshare), mpart (the division that minimises misses by the tenants' miss-ratio curves,
    /// at most 30% of a tenant's memory moved a round; mPart), lama-qos (the least memory meeting each
    /// target_hit_ratio, the rest by the curves; LAMA). Overrides tenant_policy in --config (default:
    /// mpart when tenants are configured; without tenants memory is not divided)
    #[arg(long = "tenant-policy", value_name = "POLICY")]
    tenant_policy: Option<String>,
    /// admin HTTP port for /mrc (JSON curves) and /metrics; 0 picks a free port; off when not given
    #[arg(long = "admin-port")]
    admin_port: Option<u16>,
    /// address the admin HTTP port listens on
    #[arg(long = "admin-listen", default_value = DEFAULT_ADMIN_LISTEN)]
    admin_listen: String,
    /// print the effective configuration and exit
    #[arg(long = "print-config")]
    print_config: bool,
    /// print version and exit
    #[arg(short = 'V', long = "version")]
    version: bool,
    /// print license and exit
    #[arg(short = 'i', long = "license")]
    license: bool,
    /// ignored: mrcached never changes identity; run it as the user you want
    #[arg(short = 'u', long = "user", hide = true)]
    user: Option<String>,
    /// ignored: core dump limits are the service manager's business
    #[arg(short = 'r', long = "enable-coredumps", hide = true)]
    enable_coredumps: bool,
    /// ignored: memory is not locked
    #[arg(short = 'k', long = "lock-memory", hide = true)]
    lock_memory: bool,
    /// ignored: no large pages
    #[arg(short = 'L', long = "enable-largepages", hide = true)]
    enable_largepages: bool,
    /// ignored: only used with -d
    #[arg(short = 'P', long = "pidfile", hide = true)]
    pidfile: Option<String>,
    /// ignored: no per-prefix stats
    #[arg(short = 'D', hide = true)]
    prefix_delimiter: Option<String>,
    /// not supported
    #[arg(short = 'd', long = "daemon", hide = true)]
    daemon: bool,
    /// not supported
    #[arg(short = 's', long = "unix-socket", hide = true)]
    unix_socket: Option<String>,
    /// not supported
    #[arg(short = 'a', long = "unix-mask", hide = true)]
    unix_mask: Option<String>,
    /// not supported
    #[arg(short = 'S', long = "enable-sasl", hide = true)]
    enable_sasl: bool,
    /// memcached's text-protocol authentication: a file of `user:password` lines; every connection
    /// must authenticate (a `set` whose data is `user password`) and then acts as tenant `user`
    #[arg(short = 'Y', long = "auth-file", value_name = "FILE")]
    auth_file: Option<PathBuf>,
    /// tenant configuration (TOML: tenant_policy, and [[tenant]] name, password, prefix, port, reserved,
    /// max, target_hit_ratio, weight); SIGHUP reloads it and the -Y file
    #[arg(long = "config", value_name = "FILE")]
    config: Option<PathBuf>,
    /// not supported
    #[arg(short = 'e', long = "memory-file", hide = true)]
    memory_file: Option<String>,
    /// not supported
    #[arg(short = 'Z', long = "enable-ssl", hide = true)]
    enable_ssl: bool,
}

impl Settings {
    /// Parses a command line (`args[0]` is the program name).
    pub fn parse_from<I, T>(args: I) -> Result<Command, SettingsError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let cli = match Cli::try_parse_from(args) {
            Ok(cli) => cli,
            Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => {
                return Ok(Command::Print(e.render().to_string()))
            }
            Err(e) => return Err(SettingsError(e.render().to_string().trim_end().to_string())),
        };
        if cli.version {
            return Ok(Command::Print(format!(
                "mrcached {MRCACHED_VERSION} (memcached {MEMCACHED_COMPAT_VERSION} compatible)\n"
            )));
        }
        if cli.license {
            return Ok(Command::Print(format!(
                "mrcached {MRCACHED_VERSION} is licensed under {}\n",
                env!("CARGO_PKG_LICENSE")
            )));
        }
        let print_config = cli.print_config;
        let settings = Settings::from_cli(cli)?;
        Ok(if print_config {
            Command::PrintConfig(settings)
        } else {
            Command::Run(settings)
        })
    }

    fn from_cli(cli: Cli) -> Result<Settings, SettingsError> {
        let refuse = |flag: &str, why: &str| Err(SettingsError(format!("{flag}: {why}")));
        if cli.daemon {
            return refuse(
                "-d/--daemon",
                "not supported; run mrcached under your service manager",
            );
        }
        if cli.unix_socket.is_some() || cli.unix_mask.is_some() {
            return refuse(
                "-s/--unix-socket",
                "UNIX sockets are not supported; use -l 127.0.0.1",
            );
        }
        if cli.enable_sasl {
            return refuse("-S/--enable-sasl", "SASL authentication is not supported");
        }
        if cli.memory_file.is_some() {
            return refuse("-e/--memory-file", "the restartable cache is not supported");
        }
        if cli.enable_ssl {
            return refuse("-Z/--enable-ssl", "TLS is not supported");
        }
        if cli.udp_port != 0 {
            return refuse(
                "-U/--udp-port",
                "UDP is not supported; only -U 0 is accepted",
            );
        }
        let protocol = match cli.protocol.as_str() {
            "ascii" => Protocol::Ascii,
            "auto" => Protocol::Auto,
            "binary" => {
                return refuse(
                    "-B/--protocol",
                    "the binary protocol is not supported; use ascii or auto",
                )
            }
            other => {
                return refuse(
                    "-B/--protocol",
                    &format!("unknown protocol '{other}' (ascii, auto)"),
                )
            }
        };

        let mut s = Settings {
            port: cli.port,
            listen: cli
                .listen
                .iter()
                .map(|l| ListenSpec::parse(l.trim()))
                .collect::<Result<_, _>>()?,
            memory_limit_bytes: parse_memory_limit(&cli.memory_limit)?,
            threads: cli.threads,
            max_connections: cli.conn_limit,
            item_size_max_bytes: parse_item_size(&cli.max_item_size)?,
            growth_factor: cli.slab_growth_factor,
            min_chunk_data_bytes: cli.slab_min_size,
            use_cas: !cli.disable_cas,
            evict_when_full: !cli.disable_evictions,
            reqs_per_event: cli.max_reqs_per_event,
            listen_backlog: cli.listen_backlog,
            protocol,
            shutdown_enabled: cli.enable_shutdown,
            flush_enabled: !cli.disable_flush_all,
            dump_enabled: !cli.disable_dumping,
            watch_enabled: !cli.disable_watch,
            verbose: u32::from(cli.verbose),
            admin_port: cli.admin_port,
            admin_listen: cli.admin_listen.clone(),
            slab_policy: cli.slab_policy.clone(),
            tenant_policy: cli.tenant_policy.clone(),
            tenants: TenantsConfig::load(cli.config.as_deref(), cli.auth_file.as_deref()).map_err(
                |e| {
                    let flag = if cli.config.is_some() {
                        "--config"
                    } else {
                        "-Y/--auth-file"
                    };
                    SettingsError(format!("{flag}: {e}"))
                },
            )?,
            auth_file: cli.auth_file.clone(),
            config_file: cli.config.clone(),
            ..Settings::default()
        };
        let mut shards = None;
        for group in &cli.extended {
            for opt in group.split(',').map(str::trim).filter(|o| !o.is_empty()) {
                s.apply_extended(opt, &mut shards)?;
            }
        }
        s.validate()?;
        mrcache_policy::class::by_name(&s.slab_policy_spec())
            .map_err(|e| SettingsError(format!("--slab-policy: {e}")))?;
        memory::check_settings(&s)?;
        s.shards = match shards {
            Some(n) => n,
            None => default_shards(s.threads, s.page_budget()),
        };
        s.engine_config()
            .validate()
            .map_err(|e| SettingsError(e.to_string()))?;
        Ok(s)
    }

    /// Applies one `-o` option.
    fn apply_extended(
        &mut self,
        opt: &str,
        shards: &mut Option<usize>,
    ) -> Result<(), SettingsError> {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        let need = |what: &str| -> Result<&str, SettingsError> {
            value.ok_or_else(|| SettingsError(format!("-o {key}: needs a value ({what})")))
        };
        let bad = |why: &str| SettingsError(format!("-o {key}: {why}"));
        match key {
            "slab_reassign" => self.slab_reassign = true,
            "no_slab_reassign" => self.slab_reassign = false,
            "slab_automove" => {
                let n: u32 = need("0, 1 or 2")?
                    .parse()
                    .map_err(|_| bad("must be 0, 1 or 2"))?;
                if n > 2 {
                    return Err(bad("must be 0, 1 or 2"));
                }
                self.slab_automove = n;
                self.slab_automove_given = true;
            }
            "slab_automove_ratio" => {
                let f: f64 = need("a ratio")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if !(f > 0.0 && f <= 1.0) {
                    return Err(bad("must be greater than 0 and at most 1"));
                }
                self.slab_automove_ratio = f;
            }
            "slab_automove_window" => {
                let n: u32 = need("seconds")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if !(3..=1800).contains(&n) {
                    return Err(bad("must be between 3 and 1800"));
                }
                self.slab_automove_window = n;
            }
            "slab_chunk_max" => {
                // memcached takes kilobytes (and, for compatibility, bytes); our engine fixes it at half a page.
                let n: usize = need("kilobytes")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                let supported = self.page_size_bytes() / 2;
                if n != supported / 1024 && n != supported {
                    return Err(bad(&format!(
                        "only the default ({} kilobytes, half a page) is supported",
                        supported / 1024
                    )));
                }
            }
            "hashpower" => {
                let n: u32 = need("a power of two exponent")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if !HASHPOWER_RANGE.contains(&n) {
                    return Err(bad("must be between 12 and 64"));
                }
                self.hashpower_init = n;
            }
            "lru_crawler" => self.lru_crawler = true,
            "no_lru_crawler" => self.lru_crawler = false,
            "modern" => {}
            "no_modern" => {
                self.slab_reassign = false;
                self.slab_automove = 0;
                self.slab_automove_given = true;
            }
            "mrc_sample_rate" => {
                let rate: f64 = need("a rate in [0, 1]")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if !(0.0..=1.0).contains(&rate) {
                    return Err(bad("must be in [0, 1]"));
                }
                self.mrc_sample_rate = rate;
            }
            "item_accounting" => {
                self.item_accounting = ItemAccounting::parse(need("compact or memcached")?)
                    .ok_or_else(|| bad("must be compact or memcached"))?;
            }
            "shards" => {
                let n: usize = need("a power of two")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if n == 0 || !n.is_power_of_two() || n > MAX_SHARDS {
                    return Err(bad(&format!(
                        "must be a power of two between 1 and {MAX_SHARDS}"
                    )));
                }
                *shards = Some(n);
            }
            "no_hashexpand"
            | "hash_algorithm"
            | "maxconns_fast"
            | "no_maxconns_fast"
            | "lru_maintainer"
            | "no_lru_maintainer"
            | "lru_crawler_sleep"
            | "lru_crawler_tocrawl"
            | "hot_lru_pct"
            | "warm_lru_pct"
            | "hot_max_factor"
            | "warm_max_factor"
            | "worker_logbuf_size"
            | "watcher_logbuf_size" => {}
            _ => {
                return Err(SettingsError(format!(
                    "-o: unknown or unsupported option '{key}'"
                )))
            }
        }
        Ok(())
    }

    /// Range checks memcached makes, naming the flag.
    fn validate(&self) -> Result<(), SettingsError> {
        let err = |m: &str| Err(SettingsError(m.to_string()));
        if self.threads == 0 {
            return err("-t/--threads: number of threads must be greater than 0");
        }
        if self.threads > 1024 {
            return err("-t/--threads: at most 1024 threads");
        }
        if self.max_connections == 0 {
            return err("-c/--conn-limit: must be greater than 0");
        }
        if self.reqs_per_event == 0 {
            return err(
                "-R/--max-reqs-per-event: number of requests per event must be greater than 0",
            );
        }
        if self.listen_backlog <= 0 {
            return err("-b/--listen-backlog: must be greater than 0");
        }
        if !(self.growth_factor > 1.0 && self.growth_factor.is_finite()) {
            return err("-f/--slab-growth-factor: factor must be greater than 1");
        }
        if self.min_chunk_data_bytes == 0 {
            return err("-n/--slab-min-size: chunk size must be greater than 0");
        }
        if self.item_size_max_bytes as u64 > self.memory_limit_bytes / 2 {
            return err("-I/--max-item-size: cannot be larger than half of -m");
        }
        for t in &self.tenants.tenants {
            if t.port.is_some() && t.port == Some(self.port) {
                return Err(SettingsError(format!(
                    "--config: tenant {}: port {} is the main port (-p)",
                    t.name, self.port
                )));
            }
        }
        Ok(())
    }

    /// Tenant pools the engine keeps (1: one memory for everyone); see `crate::memory::pool_count`.
    pub fn tenant_pools(&self) -> usize {
        memory::pool_count(self.tenant_policy.as_deref(), &self.tenants)
    }

    /// The tenant arbiter's spec at start-up, or `None` when tenants share one memory.
    pub fn tenant_policy_spec(&self) -> Option<String> {
        (self.tenant_pools() > 1)
            .then(|| memory::policy_spec(self.tenant_policy.as_deref(), &self.tenants).to_string())
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
            evict_when_full: self.evict_when_full,
            shards: self.shards,
            profile_sample_rate: (self.mrc_sample_rate > 0.0).then_some(self.mrc_sample_rate),
            tenant_pools: self.tenant_pools(),
            shadow_queue_bytes: self
                .tenant_policy_spec()
                .and_then(|spec| mrcache_policy::tenant::by_name(&spec).ok())
                .and_then(|a| a.shadow_queue_bytes()),
            ..EngineConfig::default()
        }
    }

    /// The effective configuration as `name value` pairs (`--print-config`), one per field.
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
            ("shutdown_enabled", self.shutdown_enabled.to_string()),
            ("flush_enabled", self.flush_enabled.to_string()),
            ("dump_enabled", self.dump_enabled.to_string()),
            ("watch_enabled", self.watch_enabled.to_string()),
            ("verbose", self.verbose.to_string()),
            ("slab_reassign", self.slab_reassign.to_string()),
            ("slab_automove", self.slab_automove.to_string()),
            ("slab_automove_ratio", self.slab_automove_ratio.to_string()),
            (
                "slab_automove_window",
                self.slab_automove_window.to_string(),
            ),
            ("slab_policy", self.slab_policy_spec()),
            ("lru_crawler", self.lru_crawler.to_string()),
            ("hashpower_init", self.hashpower_init.to_string()),
            ("shards", self.shards.to_string()),
            ("item_accounting", self.item_accounting.name().to_string()),
            ("mrc_sample_rate", self.mrc_sample_rate.to_string()),
            (
                "admin",
                self.admin_port
                    .map_or("off".to_string(), |p| format!("{}:{p}", self.admin_listen)),
            ),
            ("page_size_bytes", self.page_size_bytes().to_string()),
            ("page_budget", self.page_budget().to_string()),
            (
                "auth_file",
                self.auth_file
                    .as_ref()
                    .map_or("none".to_string(), |p| p.display().to_string()),
            ),
            (
                "config_file",
                self.config_file
                    .as_ref()
                    .map_or("none".to_string(), |p| p.display().to_string()),
            ),
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
                memory::describe_spec(self.tenant_policy_spec().as_deref()),
            ),
            ("tenant_pools", self.tenant_pools().to_string()),
        ]
    }
}

impl Settings {
    /// The class policy to run: `--slab-policy`; else, if `-o slab_automove` was given, the one it names
    /// (0: memcached, no moves; 1: memcached's automove with this window and ratio; 2: automove2); else
    /// LAMA.
    pub fn slab_policy_spec(&self) -> String {
        if let Some(spec) = &self.slab_policy {
            return spec.clone();
        }
        if !self.slab_automove_given {
            return DEFAULT_SLAB_POLICY.to_string();
        }
        automove_policy_spec(
            self.slab_automove,
            self.slab_automove_window,
            self.slab_automove_ratio,
        )
    }
}

/// The class policy of a memcached `slab_automove` mode.
pub fn automove_policy_spec(mode: u32, window: u32, ratio: f64) -> String {
    match mode {
        0 => "memcached".to_string(),
        2 => "automove2".to_string(),
        _ => format!("automove:window={window},ratio={ratio}"),
    }
}

/// `-m`: megabytes, or a number with a k/m/g suffix (case-insensitive).
fn parse_memory_limit(s: &str) -> Result<u64, SettingsError> {
    let bad = || {
        SettingsError(format!(
            "-m/--memory-limit: cannot parse '{s}' as megabytes"
        ))
    };
    let last = s.chars().last().ok_or_else(bad)?;
    let (digits, unit): (&str, u64) = match last.to_ascii_lowercase() {
        'k' => (&s[..s.len() - 1], 1 << 10),
        'm' => (&s[..s.len() - 1], 1 << 20),
        'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1 << 20),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let bytes = n.checked_mul(unit).ok_or_else(bad)?;
    if bytes == 0 {
        return Err(SettingsError(
            "-m/--memory-limit: must be greater than 0".into(),
        ));
    }
    Ok(bytes)
}

/// `-I`: bytes, or a number with a k/m suffix (case-insensitive), memcached's range 1k..=1024m.
fn parse_item_size(s: &str) -> Result<usize, SettingsError> {
    let bad = || SettingsError(format!("-I/--max-item-size: cannot parse '{s}'"));
    let last = s.chars().last().ok_or_else(bad)?;
    let (digits, unit): (&str, usize) = match last.to_ascii_lowercase() {
        'k' => (&s[..s.len() - 1], 1 << 10),
        'm' => (&s[..s.len() - 1], 1 << 20),
        _ => (s, 1),
    };
    let n: usize = digits.parse().map_err(|_| bad())?;
    let bytes = n.checked_mul(unit).ok_or_else(bad)?;
    if bytes < mrcache_engine::config::MIN_ITEM_SIZE_MAX_BYTES {
        return Err(SettingsError(
            "-I/--max-item-size: cannot be less than 1024 bytes".into(),
        ));
    }
    if bytes > mrcache_engine::config::MAX_ITEM_SIZE_MAX_BYTES {
        return Err(SettingsError(
            "-I/--max-item-size: cannot be larger than 1024 megabytes".into(),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
