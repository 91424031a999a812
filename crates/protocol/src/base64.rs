//! Standard base64 (RFC 4648, padded) for meta's `b` flag: keys arrive encoded, are looked up decoded,
//! and are echoed (`k`) encoded again. Decoding is strict: a length that is not a multiple of four, a
//! character outside the alphabet, or padding anywhere but the end is an error.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn sextet(c: u8) -> Option<u32> {
    match c {
        b'A'..=b'Z' => Some(u32::from(c - b'A')),
        b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
        b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes `input` into `out`, returning the decoded length; `None` if it is not valid base64, decodes to
/// nothing, or does not fit `out`.
pub fn decode(input: &[u8], out: &mut [u8]) -> Option<usize> {
    if input.is_empty() || input.len() & 3 != 0 {
        return None;
    }
    let mut n = 0;
    let groups = input.len() / 4;
    for (g, chunk) in input.chunks_exact(4).enumerate() {
        let last = g + 1 == groups;
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut bits: u32 = 0;
        for &c in &chunk[..4 - pad] {
            bits = (bits << 6) | sextet(c)?;
        }
        bits <<= 6 * pad as u32;
        let bytes = [(bits >> 16) as u8, (bits >> 8) as u8, bits as u8];
        let take = 3 - pad;
        out.get_mut(n..n + take)?.copy_from_slice(&bytes[..take]);
        n += take;
    }
    (n > 0).then_some(n)
}

/// Appends the base64 encoding of `input` to `out`.
pub fn encode(input: &[u8], out: &mut Vec<u8>) {
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let bits = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((bits >> (18 - 6 * i)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for input in [&b"f"[..], b"fo", b"foo", b"foob", b"\0\xff\x80 key"] {
            let mut enc = Vec::new();
            encode(input, &mut enc);
            let mut dec = [0u8; 16];
            let n = decode(&enc, &mut dec).unwrap();
            assert_eq!(&dec[..n], input);
        }
        let mut enc = Vec::new();
        encode(b"foob", &mut enc);
        assert_eq!(enc, b"Zm9vYg==");
    }

    #[test]
    fn rejects_bad_input() {
        let mut out = [0u8; 16];
        for bad in [&b""[..], b"Zm9", b"Zm9v!!!!", b"Zg==Zm9v", b"Z===", b"===="] {
            assert_eq!(decode(bad, &mut out), None, "{bad:?}");
        }
        assert_eq!(decode(b"Zm9vYmFy", &mut [0u8; 2]), None, "does not fit");
    }
}
