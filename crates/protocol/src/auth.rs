//! memcached 1.6.18's text-protocol authentication (`-Y`), sans I/O: what an unauthenticated
//! connection's input means.
//!
//! Until it authenticates, a connection may only send `set <key> <flags> <exptime> <bytes>` whose data
//! block is `<user> <password>` (memcached's `try_read_command_asciiauth`):
//! - any other line (including meta commands, `quit`, a blank line, a `set` with fewer than five tokens
//!   or a non-numeric `<bytes>`) is consumed up to its `\n` and answered `CLIENT_ERROR unauthenticated`;
//!   no data block is read for it;
//! - the key, flags, exptime and a `noreply` token are ignored: the reply is always sent;
//! - the data block is exactly `<bytes>` + 2 bytes; if it does not end in `\r\n` the answer is
//!   `CLIENT_ERROR bad command line termination`; if it holds fewer than two space-separated tokens,
//!   `CLIENT_ERROR bad authentication token format`; extra tokens are ignored;
//! - a line with no `\n` within 2048 bytes closes the connection.
//!
//! Deviations (documented): memcached 1.6.18 keeps one reply object while unauthenticated, so when several
//! refused commands arrive in one read only the last reply is sent; here every command gets its reply.
//! A data block larger than [`MAX_AUTH_DATA_BYTES`] is swallowed and answered as a failed authentication
//! instead of being buffered whole (memcached buffers any size).

use crate::parse::MAX_UNTERMINATED_LINE_BYTES;
use crate::tokens::{strtoul32, Tokens};

/// The longest `user password` block that is buffered and checked; longer ones are swallowed.
pub const MAX_AUTH_DATA_BYTES: usize = 64 * 1024;

/// memcached's reply to any command but the credentials before authentication.
pub const UNAUTHENTICATED: &str = "CLIENT_ERROR unauthenticated";
/// The reply to credentials that do not check, or to a malformed block.
pub const AUTH_FAILURE: &str = "CLIENT_ERROR authentication failure";
/// The reply to a credentials block not ended by `\r\n`.
pub const BAD_TERMINATION: &str = "CLIENT_ERROR bad command line termination";
/// The reply to a block that is not `user password`.
pub const BAD_TOKEN_FORMAT: &str = "CLIENT_ERROR bad authentication token format";

/// What the front of an unauthenticated connection's input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthParsed<'a> {
    /// More bytes are needed.
    Incomplete {
        /// Bytes the whole input needs, counted from its start, when known.
        needed: Option<usize>,
    },
    /// Credentials to check: reply `STORED` if they are valid, else [`AUTH_FAILURE`].
    Credentials {
        /// The user name.
        user: &'a [u8],
        /// The password.
        password: &'a [u8],
        /// Bytes of the input the command and its block took.
        consumed: usize,
    },
    /// A refusal to send as is (one of the `CLIENT_ERROR` lines above), after consuming `consumed` bytes
    /// and then discarding `swallow` more as they arrive.
    Refused {
        /// The reply line, without its `\r\n`.
        line: &'static str,
        /// Bytes of the input to consume now.
        consumed: usize,
        /// Bytes still to discard as they arrive.
        swallow: usize,
    },
    /// Close the connection (an unterminated line over 2048 bytes).
    Close,
}

/// Parses the front of `input` as memcached does before a connection has authenticated.
pub fn parse_auth(input: &[u8]) -> AuthParsed<'_> {
    let Some(newline) = input.iter().position(|&b| b == b'\n') else {
        if input.len() > MAX_UNTERMINATED_LINE_BYTES {
            return AuthParsed::Close;
        }
        return AuthParsed::Incomplete { needed: None };
    };
    let line_end = newline + 1;
    let mut line = &input[..newline];
    if let Some(stripped) = line.strip_suffix(b"\r") {
        line = stripped;
    }
    let refuse = |line: &'static str, consumed: usize, swallow: usize| AuthParsed::Refused {
        line,
        consumed,
        swallow,
    };
    let tokens = Tokens::split(line);
    let size = match (tokens.ntokens() >= 6, tokens.get(0) == b"set") {
        (true, true) => strtoul32(tokens.get(4)),
        _ => None,
    };
    let Some(size) = size else {
        return refuse(UNAUTHENTICATED, line_end, 0);
    };
    let block = size as usize + 2;
    if block > MAX_AUTH_DATA_BYTES + 2 {
        return refuse(AUTH_FAILURE, line_end, block);
    }
    let Some(data) = input.get(line_end..line_end + block) else {
        return AuthParsed::Incomplete {
            needed: Some(line_end + block),
        };
    };
    let consumed = line_end + block;
    let Some(payload) = data.strip_suffix(b"\r\n") else {
        return refuse(BAD_TERMINATION, consumed, 0);
    };
    let creds = Tokens::split(payload);
    if creds.as_slice().len() < 2 {
        return refuse(BAD_TOKEN_FORMAT, consumed, 0);
    }
    AuthParsed::Credentials {
        user: creds.get(0),
        password: creds.get(1),
        consumed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(line: &'static str, consumed: usize) -> AuthParsed<'static> {
        AuthParsed::Refused {
            line,
            consumed,
            swallow: 0,
        }
    }

    #[test]
    fn credentials_in_a_set() {
        let input = b"set a 0 0 12 noreply\r\nalice secret\r\nget a\r\n";
        assert_eq!(
            parse_auth(input),
            AuthParsed::Credentials {
                user: b"alice",
                password: b"secret",
                consumed: 36
            }
        );
        assert!(matches!(
            parse_auth(b"set a 0 0 14\r\nalice secret x\r\n"),
            AuthParsed::Credentials {
                user: b"alice",
                password: b"secret",
                ..
            }
        ));
    }

    #[test]
    fn anything_else_is_unauthenticated() {
        for line in [
            &b"get a\r\n"[..],
            b"mg a v\r\n",
            b"\r\n",
            b"set a 0 0\r\n",
            b"SET a 0 0 1\r\n",
            b"set a 0 0 -1\r\n",
            b"set a 0 0 x\r\n",
        ] {
            assert_eq!(
                parse_auth(line),
                refused(UNAUTHENTICATED, line.len()),
                "{line:?}"
            );
        }
    }

    #[test]
    fn bad_blocks() {
        assert_eq!(
            parse_auth(b"set a 0 0 1\r\nx\r\n"),
            refused(BAD_TOKEN_FORMAT, 16)
        );
        assert_eq!(
            parse_auth(b"set a 0 0 5\r\nalicexx\r\n"),
            refused(BAD_TERMINATION, 20)
        );
        assert_eq!(
            parse_auth(b"set a 0 0 99999999\r\n"),
            AuthParsed::Refused {
                line: AUTH_FAILURE,
                consumed: 20,
                swallow: 100_000_001
            }
        );
    }

    #[test]
    fn waits_for_the_whole_block_and_closes_on_long_lines() {
        assert_eq!(
            parse_auth(b"set a 0 0 12\r\nalice"),
            AuthParsed::Incomplete { needed: Some(28) }
        );
        assert_eq!(
            parse_auth(b"set a 0"),
            AuthParsed::Incomplete { needed: None }
        );
        assert_eq!(parse_auth(&[b'x'; 3000]), AuthParsed::Close);
    }
}
