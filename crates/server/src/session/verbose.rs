//! memcached's `-vv` command log: at verbosity 2 or more, each client command line goes to stderr as
//! `<FD line` and its reply as memcached 1.6.18 logs it, FD being the connection's descriptor:
//! - a reply line memcached writes with `out_string` is logged as `>FD line` (its first line);
//! - a retrieval logs `>FD sending key K` per value sent, then `>FD END`;
//! - replies memcached writes without `out_string` are not logged: `stats` listings (`STAT`, `PREFIX`,
//!   `ITEM` lines and their `END`) and the meta commands' replies (`mg`, `ms`, `md`, `ma`, `me`; `mn`'s
//!   `MN` is logged);
//! - connections: `<FD new auto-negotiating client connection` (`<FD new ascii client connection.`
//!   under `-B ascii`), `FD: Client using the ascii protocol` at the first command of an
//!   auto-negotiating connection, and `<FD connection closed.`.
//!
//! - a reply the client suppressed with `noreply` is logged `>FD NOREPLY <reply>` (by the dispatcher,
//!   which knows the reply it did not send: `Ctx::reply`).
//!
//! Auth exchanges are never logged (their data line holds a password).
//!
//! Binary connections ([`RequestLog::binary`]) log as memcached's `proto_bin.c` does: `<FD Read binary protocol
//! data:` and the 24 header bytes in rows of four, `<FD GET key` / `<FD SET key Value len is N` for
//! gets and stores, and for each reply packet `>FD Writing an error: MESSAGE` (errors) and `>FD Writing
//! bin response:` with its header bytes. Keys are logged as memcached logs them; SASL payloads never are.
//!
//! Cost: below verbosity 2, one relaxed load per request ([`RequestLog::text`], [`RequestLog::binary`]). At verbosity 2 every
//! request writes to stderr under its lock, which serialises the workers: it is a debugging aid, as in
//! memcached.

use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;

use crate::context::ServerContext;

/// memcached logs client commands when `settings.verbose > 1`.
pub(crate) const LOG_COMMANDS_VERBOSITY: u32 = 2;

/// A logged line is cut here: a command line is bounded by the parser, a reply's first line (a `stats`
/// value, a meta flag list) is short, but nothing unbounded should reach stderr.
const MAX_LOGGED_LINE_BYTES: usize = 4096;

/// One request being logged, text or binary: the request is written; its reply follows
/// ([`RequestLog::reply`]).
pub(super) struct RequestLog {
    fd: i32,
    reply_start: usize,
    /// How memcached logs this request's reply.
    kind: ReplyKind,
}

/// How memcached logs a request's reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReplyKind {
    /// Its first line (`out_string`), or `sending key` lines for values.
    Line,
    /// A `stats` command: only a one-line status (`OK`, `RESET`, errors), not its listing.
    Stats,
    /// A meta command other than `mn`: not at all.
    Silent,
    /// A binary request: every reply packet (`proto_bin.c`'s `Writing bin response`).
    Binary,
}

impl ReplyKind {
    fn of(input: &[u8]) -> ReplyKind {
        let command = first_line(input)
            .split(|&b| b == b' ')
            .next()
            .unwrap_or_default();
        match command {
            b"stats" => ReplyKind::Stats,
            b"mg" | b"ms" | b"md" | b"ma" | b"me" => ReplyKind::Silent,
            _ => ReplyKind::Line,
        }
    }
}

/// `<FD new … client connection` when a connection opens (at verbosity 2).
pub(super) fn conn_opened(ctx: &ServerContext, fd: i32, auto_negotiating: bool) {
    if ctx.verbosity.load(Relaxed) >= LOG_COMMANDS_VERBOSITY {
        emit(&if auto_negotiating {
            format!("<{fd} new auto-negotiating client connection")
        } else {
            format!("<{fd} new ascii client connection.")
        });
    }
}

/// `FD: Client using the ascii protocol` when an auto-negotiating connection's first command arrives.
pub(super) fn negotiated(ctx: &ServerContext, fd: i32) {
    if ctx.verbosity.load(Relaxed) >= LOG_COMMANDS_VERBOSITY {
        emit(&format!("{fd}: Client using the ascii protocol"));
    }
}

/// `>FD NOREPLY <reply>`: the reply a client suppressed with `noreply`, as memcached logs it.
pub(crate) fn log_noreply(ctx: &ServerContext, fd: i32, reply: &str) {
    if ctx.verbosity.load(Relaxed) >= LOG_COMMANDS_VERBOSITY {
        emit(&format!(">{fd} NOREPLY {reply}"));
    }
}

/// `<FD connection closed.` when a connection closes.
pub(super) fn conn_closed(ctx: &ServerContext, fd: i32) {
    if ctx.verbosity.load(Relaxed) >= LOG_COMMANDS_VERBOSITY {
        emit(&format!("<{fd} connection closed."));
    }
}

/// `Closing idle fd FD` when `-o idle_timeout` closes a connection (before its `connection closed.`).
pub(crate) fn conn_idle_closing(ctx: &ServerContext, fd: i32) {
    if ctx.verbosity.load(Relaxed) >= LOG_COMMANDS_VERBOSITY {
        emit(&format!("Closing idle fd {fd}"));
    }
}

impl RequestLog {
    /// Logs what `request` writes when the verbosity asks for it; `out` is the connection's output so
    /// far, so that the reply can be found after the request runs.
    #[inline]
    fn start(
        ctx: &ServerContext,
        fd: i32,
        out: &[u8],
        request: impl FnOnce() -> (String, ReplyKind),
    ) -> Option<RequestLog> {
        if ctx.verbosity.load(Relaxed) < LOG_COMMANDS_VERBOSITY {
            return None;
        }
        let (text, kind) = request();
        emit(&text);
        Some(RequestLog {
            fd,
            reply_start: out.len(),
            kind,
        })
    }

    /// Logs the command line at the start of `input` (see [`RequestLog::start`]).
    #[inline]
    pub(super) fn text(
        ctx: &ServerContext,
        fd: i32,
        input: &[u8],
        out: &[u8],
    ) -> Option<RequestLog> {
        RequestLog::start(ctx, fd, out, || {
            (request_line(fd, input), ReplyKind::of(input))
        })
    }

    /// Logs the binary request whose header starts `input` (and its command line for gets and
    /// stores; see [`RequestLog::start`]).
    #[inline]
    pub(super) fn binary(
        ctx: &ServerContext,
        fd: i32,
        input: &[u8],
        out: &[u8],
    ) -> Option<RequestLog> {
        RequestLog::start(ctx, fd, out, || {
            let mut text = format!("<{fd} Read binary protocol data:");
            text.push_str(&header_rows(&format!("<{fd}   "), input));
            if let Some(line) = binary_command_line(fd, input) {
                text.push('\n');
                text.push_str(&line);
            }
            (text, ReplyKind::Binary)
        })
    }

    /// Logs what the request appended to `out`, if anything, and if the verbosity still asks for it
    /// (`verbosity 0` itself is logged, its `OK` is not, as in memcached): a text reply's first line,
    /// a binary request's every reply packet.
    pub(super) fn reply(self, ctx: &ServerContext, out: &[u8]) {
        if ctx.verbosity.load(Relaxed) < LOG_COMMANDS_VERBOSITY {
            return;
        }
        let reply = &out[self.reply_start.min(out.len())..];
        if self.kind == ReplyKind::Binary {
            let text = binary_reply_text(self.fd, reply);
            if !text.is_empty() {
                emit(text.trim_end());
            }
            return;
        }
        for line in reply_lines(self.fd, self.kind, reply) {
            emit(&line);
        }
    }
}

/// memcached's lines for binary reply packets: `>FD Writing an error: MESSAGE` for an error, then
/// `>FD Writing bin response:` with the header bytes, for each packet.
fn binary_reply_text(fd: i32, mut rest: &[u8]) -> String {
    let mut text = String::new();
    while rest.len() >= 24 {
        let body = u32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]) as usize;
        let status = u16::from_be_bytes([rest[6], rest[7]]);
        let end = (24 + body).min(rest.len());
        if status != 0 && rest[1] != mrcache_protocol::binary::opcode::GETK {
            let message = &rest[24..end];
            let message = &message[..message.len().min(MAX_LOGGED_LINE_BYTES)];
            text.push_str(&format!(
                ">{fd} Writing an error: {}\n",
                String::from_utf8_lossy(message)
            ));
        }
        text.push_str(&format!(">{fd} Writing bin response:"));
        text.push_str(&header_rows(&format!(">{fd}  "), rest));
        text.push('\n');
        rest = &rest[end..];
    }
    text
}

/// The 24 header bytes in rows of four, each row starting on a new line with `prefix`.
fn header_rows(prefix: &str, bytes: &[u8]) -> String {
    let mut text = String::new();
    for (i, b) in bytes.iter().take(24).enumerate() {
        if i % 4 == 0 {
            text.push('\n');
            text.push_str(prefix);
        }
        text.push_str(&format!(" 0x{b:02x}"));
    }
    text
}

/// memcached's `<FD GET key` / `<FD SET key Value len is N` for a complete get or store request.
fn binary_command_line(fd: i32, input: &[u8]) -> Option<String> {
    use mrcache_protocol::binary::opcode::*;
    let keylen = u16::from_be_bytes([*input.get(2)?, *input.get(3)?]) as usize;
    let extlen = *input.get(4)? as usize;
    let bodylen = u32::from_be_bytes(input.get(8..12)?.try_into().ok()?) as usize;
    let key = input.get(24 + extlen..24 + extlen + keylen)?;
    let key = String::from_utf8_lossy(&key[..key.len().min(MAX_LOGGED_LINE_BYTES)]);
    let value_len = bodylen.saturating_sub(keylen + extlen);
    let name = match input[1] {
        GET | GETQ | GETK | GETKQ => return Some(format!("<{fd} GET {key}")),
        SET | SETQ => "SET",
        ADD | ADDQ => "ADD",
        REPLACE | REPLACEQ => "REPLACE",
        _ => return None,
    };
    Some(format!("<{fd} {name} {key} Value len is {value_len}"))
}

/// The lines memcached logs for `reply` (see the module doc).
fn reply_lines(fd: i32, kind: ReplyKind, reply: &[u8]) -> Vec<String> {
    let first = first_line(reply);
    let listing = [&b"STAT "[..], b"PREFIX ", b"ITEM "]
        .iter()
        .any(|p| first.starts_with(p))
        || first == b"END";
    match kind {
        ReplyKind::Silent => return Vec::new(),
        ReplyKind::Stats if listing => return Vec::new(),
        _ => {}
    }
    if !first.starts_with(b"VALUE ") {
        return reply_line(fd, reply).into_iter().collect();
    }
    // Values: `sending key K` for each, then the `END`.
    let mut lines = Vec::new();
    let mut rest = reply;
    while let Some(header) = rest.strip_prefix(b"VALUE ") {
        let line = first_line(header);
        let mut fields = line.split(|&b| b == b' ');
        let key = fields.next().unwrap_or_default();
        let bytes = fields
            .nth(1)
            .and_then(|n| std::str::from_utf8(n).ok()?.parse::<usize>().ok());
        lines.push(format!(
            ">{fd} sending key {}",
            String::from_utf8_lossy(key)
        ));
        // Past the header line, the data and its CRLF.
        let Some(bytes) = bytes else { break };
        let skip = "VALUE ".len() + line.len() + 2 + bytes + 2;
        rest = rest.get(skip..).unwrap_or_default();
    }
    if first_line(rest) == b"END" {
        lines.push(format!(">{fd} END"));
    }
    lines
}

/// The first line of `bytes` without its `\r\n`, at most [`MAX_LOGGED_LINE_BYTES`].
fn first_line(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let line = bytes[..end].strip_suffix(b"\r").unwrap_or(&bytes[..end]);
    &line[..line.len().min(MAX_LOGGED_LINE_BYTES)]
}

/// `<FD command line`.
fn request_line(fd: i32, input: &[u8]) -> String {
    format!("<{fd} {}", String::from_utf8_lossy(first_line(input)))
}

/// `>FD first reply line`, or nothing for an empty reply.
fn reply_line(fd: i32, reply: &[u8]) -> Option<String> {
    (!reply.is_empty()).then(|| format!(">{fd} {}", String::from_utf8_lossy(first_line(reply))))
}

fn emit(line: &str) {
    // A failed write to stderr has nowhere to be reported.
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_look_like_memcached_s() {
        assert_eq!(request_line(24, b"set a 0 0 1\r\nx\r\n"), "<24 set a 0 0 1");
        assert_eq!(request_line(24, b"bogus\n"), "<24 bogus");
        assert_eq!(request_line(9, b"get a"), "<9 get a");
        assert_eq!(reply_line(24, b"STORED\r\n").as_deref(), Some(">24 STORED"));
        assert_eq!(
            reply_lines(
                24,
                ReplyKind::Line,
                b"VALUE a 0 1\r\nx\r\nVALUE bb 5 3 77\r\nx\r\n\r\nEND\r\n"
            ),
            [">24 sending key a", ">24 sending key bb", ">24 END"]
        );
        assert_eq!(reply_lines(24, ReplyKind::Line, b"END\r\n"), [">24 END"]);
        assert!(reply_lines(24, ReplyKind::Stats, b"STAT pid 1\r\nEND\r\n").is_empty());
        assert!(reply_lines(24, ReplyKind::Stats, b"END\r\n").is_empty());
        assert_eq!(
            reply_lines(24, ReplyKind::Stats, b"RESET\r\n"),
            [">24 RESET"]
        );
        assert!(reply_lines(24, ReplyKind::Silent, b"VA 1\r\nx\r\n").is_empty());
        assert_eq!(ReplyKind::of(b"mg a v\r\n"), ReplyKind::Silent);
        assert_eq!(ReplyKind::of(b"mn\r\n"), ReplyKind::Line);
        assert_eq!(ReplyKind::of(b"stats detail on\r\n"), ReplyKind::Stats);
        assert_eq!(reply_line(24, b""), None);
        let long = vec![b'k'; 3 * MAX_LOGGED_LINE_BYTES];
        assert_eq!(
            request_line(1, &long).len(),
            "<1 ".len() + MAX_LOGGED_LINE_BYTES
        );
    }

    #[test]
    fn binary_lines_look_like_memcached_s() {
        let mut set = vec![0x80, 0x01, 0, 1, 8, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 7];
        set.extend_from_slice(&[0; 8]);
        set.extend_from_slice(&[0; 8]);
        set.extend_from_slice(b"k v");
        assert_eq!(
            binary_command_line(24, &set).as_deref(),
            Some("<24 SET k Value len is 1")
        );
        assert_eq!(
            header_rows("<24   ", &set[..8]),
            "\n<24    0x80 0x01 0x00 0x01\n<24    0x08 0x00 0x00 0x00"
        );
    }

    #[test]
    fn nothing_is_logged_below_verbosity_two() {
        let engine = mrcache_engine::Engine::new(mrcache_engine::EngineConfig::default()).unwrap();
        let ctx = ServerContext::new(engine, crate::settings::Settings::default(), 1);
        for level in 0..LOG_COMMANDS_VERBOSITY {
            ctx.verbosity.store(level, Relaxed);
            assert!(RequestLog::text(&ctx, 3, b"mn\r\n", b"").is_none());
        }
        ctx.verbosity.store(LOG_COMMANDS_VERBOSITY, Relaxed);
        let log = RequestLog::text(&ctx, 3, b"mn\r\n", b"xx").expect("logging");
        assert_eq!(log.reply_start, 2);
    }
}
