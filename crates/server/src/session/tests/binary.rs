//! Binary sessions: negotiation, and SASL PLAIN making a binary client a tenant exactly as the text
//! protocol's auth does. (Reply bytes for every opcode are the conformance cases'.)

use super::*;

const SET: u8 = 0x01;
const GET: u8 = 0x00;
const NOOP: u8 = 0x0a;
const LIST: u8 = 0x20;
const AUTH: u8 = 0x21;
const STEP: u8 = 0x22;

fn set(key: &[u8], value: &[u8]) -> Vec<u8> {
    binary_packet(SET, key, &[0; 8], value, 0, 0)
}

fn get(key: &[u8]) -> Vec<u8> {
    binary_packet(GET, key, &[], &[], 0, 9)
}

fn auth(user: &str, password: &str) -> Vec<u8> {
    let payload = format!("\0{user}\0{password}");
    binary_packet(AUTH, b"PLAIN", &[], payload.as_bytes(), 0, 3)
}

/// Runs `input`, returns (replies, closed).
fn run_bin(s: &mut Session, input: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let p = s.process(input, &mut out, usize::MAX);
    (out, p.close)
}

/// Status and value of the first reply packet.
fn first(reply: &[u8]) -> (u16, Vec<u8>) {
    let bodylen = u32::from_be_bytes(reply[8..12].try_into().unwrap()) as usize;
    let skip = reply[4] as usize + u16::from_be_bytes([reply[2], reply[3]]) as usize;
    (
        u16::from_be_bytes([reply[6], reply[7]]),
        reply[24 + skip..24 + bodylen].to_vec(),
    )
}

fn sasl_server() -> Arc<ServerContext> {
    let ctx = tenant_server();
    let mut settings = ctx.settings.clone();
    settings.sasl = true;
    settings.protocol = crate::settings::Protocol::Binary;
    let engine = Engine::new(EngineConfig::default()).expect("default engine");
    Arc::new(ServerContext::new(engine, settings, 1))
}

#[test]
fn auto_negotiates_on_the_first_byte() {
    let mut s = session();
    let mut input = set(b"k", b"v");
    input.extend(get(b"k"));
    let (out, closed) = run_bin(&mut s, &input);
    assert!(!closed);
    let (status, _) = first(&out);
    assert_eq!(status, 0);
    // The text protocol sees the same item.
    let mut t = session_with(Settings::default());
    t.ctx = s.ctx.clone();
    assert_eq!(run(&mut t, b"get k\r\n"), "VALUE k 0 1\r\nv\r\nEND\r\n");
}

#[test]
fn sasl_off_answers_unknown_command() {
    let mut s = session();
    let (out, closed) = run_bin(&mut s, &binary_packet(LIST, b"", b"", b"", 0, 1));
    assert!(!closed);
    assert_eq!(out, binary_reply(LIST, 0x81, b"Unknown command", 1, 0));
}

#[test]
fn unauthenticated_binary_clients_may_only_authenticate() {
    let ctx = sasl_server();
    let mut s = session_on(&ctx, 11211);
    let (out, closed) = run_bin(&mut s, &binary_packet(LIST, b"", b"", b"", 0, 1));
    assert_eq!(
        (out, closed),
        (binary_reply(LIST, 0, b"PLAIN", 1, 0), false)
    );
    // Wrong password, an unknown user, another mechanism, a step: Auth failure, still open.
    for bad in [
        auth("a", "pb"),
        auth("nobody", "x"),
        binary_packet(AUTH, b"CRAM-MD5", &[], b"\0a\0pa", 0, 3),
        binary_packet(STEP, b"PLAIN", &[], b"\0a\0pa", 0, 3),
    ] {
        let (out, closed) = run_bin(&mut s, &bad);
        assert!(!closed);
        assert_eq!(first(&out), (0x20, b"Auth failure.".to_vec()));
    }
    // Anything else before authenticating: Auth failure and close.
    let (out, closed) = run_bin(&mut s, &get(b"k"));
    assert!(closed);
    assert_eq!(out, binary_reply(GET, 0x20, b"Auth failure.", 9, 0));
    let errors = s
        .stats
        .auth_errors
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(errors, 4);
}

#[test]
fn sasl_makes_the_client_its_tenant() {
    let ctx = sasl_server();
    let mut a = session_on(&ctx, 11211);
    let (out, _) = run_bin(&mut a, &auth("a", "pa"));
    assert_eq!(out, binary_reply(AUTH, 0, b"Authenticated", 3, 0));
    let (out, _) = run_bin(&mut a, &set(b"k", b"from-a"));
    assert_eq!(first(&out).0, 0);
    // b authenticates as itself and cannot see a's key.
    let mut b = session_on(&ctx, 11211);
    run_bin(&mut b, &auth("b", "pb"));
    let (out, _) = run_bin(&mut b, &get(b"k"));
    assert_eq!(first(&out), (1, b"Not found".to_vec()));
    // A text client authenticated as a (memcached's -Y exchange) is the same tenant.
    // (The server is -B binary; this session is switched to text as -B auto would on a text byte.)
    let mut t = session_on(&ctx, 11211);
    t.mode = Mode::Text;
    assert_eq!(
        run(&mut t, b"set x 0 0 4\r\na pa\r\nget k\r\n"),
        "STORED\r\nVALUE k 0 6\r\nfrom-a\r\nEND\r\n"
    );
}

#[test]
fn a_tenant_port_authenticates_only_its_tenant() {
    let ctx = sasl_server();
    // Port 11300 belongs to tenant p, which has no password: nobody can authenticate there as a.
    let mut s = session_on(&ctx, 11300);
    let (out, _) = run_bin(&mut s, &auth("a", "pa"));
    assert_eq!(first(&out).0, 0x20);
}

#[test]
fn binary_only_closes_text_clients_and_noop_flushes() {
    let mut settings = Settings::default();
    settings.protocol = crate::settings::Protocol::Binary;
    let mut s = session_with(settings);
    let (_, closed) = run_bin(&mut s, b"get k\r\nget k\r\nget k\r\nget k\r\n");
    assert!(closed);
    // Quiet sets are silent; the noop that follows answers.
    let mut s = session();
    let mut input = binary_packet(0x11, b"q", &[0; 8], b"v", 0, 1);
    input.extend(binary_packet(NOOP, b"", b"", b"", 0, 2));
    let (out, _) = run_bin(&mut s, &input);
    assert_eq!(out, binary_reply(NOOP, 0, b"", 2, 0));
}

#[test]
fn binary_requests_feed_stats_detail_as_memcached_s_do() {
    // What memcached 1.6.18 counts for these binary requests: every get, gat and touch as a get (hit
    // when found), every store, every delete.
    let engine = Engine::new(EngineConfig::default()).expect("default engine");
    let ctx = Arc::new(ServerContext::new(engine, Settings::default(), 1));
    let mut text = session_on(&ctx, 11211);
    assert_eq!(run(&mut text, b"stats detail on\r\n"), "OK\r\n");
    let mut bin = session_on(&ctx, 11211);
    let mut input = set(b"p:a", b"hello");
    input.extend(get(b"p:a"));
    input.extend(get(b"p:miss"));
    input.extend(binary_packet(0x04, b"p:a", &[], &[], 0, 0));
    input.extend(binary_packet(
        0x1c,
        b"p:b",
        &100u32.to_be_bytes(),
        &[],
        0,
        0,
    ));
    input.extend(binary_packet(
        0x1d,
        b"p:b",
        &100u32.to_be_bytes(),
        &[],
        0,
        0,
    ));
    input.extend(binary_packet(0x02, b"q:a", &[0; 8], b"hello", 0, 0));
    input.extend(binary_packet(0x0e, b"q:a", &[], b"xx", 0, 0));
    input.extend(binary_packet(
        0x1c,
        b"q:a",
        &100u32.to_be_bytes(),
        &[],
        0,
        0,
    ));
    input.extend(binary_packet(
        0x1d,
        b"q:a",
        &100u32.to_be_bytes(),
        &[],
        0,
        0,
    ));
    run_bin(&mut bin, &input);
    assert_eq!(
        run(&mut text, b"stats detail dump\r\n"),
        "PREFIX p get 4 hit 1 set 1 del 1\r\nPREFIX q get 2 hit 2 set 2 del 0\r\nEND\r\n"
    );
}
