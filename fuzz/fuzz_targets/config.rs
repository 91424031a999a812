//! Fuzzes the tenant configuration (`--config` TOML, `-Y` auth file, merge and validation);
//! the properties are in `fuzz/checks/config.rs`, which the stable seed replay runs too.
//! `cargo +nightly fuzz run config fuzz/corpus/config fuzz/seeds/config` (see fuzz/README.md).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks/config.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::check(data));
