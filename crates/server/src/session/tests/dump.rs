//! Dumps in the session: `lru_crawler metadump` and `stats cachedump` stream in bounded steps across
//! `process` calls, list every stored item once, hold the crawler (BUSY) until their last step or the
//! session's end, and run what was pipelined behind them only afterwards.

use super::*;
use crate::dispatch::{DUMP_BATCH_SLOTS, METADUMP_CHUNK_BYTES};

/// Stores `n` items `k0..k{n-1}` through the session.
fn fill(s: &mut Session, n: usize) {
    let mut req = Vec::new();
    for i in 0..n {
        req.extend_from_slice(format!("set k{i} 0 0 5 noreply\r\nvalue\r\n").as_bytes());
    }
    run(s, &req);
}

/// Runs `input` to completion the way a transport does (writing everything out after each call);
/// returns the replies and the number of calls.
fn drive(s: &mut Session, input: &[u8]) -> (String, usize) {
    let (mut out, mut sent) = (Vec::new(), Vec::new());
    let (mut consumed, mut calls) = (0, 0);
    while consumed < input.len() {
        let p = s.process(&input[consumed..], &mut out, usize::MAX);
        consumed += p.consumed;
        calls += 1;
        // A step stops at the bound plus one batch of lines (each under 100 bytes here), or for a
        // metadump one chunk from its dump thread (the batch that filled it included).
        assert!(out.len() < OUTPUT_BOUND_BYTES + METADUMP_CHUNK_BYTES + 100 * DUMP_BATCH_SLOTS);
        assert!(p.yielded || p.output_full || consumed == input.len());
        sent.append(&mut out);
        assert!(calls < 100_000, "no progress");
    }
    (String::from_utf8(sent).unwrap(), calls)
}

#[test]
fn a_metadump_streams_in_steps_and_lists_every_item_once() {
    let mut s = session();
    fill(&mut s, 20_000);
    let (reply, calls) = drive(&mut s, b"lru_crawler metadump all\r\nmn\r\n");
    assert!(calls > 10, "streamed in steps, not at once ({calls} calls)");
    let (dump, rest) = reply.split_once("END\r\n").expect("the dump ends");
    assert_eq!(rest, "MN\r\n", "what was pipelined behind runs after it");
    let mut keys: Vec<&str> = dump
        .lines()
        .map(|l| {
            let fields: Vec<&str> = l.split(' ').collect();
            assert_eq!(fields.len(), 7, "{l}");
            assert!(fields[1] == "exp=-1" && fields[4] == "fetch=no" && fields[5] == "cls=1");
            fields[0].strip_prefix("key=").unwrap()
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 20_000);
    assert!(!s.ctx.crawler.is_running(), "the claim is released");
}

#[test]
fn a_metadump_holds_the_crawler_until_it_ends_or_its_connection_goes() {
    let mut a = session();
    let mut b = session_sharing(&a);
    fill(&mut a, 20_000);
    let mut out = Vec::new();
    let p = a.process(b"lru_crawler metadump all\r\n", &mut out, usize::MAX);
    assert!(p.yielded && p.consumed == 0, "under way");
    assert!(a.ctx.crawler.is_running());
    assert_eq!(
        run(&mut b, b"lru_crawler metadump 1\r\nlru_crawler crawl all\r\n"),
        "BUSY currently processing crawler request\r\nBUSY currently processing crawler request\r\n"
    );
    assert!(run(&mut b, b"stats\r\n").contains("STAT lru_crawler_running 1\r\n"));
    // Other requests are not held up, and a cachedump does not need the crawler.
    assert_eq!(
        run(&mut b, b"get k1\r\n"),
        "VALUE k1 0 5\r\nvalue\r\nEND\r\n"
    );
    assert!(drive(&mut b, b"stats cachedump 1 3\r\n")
        .0
        .ends_with("s]\r\nEND\r\n"));
    drop(a);
    assert!(
        !b.ctx.crawler.is_running(),
        "a closed connection frees the crawler"
    );
    assert!(drive(&mut b, b"lru_crawler metadump 1\r\n")
        .0
        .ends_with("END\r\n"));
}

#[test]
fn a_cachedump_stops_at_its_limit() {
    let mut s = session();
    fill(&mut s, 5_000);
    let (reply, _) = drive(&mut s, b"stats cachedump 1 7\r\nstats cachedump 1 0\r\n");
    let listings: Vec<&str> = reply.split_terminator("END\r\n").collect();
    assert_eq!(listings.len(), 2);
    assert_eq!(listings[0].lines().count(), 7);
    assert_eq!(listings[1].lines().count(), 5_000);
    assert!(listings[1]
        .lines()
        .all(|l| l.starts_with("ITEM k") && l.ends_with(" [5 b; 0 s]")));
}

#[test]
fn a_tenant_dumps_only_its_own_keys() {
    let ctx = tenant_server();
    let mut a = session_on(&ctx, 11211);
    let mut b = session_on(&ctx, 11211);
    assert_eq!(run(&mut a, b"set auth 0 0 4\r\na pa\r\n"), "STORED\r\n");
    assert_eq!(run(&mut b, b"set auth 0 0 4\r\nb pb\r\n"), "STORED\r\n");
    assert_eq!(
        run(&mut a, b"set same 0 0 1\r\na\r\nset mine 0 0 1\r\na\r\n"),
        "STORED\r\nSTORED\r\n"
    );
    assert_eq!(run(&mut b, b"set same 0 0 1\r\nb\r\n"), "STORED\r\n");
    let keys = |s: &mut Session, cmd: &[u8]| {
        let (reply, _) = drive(s, cmd);
        let mut keys: Vec<String> = reply
            .lines()
            .filter_map(|l| {
                l.strip_prefix("key=")
                    .or_else(|| l.strip_prefix("ITEM "))
                    .map(|r| r.split(' ').next().unwrap().to_string())
            })
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(
        keys(&mut a, b"lru_crawler metadump all\r\n"),
        ["mine", "same"]
    );
    assert_eq!(keys(&mut b, b"lru_crawler metadump hash\r\n"), ["same"]);
    assert_eq!(keys(&mut b, b"stats cachedump 1 0\r\n"), ["same"]);
    // Crawling stays an operator's (an admin tenant's: see `tests/ops.rs`).
    assert_eq!(
        run(&mut a, b"lru_crawler crawl all\r\n"),
        "CLIENT_ERROR lru_crawler not allowed for tenant a\r\n"
    );
}
