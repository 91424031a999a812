//! set/add/replace/append/prepend/cas: `<cmd> <key> <flags> <exptime> <bytes> [<cas>] [noreply]`.
//!
//! memcached 1.6.18's order of checks: token count (`ERROR`, the data line is then read as a command),
//! key length, flags/exptime/bytes, cas, negative or huge length (all `CLIENT_ERROR bad command line
//! format`, not swallowed), then the item size (`SERVER_ERROR object too large for cache`, swallowed).
//! The data block is exactly `<bytes>` + 2; when its last two bytes are not `\r\n` the reply is
//! `CLIENT_ERROR bad data chunk` and parsing resumes right after those bytes.

use crate::parse::{Limits, Line};
use crate::request::{Data, ErrorReply, Parsed, Request, StoreCommand, StoreRequest};
use crate::tokens::{strtol32, strtoul32, strtoull, KEY_MAX_LENGTH};

const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";

pub(crate) fn parse<'a>(line: &Line<'a>, limits: &Limits) -> Parsed<'a> {
    let t = &line.tokens;
    let command = match t.get(0) {
        b"set" => StoreCommand::Set,
        b"add" => StoreCommand::Add,
        b"replace" => StoreCommand::Replace,
        b"append" => StoreCommand::Append,
        b"prepend" => StoreCommand::Prepend,
        _ => StoreCommand::Cas,
    };
    let is_cas = command == StoreCommand::Cas;
    let n = t.ntokens();
    let count_ok = if is_cas {
        n == 7 || n == 8
    } else {
        n == 6 || n == 7
    };
    if !count_ok {
        return line.error("ERROR", false);
    }
    let noreply = t.noreply();
    let key = t.get(1);
    if key.len() > KEY_MAX_LENGTH {
        return line.error(BAD_FORMAT, noreply);
    }
    let (Some(client_flags), Some(exptime), Some(length)) =
        (strtoul32(t.get(2)), strtol32(t.get(3)), strtol32(t.get(4)))
    else {
        return line.error(BAD_FORMAT, noreply);
    };
    let cas = if is_cas {
        match strtoull(t.get(5)) {
            Some(c) => c,
            None => return line.error(BAD_FORMAT, noreply),
        }
    } else {
        0
    };
    if !(0..=i32::MAX - 2).contains(&length) {
        return line.error(BAD_FORMAT, noreply);
    }
    let length = length as usize;
    let fits = limits.item_fits(key.len(), client_flags, length);
    let (data, consumed) = match read_data(line, fits, limits, length, noreply) {
        Ok(read) => read,
        Err(unread) => return unread.into(),
    };
    let request = StoreRequest {
        command,
        key,
        client_flags,
        exptime: i64::from(exptime),
        cas,
        noreply,
        data,
    };
    Parsed::Request {
        request: Request::Store(request),
        consumed,
    }
}

/// Why `read_data` gave no data.
pub(crate) enum Unread {
    /// Total bytes needed from the start of the buffer.
    Incomplete(usize),
    BadChunk(ErrorReply),
}

impl From<Unread> for Parsed<'_> {
    fn from(u: Unread) -> Self {
        match u {
            Unread::Incomplete(needed) => Parsed::Incomplete {
                needed: Some(needed),
            },
            Unread::BadChunk(reply) => Parsed::Error(reply),
        }
    }
}

/// The data block of a storage command (the set family and ms). An item over the size limit is answered
/// from its line alone: `Data::TooLarge`, whose `<bytes>` + 2 the caller swallows as they arrive, never
/// buffered. Otherwise the block is exactly `<bytes>` + 2 ending in `\r\n`; if it does not, the reply is
/// `CLIENT_ERROR bad data chunk` (suppressed by `noreply`) and parsing resumes after those bytes.
/// Under `Limits::refuse_incomplete_data` a block not yet complete is `Data::TooLarge` too (the caller
/// refuses it). `Ok` gives the data and the bytes consumed, line included.
pub(crate) fn read_data<'a>(
    line: &Line<'a>,
    fits: bool,
    limits: &Limits,
    length: usize,
    noreply: bool,
) -> Result<(Data<'a>, usize), Unread> {
    if !fits {
        return Ok((
            Data::TooLarge {
                swallow: length + 2,
            },
            line.len,
        ));
    }
    let end = line.len + length + 2;
    if line.buf.len() < end {
        if limits.refuse_incomplete_data {
            return Ok((
                Data::TooLarge {
                    swallow: length + 2,
                },
                line.len,
            ));
        }
        return Err(Unread::Incomplete(end));
    }
    if &line.buf[end - 2..end] != b"\r\n" {
        return Err(Unread::BadChunk(ErrorReply {
            line: "CLIENT_ERROR bad data chunk",
            consumed: end,
            noreply,
            swallow: 0,
        }));
    }
    Ok((Data::Value(&line.buf[line.len..end - 2]), end))
}

#[cfg(test)]
mod tests {
    use crate::parse::tests::{error_of, request_of};
    use crate::parse::{parse, Limits};
    use crate::request::*;

    fn store(input: &[u8]) -> (StoreRequest<'_>, usize) {
        match request_of(input) {
            (Request::Store(s), n) => (s, n),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn set_parses_line_and_data() {
        let (s, n) = store(b"set k 7 100 5\r\nhello\r\nget");
        assert_eq!(n, 22);
        assert_eq!(s.command, StoreCommand::Set);
        assert_eq!(
            (s.key, s.client_flags, s.exptime, s.noreply),
            (&b"k"[..], 7, 100, false)
        );
        assert_eq!(s.data, Data::Value(b"hello"));
    }

    #[test]
    fn every_storage_command_and_noreply() {
        for (cmd, want) in [
            ("add", StoreCommand::Add),
            ("replace", StoreCommand::Replace),
            ("append", StoreCommand::Append),
            ("prepend", StoreCommand::Prepend),
        ] {
            let input = format!("{cmd} k 0 0 1 noreply\r\nx\r\n");
            let (s, _) = store(input.as_bytes());
            assert_eq!(s.command, want);
            assert!(s.noreply);
        }
        let (s, _) = store(b"cas k 0 0 1 99\r\nx\r\n");
        assert_eq!((s.command, s.cas), (StoreCommand::Cas, 99));
        let (s, _) = store(b"set k 0 0 1 norepl\r\nx\r\n");
        assert!(!s.noreply, "a misspelt noreply is just an extra token");
    }

    #[test]
    fn bare_newline_and_empty_value() {
        let (s, n) = store(b"set k 0 0 0\n\r\n");
        assert_eq!((s.data, n), (Data::Value(b""), 14));
    }

    #[test]
    fn wrong_token_counts_are_error() {
        for input in [
            &b"set a 0 0\r\n"[..],
            b"set a 0 0 1 2 3\r\n",
            b"set a 0 0 1 noreply extra\r\n",
            b"cas a 0 0 1\r\n",
        ] {
            let e = error_of(input);
            assert_eq!((e.line, e.consumed, e.swallow), ("ERROR", input.len(), 0));
        }
    }

    #[test]
    fn bad_numbers_are_client_errors_without_swallow() {
        for input in [
            &b"set a abc 0 1\r\n"[..],
            b"set a 0 abc 1\r\n",
            b"set a 0 0 abc\r\n",
            b"set a -1 0 1\r\n",
            b"set a 0 0 -1\r\n",
            b"set a 0 0 2147483647\r\n",
            b"cas a 0 0 1 abc\r\n",
        ] {
            let e = error_of(input);
            assert_eq!(
                (e.line, e.consumed, e.swallow),
                ("CLIENT_ERROR bad command line format", input.len(), 0)
            );
        }
        assert!(error_of(b"set a 0 0 x noreply\r\n").noreply);
    }

    #[test]
    fn key_too_long_is_not_swallowed() {
        let input = format!("set {} 0 0 1\r\nx\r\n", "a".repeat(251));
        let e = error_of(input.as_bytes());
        assert_eq!(e.line, "CLIENT_ERROR bad command line format");
        assert_eq!(e.consumed, input.len() - 3);
        let ok = format!("set {} 0 0 1\r\nx\r\n", "a".repeat(250));
        store(ok.as_bytes());
    }

    #[test]
    fn numbers_follow_1_6_18() {
        let (s, _) = store(b"set k 4294967296 0 1\r\nx\r\n");
        assert_eq!(s.client_flags, 0);
        let (s, _) = store(b"set k 0 2147483648 1\r\nx\r\n");
        assert_eq!(s.exptime, i64::from(i32::MIN));
        let (s, _) = store(b"set k 0 0 4294967297\r\nx\r\n");
        assert_eq!(s.data, Data::Value(b"x"), "length truncated to 32 bits");
        let (s, _) = store(b"set k +7 -1 01\r\nx\r\n");
        assert_eq!((s.client_flags, s.exptime), (7, -1));
    }

    #[test]
    fn incomplete_data_reports_the_total() {
        let p = parse(b"set k 0 0 10\r\nabc", &Limits::default());
        assert!(matches!(p, Parsed::Incomplete { needed: Some(26) }));
    }

    #[test]
    fn refusing_incomplete_data_gives_the_line_and_the_block_to_swallow() {
        let refuse = Limits {
            refuse_incomplete_data: true,
            ..Limits::default()
        };
        match parse(b"set k 3 0 10 noreply\r\nabc", &refuse) {
            Parsed::Request {
                request: Request::Store(s),
                consumed,
            } => {
                assert_eq!(consumed, 22);
                assert_eq!((s.key, s.client_flags, s.noreply), (&b"k"[..], 3, true));
                assert_eq!(s.data, Data::TooLarge { swallow: 12 });
            }
            other => panic!("{other:?}"),
        }
        match parse(b"ms k 10 T0\r\nab", &refuse) {
            Parsed::Request {
                request: Request::MetaSet(m),
                consumed,
            } => {
                assert_eq!(consumed, 12);
                assert_eq!(m.data, Data::TooLarge { swallow: 12 });
            }
            other => panic!("{other:?}"),
        }
        // A complete block is still read.
        let (s, _) = match parse(b"set k 0 0 1\r\nx\r\n", &refuse) {
            Parsed::Request {
                request: Request::Store(s),
                consumed,
            } => (s, consumed),
            other => panic!("{other:?}"),
        };
        assert_eq!(s.data, Data::Value(b"x"));
    }

    #[test]
    fn bad_data_chunk_consumes_exactly_the_block() {
        let e = error_of(b"set a 0 0 1\r\nxyz\r\n");
        assert_eq!(
            (e.line, e.consumed, e.noreply),
            ("CLIENT_ERROR bad data chunk", 16, false)
        );
        assert!(error_of(b"set a 0 0 1 noreply\r\nxyz\r\n").noreply);
    }

    #[test]
    fn too_large_is_a_request_that_swallows() {
        let (s, n) = store(b"set a 0 0 1048517\r\n");
        assert_eq!(n, 19);
        assert_eq!(s.data, Data::TooLarge { swallow: 1_048_519 });
        let p = parse(b"set a 0 0 1048516\r\n", &Limits::default());
        assert!(
            matches!(
                p,
                Parsed::Incomplete {
                    needed: Some(1_048_537)
                }
            ),
            "fits: waits for its data"
        );
    }
}
