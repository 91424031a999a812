//! delete and touch.
//!
//! `delete <key> [0] [noreply]`: three to five tokens or `ERROR`; with four or five, the extra tokens must
//! be a hold time of exactly `0` and/or `noreply`, else
//! `CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]` (suppressed by `noreply`).
//! `touch <key> <exptime> [noreply]`: four or five tokens; a bad exptime is
//! `CLIENT_ERROR invalid exptime argument`.

use crate::parse::Line;
use crate::request::{DeleteRequest, Parsed, Request, TouchRequest};
use crate::tokens::{strtol32, KEY_MAX_LENGTH};

const DELETE_USAGE: &str = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";

pub(crate) fn parse_delete<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    let n = t.ntokens();
    if !(3..=5).contains(&n) {
        return line.error("ERROR", false);
    }
    let noreply = t.noreply();
    if n > 3 {
        let hold_is_zero = t.get(2) == b"0";
        let valid = (n == 4 && (hold_is_zero || noreply)) || (n == 5 && hold_is_zero && noreply);
        if !valid {
            return line.error(DELETE_USAGE, noreply);
        }
    }
    let key = t.get(1);
    if key.len() > KEY_MAX_LENGTH {
        return line.error("CLIENT_ERROR bad command line format", noreply);
    }
    Parsed::Request {
        request: Request::Delete(DeleteRequest { key, noreply }),
        consumed: line.len,
    }
}

pub(crate) fn parse_touch<'a>(line: &Line<'a>) -> Parsed<'a> {
    let (key, exptime, noreply) =
        match line.key_and_number(strtol32, "CLIENT_ERROR invalid exptime argument") {
            Ok(parsed) => parsed,
            Err(error) => return Parsed::Error(error),
        };
    Parsed::Request {
        request: Request::Touch(TouchRequest {
            key,
            exptime: i64::from(exptime),
            noreply,
        }),
        consumed: line.len,
    }
}

#[cfg(test)]
mod tests {
    use super::DELETE_USAGE;
    use crate::parse::tests::{error_of, request_of};
    use crate::request::*;

    #[test]
    fn delete_forms() {
        for (input, noreply) in [
            (&b"delete a\r\n"[..], false),
            (b"delete a 0\r\n", false),
            (b"delete a noreply\r\n", true),
            (b"delete a 0 noreply\r\n", true),
        ] {
            let Request::Delete(d) = request_of(input).0 else {
                panic!()
            };
            assert_eq!((d.key, d.noreply), (&b"a"[..], noreply));
        }
    }

    #[test]
    fn delete_errors() {
        assert_eq!(error_of(b"delete\r\n").line, "ERROR");
        assert_eq!(error_of(b"delete a b c d\r\n").line, "ERROR");
        for input in [
            &b"delete a b\r\n"[..],
            b"delete a 1\r\n",
            b"delete a 0 x\r\n",
        ] {
            let e = error_of(input);
            assert_eq!((e.line, e.noreply), (DELETE_USAGE, false));
        }
        assert!(error_of(b"delete a x noreply\r\n").noreply);
    }

    #[test]
    fn touch_forms_and_errors() {
        let Request::Touch(t) = request_of(b"touch a -5 noreply\r\n").0 else {
            panic!()
        };
        assert_eq!((t.key, t.exptime, t.noreply), (&b"a"[..], -5, true));
        assert_eq!(error_of(b"touch a\r\n").line, "ERROR");
        assert_eq!(error_of(b"touch a 1 2 3\r\n").line, "ERROR");
        assert_eq!(
            error_of(b"touch a x\r\n").line,
            "CLIENT_ERROR invalid exptime argument"
        );
        assert!(error_of(b"touch a x noreply\r\n").noreply);
    }
}
