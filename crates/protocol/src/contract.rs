//! The parser's contract as an executable check, shared by the fuzz targets and the stable corpus replay
//! tests: drive [`parse`] over a byte stream the way a session does and panic on any violation.

use crate::request::{Data, Parsed, Request};
use crate::{parse, Limits, KEY_MAX_LENGTH};

/// The limits the fuzz targets and their stable replays check a stream under: the defaults, then small
/// ones that reach the too-large and long-line paths with small inputs (and let 0x80 through as an
/// ordinary byte, as on a server that negotiates the binary protocol).
pub fn contract_limits() -> [Limits; 2] {
    let small = Limits {
        item_size_max: 1024,
        item_overhead: 56,
        max_get_line_bytes: 4096,
        binary_magic_closes: false,
        ..Limits::default()
    };
    [Limits::default(), small]
}

/// Parses `input` request after request (honouring swallows) and checks that every result consumes a
/// non-empty prefix of what it was given, that `Incomplete` asks for more than it had, that error lines
/// are single lines, and that keys respect the key length limit.
pub fn check_parse_contract(input: &[u8], limits: &Limits) {
    check_parse_contract_with(input, limits, |_, _| {});
}

/// [`check_parse_contract`], handing each result that keeps the contract to `visit` with the bytes it was
/// parsed from (the rest of the stream), for a caller's own properties (the `meta` fuzz check's).
pub fn check_parse_contract_with(
    input: &[u8],
    limits: &Limits,
    mut visit: impl FnMut(&[u8], &Parsed<'_>),
) {
    walk(input, |rest| {
        let parsed = parse(rest, limits);
        let step = match &parsed {
            Parsed::Request { request, consumed } => {
                assert!(
                    *consumed > 0 && *consumed <= rest.len(),
                    "consumed {consumed} of {}",
                    rest.len()
                );
                Some((*consumed, check_request(request)))
            }
            Parsed::Incomplete { needed } => {
                if let Some(needed) = needed {
                    assert!(
                        *needed > rest.len(),
                        "needs {needed} but has {}",
                        rest.len()
                    );
                }
                None
            }
            Parsed::Error(e) => {
                assert!(e.consumed > 0 && e.consumed <= rest.len());
                assert!(!e.line.is_empty() && !e.line.contains('\n'));
                Some((e.consumed, e.swallow))
            }
            Parsed::Close => None,
        };
        visit(rest, &parsed);
        step
    });
}

/// Drives a parser over `input` the way a session does: `step` gets the unconsumed rest and returns
/// the bytes it consumed and the bytes to discard after them, or `None` to stop (more input needed, or
/// the connection closes); discarded bytes are skipped without being parsed.
pub(crate) fn walk(input: &[u8], mut step: impl FnMut(&[u8]) -> Option<(usize, usize)>) {
    let mut pos = 0;
    let mut swallow = 0usize;
    while pos < input.len() {
        if swallow > 0 {
            let take = swallow.min(input.len() - pos);
            pos += take;
            swallow -= take;
            continue;
        }
        let Some((consumed, discard)) = step(&input[pos..]) else {
            return;
        };
        pos += consumed;
        swallow = discard;
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
