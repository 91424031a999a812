//! What the text and the binary conformance case files have in common (`script.rs`, `binary_script.rs`):
//! sections of cases, the lines that frame them, and the shortened escaping of long runs in messages.
//!
//! ```text
//! # A comment. Blank lines are ignored.
//! @server -B ascii        start a fresh server with these extra flags; the following cases run
//!                         against it (until the next @server)
//! === name of the case    a case starts; its name is unique among the files of its format
//! @close                  the server must close the connection after replying
//! ```
//! Every other line inside a case is the format's own (what to send, what to expect).

use std::fmt::Write as _;

/// A group of cases that run, in order, against one freshly started server.
#[derive(Debug)]
pub struct Section<C> {
    /// Extra server flags, the same for both servers.
    pub flags: Vec<String>,
    pub cases: Vec<C>,
}

/// One exchange: what to send and what the reply must be.
#[derive(Debug)]
pub struct Case<S, E> {
    pub name: String,
    /// `file:line` of the `===` header, for failure messages.
    pub origin: String,
    pub send: Vec<S>,
    pub expect: Vec<E>,
    /// The server must close the connection once it has replied.
    pub closes: bool,
}

/// Splits the lines of the file `file` into sections and cases; every line inside a case that is not
/// `@close` goes to `body`, whose error is reported at the line. Cases before the first `@server` run
/// against a server with no extra flags; sections without cases are dropped.
pub fn parse_sections<'a, S, E>(
    file: &str,
    lines: impl Iterator<Item = &'a [u8]>,
    mut body: impl FnMut(&mut Case<S, E>, &'a [u8]) -> Result<(), String>,
) -> Result<Vec<Section<Case<S, E>>>, String> {
    let mut sections = vec![Section {
        flags: Vec::new(),
        cases: Vec::new(),
    }];
    for (index, line) in lines.enumerate() {
        let origin = format!("{file}:{}", index + 1);
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        if let Some(flags) = line.strip_prefix(b"@server") {
            let flags = String::from_utf8_lossy(flags);
            sections.push(Section {
                flags: flags.split_whitespace().map(str::to_owned).collect(),
                cases: Vec::new(),
            });
            continue;
        }
        let section = sections.last_mut().expect("at least one section");
        if let Some(name) = line.strip_prefix(b"===") {
            let name = String::from_utf8_lossy(name).trim().to_owned();
            if name.is_empty() {
                return Err(format!("{origin}: a case needs a name after ==="));
            }
            section.cases.push(Case {
                name,
                origin,
                send: Vec::new(),
                expect: Vec::new(),
                closes: false,
            });
            continue;
        }
        let Some(case) = section.cases.last_mut() else {
            return Err(format!(
                "{origin}: a line outside a case (missing === header?)"
            ));
        };
        if line == b"@close" {
            case.closes = true;
            continue;
        }
        body(case, line).map_err(|e| format!("{origin}: {e}"))?;
    }
    sections.retain(|s| !s.cases.is_empty());
    Ok(sections)
}

/// Checks what the runners cannot: at least `at_least` cases, unique names, and something sent by each.
pub fn assert_well_formed<S, E>(sections: &[Section<Case<S, E>>], at_least: usize, what: &str) {
    let cases: Vec<&Case<S, E>> = sections.iter().flat_map(|s| &s.cases).collect();
    assert!(cases.len() >= at_least, "only {} {what} cases", cases.len());
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    for pair in names.windows(2) {
        assert_ne!(pair[0], pair[1], "duplicate case name");
    }
    for case in &cases {
        assert!(
            !case.send.is_empty(),
            "{} [{}] sends nothing",
            case.name,
            case.origin
        );
    }
}

/// Escapes `bytes` for a message, byte by byte with `one`, except that runs of 16 or more equal
/// alphanumeric bytes are shortened to `\{COUNT*c}` so megabyte values stay readable.
pub fn escape_runs(bytes: &[u8], one: impl Fn(u8, &mut String)) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        let run = bytes[i..].iter().take_while(|&&b| b == byte).count();
        if run >= 16 && byte.is_ascii_alphanumeric() {
            write!(out, "\\{{{run}*{}}}", byte as char).unwrap();
            i += run;
            continue;
        }
        one(byte, &mut out);
        i += 1;
    }
    out
}
