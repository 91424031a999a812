//! A minimal, incremental reader of memcached text-protocol replies, client side.
//!
//! [`parse_item`] looks at the front of a receive buffer and returns one reply item and the bytes
//! it spans, `Ok(None)` when the item is not complete yet, or an error when the bytes cannot be a
//! reply (the stream is then out of sync and the connection must be dropped). It borrows, never
//! copies, never panics on any input, and bounds how much it will wait for: a line longer than
//! [`MAX_LINE_BYTES`] or a value larger than [`MAX_DATA_BYTES`] is an error, not a reason to buffer
//! forever. A `get` reply is a run of `Value` items closed by `End`; the caller pairs items with
//! the requests it sent, in order.

use std::fmt;

/// Longest reply line accepted (a VALUE line holds a 250-byte key and three numbers).
pub const MAX_LINE_BYTES: usize = 2048;
/// Largest value accepted in a VALUE block (memcached's `-I` maximum is 1 GiB; 64 MiB is ample).
pub const MAX_DATA_BYTES: usize = 64 << 20;

/// One reply item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyItem<'a> {
    /// `VALUE <key> <flags> <bytes> [<cas>]` and its data block (not returned: nobody reads it).
    Value {
        /// The key, borrowed from the buffer.
        key: &'a [u8],
        /// Length of the data block.
        data_len: usize,
    },
    /// `END`: the last line of a get's reply.
    End,
    /// `STORED`.
    Stored,
    /// `NOT_STORED`.
    NotStored,
    /// `EXISTS`.
    Exists,
    /// `NOT_FOUND`.
    NotFound,
    /// `ERROR`: the server did not know the command.
    Error,
    /// `CLIENT_ERROR <message>`.
    ClientError(&'a [u8]),
    /// `SERVER_ERROR <message>`.
    ServerError(&'a [u8]),
}

/// The bytes at the front of the buffer are not a memcached reply; the text says how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MalformedReply(pub String);

impl fmt::Display for MalformedReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed reply: {}", self.0)
    }
}

/// Parses one reply item from the front of `buf`: `Ok(Some((item, consumed)))`, `Ok(None)` if
/// more bytes are needed, or `Err` if the stream is corrupt.
pub fn parse_item(buf: &[u8]) -> Result<Option<(ReplyItem<'_>, usize)>, MalformedReply> {
    let Some(eol) = find_crlf(buf) else {
        // A line of MAX_LINE_BYTES may have arrived up to its `\r`: wait for the `\n` then.
        let may_still_end = buf.len() <= MAX_LINE_BYTES
            || (buf.len() == MAX_LINE_BYTES + 1 && buf[MAX_LINE_BYTES] == b'\r');
        if !may_still_end {
            return Err(MalformedReply(format!(
                "no line end in {MAX_LINE_BYTES} bytes"
            )));
        }
        return Ok(None);
    };
    let line = &buf[..eol];
    let after_line = eol + 2;
    let simple = |item| Ok(Some((item, after_line)));
    match line {
        b"END" => simple(ReplyItem::End),
        b"STORED" => simple(ReplyItem::Stored),
        b"NOT_STORED" => simple(ReplyItem::NotStored),
        b"EXISTS" => simple(ReplyItem::Exists),
        b"NOT_FOUND" => simple(ReplyItem::NotFound),
        b"ERROR" => simple(ReplyItem::Error),
        _ => {
            if let Some(msg) = line.strip_prefix(b"CLIENT_ERROR") {
                simple(ReplyItem::ClientError(trim_leading_space(msg)))
            } else if let Some(msg) = line.strip_prefix(b"SERVER_ERROR") {
                simple(ReplyItem::ServerError(trim_leading_space(msg)))
            } else if let Some(rest) = line.strip_prefix(b"VALUE ") {
                parse_value(rest, &buf[after_line..], after_line)
            } else {
                Err(MalformedReply(format!(
                    "unexpected line {:?}",
                    preview(line)
                )))
            }
        }
    }
}

fn parse_value<'a>(
    header: &'a [u8],
    after: &[u8],
    header_len: usize,
) -> Result<Option<(ReplyItem<'a>, usize)>, MalformedReply> {
    let mut fields = header.split(|b| *b == b' ');
    let (Some(key), Some(flags), Some(bytes)) = (fields.next(), fields.next(), fields.next())
    else {
        return Err(MalformedReply(format!(
            "short VALUE line {:?}",
            preview(header)
        )));
    };
    let cas = fields.next();
    if key.is_empty() || fields.next().is_some() || parse_u64(flags).is_none() {
        return Err(MalformedReply(format!(
            "bad VALUE line {:?}",
            preview(header)
        )));
    }
    if cas.is_some_and(|c| parse_u64(c).is_none()) {
        return Err(MalformedReply(format!(
            "bad cas in VALUE line {:?}",
            preview(header)
        )));
    }
    let data_len = match parse_u64(bytes) {
        Some(n) if n <= MAX_DATA_BYTES as u64 => n as usize,
        _ => {
            return Err(MalformedReply(format!(
                "bad length in VALUE line {:?}",
                preview(header)
            )))
        }
    };
    if after.len() < data_len + 2 {
        return Ok(None);
    }
    if &after[data_len..data_len + 2] != b"\r\n" {
        return Err(MalformedReply("value block not closed by CRLF".into()));
    }
    Ok(Some((
        ReplyItem::Value { key, data_len },
        header_len + data_len + 2,
    )))
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    let limit = buf.len().min(MAX_LINE_BYTES + 2);
    buf[..limit].windows(2).position(|w| w == b"\r\n")
}

fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, d| {
        let d = d.checked_sub(b'0').filter(|d| *d < 10)?;
        acc.checked_mul(10)?.checked_add(u64::from(d))
    })
}

fn trim_leading_space(msg: &[u8]) -> &[u8] {
    msg.strip_prefix(b" ").unwrap_or(msg)
}

fn preview(line: &[u8]) -> String {
    String::from_utf8_lossy(&line[..line.len().min(64)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(mut buf: &[u8]) -> Vec<ReplyItem<'_>> {
        let mut out = Vec::new();
        while let Some((item, used)) = parse_item(buf).unwrap() {
            out.push(item);
            buf = &buf[used..];
        }
        assert!(buf.is_empty(), "left over {buf:?}");
        out
    }

    #[test]
    fn parses_every_reply_kind() {
        let wire = b"VALUE k1 0 3\r\nabc\r\nVALUE k2 5 0 77\r\n\r\nEND\r\nSTORED\r\nNOT_STORED\r\n\
EXISTS\r\nNOT_FOUND\r\nERROR\r\nCLIENT_ERROR bad data chunk\r\nSERVER_ERROR out of memory\r\n";
        assert_eq!(
            items(wire),
            vec![
                ReplyItem::Value {
                    key: b"k1",
                    data_len: 3
                },
                ReplyItem::Value {
                    key: b"k2",
                    data_len: 0
                },
                ReplyItem::End,
                ReplyItem::Stored,
                ReplyItem::NotStored,
                ReplyItem::Exists,
                ReplyItem::NotFound,
                ReplyItem::Error,
                ReplyItem::ClientError(b"bad data chunk"),
                ReplyItem::ServerError(b"out of memory"),
            ]
        );
    }

    #[test]
    fn every_split_point_waits_for_more_and_then_succeeds() {
        let wire = b"VALUE key 0 10\r\n0123\r\n6789\r\nEND\r\n";
        let value_len = wire.len() - 5;
        for cut in 0..value_len {
            assert_eq!(parse_item(&wire[..cut]), Ok(None), "cut at {cut}");
        }
        let (item, used) = parse_item(wire).unwrap().unwrap();
        assert_eq!(
            item,
            ReplyItem::Value {
                key: b"key",
                data_len: 10
            }
        );
        assert_eq!(used, value_len);
        assert_eq!(parse_item(&wire[used..used + 4]), Ok(None));
    }

    #[test]
    fn rejects_garbage_instead_of_waiting() {
        assert!(parse_item(b"HELLO\r\n").is_err());
        assert!(parse_item(b"VALUE k x 3\r\nabc\r\n").is_err());
        assert!(parse_item(b"VALUE k 0 3 1 2\r\nabc\r\n").is_err());
        assert!(parse_item(b"VALUE k 0 3\r\nabcXY").is_err());
        assert!(parse_item(b"VALUE k 0 99999999999999999999999\r\n").is_err());
        assert!(parse_item(&[b'x'; MAX_LINE_BYTES + 1]).is_err());
    }

    #[test]
    fn a_longest_line_split_after_its_cr_waits_for_its_lf() {
        // Caught by the `reply` fuzz target's split check (fuzz/checks/reply.rs): a line of exactly
        // MAX_LINE_BYTES whose `\r` and `\n` arrive in different reads was refused as "no line end".
        let mut wire = b"CLIENT_ERROR ".to_vec();
        wire.resize(MAX_LINE_BYTES, b'x');
        wire.extend_from_slice(b"\r\n");
        assert_eq!(parse_item(&wire[..MAX_LINE_BYTES + 1]), Ok(None));
        let (item, used) = parse_item(&wire).unwrap().unwrap();
        assert_eq!(used, wire.len());
        assert!(matches!(item, ReplyItem::ClientError(m) if m.len() == MAX_LINE_BYTES - 13));
        // One byte more than the longest line, with no line end, is refused as before.
        let mut long = wire[..MAX_LINE_BYTES].to_vec();
        long.extend_from_slice(b"xy");
        assert!(parse_item(&long).is_err());
        assert!(parse_item(&long[..MAX_LINE_BYTES + 1]).is_err());
    }

    #[test]
    fn never_panics_on_arbitrary_prefixes() {
        let samples: [&[u8]; 4] = [
            b"VALUE",
            b"VALUE \r\n",
            b"VALUE a b\r\n",
            b"\r\n\r\nSERVER_ERROR\r\n",
        ];
        for s in samples {
            for cut in 0..=s.len() {
                let _ = parse_item(&s[..cut]);
            }
        }
    }
}
