//! End to end: tenants against the real `mrcached` binary. Two tenants with passwords (`-Y` plus
//! `--config`) try every command on each other's keys; wrong passwords and unauthenticated commands are
//! refused; a port tenant and prefix tenants are isolated; SIGHUP adds a tenant without losing data.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{free_port, Server, ServerKind};

const TIMEOUT: Duration = Duration::from_secs(10);

/// A text-protocol client that reads replies line by line.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(port: u16) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(TIMEOUT)).unwrap();
        s.set_nodelay(true).unwrap();
        Client {
            reader: BufReader::new(s),
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).unwrap();
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader.read_line(&mut l).expect("a reply line");
        l.trim_end_matches("\r\n").to_string()
    }

    /// Sends `cmd` and returns the reply: one line, or every line through `END` for retrievals and stats.
    fn call(&mut self, cmd: &str) -> String {
        self.send(cmd.as_bytes());
        let first = self.line();
        if !(first.starts_with("VALUE ") || first.starts_with("STAT ") || first.starts_with("VA "))
        {
            return first;
        }
        let mut all = first;
        loop {
            let l = self.line();
            let done = l == "END" || all.starts_with("VA ");
            all.push('\n');
            all.push_str(&l);
            if done {
                return all;
            }
        }
    }

    fn auth(&mut self, user: &str, password: &str) -> String {
        let token = format!("{user} {password}");
        self.call(&format!("set auth 0 0 {}\r\n{token}\r\n", token.len()))
    }
}

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mrcached-tenants-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn start(args: &[&str]) -> Server {
    Server::start(&ServerKind::mrcached(), args)
}

/// Starts mrcached with the flags `flags(port)` gives for a tenant port; when another test's server took
/// that port between `free_port` and the bind (the server then exits), tries again with a fresh port.
fn start_with_tenant_port(mut flags: impl FnMut(u16) -> Vec<String>) -> (Server, u16) {
    for attempt in 1..=5 {
        let port = free_port();
        let args = flags(port);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| start(&args)));
        match started {
            Ok(server) => return (server, port),
            Err(e) if attempt < 5 => eprintln!("tenant port {port} was taken, retrying: {e:?}"),
            Err(e) => std::panic::resume_unwind(e),
        }
    }
    unreachable!()
}

#[test]
fn password_tenants_are_isolated_and_reload_keeps_data() {
    let dir = temp_dir();
    let auth = dir.join("auth");
    let conf = dir.join("tenants.toml");
    std::fs::write(&auth, "alice:apw\nbob:bpw\n").unwrap();
    let mut config = String::new();
    let (server, carol_port) = start_with_tenant_port(|carol_port| {
        config = format!(
            "[[tenant]]\nname = \"alice\"\nreserved = \"2MiB\"\ntarget_hit_ratio = 0.9\n\n[[tenant]]\nname = \"carol\"\nport = {carol_port}\n"
        );
        std::fs::write(&conf, &config).unwrap();
        vec![
            "-Y".to_string(),
            auth.to_str().unwrap().to_string(),
            "--config".to_string(),
            conf.to_str().unwrap().to_string(),
        ]
    });
    let port = server.port();

    // Unauthenticated: everything but the auth set is refused; a wrong password fails.
    let mut anon = Client::connect(port);
    for cmd in [
        "get k\r\n",
        "mg k v\r\n",
        "flush_all\r\n",
        "stats\r\n",
        "delete k noreply\r\n",
    ] {
        assert_eq!(anon.call(cmd), "CLIENT_ERROR unauthenticated", "{cmd:?}");
    }
    assert_eq!(
        anon.auth("alice", "bpw"),
        "CLIENT_ERROR authentication failure"
    );
    assert_eq!(
        anon.auth("mallory", "x"),
        "CLIENT_ERROR authentication failure"
    );
    assert_eq!(anon.call("get k\r\n"), "CLIENT_ERROR unauthenticated");

    let mut alice = Client::connect(port);
    let mut bob = Client::connect(port);
    assert_eq!(alice.auth("alice", "apw"), "STORED");
    assert_eq!(bob.auth("bob", "bpw"), "STORED");
    assert_eq!(alice.call("set k 5 0 5\r\nalice\r\n"), "STORED");
    assert_eq!(alice.call("set n 0 0 2\r\n10\r\n"), "STORED");
    let gets = alice.call("gets k\r\n");
    let cas: u64 = gets
        .lines()
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();

    // Bob tries every command on alice's keys and sees an empty namespace.
    for (cmd, reply) in [
        ("get k\r\n", "END"),
        ("gets k\r\n", "END"),
        ("gat 0 k\r\n", "END"),
        ("gats 0 k\r\n", "END"),
        ("touch k 1\r\n", "NOT_FOUND"),
        ("incr n 1\r\n", "NOT_FOUND"),
        ("decr n 1\r\n", "NOT_FOUND"),
        ("delete k\r\n", "NOT_FOUND"),
        ("append k 0 0 1\r\nx\r\n", "NOT_STORED"),
        ("prepend k 0 0 1\r\nx\r\n", "NOT_STORED"),
        ("replace k 0 0 1\r\nx\r\n", "NOT_STORED"),
        (&format!("cas k 0 0 1 {cas}\r\nx\r\n"), "NOT_FOUND"),
        ("mg k v\r\n", "EN"),
        ("md k\r\n", "NF"),
        ("ma n\r\n", "NF"),
        ("ms k 1 MR\r\nx\r\n", "NS"),
        ("flush_all\r\n", "OK"),
        ("add k 0 0 3\r\nbob\r\n", "STORED"),
        ("set n 0 0 1\r\n1\r\n", "STORED"),
        ("incr n 5\r\n", "6"),
        ("get k\r\n", "VALUE k 0 3\nbob\nEND"),
    ] {
        assert_eq!(bob.call(cmd), reply, "bob: {cmd:?}");
    }
    // Alice's items are exactly as she left them, CAS included.
    assert_eq!(alice.call("gets k\r\n"), gets);
    assert_eq!(alice.call("get n\r\n"), "VALUE n 0 2\n10\nEND");
    // Her flush_all flushes only her.
    assert_eq!(alice.call("set tmp 0 0 1\r\nt\r\n"), "STORED");
    assert_eq!(alice.call("flush_all\r\n"), "OK");
    assert_eq!(alice.call("get tmp k\r\n"), "END");
    assert_eq!(bob.call("get k\r\n"), "VALUE k 0 3\nbob\nEND");
    assert_eq!(alice.call("set k 5 0 5\r\nalice\r\n"), "STORED");
    assert_eq!(alice.call("set n 0 0 2\r\n10\r\n"), "STORED");

    // Carol is named by her port: no password, her own namespace.
    let mut carol = Client::connect(carol_port);
    assert_eq!(carol.call("get k\r\n"), "END");
    assert_eq!(carol.call("set k 0 0 5\r\ncarol\r\n"), "STORED");
    assert_eq!(alice.call("get k\r\n"), "VALUE k 5 5\nalice\nEND");

    // A tenant sees its own row of `stats tenants`.
    let stats = alice.call("stats tenants\r\n");
    assert!(stats.contains("STAT tenant:alice:items 2"), "{stats}");
    assert!(
        stats.contains("STAT tenant:alice:reserved 2097152"),
        "{stats}"
    );
    assert!(!stats.contains("tenant:bob:"), "{stats}");

    // SIGHUP: dave appears, bob is removed; data and open connections survive.
    std::fs::write(&auth, "alice:apw\ndave:dpw\n").unwrap();
    // SAFETY: kill(2) on our own child's pid has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let mut dave = Client::connect(port);
        if dave.auth("dave", "dpw") == "STORED" {
            assert_eq!(dave.call("get k\r\n"), "END");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "dave never became a tenant: {}",
            server.stderr_tail()
        );
    }
    assert_eq!(
        Client::connect(port).auth("bob", "bpw"),
        "CLIENT_ERROR authentication failure"
    );
    assert_eq!(
        bob.call("get k\r\n"),
        "VALUE k 0 3\nbob\nEND",
        "bob's open connection keeps working"
    );
    assert_eq!(
        alice.call("get k n\r\n"),
        "VALUE k 5 5\nalice\nVALUE n 0 2\n10\nEND"
    );
    assert_eq!(carol.call("get k\r\n"), "VALUE k 0 5\ncarol\nEND");

    // A bad file on reload is logged and the old configuration stays.
    std::fs::write(&conf, "[[tenant]]\nname = \"alice\"\nbogus = 1\n").unwrap();
    assert_eq!(unsafe { libc::kill(server.pid() as i32, libc::SIGHUP) }, 0);
    let deadline = Instant::now() + TIMEOUT;
    while !server.stderr_tail().contains("bogus") {
        assert!(Instant::now() < deadline, "no reload error logged");
        std::thread::yield_now();
    }
    assert_eq!(Client::connect(port).auth("dave", "dpw"), "STORED");
    assert_eq!(
        Client::connect(carol_port).call("get k\r\n"),
        "VALUE k 0 5\ncarol\nEND"
    );
}

#[test]
fn prefix_and_port_tenants_are_isolated() {
    let dir = temp_dir();
    let conf = dir.join("prefixes.toml");
    let (server, q_port) = start_with_tenant_port(|q_port| {
        std::fs::write(
            &conf,
            format!(
                "[[tenant]]\nname = \"p1\"\nprefix = \"p1:\"\n[[tenant]]\nname = \"p2\"\nprefix = \"p2:\"\n[[tenant]]\nname = \"q\"\nport = {q_port}\n"
            ),
        )
        .unwrap();
        vec!["--config".to_string(), conf.to_str().unwrap().to_string()]
    });
    let mut main = Client::connect(server.port());
    let mut q = Client::connect(q_port);
    for key in ["p1:x", "p2:x", "x"] {
        assert_eq!(main.call(&format!("set {key} 0 0 1\r\nm\r\n")), "STORED");
    }
    // The port tenant sees none of them, whatever prefix it sends, and cannot change them.
    for cmd in [
        "get p1:x p2:x x\r\n",
        "mg p1:x v\r\n",
        "delete p2:x\r\n",
        "touch x 1\r\n",
    ] {
        let reply = q.call(cmd);
        assert!(
            matches!(reply.as_str(), "END" | "EN" | "NOT_FOUND"),
            "{cmd:?}: {reply}"
        );
    }
    assert_eq!(q.call("set p1:x 0 0 1\r\nq\r\n"), "STORED");
    assert_eq!(q.call("flush_all\r\n"), "OK");
    assert_eq!(q.call("get p1:x\r\n"), "END");
    assert_eq!(
        main.call("get p1:x p2:x x\r\n"),
        "VALUE p1:x 0 1\nm\nVALUE p2:x 0 1\nm\nVALUE x 0 1\nm\nEND"
    );
    // A routed connection's flush_all flushes the default tenant only.
    assert_eq!(main.call("flush_all\r\n"), "OK");
    assert_eq!(
        main.call("get p1:x p2:x x\r\n"),
        "VALUE p1:x 0 1\nm\nVALUE p2:x 0 1\nm\nEND"
    );
    let stats = main.call("stats tenants\r\n");
    for line in [
        "STAT tenant:p1:items 1",
        "STAT tenant:p2:items 1",
        "STAT tenant:default:items 0",
        "STAT tenant:q:items 0",
    ] {
        assert!(stats.contains(line), "{line} in {stats}");
    }
}
