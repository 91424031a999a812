//! get/gets/gat/gats: `get <key>*`, `gat <exptime> <key>*`.
//!
//! memcached needs at least one token after the command (`get` alone is `ERROR`; `gat 10` with no key is
//! just `END`). Any key over 250 bytes makes the whole reply `CLIENT_ERROR bad command line format`, so
//! all keys are checked here, before anything is looked up. A bad gat exptime is
//! `CLIENT_ERROR invalid exptime argument`.

use crate::parse::Line;
use crate::request::{GetKind, GetRequest, Keys, Parsed, Request};
use crate::tokens::{after_token, strtol32, KEY_MAX_LENGTH};

pub(crate) fn parse<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    if t.ntokens() < 3 {
        return line.error("ERROR", false);
    }
    let kind = match t.get(0) {
        b"get" => GetKind::Get,
        b"gets" => GetKind::Gets,
        b"gat" => GetKind::Gat,
        _ => GetKind::Gats,
    };
    let (exptime, keys_after) = if kind.touches() {
        match strtol32(t.get(1)) {
            Some(e) => (i64::from(e), t.get(1)),
            None => return line.error("CLIENT_ERROR invalid exptime argument", false),
        }
    } else {
        (0, t.get(0))
    };
    let keys = Keys::new(after_token(line.text, keys_after));
    if keys.clone().any(|k| k.len() > KEY_MAX_LENGTH) {
        return line.error("CLIENT_ERROR bad command line format", false);
    }
    Parsed::Request {
        request: Request::Get(GetRequest {
            kind,
            exptime,
            keys,
        }),
        consumed: line.len,
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::tests::{error_of, request_of};
    use crate::request::*;

    fn get(input: &[u8]) -> GetRequest<'_> {
        match request_of(input).0 {
            Request::Get(g) => g,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn multi_get_keeps_order_and_duplicates() {
        let g = get(b"get a  b a\r\n");
        assert_eq!(g.kind, GetKind::Get);
        assert_eq!(g.keys.collect::<Vec<_>>(), vec![&b"a"[..], b"b", b"a"]);
    }

    #[test]
    fn more_keys_than_max_tokens() {
        let line = format!(
            "gets {}\r\n",
            (0..100)
                .map(|i| format!("k{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let g = get(line.as_bytes());
        assert_eq!(g.kind, GetKind::Gets);
        assert_eq!(g.keys.count(), 100);
    }

    #[test]
    fn gat_takes_an_exptime() {
        let g = get(b"gats 10 a b\r\n");
        assert_eq!((g.kind, g.exptime, g.keys.count()), (GetKind::Gats, 10, 2));
        let g = get(b"gat 10\r\n");
        assert_eq!(g.keys.count(), 0, "no key: just END");
        assert_eq!(
            error_of(b"gat x a\r\n").line,
            "CLIENT_ERROR invalid exptime argument"
        );
    }

    #[test]
    fn missing_key_is_error() {
        for input in [
            &b"get\r\n"[..],
            b"gets\r\n",
            b"gat\r\n",
            b"gats \r\n",
            b"getx a\r\n",
        ] {
            assert_eq!(error_of(input).line, "ERROR");
        }
    }

    #[test]
    fn a_long_key_anywhere_fails_the_line() {
        let input = format!("get a {} b\r\n", "x".repeat(251));
        assert_eq!(
            error_of(input.as_bytes()).line,
            "CLIENT_ERROR bad command line format"
        );
        let input = format!("get {}\r\n", "x".repeat(250));
        assert_eq!(get(input.as_bytes()).keys.count(), 1);
    }
}
