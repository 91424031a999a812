//! The meta protocol: `mg ms md ma mn me`.
//!
//! `<cm> <key> [<datalen> for ms] <flag>*`. Every meta command shares memcached 1.6.18's flag pre-parser
//! (`_meta_flag_preparse`), so each accepts the union of the flags `b N T R l O P L k s t c f v h u q F C
//! M J D I` and ignores the ones it has no use for; any other flag is `CLIENT_ERROR invalid flag`, a repeat
//! is `CLIENT_ERROR duplicate flag`, and a flag's bad value sets an error but parsing continues (the last
//! message wins). mg and ms report the pre-parser's message; md and ma always say
//! `CLIENT_ERROR invalid or duplicate flag`. An `O` token over 32 bytes is
//! `CLIENT_ERROR opaque token too long` (memcached finds it while writing the reply, after side effects;
//! we find it before any, a harmless difference). ms errors found after its length is known swallow the
//! data block; earlier ones do not.

use crate::base64;
use crate::parse::{Limits, Line};
use crate::request::{
    ErrorReply, MetaArith, MetaDebug, MetaDelete, MetaGet, MetaSet, Parsed, Request,
};
use crate::storage::read_data;
use crate::tokens::{strtol32, strtoul32, strtoull, KEY_MAX_LENGTH};

/// memcached's `MFLAG_MAX_OPT_LENGTH`: more tokens than this (counting the terminal one) is refused.
const MAX_META_TOKENS: usize = 20;
/// memcached's `MFLAG_MAX_OPAQUE_LENGTH`: the whole `O…` token.
const MAX_OPAQUE_TOKEN: usize = 32;
/// A 250-byte base64 key decodes to at most 187 bytes.
const MAX_DECODED_KEY: usize = KEY_MAX_LENGTH / 4 * 3;

const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";

/// A meta key: as sent, or decoded from base64 (`b`) into an inline buffer.
#[derive(Clone, Copy, Debug)]
pub struct MetaKey<'a> {
    raw: &'a [u8],
    decoded: [u8; MAX_DECODED_KEY],
    decoded_len: u8,
    binary: bool,
}

impl<'a> MetaKey<'a> {
    fn plain(raw: &'a [u8]) -> MetaKey<'a> {
        MetaKey {
            raw,
            decoded: [0; MAX_DECODED_KEY],
            decoded_len: 0,
            binary: false,
        }
    }

    /// Decodes a base64 key; `None` if it is not valid base64.
    fn decode(&mut self) -> Option<()> {
        let n = base64::decode(self.raw, &mut self.decoded)?;
        self.decoded_len = n as u8;
        self.binary = true;
        Some(())
    }

    /// The key to look up.
    pub fn bytes(&self) -> &[u8] {
        if self.binary {
            &self.decoded[..usize::from(self.decoded_len)]
        } else {
            self.raw
        }
    }

    /// Whether the client sent it base64-encoded (`b`); echoes re-encode it.
    pub fn is_binary(&self) -> bool {
        self.binary
    }
}

/// ms's mode (`M` flag).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MetaMode {
    /// `MS`, the default: store unconditionally.
    Set,
    /// `ME`: store only if the key is absent.
    Add,
    /// `MA`: append to the existing value.
    Append,
    /// `MP`: prepend to the existing value.
    Prepend,
    /// `MR`: store only if the key is present.
    Replace,
}

/// One flag token as the client sent it, for replies that echo flags in the client's order.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MetaFlag<'a> {
    /// The flag letter.
    pub letter: u8,
    /// The whole token, letter included (`O123`).
    pub token: &'a [u8],
}

/// The pre-parsed flags of one meta command.
#[derive(Clone, Copy, Debug)]
pub struct MetaFlags<'a> {
    tokens: [&'a [u8]; MAX_META_TOKENS],
    count: usize,
    /// `N<ttl>`: create the item on a miss, with this exptime.
    pub vivify: Option<i64>,
    /// `T<ttl>`: set the exptime.
    pub ttl: Option<i64>,
    /// `R<ttl>`: win the recache when the remaining TTL is below this.
    pub recache: Option<i64>,
    /// `v`: return the value.
    pub value: bool,
    /// `u`: do not bump the LRU.
    pub no_update: bool,
    /// `q`: hide the nominal reply.
    pub quiet: bool,
    /// `F<flags>` (ms).
    pub client_flags: u32,
    /// `C<cas>`: compare.
    pub cas: Option<u64>,
    /// `M<mode>`: the mode byte as sent.
    pub mode: Option<u8>,
    /// `J<n>` (ma): the initial value when vivifying; 0 by default.
    pub initial: u64,
    /// `D<n>` (ma): the delta; 1 by default.
    pub delta: u64,
    /// `I`: invalidate (ms: a stale CAS still stores; md: mark stale instead of deleting).
    pub invalidate: bool,
}

impl<'a> MetaFlags<'a> {
    /// The flags in the order the client sent them.
    pub fn iter(&self) -> impl Iterator<Item = MetaFlag<'a>> + '_ {
        self.tokens[..self.count].iter().map(|t| MetaFlag {
            letter: t[0],
            token: t,
        })
    }

    /// Whether flag `letter` was sent.
    pub fn has(&self, letter: u8) -> bool {
        self.iter().any(|f| f.letter == letter)
    }
}

/// memcached's `_meta_flag_preparse` over `flags`, decoding the key when `b` is present.
fn preparse<'a>(flags: &[&'a [u8]], key: &mut MetaKey<'a>) -> Result<MetaFlags<'a>, &'static str> {
    let mut of = MetaFlags {
        tokens: [&[]; MAX_META_TOKENS],
        count: 0,
        vivify: None,
        ttl: None,
        recache: None,
        value: false,
        no_update: false,
        quiet: false,
        client_flags: 0,
        cas: None,
        mode: None,
        initial: 0,
        delta: 1,
        invalidate: false,
    };
    let mut seen = [false; 128];
    let mut error: Option<&'static str> = None;
    for &token in flags {
        let letter = token[0];
        if letter >= 127 || seen[usize::from(letter)] {
            return Err("CLIENT_ERROR duplicate flag");
        }
        seen[usize::from(letter)] = true;
        let arg = &token[1..];
        let ttl = || {
            strtol32(arg)
                .map(i64::from)
                .ok_or("CLIENT_ERROR bad token in command line format")
        };
        match letter {
            b'b' => {
                if key.decode().is_none() {
                    error = Some("CLIENT_ERROR error decoding key");
                }
            }
            b'N' => match ttl() {
                Ok(t) => of.vivify = Some(t),
                Err(e) => error = Some(e),
            },
            b'T' => match ttl() {
                Ok(t) => of.ttl = Some(t),
                Err(e) => error = Some(e),
            },
            b'R' => match ttl() {
                Ok(t) => of.recache = Some(t),
                Err(e) => error = Some(e),
            },
            b'l' | b'O' | b'P' | b'L' | b'k' | b's' | b't' | b'c' | b'f' | b'h' => {}
            b'v' => of.value = true,
            b'u' => of.no_update = true,
            b'q' => of.quiet = true,
            b'F' => match strtoul32(arg) {
                Some(f) => of.client_flags = f,
                // memcached sets no message here: the command's default stands.
                None => error = Some(BAD_FORMAT),
            },
            b'C' => match strtoull(arg) {
                Some(c) => of.cas = Some(c),
                None => error = Some("CLIENT_ERROR bad token in command line format"),
            },
            b'M' => {
                if token.len() != 2 {
                    error = Some("CLIENT_ERROR incorrect length for M token");
                } else {
                    of.mode = Some(token[1]);
                }
            }
            b'J' => match strtoull(arg) {
                Some(v) => of.initial = v,
                None => error = Some("CLIENT_ERROR invalid numeric initial value"),
            },
            b'D' => match strtoull(arg) {
                Some(v) => of.delta = v,
                None => error = Some("CLIENT_ERROR invalid numeric delta value"),
            },
            b'I' => of.invalidate = true,
            _ => return Err("CLIENT_ERROR invalid flag"),
        }
        of.tokens[of.count] = token;
        of.count += 1;
    }
    match error {
        Some(e) => Err(e),
        None => Ok(of),
    }
}

fn opaque_too_long(flags: &MetaFlags<'_>) -> bool {
    flags
        .iter()
        .any(|f| f.letter == b'O' && f.token.len() > MAX_OPAQUE_TOKEN)
}

pub(crate) fn parse<'a>(line: &Line<'a>, limits: &Limits) -> Parsed<'a> {
    let t = &line.tokens;
    let command = t.get(0)[1];
    match command {
        b'n' => {
            return Parsed::Request {
                request: Request::MetaNoop,
                consumed: line.len,
            }
        }
        b'e' => return parse_debug(line),
        b'g' | b's' | b'd' | b'a' => {}
        _ => return line.error("ERROR", false),
    }
    if t.ntokens() < 3 {
        return line.error("ERROR", false);
    }
    let raw_key = t.get(1);
    if raw_key.len() > KEY_MAX_LENGTH {
        return line.error(BAD_FORMAT, false);
    }
    if command == b's' {
        return parse_set(line, limits);
    }
    if t.ntokens() > MAX_META_TOKENS {
        let msg = if command == b'g' {
            "CLIENT_ERROR options flags are too long"
        } else {
            "CLIENT_ERROR options flags too long"
        };
        return line.error(msg, false);
    }
    let mut key = MetaKey::plain(raw_key);
    let flags = match preparse(&t.as_slice()[2..], &mut key) {
        Ok(f) => f,
        Err(e) if command == b'g' => return line.error(e, false),
        Err(_) => return line.error("CLIENT_ERROR invalid or duplicate flag", false),
    };
    if opaque_too_long(&flags) {
        return line.error("CLIENT_ERROR opaque token too long", false);
    }
    let request = match command {
        b'g' => Request::MetaGet(MetaGet { key, flags }),
        b'd' => Request::MetaDelete(MetaDelete { key, flags }),
        _ => {
            let incr = match flags.mode {
                None | Some(b'I' | b'i' | b'+') => true,
                Some(b'D' | b'd' | b'-') => false,
                Some(_) => return line.error("CLIENT_ERROR invalid mode for ma M token", false),
            };
            Request::MetaArith(MetaArith { key, flags, incr })
        }
    };
    Parsed::Request {
        request,
        consumed: line.len,
    }
}

fn parse_set<'a>(line: &Line<'a>, limits: &Limits) -> Parsed<'a> {
    let t = &line.tokens;
    if t.ntokens() == 3 {
        return line.error(BAD_FORMAT, false);
    }
    if t.ntokens() > MAX_META_TOKENS {
        return line.error("CLIENT_ERROR options flags too long", false);
    }
    let length = match strtol32(t.get(2)) {
        Some(n) if (0..=i32::MAX - 2).contains(&n) => n as usize,
        _ => return line.error(BAD_FORMAT, false),
    };
    let swallowing = |msg: &'static str| {
        Parsed::Error(ErrorReply {
            line: msg,
            consumed: line.len,
            noreply: false,
            swallow: length + 2,
        })
    };
    let mut key = MetaKey::plain(t.get(1));
    let flags = match preparse(&t.as_slice()[3..], &mut key) {
        Ok(f) => f,
        Err(e) => return swallowing(e),
    };
    if opaque_too_long(&flags) {
        return swallowing("CLIENT_ERROR opaque token too long");
    }
    let mode = match flags.mode {
        None | Some(b'S') => MetaMode::Set,
        Some(b'E') => MetaMode::Add,
        Some(b'A') => MetaMode::Append,
        Some(b'P') => MetaMode::Prepend,
        Some(b'R') => MetaMode::Replace,
        Some(_) => return swallowing("CLIENT_ERROR invalid mode for ms M token"),
    };
    let fits = limits.item_fits(key.bytes().len(), flags.client_flags, length);
    // ms reports a bad chunk even with q.
    let (data, consumed) = match read_data(line, fits, limits, length, false) {
        Ok(read) => read,
        Err(unread) => return unread.into(),
    };
    Parsed::Request {
        request: Request::MetaSet(MetaSet {
            key,
            flags,
            mode,
            data,
        }),
        consumed,
    }
}

/// `me <key> [b]`: a missing or long key is `CLIENT_ERROR bad command line format`, as is a `b` key that
/// does not decode (1.6.18's measured reply).
fn parse_debug<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    if t.ntokens() < 3 || t.get(1).len() > KEY_MAX_LENGTH {
        return line.error(BAD_FORMAT, false);
    }
    let mut key = MetaKey::plain(t.get(1));
    if t.ntokens() >= 4 && t.get(2) == b"b" && key.decode().is_none() {
        return line.error(BAD_FORMAT, false);
    }
    Parsed::Request {
        request: Request::MetaDebug(MetaDebug { key }),
        consumed: line.len,
    }
}

#[cfg(test)]
mod tests;
