//! [`OPTIONS`]: every `-o` option and the `stats settings` rows around them, in memcached 1.6.18's
//! order of those rows (see the parent module for what each field generates and the invariants).

use mrcache_engine::profiling;
use mrcache_engine::{ItemAccounting, MemoryLayout, Ranking};

use super::Effect::{Ignored, Records, RowOnly, Sets};
use super::PrintValue as Print;
use super::StatsValue::{Fixed, Live, Recorded, Setting};
use super::{yes_no, Live as L, OptionSpec, PrintValue, Row, StatsValue, ValueSyntax};
use crate::isolation::{allowed_cpus, CpuList, SchedPolicy, ServiceCpus};
use crate::settings::tls::{TlsMinVersion, TlsVerifyMode};
use crate::settings::{
    IoMode, OptionError, Settings, SettingsError, DEFAULT_LRU_CRAWLER_SLEEP_US,
    DEFAULT_SLAB_AUTOMOVE_RATIO, DEFAULT_SLAB_AUTOMOVE_WINDOW, DEFAULT_SLAB_POLICY,
    MAX_LRU_CRAWLER_SLEEP_US, MAX_SHARDS, MIN_PAGES_PER_DEFAULT_SHARD,
};

/// `-o hashpower=N`: memcached's range of exponents.
const HASHPOWER_RANGE: std::ops::RangeInclusive<u32> = 12..=64;
/// `-o slab_automove_window=N`: memcached's range of seconds.
const SLAB_AUTOMOVE_WINDOW_RANGE: std::ops::RangeInclusive<u32> = 3..=1800;
/// memcached 1.6.18 cuts chunks from 1 MiB pages whatever `-I` is (larger items are chained);
/// `slab_chunk_max` must divide it.
const MEMCACHED_SLAB_PAGE_BYTES: i64 = 1 << 20;
/// `read_buf_mem_limit` is given in megabytes.
const READ_BUF_MEM_LIMIT_UNIT_BYTES: u32 = 1 << 20;

/// A path as a row shows it, `none` when not given.
fn shown_path(path: &Option<std::path::PathBuf>, none: &str) -> String {
    path.as_ref()
        .map_or_else(|| none.to_string(), |p| p.display().to_string())
}

/// What the entries below leave out.
const NONE: OptionSpec = OptionSpec {
    keys: &[],
    value: None,
    help: "",
    default: None,
    effect: RowOnly,
    stats: None,
    print: None,
};

const fn value(metavar: &'static str, expects: &'static str) -> Option<ValueSyntax> {
    Some(ValueSyntax { metavar, expects })
}

const fn stat(name: &'static str, value: StatsValue) -> Option<Row<StatsValue>> {
    Some(Row { name, value })
}

const fn print(name: &'static str, value: PrintValue) -> Option<Row<PrintValue>> {
    Some(Row { name, value })
}

/// A `stats settings` row that no `-o` key sets.
const fn row(name: &'static str, value: StatsValue) -> OptionSpec {
    OptionSpec {
        stats: stat(name, value),
        ..NONE
    }
}

/// An option memcached tunes its internals with: accepted with any value (shown as `metavar` in
/// `-h`) or none; its row, if memcached prints one, shows memcached's default.
const fn ignored(
    keys: &'static [&'static str],
    metavar: Option<&'static str>,
    help: &'static str,
    shown: Option<(&'static str, &'static str)>,
) -> OptionSpec {
    OptionSpec {
        keys,
        value: match metavar {
            Some(metavar) => value(metavar, ""),
            None => None,
        },
        help,
        effect: Ignored,
        stats: match shown {
            Some((name, default)) => stat(name, Fixed(default)),
            None => None,
        },
        ..NONE
    }
}

/// The options, with the `stats settings` rows between them, in memcached's order of the rows.
// Every entry ends in `..NONE`, even one that sets every field, so that a field added to
// `OptionSpec` changes only the entries that use it.
#[allow(clippy::needless_update)]
pub(crate) static OPTIONS: &[OptionSpec] = &[
    ignored(
        &["maxconns_fast", "no_maxconns_fast"],
        None,
        "memcached: refuse connections past -c at once; mrcached always does (one more is \
         accepted, told why and closed)",
        Some(("maxconns_fast", "yes")),
    ),
    OptionSpec {
        keys: &["hashpower"],
        value: value("N", "a power of two exponent"),
        help:
            "memcached: the hash table's starting size, 2^N (12 to 64); mrcached's index grows by \
               itself. Shown as hashpower_init",
        effect: Records {
            check: |arg| Ok(arg.number_in(HASHPOWER_RANGE)?.to_string()),
            default: "0",
        },
        stats: stat("hashpower_init", Recorded),
        print: print("hashpower_init", Print::Recorded),
        ..NONE
    },
    OptionSpec {
        keys: &["slab_reassign", "no_slab_reassign"],
        help: "allow `slabs reassign`",
        default: Some(|| "on".into()),
        effect: Sets(|s, arg| {
            s.slab_reassign = !arg.negated();
            Ok(())
        }),
        stats: stat("slab_reassign", Setting(|s| yes_no(s.slab_reassign).into())),
        print: print(
            "slab_reassign",
            Print::Setting(|s| s.slab_reassign.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["slab_automove"],
        value: value("N", "0, 1 or 2"),
        help: "memcached's movers instead of the default class policy (see --slab-policy): 0: \
               manual only, 1 (or no value, as in memcached): memcached's age balancer, 2: move on \
               eviction",
        default: Some(|| format!("not given, so {DEFAULT_SLAB_POLICY} runs")),
        effect: Sets(|s, arg| {
            let mode: u32 = match arg.optional_value() {
                // memcached: a bare slab_automove is mode 1.
                None => 1,
                Some(mode) => mode
                    .parse()
                    .map_err(|_| OptionError::Expected("0, 1 or 2"))?,
            };
            if mode > 2 {
                return Err(OptionError::Expected("0, 1 or 2"));
            }
            s.slab_automove = mode;
            s.slab_automove_given = true;
            Ok(())
        }),
        stats: stat("slab_automove", Live(L::AutomoveMode)),
        print: print(
            "slab_automove",
            Print::Setting(|s| s.slab_automove.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["slab_automove_ratio"],
        value: value("F", "a ratio"),
        help: "youngest/oldest age ratio that triggers a move",
        default: Some(|| DEFAULT_SLAB_AUTOMOVE_RATIO.to_string()),
        effect: Sets(|s, arg| {
            let ratio: f64 = arg.number()?;
            if !(ratio > 0.0 && ratio <= 1.0) {
                return Err(OptionError::Expected("greater than 0 and at most 1"));
            }
            s.slab_automove_ratio = ratio;
            Ok(())
        }),
        stats: stat("slab_automove_ratio", Live(L::AutomoveRatio)),
        print: print(
            "slab_automove_ratio",
            Print::Setting(|s| s.slab_automove_ratio.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["slab_automove_window"],
        value: value("N", "seconds"),
        help: "seconds of samples per class",
        default: Some(|| DEFAULT_SLAB_AUTOMOVE_WINDOW.to_string()),
        effect: Sets(|s, arg| {
            s.slab_automove_window = arg.number_in(SLAB_AUTOMOVE_WINDOW_RANGE)?;
            Ok(())
        }),
        stats: stat(
            "slab_automove_window",
            Setting(|s| s.slab_automove_window.to_string()),
        ),
        print: print(
            "slab_automove_window",
            Print::Setting(|s| s.slab_automove_window.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["slab_chunk_max"],
        value: value("N", "bytes"),
        help: "memcached: its largest slab chunk, in bytes (1.6.18 reads bytes although its -h says \
               kilobytes); it must divide -I and memcached's 1 MiB page, and not exceed -I. mrcached's \
               largest chunk is half a page",
        // memcached 1.6.18 crashes on 0 and a value that does not parse; those are refused here.
        effect: Records {
            check: |arg| match arg.strtol()? {
                n if n > 0 => Ok(n.to_string()),
                _ => Err(OptionError::Expected("greater than 0")),
            },
            // Half of memcached's page.
            default: "524288",
        },
        stats: stat("slab_chunk_max", Recorded),
        print: print("slab_chunk_max", Print::Recorded),
        ..NONE
    },
    OptionSpec {
        keys: &["lru_crawler", "no_lru_crawler"],
        help: "the LRU crawler and the background reaper",
        default: Some(|| "on".into()),
        effect: Sets(|s, arg| {
            s.lru_crawler = !arg.negated();
            Ok(())
        }),
        stats: stat("lru_crawler", Live(L::LruCrawler)),
        print: print("lru_crawler", Print::Setting(|s| s.lru_crawler.to_string())),
        ..NONE
    },
    OptionSpec {
        keys: &["lru_crawler_sleep"],
        value: value("N", "microseconds"),
        help: "microseconds the crawler sleeps after each batch, up to 1000000",
        default: Some(|| DEFAULT_LRU_CRAWLER_SLEEP_US.to_string()),
        effect: Sets(|s, arg| {
            s.lru_crawler_sleep_us = arg.number_in(0..=MAX_LRU_CRAWLER_SLEEP_US)?;
            Ok(())
        }),
        stats: stat("lru_crawler_sleep", Live(L::LruCrawlerSleep)),
        print: print(
            "lru_crawler_sleep",
            Print::Setting(|s| s.lru_crawler_sleep_us.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["lru_crawler_tocrawl"],
        value: value("N", "items per class"),
        help: "items of each class one crawl inspects at most; 0: all",
        default: Some(|| "0".into()),
        effect: Sets(|s, arg| {
            s.lru_crawler_tocrawl = arg.number()?;
            Ok(())
        }),
        stats: stat("lru_crawler_tocrawl", Live(L::LruCrawlerTocrawl)),
        print: print(
            "lru_crawler_tocrawl",
            Print::Setting(|s| s.lru_crawler_tocrawl.to_string()),
        ),
        ..NONE
    },
    row("tail_repair_time", Fixed("0")),
    row("flush_enabled", Setting(|s| yes_no(s.flush_enabled).into())),
    row("dump_enabled", Setting(|s| yes_no(s.dump_enabled).into())),
    ignored(
        &["hash_algorithm"],
        Some("A"),
        "memcached: the key hash (murmur3, jenkins); mrcached hashes with xxh3",
        Some(("hash_algorithm", "xxh3")),
    ),
    ignored(
        &["lru_maintainer", "no_lru_maintainer"],
        None,
        "memcached: its LRU maintainer thread; mrcached's maintenance thread always runs",
        Some(("lru_maintainer_thread", "yes")),
    ),
    row("lru_segmented", Fixed("no")),
    ignored(
        &["hot_lru_pct"],
        Some("N"),
        "memcached: the hot LRU's percentage of a class (mrcached's LRU is not segmented)",
        Some(("hot_lru_pct", "20")),
    ),
    ignored(
        &["warm_lru_pct"],
        Some("N"),
        "memcached: the warm LRU's percentage of a class",
        Some(("warm_lru_pct", "40")),
    ),
    ignored(
        &["hot_max_factor"],
        Some("F"),
        "memcached: items idle longer than this times the cold LRU's age leave the hot LRU",
        Some(("hot_max_factor", "0.20")),
    ),
    ignored(
        &["warm_max_factor"],
        Some("F"),
        "memcached: the same for the warm LRU",
        Some(("warm_max_factor", "2.00")),
    ),
    row(
        "temp_lru",
        Setting(|s| yes_no(s.recorded.get("temporary_ttl").is_some()).into()),
    ),
    OptionSpec {
        keys: &["temporary_ttl"],
        value: value("N", "seconds"),
        help: "memcached: items with a TTL of at most N seconds get an LRU of their own that is never \
               evicted from (mrcached's LRU is not segmented). Giving it shows temp_lru yes",
        effect: Records {
            // memcached reads it with atoi into an unsigned field.
            check: |arg| Ok((arg.atoi()? as u32).to_string()),
            default: "61",
        },
        stats: stat("temporary_ttl", Recorded),
        print: print("temporary_ttl", Print::Recorded),
        ..NONE
    },
    OptionSpec {
        keys: &["idle_timeout"],
        value: value("N", "seconds"),
        help: "close connections that have waited more than N seconds for a command (or the rest \
               of its line), checked once a second; memcached's idle_kicks counts them. One that is \
               sending a value, has replies its client has not taken, or watches logs is not idle",
        default: Some(|| "0, never".into()),
        effect: Sets(|s, arg| {
            s.idle_timeout_secs = arg.atoi()?;
            Ok(())
        }),
        stats: stat(
            "idle_timeout",
            Setting(|s| s.idle_timeout_secs.to_string()),
        ),
        print: print(
            "idle_timeout",
            Print::Setting(|s| s.idle_timeout_secs.to_string()),
        ),
        ..NONE
    },
    ignored(
        &["watcher_logbuf_size"],
        Some("N"),
        "memcached: each watcher's log buffer, kilobytes",
        Some(("watcher_logbuf_size", "262144")),
    ),
    ignored(
        &["worker_logbuf_size"],
        Some("N"),
        "memcached: each worker's log buffer, kilobytes",
        Some(("worker_logbuf_size", "65536")),
    ),
    OptionSpec {
        keys: &["read_buf_mem_limit"],
        value: value("N", "megabytes"),
        help: "memcached: megabytes its connections' read buffers may hold together, shown in bytes \
               (as memcached computes them, in 32 bits). mrcached bounds each connection's buffers \
               instead",
        effect: Records {
            check: |arg| {
                let megabytes = arg.strtoul()?;
                Ok(megabytes
                    .wrapping_mul(READ_BUF_MEM_LIMIT_UNIT_BYTES)
                    .to_string())
            },
            default: "0",
        },
        stats: stat("read_buf_mem_limit", Recorded),
        print: print("read_buf_mem_limit", Print::Recorded),
        ..NONE
    },
    row("track_sizes", Fixed("no")),
    row("inline_ascii_response", Fixed("no")),
    row("num_napi_ids", Fixed("(null)")),
    // `-e`; memcached prints `(null)` without it.
    row(
        "memory_file",
        Setting(|s| {
            s.memory_file
                .as_ref()
                .map_or("(null)".into(), |p| p.display().to_string())
        }),
    ),
    // memcached's TLS group (`-Z`): a memcached built with TLS prints these rows with or without it.
    row("ssl_enabled", Setting(|s| yes_no(s.tls.enabled).into())),
    OptionSpec {
        keys: &["ssl_chain_cert"],
        value: value("FILE", "a file"),
        help: "TLS (-Z): the server's certificate chain, PEM",
        effect: Sets(|s, arg| {
            s.tls.chain_cert = Some(arg.value()?.into());
            Ok(())
        }),
        stats: stat("ssl_chain_cert", Setting(|s| shown_path(&s.tls.chain_cert, "(null)"))),
        print: print("ssl_chain_cert", Print::Setting(|s| shown_path(&s.tls.chain_cert, "none"))),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_key"],
        value: value("FILE", "a file"),
        help: "TLS (-Z): the certificate's private key, PEM",
        effect: Sets(|s, arg| {
            s.tls.key = Some(arg.value()?.into());
            Ok(())
        }),
        stats: stat("ssl_key", Setting(|s| shown_path(&s.tls.key, "(null)"))),
        print: print("ssl_key", Print::Setting(|s| shown_path(&s.tls.key, "none"))),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_verify_mode"],
        value: value("N", "0, 1, 2 or 3"),
        help: "TLS (-Z): client certificates: 0 not asked for, 1 asked for, 2 required, 3 as 2 \
               (memcached's once; rustls never renegotiates); checked against ssl_ca_cert",
        default: Some(|| "0".into()),
        effect: Sets(|s, arg| {
            s.tls.verify_mode = TlsVerifyMode::from_number(arg.number()?)
                .ok_or(OptionError::Expected("0, 1, 2 or 3"))?;
            Ok(())
        }),
        stats: stat(
            "ssl_verify_mode",
            Setting(|s| s.tls.verify_mode.number().to_string()),
        ),
        print: print(
            "ssl_verify_mode",
            Print::Setting(|s| s.tls.verify_mode.number().to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_keyformat"],
        value: value("N", "a number"),
        help: "TLS (-Z): the key's format, memcached's numbers; only 1 (PEM) is read",
        default: Some(|| "1 (PEM)".into()),
        effect: Sets(|s, arg| {
            s.tls.keyformat = arg.number()?;
            Ok(())
        }),
        stats: stat("ssl_keyformat", Setting(|s| s.tls.keyformat.to_string())),
        print: print(
            "ssl_keyformat",
            Print::Setting(|s| s.tls.keyformat.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_ciphers"],
        value: value("LIST", "an OpenSSL cipher list"),
        help: "TLS (-Z): memcached's OpenSSL cipher list; shown, no effect (rustls negotiates among \
               its own suites)",
        effect: Sets(|s, arg| {
            s.tls.ciphers = Some(arg.value()?.to_string());
            Ok(())
        }),
        stats: stat(
            "ssl_ciphers",
            Setting(|s| s.tls.ciphers.clone().unwrap_or_else(|| "NULL".into())),
        ),
        print: print(
            "ssl_ciphers",
            Print::Setting(|s| s.tls.ciphers.clone().unwrap_or_else(|| "none".into())),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_ca_cert"],
        value: value("FILE", "a file"),
        help: "TLS (-Z): the CAs whose client certificates ssl_verify_mode accepts, PEM",
        effect: Sets(|s, arg| {
            s.tls.ca_cert = Some(arg.value()?.into());
            Ok(())
        }),
        stats: stat("ssl_ca_cert", Setting(|s| shown_path(&s.tls.ca_cert, "NULL"))),
        print: print("ssl_ca_cert", Print::Setting(|s| shown_path(&s.tls.ca_cert, "none"))),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_wbuf_size"],
        value: value("KB", "kilobytes"),
        help: "TLS (-Z): memcached's per-connection TLS write buffer, kilobytes; shown (rustls \
               bounds its own buffers)",
        default: Some(|| "16".into()),
        effect: Sets(|s, arg| {
            let kb: u32 = arg.number()?;
            s.tls.wbuf_bytes = kb
                .checked_mul(1024)
                .ok_or(OptionError::Expected("at most 4194303"))?;
            Ok(())
        }),
        stats: stat("ssl_wbuf_size", Setting(|s| s.tls.wbuf_bytes.to_string())),
        print: print(
            "ssl_wbuf_size",
            Print::Setting(|s| (s.tls.wbuf_bytes / 1024).to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_session_cache"],
        help: "TLS (-Z): keep sessions so that returning clients resume them",
        default: Some(|| "off".into()),
        effect: Sets(|s, _| {
            s.tls.session_cache = true;
            Ok(())
        }),
        stats: stat(
            "ssl_session_cache",
            Setting(|s| yes_no(s.tls.session_cache).into()),
        ),
        print: print(
            "ssl_session_cache",
            Print::Setting(|s| s.tls.session_cache.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_kernel_tls"],
        help: "TLS (-Z): memcached's kernel TLS offload; shown, no effect",
        default: Some(|| "off".into()),
        effect: Sets(|s, _| {
            s.tls.kernel_tls = true;
            Ok(())
        }),
        stats: stat("ssl_kernel_tls", Setting(|s| yes_no(s.tls.kernel_tls).into())),
        print: print(
            "ssl_kernel_tls",
            Print::Setting(|s| s.tls.kernel_tls.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["ssl_min_version"],
        value: value("V", "tlsv1.0, tlsv1.1, tlsv1.2 or tlsv1.3"),
        help: "TLS (-Z): the oldest protocol a client may use (rustls: tlsv1.2 or tlsv1.3; the \
               older names allow 1.2)",
        default: Some(|| "tlsv1.2".into()),
        effect: Sets(|s, arg| {
            s.tls.min_version = TlsMinVersion::parse(arg.value()?)
                .ok_or(OptionError::Expected("tlsv1.0, tlsv1.1, tlsv1.2 or tlsv1.3"))?;
            Ok(())
        }),
        stats: stat("ssl_min_version", Setting(|s| s.tls.min_version.to_string())),
        print: print(
            "ssl_min_version",
            Print::Setting(|s| s.tls.min_version.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["shards"],
        value: value("N", "a power of two"),
        help: "mrcached: engine lock domains, a power of two",
        default: Some(|| {
            format!(
                "threads rounded up to a power of two, at most one per \
                 {MIN_PAGES_PER_DEFAULT_SHARD} pages of -m"
            )
        }),
        effect: Sets(|s, arg| {
            let n: usize = arg.number()?;
            if n == 0 || !n.is_power_of_two() || n > MAX_SHARDS {
                return Err(OptionError::NotPowerOfTwo { max: MAX_SHARDS });
            }
            s.shards = n;
            Ok(())
        }),
        stats: stat("shards", Live(L::Shards)),
        print: print("shards", Print::Setting(|s| s.shards.to_string())),
        ..NONE
    },
    OptionSpec {
        keys: &["io"],
        value: value("P", "auto, uring or epoll"),
        help: "mrcached: the network I/O path: uring (io_uring: multishot accept and receive into \
               provided buffers, sends batched into one system call per event-loop turn), epoll, \
               or auto (the default: io_uring where the kernel runs it, else epoll, saying why; \
               io_uring measured no more CPU per request than epoll at any load, more throughput \
               and a lower tail; the path in use is logged with -v and shown as `io` in `stats \
               settings`)",
        effect: Sets(|s, arg| {
            s.io =
                IoMode::parse(arg.value()?).ok_or(OptionError::Expected("auto, uring or epoll"))?;
            Ok(())
        }),
        stats: stat("io", Live(L::Io)),
        print: print("io", Print::Setting(|s| s.io.name().into())),
        ..NONE
    },
    row("slab_policy", Live(L::SlabPolicy)),
    OptionSpec {
        keys: &["item_accounting"],
        value: value("A", "compact or memcached"),
        help: "mrcached: how an item's size picks its slab class: compact (the bytes it occupies; \
               class 1 is 80 B; default) or memcached (memcached's item header and classes, as in \
               mrcache sim --memcached-defaults). -I limits items as memcached does either way",
        effect: Sets(|s, arg| {
            s.item_accounting = ItemAccounting::parse(arg.value()?)
                .ok_or(OptionError::Expected("compact or memcached"))?;
            Ok(())
        }),
        stats: stat("item_accounting", Live(L::ItemAccounting)),
        print: print(
            "item_accounting",
            Print::Setting(|s| s.item_accounting.name().into()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["memory_layout"],
        value: value("L", "slab or log"),
        help: "mrcached: log (default; Memshare's log-structured memory: items of every size \
               appended to 1 MiB segments per tenant, a cleaner that keeps the highest-ranked \
               items; memory moves between sizes and tenants in bytes) or slab (memcached's slab \
               classes, for --slab-policy, slab_automove and `slabs reassign`). Under log, `stats \
               slabs` shows one class (1) whose pages are the segments, `slabs reassign` answers \
               NOSPARE for any two classes (no class holds pages), SAME and BADCLASS as memcached, \
               and memcached's slab options (-f, -n, slab_chunk_max, slab_automove) have no effect",
        effect: Sets(|s, arg| {
            s.memory_layout =
                MemoryLayout::parse(arg.value()?).ok_or(OptionError::Expected("slab or log"))?;
            Ok(())
        }),
        stats: stat("memory_layout", Live(L::MemoryLayout)),
        print: print(
            "memory_layout",
            Print::Setting(|s| s.memory_layout.name().into()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["log_ranking"],
        value: value("NAME", "a ranking"),
        help: "mrcached, log layout: how the cleaner ranks the items of tenants that set no \
               `ranking` in --config: density (default; accesses per byte), lru, lfu, slru \
               (segmented LRU) or clock (kept while read between sweeps; S3-FIFO's main queue)",
        effect: Sets(|s, arg| {
            s.log_ranking = Ranking::parse(arg.value()?)
                .ok_or(OptionError::Expected(Ranking::EXPECTED))?;
            Ok(())
        }),
        stats: stat("log_ranking", Setting(|s| s.log_ranking.name().into())),
        print: print("log_ranking", Print::Setting(|s| s.log_ranking.name().into())),
        ..NONE
    },
    OptionSpec {
        keys: &["log_probation"],
        value: value("SHARE", "0 to 0.9"),
        help: "mrcached, log layout: the share of each tenant pool's segments where keys written \
               for the first time wait on probation (S3-FIFO's small queue): only those read \
               before it is cleaned enter the main queue, the rest are evicted and remembered, so \
               that one that returns enters the main queue directly. 0 (default) for none; 0.1 is \
               S3-FIFO's. Pools of fewer than 8 segments per shard take no probation",
        effect: Sets(|s, arg| {
            let v: f64 = arg.number()?;
            if !(0.0..=mrcache_engine::config::MAX_LOG_PROBATION).contains(&v) {
                return Err(OptionError::Expected("in [0, 0.9]"));
            }
            s.log_probation = v;
            Ok(())
        }),
        stats: stat("log_probation", Setting(|s| s.log_probation.to_string())),
        print: print("log_probation", Print::Setting(|s| s.log_probation.to_string())),
        ..NONE
    },
    OptionSpec {
        keys: &["log_choose"],
        value: value("P/P/...", "eviction policies"),
        help: "mrcached, log layout: let the cache choose its eviction policy among these \
               (separated by /; each a ranking, or a ranking+p for a tenth of the segments on \
               probation, +p0.05 for another share; e.g. density/clock+p): a miniature simulation of each runs on a \
               sample of the keys (-o log_choose_rate) and the log switches to the one that \
               misses least, with hysteresis; `stats` shows log_policy. The first is the starting \
               policy. Default: none (no chooser)",
        effect: Sets(|s, arg| {
            let policies = mrcache_engine::LogPolicy::parse_list(arg.value()?)
                .ok_or(OptionError::Expected(
                    "rankings (lru, lfu, slru, density, clock), each with +p or +pSHARE for probation",
                ))?;
            s.log_choose = policies;
            Ok(())
        }),
        stats: stat(
            "log_choose",
            Setting(|s| {
                let names: Vec<String> = s.log_choose.iter().map(|p| p.name()).collect();
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join("/")
                }
            }),
        ),
        print: print(
            "log_choose",
            Print::Setting(|s| s.log_choose.iter().map(|p| p.name()).collect::<Vec<_>>().join("/")),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["log_choose_rate"],
        value: value("R", "a rate in (0, 1]"),
        help: "mrcached, log layout: the share of keys the chooser's miniatures see, and of the \
               memory each holds (default 1/16)",
        effect: Sets(|s, arg| {
            let rate: f64 = arg.number()?;
            if !(rate > 0.0 && rate <= 1.0) {
                return Err(OptionError::Expected("in (0, 1]"));
            }
            s.log_choose_rate = rate;
            Ok(())
        }),
        stats: stat("log_choose_rate", Setting(|s| s.log_choose_rate.to_string())),
        print: print("log_choose_rate", Print::Setting(|s| s.log_choose_rate.to_string())),
        ..NONE
    },
    row("tenant_policy", Live(L::TenantPolicy)),
    // Options memcached prints no row for.
    OptionSpec {
        keys: &["modern", "no_modern"],
        help: "no_modern turns slab_reassign and automove off, as in memcached",
        effect: Sets(|s, arg| {
            if arg.negated() {
                s.slab_reassign = false;
                s.slab_automove = 0;
                s.slab_automove_given = true;
            }
            Ok(())
        }),
        ..NONE
    },
    ignored(
        &["no_hashexpand"],
        None,
        "memcached: keep the hash table at its starting size",
        None,
    ),
    ignored(
        &["relaxed_privileges"],
        None,
        "memcached (debug builds): loosen its system-call sandbox for its test suite; mrcached \
         has no sandbox",
        None,
    ),
    OptionSpec {
        keys: &["mrc_sample_rate"],
        value: value("F", "a rate in [0, 1]"),
        help: "mrcached: initial sampling rate of the per-class miss-ratio-curve profilers, in \
               [0, 1]; 0 turns profiling off",
        default: Some(|| {
            format!(
                "{}: every key until a profiler's key bound lowers its rate; profilers use at most \
                 {}% of -m, or {} MiB where that is more, up to 1/{} of -m",
                profiling::DEFAULT_SAMPLE_RATE,
                profiling::PROFILE_MEMORY_SHARE * 100.0,
                profiling::PROFILE_MEMORY_FLOOR_BYTES >> 20,
                profiling::PROFILE_FLOOR_MAX_FRACTION,
            )
        }),
        effect: Sets(|s, arg| {
            let rate: f64 = arg.number()?;
            if !(0.0..=1.0).contains(&rate) {
                return Err(OptionError::Expected("in [0, 1]"));
            }
            s.mrc_sample_rate = rate;
            Ok(())
        }),
        print: print(
            "mrc_sample_rate",
            Print::Setting(|s| s.mrc_sample_rate.to_string()),
        ),
        ..NONE
    },
    // Latency isolation (crate::isolation): CPU lists must lie in the process's allowed set.
    OptionSpec {
        keys: &["worker_cpus"],
        value: value("LIST", "a CPU list"),
        help: "mrcached: pin worker i to the i-th CPU of LIST (taskset syntax: 0,2,4-7; in turn \
               when -t is larger, which makes workers time-share: a warning says so). Every CPU \
               must be one this process may run on (Leverich & Kozyrakis §2.5)",
        effect: Sets(|s, arg| {
            s.isolation.worker_cpus = Some(allowed_cpu_list(arg.value()?)?);
            Ok(())
        }),
        print: print(
            "worker_cpus",
            Print::Setting(|s| {
                s.isolation
                    .worker_cpus
                    .as_ref()
                    .map_or("any".into(), ToString::to_string)
            }),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["service_cpus"],
        value: value("LIST|any", "a CPU list or any"),
        help: "mrcached: CPUs of the listener and maintenance threads (default: the workers' CPUs \
               when worker_cpus is given; any: unpinned)",
        effect: Sets(|s, arg| {
            s.isolation.service_cpus = match arg.value()? {
                "any" => ServiceCpus::Any,
                list => ServiceCpus::List(allowed_cpu_list(list)?),
            };
            Ok(())
        }),
        print: print(
            "service_cpus",
            Print::Setting(|s| s.isolation.service_cpus.to_string()),
        ),
        ..NONE
    },
    OptionSpec {
        keys: &["sched"],
        value: value("POLICY", "fifo:PRIO, rr:PRIO or other"),
        help: "mrcached: the workers' scheduling policy: fifo:PRIO or rr:PRIO (real time, PRIO \
               1-99: a batch job on the same CPU cannot make them time-share; needs root, \
               CAP_SYS_NICE or RLIMIT_RTPRIO >= PRIO, else start-up fails naming the option) or \
               other (the normal scheduler). Default: the policy mrcached started with (e.g. from \
               chrt)",
        effect: Sets(|s, arg| {
            s.isolation.sched = SchedPolicy::parse(arg.value()?).map_err(OptionError::Invalid)?;
            Ok(())
        }),
        print: print("sched", Print::Setting(|s| s.isolation.sched.to_string())),
        ..NONE
    },
];

/// memcached's checks of `slab_chunk_max` against `-I`, once every flag is read, in its words.
pub(crate) fn check_slab_chunk_max(s: &Settings) -> Result<(), SettingsError> {
    let Some(chunk) = s.recorded.get("slab_chunk_max") else {
        return Ok(());
    };
    let chunk: i64 = chunk.parse().expect("recorded as a positive number");
    let item = s.item_size_max_bytes as i64;
    let refusal = if chunk > item {
        format!("slab_chunk_max (bytes: {chunk}) cannot be larger than -I (item_size_max {item})")
    } else if item % chunk != 0 {
        format!("-I (item_size_max: {item}) must be evenly divisible by slab_chunk_max (bytes: {chunk})")
    } else if MEMCACHED_SLAB_PAGE_BYTES % chunk != 0 {
        format!(
            "slab_chunk_max (bytes: {chunk}) must divide evenly into \
             {MEMCACHED_SLAB_PAGE_BYTES} (slab_page_size)"
        )
    } else {
        return Ok(());
    };
    Err(SettingsError::Extended {
        key: "slab_chunk_max".into(),
        error: OptionError::Invalid(refusal),
    })
}

/// A CPU list whose every CPU this process may run on.
fn allowed_cpu_list(text: &str) -> Result<CpuList, OptionError> {
    let list = CpuList::parse(text).map_err(OptionError::Invalid)?;
    let allowed = allowed_cpus().map_err(|e| OptionError::AllowedCpusUnreadable(e.to_string()))?;
    match list.outside(&allowed).as_slice() {
        [] => Ok(list),
        outside => Err(OptionError::CpusNotAllowed {
            outside: outside
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            allowed: allowed.to_string(),
        }),
    }
}
