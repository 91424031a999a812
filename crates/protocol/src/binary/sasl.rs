//! SASL PLAIN (RFC 4616), the one mechanism mrcached offers: the payload is
//! `[authzid] NUL authcid NUL passwd`. An authorization identity, when given, must be the
//! authentication identity (a user cannot act as another).

/// The mechanisms `SASL list mechs` announces.
pub const MECHANISMS: &str = "PLAIN";

/// The user and password of a PLAIN payload, or `None` when it is malformed or asks to act as another
/// user.
pub fn parse_plain(data: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut parts = data.splitn(3, |&b| b == 0);
    let authzid = parts.next()?;
    let user = parts.next()?;
    let password = parts.next()?;
    if user.is_empty() || (!authzid.is_empty() && authzid != user) {
        return None;
    }
    Some((user, password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_payloads() {
        assert_eq!(
            parse_plain(b"\0alice\0secret"),
            Some((&b"alice"[..], &b"secret"[..]))
        );
        assert_eq!(
            parse_plain(b"alice\0alice\0s\0x"),
            Some((&b"alice"[..], &b"s\0x"[..]))
        );
        assert_eq!(parse_plain(b"bob\0alice\0secret"), None);
        assert_eq!(parse_plain(b"alice\0secret"), None);
        assert_eq!(parse_plain(b"\0\0secret"), None);
        assert_eq!(parse_plain(b""), None);
    }
}
