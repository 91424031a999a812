//! Reply composition: every function appends to a `Vec<u8>` the caller owns (one buffer per connection,
//! reused), so composing a reply allocates only when that buffer grows.

use crate::base64;

/// `<text>\r\n`.
pub fn line(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `END\r\n`.
pub fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"END\r\n");
}

/// A decimal number.
pub fn push_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// A signed decimal number.
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// `<n>\r\n` (incr/decr).
pub fn number_line(out: &mut Vec<u8>, v: u64) {
    push_u64(out, v);
    out.extend_from_slice(b"\r\n");
}

/// `VALUE <key> <flags> <bytes>[ <cas>]\r\n<data>\r\n`.
pub fn value(out: &mut Vec<u8>, key: &[u8], client_flags: u32, data: &[u8], cas: Option<u64>) {
    out.extend_from_slice(b"VALUE ");
    out.extend_from_slice(key);
    out.push(b' ');
    push_u64(out, u64::from(client_flags));
    out.push(b' ');
    push_u64(out, data.len() as u64);
    if let Some(cas) = cas {
        out.push(b' ');
        push_u64(out, cas);
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

/// A meta return flag with a number: ` <flag><n>`.
pub fn meta_u64(out: &mut Vec<u8>, flag: u8, v: u64) {
    out.push(b' ');
    out.push(flag);
    push_u64(out, v);
}

/// A meta return flag with a signed number: ` <flag><n>` (`t-1`).
pub fn meta_i64(out: &mut Vec<u8>, flag: u8, v: i64) {
    out.push(b' ');
    out.push(flag);
    push_i64(out, v);
}

/// A bare meta return flag: ` <flag>` (`W`, `X`, `Z`).
pub fn meta_bare(out: &mut Vec<u8>, flag: u8) {
    out.push(b' ');
    out.push(flag);
}

/// An echoed token, e.g. the opaque `O…` as the client sent it.
pub fn meta_token(out: &mut Vec<u8>, token: &[u8]) {
    out.push(b' ');
    out.extend_from_slice(token);
}

/// The key echo: ` k<key>`, or for a binary key ` k<base64> b` (memcached's `META_KEY`).
pub fn meta_key(out: &mut Vec<u8>, key: &[u8], binary: bool) {
    out.extend_from_slice(b" k");
    if binary {
        base64::encode(key, out);
        out.extend_from_slice(b" b");
    } else {
        out.extend_from_slice(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_lines() {
        let mut out = Vec::new();
        value(&mut out, b"k", 5, b"hi", None);
        value(&mut out, b"k", 0, b"", Some(12));
        end(&mut out);
        assert_eq!(out, b"VALUE k 5 2\r\nhi\r\nVALUE k 0 0 12\r\n\r\nEND\r\n");
    }

    #[test]
    fn numbers_and_meta_flags() {
        let mut out = Vec::new();
        number_line(&mut out, u64::MAX);
        assert_eq!(out, b"18446744073709551615\r\n");
        let mut out = b"HD".to_vec();
        meta_i64(&mut out, b't', -1);
        meta_u64(&mut out, b'c', 0);
        meta_key(&mut out, b"foob", true);
        meta_key(&mut out, b"a", false);
        meta_token(&mut out, b"O123");
        meta_bare(&mut out, b'W');
        assert_eq!(out, b"HD t-1 c0 kZm9vYg== b ka O123 W");
        let mut out = Vec::new();
        push_i64(&mut out, i64::MIN);
        line(&mut out, "");
        assert_eq!(out, b"-9223372036854775808\r\n");
    }
}
