//! The text protocol through a session: storage, retrieval, arithmetic, errors, admin commands.

use super::*;

#[test]
fn set_get_and_multi_get() {
    let mut s = session();
    assert_eq!(
        run(&mut s, b"set k1 7 0 5\r\nhello\r\nget k1\r\n"),
        "STORED\r\nVALUE k1 7 5\r\nhello\r\nEND\r\n"
    );
    assert_eq!(
        run(&mut s, b"set k2 0 0 2\r\nv2\r\nget k2 missing k1 k2\r\n"),
        "STORED\r\nVALUE k2 0 2\r\nv2\r\nVALUE k1 7 5\r\nhello\r\nVALUE k2 0 2\r\nv2\r\nEND\r\n"
    );
    let gets = run(&mut s, b"gets k1\r\n");
    assert!(gets.starts_with("VALUE k1 7 5 "), "{gets}");
    assert_eq!(run(&mut s, b"get\r\n"), "ERROR\r\n");
}

#[test]
fn storage_commands_and_cas() {
    let mut s = session();
    assert_eq!(
        run(&mut s, b"add a 1 0 1\r\nx\r\nadd a 2 0 1\r\ny\r\n"),
        "STORED\r\nNOT_STORED\r\n"
    );
    assert_eq!(
        run(&mut s, b"replace r 0 0 1\r\nx\r\nreplace a 5 0 2\r\nzz\r\n"),
        "NOT_STORED\r\nSTORED\r\n"
    );
    assert_eq!(
        run(
            &mut s,
            b"append a 99 0 1\r\n>\r\nprepend a 42 0 1\r\n<\r\nget a\r\n"
        ),
        "STORED\r\nSTORED\r\nVALUE a 5 4\r\n<zz>\r\nEND\r\n"
    );
    assert_eq!(run(&mut s, b"append nope 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
    let cas = number_after(&run(&mut s, b"gets a\r\n"), "VALUE a 5 4 ");
    assert_eq!(
        run(&mut s, format!("cas a 0 0 1 {cas}\r\nb\r\n").as_bytes()),
        "STORED\r\n"
    );
    assert_eq!(
        run(&mut s, format!("cas a 0 0 1 {cas}\r\nc\r\n").as_bytes()),
        "EXISTS\r\n"
    );
    assert_eq!(
        run(&mut s, b"cas missing 0 0 1 1\r\nx\r\n"),
        "NOT_FOUND\r\n"
    );
    assert_eq!(run(&mut s, b"cas a 0 0 1\r\nx\r\n"), "ERROR\r\nERROR\r\n");
}

#[test]
fn noreply_suppresses_replies_and_errors() {
    let mut s = session();
    assert_eq!(
        run(&mut s, b"set nr 0 0 1 noreply\r\nq\r\nget nr\r\n"),
        "VALUE nr 0 1\r\nq\r\nEND\r\n"
    );
    assert_eq!(
        run(
            &mut s,
            b"add nr 0 0 1 noreply\r\nr\r\nincr nr 1 noreply\r\ndelete x noreply\r\n"
        ),
        ""
    );
    assert_eq!(
        run(&mut s, b"set a 0 0 1 noreply\r\nxyz\r\n"),
        "ERROR\r\n",
        "bad chunk hidden, CRLF is a command"
    );
    assert_eq!(
        run(&mut s, b"verbosity noreply\r\nflush_all noreply\r\nmn\r\n"),
        "MN\r\n"
    );
}

#[test]
fn bad_input_like_memcached() {
    let mut s = session();
    assert_eq!(
        run(&mut s, b"set a 0 0 1\r\nxyz\r\n"),
        "CLIENT_ERROR bad data chunk\r\nERROR\r\n"
    );
    assert_eq!(
        run(&mut s, b"set a -1 0 1\r\nz\r\n"),
        "CLIENT_ERROR bad command line format\r\nERROR\r\n"
    );
    assert_eq!(
        run(&mut s, b"set neg 0 0 -1\r\nget neg\r\n"),
        "CLIENT_ERROR bad command line format\r\nEND\r\n"
    );
    let long = format!("set {} 0 0 1\r\nx\r\n", "a".repeat(251));
    assert_eq!(
        run(&mut s, long.as_bytes()),
        "CLIENT_ERROR bad command line format\r\nERROR\r\n"
    );
    assert_eq!(
        run(&mut s, b"set fl 4294967296 0 1\r\ny\r\nget fl\r\n"),
        "STORED\r\nVALUE fl 0 1\r\ny\r\nEND\r\n"
    );
    assert_eq!(
        run(&mut s, b"set e 0 -1 1\r\nx\r\nget e\r\n"),
        "STORED\r\nEND\r\n"
    );
    assert_eq!(
        run(&mut s, b"set e 0 2147483648 1\r\nx\r\nget e\r\n"),
        "STORED\r\nEND\r\n"
    );
}

#[test]
fn too_large_swallows_across_calls_and_drops_the_old_value() {
    let mut s = session();
    assert_eq!(run(&mut s, b"set a 0 0 4\r\nabcd\r\n"), "STORED\r\n");
    let mut out = Vec::new();
    let p = s.process(b"set a 0 0 2000000\r\nxxxx", &mut out, usize::MAX);
    assert_eq!(out, b"SERVER_ERROR object too large for cache\r\n");
    assert_eq!((p.consumed, p.want_bytes), (23, Some(2_000_002 - 4)));
    let mut rest = vec![b'x'; 2_000_000 - 4];
    rest.extend_from_slice(b"\r\nget a\r\n");
    assert_eq!(run(&mut s, &rest), "END\r\n");
    let stats = &s.stats;
    assert_eq!(
        stats
            .store_too_large
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn largest_item_fits() {
    let mut s = session();
    let mut input = b"set a 0 0 1048516\r\n".to_vec();
    input.extend(std::iter::repeat_n(b'v', 1_048_516));
    input.extend_from_slice(b"\r\n");
    assert_eq!(run(&mut s, &input), "STORED\r\n");
}

#[test]
fn partial_requests_wait_and_report_their_size() {
    let mut s = session();
    let mut out = Vec::new();
    let p = s.process(b"set k 0 0 10\r\nabc", &mut out, usize::MAX);
    assert_eq!((p.consumed, p.want_bytes, out.len()), (0, Some(26), 0));
    let p = s.process(b"get k", &mut out, usize::MAX);
    assert_eq!((p.consumed, p.want_bytes), (0, None));
}

#[test]
fn max_requests_yields() {
    let mut s = session();
    let mut out = Vec::new();
    let p = s.process(b"mn\r\nmn\r\nmn\r\n", &mut out, 2);
    assert_eq!((p.consumed, p.yielded), (8, true));
    let p = s.process(b"mn\r\n", &mut out, 2);
    assert_eq!((p.consumed, p.yielded), (4, false));
    assert_eq!(out, b"MN\r\nMN\r\nMN\r\n");
}

#[test]
fn arith_delete_touch() {
    let mut s = session();
    assert_eq!(run(&mut s, b"incr n 1\r\n"), "NOT_FOUND\r\n");
    assert_eq!(
        run(&mut s, b"set n 0 0 2\r\n10\r\ndecr n 1\r\nget n\r\n"),
        "STORED\r\n9\r\nVALUE n 0 2\r\n9 \r\nEND\r\n"
    );
    assert_eq!(run(&mut s, b"incr n 18446744073709551615\r\n"), "8\r\n");
    assert_eq!(run(&mut s, b"decr n 100\r\n"), "0\r\n");
    assert_eq!(
        run(&mut s, b"set t 0 0 1\r\na\r\nincr t 1\r\n"),
        "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    );
    assert_eq!(
        run(&mut s, b"incr t x\r\n"),
        "CLIENT_ERROR invalid numeric delta argument\r\n"
    );
    assert_eq!(
        run(&mut s, b"touch t 10\r\ntouch nope 10\r\ntouch t x\r\n"),
        "TOUCHED\r\nNOT_FOUND\r\nCLIENT_ERROR invalid exptime argument\r\n"
    );
    assert_eq!(run(&mut s, b"gat 100 t\r\n"), "VALUE t 0 1\r\na\r\nEND\r\n");
    assert_eq!(
        run(&mut s, b"delete t 0\r\ndelete t\r\n"),
        "DELETED\r\nNOT_FOUND\r\n"
    );
    assert_eq!(
        run(&mut s, b"delete a 1\r\n"),
        "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
    );
}

#[test]
fn admin_commands() {
    let mut s = session();
    assert_eq!(run(&mut s, b"version x\r\n"), "VERSION 1.6.18\r\n");
    assert_eq!(
        run(&mut s, b"verbosity\r\nverbosity 1\r\n"),
        "ERROR\r\nOK\r\n"
    );
    assert_eq!(
        run(&mut s, b"set a 0 0 1\r\nx\r\nflush_all\r\nget a\r\n"),
        "STORED\r\nOK\r\nEND\r\n"
    );
    assert_eq!(
        run(&mut s, b"flush_all x\r\n"),
        "CLIENT_ERROR invalid exptime argument\r\n"
    );
    assert_eq!(
        run(&mut s, b"shutdown\r\n"),
        "ERROR: shutdown not enabled\r\n"
    );
    assert_eq!(
        run(
            &mut s,
            b"cache_memlimit 100\r\ncache_memlimit 0\r\ncache_memlimit x\r\n"
        ),
        "OK\r\nMEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\nERROR\r\n"
    );
    assert_eq!(
        run(&mut s, b"slabs reassign 1 2\r\nslabs reassign 1 1\r\nslabs reassign 99 1\r\nslabs reassign x 1\r\n"),
        "NOSPARE source class has no spare pages\r\nSAME src and dst class are identical\r\nBADCLASS invalid src or dst class id\r\nCLIENT_ERROR bad command line format\r\n"
    );
    assert_eq!(
        run(
            &mut s,
            b"slabs automove 2\r\nslabs automove 3\r\nslabs automove ratio 0.5\r\n"
        ),
        "OK\r\nERROR\r\nOK\r\n"
    );
    assert_eq!(
        s.ctx
            .automove_mode
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
    assert_eq!(s.ctx.automove_ratio(), 0.5);
    assert_eq!(
        run(
            &mut s,
            b"lru mode flat\r\nlru_crawler crawl 1\r\nlru_crawler crawl 99\r\n"
        ),
        "OK\r\nOK\r\nBADCLASS invalid class id\r\n"
    );
    assert_eq!(
        run(
            &mut s,
            b"stats x\r\nstats detail on\r\nstats cachedump 1 1\r\nstats reset\r\n"
        ),
        "ERROR\r\nOK\r\nEND\r\nRESET\r\n"
    );
    assert!(run(&mut s, b"stats\r\n").ends_with("END\r\n"));
    assert!(run(&mut s, b"stats settings\r\n").ends_with("END\r\n"));
}

#[test]
fn flush_and_shutdown_switches() {
    let mut s = session_with(Settings {
        flush_enabled: false,
        shutdown_enabled: true,
        ..Settings::default()
    });
    assert_eq!(
        run(&mut s, b"flush_all x\r\n"),
        "CLIENT_ERROR flush_all not allowed\r\n"
    );
    assert_eq!(
        run(&mut s, b"shutdown x\r\n"),
        "CLIENT_ERROR invalid shutdown mode\r\n"
    );
    let mut out = Vec::new();
    let p = s.process(b"shutdown\r\nget a\r\n", &mut out, usize::MAX);
    assert!(p.close && s.ctx.is_shutting_down());
}

#[test]
fn quit_http_binary_and_watch() {
    let mut out = Vec::new();
    let p = session().process(b"quit\r\nget a\r\n", &mut out, usize::MAX);
    assert!(p.close && out.is_empty());
    assert!(
        session()
            .process(b"GET / HTTP/1.1\r\n", &mut out, usize::MAX)
            .close
    );
    // A first byte of 0x80 negotiates the binary protocol (tests/binary.rs); text after it closes.
    let mut stream = binary_packet(0x0a, b"", b"", b"", 0, 1);
    stream.extend_from_slice(b"get k\r\nget k\r\nget k\r\nget k\r\n");
    assert!(session().process(&stream, &mut out, usize::MAX).close);
    assert_eq!(out, binary_reply(0x0a, 0, b"", 1, 0));
    out.clear();
    let mut s = session();
    assert_eq!(
        run(&mut s, b"mn\r\n\x80\r\n"),
        "MN\r\nERROR\r\n",
        "only a first byte negotiates"
    );
    let mut s = session_with(Settings {
        protocol: Protocol::Ascii,
        ..Settings::default()
    });
    assert_eq!(run(&mut s, b"\x80\r\n"), "ERROR\r\n");
    assert!(session().process(&[b'x'; 3000], &mut out, usize::MAX).close);
    let mut s = session();
    assert_eq!(
        run(
            &mut s,
            b"watch deletions\r\nget a\r\nwatch fetchers\r\nset a 0 0 1\r\nx\r\nget a\r\n"
        ),
        "ERROR\r\nEND\r\nERROR cannot pipeline other commands before watch\r\n\
         STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n",
        "an unknown stream is memcached's ERROR; a watch behind pending replies is refused as \
         memcached refuses it; the connection keeps serving commands"
    );
    let mut s = session_with(Settings {
        watch_enabled: false,
        ..Settings::default()
    });
    assert_eq!(
        run(&mut s, b"watch\r\n"),
        "CLIENT_ERROR watch commands not allowed\r\n"
    );
}
