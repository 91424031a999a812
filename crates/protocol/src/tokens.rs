//! Line framing, memcached's tokenizer and its number parsers.
//!
//! - A line ends at `\n`; a `\r` before it is dropped when the line has at least two bytes (memcached's
//!   `try_read_command_ascii`), and the line is cut at its first NUL byte (memcached tokenizes a C string).
//! - Tokens are separated by spaces only (a tab is part of a token). At most `MAX_TOKENS - 1` tokens are
//!   split; whatever follows stays unsplit (a multi-get re-reads it with [`after_token`]). memcached counts one
//!   more, empty "terminal" token; [`Tokens::ntokens`] reproduces that count for the `WANT_TOKENS` rules.
//! - Numbers follow glibc `strto*` as memcached's `safe_strto*` wrap them: leading whitespace, an optional
//!   sign, decimal digits, then whitespace or the end of the token; unsigned parsers refuse a `-` only when
//!   the result would be negative as signed, and 32-bit results are truncated, not range-checked (1.6.18).

/// memcached's `KEY_MAX_LENGTH`.
pub const KEY_MAX_LENGTH: usize = 250;
/// memcached's `MAX_TOKENS`, counting the terminal token.
pub const MAX_TOKENS: usize = 24;

/// A line split into tokens, borrowed from the request buffer.
#[derive(Clone, Copy, Debug)]
pub struct Tokens<'a> {
    toks: [&'a [u8]; MAX_TOKENS - 1],
    len: usize,
}

impl<'a> Tokens<'a> {
    /// Splits `line` (no line terminator) the way memcached's `tokenize_command` does.
    pub fn split(line: &'a [u8]) -> Tokens<'a> {
        let mut toks: [&'a [u8]; MAX_TOKENS - 1] = [&[]; MAX_TOKENS - 1];
        let mut len = 0;
        let mut start = 0;
        let mut i = 0;
        while i < line.len() {
            if line[i] == b' ' {
                if start != i {
                    toks[len] = &line[start..i];
                    len += 1;
                    if len == MAX_TOKENS - 1 {
                        // The rest of the line stays unsplit (a multi-get reads it with `after_token`).
                        return Tokens { toks, len };
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        if start != line.len() {
            toks[len] = &line[start..];
            len += 1;
        }
        Tokens { toks, len }
    }

    /// memcached's `ntokens`: the split tokens plus the terminal one.
    pub fn ntokens(&self) -> usize {
        self.len + 1
    }

    /// The split tokens.
    pub fn as_slice(&self) -> &[&'a [u8]] {
        &self.toks[..self.len]
    }

    /// Token `i`, or empty past the end (memcached's terminal token has length 0).
    pub fn get(&self, i: usize) -> &'a [u8] {
        if i < self.len {
            self.toks[i]
        } else {
            &[]
        }
    }

    /// memcached's `set_noreply_maybe`: the last split token is exactly `noreply`.
    pub fn noreply(&self) -> bool {
        self.len > 0 && self.toks[self.len - 1] == b"noreply"
    }
}

/// The bytes of `line` after token `i` (which must be a token of `tokens` split from `line`), spaces and all.
pub fn after_token<'a>(line: &'a [u8], token: &'a [u8]) -> &'a [u8] {
    let offset = token.as_ptr() as usize - line.as_ptr() as usize + token.len();
    line.get(offset..).unwrap_or(&[])
}

fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The common core of `strtoul`/`strtol`: (negative, magnitude, ok-so-far). `None` when there are no
/// digits, the magnitude overflows u64, or the digits are followed by something other than whitespace.
fn scan(token: &[u8]) -> Option<(bool, u64)> {
    let mut i = 0;
    while i < token.len() && is_c_space(token[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < token.len() && (token[i] == b'+' || token[i] == b'-') {
        negative = token[i] == b'-';
        i += 1;
    }
    let digits_start = i;
    let mut value: u64 = 0;
    while i < token.len() && token[i].is_ascii_digit() {
        value = value
            .checked_mul(10)?
            .checked_add(u64::from(token[i] - b'0'))?;
        i += 1;
    }
    if i == digits_start {
        return None;
    }
    if i < token.len() && !is_c_space(token[i]) {
        return None;
    }
    Some((negative, value))
}

/// memcached's `safe_strtoull`.
pub fn strtoull(token: &[u8]) -> Option<u64> {
    let (negative, magnitude) = scan(token)?;
    let value = if negative {
        magnitude.wrapping_neg()
    } else {
        magnitude
    };
    if (value as i64) < 0 && token.contains(&b'-') {
        return None;
    }
    Some(value)
}

/// memcached's `safe_strtoul` into a `uint32_t`: as `strtoull`, then truncated to 32 bits.
pub fn strtoul32(token: &[u8]) -> Option<u32> {
    strtoull(token).map(|v| v as u32)
}

/// memcached's `safe_strtol` into an `int32_t`: a `long` in range, then truncated to 32 bits.
pub fn strtol32(token: &[u8]) -> Option<i32> {
    let (negative, magnitude) = scan(token)?;
    let value: i64 = if negative {
        if magnitude > 1u64 << 63 {
            return None;
        }
        (magnitude as i64).wrapping_neg()
    } else {
        i64::try_from(magnitude).ok()?
    };
    Some(value as i32)
}

/// memcached's `safe_strtod` (used by `slabs automove ratio`).
pub fn strtod(token: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(token).ok()?;
    let s = s.trim_start_matches(is_c_space_char);
    let end = s.find(is_c_space_char).unwrap_or(s.len());
    let v: f64 = s[..end].parse().ok()?;
    v.is_finite().then_some(v)
}

fn is_c_space_char(c: char) -> bool {
    c.is_ascii() && is_c_space(c as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_splits_on_spaces_only() {
        let t = Tokens::split(b"  set\ta  b ");
        assert_eq!(t.as_slice(), &[&b"set\ta"[..], b"b"]);
        assert_eq!(t.ntokens(), 3);
        assert_eq!(t.get(5), b"");
    }

    #[test]
    fn tokenizer_caps_at_23_tokens_and_keeps_the_rest() {
        let line = (0..30).map(|i| i.to_string()).collect::<Vec<_>>().join(" ");
        let t = Tokens::split(line.as_bytes());
        assert_eq!(t.ntokens(), MAX_TOKENS);
        assert_eq!(t.get(22), b"22");
        assert_eq!(
            after_token(line.as_bytes(), t.get(22)),
            b" 23 24 25 26 27 28 29"
        );
    }

    #[test]
    fn noreply_is_the_last_token() {
        assert!(Tokens::split(b"set a 0 0 1 noreply").noreply());
        assert!(!Tokens::split(b"set a 0 0 1 norepl").noreply());
        assert!(!Tokens::split(b"").noreply());
    }

    #[test]
    fn numbers_parse_like_safe_strto() {
        assert_eq!(strtoul32(b"4294967295"), Some(u32::MAX));
        assert_eq!(strtoul32(b"4294967296"), Some(0), "1.6.18 truncates");
        assert_eq!(strtoul32(b"-1"), None);
        assert_eq!(strtoul32(b"-0"), Some(0));
        assert_eq!(strtoul32(b"+7"), Some(7));
        assert_eq!(strtoul32(b"5\t"), Some(5));
        assert_eq!(strtoul32(b"\t5"), Some(5));
        assert_eq!(strtoul32(b"5x"), None);
        assert_eq!(strtoul32(b""), None);
        assert_eq!(strtoull(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(strtoull(b"18446744073709551616"), None);
        assert_eq!(strtoull(b"-1"), None);
        assert_eq!(strtol32(b"-1"), Some(-1));
        assert_eq!(strtol32(b"2147483648"), Some(i32::MIN), "wraps like 1.6.18");
        assert_eq!(strtol32(b"4294967297"), Some(1));
        assert_eq!(strtol32(b"9223372036854775808"), None);
        assert_eq!(strtol32(b"-9223372036854775808"), Some(0));
        assert_eq!(strtol32(b"abc"), None);
        assert_eq!(strtod(b"0.8"), Some(0.8));
        assert_eq!(strtod(b"x"), None);
    }

    #[test]
    fn after_token_returns_the_remaining_bytes() {
        let line = b"get a  b";
        let t = Tokens::split(line);
        assert_eq!(after_token(line, t.get(0)), b" a  b");
    }
}
