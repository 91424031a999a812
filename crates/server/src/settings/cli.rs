//! memcached's command line as clap reads it: every flag once, with its `-h` text and its default from
//! the named constants, mapped onto [`Settings`] by [`Settings::parse_from`].
//!
//! Values with a syntax of their own are parsed by clap's value parsers into their types (`-l` into
//! [`ListenSpec`], `-m`/`-I` into bytes by `mrcache_units`, `--slab-policy`/`--tenant-policy` into policy
//! specs), so a bad value is refused once, with its reason, in the words of [`SettingsError`].

use std::fmt;
use std::path::PathBuf;

use clap::{ArgAction, Parser};
use mrcache_engine::config::{
    DEFAULT_GROWTH_FACTOR, DEFAULT_ITEM_SIZE_MAX_BYTES, DEFAULT_MEMORY_LIMIT_BYTES,
    DEFAULT_MIN_CHUNK_DATA_BYTES, MAX_ITEM_SIZE_MAX_BYTES, MIN_ITEM_SIZE_MAX_BYTES,
};
use mrcache_policy::{ClassPolicySpec, TenantPolicySpec};
use mrcache_units::{format_size, parse_size, SizeSyntax, Unit};

use super::*;
use crate::tenants::TenantsConfig;

/// `-h`'s text after the flags: the `-o` options (from their table) and the flags accepted or refused
/// for compatibility.
fn after_help() -> String {
    format!(
        "{}
Accepted and ignored: -k, -L; -r only keeps the
working directory under -d.
Binary protocol and SASL: under -B auto (the default) a connection whose first byte is 0x80 speaks
memcached's binary protocol, any other the text and meta protocols; -B binary and -B ascii allow only
one. -S makes binary clients authenticate with SASL PLAIN as a tenant of -Y or --config (the same
users and passwords the text protocol's auth uses); like memcached, -S alone means -B binary, and
-B ascii is refused with it (-S -B auto also lets text clients authenticate the text way). Without
-S, a server whose connections must authenticate (-Y, or tenant passwords) speaks text only, as
memcached does with -Y.

UNIX socket and UDP: with -s PATH the server listens only on that UNIX socket (TCP and UDP off, as in
memcached), removing a stale socket file first; -a sets its permissions (octal, default 0700). -U PORT
serves memcached's UDP protocol (8-byte frame header, replies in datagrams of at most 1400 bytes) on the
-l interfaces; -U 0 (the default) turns it off, -U -1 picks an ephemeral port.

TLS: -Z makes every TCP port speak TLS (rustls; TLS 1.2 and 1.3) with the certificate chain and key of
-o ssl_chain_cert and ssl_key (PEM); ssl_verify_mode 1 or 2 asks for or requires a client certificate
signed by ssl_ca_cert. `refresh_certs` reloads the files without a restart. TLS connections run on the
epoll path (-o io=auto picks it under -Z; io=uring is refused). The UNIX socket and UDP stay plain.",
        options::help()
    )
}

/// memcached's command line, as clap sees it. Field docs are the `-h` text.
#[derive(Parser, Debug)]
#[command(
    name = "mrcached",
    about = "mrcached: a memcached 1.6.18-compatible cache server (text, meta and binary protocols)",
    disable_version_flag = true,
    after_help = after_help()
)]
pub(super) struct Cli {
    /// TCP port to listen on (0 or -1: ephemeral; prints `listening on ADDR:PORT`)
    #[arg(short = 'p', long = "port", default_value_t = DEFAULT_PORT,
          allow_negative_numbers = true, value_parser = parse_tcp_port)]
    port: u16,
    /// UDP port to listen on, on the -l interfaces (0: off; -1: ephemeral); the last -U given counts
    #[arg(short = 'U', long = "udp-port", default_value_t = DEFAULT_UDP_PORT,
          allow_negative_numbers = true, value_parser = parse_udp_port,
          overrides_with = "udp_port")]
    udp_port: i32,
    /// interfaces to listen on, comma-separated or repeated (default: all IPv4 interfaces)
    #[arg(short = 'l', long = "listen", value_delimiter = ',', action = ArgAction::Append,
          value_parser = parse_listen)]
    listen: Vec<ListenSpec>,
    /// item memory in megabytes (a k/m/g suffix gives another unit)
    #[arg(short = 'm', long = "memory-limit", value_parser = parse_memory_limit,
          default_value_t = MemoryLimit(DEFAULT_MEMORY_LIMIT_BYTES))]
    memory_limit: MemoryLimit,
    /// number of worker threads
    #[arg(short = 't', long = "threads", default_value_t = DEFAULT_THREADS)]
    threads: usize,
    /// max simultaneous connections
    #[arg(short = 'c', long = "conn-limit", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    conn_limit: usize,
    /// max item size in bytes, k/m suffixes allowed (min 1k, max 1024m, at most half of -m)
    #[arg(short = 'I', long = "max-item-size", value_parser = parse_item_size,
          default_value_t = ItemSizeMax(DEFAULT_ITEM_SIZE_MAX_BYTES))]
    max_item_size: ItemSizeMax,
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
    /// protocol: auto (a first byte of 0x80 picks binary, else text + meta), ascii (text + meta) or
    /// binary [default: auto; binary with -S]
    #[arg(short = 'B', long = "protocol", value_parser = Protocol::parse)]
    protocol: Option<Protocol>,
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
    /// disable watch commands (live log streams: fetchers, mutations, evictions, connevents)
    #[arg(short = 'W', long = "disable-watch")]
    disable_watch: bool,
    /// extended options, comma-separated key[=value] (see below)
    #[arg(short = 'o', long = "extended", action = ArgAction::Append)]
    extended: Vec<String>,
    /// slab allocation policy (with -o memory_layout=slab), NAME[:key=value,...]: memcached (no moves), automove, automove2
    /// (memcached's slab_automove=1 and 2), twemcache, psa, facebook, lama-mr, lama-art (LAMA: pages go
    /// where the classes' miss-ratio curves say they save the most misses or response time), dynacache
    /// (Dynacache: each tenant's hits maximised over concave fits of its classes' hit curves; a tenant
    /// is re-optimised only while the miss entropy of its last window, over its classes, is at least
    /// min_entropy bits, default 0.3; parameters interval=,period=,moves=,threshold=,min_entropy=,
    /// objective=hits|bytes,guard=noise|model); overrides -o slab_automove (default: lama-mr, or
    /// memcached's mover when -o slab_automove is given)
    #[arg(long = "slab-policy", value_name = "POLICY", value_parser = parse_slab_policy)]
    slab_policy: Option<ClassPolicySpec>,
    /// how memory is divided among tenants, NAME[:key=value,...]: static (each tenant its reserve plus a
    /// share of the rest by weight), pooled (one memory for all, as memcached; reserves are not kept),
    /// memshare (reserves, and the rest moved toward the tenants whose recently evicted keys are asked
    /// for again; Memshare), mpart (the division that minimises misses by the tenants' miss-ratio curves,
    /// at most 30% of a tenant's memory moved a round; mPart), lama-qos (the least memory meeting each
    /// target_hit_ratio, the rest by the curves; LAMA). Overrides tenant_policy in --config (default:
    /// mpart when tenants are configured; without tenants memory is not divided)
    #[arg(long = "tenant-policy", value_name = "POLICY", value_parser = parse_tenant_policy)]
    tenant_policy: Option<TenantPolicySpec>,
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
    /// assume the identity of <user> (only when run as root, which needs it)
    #[arg(short = 'u', long = "user")]
    user: Option<String>,
    /// ignored, except that under -d the daemon keeps its working directory (memcached's -r raises
    /// the core file limit; mrcached leaves that to the service manager)
    #[arg(short = 'r', long = "enable-coredumps", hide = true)]
    enable_coredumps: bool,
    /// ignored: memory is not locked
    #[arg(short = 'k', long = "lock-memory", hide = true)]
    lock_memory: bool,
    /// ignored: no large pages
    #[arg(short = 'L', long = "enable-largepages", hide = true)]
    enable_largepages: bool,
    /// write the process id to FILE once the server accepts connections (FILE.tmp, then renamed); a
    /// file that cannot be written stops start-up. Under -d it is removed at a clean stop; without
    /// -d it is left, as memcached leaves it
    #[arg(short = 'P', long = "pidfile", value_name = "FILE")]
    pidfile: Option<PathBuf>,
    /// Use <char> as the delimiter between key prefixes and IDs; used for per-prefix stats reporting
    /// (`stats detail on|off|dump`). The default is ":"
    #[arg(short = 'D', value_name = "char")]
    prefix_delimiter: Option<String>,
    /// run as a daemon: fork, start a new session, work in / (unless -r), and once the server accepts
    /// connections (and -P's file is written) let the starting process exit 0 and send stdin, stdout
    /// and stderr to /dev/null (kept with -v). A failure to start is reported before that, with the
    /// starting process's exit status
    #[arg(short = 'd', long = "daemon")]
    daemon: bool,
    /// UNIX socket to listen on (disables network support: no TCP, no UDP); a stale socket file there is
    /// removed first
    #[arg(short = 's', long = "unix-socket", value_name = "FILE")]
    unix_socket: Option<PathBuf>,
    /// access mask for the UNIX socket, in octal
    #[arg(short = 'a', long = "unix-mask", value_name = "MASK", value_parser = parse_unix_mask,
          default_value = "0700")]
    unix_mask: u32,
    /// SASL authentication for binary clients: PLAIN, with the users and passwords of -Y / --config;
    /// an authenticated client is that tenant. Implies -B binary unless -B auto is given
    #[arg(short = 'S', long = "enable-sasl")]
    enable_sasl: bool,
    /// memcached's text-protocol authentication: a file of `user:password` lines; every connection
    /// must authenticate (a `set` whose data is `user password`; binary clients log in with SASL PLAIN
    /// under -S) and then acts as tenant `user`
    #[arg(short = 'Y', long = "auth-file", value_name = "FILE")]
    auth_file: Option<PathBuf>,
    /// tenant configuration (TOML: tenant_policy, and [[tenant]] name, password, prefix, port, reserved,
    /// max, target_hit_ratio, weight, admin); SIGHUP reloads it and the -Y file, checked as at start-up.
    /// Server-wide commands (stats of all, cache_memlimit, slabs, lru_crawler, verbosity, watch,
    /// shutdown, ...) are for operators: connections that are no single tenant, and admin = true tenants
    #[arg(long = "config", value_name = "FILE")]
    config: Option<PathBuf>,
    /// warm restart (memcached's restartable cache): SIGUSR1 or `shutdown graceful` (with -A) saves
    /// every live item to FILE and exits; the next start with the same FILE and the same -m, -I, -n, -f,
    /// -C and item_accounting loads them back (flags, TTL, CAS) before it accepts connections. Other
    /// stops (SIGTERM, SIGINT, `shutdown`, a crash) save nothing: the next start is cold
    #[arg(short = 'e', long = "memory-file", value_name = "FILE")]
    memory_file: Option<PathBuf>,
    /// TLS on every TCP port: needs -o ssl_chain_cert and ssl_key (see below)
    #[arg(short = 'Z', long = "enable-ssl")]
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
            // Our value parsers' own errors name the flag already; clap's others are its rendering.
            Err(e) => {
                use std::error::Error;
                if let Some(own) = e.source().and_then(|s| s.downcast_ref::<SettingsError>()) {
                    return Err(own.clone());
                }
                return Err(SettingsError::CommandLine(
                    e.render().to_string().trim_end().to_string(),
                ));
            }
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
        let refuse = |flag: &'static str, why: &str| Err(SettingsError::flag(flag, why));
        if cli
            .unix_socket
            .as_ref()
            .is_some_and(|p| p.as_os_str().is_empty())
        {
            return refuse("-s/--unix-socket", "the socket path is empty");
        }
        let tenants = TenantsConfig::load(cli.config.as_deref(), cli.auth_file.as_deref())
            .map_err(|error| SettingsError::Tenants {
                flag: if cli.config.is_some() {
                    "--config"
                } else {
                    "-Y/--auth-file"
                },
                error,
            })?;
        let protocol = protocol_for(cli.protocol, cli.enable_sasl, tenants.auth_required())?;
        // Every field, from its flag or, for `-o` options, from its named default.
        let mut s = Settings {
            port: cli.port,
            listen: cli.listen,
            udp_port: cli.udp_port,
            unix_socket: cli.unix_socket,
            unix_mask: cli.unix_mask,
            memory_limit_bytes: cli.memory_limit.0,
            threads: cli.threads,
            max_connections: cli.conn_limit,
            item_size_max_bytes: cli.max_item_size.0,
            growth_factor: cli.slab_growth_factor,
            min_chunk_data_bytes: cli.slab_min_size,
            use_cas: !cli.disable_cas,
            evict_when_full: !cli.disable_evictions,
            reqs_per_event: cli.max_reqs_per_event,
            listen_backlog: cli.listen_backlog,
            protocol,
            sasl: cli.enable_sasl,
            shutdown_enabled: cli.enable_shutdown,
            flush_enabled: !cli.disable_flush_all,
            dump_enabled: !cli.disable_dumping,
            watch_enabled: !cli.disable_watch,
            verbose: u32::from(cli.verbose),
            // memcached takes the first byte of the argument.
            prefix_delimiter: cli
                .prefix_delimiter
                .as_deref()
                .and_then(|d| d.bytes().next())
                .unwrap_or(b':'),
            slab_reassign: true,
            slab_automove: DEFAULT_SLAB_AUTOMOVE,
            slab_automove_ratio: DEFAULT_SLAB_AUTOMOVE_RATIO,
            slab_automove_window: DEFAULT_SLAB_AUTOMOVE_WINDOW,
            slab_policy: cli.slab_policy,
            slab_automove_given: false,
            lru_crawler: true,
            lru_crawler_sleep_us: DEFAULT_LRU_CRAWLER_SLEEP_US,
            lru_crawler_tocrawl: 0,
            recorded: RecordedOptions::default(),
            tls: Default::default(),
            // Set below from `-m`, `-I` and `-t`, unless `-o shards` is given.
            shards: 1,
            item_accounting: DEFAULT_ITEM_ACCOUNTING,
            memory_layout: DEFAULT_MEMORY_LAYOUT,
            log_ranking: EngineConfig::default().log_ranking,
            log_probation: EngineConfig::default().log_probation,
            log_choose: Vec::new(),
            log_choose_rate: EngineConfig::default().log_choose_rate,
            mrc_sample_rate: mrcache_engine::profiling::DEFAULT_SAMPLE_RATE,
            io: IoMode::Auto,
            admin_port: cli.admin_port,
            admin_listen: cli.admin_listen,
            auth_file: cli.auth_file,
            config_file: cli.config,
            memory_file: cli.memory_file,
            pid_file: cli.pidfile,
            user: cli.user,
            daemonize: cli.daemon,
            enable_coredumps: cli.enable_coredumps,
            idle_timeout_secs: 0,
            tenants,
            tenant_policy: cli.tenant_policy,
            isolation: Default::default(),
        };
        s.shards = default_shards(s.threads, s.page_budget());
        for group in &cli.extended {
            options::apply_group(&mut s, group)?;
        }
        s.tls.enabled = cli.enable_ssl;
        if s.tls.enabled && s.io == IoMode::Auto {
            // TLS connections run on the epoll path.
            s.io = IoMode::Epoll;
        }
        s.validate()?;
        memory::check_settings(&s)?;
        s.engine_config()
            .validate()
            .map_err(|e| SettingsError::Engine(e.to_string()))?;
        Ok(s)
    }
}

/// `-m` in bytes; `-h` shows it in the largest exact unit (`64MiB`), which [`parse_memory_limit`] reads.
#[derive(Clone, Copy, Debug)]
struct MemoryLimit(u64);

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0))
    }
}

/// `-I` in bytes, shown as [`MemoryLimit`] is.
#[derive(Clone, Copy, Debug)]
struct ItemSizeMax(usize);

impl fmt::Display for ItemSizeMax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&format_size(self.0 as u64))
    }
}

/// `-m`: megabytes, or a size with a unit (`mrcache_units`: `512k`, `2g`, `64MiB`, any case).
fn parse_memory_limit(s: &str) -> Result<MemoryLimit, SettingsError> {
    const FLAG: &str = "-m/--memory-limit";
    let bytes = parse_size(s, SizeSyntax::whole(Unit::MiB))
        .map_err(|_| SettingsError::flag(FLAG, format!("cannot parse '{s}' as megabytes")))?;
    if bytes == 0 {
        return Err(SettingsError::flag(FLAG, "must be greater than 0"));
    }
    Ok(MemoryLimit(bytes))
}

/// `-I`: bytes, or a size with a unit (`1m`, `512k`), memcached's range 1k..=1024m.
fn parse_item_size(s: &str) -> Result<ItemSizeMax, SettingsError> {
    const FLAG: &str = "-I/--max-item-size";
    let bad = || SettingsError::flag(FLAG, format!("cannot parse '{s}'"));
    let bytes = parse_size(s, SizeSyntax::whole(Unit::Bytes)).map_err(|_| bad())?;
    let bytes = usize::try_from(bytes).map_err(|_| bad())?;
    if bytes < MIN_ITEM_SIZE_MAX_BYTES {
        return Err(SettingsError::flag(
            FLAG,
            format!("cannot be less than {MIN_ITEM_SIZE_MAX_BYTES} bytes"),
        ));
    }
    if bytes > MAX_ITEM_SIZE_MAX_BYTES {
        return Err(SettingsError::flag(
            FLAG,
            format!(
                "cannot be larger than {} megabytes",
                MAX_ITEM_SIZE_MAX_BYTES >> 20
            ),
        ));
    }
    Ok(ItemSizeMax(bytes))
}

/// `-p`: a port, or -1 for an ephemeral one as memcached reads it (so is 0 here; memcached's 0 turns TCP
/// off).
fn parse_tcp_port(s: &str) -> Result<u16, SettingsError> {
    match s.trim().parse::<i32>() {
        Ok(-1) => Some(0),
        Ok(p) => u16::try_from(p).ok(),
        Err(_) => None,
    }
    .ok_or_else(|| {
        SettingsError::flag(
            "-p/--port",
            format!("invalid port number '{s}' (0 or -1 picks an ephemeral port)"),
        )
    })
}

/// `-U`: a port, 0 (off) or -1 (ephemeral), as memcached reads it.
fn parse_udp_port(s: &str) -> Result<i32, SettingsError> {
    match s.trim().parse::<i32>() {
        Ok(p) if (EPHEMERAL_UDP_PORT..=i32::from(u16::MAX)).contains(&p) => Ok(p),
        _ => Err(SettingsError::flag(
            "-U/--udp-port",
            format!("invalid port number '{s}' (0 turns UDP off, -1 picks an ephemeral port)"),
        )),
    }
}

/// `-a`: octal permissions (`0700`, `755`), at most `0777`. memcached reads any text as octal and takes
/// what parses (`999` gives 0, a socket nobody may use); a mask that is not octal is refused here.
fn parse_unix_mask(s: &str) -> Result<u32, SettingsError> {
    match u32::from_str_radix(s.trim(), 8) {
        Ok(mask) if mask <= 0o777 => Ok(mask),
        _ => Err(SettingsError::flag(
            "-a/--unix-mask",
            format!("'{s}' is not an octal access mask (0000 to 0777)"),
        )),
    }
}

/// One `-l` entry (blanks around it dropped).
fn parse_listen(s: &str) -> Result<ListenSpec, SettingsError> {
    ListenSpec::parse(s.trim())
}

fn parse_slab_policy(s: &str) -> Result<ClassPolicySpec, SettingsError> {
    s.parse().map_err(|error| SettingsError::Policy {
        flag: "--slab-policy",
        error,
    })
}

fn parse_tenant_policy(s: &str) -> Result<TenantPolicySpec, SettingsError> {
    s.parse().map_err(|error| SettingsError::Policy {
        flag: "--tenant-policy",
        error,
    })
}

/// `-B` as given with `-S` and the tenants' passwords, under memcached's rules: `-S` alone means binary
/// and refuses ascii; connections that must authenticate without `-S` speak text only (memcached's `-Y`
/// refuses binary). `-S` needs passwords to check (memcached's SASL would need its own user database).
fn protocol_for(
    given: Option<Protocol>,
    sasl: bool,
    passwords: bool,
) -> Result<Protocol, SettingsError> {
    if sasl && !passwords {
        return Err(SettingsError::flag(
            "-S/--enable-sasl",
            "SASL needs users: give -Y FILE or --config with tenant passwords",
        ));
    }
    match (given, sasl, passwords) {
        (Some(Protocol::Ascii), true, _) => Err(SettingsError::flag(
            "-B/--protocol",
            "-B ascii cannot be used with -S: SASL authenticates binary clients (use -B binary or auto)",
        )),
        (Some(Protocol::Binary), false, true) => Err(SettingsError::flag(
            "-B/--protocol",
            "binary clients cannot use the text protocol's authentication (-Y / tenant passwords): add -S",
        )),
        (Some(p), _, _) => Ok(p),
        (None, true, _) => Ok(Protocol::Binary),
        (None, false, true) => Ok(Protocol::Ascii),
        (None, false, false) => Ok(Protocol::Auto),
    }
}
