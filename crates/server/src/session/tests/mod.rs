//! Session tests: whole request streams in, exact replies out, as memcached 1.6.18 answers them.

use super::*;
use crate::settings::Settings;
use mrcache_engine::{Engine, EngineConfig};

mod auth;
mod binary;
mod bounds;
mod dump;
mod meta;
mod text;

/// The descriptor number test sessions log under.
const TEST_FD: i32 = 7;

/// The registry entry of a test connection to `port` on 127.0.0.1 (its descriptor is no socket).
fn test_conn(port: u16) -> Arc<ConnInfo> {
    let local = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    Arc::new(ConnInfo::new(
        TEST_FD,
        "127.0.0.1:40000".parse::<std::net::SocketAddr>().unwrap(),
        local,
        0,
    ))
}

fn session_with(settings: Settings) -> Session {
    let engine = Engine::new(EngineConfig::default()).expect("default engine");
    let ctx = Arc::new(ServerContext::new(engine, settings, 1));
    let stats = ctx.thread_stats[0].clone();
    Session::new(ctx, stats, &test_conn(11211))
}

fn session() -> Session {
    session_with(Settings::default())
}

/// Two sessions on one server whose tenants are `a` (password `pa`), `b` (password `pb`) and a
/// prefix tenant `p` (`p:`), on the main port.
fn tenant_server() -> Arc<ServerContext> {
    let config = crate::tenants::config::parse_config(
        "[[tenant]]\nname = \"a\"\npassword = \"pa\"\n[[tenant]]\nname = \"b\"\npassword = \"pb\"\n[[tenant]]\nname = \"p\"\nprefix = \"p:\"\nport = 11300\n",
    )
    .unwrap();
    let settings = Settings {
        tenants: crate::tenants::TenantsConfig::merge(config, Vec::new()).unwrap(),
        ..Settings::default()
    };
    let engine = Engine::new(EngineConfig::default()).expect("default engine");
    Arc::new(ServerContext::new(engine, settings, 1))
}

fn session_on(ctx: &Arc<ServerContext>, port: u16) -> Session {
    let stats = ctx.thread_stats[0].clone();
    Session::new(ctx.clone(), stats, &test_conn(port))
}

/// Another session on the same server as `s`.
fn session_sharing(s: &Session) -> Session {
    session_on(&s.ctx, 11211)
}

/// Runs `input` to completion and returns the replies.
fn run(s: &mut Session, input: &[u8]) -> String {
    let mut out = Vec::new();
    let p = s.process(input, &mut out, usize::MAX);
    assert_eq!(
        p.consumed,
        input.len(),
        "all of {:?} consumed",
        String::from_utf8_lossy(input)
    );
    String::from_utf8_lossy(&out).into_owned()
}

/// The number after `prefix` in `reply` (for CAS values, which servers number differently).
fn number_after(reply: &str, prefix: &str) -> u64 {
    let start = reply.find(prefix).expect(prefix) + prefix.len();
    reply[start..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// A binary request packet.
fn binary_packet(
    op: u8,
    key: &[u8],
    extras: &[u8],
    value: &[u8],
    cas: u64,
    opaque: u32,
) -> Vec<u8> {
    let mut p = vec![0x80, op];
    p.extend_from_slice(&(key.len() as u16).to_be_bytes());
    p.push(extras.len() as u8);
    p.extend_from_slice(&[0, 0, 0]);
    p.extend_from_slice(&((key.len() + extras.len() + value.len()) as u32).to_be_bytes());
    p.extend_from_slice(&opaque.to_be_bytes());
    p.extend_from_slice(&cas.to_be_bytes());
    p.extend_from_slice(extras);
    p.extend_from_slice(key);
    p.extend_from_slice(value);
    p
}

/// A binary reply packet with no extras or key.
fn binary_reply(op: u8, status: u16, value: &[u8], opaque: u32, cas: u64) -> Vec<u8> {
    let mut p = vec![0x81, op, 0, 0, 0, 0];
    p.extend_from_slice(&status.to_be_bytes());
    p.extend_from_slice(&(value.len() as u32).to_be_bytes());
    p.extend_from_slice(&opaque.to_be_bytes());
    p.extend_from_slice(&cas.to_be_bytes());
    p.extend_from_slice(value);
    p
}
