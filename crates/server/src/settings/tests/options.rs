//! `-o` refusals pinned word for word: every way an option's key or value can be refused, with the
//! message the server printed before the options became a table. Each message names the key.

use super::*;

/// `-o ARG` and the whole message (what `main` prints after `mrcached: `).
const REFUSALS: &[(&str, &str)] = &[
    (
        "bogus_opt=1",
        "-o: unknown or unsupported option 'bogus_opt'",
    ),
    (
        "tail_repair_time=0",
        "-o: unknown or unsupported option 'tail_repair_time'",
    ),
    ("slab_automove=3", "-o slab_automove: must be 0, 1 or 2"),
    ("slab_automove=x", "-o slab_automove: must be 0, 1 or 2"),
    (
        "slab_automove_ratio",
        "-o slab_automove_ratio: needs a value (a ratio)",
    ),
    (
        "slab_automove_ratio=0",
        "-o slab_automove_ratio: must be greater than 0 and at most 1",
    ),
    (
        "slab_automove_ratio=x",
        "-o slab_automove_ratio: must be a number",
    ),
    (
        "slab_automove_window",
        "-o slab_automove_window: needs a value (seconds)",
    ),
    (
        "slab_automove_window=2",
        "-o slab_automove_window: must be between 3 and 1800",
    ),
    (
        "slab_automove_window=x",
        "-o slab_automove_window: must be a number",
    ),
    ("slab_chunk_max", "-o slab_chunk_max: needs a value (bytes)"),
    ("slab_chunk_max=x", "-o slab_chunk_max: must be a number"),
    (
        "slab_chunk_max=16384x",
        "-o slab_chunk_max: must be a number",
    ),
    ("slab_chunk_max=1k", "-o slab_chunk_max: must be a number"),
    (
        "slab_chunk_max=0",
        "-o slab_chunk_max: must be greater than 0",
    ),
    (
        "slab_chunk_max=-1",
        "-o slab_chunk_max: must be greater than 0",
    ),
    // memcached's own words for the checks against -I and its page.
    (
        "slab_chunk_max=1000",
        "-o slab_chunk_max: -I (item_size_max: 1048576) must be evenly divisible by \
         slab_chunk_max (bytes: 1000)",
    ),
    (
        "slab_chunk_max=2097152",
        "-o slab_chunk_max: slab_chunk_max (bytes: 2097152) cannot be larger than -I \
         (item_size_max 1048576)",
    ),
    ("temporary_ttl", "-o temporary_ttl: needs a value (seconds)"),
    ("idle_timeout", "-o idle_timeout: needs a value (seconds)"),
    (
        "read_buf_mem_limit",
        "-o read_buf_mem_limit: needs a value (megabytes)",
    ),
    (
        "read_buf_mem_limit=x",
        "-o read_buf_mem_limit: must be a number",
    ),
    (
        "read_buf_mem_limit=-1",
        "-o read_buf_mem_limit: must be a number",
    ),
    (
        "hashpower",
        "-o hashpower: needs a value (a power of two exponent)",
    ),
    ("hashpower=2", "-o hashpower: must be between 12 and 64"),
    ("hashpower=x", "-o hashpower: must be a number"),
    (
        "mrc_sample_rate",
        "-o mrc_sample_rate: needs a value (a rate in [0, 1])",
    ),
    ("mrc_sample_rate=2", "-o mrc_sample_rate: must be in [0, 1]"),
    ("mrc_sample_rate=x", "-o mrc_sample_rate: must be a number"),
    (
        "item_accounting",
        "-o item_accounting: needs a value (compact or memcached)",
    ),
    (
        "item_accounting=tight",
        "-o item_accounting: must be compact or memcached",
    ),
    ("io", "-o io: needs a value (auto, uring or epoll)"),
    ("io=x", "-o io: must be auto, uring or epoll"),
    (
        "memory_layout",
        "-o memory_layout: needs a value (slab or log)",
    ),
    (
        "memory_layout=heap",
        "-o memory_layout: must be slab or log",
    ),
    ("shards", "-o shards: needs a value (a power of two)"),
    (
        "shards=3",
        "-o shards: must be a power of two between 1 and 1024",
    ),
    (
        "shards=2048",
        "-o shards: must be a power of two between 1 and 1024",
    ),
    (
        "shards=0",
        "-o shards: must be a power of two between 1 and 1024",
    ),
    ("shards=x", "-o shards: must be a number"),
    ("worker_cpus", "-o worker_cpus: needs a value (a CPU list)"),
    (
        "worker_cpus=1-0",
        "-o worker_cpus: range 1-0 runs backwards",
    ),
    (
        "worker_cpus=4096",
        "-o worker_cpus: CPU 4096 is beyond the largest CPU number (1023)",
    ),
    (
        "worker_cpus=x",
        "-o worker_cpus: 'x' is not a CPU number (e.g. 0, 0-3, 0,2,4-7)",
    ),
    (
        "service_cpus",
        "-o service_cpus: needs a value (a CPU list or any)",
    ),
    (
        "service_cpus=4096",
        "-o service_cpus: CPU 4096 is beyond the largest CPU number (1023)",
    ),
    (
        "sched",
        "-o sched: needs a value (fifo:PRIO, rr:PRIO or other)",
    ),
    (
        "sched=deadline",
        "-o sched: 'deadline' is not a policy: fifo:PRIO, rr:PRIO or other",
    ),
    (
        "sched=fifo:0",
        "-o sched: priority '0' must be a number from 1 to 99",
    ),
];

#[test]
fn refusals_are_pinned_and_name_the_key() {
    for (arg, message) in REFUSALS {
        assert_eq!(err(&["-o", arg]), *message, "-o {arg}");
    }
}

/// A CPU outside the allowed set is refused with both lists (the set is the machine's).
#[test]
fn cpus_outside_the_allowed_set_are_named() {
    let allowed = crate::isolation::allowed_cpus().unwrap();
    let Some(outside) = (0..1024).find(|c| !allowed.cpus().contains(c)) else {
        return;
    };
    assert_eq!(
        err(&["-o", &format!("worker_cpus={outside}")]),
        format!("-o worker_cpus: CPU {outside} not in this process's allowed CPUs ({allowed})")
    );
}

/// The keys whose values `-o` checks: implemented, or (`hashpower`) recorded (the hand-written `-h`
/// before the table left out `no_slab_reassign`).
const CHECKED: &[&str] = &[
    "slab_reassign",
    "no_slab_reassign",
    "slab_automove",
    "slab_automove_ratio",
    "slab_automove_window",
    "slab_chunk_max",
    "hashpower",
    "temporary_ttl",
    "idle_timeout",
    "read_buf_mem_limit",
    "lru_crawler",
    "no_lru_crawler",
    "modern",
    "no_modern",
    "mrc_sample_rate",
    "item_accounting",
    "io",
    "memory_layout",
    "shards",
    "worker_cpus",
    "service_cpus",
    "sched",
];

/// The keys memcached tunes its internals with, accepted and ignored (the hand-written `-h` before
/// the table left out `no_maxconns_fast`).
const IGNORED: &[&str] = &[
    "no_hashexpand",
    "hash_algorithm",
    "maxconns_fast",
    "no_maxconns_fast",
    "lru_maintainer",
    "no_lru_maintainer",
    "hot_lru_pct",
    "warm_lru_pct",
    "hot_max_factor",
    "warm_max_factor",
    "worker_logbuf_size",
    "watcher_logbuf_size",
    "relaxed_privileges",
];

/// Ignored options take any value, or none; switches ignore a value.
#[test]
fn ignored_options_take_any_value() {
    for key in IGNORED {
        for arg in [key.to_string(), format!("{key}=anything")] {
            assert!(run(&["-o", &arg]).is_ok(), "-o {arg}");
        }
    }
    for switch in [
        "slab_reassign",
        "no_slab_reassign",
        "lru_crawler",
        "no_lru_crawler",
        "modern",
        "no_modern",
    ] {
        assert!(run(&["-o", &format!("{switch}=1")]).is_ok(), "{switch}=1");
    }
}

#[test]
fn help_names_every_accepted_option() {
    let Command::Print(help) = Settings::parse_from(["mrcached", "-h"]).unwrap() else {
        panic!("-h prints help");
    };
    let (_, options) = help.split_once("Extended options").expect("an -o section");
    for key in CHECKED.iter().chain(IGNORED) {
        assert!(
            options
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == *key),
            "{key} in {options}"
        );
    }
}

/// memcached treats a bare `slab_automove` as `slab_automove=1`.
#[test]
fn bare_slab_automove_is_slab_automove_1() {
    let bare = run(&["-o", "slab_automove"]).unwrap();
    assert_eq!(bare, run(&["-o", "slab_automove=1"]).unwrap());
    assert_eq!((bare.slab_automove, bare.slab_automove_given), (1, true));
    assert_eq!(
        run(&["-o", "slab_automove=0,slab_automove"])
            .unwrap()
            .slab_automove,
        1
    );
}

/// What each option records or sets, for values memcached 1.6.18 was run with (its `stats settings`
/// shows the same): `atoi` for `idle_timeout` and `temporary_ttl`, `safe_strtol` for
/// `slab_chunk_max`, `safe_strtoul` megabytes in 32 bits for `read_buf_mem_limit`.
#[test]
fn values_are_read_as_memcached_reads_them() {
    let recorded = |key: &str, given: &str| {
        let s = run(&["-o", &format!("{key}={given}")]).unwrap();
        s.recorded.get(key).map(str::to_string)
    };
    for (key, given, shown) in [
        ("temporary_ttl", "30", "30"),
        ("temporary_ttl", "abc", "0"),
        ("temporary_ttl", "-5", "4294967291"),
        ("temporary_ttl", " 30x", "30"),
        ("temporary_ttl", "99999999999", "1215752191"),
        ("read_buf_mem_limit", "2", "2097152"),
        ("read_buf_mem_limit", "5", "5242880"),
        ("read_buf_mem_limit", "4096", "0"),
        ("read_buf_mem_limit", "5000", "947912704"),
        ("read_buf_mem_limit", "-0", "0"),
        ("slab_chunk_max", "16384", "16384"),
        ("slab_chunk_max", " 512", "512"),
        ("slab_chunk_max", "+1024", "1024"),
    ] {
        assert_eq!(
            recorded(key, given).as_deref(),
            Some(shown),
            "{key}={given}"
        );
    }
    for (given, secs) in [
        ("3", 3),
        ("-3", -3),
        ("abc", 0),
        ("99999999999", 1215752191),
    ] {
        let s = run(&["-o", &format!("idle_timeout={given}")]).unwrap();
        assert_eq!(s.idle_timeout_secs, secs, "idle_timeout={given}");
    }
    let d = Settings::default();
    assert_eq!(
        ["temporary_ttl", "read_buf_mem_limit", "slab_chunk_max"].map(|k| d.recorded.get(k)),
        [None; 3]
    );
    assert_eq!(d.idle_timeout_secs, 0);
}

/// `slab_chunk_max` is checked against `-I` once every flag is read, wherever `-I` stands.
#[test]
fn slab_chunk_max_is_checked_against_the_item_size_limit() {
    assert!(run(&["-o", "slab_chunk_max=1048576", "-I", "2m"]).is_ok());
    assert!(run(&["-I", "2k", "-o", "slab_chunk_max=1024"]).is_ok());
    assert_eq!(
        err(&["-I", "2m", "-o", "slab_chunk_max=2097152"]),
        "-o slab_chunk_max: slab_chunk_max (bytes: 2097152) must divide evenly into 1048576 \
         (slab_page_size)"
    );
    assert_eq!(
        err(&["-I", "1k", "-o", "slab_chunk_max=2048"]),
        "-o slab_chunk_max: slab_chunk_max (bytes: 2048) cannot be larger than -I \
         (item_size_max 1024)"
    );
}

#[test]
fn relaxed_privileges_is_accepted_and_changes_nothing() {
    assert_eq!(
        run(&["-o", "relaxed_privileges"]).unwrap(),
        Settings::default()
    );
}
