//! Fuzzes `mrcache_protocol::auth::parse_auth` as a session drives it before authentication;
//! the properties are in `fuzz/checks/auth.rs`, which the stable seed replay runs too.
//! `cargo +nightly fuzz run auth fuzz/corpus/auth fuzz/seeds/auth fuzz/seeds`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../checks/auth.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::check(data));
