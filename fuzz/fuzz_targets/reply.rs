//! Fuzzes the load generator's reply reader `mrcache_loadgen::parse_item`;
//! the properties are in `fuzz/checks/reply.rs`, which the stable seed replay runs too.
//! `cargo +nightly fuzz run reply fuzz/corpus/reply fuzz/seeds/reply` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks/reply.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::check(data));
