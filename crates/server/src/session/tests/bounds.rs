//! The session's own bounds: output stops at `OUTPUT_BOUND_BYTES` (a multi-key retrieval resumes by key,
//! producing exactly the bytes of one uninterrupted reply), and a large value still arriving needs a
//! grant from the server's budget or is refused as memcached refuses a store it cannot allocate.

use super::*;

fn set_value(s: &mut Session, key: &str, len: usize) {
    let mut req = format!("set {key} 0 0 {len}\r\n").into_bytes();
    req.extend(std::iter::repeat_n(b'v', len));
    req.extend_from_slice(b"\r\n");
    assert_eq!(run(s, &req), "STORED\r\n");
}

#[test]
fn a_multi_key_reply_stops_at_the_bound_and_resumes_by_key() {
    let mut s = session();
    set_value(&mut s, "a", 40_000);
    set_value(&mut s, "b", 3);
    let input = b"get a b miss a a b\r\nget b\r\n";
    let a = format!("VALUE a 0 40000\r\n{}\r\n", "v".repeat(40_000));
    let b = "VALUE b 0 3\r\nvvv\r\n";
    let whole = format!("{a}{b}{a}{a}{b}END\r\n{b}END\r\n");

    let mut out = Vec::new();
    let mut sent = Vec::new();
    let mut consumed = 0;
    let mut calls = 0;
    while consumed < input.len() {
        let p = s.process(&input[consumed..], &mut out, usize::MAX);
        consumed += p.consumed;
        calls += 1;
        // Each call stops once it has produced the bound (plus at most one value).
        assert!(
            out.len() < OUTPUT_BOUND_BYTES + 40_100,
            "{} bytes",
            out.len()
        );
        if calls == 1 {
            assert!(p.output_full && p.consumed == 0, "suspended, unconsumed");
        }
        // The transport writes everything out.
        sent.append(&mut out);
        assert!(calls < 10, "no progress");
    }
    assert!(calls >= 2, "the reply was cut");
    assert_eq!(String::from_utf8(sent).unwrap(), whole);
}

#[test]
fn no_request_runs_while_the_output_is_at_the_bound() {
    let mut s = session();
    let mut out = vec![b'x'; OUTPUT_BOUND_BYTES];
    let p = s.process(b"version\r\n", &mut out, usize::MAX);
    assert_eq!((p.consumed, p.output_full), (0, true));
    assert_eq!(out.len(), OUTPUT_BOUND_BYTES);
}

#[test]
fn a_large_value_arriving_needs_a_grant_or_is_refused_as_out_of_memory() {
    let a = session();
    let mut b = session_sharing(&a);
    set_value(&mut b, "k", 10);
    // Uploads as large as `-I` allows take the budget until less than 100 KB is left.
    let budget = &a.ctx.partial_values;
    let mut uploads = Vec::new();
    while budget.limit() - budget.in_use() >= 100_100 {
        let mut u = session_sharing(&a);
        let len = (budget.limit() - budget.in_use() - 100).min(1_000_000);
        let mut out = Vec::new();
        let p = u.process(
            format!("set up 0 0 {len}\r\n").as_bytes(),
            &mut out,
            usize::MAX,
        );
        assert_eq!((p.consumed, out.len()), (0, 0), "granted, waiting for data");
        uploads.push(u);
    }
    // `b` now finds the budget spent: refused at once, its old value dropped, its data swallowed.
    let mut out = Vec::new();
    let p = b.process(b"set k 0 0 100000\r\nxyz", &mut out, usize::MAX);
    assert_eq!(out, b"SERVER_ERROR out of memory storing object\r\n");
    assert_eq!(p.consumed, 21);
    assert_eq!(run(&mut b, &[b'z'; 99_997]), "");
    assert_eq!(run(&mut b, b"\r\nget k\r\n"), "END\r\n");
    // Small values need no grant.
    assert_eq!(run(&mut b, b"set s 0 0 1\r\nx\r\n"), "STORED\r\n");
    // The grants come back when the uploads go away.
    drop(uploads);
    assert_eq!(a.ctx.partial_values.in_use(), 0);
}
