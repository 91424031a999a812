//! The table's invariants, and each way of giving an option against what the generated outputs show.

use std::collections::HashSet;

use super::*;
use crate::settings::Command;

fn run(args: &[&str]) -> Settings {
    let argv = std::iter::once("mrcached").chain(args.iter().copied());
    match Settings::parse_from(argv) {
        Ok(Command::Run(s)) => s,
        other => panic!("{other:?}"),
    }
}

#[test]
fn keys_are_unique_and_start_with_a_letter() {
    let mut seen = HashSet::new();
    for key in OPTIONS.iter().flat_map(|spec| spec.keys) {
        assert!(seen.insert(*key), "{key} in two entries");
        assert!(key.starts_with(|c: char| c.is_ascii_lowercase()), "{key}");
    }
}

#[test]
fn only_row_entries_lack_keys_and_help() {
    for spec in OPTIONS {
        let row_only = matches!(spec.effect, Effect::RowOnly);
        let name = spec.stats.as_ref().map_or("?", |r| r.name);
        assert_eq!(spec.keys.is_empty(), row_only, "{name}");
        assert_eq!(spec.help.is_empty(), row_only, "{name}");
        assert!(!row_only || spec.stats.is_some(), "a row entry has a row");
    }
}

/// Recorded rows belong to `Records` options, and a `Records` option shows what it recorded.
#[test]
fn recorded_rows_belong_to_records_options() {
    for spec in OPTIONS {
        let records = matches!(spec.effect, Effect::Records { .. });
        let stats = matches!(
            spec.stats,
            Some(Row {
                value: StatsValue::Recorded,
                ..
            })
        );
        let print = matches!(
            spec.print,
            Some(Row {
                value: PrintValue::Recorded,
                ..
            })
        );
        assert!(records || !(stats || print), "{:?}", spec.keys);
        assert!(!records || stats || print, "{:?} is shown", spec.keys);
    }
}

/// `stats settings` and `--print-config` each name a row once, flags' rows included.
#[test]
fn row_names_are_unique() {
    fn unique(names: Vec<&str>) -> bool {
        names.len() == names.iter().collect::<HashSet<_>>().len()
    }
    assert!(unique(
        OPTIONS
            .iter()
            .filter_map(|s| s.stats.as_ref())
            .map(|r| r.name)
            .collect()
    ));
    let printed = Settings::default().describe();
    assert!(unique(printed.iter().map(|(name, _)| *name).collect()));
}

#[test]
fn recorded_values_show_and_the_last_one_wins() {
    let s = run(&["-o", "hashpower=20,hashpower=024"]);
    assert_eq!(s.recorded.get("hashpower"), Some("24"));
    let hashpower = find("hashpower").unwrap();
    assert_eq!(hashpower.recorded(&s), "24");
    assert_eq!(hashpower.recorded(&Settings::default()), "0");
    assert!(print_rows(&s).contains(&("hashpower_init", "24".to_string())));
}

#[test]
fn help_lists_every_option_once_within_its_width() {
    let help = help();
    for spec in OPTIONS.iter().filter(|s| !s.keys.is_empty()) {
        let usage = spec.usage();
        let lines = help
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix(&usage))
            .filter(|rest| rest.is_empty() || rest.starts_with(' '))
            .count();
        assert_eq!(lines, 1, "{usage} in {help}");
    }
    for line in help.lines() {
        assert!(line.chars().count() <= HELP_LINE_WIDTH, "{line}");
        assert_eq!(line, line.trim_end());
    }
}

#[test]
fn a_group_splits_at_commas_but_keeps_cpu_lists() {
    assert_eq!(
        split_group("slab_reassign, worker_cpus=0,2-3,lru_crawler,,"),
        ["slab_reassign", "worker_cpus=0,2-3", "lru_crawler"]
    );
}
