//! Replays the fuzz corpus on stable Rust: every file in `fuzz/seeds/` and `fuzz/seeds/parse/` (the
//! minimised corpus; both committed) and, when present, `fuzz/corpus/parse/` (grown by `cargo fuzz`, not
//! committed) goes through the parser's contract check
//! with the default limits and with small ones, exactly as the fuzz target does. The binary parser's
//! seeds (`fuzz/seeds/binary-proto/`) and corpus (`fuzz/corpus/binary/`) go through its own contract
//! check, as the `binary` fuzz target drives it.

use std::path::Path;

use mrcache_protocol::binary::check_binary_contract;
use mrcache_protocol::{check_parse_contract, contract_limits, Limits};

/// Runs `check` over every file directly in `dir` (sub-directories are other corpora); returns how
/// many files it read.
fn replay_with(dir: &Path, check: impl Fn(&[u8], &Limits) + std::panic::RefUnwindSafe) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut files = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let result = std::panic::catch_unwind(|| {
            for limits in contract_limits() {
                check(&data, &limits);
            }
        });
        assert!(
            result.is_ok(),
            "parser contract violated by {}",
            path.display()
        );
        files += 1;
    }
    files
}

fn replay_dir(dir: &Path) -> usize {
    replay_with(dir, check_parse_contract)
}

fn replay_binary_dir(dir: &Path) -> usize {
    replay_with(dir, |data, limits| {
        check_binary_contract(data, limits, false);
        check_binary_contract(data, limits, true);
    })
}

#[test]
fn binary_seeds_and_corpus_keep_the_binary_parser_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let seeds = replay_binary_dir(&root.join("seeds/binary-proto"));
    assert!(
        seeds > 0,
        "the committed binary seed corpus fuzz/seeds/binary-proto/ is empty or missing"
    );
    let corpus = replay_binary_dir(&root.join("corpus/binary"));
    eprintln!("replayed {seeds} binary seeds and {corpus} corpus files");
}

#[test]
fn seeds_and_corpus_keep_the_parser_contract() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let seeds = replay_dir(&root.join("seeds"));
    assert!(
        seeds > 0,
        "the committed seed corpus fuzz/seeds/ is empty or missing"
    );
    let minimised = replay_dir(&root.join("seeds/parse"));
    let corpus = replay_dir(&root.join("corpus/parse"));
    eprintln!(
        "replayed {seeds} seeds, {minimised} minimised corpus files and {corpus} corpus files"
    );
}
