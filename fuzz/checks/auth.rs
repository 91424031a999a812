//! Properties of the pre-authentication parser `mrcache_protocol::auth::parse_auth`, checked on any
//! byte stream: shared by the fuzz target `auth` and the stable seed replay
//! (`crates/protocol/tests/replay_auth.rs`), which include this file by path.
//!
//! The stream is parsed from the front as a session does before authentication, stepping past what
//! each result consumed (and swallowed): it never panics, never consumes more than it was given, and
//! always makes progress or asks for more than it has; credentials are slices of what they consumed
//! and a refusal is one non-empty reply line.

use mrcache_protocol::auth::{parse_auth, AuthParsed};

/// Checks `data`; panics on a violation.
pub fn check(data: &[u8]) {
    let mut at = 0;
    while at < data.len() {
        let rest = &data[at..];
        let consumed = match parse_auth(rest) {
            AuthParsed::Incomplete { needed } => {
                assert!(needed.is_none_or(|n| n > rest.len()));
                return;
            }
            AuthParsed::Close => return,
            AuthParsed::Refused {
                line,
                consumed,
                swallow,
            } => {
                assert!(consumed <= rest.len());
                assert!(!line.is_empty() && !line.contains('\n') && !line.contains('\r'));
                consumed.saturating_add(swallow)
            }
            AuthParsed::Credentials {
                user,
                password,
                consumed,
            } => {
                assert!(consumed <= rest.len());
                assert!(within(user, &rest[..consumed]) && within(password, &rest[..consumed]));
                consumed
            }
        };
        assert!(consumed > 0);
        at = at.saturating_add(consumed);
    }
}

fn within(part: &[u8], whole: &[u8]) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    p >= w && p + part.len() <= w + whole.len()
}
