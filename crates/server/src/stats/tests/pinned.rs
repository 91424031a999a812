//! `stats settings` and `--print-config` pinned for a few command lines: the expected texts in
//! `pinned/` were written by the code before the `-o` table replaced the hand-written rows, so these
//! tests prove the table prints what the hand-written code printed: `stats settings` byte for byte,
//! `--print-config` line for line (its `-o` rows now follow the flags' in the table's order, where
//! they were interleaved with them). Since then: `slab_chunk_max` shows the value given, in bytes, as
//! memcached 1.6.18 does, and the rows of the options and flags added later were appended.
//!
//! Two things vary by machine and are masked before comparing: the checkout's own path (the tests
//! name files inside it) becomes `$DIR`, and `io` under `-o io=auto` (the kernel decides) becomes
//! `<resolved>`. `MRCACHE_PIN_WRITE=1` rewrites the files from the current code (review the diff).

use super::*;
use crate::settings::{Command, IoMode};

/// The command lines pinned, each with its file's name.
const CASES: &[(&str, &[&str])] = &[
    ("default", &[]),
    (
        "memcached-options",
        &[
            "-o",
            "slab_automove=2,slab_automove_ratio=0.5,slab_automove_window=10",
            "-o",
            "hashpower=20,no_lru_crawler,shards=4,slab_chunk_max=512,modern",
            "-o",
            "hot_lru_pct=30,warm_lru_pct=10,hot_max_factor=0.5,warm_max_factor=4,maxconns_fast",
            "-o",
            "lru_crawler_sleep=5,lru_crawler_tocrawl=9,hash_algorithm=murmur3,lru_maintainer",
            "-o",
            "worker_logbuf_size=1,watcher_logbuf_size=2,no_hashexpand,no_maxconns_fast",
        ],
    ),
    (
        "flags-and-ours",
        &[
            "-p",
            "0",
            "-l",
            "127.0.0.1,[::1]:22122",
            "-m",
            "128",
            "-t",
            "3",
            "-c",
            "99",
            "-I",
            "2m",
            "-f",
            "1.5",
            "-n",
            "60",
            "-vv",
            "-M",
            "-C",
            "-R",
            "7",
            "-B",
            "ascii",
            "-b",
            "50",
            "-A",
            "-F",
            "-X",
            "-W",
            "-D",
            "#",
            "-e",
            "$DIR/no-such-memory-file",
            "-o",
            "no_modern,item_accounting=memcached,memory_layout=slab,io=epoll",
            "-o",
            "mrc_sample_rate=0.5,slab_chunk_max=1024",
            "--slab-policy",
            "psa:misses=50",
            "--admin-port",
            "0",
        ],
    ),
    // Compared byte for byte with memcached 1.6.18's rows by tests/memcached_flags.rs.
    (
        "memcached-1.6.18-flags",
        &[
            "-d",
            "-P",
            "/run/mrcached.pid",
            "-o",
            "idle_timeout=3,temporary_ttl=30,read_buf_mem_limit=2,slab_chunk_max=16384",
            "-o",
            "slab_automove,relaxed_privileges",
        ],
    ),
    (
        "tenants",
        &[
            "-Y",
            "$DIR/src/stats/tests/pinned/users",
            "--tenant-policy",
            "static",
            "-o",
            "sched=other,service_cpus=any,no_slab_reassign,slab_automove=0,lru_crawler",
        ],
    ),
];

fn manifest_dir() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

fn settings_for(args: &[&str]) -> Settings {
    let args = args.iter().map(|a| a.replace("$DIR", manifest_dir()));
    match Settings::parse_from(std::iter::once("mrcached".to_string()).chain(args)) {
        Ok(Command::Run(s)) => s,
        other => panic!("{other:?}"),
    }
}

/// `stats settings` then `--print-config` (as `main` prints it), masked.
fn render(given: Settings) -> String {
    let auto_io = given.io == IoMode::Auto;
    let printed: String = given
        .describe()
        .into_iter()
        .map(|(name, value)| format!("{name} = {value}\n"))
        .collect();
    let ctx = ctx_with(given);
    let _memory = crate::memory::MemoryModel::new(&ctx);
    let mut out = Vec::new();
    settings(&ctx, &mut out);
    let mut text = String::from_utf8(out).unwrap();
    if auto_io {
        let resolved = crate::net::resolve_io(IoMode::Auto).map_or("unavailable", |b| b.name());
        text = text.replace(&format!("STAT io {resolved}\r\n"), "STAT io <resolved>\r\n");
    }
    format!("{text}--print-config\n{printed}").replace(manifest_dir(), "$DIR")
}

#[test]
fn stats_settings_and_print_config_are_pinned() {
    let dir = std::path::Path::new(manifest_dir()).join("src/stats/tests/pinned");
    let write = std::env::var_os("MRCACHE_PIN_WRITE").is_some();
    for (name, args) in CASES {
        let path = dir.join(format!("{name}.txt"));
        let now = render(settings_for(args));
        if write {
            std::fs::write(&path, &now).unwrap();
            continue;
        }
        let pinned = std::fs::read_to_string(&path).unwrap();
        let (stats_now, print_now) = now.split_once("--print-config\n").unwrap();
        let (stats_pinned, print_pinned) = pinned.split_once("--print-config\n").unwrap();
        assert_eq!(
            stats_now,
            stats_pinned,
            "{name}: stats settings, {}",
            path.display()
        );
        assert_eq!(
            sorted_lines(print_now),
            sorted_lines(print_pinned),
            "{name}: --print-config, {}",
            path.display()
        );
    }
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines
}
