//! Binary-protocol conformance of `mrcached` with memcached 1.6.18.
//!
//! The case files in `tests/conformance/binary/*.txt` script request packets and the exact reply
//! packets memcached 1.6.18 gives (format: `conformance/binary_script.rs`). As with the text cases
//! (`conformance.rs`), the same stream is replayed against Debian's `memcached`, which proves every
//! recorded expectation is what memcached answers, and against `mrcached`, which must answer the same
//! packets. The only fields allowed to differ are the documented holes: CAS values (`cas=*`,
//! `cas=?var`), the version string and stat values.
//!
//! Collection never hangs: after each case a `noop` with opaque 0xfeedface is sent and replies are
//! read up to its answer (or to EOF for `@close` cases), each read bounded by a timeout and each case
//! by a deadline. `MRCACHE_BINARY_RECORD=1` prints every reply in case-file syntax (to record new
//! cases against memcached).

#[path = "conformance/binary_script.rs"]
mod binary_script;
#[path = "conformance/case_file.rs"]
mod case_file;
mod common;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use binary_script::{Case, Reply, Section};
use common::{Server, ServerKind};

const SENTINEL_OPAQUE: u32 = 0xfeed_face;
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const CASE_DEADLINE: Duration = Duration::from_secs(20);
const MAX_REPLY_BYTES: usize = 4 << 20;

fn sentinel() -> Vec<u8> {
    let mut p = vec![0x80, 0x0a, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    p.extend_from_slice(&SENTINEL_OPAQUE.to_be_bytes());
    p.extend_from_slice(&[0; 8]);
    p
}

fn case_files() -> Vec<PathBuf> {
    common::txt_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance/binary"))
}

fn all_sections() -> Vec<Section> {
    case_files()
        .iter()
        .flat_map(|file| binary_script::parse_file(file).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Reads until the sentinel's reply is the last whole packet (or EOF when `until_eof`).
fn collect(stream: &mut TcpStream, until_eof: bool) -> Result<(Vec<Reply>, bool), String> {
    let deadline = Instant::now() + CASE_DEADLINE;
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let (replies, rest) = binary_script::split_replies(&bytes);
        if !until_eof
            && rest.is_empty()
            && replies
                .last()
                .is_some_and(|r| r.opcode == 0x0a && r.opaque == SENTINEL_OPAQUE)
        {
            let mut replies = replies;
            replies.pop();
            return Ok((replies, false));
        }
        if Instant::now() >= deadline {
            return Err(format!("case deadline passed; got {} bytes", bytes.len()));
        }
        if bytes.len() > MAX_REPLY_BYTES {
            return Err("reply too long".into());
        }
        match stream.read(&mut buf) {
            Ok(0) => {
                let (replies, rest) = binary_script::split_replies(&bytes);
                if !rest.is_empty() {
                    return Err(format!("{} trailing bytes before EOF", rest.len()));
                }
                return Ok((replies, true));
            }
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if until_eof && e.kind() == ErrorKind::ConnectionReset => {
                let (replies, _) = binary_script::split_replies(&bytes);
                return Ok((replies, true));
            }
            Err(e) => return Err(format!("read failed after {} bytes: {e}", bytes.len())),
        }
    }
}

fn run_case(
    server: &Server,
    connection: &mut Option<TcpStream>,
    case: &Case,
    vars: &mut HashMap<String, u64>,
    record: bool,
) -> Result<(), String> {
    let mut request = binary_script::render_send(&case.send, vars)?;
    if !case.closes {
        request.extend_from_slice(&sentinel());
    }
    if connection.is_none() {
        let stream = server
            .connect(READ_TIMEOUT)
            .map_err(|e| format!("cannot connect to {}: {e}", server.addr()))?;
        *connection = Some(stream);
    }
    let stream = connection.as_mut().expect("connected above");
    let mut writer = stream.try_clone().map_err(|e| format!("clone: {e}"))?;
    let write_thread = thread::spawn(move || writer.write_all(&request));
    let collected = collect(stream, case.closes);
    let written = write_thread.join().expect("writer thread panicked");
    let (replies, eof) = collected?;
    if record {
        println!("=== {} [{}]", case.name, case.origin);
        for r in &replies {
            println!("< {}", binary_script::render_reply(r));
        }
        if eof {
            println!("@close");
        }
    }
    if case.closes {
        *connection = None;
        if !eof {
            return Err("expected the server to close the connection".into());
        }
    } else {
        if eof {
            return Err("the server closed the connection unexpectedly".into());
        }
        written.map_err(|e| format!("write failed: {e}"))?;
    }
    binary_script::match_replies(&case.expect, &replies, vars)
}

fn check_against(kind: &ServerKind) {
    let record = std::env::var_os("MRCACHE_BINARY_RECORD").is_some();
    let sections = all_sections();
    let mut failures = Vec::new();
    let mut count = 0;
    for section in &sections {
        let flags: Vec<&str> = section.flags.iter().map(String::as_str).collect();
        let server = Server::start(kind, &flags);
        let mut connection = None;
        let mut vars = HashMap::new();
        for case in &section.cases {
            count += 1;
            if let Err(why) = run_case(&server, &mut connection, case, &mut vars, record) {
                connection = None;
                failures.push(format!("--- {} [{}]\n    {why}", case.name, case.origin));
            }
        }
    }
    println!(
        "binary conformance: {} of {count} cases match on {}",
        count - failures.len(),
        kind.name()
    );
    assert!(
        failures.is_empty(),
        "{} of {count} binary cases differ on {}:\n{}",
        failures.len(),
        kind.name(),
        failures.join("\n")
    );
}

#[test]
fn binary_case_files_are_well_formed() {
    case_file::assert_well_formed(&all_sections(), 40, "binary");
}

#[test]
#[ignore = "needs memcached"]
fn memcached_matches_binary_cases() {
    check_against(&ServerKind::memcached());
}

#[test]
fn mrcached_matches_binary_cases() {
    check_against(&ServerKind::mrcached());
}
