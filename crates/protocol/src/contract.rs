//! The parser's contract as an executable check, shared by the fuzz target and the stable corpus replay
//! test: drive [`parse`] over a byte stream the way a session does and panic on any violation.

use crate::request::{Data, Parsed, Request};
use crate::{parse, Limits, KEY_MAX_LENGTH};

/// Parses `input` request after request (honouring swallows) and checks that every result consumes a
/// non-empty prefix of what it was given, that `Incomplete` asks for more than it had, that error lines
/// are single lines, and that keys respect the key length limit.
pub fn check_parse_contract(input: &[u8], limits: &Limits) {
    let mut pos = 0;
    let mut swallow = 0usize;
    while pos < input.len() {
        if swallow > 0 {
            let take = swallow.min(input.len() - pos);
            pos += take;
            swallow -= take;
            continue;
        }
        let rest = &input[pos..];
        match parse(rest, limits) {
            Parsed::Request { request, consumed } => {
                assert!(
                    consumed > 0 && consumed <= rest.len(),
                    "consumed {consumed} of {}",
                    rest.len()
                );
                swallow = check_request(&request);
                pos += consumed;
            }
            Parsed::Incomplete { needed } => {
                if let Some(needed) = needed {
                    assert!(needed > rest.len(), "needs {needed} but has {}", rest.len());
                }
                return;
            }
            Parsed::Error(e) => {
                assert!(e.consumed > 0 && e.consumed <= rest.len());
                assert!(!e.line.is_empty() && !e.line.contains('\n'));
                swallow = e.swallow;
                pos += e.consumed;
            }
            Parsed::Close => return,
        }
    }
}

/// Checks one request; returns the bytes it asks to swallow.
fn check_request(request: &Request<'_>) -> usize {
    let data = match request {
        Request::Get(g) => {
            for key in g.keys {
                assert!(!key.is_empty() && key.len() <= KEY_MAX_LENGTH && !key.contains(&b' '));
            }
            None
        }
        Request::Store(s) => {
            assert!(s.key.len() <= KEY_MAX_LENGTH);
            Some(s.data)
        }
        Request::MetaSet(m) => {
            assert!(m.key.bytes().len() <= KEY_MAX_LENGTH);
            Some(m.data)
        }
        Request::MetaGet(m) => {
            assert!(m.key.bytes().len() <= KEY_MAX_LENGTH);
            None
        }
        _ => None,
    };
    match data {
        Some(Data::TooLarge { swallow }) => swallow,
        _ => 0,
    }
}
