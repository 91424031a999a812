//! Replays a fuzz target's corpus through its checks on stable Rust, for the tests
//! `crates/{protocol,server,loadgen}/tests/replay_*.rs` (which include this file by path): every file of
//! the committed seeds `fuzz/seeds/<target>/` and, when present, of the corpus `cargo fuzz` grows in
//! `fuzz/corpus/<target>/` (not committed). A violation fails the test naming the file.

use std::path::{Path, PathBuf};

/// The repository's `fuzz/` directory, from a crate under `crates/`.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Runs `check` over every file directly in `dir` (sub-directories are other corpora; a missing
/// directory has none); returns how many files it read.
pub fn replay_dir(dir: &Path, check: fn(&[u8])) -> usize {
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
        if std::panic::catch_unwind(|| check(&data)).is_err() {
            panic!("{} violates the target's checks", path.display());
        }
        files += 1;
    }
    files
}

/// Runs `check` over the seeds and corpus of `target`; fails if there are no seeds. Returns how many
/// files it replayed.
pub fn replay(target: &str, check: fn(&[u8])) -> usize {
    let root = fuzz_dir();
    let seeds = replay_dir(&root.join("seeds").join(target), check);
    assert!(
        seeds > 0,
        "the committed seed corpus fuzz/seeds/{target}/ is empty or missing"
    );
    let corpus = replay_dir(&root.join("corpus").join(target), check);
    eprintln!("{target}: replayed {seeds} seeds and {corpus} corpus files");
    seeds + corpus
}
