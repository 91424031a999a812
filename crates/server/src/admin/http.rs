//! The admin port's HTTP/1.1 server: one thread, a bounded number of connections, bounded requests.
//!
//! The admin port answers a handful of read-only GETs (the dashboard, `/mrc`, `/history`, `/metrics`), so
//! the server is built to refuse everything else cheaply rather than to be general. Requests are parsed by
//! `httparse` (the parser under hyper) out of a fixed buffer; nothing a client sends decides how much is
//! allocated. Limits, each enforced by refusing, never by growing:
//! - the request head (request line and headers) fits [`MAX_HEAD_BYTES`], with at most [`MAX_HEADERS`]
//!   headers: past either, `431` and close;
//! - no body: a request that announces one (`Content-Length` other than 0, or `Transfer-Encoding`) gets
//!   `413` and is closed without a byte of the body being read into memory;
//! - `GET` and `HEAD` only (`405` otherwise); one request per connection (`Connection: close`);
//! - at most [`MAX_CONNECTIONS`] connections at once: a further one is accepted, gets a best-effort
//!   `503` and is closed at once (left in the listen backlog, a flood would fill it and make every
//!   later client wait out SYN retries);
//! - each connection has [`CONNECTION_TIMEOUT`] from its accept to its close, whatever it is doing
//!   (sending its head a byte at a time, or not reading its response): then it is closed.
//!
//! So the server holds at most `MAX_CONNECTIONS × (MAX_HEAD_BYTES + the largest response)` and one thread,
//! however many clients connect or how they behave. After a response is sent the connection's write side
//! is shut down and what the client still sends is read and discarded until it closes or the timeout
//! (closing a socket with unread input would reset it and could destroy the response in flight).
//!
//! Invariants: a connection's `head` never grows past [`MAX_HEAD_BYTES`]; its `out` is set once, from
//! the handler's response; every connection is closed by its deadline.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

/// Request line plus headers; a browser's GET is well under 2 KiB.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// Headers per request.
pub const MAX_HEADERS: usize = 32;
/// Connections served at once: a dashboard and a Prometheus scraper need a few.
pub const MAX_CONNECTIONS: usize = 32;
/// From accept to close, for every connection.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);

const LISTENER: Token = Token(usize::MAX);

/// What the handler returns for one request.
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body (not sent for `HEAD`).
    pub body: String,
}

impl Response {
    /// A plain-text response.
    pub fn text(status: u16, body: impl Into<String>) -> Response {
        Response {
            status,
            content_type: "text/plain",
            body: body.into(),
        }
    }
}

enum Phase {
    /// Reading the request head.
    Head,
    /// Sending the response.
    Respond,
    /// Response sent, write side shut down: discarding input until the client closes.
    Drain,
}

struct Conn {
    stream: TcpStream,
    head: Vec<u8>,
    out: Vec<u8>,
    sent: usize,
    phase: Phase,
    deadline: Instant,
}

/// A bound admin listener and its connections.
pub struct HttpServer {
    poll: Poll,
    events: Events,
    listener: TcpListener,
    conns: Vec<Option<Conn>>,
    open: usize,
}

impl HttpServer {
    /// Binds `addr` (non-blocking; serving happens in [`HttpServer::turn`]).
    pub fn bind(addr: SocketAddr) -> io::Result<HttpServer> {
        let mut listener = TcpListener::bind(addr)?;
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        Ok(HttpServer {
            poll,
            events: Events::with_capacity(64),
            listener,
            conns: (0..MAX_CONNECTIONS).map(|_| None).collect(),
            open: 0,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Connections open now.
    #[cfg(test)]
    pub fn open_connections(&self) -> usize {
        self.open
    }

    /// Waits up to `max_wait` for activity, then serves what is ready: accepts, reads heads, answers each
    /// complete request with `handler(method, target)` (`method` is `GET` or `HEAD`), sends, and closes
    /// connections that are done or past their deadline.
    pub fn turn(
        &mut self,
        max_wait: Duration,
        mut handler: impl FnMut(&str, &str) -> Response,
    ) -> io::Result<()> {
        let now = Instant::now();
        let wait = self
            .conns
            .iter()
            .flatten()
            .map(|c| c.deadline.saturating_duration_since(now))
            .fold(max_wait, Duration::min);
        match self.poll.poll(&mut self.events, Some(wait)) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
        let ready: Vec<Token> = self.events.iter().map(|e| e.token()).collect();
        for token in ready {
            if token == LISTENER {
                self.accept_all();
            } else {
                self.progress(token.0, &mut handler);
            }
        }
        let now = Instant::now();
        for slot in 0..self.conns.len() {
            if self.conns[slot].as_ref().is_some_and(|c| c.deadline <= now) {
                self.close(slot);
            }
        }
        Ok(())
    }

    /// Accepts every waiting connection; those beyond [`MAX_CONNECTIONS`] are answered `503` and closed.
    fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    let Some(slot) = self.conns.iter().position(Option::is_none) else {
                        // Best effort: a fresh socket's send buffer takes this without blocking.
                        let _ = stream.write(&head_bytes(503, "text/plain", 0));
                        continue;
                    };
                    if self
                        .poll
                        .registry()
                        .register(&mut stream, Token(slot), Interest::READABLE)
                        .is_err()
                    {
                        continue;
                    }
                    self.conns[slot] = Some(Conn {
                        stream,
                        head: Vec::new(),
                        out: Vec::new(),
                        sent: 0,
                        phase: Phase::Head,
                        deadline: Instant::now() + CONNECTION_TIMEOUT,
                    });
                    self.open += 1;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // WouldBlock, or out of descriptors / the peer gave up: try again at the next event.
                Err(_) => return,
            }
        }
    }

    /// Moves one connection on as far as its socket allows; closes it when done or failed.
    fn progress(&mut self, slot: usize, handler: &mut impl FnMut(&str, &str) -> Response) {
        let Some(Some(conn)) = self.conns.get_mut(slot) else {
            return;
        };
        let open = match conn.phase {
            Phase::Head => conn.read_head(handler).and_then(|()| {
                if matches!(conn.phase, Phase::Respond) {
                    self.poll.registry().reregister(
                        &mut conn.stream,
                        Token(slot),
                        Interest::READABLE | Interest::WRITABLE,
                    )?;
                    conn.send()
                } else {
                    Ok(true)
                }
            }),
            Phase::Respond => conn.send(),
            Phase::Drain => conn.drain(),
        };
        if !matches!(open, Ok(true)) {
            self.close(slot);
        }
    }

    fn close(&mut self, slot: usize) {
        if let Some(mut conn) = self.conns[slot].take() {
            let _ = self.poll.registry().deregister(&mut conn.stream);
            self.open -= 1;
        }
    }
}

impl Conn {
    /// Reads what arrived of the head; once it is complete (or refused) sets the response and moves to
    /// [`Phase::Respond`].
    fn read_head(&mut self, handler: &mut impl FnMut(&str, &str) -> Response) -> io::Result<()> {
        let mut chunk = [0u8; 2048];
        loop {
            let room = MAX_HEAD_BYTES - self.head.len();
            let want = room.min(chunk.len());
            if want == 0 {
                return self.respond(431, Response::text(431, "request head too large\n"), true);
            }
            match self.stream.read(&mut chunk[..want]) {
                Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
                Ok(n) => self.head.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let mut request = httparse::Request::new(&mut headers);
            let (status, response, with_body) = match request.parse(&self.head) {
                Ok(httparse::Status::Partial) => continue,
                Err(httparse::Error::TooManyHeaders) => {
                    (431, Response::text(431, "too many headers\n"), true)
                }
                Err(e) => (
                    400,
                    Response::text(400, format!("bad request: {e}\n")),
                    true,
                ),
                Ok(httparse::Status::Complete(_)) => {
                    let method = request.method.unwrap_or("");
                    let target = request.path.unwrap_or("");
                    if announces_body(request.headers) {
                        (
                            413,
                            Response::text(413, "no request body is accepted\n"),
                            true,
                        )
                    } else if method != "GET" && method != "HEAD" {
                        (405, Response::text(405, "only GET\n"), true)
                    } else {
                        let response = handler(method, target);
                        (response.status, response, method == "GET")
                    }
                }
            };
            return self.respond(status, response, with_body);
        }
    }

    fn respond(&mut self, status: u16, response: Response, with_body: bool) -> io::Result<()> {
        let body = if with_body {
            response.body.as_bytes()
        } else {
            b""
        };
        self.out = head_bytes(status, response.content_type, response.body.len());
        self.out.extend_from_slice(body);
        self.head = Vec::new();
        self.phase = Phase::Respond;
        Ok(())
    }

    /// Sends what the socket takes; when all is out, shuts the write side and drains. Ok(false): close.
    fn send(&mut self) -> io::Result<bool> {
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return Ok(false),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out = Vec::new();
        self.stream.shutdown(Shutdown::Write)?;
        self.phase = Phase::Drain;
        self.drain()
    }

    /// Discards input until the client closes (Ok(false)) or would block (Ok(true)).
    fn drain(&mut self) -> io::Result<bool> {
        let mut sink = [0u8; 4096];
        loop {
            match self.stream.read(&mut sink) {
                Ok(0) => return Ok(false),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether the request announces a body: any `Transfer-Encoding`, or a `Content-Length` that is not 0.
fn announces_body(headers: &[httparse::Header<'_>]) -> bool {
    headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding")
            || (h.name.eq_ignore_ascii_case("content-length")
                && h.value
                    .iter()
                    .any(|&b| b != b'0' && !b.is_ascii_whitespace()))
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

fn head_bytes(status: u16, content_type: &str, body_len: usize) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {body_len}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n",
        reason(status)
    );
    if status == 405 {
        head.push_str("Allow: GET, HEAD\r\n");
    }
    head.push_str("\r\n");
    head.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream as StdStream;

    fn server() -> HttpServer {
        HttpServer::bind("127.0.0.1:0".parse().unwrap()).unwrap()
    }

    fn echo(method: &str, target: &str) -> Response {
        Response::text(200, format!("{method} {target}"))
    }

    /// Serves turns until `done` says the client side is finished (bounded).
    fn serve_until(server: &mut HttpServer, mut done: impl FnMut(&HttpServer) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done(server) {
            assert!(Instant::now() < deadline, "no progress");
            server.turn(Duration::from_millis(5), echo).unwrap();
        }
    }

    fn exchange(server: &mut HttpServer, request: &[u8]) -> String {
        let mut client = StdStream::connect(server.local_addr().unwrap()).unwrap();
        client.write_all(request).unwrap();
        client.set_nonblocking(true).unwrap();
        let mut reply = Vec::new();
        serve_until(server, |_| {
            let mut buf = [0u8; 4096];
            match client.read(&mut buf) {
                Ok(0) => true,
                Ok(n) => {
                    reply.extend_from_slice(&buf[..n]);
                    false
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => false,
                Err(e) => panic!("{e}"),
            }
        });
        String::from_utf8(reply).unwrap()
    }

    #[test]
    fn a_get_is_answered_and_closed() {
        let mut s = server();
        let reply = exchange(&mut s, b"GET /mrc?class=3 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(reply.starts_with("HTTP/1.1 200 OK\r\n"), "{reply}");
        assert!(reply.contains("Content-Length: 16\r\n"), "{reply}");
        assert!(reply.ends_with("\r\n\r\nGET /mrc?class=3"), "{reply}");
        let head = exchange(&mut s, b"HEAD / HTTP/1.0\r\n\r\n");
        assert!(head.ends_with(
            "Content-Length: 6\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
        ));
    }

    #[test]
    fn abusive_requests_are_refused_without_allocating() {
        let mut s = server();
        let huge_body = b"GET / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n";
        assert!(exchange(&mut s, huge_body).starts_with("HTTP/1.1 413 "));
        let chunked = b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(exchange(&mut s, chunked).starts_with("HTTP/1.1 413 "));
        let post = b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n";
        let reply = exchange(&mut s, post);
        assert!(reply.starts_with("HTTP/1.1 405 ") && reply.contains("Allow: GET, HEAD"));
        let mut long_url = b"GET /".to_vec();
        long_url.resize(MAX_HEAD_BYTES * 4, b'a');
        assert!(exchange(&mut s, &long_url).starts_with("HTTP/1.1 431 "));
        let mut many = b"GET / HTTP/1.1\r\n".to_vec();
        for i in 0..=MAX_HEADERS {
            many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(exchange(&mut s, &many).starts_with("HTTP/1.1 431 "));
        assert!(exchange(&mut s, b"\x00\x01garbage\r\n\r\n").starts_with("HTTP/1.1 400 "));
        serve_until(&mut s, |s| s.open_connections() == 0);
    }

    #[test]
    fn connections_beyond_the_bound_are_turned_away() {
        let mut s = server();
        let addr = s.local_addr().unwrap();
        let idle: Vec<StdStream> = (0..MAX_CONNECTIONS)
            .map(|_| StdStream::connect(addr).unwrap())
            .collect();
        serve_until(&mut s, |s| s.open_connections() == MAX_CONNECTIONS);
        // Turned away at accept, before it is read: the client sends nothing (unread input would make
        // the close a reset).
        let reply = exchange(&mut s, b"");
        assert!(reply.starts_with("HTTP/1.1 503 "), "{reply}");
        assert_eq!(s.open_connections(), MAX_CONNECTIONS);
        drop(idle);
        serve_until(&mut s, |s| s.open_connections() == 0);
        assert!(exchange(&mut s, b"GET /a HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200 "));
    }
}
