//! `-U`: memcached's UDP protocol, judged against memcached 1.6.18 itself. The same datagrams go to both
//! servers and the reply datagrams (8-byte frame headers included) must be the same bytes: single- and
//! multi-datagram replies, multi-key gets (one response object per hit), meta commands, stores, errors,
//! `quit`'s bare header, and requests memcached drops. Then a large value over UDP (hundreds of
//! datagrams, each at most 1400 bytes, reassembled by sequence number), the binary protocol in a
//! datagram, `stats conns`, and the start-up refusals.
//!
//! Not compared: a request the datagram cuts short. memcached keeps that connection state for the
//! next datagram its worker reads, whoever sends it (the next datagram becomes the value's data);
//! mrcached drops the unfinished request with its datagram, and the next one is served afresh
//! (`a_request_cut_short_is_dropped_with_its_datagram`).
//!
//! Both servers run with `-U -1` (an ephemeral port) and the test learns the port from `stats conns`
//! over TCP, where both list their UDP sockets. A reply is complete when the reply to a marker datagram
//! sent right after it (`mn`, under another request id) arrives: each server serves a socket's
//! datagrams in order, and loopback keeps their order, so no timing is assumed.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use common::{stat_value, LineClient, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);
/// The request id of the marker datagram that closes each exchange.
const MARKER_ID: u16 = 0xfffe;
const HEADER: usize = 8;
const MAX_DATAGRAM: usize = 1400;

/// The server's UDP address, from `stats conns` (`N:addr udp:127.0.0.1:PORT`).
fn udp_addr(server: &Server) -> SocketAddr {
    let mut c = LineClient::connect(server.port());
    let conns = c.call("stats conns\r\n");
    conns
        .lines()
        .find_map(|l| l.split_once(":addr udp:").map(|(_, a)| a.trim()))
        .unwrap_or_else(|| panic!("{} lists no UDP socket: {conns}", server.kind().name()))
        .parse()
        .unwrap()
}

/// A client socket with a receive buffer as large as the kernel allows (a large reply arrives at once).
fn client() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    let _ = socket2::SockRef::from(&s).set_recv_buffer_size(8 << 20);
    s
}

fn frame(id: u16, payload: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(HEADER + payload.len());
    d.extend_from_slice(&id.to_be_bytes());
    d.extend_from_slice(&[0, 0, 0, 1, 0, 0]);
    d.extend_from_slice(payload);
    d
}

/// Sends `datagram`, then the marker, and returns every datagram received before the marker's reply.
fn exchange(sock: &UdpSocket, to: SocketAddr, datagram: &[u8]) -> Vec<Vec<u8>> {
    sock.send_to(datagram, to).unwrap();
    sock.send_to(&frame(MARKER_ID, b"mn\r\n"), to).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let (n, from) = sock
            .recv_from(&mut buf)
            .unwrap_or_else(|e| panic!("no reply from {to} ({e}); got {} datagrams", got.len()));
        assert_eq!(from, to);
        if buf[..2] == MARKER_ID.to_be_bytes() {
            assert_eq!(&buf[HEADER..n], b"MN\r\n");
            return got;
        }
        got.push(buf[..n].to_vec());
    }
}

fn header(d: &[u8]) -> (u16, u16, u16, u16) {
    let f = |i: usize| u16::from_be_bytes([d[i], d[i + 1]]);
    (f(0), f(2), f(4), f(6))
}

/// Stores `value` under `key` over TCP.
fn store(server: &Server, key: &str, value: &[u8]) {
    let mut c = LineClient::connect(server.port());
    let mut req = format!("set {key} 0 0 {}\r\n", value.len()).into_bytes();
    req.extend_from_slice(value);
    req.extend_from_slice(b"\r\n");
    c.send(&req);
    assert_eq!(c.line(), "STORED");
}

/// The cases compared with memcached, in order (later ones see earlier ones' stores).
fn cases() -> Vec<(&'static str, Vec<u8>)> {
    let mut cases: Vec<(&str, Vec<u8>)> = [
        ("one datagram", &b"get k5\r\n"[..]),
        ("two datagrams", b"get k1380\r\n"),
        ("three datagrams", b"get k3000\r\n"),
        ("forty-four datagrams", b"get k60000\r\n"),
        ("an object per hit", b"get k5 k3000 k1380\r\n"),
        ("a miss between hits", b"get k5 missing k5\r\n"),
        ("the last key missed", b"get k1380 k5 missing\r\n"),
        ("a miss", b"get missing\r\n"),
        ("gat", b"gat 0 k5 k1380\r\n"),
        ("meta", b"mg k5 v f\r\nmg missing v q\r\nmn\r\n"),
        ("store then get", b"set u1 0 0 3\r\nabc\r\nget u1\r\n"),
        ("noreply", b"set u2 0 0 1 noreply\r\nx\r\n"),
        (
            "arithmetic",
            b"set n 0 0 1\r\n5\r\nincr n 10\r\ndecr n 3\r\n",
        ),
        ("delete", b"delete u1\r\ndelete u1\r\n"),
        ("errors", b"bogus\r\n\r\nget\r\n"),
        ("quit", b"get k5\r\nquit\r\nget k5\r\n"),
    ]
    .into_iter()
    .map(|(name, payload)| (name, frame(0x0102, payload)))
    .collect();
    // Dropped without a reply: a bare header, and a request that says it spans two datagrams.
    cases.push(("a bare header", frame(7, b"")));
    let mut two = frame(8, b"get k5\r\n");
    two[5] = 2;
    cases.push(("a multi-datagram request", two));
    // Sequence number and reserved field are not checked.
    let mut odd = frame(9, b"get k5\r\n");
    odd[3] = 4;
    odd[7] = 1;
    cases.push(("odd header fields", odd));
    cases
}

#[test]
#[ignore = "needs memcached"]
fn replies_are_memcacheds_datagram_for_datagram() {
    // One worker: memcached serves UDP on every worker thread, which would race the marker.
    let servers = [
        Server::start(&ServerKind::mrcached(), &["-U", "-1", "-t", "1"]),
        Server::start(&ServerKind::memcached(), &["-U", "-1", "-t", "1"]),
    ];
    let mut replies: Vec<Vec<Vec<Vec<u8>>>> = Vec::new();
    for server in &servers {
        for (key, len) in [
            ("k5", 5),
            ("k1380", 1380),
            ("k3000", 3000),
            ("k60000", 60000),
        ] {
            let value: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            store(server, key, &value);
        }
        let to = udp_addr(server);
        let sock = client();
        replies.push(
            cases()
                .iter()
                .map(|(_, d)| exchange(&sock, to, d))
                .collect(),
        );
    }
    for (i, (name, _)) in cases().iter().enumerate() {
        let (ours, theirs) = (&replies[0][i], &replies[1][i]);
        let show = |r: &Vec<Vec<u8>>| -> Vec<String> {
            r.iter()
                .map(|d| {
                    format!(
                        "{:?} {:?}",
                        header(d),
                        String::from_utf8_lossy(&d[HEADER..d.len().min(HEADER + 40)])
                    )
                })
                .collect()
        };
        assert_eq!(
            ours,
            theirs,
            "{name}: mrcached sent {:?}, memcached {:?}",
            show(ours),
            show(theirs)
        );
    }
    // Spot checks of what was compared: the framing itself.
    let three = &replies[0][2];
    assert_eq!(three.len(), 3);
    for (seq, d) in three.iter().enumerate() {
        assert_eq!(header(d), (0x0102, seq as u16, 3, 0));
        assert!(d.len() <= MAX_DATAGRAM);
    }
    assert_eq!(
        replies[0][15].last().map(|d| header(d)),
        Some((0x0102, 0, 0, 0)),
        "quit: a bare header"
    );
}

#[test]
fn a_large_value_arrives_in_numbered_datagrams_of_at_most_1400_bytes() {
    let server = Server::start(&ServerKind::mrcached(), &["-U", "-1"]);
    let to = udp_addr(&server);
    let sock = client();
    // As large as the client's receive buffer surely holds at once (the kernel may cap it), up to the
    // largest item: loopback drops what does not fit, it does not wait.
    let rcvbuf = socket2::SockRef::from(&sock).recv_buffer_size().unwrap();
    let len = (rcvbuf / 3).clamp(100_000, 1_000_000);
    let value: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    store(&server, "large", &value);
    let got = exchange(&sock, to, &frame(77, b"get large\r\n"));
    let total = got.len();
    assert_eq!(
        total,
        (len + 40).div_ceil(MAX_DATAGRAM - HEADER),
        "datagrams"
    );
    let mut payload = Vec::new();
    for (seq, d) in got.iter().enumerate() {
        assert_eq!(header(d), (77, seq as u16, total as u16, 0));
        assert!(d.len() <= MAX_DATAGRAM, "datagram {seq}: {} bytes", d.len());
        if seq + 1 < total {
            assert_eq!(d.len(), MAX_DATAGRAM, "only the last datagram is short");
        }
        payload.extend_from_slice(&d[HEADER..]);
    }
    let mut expected = format!("VALUE large 0 {len}\r\n").into_bytes();
    expected.extend_from_slice(&value);
    expected.extend_from_slice(b"\r\nEND\r\n");
    assert_eq!(payload.len(), expected.len());
    assert!(payload == expected, "the value reassembles");

    // A store over UDP, read back over TCP; the binary protocol in a datagram.
    assert_eq!(
        exchange(&sock, to, &frame(3, b"set viaudp 9 0 2\r\nhi\r\n")),
        vec![frame(3, b"STORED\r\n")]
    );
    let mut c = LineClient::connect(server.port());
    assert_eq!(c.call("get viaudp\r\n"), "VALUE viaudp 9 2\nhi\nEND");
    let mut get = vec![0x80, 0x00, 0, 6, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0x12, 0x34];
    get.extend_from_slice(&[0; 8]);
    get.extend_from_slice(b"viaudp");
    let reply = exchange(&sock, to, &frame(4, &get));
    assert_eq!(reply.len(), 1);
    let r = &reply[0][HEADER..];
    assert_eq!(
        (r[0], r[6], r[7]),
        (0x81, 0, 0),
        "binary get: magic, status"
    );
    assert_eq!(&r[12..16], &[0, 0, 0x12, 0x34], "opaque");
    assert_eq!(&r[r.len() - 2..], b"hi");

    // `stats conns` lists the socket as memcached does; its traffic is counted.
    let conns = c.call("stats conns\r\n");
    assert!(conns.contains(":UDP UDP"), "{conns}");
    assert!(conns.contains(&format!(":addr udp:{to}")), "{conns}");
    assert!(conns.contains(":state conn_read"), "{conns}");
    let stats = c.call("stats\r\n");
    let written: u64 = stat_value(&stats, "bytes_written")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        written as usize > len,
        "UDP bytes written counted: {written}"
    );
    let settings = c.call("stats settings\r\n");
    assert_eq!(stat_value(&settings, "udpport").as_deref(), Some("-1"));
}

#[test]
fn a_request_cut_short_is_dropped_with_its_datagram() {
    let server = Server::start(&ServerKind::mrcached(), &["-U", "-1"]);
    let to = udp_addr(&server);
    let sock = client();
    assert!(exchange(&sock, to, &frame(1, b"set cut 0 0 10\r\nabc")).is_empty());
    assert!(exchange(&sock, to, &frame(2, b"get cut")).is_empty());
    assert_eq!(
        exchange(&sock, to, &frame(3, b"get cut\r\n")),
        vec![frame(3, b"END\r\n")]
    );
}

#[test]
fn sigterm_stops_a_server_serving_udp() {
    let mut server = Server::start(&ServerKind::mrcached(), &["-U", "-1"]);
    let to = udp_addr(&server);
    let sock = client();
    assert_eq!(
        exchange(&sock, to, &frame(1, b"get none\r\n")),
        vec![frame(1, b"END\r\n")]
    );
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGTERM) }, 0);
    let deadline = std::time::Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = server.exit_status() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "still running {TIMEOUT:?} after SIGTERM: {}",
            server.stderr_tail()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0), "{}", server.stderr_tail());
}

#[test]
fn udp_is_refused_with_authentication() {
    let dir = std::env::temp_dir().join(format!("mrcached-udp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let auth = dir.join("auth");
    std::fs::write(&auth, "user:password\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mrcached"))
        .args(["-U", "11211", "-Y"])
        .arg(&auth)
        .args(common::user_args())
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(64));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("-U") && err.contains("authentication"),
        "{err}"
    );
}
