//! Replays the `meta` fuzz target's corpus on stable Rust (fuzz/seeds/meta and, when present,
//! fuzz/corpus/meta) through the target's own checks (`fuzz/checks/meta.rs`: the meta parser's
//! properties and its round trip), so an input that once failed stays fixed without nightly.

#[path = "../../../fuzz/checks/meta.rs"]
mod meta;
#[path = "../../../fuzz/checks/replay.rs"]
mod replay;

#[test]
fn meta_seeds_and_corpus_keep_the_meta_properties() {
    replay::replay("meta", meta::check);
}
