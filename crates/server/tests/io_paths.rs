//! `-o io=`: the server serves on the io_uring path when asked (and says so in `stats settings`, and in
//! its `-v` start-up log), and a bad value is refused at start-up with an error naming the option.
//! The whole suite runs on both paths through `MRCACHED_EXTRA_ARGS` (scripts/test.sh); this file checks
//! the option itself.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{extra_mrcached_args, run_with_deadline, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

/// The path `-o io=` names last on the command line (the harness appends `MRCACHED_EXTRA_ARGS`).
fn expected_io(ours: &str) -> String {
    let mut io = ours.to_string();
    for a in extra_mrcached_args() {
        for opt in a.split(',') {
            if let Some(v) = opt.strip_prefix("io=") {
                io = v.to_string();
            }
        }
    }
    io
}

/// Sends `req` and reads reply lines until `lines_ending` of them equal `last`.
fn request(
    reader: &mut BufReader<std::net::TcpStream>,
    req: &[u8],
    last: &str,
    lines_ending: usize,
) -> String {
    reader.get_mut().write_all(req).unwrap();
    let mut reply = String::new();
    let mut seen = 0;
    while seen < lines_ending {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "server closed early: {reply:?}");
        seen += usize::from(line == last);
        reply.push_str(&line);
    }
    reply
}

fn serves_on(io: &str) {
    let server = Server::start(&ServerKind::mrcached(), &["-v", "-o", &format!("io={io}")]);
    let mut r = BufReader::new(server.connect(TIMEOUT).unwrap());
    assert_eq!(
        request(&mut r, b"set k 5 0 3\r\nabc\r\n", "STORED\r\n", 1),
        "STORED\r\n"
    );
    // A pipelined batch and a multi-get: every reply, in order.
    let reply = request(
        &mut r,
        b"get k\r\nget nothing\r\nget k k nothing k\r\n",
        "END\r\n",
        3,
    );
    assert_eq!(
        reply,
        "VALUE k 5 3\r\nabc\r\nEND\r\nEND\r\n\
         VALUE k 5 3\r\nabc\r\nVALUE k 5 3\r\nabc\r\nVALUE k 5 3\r\nabc\r\nEND\r\n"
    );
    let settings = request(&mut r, b"stats settings\r\n", "END\r\n", 1);
    let want = expected_io(io);
    assert!(
        settings.contains(&format!("STAT io {want}\r\n")),
        "stats settings lacks `io {want}`:\n{settings}"
    );
    // -v logs the path in use at start-up.
    let deadline = Instant::now() + TIMEOUT;
    while !server
        .stderr_tail()
        .contains(&format!("network I/O: {want}"))
    {
        assert!(
            Instant::now() < deadline,
            "no start-up log of the I/O path:\n{}",
            server.stderr_tail()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn io_uring_serves() {
    serves_on("uring");
}

#[test]
fn epoll_serves() {
    serves_on("epoll");
}

#[test]
fn a_bad_io_value_is_refused_naming_the_option() {
    let (code, out) = run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_mrcached")).args(["-p", "0", "-o", "io=bogus"]),
        TIMEOUT,
    );
    assert!(code.is_some_and(|c| c != 0), "exit {code:?}: {out}");
    assert!(
        out.contains("io") && out.contains("must be auto, uring or epoll"),
        "{out}"
    );
}
