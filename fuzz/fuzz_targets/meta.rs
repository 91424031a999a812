//! Fuzzes the meta commands (`mg ms md ma mn me`) through `mrcache_protocol::parse`;
//! the properties are in `fuzz/checks/meta.rs`, which the stable seed replay runs too.
//! `cargo +nightly fuzz run meta fuzz/corpus/meta fuzz/seeds/meta` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks/meta.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::check(data));
