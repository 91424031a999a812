//! Replays the `config` fuzz target's corpus on stable Rust (fuzz/seeds/config and, when present,
//! fuzz/corpus/config) through the target's own checks (`fuzz/checks/config.rs`: the tenant
//! configuration's validation invariants and round trips), so an input that once failed stays fixed
//! without nightly.

#[path = "../../../fuzz/checks/config.rs"]
mod config;
#[path = "../../../fuzz/checks/replay.rs"]
mod replay;

#[test]
fn config_seeds_and_corpus_keep_the_config_properties() {
    replay::replay("config", config::check);
}
