//! The conformance case-file format: parsing, and matching replies against
//! expectations.
//!
//! ```text
//! # A comment. Blank lines are ignored.
//! @server -B ascii        start a fresh server with these extra flags; the
//!                         following cases run against it (until the next @server)
//! === name of the case    a case starts; its name is unique in the file
//! > set k 0 0 1           bytes to send, escapes expanded, then \r\n appended
//! >> get k\n              bytes to send exactly as written (no \r\n appended)
//! < STORED                expected reply bytes, then \r\n appended
//! << VALUE\s              expected reply bytes exactly as written
//! @close                  the server must close the connection after replying
//! ```
//!
//! One space after the marker is a separator; every other byte of the line is
//! data. Escapes, in sends and expectations:
//! `\r \n \t \0 \\`, `\s` (a space, for trailing spaces), `\xHH` (any byte),
//! `\{COUNT*TEXT}` (TEXT, which may hold escapes but no `}`, repeated COUNT
//! times) and `\{$var}`
//! (the value of a variable captured earlier in the same server section).
//!
//! Holes, in expectations only, for fields that legitimately differ between
//! servers (each use is explained next to it in the case files):
//! - `\{*}`: any bytes up to the next `\r` or `\n` (possibly none);
//! - `\{n}`: a decimal integer, optionally negative;
//! - `\{n=var}`: the same, captured as `var` for later sends (CAS values);
//! - `\{stats}`: zero or more `STAT <name> <value>\r\n` lines, values unchecked,
//!   extra names allowed; `\{stats:a,b}` also requires the names `a` and `b`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::case_file;

/// A group of cases that run, in order, against one freshly started server.
pub type Section = case_file::Section<Case>;

/// One request/reply exchange.
pub type Case = case_file::Case<Piece, Piece>;

/// A parsed fragment of a send or an expectation.
#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    Literal(Vec<u8>),
    Variable(String),
    AnyInLine,
    Integer { capture: Option<String> },
    Stats { required: Vec<String> },
}

/// Reads one case file into sections. Cases before the first `@server` run
/// against a server with no extra flags.
pub fn parse_file(path: &Path) -> Result<Vec<Section>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = path.file_name().unwrap_or_default().to_string_lossy();
    let lines = bytes
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    case_file::parse_sections(&file, lines, |case, line| {
        let (target, body, crlf, holes) = if let Some(body) = line.strip_prefix(b">>") {
            (&mut case.send, body, false, false)
        } else if let Some(body) = line.strip_prefix(b">") {
            (&mut case.send, body, true, false)
        } else if let Some(body) = line.strip_prefix(b"<<") {
            (&mut case.expect, body, false, true)
        } else if let Some(body) = line.strip_prefix(b"<") {
            (&mut case.expect, body, true, true)
        } else {
            return Err("unknown line; expected ===, >, >>, <, <<, @close, @server or #".into());
        };
        let body = body.strip_prefix(b" ").unwrap_or(body);
        let mut pieces = parse_escaped(body, holes)?;
        if crlf {
            pieces.push(Piece::Literal(b"\r\n".to_vec()));
        }
        target.extend(pieces);
        Ok(())
    })
}

/// Expands escapes in one line; `holes` allows the expectation-only pieces.
fn parse_escaped(text: &[u8], holes: bool) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut literal = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let byte = text[i];
        i += 1;
        if byte != b'\\' {
            literal.push(byte);
            continue;
        }
        let escape = *text.get(i).ok_or("a line ends in a lone backslash")?;
        i += 1;
        match escape {
            b'r' => literal.push(b'\r'),
            b'n' => literal.push(b'\n'),
            b't' => literal.push(b'\t'),
            b'0' => literal.push(0),
            b's' => literal.push(b' '),
            b'\\' => literal.push(b'\\'),
            b'x' => {
                let hex = text.get(i..i + 2).ok_or("\\x needs two hex digits")?;
                let hex = std::str::from_utf8(hex).map_err(|_| "\\x needs two hex digits")?;
                literal.push(u8::from_str_radix(hex, 16).map_err(|_| "bad \\x escape")?);
                i += 2;
            }
            b'{' => {
                let len = text[i..]
                    .iter()
                    .position(|&b| b == b'}')
                    .ok_or("unclosed \\{")?;
                let inner = String::from_utf8_lossy(&text[i..i + len]).into_owned();
                i += len + 1;
                let piece = parse_brace(&inner, holes)?;
                match piece {
                    Piece::Literal(bytes) => literal.extend(bytes),
                    other => {
                        if !literal.is_empty() {
                            pieces.push(Piece::Literal(std::mem::take(&mut literal)));
                        }
                        pieces.push(other);
                    }
                }
            }
            other => return Err(format!("unknown escape \\{}", other as char)),
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

/// Parses the inside of `\{...}`.
fn parse_brace(inner: &str, holes: bool) -> Result<Piece, String> {
    if let Some(name) = inner.strip_prefix('$') {
        return Ok(Piece::Variable(name.to_owned()));
    }
    if let Some((count, text)) = inner.split_once('*').filter(|(c, _)| !c.is_empty()) {
        let count: usize = count
            .parse()
            .map_err(|_| format!("bad repeat count in \\{{{inner}}}"))?;
        let unit = match parse_escaped(text.as_bytes(), false)?.as_slice() {
            [] => Vec::new(),
            [Piece::Literal(bytes)] => bytes.clone(),
            _ => {
                return Err(format!(
                    "only literal text can be repeated in \\{{{inner}}}"
                ))
            }
        };
        return Ok(Piece::Literal(unit.repeat(count)));
    }
    let hole = match inner {
        "*" => Piece::AnyInLine,
        "n" => Piece::Integer { capture: None },
        "stats" => Piece::Stats {
            required: Vec::new(),
        },
        _ if inner.starts_with("n=") => Piece::Integer {
            capture: Some(inner[2..].to_owned()),
        },
        _ if inner.starts_with("stats:") => Piece::Stats {
            required: inner[6..].split(',').map(str::to_owned).collect(),
        },
        _ => return Err(format!("unknown \\{{{inner}}}")),
    };
    if !holes {
        return Err(format!("\\{{{inner}}} is only allowed in expectations"));
    }
    Ok(hole)
}

/// The bytes to send, with variables substituted.
pub fn render_send(pieces: &[Piece], vars: &HashMap<String, Vec<u8>>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Literal(bytes) => out.extend_from_slice(bytes),
            Piece::Variable(name) => out.extend_from_slice(
                vars.get(name)
                    .ok_or_else(|| format!("variable {name} was never captured"))?,
            ),
            other => return Err(format!("{other:?} cannot be sent")),
        }
    }
    Ok(out)
}

/// Matches `actual` against the expectation. On success the captured
/// variables are added to `vars`; on failure the error says where it diverged.
pub fn match_reply(
    expect: &[Piece],
    actual: &[u8],
    vars: &mut HashMap<String, Vec<u8>>,
) -> Result<(), String> {
    let mut captured = Vec::new();
    let mut pos = 0;
    for piece in expect {
        let rest = &actual[pos..];
        let diverged = |what: &str| {
            Err(format!(
                "at byte {pos}: expected {what}, found \"{}\"",
                escape_bytes(&rest[..rest.len().min(80)])
            ))
        };
        match piece {
            Piece::Literal(bytes) => {
                if !rest.starts_with(bytes) {
                    return diverged(&format!(
                        "\"{}\"",
                        escape_bytes(&bytes[..bytes.len().min(80)])
                    ));
                }
                pos += bytes.len();
            }
            Piece::Variable(name) => {
                let value = vars
                    .get(name)
                    .ok_or_else(|| format!("variable {name} was never captured"))?;
                if !rest.starts_with(value) {
                    return diverged(&format!("${name} = \"{}\"", escape_bytes(value)));
                }
                pos += value.len();
            }
            Piece::AnyInLine => {
                pos += rest
                    .iter()
                    .position(|&b| b == b'\r' || b == b'\n')
                    .unwrap_or(rest.len());
            }
            Piece::Integer { capture } => {
                let sign = usize::from(rest.first() == Some(&b'-'));
                let digits = rest[sign..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits == 0 {
                    return diverged("an integer");
                }
                if let Some(name) = capture {
                    captured.push((name.clone(), rest[..sign + digits].to_vec()));
                }
                pos += sign + digits;
            }
            Piece::Stats { required } => {
                let mut seen = Vec::new();
                while actual[pos..].starts_with(b"STAT ") {
                    let line_len = match actual[pos..].windows(2).position(|w| w == b"\r\n") {
                        Some(len) => len,
                        None => return Err(format!("at byte {pos}: unterminated STAT line")),
                    };
                    let line = &actual[pos + 5..pos + line_len];
                    let name_len = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
                    if name_len == 0 || name_len == line.len() {
                        return Err(format!(
                            "at byte {pos}: STAT line without `name value`: \"{}\"",
                            escape_bytes(line)
                        ));
                    }
                    seen.push(String::from_utf8_lossy(&line[..name_len]).into_owned());
                    pos += line_len + 2;
                }
                let missing: Vec<_> = required
                    .iter()
                    .filter(|name| !seen.contains(name))
                    .collect();
                if !missing.is_empty() {
                    return Err(format!("stats reply lacks required names {missing:?}"));
                }
            }
        }
    }
    if pos != actual.len() {
        return Err(format!(
            "at byte {pos}: expected the end of the reply, found \"{}\"",
            escape_bytes(&actual[pos..actual.len().min(pos + 80)])
        ));
    }
    vars.extend(captured);
    Ok(())
}

/// How many whole `MN\r\n` lines the literal parts of an expectation hold.
pub fn count_mn_lines(expect: &[Piece]) -> usize {
    let mut text = Vec::new();
    for piece in expect {
        match piece {
            Piece::Literal(bytes) => text.extend_from_slice(bytes),
            // Holes never produce a whole MN line; a placeholder keeps them apart.
            _ => text.push(b'?'),
        }
    }
    text.split(|&b| b == b'\n')
        .filter(|line| *line == b"MN\r")
        .count()
}

/// Renders an expectation in case-file syntax, for failure messages.
pub fn render_expect(pieces: &[Piece]) -> String {
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Literal(bytes) => out.push_str(&escape_bytes(bytes)),
            Piece::Variable(name) => write!(out, "\\{{${name}}}").unwrap(),
            Piece::AnyInLine => out.push_str("\\{*}"),
            Piece::Integer { capture: None } => out.push_str("\\{n}"),
            Piece::Integer {
                capture: Some(name),
            } => write!(out, "\\{{n={name}}}").unwrap(),
            Piece::Stats { required } if required.is_empty() => out.push_str("\\{stats}"),
            Piece::Stats { required } => write!(out, "\\{{stats:{}}}", required.join(",")).unwrap(),
        }
    }
    out
}

/// Escapes bytes in case-file syntax; runs of 16 or more equal bytes are
/// shortened to `\{COUNT*c}` so megabyte values stay readable.
pub fn escape_bytes(bytes: &[u8]) -> String {
    case_file::escape_runs(bytes, |byte, out| match byte {
        b'\r' => out.push_str("\\r"),
        b'\n' => out.push_str("\\n"),
        b'\t' => out.push_str("\\t"),
        b'\\' => out.push_str("\\\\"),
        0x20..=0x7e => out.push(byte as char),
        _ => write!(out, "\\x{byte:02x}").unwrap(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect(text: &str) -> Vec<Piece> {
        parse_escaped(text.as_bytes(), true).unwrap()
    }

    #[test]
    fn escapes_expand() {
        let pieces = parse_escaped(br"a\r\n\x80\s\{3*ab}\{2*\r\n}\\", false).unwrap();
        assert_eq!(
            pieces,
            vec![Piece::Literal(b"a\r\n\x80 ababab\r\n\r\n\\".to_vec())]
        );
    }

    #[test]
    fn holes_match_and_capture() {
        let mut vars = HashMap::new();
        let pattern = expect(r"VALUE k 0 1 \{n=cas}\r\nx\r\n\{stats:pid}END\r\n");
        let reply = b"VALUE k 0 1 42\r\nx\r\nSTAT pid 7\r\nSTAT extra 1 2\r\nEND\r\n";
        match_reply(&pattern, reply, &mut vars).unwrap();
        assert_eq!(vars["cas"], b"42");
        assert!(match_reply(&pattern, b"VALUE k 0 1 x\r\n", &mut vars).is_err());
        assert!(match_reply(&expect(r"\{stats:uptime}END\r\n"), b"END\r\n", &mut vars).is_err());
    }

    #[test]
    fn holes_are_refused_in_sends() {
        assert!(parse_escaped(br"\{n}", false).is_err());
        assert!(parse_escaped(br"\{$cas}", false).is_ok());
    }
}
