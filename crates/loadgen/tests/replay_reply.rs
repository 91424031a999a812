//! Replays the `reply` fuzz target's corpus on stable Rust (fuzz/seeds/reply and, when present,
//! fuzz/corpus/reply) through the target's own checks (`fuzz/checks/reply.rs`: the reply reader's
//! properties), so an input that once failed stays fixed without nightly.

#[path = "../../../fuzz/checks/replay.rs"]
mod replay;
#[path = "../../../fuzz/checks/reply.rs"]
mod reply;

#[test]
fn reply_seeds_and_corpus_keep_the_reader_properties() {
    replay::replay("reply", reply::check);
}
