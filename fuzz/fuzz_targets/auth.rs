//! Fuzzes `mrcache_protocol::auth::parse_auth` as a session drives it before authentication: parse from
//! the front, step past what each result consumed (and swallowed), and check that it never panics, never
//! consumes more than it was given, and always makes progress or asks for more.
//! `cargo +nightly fuzz run auth fuzz/seeds`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mrcache_protocol::auth::{parse_auth, AuthParsed};

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    while at < data.len() {
        let rest = &data[at..];
        let consumed = match parse_auth(rest) {
            AuthParsed::Incomplete { needed } => {
                assert!(needed.is_none_or(|n| n > rest.len()));
                return;
            }
            AuthParsed::Close => return,
            AuthParsed::Refused { consumed, swallow, .. } => consumed.saturating_add(swallow),
            AuthParsed::Credentials { consumed, .. } => consumed,
        };
        assert!(consumed > 0);
        at = at.saturating_add(consumed);
    }
});
