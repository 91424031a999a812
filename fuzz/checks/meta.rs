//! Properties of the meta-command parser (`mg ms md ma mn me`), checked on any byte stream: shared by the
//! fuzz target `meta` and the stable seed replay (`crates/protocol/tests/replay_meta.rs`), which
//! include this file by path.
//!
//! The stream is parsed request after request as a session does (honouring swallows), under the default
//! limits and under small ones (to reach the too-large path). For every meta request the parser accepts:
//! - what it reports lies inside what it was given: the line, the flag tokens and a plain key are slices
//!   of the consumed line, an `ms` value is the `<datalen>` bytes after the line followed by `\r\n`;
//! - the flag list is what the pre-parser may accept: known letters, each once, at most 20 tokens, no
//!   opaque over 32 bytes, and every decoded field agrees with the tokens (`v` ⇔ `value`, `T` ⇔ `ttl`, a
//!   plain decimal argument gives its own value, ...);
//! - a base64 key (`b`) decodes to at most 187 bytes that re-encode to a key of the same length;
//! - round trip: the request written back canonically (single spaces, `\r\n`, the key re-encoded when it
//!   came in base64) parses to the same request, consuming exactly what was written.
//!
//! Every result keeps the general contract (`mrcache_protocol::check_parse_contract_with` drives the
//! stream): non-empty consumption within the buffer, `Incomplete` asking for more than it has, single-line
//! error replies, which here must also be memcached's `ERROR`, `CLIENT_ERROR ` or `SERVER_ERROR ` forms.

use mrcache_protocol::base64;
use mrcache_protocol::{
    check_parse_contract_with, contract_limits, parse, Data, Limits, MetaFlags, MetaKey, MetaMode,
    MetaSet, Parsed, Request, KEY_MAX_LENGTH,
};

/// The flag letters memcached 1.6.18's pre-parser accepts.
const FLAG_LETTERS: &[u8] = b"bNTRlOPLkstcfvhuqFCMJDI";

/// Checks `data` under the default limits and under small ones; panics on a violation.
pub fn check(data: &[u8]) {
    for limits in contract_limits() {
        check_stream(data, &limits);
    }
}

/// The parser's general contract over the stream (`mrcache_protocol::check_parse_contract_with`), plus
/// the meta properties of every accepted request and memcached's error-line forms.
fn check_stream(input: &[u8], limits: &Limits) {
    check_parse_contract_with(input, limits, |rest, parsed| match parsed {
        Parsed::Request { request, consumed } => {
            if let Some(canonical) = check_meta(rest, request, *consumed) {
                round_trip(request, &canonical, limits);
            }
        }
        Parsed::Error(e) => {
            assert!(!e.line.contains('\r'));
            assert!(
                e.line == "ERROR"
                    || e.line.starts_with("CLIENT_ERROR ")
                    || e.line.starts_with("SERVER_ERROR "),
                "{}",
                e.line
            );
        }
        Parsed::Incomplete { .. } | Parsed::Close => {}
    });
}

/// Whether `part` is a sub-slice of `whole` (same memory).
fn within(part: &[u8], whole: &[u8]) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    p >= w && p + part.len() <= w + whole.len()
}

/// A plain decimal argument (optional `-`, up to `digits` digits) and its value: the cases whose value
/// needs no knowledge of memcached's `strto*` quirks.
fn plain_decimal(arg: &[u8], digits: usize) -> Option<i128> {
    let (negative, body) = match arg.strip_prefix(b"-") {
        Some(b) => (true, b),
        None => (false, arg),
    };
    if body.is_empty() || body.len() > digits || !body.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = body
        .iter()
        .fold(0i128, |acc, d| acc * 10 + i128::from(d - b'0'));
    Some(if negative { -v } else { v })
}

/// Checks one accepted request; for a meta request returns its canonical re-encoding.
fn check_meta(rest: &[u8], request: &Request<'_>, consumed: usize) -> Option<Vec<u8>> {
    let line_len = rest
        .iter()
        .position(|&b| b == b'\n')
        .expect("a request has a line")
        + 1;
    let line = &rest[..line_len];
    let (cmd, key, flags): (&[u8], &MetaKey<'_>, &MetaFlags<'_>) = match request {
        Request::MetaGet(m) => (b"mg", &m.key, &m.flags),
        Request::MetaDelete(m) => (b"md", &m.key, &m.flags),
        Request::MetaArith(m) => (b"ma", &m.key, &m.flags),
        Request::MetaSet(m) => (b"ms", &m.key, &m.flags),
        Request::MetaNoop => {
            assert_eq!(consumed, line_len);
            return Some(b"mn\r\n".to_vec());
        }
        Request::MetaDebug(m) => {
            assert_eq!(consumed, line_len);
            check_key(&m.key, line);
            let mut out = b"me ".to_vec();
            push_key(&mut out, &m.key);
            if m.key.is_binary() {
                out.extend_from_slice(b" b");
            }
            out.extend_from_slice(b"\r\n");
            return Some(out);
        }
        _ => return None,
    };
    check_key(key, line);
    check_flags(flags, line);
    assert_eq!(
        key.is_binary(),
        flags.has(b'b'),
        "b flag and key decoding disagree"
    );

    let mut out = cmd.to_vec();
    out.push(b' ');
    push_key(&mut out, key);
    match request {
        Request::MetaSet(m) => {
            let length = match m.data {
                Data::Value(v) => {
                    assert_eq!(consumed, line_len + v.len() + 2, "ms consumed");
                    assert!(within(v, rest));
                    assert_eq!(v.as_ptr() as usize, rest.as_ptr() as usize + line_len);
                    assert_eq!(&rest[consumed - 2..consumed], b"\r\n");
                    v.len()
                }
                Data::TooLarge { swallow } => {
                    assert_eq!(consumed, line_len, "a too-large ms consumes its line only");
                    assert!(swallow >= 2);
                    swallow - 2
                }
            };
            let expected_mode = match m.flags.mode {
                None | Some(b'S') => MetaMode::Set,
                Some(b'E') => MetaMode::Add,
                Some(b'A') => MetaMode::Append,
                Some(b'P') => MetaMode::Prepend,
                Some(b'R') => MetaMode::Replace,
                Some(other) => panic!("ms accepted mode {other:?}"),
            };
            assert_eq!(m.mode, expected_mode);
            out.push(b' ');
            out.extend_from_slice(length.to_string().as_bytes());
        }
        Request::MetaArith(m) => {
            let incr = match m.flags.mode {
                None | Some(b'I' | b'i' | b'+') => true,
                Some(b'D' | b'd' | b'-') => false,
                Some(other) => panic!("ma accepted mode {other:?}"),
            };
            assert_eq!(m.incr, incr);
            assert_eq!(consumed, line_len);
        }
        _ => assert_eq!(consumed, line_len),
    }
    for f in flags.iter() {
        out.push(b' ');
        out.extend_from_slice(f.token);
    }
    out.extend_from_slice(b"\r\n");
    if let Request::MetaSet(MetaSet {
        data: Data::Value(v),
        ..
    }) = request
    {
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    Some(out)
}

fn check_key(key: &MetaKey<'_>, line: &[u8]) {
    let bytes = key.bytes();
    if key.is_binary() {
        assert!(!bytes.is_empty() && bytes.len() <= KEY_MAX_LENGTH / 4 * 3);
        let mut encoded = Vec::new();
        base64::encode(bytes, &mut encoded);
        assert!(encoded.len() <= KEY_MAX_LENGTH);
        let mut decoded = [0u8; KEY_MAX_LENGTH];
        let n = base64::decode(&encoded, &mut decoded).expect("a re-encoded key decodes");
        assert_eq!(&decoded[..n], bytes, "base64 round trip");
    } else {
        assert!(!bytes.is_empty() && bytes.len() <= KEY_MAX_LENGTH);
        assert!(within(bytes, line), "a plain key is a slice of its line");
        assert!(!bytes.contains(&b' ') && !bytes.contains(&b'\n') && !bytes.contains(&0));
    }
}

fn push_key(out: &mut Vec<u8>, key: &MetaKey<'_>) {
    if key.is_binary() {
        base64::encode(key.bytes(), out);
    } else {
        out.extend_from_slice(key.bytes());
    }
}

fn check_flags(flags: &MetaFlags<'_>, line: &[u8]) {
    let mut seen = [false; 256];
    let mut count = 0;
    for f in flags.iter() {
        count += 1;
        assert!(!f.token.is_empty() && f.token[0] == f.letter);
        assert!(
            FLAG_LETTERS.contains(&f.letter),
            "accepted flag {:?}",
            f.letter
        );
        assert!(
            !seen[usize::from(f.letter)],
            "duplicate flag {:?}",
            f.letter
        );
        seen[usize::from(f.letter)] = true;
        assert!(within(f.token, line), "a flag token is a slice of its line");
        assert!(!f.token.contains(&b' ') && !f.token.contains(&b'\n') && !f.token.contains(&0));
        if f.letter == b'O' {
            assert!(
                f.token.len() <= 32,
                "opaque token of {} bytes",
                f.token.len()
            );
        }
    }
    assert!(count <= 20, "{count} flags");
    let arg = |letter: u8| {
        flags
            .iter()
            .find(|f| f.letter == letter)
            .map(|f| &f.token[1..])
    };
    assert_eq!(flags.value, flags.has(b'v'));
    assert_eq!(flags.no_update, flags.has(b'u'));
    assert_eq!(flags.quiet, flags.has(b'q'));
    assert_eq!(flags.invalidate, flags.has(b'I'));
    assert_eq!(flags.mode.is_some(), flags.has(b'M'));
    if let Some(a) = arg(b'M') {
        assert_eq!(a.len(), 1);
        assert_eq!(flags.mode, Some(a[0]));
    }
    for (letter, field) in [
        (b'N', flags.vivify),
        (b'T', flags.ttl),
        (b'R', flags.recache),
    ] {
        assert_eq!(
            field.is_some(),
            flags.has(letter),
            "flag {}",
            letter as char
        );
        let field = field.map(i128::from);
        if let Some(v) = arg(letter).and_then(|a| plain_decimal(a, 9)) {
            assert_eq!(field, Some(v), "flag {}", letter as char);
        }
        if let Some(v) = field {
            assert!(i128::from(i32::MIN) <= v && v <= i128::from(i32::MAX));
        }
    }
    assert_eq!(flags.cas.is_some(), flags.has(b'C'));
    let unsigned = [
        (b'C', flags.cas.map(i128::from), None),
        (b'J', Some(i128::from(flags.initial)), Some(0)),
        (b'D', Some(i128::from(flags.delta)), Some(1)),
        (b'F', Some(i128::from(flags.client_flags)), Some(0)),
    ];
    for (letter, field, default) in unsigned {
        match arg(letter) {
            Some(a) => {
                let digits = if letter == b'F' { 9 } else { 19 };
                if let Some(v) = plain_decimal(a, digits).filter(|v| *v >= 0) {
                    assert_eq!(field, Some(v), "flag {}", letter as char);
                }
            }
            None => assert_eq!(field, default, "flag {} absent", letter as char),
        }
    }
}

/// The canonical form parses to the same request and consumes exactly itself.
fn round_trip(original: &Request<'_>, canonical: &[u8], limits: &Limits) {
    let Parsed::Request { request, consumed } = parse(canonical, limits) else {
        panic!(
            "canonical form {:?} of {original:?} does not parse",
            String::from_utf8_lossy(canonical)
        );
    };
    assert_eq!(consumed, canonical.len(), "canonical form consumed");
    let same = match (original, &request) {
        (Request::MetaNoop, Request::MetaNoop) => true,
        (Request::MetaDebug(a), Request::MetaDebug(b)) => same_key(&a.key, &b.key),
        (Request::MetaGet(a), Request::MetaGet(b)) => {
            same_key(&a.key, &b.key) && same_flags(&a.flags, &b.flags)
        }
        (Request::MetaDelete(a), Request::MetaDelete(b)) => {
            same_key(&a.key, &b.key) && same_flags(&a.flags, &b.flags)
        }
        (Request::MetaArith(a), Request::MetaArith(b)) => {
            same_key(&a.key, &b.key) && same_flags(&a.flags, &b.flags) && a.incr == b.incr
        }
        (Request::MetaSet(a), Request::MetaSet(b)) => {
            same_key(&a.key, &b.key)
                && same_flags(&a.flags, &b.flags)
                && a.mode == b.mode
                && a.data == b.data
        }
        _ => false,
    };
    assert!(
        same,
        "round trip changed the request:\n{original:?}\n{request:?}\nvia {:?}",
        String::from_utf8_lossy(canonical)
    );
}

fn same_key(a: &MetaKey<'_>, b: &MetaKey<'_>) -> bool {
    a.bytes() == b.bytes() && a.is_binary() == b.is_binary()
}

fn same_flags(a: &MetaFlags<'_>, b: &MetaFlags<'_>) -> bool {
    a.iter().eq(b.iter())
        && a.vivify == b.vivify
        && a.ttl == b.ttl
        && a.recache == b.recache
        && a.value == b.value
        && a.no_update == b.no_update
        && a.quiet == b.quiet
        && a.client_flags == b.client_flags
        && a.cas == b.cas
        && a.mode == b.mode
        && a.initial == b.initial
        && a.delta == b.delta
        && a.invalidate == b.invalidate
}
