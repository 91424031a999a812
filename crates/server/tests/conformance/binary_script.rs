//! The binary-protocol conformance case format: one packet per line, by field, so a reader sees what
//! was sent and answered without decoding hex; parsing, encoding requests, and matching replies.
//!
//! ```text
//! # A comment. Blank lines are ignored.
//! @server -B binary       start a fresh server with these extra flags (as in the text cases)
//! === name of the case    a case starts; its name is unique among all binary case files
//! > set key=k flags=5 value=abc opaque=7     a request packet (fields below)
//! >> 80 0a 00 00 ...      raw bytes, in hex (spaces ignored): malformed packets
//! < set cas=?c1 opaque=7  an expected reply packet
//! < stats                 zero or more `stat` reply packets with a non-empty key (values unchecked)
//! < stats:pid,uptime      the same, and these keys must be among them
//! @close                  the server must close the connection after replying
//! ```
//!
//! The first word of a `>` or `<` line is the opcode: memcached's name (`get`, `getkq`, `setq`,
//! `incr`, `flushq`, `sasl_auth`, …) or `0xNN`. Request fields: `key=`, `value=` (escaped text:
//! `\s` space, `\xHH` any byte, `\{N*c}` c repeated N times), `extras=HEX`, `opaque=N`, `cas=N` or
//! `cas=$var`, and the extras by name: `flags=N exptime=N` (set/add/replace: 8 bytes, both default 0),
//! `delta=N initial=N exptime=N` (incr/decr: 20 bytes), `exptime=N` (touch/gat/flush: 4 bytes);
//! `keylen= extlen= bodylen=` override the header's lengths. Reply fields: `status=` (`ok`,
//! `not_found`, `exists`, `too_large`, `invalid`, `not_stored`, `non_numeric`, `auth_error`,
//! `unknown`, `no_memory`, or `0xNN`; default `ok`, and an error status's value defaults to
//! memcached's message), `key=`, `extras=HEX` or `flags=N` (4 bytes), `value=` or `u64=N` (8 bytes)
//! or `value=*` (any), `opaque=N`, and `cas=N` (default 0), `cas=*` (any: a field that legitimately
//! differs between servers), `cas=?var` (any, captured), `cas=$var` (equal to a captured one).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::case_file;

pub const HEADER_LEN: usize = 24;

/// A group of cases that run, in order, against one freshly started server.
pub type Section = case_file::Section<Case>;

/// Request packets (or raw bytes) and the reply packets they must get.
pub type Case = case_file::Case<Send, Expect>;

/// A request packet or raw bytes.
#[derive(Debug, Clone)]
pub enum Send {
    Raw(Vec<u8>),
    Packet {
        opcode: u8,
        key: Vec<u8>,
        extras: Vec<u8>,
        value: Vec<u8>,
        opaque: u32,
        cas: CasSend,
        keylen: Option<u16>,
        extlen: Option<u8>,
        bodylen: Option<u32>,
    },
}

#[derive(Debug, Clone)]
pub enum CasSend {
    Value(u64),
    Var(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum CasExpect {
    Value(u64),
    Any,
    Capture(String),
    Var(String),
}

#[derive(Debug, Clone)]
pub enum Expect {
    Packet {
        opcode: u8,
        status: u16,
        key: Vec<u8>,
        extras: Vec<u8>,
        /// `None`: any value.
        value: Option<Vec<u8>>,
        opaque: u32,
        cas: CasExpect,
    },
    Stats {
        opcode: u8,
        required: Vec<String>,
    },
}

/// One reply packet as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub magic: u8,
    pub opcode: u8,
    pub status: u16,
    pub datatype: u8,
    pub extras: Vec<u8>,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub opaque: u32,
    pub cas: u64,
}

const OPCODES: &[(&str, u8)] = &[
    ("get", 0x00),
    ("set", 0x01),
    ("add", 0x02),
    ("replace", 0x03),
    ("delete", 0x04),
    ("incr", 0x05),
    ("decr", 0x06),
    ("quit", 0x07),
    ("flush", 0x08),
    ("getq", 0x09),
    ("noop", 0x0a),
    ("version", 0x0b),
    ("getk", 0x0c),
    ("getkq", 0x0d),
    ("append", 0x0e),
    ("prepend", 0x0f),
    ("stat", 0x10),
    ("setq", 0x11),
    ("addq", 0x12),
    ("replaceq", 0x13),
    ("deleteq", 0x14),
    ("incrq", 0x15),
    ("decrq", 0x16),
    ("quitq", 0x17),
    ("flushq", 0x18),
    ("appendq", 0x19),
    ("prependq", 0x1a),
    ("verbosity", 0x1b),
    ("touch", 0x1c),
    ("gat", 0x1d),
    ("gatq", 0x1e),
    ("sasl_list_mechs", 0x20),
    ("sasl_auth", 0x21),
    ("sasl_step", 0x22),
    ("gatk", 0x23),
    ("gatkq", 0x24),
];

const STATUSES: &[(&str, u16, &str)] = &[
    ("ok", 0x00, ""),
    ("not_found", 0x01, "Not found"),
    ("exists", 0x02, "Data exists for key."),
    ("too_large", 0x03, "Too large."),
    ("invalid", 0x04, "Invalid arguments"),
    ("not_stored", 0x05, "Not stored."),
    (
        "non_numeric",
        0x06,
        "Non-numeric server-side value for incr or decr",
    ),
    ("auth_error", 0x20, "Auth failure."),
    ("auth_continue", 0x21, ""),
    ("unknown", 0x81, "Unknown command"),
    ("no_memory", 0x82, "Out of memory"),
];

fn opcode(name: &str) -> Result<u8, String> {
    if let Some(hex) = name.strip_prefix("0x") {
        return u8::from_str_radix(hex, 16).map_err(|_| format!("bad opcode {name}"));
    }
    OPCODES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, op)| *op)
        .ok_or_else(|| format!("unknown opcode {name}"))
}

pub fn opcode_name(op: u8) -> String {
    OPCODES
        .iter()
        .find(|(_, o)| *o == op)
        .map_or_else(|| format!("0x{op:02x}"), |(n, _)| (*n).to_string())
}

fn status(name: &str) -> Result<(u16, &'static str), String> {
    if let Some(hex) = name.strip_prefix("0x") {
        let code = u16::from_str_radix(hex, 16).map_err(|_| format!("bad status {name}"))?;
        return Ok((code, ""));
    }
    STATUSES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, code, message)| (*code, *message))
        .ok_or_else(|| format!("unknown status {name}"))
}

fn status_name(code: u16) -> String {
    STATUSES
        .iter()
        .find(|(_, c, _)| *c == code)
        .map_or_else(|| format!("0x{code:02x}"), |(n, _, _)| (*n).to_string())
}

fn hex(text: &str) -> Result<Vec<u8>, String> {
    let digits: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits in {text}"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).map_err(|_| format!("bad hex {text}")))
        .collect()
}

/// Expands `\s \xHH \\ \r \n \{N*c}` in a field's text.
fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let e = *bytes.get(i).ok_or("a field ends in a lone backslash")?;
        i += 1;
        match e {
            b's' => out.push(b' '),
            b'r' => out.push(b'\r'),
            b'n' => out.push(b'\n'),
            b'0' => out.push(0),
            b'\\' => out.push(b'\\'),
            b'x' => {
                let h = text.get(i..i + 2).ok_or("\\x needs two hex digits")?;
                out.push(u8::from_str_radix(h, 16).map_err(|_| "bad \\x escape")?);
                i += 2;
            }
            b'{' => {
                let len = bytes[i..]
                    .iter()
                    .position(|&c| c == b'}')
                    .ok_or("unclosed \\{")?;
                let inner = &text[i..i + len];
                i += len + 1;
                let (count, unit) = inner.split_once('*').ok_or("\\{N*text} expected")?;
                let count: usize = count.parse().map_err(|_| "bad repeat count")?;
                out.extend(unescape(unit)?.repeat(count));
            }
            other => return Err(format!("unknown escape \\{}", other as char)),
        }
    }
    Ok(out)
}

fn number<T: std::str::FromStr>(field: &str, text: &str) -> Result<T, String> {
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16)
            .ok()
            .and_then(|n| n.to_string().parse().ok()),
        None => text.parse().ok(),
    };
    parsed.ok_or_else(|| format!("bad number for {field}: {text}"))
}

/// Reads one binary case file into sections.
pub fn parse_file(path: &Path) -> Result<Vec<Section>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = path.file_name().unwrap_or_default().to_string_lossy();
    let lines = text.lines().map(|line| line.trim_end().as_bytes());
    case_file::parse_sections(&file, lines, |case, line| {
        let line = std::str::from_utf8(line).map_err(|e| e.to_string())?;
        if let Some(raw) = line.strip_prefix(">>") {
            case.send.push(Send::Raw(hex(raw)?));
        } else if let Some(packet) = line.strip_prefix('>') {
            case.send.push(parse_send(packet.trim())?);
        } else if let Some(packet) = line.strip_prefix('<') {
            case.expect.push(parse_expect(packet.trim())?);
        } else {
            return Err(format!("unknown line {line:?}"));
        }
        Ok(())
    })
}

/// A packet line's `field=value` pairs.
type Fields<'a> = Vec<(&'a str, &'a str)>;

fn fields(text: &str) -> Result<(u8, Fields<'_>), String> {
    let mut words = text.split_whitespace();
    let op = opcode(words.next().ok_or("an empty packet line")?)?;
    let fields = words
        .map(|w| {
            w.split_once('=')
                .ok_or_else(|| format!("{w}: field=value expected"))
        })
        .collect::<Result<_, _>>()?;
    Ok((op, fields))
}

fn parse_send(text: &str) -> Result<Send, String> {
    let (op, fields) = fields(text)?;
    let (mut key, mut value, mut extras) = (Vec::new(), Vec::new(), None);
    let (mut opaque, mut cas) = (0, CasSend::Value(0));
    let (mut keylen, mut extlen, mut bodylen) = (None, None, None);
    let (mut flags, mut exptime, mut delta, mut initial) = (None, None, None, None);
    for (name, v) in fields {
        match name {
            "key" => key = unescape(v)?,
            "value" => value = unescape(v)?,
            "extras" => extras = Some(hex(v)?),
            "opaque" => opaque = number(name, v)?,
            "cas" => {
                cas = match v.strip_prefix('$') {
                    Some(var) => CasSend::Var(var.to_owned()),
                    None => CasSend::Value(number(name, v)?),
                }
            }
            "keylen" => keylen = Some(number(name, v)?),
            "extlen" => extlen = Some(number(name, v)?),
            "bodylen" => bodylen = Some(number(name, v)?),
            "flags" => flags = Some(number::<u32>(name, v)?),
            "exptime" => exptime = Some(number::<u32>(name, v)?),
            "delta" => delta = Some(number::<u64>(name, v)?),
            "initial" => initial = Some(number::<u64>(name, v)?),
            _ => return Err(format!("unknown request field {name}")),
        }
    }
    let extras = match extras {
        Some(e) => e,
        None => match op {
            // set/add/replace and quiet forms: flags, exptime.
            0x01..=0x03 | 0x11..=0x13 => {
                let mut e = flags.unwrap_or(0).to_be_bytes().to_vec();
                e.extend_from_slice(&exptime.unwrap_or(0).to_be_bytes());
                e
            }
            0x05 | 0x06 | 0x15 | 0x16 => {
                let mut e = delta.unwrap_or(0).to_be_bytes().to_vec();
                e.extend_from_slice(&initial.unwrap_or(0).to_be_bytes());
                e.extend_from_slice(&exptime.unwrap_or(0).to_be_bytes());
                e
            }
            _ => exptime
                .map(|t| t.to_be_bytes().to_vec())
                .unwrap_or_default(),
        },
    };
    Ok(Send::Packet {
        opcode: op,
        key,
        extras,
        value,
        opaque,
        cas,
        keylen,
        extlen,
        bodylen,
    })
}

fn parse_expect(text: &str) -> Result<Expect, String> {
    if let Some(rest) = text.strip_prefix("stats") {
        let required = match rest.strip_prefix(':') {
            Some(names) => names.split(',').map(str::to_owned).collect(),
            None if rest.is_empty() => Vec::new(),
            None => return Err(format!("bad stats line {text}")),
        };
        return Ok(Expect::Stats {
            opcode: 0x10,
            required,
        });
    }
    let (op, fields) = fields(text)?;
    let (mut code, mut message) = (0, "");
    let (mut key, mut extras, mut value) = (Vec::new(), Vec::new(), None);
    let (mut opaque, mut cas) = (0, CasExpect::Value(0));
    for (name, v) in fields {
        match name {
            "status" => (code, message) = status(v)?,
            "key" => key = unescape(v)?,
            "extras" => extras = hex(v)?,
            "flags" => extras = number::<u32>(name, v)?.to_be_bytes().to_vec(),
            "value" if v == "*" => value = Some(None),
            "value" => value = Some(Some(unescape(v)?)),
            "u64" => value = Some(Some(number::<u64>(name, v)?.to_be_bytes().to_vec())),
            "opaque" => opaque = number(name, v)?,
            "cas" => {
                cas = match v {
                    "*" => CasExpect::Any,
                    _ if v.starts_with('?') => CasExpect::Capture(v[1..].to_owned()),
                    _ if v.starts_with('$') => CasExpect::Var(v[1..].to_owned()),
                    _ => CasExpect::Value(number(name, v)?),
                }
            }
            _ => return Err(format!("unknown reply field {name}")),
        }
    }
    let value = value.unwrap_or_else(|| Some(message.as_bytes().to_vec()));
    Ok(Expect::Packet {
        opcode: op,
        status: code,
        key,
        extras,
        value,
        opaque,
        cas,
    })
}

/// The bytes of a case's sends, with CAS variables substituted.
pub fn render_send(sends: &[Send], vars: &HashMap<String, u64>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for send in sends {
        match send {
            Send::Raw(bytes) => out.extend_from_slice(bytes),
            Send::Packet {
                opcode,
                key,
                extras,
                value,
                opaque,
                cas,
                keylen,
                extlen,
                bodylen,
            } => {
                let cas = match cas {
                    CasSend::Value(v) => *v,
                    CasSend::Var(name) => *vars
                        .get(name)
                        .ok_or_else(|| format!("cas variable {name} was never captured"))?,
                };
                let body = (key.len() + extras.len() + value.len()) as u32;
                out.extend_from_slice(&[0x80, *opcode]);
                out.extend_from_slice(&keylen.unwrap_or(key.len() as u16).to_be_bytes());
                out.push(extlen.unwrap_or(extras.len() as u8));
                out.extend_from_slice(&[0, 0, 0]);
                out.extend_from_slice(&bodylen.unwrap_or(body).to_be_bytes());
                out.extend_from_slice(&opaque.to_be_bytes());
                out.extend_from_slice(&cas.to_be_bytes());
                out.extend_from_slice(extras);
                out.extend_from_slice(key);
                out.extend_from_slice(value);
            }
        }
    }
    Ok(out)
}

/// Splits whole reply packets off the front of `bytes`; returns them and the bytes left over.
pub fn split_replies(mut bytes: &[u8]) -> (Vec<Reply>, &[u8]) {
    let mut replies = Vec::new();
    while bytes.len() >= HEADER_LEN {
        let h = &bytes[..HEADER_LEN];
        let keylen = u16::from_be_bytes([h[2], h[3]]) as usize;
        let extlen = h[4] as usize;
        let bodylen = u32::from_be_bytes([h[8], h[9], h[10], h[11]]) as usize;
        if bytes.len() < HEADER_LEN + bodylen || keylen + extlen > bodylen {
            break;
        }
        let body = &bytes[HEADER_LEN..HEADER_LEN + bodylen];
        replies.push(Reply {
            magic: h[0],
            opcode: h[1],
            datatype: h[5],
            status: u16::from_be_bytes([h[6], h[7]]),
            extras: body[..extlen].to_vec(),
            key: body[extlen..extlen + keylen].to_vec(),
            value: body[extlen + keylen..].to_vec(),
            opaque: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
            cas: u64::from_be_bytes(h[16..24].try_into().expect("8 bytes")),
        });
        bytes = &bytes[HEADER_LEN + bodylen..];
    }
    (replies, bytes)
}

/// Matches replies against a case's expectations; on success adds the captured CAS values to `vars`.
pub fn match_replies(
    expect: &[Expect],
    replies: &[Reply],
    vars: &mut HashMap<String, u64>,
) -> Result<(), String> {
    let mut captured = Vec::new();
    let mut at = 0;
    for (i, e) in expect.iter().enumerate() {
        match e {
            Expect::Stats { opcode, required } => {
                let mut seen = Vec::new();
                while let Some(r) = replies.get(at) {
                    if r.magic != 0x81 || r.opcode != *opcode || r.status != 0 || r.key.is_empty() {
                        break;
                    }
                    seen.push(String::from_utf8_lossy(&r.key).into_owned());
                    at += 1;
                }
                let missing: Vec<_> = required.iter().filter(|n| !seen.contains(n)).collect();
                if !missing.is_empty() {
                    return Err(format!("stat replies lack {missing:?}"));
                }
            }
            Expect::Packet {
                opcode,
                status,
                key,
                extras,
                value,
                opaque,
                cas,
            } => {
                let Some(r) = replies.get(at) else {
                    return Err(format!("expectation {} has no reply packet", i + 1));
                };
                at += 1;
                let cas_ok = match cas {
                    CasExpect::Value(v) => r.cas == *v,
                    CasExpect::Any => true,
                    CasExpect::Capture(name) => {
                        captured.push((name.clone(), r.cas));
                        true
                    }
                    CasExpect::Var(name) => vars
                        .get(name)
                        .or_else(|| {
                            captured
                                .iter()
                                .rev()
                                .find(|(n, _)| n == name)
                                .map(|(_, v)| v)
                        })
                        .is_some_and(|v| *v == r.cas),
                };
                let ok = r.magic == 0x81
                    && r.opcode == *opcode
                    && r.status == *status
                    && r.datatype == 0
                    && &r.key == key
                    && &r.extras == extras
                    && value.as_ref().is_none_or(|v| *v == r.value)
                    && r.opaque == *opaque
                    && cas_ok;
                if !ok {
                    return Err(format!(
                        "packet {}: expected {}, got {}",
                        at,
                        render_expect(e),
                        render_reply(r)
                    ));
                }
            }
        }
    }
    if at != replies.len() {
        return Err(format!(
            "{} more reply packets than expected, first: {}",
            replies.len() - at,
            render_reply(&replies[at])
        ));
    }
    for (name, value) in captured {
        vars.insert(name, value);
    }
    Ok(())
}

fn escape(bytes: &[u8]) -> String {
    case_file::escape_runs(bytes, |b, out| match b {
        b' ' => out.push_str("\\s"),
        b'\\' => out.push_str("\\\\"),
        0x21..=0x7e => out.push(b as char),
        _ => write!(out, "\\x{b:02x}").unwrap(),
    })
}

fn hex_text(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A received packet in case-file syntax (what `<` would say), for failure messages and recording.
pub fn render_reply(r: &Reply) -> String {
    let mut s = opcode_name(r.opcode);
    if r.magic != 0x81 {
        write!(s, " magic=0x{:02x}", r.magic).unwrap();
    }
    if r.status != 0 {
        write!(s, " status={}", status_name(r.status)).unwrap();
    }
    if !r.key.is_empty() {
        write!(s, " key={}", escape(&r.key)).unwrap();
    }
    if !r.extras.is_empty() {
        write!(s, " extras={}", hex_text(&r.extras)).unwrap();
    }
    let message = STATUSES
        .iter()
        .find(|(_, c, _)| *c == r.status)
        .map(|(_, _, m)| *m);
    if !r.value.is_empty() && message != Some(&*String::from_utf8_lossy(&r.value)) {
        write!(s, " value={}", escape(&r.value)).unwrap();
    }
    if r.opaque != 0 {
        write!(s, " opaque={}", r.opaque).unwrap();
    }
    if r.cas != 0 {
        write!(s, " cas={}", r.cas).unwrap();
    }
    s
}

pub fn render_expect(e: &Expect) -> String {
    match e {
        Expect::Stats { required, .. } => format!("stats:{}", required.join(",")),
        Expect::Packet {
            opcode,
            status,
            key,
            extras,
            value,
            opaque,
            cas,
        } => {
            let mut s = format!("{} status={}", opcode_name(*opcode), status_name(*status));
            write!(s, " key={} extras={}", escape(key), hex_text(extras)).unwrap();
            match value {
                Some(v) => write!(s, " value={}", escape(v)).unwrap(),
                None => s.push_str(" value=*"),
            }
            write!(s, " opaque={opaque} cas={cas:?}").unwrap();
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_renders_and_a_reply_matches() {
        let send = parse_send("setq key=k flags=5 exptime=9 value=a\\sb opaque=7 cas=$c").unwrap();
        let mut vars = HashMap::from([("c".to_string(), 3u64)]);
        let bytes = render_send(&[send], &vars).unwrap();
        assert_eq!(&bytes[..2], &[0x80, 0x11]);
        assert_eq!(bytes.len(), 24 + 8 + 1 + 3);
        assert_eq!(&bytes[24..32], &[0, 0, 0, 5, 0, 0, 0, 9]);
        let reply = Reply {
            magic: 0x81,
            opcode: 0x01,
            status: 1,
            datatype: 0,
            extras: vec![],
            key: vec![],
            value: b"Not found".to_vec(),
            opaque: 7,
            cas: 0,
        };
        let e = parse_expect("set status=not_found opaque=7").unwrap();
        match_replies(&[e], std::slice::from_ref(&reply), &mut vars).unwrap();
        let e = parse_expect("set status=not_found opaque=8").unwrap();
        assert!(match_replies(&[e], &[reply], &mut vars).is_err());
    }
}
