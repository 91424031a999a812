//! SASL over the binary protocol against the real `mrcached` binary: `-S` with `-Y` users, a binary
//! client that logs in with PLAIN becomes that tenant (its keys are not another's), an unauthenticated
//! one gets `Auth failure.` and is closed, and `-S -B auto` still admits text clients through the
//! text protocol's auth as the same tenants. (pylibmc's SASL login is in tests/python.)

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use common::{Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(5);

fn users_file() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mrcached-sasl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("users");
    std::fs::write(&path, "alice:alice-pw\nbob:bob-pw\n").unwrap();
    path
}

fn packet(op: u8, key: &[u8], extras: &[u8], value: &[u8]) -> Vec<u8> {
    let mut p = vec![0x80, op];
    p.extend_from_slice(&(key.len() as u16).to_be_bytes());
    p.push(extras.len() as u8);
    p.extend_from_slice(&[0, 0, 0]);
    p.extend_from_slice(&((key.len() + extras.len() + value.len()) as u32).to_be_bytes());
    p.extend_from_slice(&[0; 12]);
    p.extend_from_slice(extras);
    p.extend_from_slice(key);
    p.extend_from_slice(value);
    p
}

/// Sends one packet and reads one reply: (status, value).
fn call(s: &mut TcpStream, request: &[u8]) -> (u16, Vec<u8>) {
    s.write_all(request).unwrap();
    let mut header = [0u8; 24];
    s.read_exact(&mut header).unwrap();
    let body = u32::from_be_bytes(header[8..12].try_into().unwrap()) as usize;
    let mut bytes = vec![0; body];
    s.read_exact(&mut bytes).unwrap();
    let skip = header[4] as usize + u16::from_be_bytes([header[2], header[3]]) as usize;
    (
        u16::from_be_bytes([header[6], header[7]]),
        bytes[skip..].to_vec(),
    )
}

fn login(server: &Server, user: &str, password: &str) -> (TcpStream, u16) {
    let mut s = server.connect(TIMEOUT).unwrap();
    let payload = format!("\0{user}\0{password}");
    let (status, _) = call(&mut s, &packet(0x21, b"PLAIN", &[], payload.as_bytes()));
    (s, status)
}

#[test]
fn sasl_logins_are_tenants() {
    let users = users_file();
    let server = Server::start(
        &ServerKind::mrcached(),
        &["-S", "-B", "auto", "-Y", users.to_str().unwrap()],
    );
    let mut probe = server.connect(TIMEOUT).unwrap();
    assert_eq!(
        call(&mut probe, &packet(0x20, b"", &[], b"")),
        (0, b"PLAIN".to_vec())
    );
    // Not logged in: Auth failure, then the server closes the connection.
    let (status, message) = call(&mut probe, &packet(0x00, b"k", &[], b""));
    assert_eq!((status, message.as_slice()), (0x20, &b"Auth failure."[..]));
    let mut rest = Vec::new();
    assert_eq!(probe.read_to_end(&mut rest).unwrap(), 0, "closed");

    let (_, status) = login(&server, "alice", "wrong");
    assert_eq!(status, 0x20);
    let (mut alice, status) = login(&server, "alice", "alice-pw");
    assert_eq!(status, 0);
    let (mut bob, status) = login(&server, "bob", "bob-pw");
    assert_eq!(status, 0);
    assert_eq!(call(&mut alice, &packet(0x01, b"k", &[0; 8], b"A")).0, 0);
    assert_eq!(
        call(&mut bob, &packet(0x00, b"k", &[], b"")).0,
        1,
        "bob cannot see alice's key"
    );
    assert_eq!(
        call(&mut alice, &packet(0x00, b"k", &[], b"")),
        (0, b"A".to_vec())
    );

    // A text client authenticated as alice (-S -B auto) is the same tenant.
    let mut text = server.connect(TIMEOUT).unwrap();
    text.write_all(b"set x 0 0 14\r\nalice alice-pw\r\nget k\r\n")
        .unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 256];
    while !reply.ends_with(b"END\r\n") {
        let n = text.read(&mut buf).unwrap();
        assert!(n > 0, "closed early: {:?}", String::from_utf8_lossy(&reply));
        reply.extend_from_slice(&buf[..n]);
    }
    assert_eq!(reply, b"STORED\r\nVALUE k 0 1\r\nA\r\nEND\r\n");
}
