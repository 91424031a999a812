//! incr/decr: `incr <key> <delta> [noreply]`.
//!
//! Four or five tokens or `ERROR`; a key over 250 bytes is `CLIENT_ERROR bad command line format`; a delta
//! that `safe_strtoull` refuses (negative, over 2^64-1, not a number) is
//! `CLIENT_ERROR invalid numeric delta argument`. A fifth token other than `noreply` is ignored.

use crate::parse::Line;
use crate::request::{ArithRequest, Parsed, Request};
use crate::tokens::strtoull;

pub(crate) fn parse<'a>(line: &Line<'a>) -> Parsed<'a> {
    let (key, delta, noreply) =
        match line.key_and_number(strtoull, "CLIENT_ERROR invalid numeric delta argument") {
            Ok(parsed) => parsed,
            Err(error) => return Parsed::Error(error),
        };
    Parsed::Request {
        request: Request::Arith(ArithRequest {
            incr: line.tokens.get(0) == b"incr",
            key,
            delta,
            noreply,
        }),
        consumed: line.len,
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::tests::{error_of, request_of};
    use crate::request::*;

    #[test]
    fn incr_and_decr() {
        let (r, n) = request_of(b"incr k 5\r\n");
        assert_eq!(n, 10);
        let Request::Arith(a) = r else { panic!() };
        assert_eq!(
            (a.incr, a.key, a.delta, a.noreply),
            (true, &b"k"[..], 5, false)
        );
        let Request::Arith(a) = request_of(b"decr k 18446744073709551615 noreply\r\n").0 else {
            panic!()
        };
        assert_eq!((a.incr, a.delta, a.noreply), (false, u64::MAX, true));
        let Request::Arith(a) = request_of(b"incr k 2 x\r\n").0 else {
            panic!()
        };
        assert!(!a.noreply);
    }

    #[test]
    fn errors() {
        assert_eq!(error_of(b"incr\r\n").line, "ERROR");
        assert_eq!(error_of(b"incr a\r\n").line, "ERROR");
        assert_eq!(error_of(b"incr a 1 2 3\r\n").line, "ERROR");
        for bad in [
            &b"incr a x\r\n"[..],
            b"incr a -1\r\n",
            b"decr a 18446744073709551616\r\n",
        ] {
            assert_eq!(
                error_of(bad).line,
                "CLIENT_ERROR invalid numeric delta argument"
            );
        }
        assert!(error_of(b"decr a x noreply\r\n").noreply);
        let long = format!("incr {} 1\r\n", "k".repeat(251));
        assert_eq!(
            error_of(long.as_bytes()).line,
            "CLIENT_ERROR bad command line format"
        );
    }
}
