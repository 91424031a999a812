//! Byte-level conformance of `mrcached` with memcached 1.6.18.
//!
//! The case files in `tests/conformance/*.txt` script a stream of requests and
//! the exact reply memcached 1.6.18 gives to each (format: `conformance/script.rs`).
//! The same stream is replayed against:
//! - Debian's `memcached`, which proves every recorded
//!   expectation is what memcached really answers, deterministically;
//! - `mrcached`, which must give the same bytes.
//!
//! Both servers get identical flags (`-U 0 -l 127.0.0.1` plus each section's
//! `@server` flags). So both replies match one expectation, and the only bytes
//! allowed to differ are the documented holes (`\{n}` for CAS values, `\{*}`
//! for debug fields, `\{stats}` for statistics values).
//!
//! Reply collection never hangs: after each case the sentinel `mn\r\n` is sent
//! and the reply is read up to the `MN\r\n` it produces (or EOF for cases marked
//! `@close`), each read bounded by a timeout and each case by a deadline.
//!
//! When memcached is missing, the memcached pass fails, naming the package to
//! install (a skipped check is not a passed one); the mrcached pass still
//! checks against the recorded expectations.

#[path = "conformance/case_file.rs"]
mod case_file;
mod common;
#[path = "conformance/script.rs"]
mod script;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::thread;
use std::time::{Duration, Instant};

use common::{Server, ServerKind};
use script::{Case, Section};

/// The sentinel sent after each case, and the reply that ends its collection.
const SENTINEL: &[u8] = b"mn\r\n";
const SENTINEL_REPLY: &[u8] = b"MN\r\n";

/// A single read may block this long before the case fails.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// A whole case (send and collect) must finish within this time.
const CASE_DEADLINE: Duration = Duration::from_secs(20);
/// Replies longer than this fail the case instead of growing without bound.
const MAX_REPLY_BYTES: usize = 4 << 20;

/// The case files, in name order.
fn case_files() -> Vec<PathBuf> {
    common::txt_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance"))
}

fn all_sections() -> Vec<Section> {
    case_files()
        .iter()
        .flat_map(|file| script::parse_file(file).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// One case whose reply did not match.
struct Mismatch {
    origin: String,
    name: String,
    expected: String,
    actual: String,
    reason: String,
}

/// Replays every section against fresh servers of `kind`; returns the number
/// of cases run and the mismatches.
fn replay(kind: &ServerKind, sections: &[Section]) -> (usize, Vec<Mismatch>) {
    let mut mismatches = Vec::new();
    let mut count = 0;
    for section in sections {
        let flags: Vec<&str> = section.flags.iter().map(String::as_str).collect();
        let mut server = Server::start(kind, &flags);
        let mut connection: Option<TcpStream> = None;
        let mut vars = HashMap::new();
        for case in &section.cases {
            count += 1;
            let outcome = run_case(&mut server, &mut connection, case, &mut vars);
            if let Err((reason, actual)) = outcome {
                // A connection in an unknown state is not reused.
                connection = None;
                mismatches.push(Mismatch {
                    origin: case.origin.clone(),
                    name: case.name.clone(),
                    expected: script::render_expect(&case.expect),
                    actual: script::escape_bytes(&actual),
                    reason,
                });
            }
        }
    }
    (count, mismatches)
}

/// Sends one case and checks its reply; on failure returns why and the bytes
/// received.
fn run_case(
    server: &mut Server,
    connection: &mut Option<TcpStream>,
    case: &Case,
    vars: &mut HashMap<String, Vec<u8>>,
) -> Result<(), (String, Vec<u8>)> {
    let fail = |reason: String| (reason, Vec::new());
    let mut request = script::render_send(&case.send, vars).map_err(fail)?;
    if !case.closes {
        request.extend_from_slice(SENTINEL);
    }
    if connection.is_none() {
        let stream = server.connect(READ_TIMEOUT).map_err(|e| {
            fail(format!(
                "cannot connect to {} ({e}); server exit status: {:?}",
                server.addr(),
                server.exit_status()
            ))
        })?;
        *connection = Some(stream);
    }
    let stream = connection.as_mut().expect("connected above");

    // Write from a helper thread so that a large request cannot deadlock
    // against a large reply.
    let mut writer = stream
        .try_clone()
        .map_err(|e| fail(format!("clone socket: {e}")))?;
    let write_thread = thread::spawn(move || writer.write_all(&request));
    // A case may itself expect `MN` lines (it tests `mn`); the reply is complete
    // only when the sentinel's `MN` follows all of them.
    let sentinel_lines = if case.closes {
        0
    } else {
        1 + script::count_mn_lines(&case.expect)
    };
    let (reply, eof, read_error) = collect_reply(stream, sentinel_lines);
    let write_result = write_thread.join().expect("writer thread panicked");

    if case.closes {
        *connection = None;
        if !eof {
            let why = read_error.unwrap_or_else(|| "no EOF".into());
            return Err((
                format!("expected the server to close the connection: {why}"),
                reply,
            ));
        }
        return script::match_reply(&case.expect, &reply, vars).map_err(|e| (e, reply));
    }
    if let Some(error) = read_error {
        return Err((error, reply));
    }
    if eof {
        return Err((
            "the server closed the connection unexpectedly".into(),
            reply,
        ));
    }
    if let Err(e) = write_result {
        return Err((format!("write failed: {e}"), reply));
    }
    let body = &reply[..reply.len() - SENTINEL_REPLY.len()];
    script::match_reply(&case.expect, body, vars).map_err(|e| (e, reply.clone()))
}

/// Reads until the buffer ends with the sentinel reply and holds
/// `sentinel_lines` `MN` lines in all, or, when `sentinel_lines` is 0, until
/// EOF. Returns the bytes, whether EOF was seen, and a read error.
fn collect_reply(stream: &mut TcpStream, sentinel_lines: usize) -> (Vec<u8>, bool, Option<String>) {
    let until_sentinel = sentinel_lines > 0;
    let deadline = Instant::now() + CASE_DEADLINE;
    let mut reply = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if until_sentinel
            && ends_with_sentinel(&reply)
            && count_lines(&reply, b"MN") >= sentinel_lines
        {
            return (reply, false, None);
        }
        if Instant::now() >= deadline {
            return (
                reply,
                false,
                Some(format!("case deadline {CASE_DEADLINE:?} passed")),
            );
        }
        if reply.len() > MAX_REPLY_BYTES {
            return (
                reply,
                false,
                Some(format!("reply exceeds {MAX_REPLY_BYTES} bytes")),
            );
        }
        match stream.read(&mut buf) {
            Ok(0) => return (reply, true, None),
            Ok(n) => reply.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return (
                    reply,
                    false,
                    Some(format!("no reply within {READ_TIMEOUT:?}")),
                );
            }
            // A reset after the server closed counts as the close we wait for.
            Err(e) if e.kind() == ErrorKind::ConnectionReset && !until_sentinel => {
                return (reply, true, None);
            }
            Err(e) => return (reply, false, Some(format!("read failed: {e}"))),
        }
    }
}

/// The sentinel reply is a whole line at the end of the buffer.
fn ends_with_sentinel(reply: &[u8]) -> bool {
    reply.ends_with(SENTINEL_REPLY)
        && (reply.len() == SENTINEL_REPLY.len()
            || reply[reply.len() - SENTINEL_REPLY.len() - 1] == b'\n')
}

/// How many lines of `bytes` are exactly `line` followed by `\r\n`.
fn count_lines(bytes: &[u8], line: &[u8]) -> usize {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| l.strip_suffix(b"\r") == Some(line))
        .count()
}

/// Replays all cases against `kind` and panics with every mismatch listed.
fn check_against(kind: &ServerKind) {
    let sections = all_sections();
    let started = Instant::now();
    let (count, mismatches) = replay(kind, &sections);
    println!(
        "conformance: {} of {count} cases match on {} ({:.1?})",
        count - mismatches.len(),
        kind.name(),
        started.elapsed()
    );
    if mismatches.is_empty() {
        return;
    }
    let mut report = String::new();
    for m in &mismatches {
        report.push_str(&format!(
            "\n--- {} [{}]\n    why:      {}\n    expected: {}\n    actual:   {}\n",
            m.name,
            m.origin,
            m.reason,
            shorten(&m.expected),
            shorten(&m.actual)
        ));
    }
    panic!(
        "{} of {count} conformance cases differ on {}:{report}",
        mismatches.len(),
        kind.name()
    );
}

fn shorten(text: &str) -> String {
    const LIMIT: usize = 600;
    if text.len() <= LIMIT {
        return text.to_owned();
    }
    let cut = (0..=LIMIT)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}... ({} more chars)", &text[..cut], text.len() - cut)
}

#[test]
fn case_files_are_well_formed() {
    case_file::assert_well_formed(&all_sections(), 150, "conformance");
}

#[test]
#[ignore = "needs memcached"]
fn memcached_matches_case_files() {
    check_against(&ServerKind::memcached());
}

#[test]
fn mrcached_matches_case_files() {
    // MRCACHE_CONFORMANCE_SUBJECT=memcached replays the subject pass against a
    // second memcached, to validate the harness itself (memcached vs memcached).
    let subject = match std::env::var("MRCACHE_CONFORMANCE_SUBJECT").as_deref() {
        Ok("memcached") => ServerKind::memcached(),
        _ => ServerKind::mrcached(),
    };
    check_against(&subject);
}

/// The harness accepts a reference server only once the socket listening on its port is the
/// child's own (a CI run once had its probe answered by another test's server on the same port).
#[test]
#[ignore = "needs memcached"]
fn the_harness_knows_its_reference_server_by_its_listening_socket() {
    let server = Server::start(&ServerKind::memcached(), &[]);
    assert_eq!(common::listens_on(server.pid(), server.port()), Some(true));
    let other = Server::start(&ServerKind::memcached(), &[]);
    assert_eq!(
        common::listens_on(server.pid(), other.port()),
        Some(false),
        "the other server's listener is not the first's"
    );
}
