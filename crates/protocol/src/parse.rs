//! Framing and command dispatch: finds the line, applies memcached's limits on unterminated lines, and
//! routes the command name to its family's parser the way `process_command_ascii` does (the first letter
//! picks a branch; unknown names inside a branch are `ERROR`, unknown names elsewhere close the connection
//! when the last token starts with `HTTP/`).

use crate::request::{ErrorReply, Parsed};
use crate::tokens::{Tokens, KEY_MAX_LENGTH};
use crate::{admin, arith, delete_touch, meta, retrieval, storage};

/// memcached closes a connection whose buffered bytes hold no newline after this many bytes, unless the
/// line is a get/gets (a multi-get may be long).
pub const MAX_UNTERMINATED_LINE_BYTES: usize = 2048;
/// memcached ignores at most this many leading spaces before a long `get `.
const MAX_LEADING_SPACES: usize = 100;
/// Our cap on an unterminated get/gets line (memcached has none): 1 MiB, the default `-I`, holds ~4000
/// keys of 250 bytes, far beyond what clients batch.
pub const DEFAULT_MAX_GET_LINE_BYTES: usize = 1024 * 1024;

/// The limits the parser checks; the server fills them from the engine configuration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `-I`: the largest item, in memcached's accounting.
    pub item_size_max: usize,
    /// Fixed bytes per item: 48 header + 8 CAS (48 with `-C`).
    pub item_overhead: usize,
    /// The longest unterminated get/gets line we buffer before closing.
    pub max_get_line_bytes: usize,
    /// Close on a request starting with the binary protocol's magic byte 0x80, for a caller that speaks
    /// text only. The server negotiates the binary protocol itself on a connection's first byte
    /// (`crate::binary`) and turns this off: to the text parser 0x80 is then an ordinary byte and the
    /// line an unknown command, as under memcached's `-B ascii`.
    pub binary_magic_closes: bool,
    /// Give a storage request (the set family, `ms`) whose data block has not all arrived as a request
    /// with `Data::TooLarge { swallow }` (its whole block, to discard) instead of `Incomplete`: for a
    /// caller that will not buffer that block and refuses the store from its line alone (the server's
    /// out-of-memory reply when its budget for partly received values is spent).
    pub refuse_incomplete_data: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            item_size_max: 1024 * 1024,
            item_overhead: 56,
            max_get_line_bytes: DEFAULT_MAX_GET_LINE_BYTES,
            binary_magic_closes: true,
            refuse_incomplete_data: false,
        }
    }
}

impl Limits {
    /// memcached's `item_size_ok`: whether an item of this key, flags and value could ever be stored.
    pub fn item_fits(&self, key_len: usize, client_flags: u32, value_len: usize) -> bool {
        let suffix = if client_flags != 0 { 4 } else { 0 };
        let total = self
            .item_overhead
            .saturating_add(key_len + 1 + suffix)
            .saturating_add(value_len)
            .saturating_add(2);
        total <= self.item_size_max
    }
}

/// A command line found in the buffer.
pub(crate) struct Line<'a> {
    /// The whole buffer (data blocks follow the line).
    pub buf: &'a [u8],
    /// The line without its terminator, cut at the first NUL.
    pub text: &'a [u8],
    pub tokens: Tokens<'a>,
    /// Bytes of the line including its `\n`.
    pub len: usize,
}

impl<'a> Line<'a> {
    /// An error reply that consumes just this line.
    pub fn error(&self, line: &'static str, noreply: bool) -> Parsed<'static> {
        Parsed::Error(ErrorReply {
            line,
            consumed: self.len,
            noreply,
            swallow: 0,
        })
    }

    /// `<cmd> <key> <number> [noreply]` (incr/decr, touch), memcached's checks in its order: four or five
    /// tokens or `ERROR`; a key over 250 bytes is `CLIENT_ERROR bad command line format`; a number that
    /// `parse_number` refuses gets `bad_number`. Gives the key, the number and `noreply`, or the error.
    pub fn key_and_number<N>(
        &self,
        parse_number: fn(&[u8]) -> Option<N>,
        bad_number: &'static str,
    ) -> Result<(&'a [u8], N, bool), ErrorReply> {
        let t = &self.tokens;
        let reply = |line, noreply| ErrorReply {
            line,
            consumed: self.len,
            noreply,
            swallow: 0,
        };
        if !(t.ntokens() == 4 || t.ntokens() == 5) {
            return Err(reply("ERROR", false));
        }
        let noreply = t.noreply();
        let key = t.get(1);
        if key.len() > KEY_MAX_LENGTH {
            return Err(reply("CLIENT_ERROR bad command line format", noreply));
        }
        match parse_number(t.get(2)) {
            Some(n) => Ok((key, n, noreply)),
            None => Err(reply(bad_number, noreply)),
        }
    }
}

/// Parses the request at the front of `buf`. Never panics; allocates nothing.
pub fn parse<'a>(buf: &'a [u8], limits: &Limits) -> Parsed<'a> {
    if buf.is_empty() {
        return Parsed::Incomplete { needed: None };
    }
    // Binary protocol magic, for a text-only caller: closed rather than misread.
    if buf[0] == 0x80 && limits.binary_magic_closes {
        return Parsed::Close;
    }
    let Some(newline) = buf.iter().position(|&b| b == b'\n') else {
        return unterminated(buf, limits);
    };
    let mut text = &buf[..newline];
    if text.len() > 1 && text[text.len() - 1] == b'\r' {
        text = &text[..text.len() - 1];
    }
    if let Some(nul) = text.iter().position(|&b| b == 0) {
        text = &text[..nul];
    }
    let line = Line {
        buf,
        text,
        tokens: Tokens::split(text),
        len: newline + 1,
    };
    dispatch(&line, limits)
}

fn unterminated<'a>(buf: &'a [u8], limits: &Limits) -> Parsed<'a> {
    if buf.len() <= MAX_UNTERMINATED_LINE_BYTES {
        return Parsed::Incomplete { needed: None };
    }
    let spaces = buf.iter().take_while(|&&b| b == b' ').count();
    let rest = &buf[spaces..];
    let is_get = rest.starts_with(b"get ") || rest.starts_with(b"gets ");
    if spaces > MAX_LEADING_SPACES || !is_get || buf.len() > limits.max_get_line_bytes {
        return Parsed::Close;
    }
    Parsed::Incomplete { needed: None }
}

fn dispatch<'a>(line: &Line<'a>, limits: &Limits) -> Parsed<'a> {
    let t = &line.tokens;
    let cmd = t.get(0);
    if t.ntokens() < 2 || cmd.len() < 2 {
        return line.error("ERROR", false);
    }
    match (cmd[0], cmd.len()) {
        (b'm', 2) => meta::parse(line, limits),
        (b'g', _) => match cmd {
            b"get" | b"gets" | b"gat" | b"gats" => retrieval::parse(line),
            _ => line.error("ERROR", false),
        },
        (b's', _) => match cmd {
            b"set" => storage::parse(line, limits),
            b"stats" => admin::parse_stats(line),
            b"shutdown" => admin::parse_shutdown(line),
            b"slabs" => admin::parse_slabs(line),
            _ => line.error("ERROR", false),
        },
        (b'a', _) => match cmd {
            b"add" | b"append" => storage::parse(line, limits),
            _ => line.error("ERROR", false),
        },
        (b'c', _) => match cmd {
            b"cas" => storage::parse(line, limits),
            b"cache_memlimit" => admin::parse_memlimit(line),
            _ => line.error("ERROR", false),
        },
        (b'i', _) => match cmd {
            b"incr" => arith::parse(line),
            _ => line.error("ERROR", false),
        },
        (b'd', _) => match cmd {
            b"delete" => delete_touch::parse_delete(line),
            b"decr" => arith::parse(line),
            _ => line.error("ERROR", false),
        },
        (b't', _) => match cmd {
            b"touch" => delete_touch::parse_touch(line),
            _ => line.error("ERROR", false),
        },
        _ => match cmd {
            b"replace" | b"prepend" => storage::parse(line, limits),
            b"version" => Parsed::Request {
                request: crate::Request::Version,
                consumed: line.len,
            },
            b"quit" => Parsed::Request {
                request: crate::Request::Quit,
                consumed: line.len,
            },
            b"flush_all" => admin::parse_flush_all(line),
            b"verbosity" => admin::parse_verbosity(line),
            b"lru" => admin::parse_lru(line),
            b"lru_crawler" => admin::parse_lru_crawler(line),
            b"refresh_certs" => admin::parse_refresh_certs(line),
            b"watch" => Parsed::Request {
                request: crate::Request::Watch {
                    streams: crate::tokens::after_token(line.text, t.get(0)),
                },
                consumed: line.len,
            },
            _ if t
                .as_slice()
                .last()
                .is_some_and(|last| last.starts_with(b"HTTP/")) =>
            {
                Parsed::Close
            }
            _ => line.error("ERROR", false),
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::Request;

    /// Parses `input` with default limits and returns the error line, or panics.
    pub fn error_of(input: &[u8]) -> ErrorReply {
        match parse(input, &Limits::default()) {
            Parsed::Error(e) => e,
            other => panic!(
                "expected an error for {:?}, got {other:?}",
                String::from_utf8_lossy(input)
            ),
        }
    }

    /// Parses `input` with default limits and returns the request and bytes consumed, or panics.
    pub fn request_of(input: &[u8]) -> (Request<'_>, usize) {
        match parse(input, &Limits::default()) {
            Parsed::Request { request, consumed } => (request, consumed),
            other => panic!(
                "expected a request for {:?}, got {other:?}",
                String::from_utf8_lossy(input)
            ),
        }
    }

    #[test]
    fn empty_and_short_lines_are_error() {
        for input in [
            &b"\r\n"[..],
            b"\n",
            b" \r\n",
            b"g\r\n",
            b"GET a\r\n",
            b"\tget a\r\n",
            b"ge\r\n",
        ] {
            let e = error_of(input);
            assert_eq!(e.line, "ERROR", "{input:?}");
            assert_eq!(e.consumed, input.len());
        }
    }

    #[test]
    fn incomplete_line_waits() {
        assert!(matches!(
            parse(b"get a", &Limits::default()),
            Parsed::Incomplete { needed: None }
        ));
        assert!(matches!(
            parse(b"", &Limits::default()),
            Parsed::Incomplete { .. }
        ));
    }

    #[test]
    fn long_unterminated_line_closes_unless_get() {
        assert!(matches!(
            parse(&[b'x'; 3000], &Limits::default()),
            Parsed::Close
        ));
        let mut get = b"  get ".to_vec();
        get.extend(std::iter::repeat_n(b'k', 3000));
        assert!(matches!(
            parse(&get, &Limits::default()),
            Parsed::Incomplete { .. }
        ));
        let small = Limits {
            max_get_line_bytes: 2500,
            ..Limits::default()
        };
        assert!(matches!(parse(&get, &small), Parsed::Close));
        let mut spaced = vec![b' '; 101];
        spaced.extend_from_slice(&get);
        assert!(matches!(parse(&spaced, &Limits::default()), Parsed::Close));
    }

    #[test]
    fn binary_magic_and_http_close() {
        assert!(matches!(
            parse(b"\x80\x01\0\0", &Limits::default()),
            Parsed::Close
        ));
        assert!(matches!(
            parse(b"GET / HTTP/1.1\r\n", &Limits::default()),
            Parsed::Close
        ));
        assert!(matches!(
            parse(b"mxx / HTTP/1.1\r\n", &Limits::default()),
            Parsed::Close
        ));
        // Inside a known first-letter branch memcached answers ERROR instead.
        assert_eq!(error_of(b"gx / HTTP/1.1\r\n").line, "ERROR");
        assert_eq!(error_of(b"mx / HTTP/1.1\r\n").line, "ERROR");
    }

    #[test]
    fn a_nul_byte_ends_the_line() {
        let (req, consumed) = request_of(b"get a\0b c\r\n");
        assert_eq!(consumed, 11);
        let Request::Get(g) = req else { panic!() };
        assert_eq!(g.keys.collect::<Vec<_>>(), vec![&b"a"[..]]);
    }

    #[test]
    fn item_size_check_matches_memcached() {
        let l = Limits::default();
        assert!(l.item_fits(1, 0, 1_048_516));
        assert!(!l.item_fits(1, 0, 1_048_517));
        assert!(!l.item_fits(1, 1, 1_048_516), "non-zero flags cost 4 bytes");
        let no_cas = Limits {
            item_overhead: 48,
            ..l
        };
        assert!(no_cas.item_fits(1, 0, 1_048_524));
    }

    #[test]
    fn version_quit_watch() {
        assert!(matches!(
            request_of(b"version a b c\r\n").0,
            Request::Version
        ));
        assert!(matches!(request_of(b"quit x\r\n").0, Request::Quit));
        assert!(matches!(
            request_of(b"watch fetchers\r\n").0,
            Request::Watch {
                streams: b" fetchers"
            }
        ));
    }
}
