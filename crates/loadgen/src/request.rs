//! Client-side encoding of the few memcached text commands the generator sends.
//!
//! A key is `<tenant prefix>k<index, zero padded>`, exactly `key_size` bytes, so replies can be
//! mapped back to key indices (for lookaside misses) without keeping the keys. Requests are
//! appended straight into a connection's write buffer: no per-request allocation.

use std::io::Write as _;

use mrcache_protocol::KEY_MAX_LENGTH;

use crate::BenchError;

/// The key space of one tenant: `n` keys of `key_size` bytes behind `prefix`.
#[derive(Debug, Clone)]
pub struct KeySpace {
    prefix: Vec<u8>,
    /// Width of the zero-padded index: `key_size - prefix - 1`.
    digits: usize,
}

impl KeySpace {
    /// Fails when `key_size` cannot hold the prefix, the `k` marker and `n - 1` in decimal, or
    /// passes memcached's key length limit (the protocol crate's `KEY_MAX_LENGTH`).
    pub fn new(prefix: &str, key_size: usize, n: u64) -> Result<Self, BenchError> {
        let needed = prefix.len() + 1 + decimal_digits(n.saturating_sub(1));
        if key_size < needed || key_size > KEY_MAX_LENGTH {
            return Err(BenchError::KeySize {
                key_size,
                needed,
                prefix: prefix.into(),
                keys: n,
            });
        }
        Ok(KeySpace {
            prefix: prefix.as_bytes().to_vec(),
            digits: key_size - prefix.len() - 1,
        })
    }

    /// Appends the key of `index` to `buf`.
    pub fn write_key(&self, buf: &mut Vec<u8>, index: u64) {
        buf.extend_from_slice(&self.prefix);
        buf.push(b'k');
        // Zero padding written directly: `write!` with a width formats the padding a character at a
        // time, which showed in the load generator's profile.
        let start = buf.len();
        buf.resize(start + self.digits, b'0');
        let mut rest = index;
        for digit in buf[start..].iter_mut().rev() {
            if rest == 0 {
                break;
            }
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        if rest != 0 {
            // An index wider than the space (not produced by the samplers): print it whole.
            buf.truncate(start);
            let _ = write!(buf, "{index}");
        }
    }

    /// The index of a key this space wrote, or None for a foreign key.
    pub fn index_of(&self, key: &[u8]) -> Option<u64> {
        let rest = key
            .strip_prefix(self.prefix.as_slice())?
            .strip_prefix(b"k")?;
        if rest.len() != self.digits || !rest.iter().all(u8::is_ascii_digit) {
            return None;
        }
        rest.iter().try_fold(0u64, |acc, d| {
            acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
    }
}

fn decimal_digits(mut v: u64) -> usize {
    let mut d = 1;
    while v >= 10 {
        v /= 10;
        d += 1;
    }
    d
}

/// `get k1 k2 ...\r\n` for the given key indices.
pub fn push_get(buf: &mut Vec<u8>, space: &KeySpace, keys: impl IntoIterator<Item = u64>) {
    buf.extend_from_slice(b"get");
    for k in keys {
        buf.push(b' ');
        space.write_key(buf, k);
    }
    buf.extend_from_slice(b"\r\n");
}

/// `set <key> 0 0 <len>\r\n<value>\r\n`.
pub fn push_set(buf: &mut Vec<u8>, space: &KeySpace, key: u64, value: &[u8]) {
    buf.extend_from_slice(b"set ");
    space.write_key(buf, key);
    buf.extend_from_slice(b" 0 0 ");
    buf.extend_from_slice(itoa::Buffer::new().format(value.len()).as_bytes());
    buf.extend_from_slice(b"\r\n");
    buf.extend_from_slice(value);
    buf.extend_from_slice(b"\r\n");
}

/// memcached text-protocol authentication: a `set` of any key whose data is `<user> <pass>`,
/// answered `STORED` on success (memcached `-Y`, and mrcached tenants).
pub fn push_auth(buf: &mut Vec<u8>, user: &str, password: &str) {
    let data_len = user.len() + 1 + password.len();
    let _ = write!(buf, "set auth 0 0 {data_len}\r\n{user} {password}\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_requested_size_and_parse_back() {
        let space = KeySpace::new("app1:", 16, 1000).unwrap();
        let mut buf = Vec::new();
        space.write_key(&mut buf, 42);
        assert_eq!(buf, b"app1:k0000000042");
        assert_eq!(space.index_of(&buf), Some(42));
        assert_eq!(space.index_of(b"app2:k0000000042"), None);
        assert_eq!(space.index_of(b"app1:k00000000x2"), None);
        assert!(KeySpace::new("", 4, 1000).is_ok());
        assert!(KeySpace::new("", 3, 1001).is_err());
        assert!(matches!(
            KeySpace::new("", 251, 10),
            Err(BenchError::KeySize { needed: 2, .. })
        ));
    }

    #[test]
    fn key_digits_fill_the_width_from_the_right() {
        let space = KeySpace::new("", 5, 10_000).unwrap();
        for (index, key) in [(0, "k0000"), (7, "k0007"), (9_999, "k9999")] {
            let mut buf = b"get ".to_vec();
            space.write_key(&mut buf, index);
            assert_eq!(buf, format!("get {key}").as_bytes());
            assert_eq!(space.index_of(&buf[4..]), Some(index));
        }
        // Wider than the space: written whole rather than cut.
        let mut buf = Vec::new();
        space.write_key(&mut buf, 123_456);
        assert_eq!(buf, b"k123456");
    }

    #[test]
    fn commands_are_encoded_as_memcached_expects() {
        let space = KeySpace::new("", 4, 100).unwrap();
        let mut buf = Vec::new();
        push_get(&mut buf, &space, [1, 22]);
        push_set(&mut buf, &space, 3, b"xyz");
        push_auth(&mut buf, "alice", "pw");
        assert_eq!(
            buf,
            b"get k001 k022\r\nset k003 0 0 3\r\nxyz\r\nset auth 0 0 8\r\nalice pw\r\n".as_slice()
        );
    }
}
