//! Fuzzes `mrcache_protocol::parse` the way a session drives it: parse from the front of the buffer,
//! step past what each result consumed, and check the parser's contract on the way.
//! `cargo +nightly fuzz run parse fuzz/seeds` (the corpus grows under `fuzz/corpus/parse`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mrcache_protocol::{check_parse_contract, Limits};

fuzz_target!(|data: &[u8]| {
    // Small limits reach the too-large and long-line paths with small inputs.
    let small = Limits {
        item_size_max: 1024,
        item_overhead: 56,
        max_get_line_bytes: 4096,
        binary_magic_closes: false,
        ..Limits::default()
    };
    check_parse_contract(data, &Limits::default());
    check_parse_contract(data, &small);
});
