//! Replays the fuzz corpus on stable Rust: every file in `fuzz/seeds/` and `fuzz/seeds/parse/` (the
//! minimised corpus; both committed) and, when present, `fuzz/corpus/parse/` (grown by `cargo fuzz`, not
//! committed) goes through the parser's contract check
//! with the default limits and with small ones, exactly as the fuzz target does. The binary parser's
//! seeds (`fuzz/seeds/binary-proto/`) and corpus (`fuzz/corpus/binary/`) go through its own contract
//! check, as the `binary` fuzz target drives it. The directory walk is the shared one of
//! `fuzz/checks/replay.rs`.

#[path = "../../../fuzz/checks/replay.rs"]
mod replay;

use mrcache_protocol::binary::check_binary_contract;
use mrcache_protocol::{check_parse_contract, contract_limits};
use replay::{fuzz_dir, replay_dir};

/// The `parse` target's check: the text parser's contract under every contract limit.
fn parse_check(data: &[u8]) {
    for limits in contract_limits() {
        check_parse_contract(data, &limits);
    }
}

/// The `binary` target's check: the binary parser's contract, before and after authentication, under
/// every contract limit.
fn binary_check(data: &[u8]) {
    for limits in contract_limits() {
        check_binary_contract(data, &limits, false);
        check_binary_contract(data, &limits, true);
    }
}

#[test]
fn binary_seeds_and_corpus_keep_the_binary_parser_contract() {
    let root = fuzz_dir();
    let seeds = replay_dir(&root.join("seeds/binary-proto"), binary_check);
    assert!(
        seeds > 0,
        "the committed binary seed corpus fuzz/seeds/binary-proto/ is empty or missing"
    );
    let corpus = replay_dir(&root.join("corpus/binary"), binary_check);
    eprintln!("replayed {seeds} binary seeds and {corpus} corpus files");
}

#[test]
fn seeds_and_corpus_keep_the_parser_contract() {
    let root = fuzz_dir();
    let seeds = replay_dir(&root.join("seeds"), parse_check);
    assert!(
        seeds > 0,
        "the committed seed corpus fuzz/seeds/ is empty or missing"
    );
    // The minimised corpus (fuzz/seeds/parse) and the grown one (fuzz/corpus/parse).
    let minimised_and_corpus = replay::replay("parse", parse_check);
    eprintln!("replayed {seeds} seeds and {minimised_and_corpus} corpus files");
}
