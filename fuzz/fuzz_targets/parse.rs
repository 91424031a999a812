//! Fuzzes `mrcache_protocol::parse` the way a session drives it: parse from the front of the buffer,
//! step past what each result consumed, and check the parser's contract on the way, under the default
//! and small limits (`contract_limits`: the small ones reach the too-large and long-line paths).
//! `cargo +nightly fuzz run parse fuzz/seeds` (the corpus grows under `fuzz/corpus/parse`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mrcache_protocol::{check_parse_contract, contract_limits};

fuzz_target!(|data: &[u8]| {
    for limits in contract_limits() {
        check_parse_contract(data, &limits);
    }
});
