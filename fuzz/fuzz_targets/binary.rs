//! Fuzzes `mrcache_protocol::binary::parse` the way a binary session drives it: parse packets from the
//! front of the buffer, step past what each consumed (and swallowed), and check the parser's contract
//! (`check_binary_contract`) before and after authentication, with the default and small item limits.
//! `cargo +nightly fuzz run binary fuzz/seeds/binary-proto` (the corpus grows under `fuzz/corpus/binary`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mrcache_protocol::binary::check_binary_contract;
use mrcache_protocol::Limits;

fuzz_target!(|data: &[u8]| {
    // Small limits reach the too-large path with small inputs.
    let small = Limits {
        item_size_max: 1024,
        item_overhead: 56,
        max_get_line_bytes: 4096,
        binary_magic_closes: false,
        ..Limits::default()
    };
    for unauthenticated in [false, true] {
        check_binary_contract(data, &Limits::default(), unauthenticated);
        check_binary_contract(data, &small, unauthenticated);
    }
});
