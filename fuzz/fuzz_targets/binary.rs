//! Fuzzes `mrcache_protocol::binary::parse` the way a binary session drives it: parse packets from the
//! front of the buffer, step past what each consumed (and swallowed), and check the parser's contract
//! (`check_binary_contract`) before and after authentication, with the default and small item limits
//! (`contract_limits`: the small ones reach the too-large path with small inputs).
//! `cargo +nightly fuzz run binary fuzz/seeds/binary-proto` (the corpus grows under `fuzz/corpus/binary`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mrcache_protocol::binary::check_binary_contract;
use mrcache_protocol::contract_limits;

fuzz_target!(|data: &[u8]| {
    for unauthenticated in [false, true] {
        for limits in contract_limits() {
            check_binary_contract(data, &limits, unauthenticated);
        }
    }
});
