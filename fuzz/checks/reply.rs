//! Properties of the load generator's reply reader (`mrcache_loadgen::parse_item`), checked on any byte
//! stream: shared by the fuzz target `reply` and the stable seed replay
//! (`crates/loadgen/tests/replay_reply.rs`), which include this file by path.
//!
//! The stream is read item after item as a connection does. For every item:
//! - it spans a non-empty prefix of the buffer that ends in `\r\n`, and never more than it was given;
//! - it is what its first line says (`END` is `End`, a `CLIENT_ERROR` message is the rest of its line, a
//!   `VALUE` key is a non-empty slice of its line and the item spans the line plus `<bytes>` and `\r\n`);
//! - it is the same item however the bytes arrive: the item alone gives it again, and every prefix of
//!   it (a sample of cut points) asks for more instead of failing or giving something else;
//! - `Ok(None)` (wait) is only said when no complete line is there yet or a `VALUE` block is short;
//! - an error is final: no bytes that could still arrive make the same buffer valid.

use mrcache_loadgen::{parse_item, ReplyItem, MAX_DATA_BYTES, MAX_LINE_BYTES};

/// Checks `data` as a reply stream; panics on a violation.
pub fn check(data: &[u8]) {
    let mut pos = 0;
    while pos < data.len() {
        let rest = &data[pos..];
        match parse_item(rest) {
            Ok(Some((item, used))) => {
                check_item(rest, &item, used);
                pos += used;
            }
            Ok(None) => {
                check_waiting(rest);
                return;
            }
            Err(e) => {
                assert!(!e.0.is_empty());
                for more in [&b"\r\n"[..], b"\n", b"END\r\n", b"\r\nEND\r\n"] {
                    let mut longer = rest.to_vec();
                    longer.extend_from_slice(more);
                    assert!(
                        parse_item(&longer).is_err(),
                        "error {e} on {:?} is not final: {more:?} more makes it {:?}",
                        preview(rest),
                        parse_item(&longer)
                    );
                }
                return;
            }
        }
    }
}

fn preview(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len().min(80)]).into_owned()
}

fn within(part: &[u8], whole: &[u8]) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    p >= w && p + part.len() <= w + whole.len()
}

fn first_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

fn check_item(rest: &[u8], item: &ReplyItem<'_>, used: usize) {
    assert!(
        used >= 2 && used <= rest.len(),
        "used {used} of {}",
        rest.len()
    );
    assert_eq!(&rest[used - 2..used], b"\r\n");
    let eol = first_crlf(rest).expect("an item has a line");
    assert!(eol <= MAX_LINE_BYTES, "a line of {eol} bytes was accepted");
    let line = &rest[..eol];
    match *item {
        ReplyItem::End => assert_eq!(line, b"END"),
        ReplyItem::Stored => assert_eq!(line, b"STORED"),
        ReplyItem::NotStored => assert_eq!(line, b"NOT_STORED"),
        ReplyItem::Exists => assert_eq!(line, b"EXISTS"),
        ReplyItem::NotFound => assert_eq!(line, b"NOT_FOUND"),
        ReplyItem::Error => assert_eq!(line, b"ERROR"),
        ReplyItem::ClientError(msg) | ReplyItem::ServerError(msg) => {
            let prefix: &[u8] = if matches!(item, ReplyItem::ClientError(_)) {
                b"CLIENT_ERROR"
            } else {
                b"SERVER_ERROR"
            };
            assert!(line.starts_with(prefix));
            assert!(within(msg, line));
            assert_eq!(
                msg.as_ptr() as usize + msg.len(),
                line.as_ptr() as usize + eol
            );
        }
        ReplyItem::Value { key, data_len } => {
            assert!(line.starts_with(b"VALUE "));
            assert!(within(key, line) && !key.is_empty() && !key.contains(&b' '));
            assert_eq!(key.as_ptr() as usize, line.as_ptr() as usize + 6);
            assert!(data_len <= MAX_DATA_BYTES);
            assert_eq!(used, eol + 2 + data_len + 2, "a VALUE item's span");
        }
    }
    if !matches!(item, ReplyItem::Value { .. }) {
        assert_eq!(used, eol + 2, "a one-line item's span");
    }

    // The item alone gives the same item.
    assert_eq!(parse_item(&rest[..used]), Ok(Some((*item, used))));
    // Every prefix waits for more. Sampled cut points: the first bytes, around the line end and the
    // end, and a few spread over the rest.
    let mut cuts: Vec<usize> = (0..used.min(16)).collect();
    for c in [eol, eol + 1, eol + 2, eol + 3, used - 3, used - 2, used - 1] {
        cuts.push(c);
    }
    for i in 1..8 {
        cuts.push(used * i / 8);
    }
    for cut in cuts.into_iter().filter(|&c| c < used) {
        assert_eq!(
            parse_item(&rest[..cut]),
            Ok(None),
            "the first {cut} bytes of a {used}-byte item (line {:?}) do not wait for more",
            preview(line)
        );
    }
}

fn check_waiting(rest: &[u8]) {
    let window = &rest[..rest.len().min(MAX_LINE_BYTES + 2)];
    if let Some(eol) = first_crlf(window) {
        assert!(
            rest.starts_with(b"VALUE "),
            "waits for more with a complete line {:?}",
            preview(&rest[..eol])
        );
    } else {
        assert!(
            rest.len() <= MAX_LINE_BYTES + 1,
            "waits for more after {} bytes without a line end",
            rest.len()
        );
    }
}
