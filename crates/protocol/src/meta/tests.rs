//! The meta commands' parsing, case by case: flags, tokens, base64 keys and the errors memcached gives.

use super::*;
use crate::parse::parse;
use crate::parse::tests::{error_of, request_of};
use crate::request::Data;

fn mg(input: &[u8]) -> MetaGet<'_> {
    match request_of(input).0 {
        Request::MetaGet(g) => g,
        other => panic!("{other:?}"),
    }
}

#[test]
fn mg_flags_in_order() {
    let g = mg(b"mg foo s t c f l h k O1 P L u v q N30 R5 T-1\r\n");
    assert_eq!(g.key.bytes(), b"foo");
    let letters: Vec<u8> = g.flags.iter().map(|f| f.letter).collect();
    assert_eq!(letters, b"stcflhkOPLuvqNRT");
    assert!(g.flags.value && g.flags.quiet && g.flags.no_update);
    assert_eq!(
        (g.flags.vivify, g.flags.recache, g.flags.ttl),
        (Some(30), Some(5), Some(-1))
    );
    assert!(g.flags.has(b'O') && !g.flags.has(b'E'));
}

#[test]
fn mg_accepts_every_preparse_flag() {
    mg(b"mg foo F5 J1 D1 MS I C1 P L\r\n");
    mg(b"mg foo\r\n");
}

#[test]
fn mg_errors() {
    assert_eq!(error_of(b"mg\r\n").line, "ERROR");
    assert_eq!(error_of(b"mg foo x\r\n").line, "CLIENT_ERROR invalid flag");
    assert_eq!(error_of(b"mg foo E5\r\n").line, "CLIENT_ERROR invalid flag");
    assert_eq!(
        error_of(b"mg foo v v\r\n").line,
        "CLIENT_ERROR duplicate flag"
    );
    assert_eq!(
        error_of(b"mg foo \x80\r\n").line,
        "CLIENT_ERROR duplicate flag"
    );
    assert_eq!(
        error_of(b"mg foo Tx\r\n").line,
        "CLIENT_ERROR bad token in command line format"
    );
    assert_eq!(
        error_of(b"mg foo Nx Jx\r\n").line,
        "CLIENT_ERROR invalid numeric initial value"
    );
    assert_eq!(
        error_of(b"mg foo Fx\r\n").line,
        "CLIENT_ERROR bad command line format"
    );
    assert_eq!(
        error_of(b"mg foo MSS\r\n").line,
        "CLIENT_ERROR incorrect length for M token"
    );
    assert_eq!(
        error_of(b"mg Zm9 b k\r\n").line,
        "CLIENT_ERROR error decoding key"
    );
    assert_eq!(
        error_of(b"mg foo 1 2 3 4 5 6 7 8 9 a b c d e f g h i j k l m n\r\n").line,
        "CLIENT_ERROR options flags are too long"
    );
    assert_eq!(
        error_of(b"mg foo O12345678901234567890123456789012\r\n").line,
        "CLIENT_ERROR opaque token too long"
    );
    mg(b"mg foo O1234567890123456789012345678901\r\n");
    let long = format!("mg {} v\r\n", "a".repeat(251));
    assert_eq!(
        error_of(long.as_bytes()).line,
        "CLIENT_ERROR bad command line format"
    );
}

#[test]
fn base64_keys_decode() {
    let g = mg(b"mg Zm9vYg== b k\r\n");
    assert_eq!(g.key.bytes(), b"foob");
    assert!(g.key.is_binary());
}

#[test]
fn md_and_ma_errors_are_generic() {
    for input in [
        &b"md foo x\r\n"[..],
        b"md foo Cx\r\n",
        b"ma foo Jx\r\n",
        b"ma n1 Dx\r\n",
        b"ma t t T50 t\r\n",
    ] {
        assert_eq!(
            error_of(input).line,
            "CLIENT_ERROR invalid or duplicate flag",
            "{input:?}"
        );
    }
    assert_eq!(
        error_of(b"ma n1 MX\r\n").line,
        "CLIENT_ERROR invalid mode for ma M token"
    );
    assert_eq!(error_of(b"md\r\n").line, "ERROR");
    assert_eq!(error_of(b"ma\r\n").line, "ERROR");
    assert_eq!(
        error_of(b"md a 1 2 3 4 5 6 7 8 9 a b c d e f g h i j k l m n\r\n").line,
        "CLIENT_ERROR options flags too long"
    );
}

#[test]
fn ma_modes_and_defaults() {
    for (input, incr) in [
        (&b"ma k\r\n"[..], true),
        (b"ma k MI\r\n", true),
        (b"ma k M+\r\n", true),
        (b"ma k MD\r\n", false),
        (b"ma k Md\r\n", false),
        (b"ma k M-\r\n", false),
    ] {
        let Request::MetaArith(a) = request_of(input).0 else {
            panic!()
        };
        assert_eq!(a.incr, incr);
        assert_eq!((a.flags.delta, a.flags.initial), (1, 0));
    }
    let Request::MetaArith(a) = request_of(b"ma k N0 J10 D5 v t c\r\n").0 else {
        panic!()
    };
    assert_eq!(
        (a.flags.vivify, a.flags.initial, a.flags.delta),
        (Some(0), 10, 5)
    );
}

#[test]
fn md_flags() {
    let Request::MetaDelete(d) = request_of(b"md k I T30 C5 q O1 k\r\n").0 else {
        panic!()
    };
    assert!(d.flags.invalidate && d.flags.quiet);
    assert_eq!((d.flags.ttl, d.flags.cas), (Some(30), Some(5)));
}

#[test]
fn ms_parses_data_and_modes() {
    let (r, n) = request_of(b"ms k 2 T5 F3 c k O1 q\r\nhi\r\n");
    assert_eq!(n, 27);
    let Request::MetaSet(s) = r else { panic!() };
    assert_eq!(
        (s.mode, s.data, s.flags.client_flags, s.flags.ttl),
        (MetaMode::Set, Data::Value(b"hi"), 3, Some(5))
    );
    for (m, mode) in [
        ("E", MetaMode::Add),
        ("A", MetaMode::Append),
        ("P", MetaMode::Prepend),
        ("R", MetaMode::Replace),
        ("S", MetaMode::Set),
    ] {
        let input = format!("ms k 1 M{m}\r\nx\r\n");
        let Request::MetaSet(s) = request_of(input.as_bytes()).0 else {
            panic!()
        };
        assert_eq!(s.mode, mode);
    }
    let Request::MetaSet(s) = request_of(b"ms azE= 2 b k c O3\r\nhi\r\n").0 else {
        panic!()
    };
    assert_eq!(s.key.bytes(), b"k1");
}

#[test]
fn ms_errors_before_the_length_are_not_swallowed() {
    for input in [&b"ms k2\r\n"[..], b"ms k2 xx\r\n", b"ms k2 -1\r\n"] {
        let e = error_of(input);
        assert_eq!(
            (e.line, e.swallow),
            ("CLIENT_ERROR bad command line format", 0)
        );
    }
    assert_eq!(error_of(b"ms\r\n").line, "ERROR");
    let e = error_of(b"ms a 2 1 2 3 4 5 6 7 8 9 a b c d e f g h i j k l m n\r\n");
    assert_eq!(
        (e.line, e.swallow),
        ("CLIENT_ERROR options flags too long", 0)
    );
}

#[test]
fn ms_errors_after_the_length_swallow() {
    for (input, msg) in [
        (&b"ms k 2 x\r\n"[..], "CLIENT_ERROR invalid flag"),
        (b"ms k 2 MX\r\n", "CLIENT_ERROR invalid mode for ms M token"),
        (b"ms k 2 Ms\r\n", "CLIENT_ERROR invalid mode for ms M token"),
        (b"ms k1 2 b\r\n", "CLIENT_ERROR error decoding key"),
        (b"ms k 2 Fx\r\n", "CLIENT_ERROR bad command line format"),
    ] {
        let e = error_of(input);
        assert_eq!((e.line, e.swallow, e.noreply), (msg, 4, false), "{input:?}");
    }
}

#[test]
fn ms_bad_chunk_is_reported_even_quiet() {
    let e = error_of(b"ms k 2 q\r\nhix\r\n");
    assert_eq!(
        (e.line, e.consumed, e.noreply),
        ("CLIENT_ERROR bad data chunk", 14, false)
    );
}

#[test]
fn ms_too_large() {
    let (r, n) = request_of(b"ms big 2000000 T0\r\n");
    assert_eq!(n, 19);
    let Request::MetaSet(s) = r else { panic!() };
    assert_eq!(s.data, Data::TooLarge { swallow: 2_000_002 });
    assert!(matches!(
        parse(b"ms k 10\r\nab", &Limits::default()),
        Parsed::Incomplete { needed: Some(21) }
    ));
}

#[test]
fn mn_me_and_unknown() {
    assert!(matches!(request_of(b"mn extra\r\n").0, Request::MetaNoop));
    let Request::MetaDebug(d) = request_of(b"me Zm9v b\r\n").0 else {
        panic!()
    };
    assert_eq!(d.key.bytes(), b"foo");
    assert_eq!(
        error_of(b"me\r\n").line,
        "CLIENT_ERROR bad command line format"
    );
    assert_eq!(
        error_of(b"me foo b\r\n").line,
        "CLIENT_ERROR bad command line format"
    );
    assert_eq!(error_of(b"mx\r\n").line, "ERROR");
}
