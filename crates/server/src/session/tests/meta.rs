//! The meta protocol through a session.

use super::*;

#[test]
fn meta_get_flags() {
    let mut s = session();
    assert_eq!(
        run(&mut s, b"mg foo\r\nmg foo q\r\nmg foo k O1\r\n"),
        "EN\r\nEN kfoo O1\r\n"
    );
    assert_eq!(
        run(&mut s, b"set foo 0 0 2\r\nhi\r\nmg foo\r\nmg foo q v\r\n"),
        "STORED\r\nHD\r\nVA 2\r\nhi\r\n"
    );
    let r = run(&mut s, b"mg foo s t c f l h k O1 P L u\r\n");
    let cas = number_after(&r, " c");
    assert_eq!(r, format!("HD s2 t-1 c{cas} f0 l0 h1 kfoo O1\r\n"));
    assert_eq!(
        run(&mut s, b"mg foo x\r\nmg foo v v\r\n"),
        "CLIENT_ERROR invalid flag\r\nCLIENT_ERROR duplicate flag\r\n"
    );
}

#[test]
fn meta_vivify_and_recache() {
    let mut s = session();
    let r = run(&mut s, b"mg v1 N30 t v c\r\n");
    let cas = number_after(&r, " c");
    assert_eq!(r, format!("VA 0 t30 c{cas} W\r\n\r\n"));
    assert_eq!(run(&mut s, b"mg v1 c\r\n"), format!("HD c{cas} Z\r\n"));
    let r = run(&mut s, b"set r1 0 10 1\r\nx\r\nmg r1 R30 c\r\n");
    let cas = number_after(&r, " c");
    assert_eq!(r, format!("STORED\r\nHD c{cas} W\r\n"));
    assert_eq!(
        run(&mut s, b"mg r1 R30\r\nmg r1 R5\r\n"),
        "HD Z\r\nHD Z\r\n"
    );
}

#[test]
fn meta_invalidate_and_stale() {
    let mut s = session();
    assert_eq!(
        run(&mut s, b"set s1 0 0 1\r\nx\r\nmd s1 I T30\r\n"),
        "STORED\r\nHD\r\n"
    );
    let r = run(&mut s, b"mg s1 t c v\r\n");
    let cas = number_after(&r, " c");
    assert_eq!(r, format!("VA 1 t30 c{cas} X W\r\nx\r\n"));
    assert_eq!(run(&mut s, b"mg s1\r\n"), "HD Z X\r\n");
    assert_eq!(run(&mut s, b"ms s1 1 C1 I\r\ny\r\n"), "HD\r\n");
    assert_eq!(run(&mut s, b"mg s1 v\r\n"), "VA 1 Z X\r\ny\r\n");
    assert_eq!(
        run(&mut s, b"md s1 q\r\nmd s1 q\r\nmd s1 O5 k\r\n"),
        "NF\r\nNF O5 ks1\r\n"
    );
}

#[test]
fn meta_set_modes_and_errors() {
    let mut s = session();
    assert_eq!(
        run(&mut s, b"ms k1 2\r\nhi\r\nms k1 2 q\r\nhi\r\nmn\r\n"),
        "HD\r\nMN\r\n"
    );
    assert_eq!(
        run(&mut s, b"ms k2 2 MX\r\nhi\r\nms k2 2 ME\r\nhi\r\nms k2 2 ME\r\nhi\r\nms k3 2 MR\r\nhi\r\nms k3 2 MA\r\nhi\r\nms k2 2 MA q\r\nzz\r\nmg k2 v\r\n"),
        "CLIENT_ERROR invalid mode for ms M token\r\nHD\r\nNS\r\nNS\r\nNS\r\nVA 4\r\nhizz\r\n"
    );
    assert_eq!(
        run(&mut s, b"ms k4 2 C999\r\nhi\r\nms k2 2 C999 q\r\nhi\r\n"),
        "NF\r\nEX\r\n"
    );
    assert_eq!(
        run(&mut s, b"ms k2 xx\r\nhi\r\n"),
        "CLIENT_ERROR bad command line format\r\nERROR\r\n"
    );
    assert_eq!(
        run(&mut s, b"ms k2 2 x\r\nhi\r\n"),
        "CLIENT_ERROR invalid flag\r\n"
    );
    assert_eq!(
        run(&mut s, b"ms k2 2 q\r\nhix\r\n"),
        "CLIENT_ERROR bad data chunk\r\nERROR\r\n"
    );
    let r = run(&mut s, b"ms azE= 2 b k c O3\r\nhi\r\n");
    let cas = number_after(&r, " c");
    assert_eq!(r, format!("HD kazE= b c{cas} O3\r\n"));
    assert_eq!(
        run(&mut s, b"mg azE= b k v\r\nget k1\r\n"),
        // The item remembers its key came in base64, so mg echoes it that way (as memcached 1.6.18).
        "VA 2 kazE= b\r\nhi\r\nVALUE k1 0 2\r\nhi\r\nEND\r\n"
    );
    assert_eq!(
        run(
            &mut s,
            b"ms AAEC 1 b\r\nx\r\nmg AAEC b k\r\nmg AAEd b k\r\n"
        ),
        "HD\r\nHD kAAEC b\r\nEN kAAEd b\r\n"
    );
    let mut big = b"ms k1 2000000 T0\r\n".to_vec();
    big.extend(std::iter::repeat_n(b'x', 2_000_000));
    big.extend_from_slice(b"\r\nmg k1 v\r\n");
    assert_eq!(
        run(&mut s, &big),
        "SERVER_ERROR object too large for cache\r\nEN\r\n"
    );
}

#[test]
fn meta_arith() {
    let mut s = session();
    let r = run(&mut s, b"ma n1 N0 J10 v t c\r\n");
    let cas = number_after(&r, " c");
    assert_eq!(r, format!("VA 2 t-1 c{cas}\r\n10\r\n"));
    assert_eq!(
        run(&mut s, b"ma n1 v\r\nma n1 MD D5 v\r\nma n1 M- D100 v\r\n"),
        "VA 2\r\n11\r\nVA 1\r\n6\r\nVA 1\r\n0\r\n"
    );
    assert_eq!(
        run(&mut s, b"ma n1 q\r\nma n1 C1\r\nma n1 C1 q\r\n"),
        "EX\r\nEX\r\n"
    );
    assert_eq!(
        run(&mut s, b"ma m1 O9 k q\r\nma m1\r\n"),
        "NF O9 km1\r\nNF\r\n"
    );
    assert_eq!(
        run(&mut s, b"ma n2 N0 q v\r\nma n2 q v\r\n"),
        "VA 1\r\n0\r\n",
        "a created item answers even with q"
    );
    assert_eq!(
        run(&mut s, b"ma n1 MX\r\nma n1 Dx\r\n"),
        "CLIENT_ERROR invalid mode for ma M token\r\nCLIENT_ERROR invalid or duplicate flag\r\n"
    );
    assert_eq!(
        run(&mut s, b"set nn 0 0 2\r\nab\r\nma nn q\r\n"),
        "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    );
    assert_eq!(
        run(&mut s, b"set t1 0 100 3\r\n123\r\nma t1 T50 t\r\n"),
        "STORED\r\nHD t50\r\n"
    );
}

#[test]
fn meta_debug_and_noop() {
    let mut s = session();
    let r = run(&mut s, b"set dbg 0 0 1\r\nx\r\nme dbg\r\n");
    let cas = number_after(&r, "cas=");
    assert_eq!(
        r,
        format!("STORED\r\nME dbg exp=-1 la=0 cas={cas} fetch=no cls=1 size=63\r\n")
    );
    assert_eq!(
        run(&mut s, b"me miss\r\nme\r\nmn extra\r\n"),
        "EN\r\nCLIENT_ERROR bad command line format\r\nMN\r\n"
    );
    assert!(s.stats.cmd_meta.load(std::sync::atomic::Ordering::Relaxed) >= 3);
}
