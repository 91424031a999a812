//! The auth exchange and tenant isolation, one session at a time.

use super::*;

#[test]
fn unauthenticated_connections_get_memcached_s_auth_replies() {
    let ctx = tenant_server();
    let mut s = session_on(&ctx, 11211);
    assert_eq!(
        run(&mut s, b"get a\r\nmg a v\r\nset a 0 0 1 noreply\r\nx\r\n"),
        "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR unauthenticated\r\nCLIENT_ERROR bad authentication token format\r\n"
    );
    assert_eq!(
        run(&mut s, b"set a 0 0 4\r\na pb\r\nset a 0 0 3\r\nabcde\r\n"),
        "CLIENT_ERROR authentication failure\r\nCLIENT_ERROR bad command line termination\r\nCLIENT_ERROR unauthenticated\r\n"
    );
    assert_eq!(
        run(
            &mut s,
            b"set k 1 2 4 noreply\r\na pa\r\nset k 0 0 1\r\nx\r\nget k\r\n"
        ),
        "STORED\r\nSTORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n"
    );
    let stats = &s.stats;
    assert_eq!(
        stats.auth_cmds.load(std::sync::atomic::Ordering::Relaxed),
        2
    );
    assert_eq!(
        stats.auth_errors.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn tenants_cannot_reach_each_other() {
    let ctx = tenant_server();
    let mut a = session_on(&ctx, 11211);
    let mut b = session_on(&ctx, 11211);
    run(&mut a, b"set x 0 0 4\r\na pa\r\n");
    run(&mut b, b"set x 0 0 4\r\nb pb\r\n");
    assert_eq!(run(&mut a, b"set k 0 0 2\r\n10\r\n"), "STORED\r\n");
    assert_eq!(
        run(&mut b, b"get k\r\nincr k 1\r\ntouch k 0\r\ndelete k\r\nappend k 0 0 1\r\nx\r\nmg k v\r\nmd k\r\nma k\r\n"),
        "END\r\nNOT_FOUND\r\nNOT_FOUND\r\nNOT_FOUND\r\nNOT_STORED\r\nEN\r\nNF\r\nNF\r\n"
    );
    assert_eq!(
        run(&mut b, b"set k 0 0 1\r\nb\r\nflush_all\r\n"),
        "STORED\r\nOK\r\n"
    );
    assert_eq!(run(&mut a, b"get k\r\n"), "VALUE k 0 2\r\n10\r\nEND\r\n");
    // The prefix tenant's port is that tenant; its flush_all flushes only it.
    let mut p = session_on(&ctx, 11300);
    assert_eq!(
        run(&mut p, b"set k 0 0 1\r\np\r\nget k\r\n"),
        "STORED\r\nVALUE k 0 1\r\np\r\nEND\r\n"
    );
    assert_eq!(run(&mut a, b"get k\r\n"), "VALUE k 0 2\r\n10\r\nEND\r\n");
    let only_a = String::from_utf8({
        let mut out = Vec::new();
        a.process(b"stats tenants\r\n", &mut out, usize::MAX);
        out
    })
    .unwrap();
    assert!(
        only_a.contains("STAT tenant:a:items 1\r\n") && !only_a.contains("tenant:b:"),
        "{only_a}"
    );
}
