//! Graceful shutdown: SIGTERM and SIGINT stop `mrcached` with status 0, answering what was already
//! read and closing every client connection (they see end of stream), within a bounded time.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

use common::{Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

fn stops_cleanly_on(signal: libc::c_int) {
    let mut server = Server::start(&ServerKind::mrcached(), &["-t", "2"]);
    // Two connections, likely on different workers: one has just been answered, one sits idle.
    let mut busy = server.connect(TIMEOUT).unwrap();
    busy.write_all(b"set k 0 0 1\r\nv\r\n").unwrap();
    let mut reply = String::new();
    let mut reader = BufReader::new(busy.try_clone().unwrap());
    reader.read_line(&mut reply).unwrap();
    assert_eq!(reply, "STORED\r\n");
    let mut idle = server.connect(TIMEOUT).unwrap();

    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, signal) }, 0);
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = server.exit_status() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running {TIMEOUT:?} after signal {signal}: {}",
            server.stderr_tail()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(0), "{}", server.stderr_tail());
    // Both clients see the connection end (EOF, or a reset if the kernel had unread bytes).
    for stream in [&mut idle, reader.get_mut()] {
        let mut buf = [0u8; 16];
        match stream.read(&mut buf) {
            Ok(n) => assert_eq!(n, 0, "unexpected bytes after shutdown"),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
        }
    }
}

#[test]
fn sigterm_stops_the_server_and_closes_its_connections() {
    stops_cleanly_on(libc::SIGTERM);
}

#[test]
fn sigint_stops_the_server_and_closes_its_connections() {
    stops_cleanly_on(libc::SIGINT);
}
