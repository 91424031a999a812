//! `-vv` logs client commands: each command line as `<FD line` and its reply's first line as
//! `>FD line` on stderr, as memcached 1.6 does; `verbosity N` turns it on and off at run time. (`watch`
//! has its own tests, in `watch.rs`.)

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

/// Sends `request` and reads `lines` reply lines.
fn exchange(reader: &mut BufReader<TcpStream>, request: &[u8], lines: usize) -> String {
    reader.get_mut().write_all(request).unwrap();
    let mut reply = String::new();
    for _ in 0..lines {
        reader.read_line(&mut reply).unwrap();
    }
    reply
}

/// Waits (bounded) until the server's stderr holds every line of `expected`, in order, and returns it.
fn wait_for_log(server: &Server, expected: &[String]) -> String {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let log = server.stderr_tail();
        let lines: Vec<&str> = log.lines().collect();
        let mut at = 0;
        let found = expected
            .iter()
            .all(|want| match lines[at..].iter().position(|l| l == want) {
                Some(i) => {
                    at += i + 1;
                    true
                }
                None => false,
            });
        if found {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "stderr lacks {expected:?} in order:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The descriptor the server logged for the connection that sent `line`.
fn logged_fd(server: &Server, line: &str) -> String {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let log = server.stderr_tail();
        let fd = log.lines().find_map(|l| {
            let (fd, rest) = l.strip_prefix('<')?.split_once(' ')?;
            (rest == line && fd.bytes().all(|b| b.is_ascii_digit())).then(|| fd.to_string())
        });
        if let Some(fd) = fd {
            return fd;
        }
        assert!(Instant::now() < deadline, "no `<FD {line}` in:\n{log}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn vv_logs_commands_and_first_reply_lines() {
    let server = Server::start(&ServerKind::mrcached(), &["-vv"]);
    let mut reader = BufReader::new(server.connect(TIMEOUT).unwrap());
    assert_eq!(
        exchange(&mut reader, b"set logged 0 0 1\r\nx\r\n", 1),
        "STORED\r\n"
    );
    let fd = logged_fd(&server, "set logged 0 0 1");
    assert_eq!(
        exchange(&mut reader, b"get logged\r\nbogus\r\n", 4),
        "VALUE logged 0 1\r\nx\r\nEND\r\nERROR\r\n"
    );
    wait_for_log(
        &server,
        &[
            format!("<{fd} set logged 0 0 1"),
            format!(">{fd} STORED"),
            format!("<{fd} get logged"),
            format!(">{fd} sending key logged"),
            format!(">{fd} END"),
            format!("<{fd} bogus"),
            format!(">{fd} ERROR"),
        ],
    );

    // `verbosity 1` is logged (it arrived at level 2) but its reply and later commands are not.
    assert_eq!(exchange(&mut reader, b"verbosity 1\r\n", 1), "OK\r\n");
    assert_eq!(exchange(&mut reader, b"get quiet\r\n", 1), "END\r\n");
    assert_eq!(exchange(&mut reader, b"verbosity 2\r\n", 1), "OK\r\n");
    assert_eq!(exchange(&mut reader, b"mn\r\n", 1), "MN\r\n");
    let log = wait_for_log(
        &server,
        &[
            format!("<{fd} verbosity 1"),
            format!("<{fd} mn"),
            format!(">{fd} MN"),
        ],
    );
    assert!(!log.contains("get quiet"), "{log}");
    assert!(!log.contains(&format!("<{fd} verbosity 2")), "{log}");

    // As memcached 1.6.18: no reply lines for stats listings or meta replies (`mn` aside), one line
    // per connection opened and closed, and the first command names the protocol.
    assert_eq!(exchange(&mut reader, b"stats detail on\r\n", 1), "OK\r\n");
    // Suppressed replies are logged as memcached logs them.
    assert_eq!(
        exchange(
            &mut reader,
            b"set n 0 0 1 noreply\r\n5\r\nincr n 2 noreply\r\nmn\r\n",
            1
        ),
        "MN\r\n"
    );
    assert!(exchange(&mut reader, b"stats\r\n", 1).starts_with("STAT "));
    drop(reader);
    wait_for_log(&server, &[format!("<{fd} connection closed.")]);
    let mut other = BufReader::new(server.connect(TIMEOUT).unwrap());
    assert_eq!(exchange(&mut other, b"mg nothing v\r\n", 1), "EN\r\n");
    let fd2 = logged_fd(&server, "mg nothing v");
    assert_eq!(exchange(&mut other, b"quit\r\n", 0), "");
    let log = wait_for_log(
        &server,
        &[
            format!("<{fd} stats detail on"),
            format!(">{fd} OK"),
            format!("<{fd} set n 0 0 1 noreply"),
            format!(">{fd} NOREPLY STORED"),
            format!("<{fd} incr n 2 noreply"),
            format!(">{fd} NOREPLY 7"),
            format!("<{fd} stats"),
            format!("<{fd} connection closed."),
            format!("<{fd2} new auto-negotiating client connection"),
            format!("{fd2}: Client using the ascii protocol"),
            format!("<{fd2} mg nothing v"),
            format!("<{fd2} quit"),
            format!("<{fd2} connection closed."),
        ],
    );
    assert!(!log.contains(&format!(">{fd} STAT")), "{log}");
    let meta_reply = format!(">{fd2} EN");
    assert!(!log.lines().any(|l| l == meta_reply), "{log}");
}

#[test]
fn verbosity_command_turns_the_log_on() {
    let server = Server::start(&ServerKind::mrcached(), &[]);
    let mut reader = BufReader::new(server.connect(TIMEOUT).unwrap());
    assert_eq!(exchange(&mut reader, b"get before\r\n", 1), "END\r\n");
    assert_eq!(exchange(&mut reader, b"verbosity 2\r\n", 1), "OK\r\n");
    assert_eq!(exchange(&mut reader, b"get after\r\n", 1), "END\r\n");
    let fd = logged_fd(&server, "get after");
    let log = wait_for_log(&server, &[format!(">{fd} END")]);
    assert!(!log.contains("before"), "{log}");
}
