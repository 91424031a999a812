//! Replays the `auth` fuzz target's corpus on stable Rust (fuzz/seeds/auth and, when present,
//! fuzz/corpus/auth) through the target's own checks (`fuzz/checks/auth.rs`), so an input that once
//! failed stays fixed without nightly.

#[path = "../../../fuzz/checks/auth.rs"]
mod auth;
#[path = "../../../fuzz/checks/replay.rs"]
mod replay;

#[test]
fn auth_seeds_and_corpus_keep_the_auth_properties() {
    replay::replay("auth", auth::check);
}
