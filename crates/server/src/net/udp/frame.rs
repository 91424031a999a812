//! memcached's UDP framing, without I/O: the 8-byte frame header, which request datagrams are served,
//! how one request's reply is cut into response objects, and how a response object is cut into
//! datagrams.
//!
//! The header (big-endian u16s): request id (echoed), sequence number, datagram count, reserved (0).
//! ```text
//!  0      2      4      6      8
//!  | id   | seq  | total| 0    | payload ...
//! ```
//! What memcached 1.6.18 does, measured against it (`tests/udp.rs` compares byte for byte):
//! - A request datagram must be longer than the header and say it is the only datagram (total 1); its
//!   sequence number and reserved field are not checked. Others are dropped without a reply (memcached
//!   means to answer a multi-datagram request with an error, but the reply is never sent).
//! - Every request in the datagram is served, in order; a request the datagram cuts short is dropped.
//! - Each reply is one response object, except that a text retrieval (`get`, `gets`, `gat`, `gats`)
//!   makes one object per hit, and its `END` goes with the last key's object: the last hit's when the
//!   last key hit, else an object of its own. An empty reply (`noreply`, quiet meta and binary
//!   commands) sends nothing.
//! - A response object goes out as datagrams of at most [`MAX_DATAGRAM_BYTES`], header included,
//!   numbered from 0 with the object's datagram count; the next object starts again at 0.
//! - `quit` answers with a bare header counting 0 datagrams.
//!
//! Known differences: memcached also sends a bare header (count 0) for a `get` whose first key missed
//! when another key follows; mrcached sends nothing for it. An object that would need more datagrams
//! than the header can count (a value over about 91 MB) is replaced by memcached's error for a
//! retrieval it cannot write, where memcached's count would wrap.

/// The frame header's length.
pub const HEADER_BYTES: usize = 8;
/// memcached's `UDP_MAX_PAYLOAD_SIZE`: a datagram, header included, never exceeds it, so that it fits an
/// Ethernet frame without IP fragmentation.
pub const MAX_DATAGRAM_BYTES: usize = 1400;
/// Reply bytes per datagram.
pub const MAX_PAYLOAD_BYTES: usize = MAX_DATAGRAM_BYTES - HEADER_BYTES;
/// memcached's `UDP_READ_BUFFER_SIZE`: the largest request datagram read (IPv4 allows 65507 bytes of
/// payload, so nothing is cut).
pub const MAX_REQUEST_BYTES: usize = 65536;
/// What replaces a response object too large to number (see the module notes).
pub const TOO_LARGE_REPLY: &[u8] = b"SERVER_ERROR out of memory writing get response\r\n";

/// The request id and the payload of a datagram that is served (see the module notes), or `None`.
pub fn parse_request(datagram: &[u8]) -> Option<(u16, &[u8])> {
    if datagram.len() <= HEADER_BYTES || datagram[4..6] != [0, 1] {
        return None;
    }
    Some((
        u16::from_be_bytes([datagram[0], datagram[1]]),
        &datagram[HEADER_BYTES..],
    ))
}

/// A reply datagram's header.
pub fn header(request_id: u16, sequence: u16, total: u16) -> [u8; HEADER_BYTES] {
    let [i0, i1] = request_id.to_be_bytes();
    let [s0, s1] = sequence.to_be_bytes();
    let [t0, t1] = total.to_be_bytes();
    [i0, i1, s0, s1, t0, t1, 0, 0]
}

/// Datagrams `object` needs, or `None` when more than the header can count.
pub fn datagram_count(object: &[u8]) -> Option<u16> {
    u16::try_from(object.len().div_ceil(MAX_PAYLOAD_BYTES)).ok()
}

/// Writes each datagram of response object `object` into `frame` (header and payload) and hands it to
/// `send`, in order; stops at `send`'s first error. An object too large to number is replaced by
/// [`TOO_LARGE_REPLY`].
pub fn for_each_datagram<E>(
    request_id: u16,
    object: &[u8],
    frame: &mut Vec<u8>,
    mut send: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let (object, total) = match datagram_count(object) {
        Some(total) => (object, total),
        None => (TOO_LARGE_REPLY, 1),
    };
    for (sequence, chunk) in object.chunks(MAX_PAYLOAD_BYTES).enumerate() {
        frame.clear();
        frame.extend_from_slice(&header(request_id, sequence as u16, total));
        frame.extend_from_slice(chunk);
        send(frame)?;
    }
    Ok(())
}

/// Cuts `reply`, what the request at the start of `request` answered, into memcached's response objects
/// (see the module notes) and hands each to `object`, in order. `reply` may be one part of a retrieval
/// whose output was drained between keys: each part is cut on its own.
pub fn for_each_object<E>(
    request: &[u8],
    reply: &[u8],
    mut object: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    const END: &[u8] = b"END\r\n";
    if reply.is_empty() {
        return Ok(());
    }
    if !reply.starts_with(b"VALUE ") {
        return object(reply);
    }
    let last_key = last_retrieval_key(request);
    // Each hit's block: `VALUE key flags bytes [cas]\r\n` + data + `\r\n`.
    let mut start = 0;
    let mut last_block: Option<(usize, &[u8])> = None;
    while reply[start..].starts_with(b"VALUE ") {
        let Some((end, key)) = value_block(&reply[start..]) else {
            break;
        };
        if let Some((block_start, _)) = last_block {
            object(&reply[block_start..start])?;
        }
        last_block = Some((start, key));
        start += end;
    }
    let rest = &reply[start..];
    match last_block {
        Some((block_start, key)) if rest == END && Some(key) == last_key => {
            object(&reply[block_start..])
        }
        Some((block_start, _)) => {
            object(&reply[block_start..start])?;
            if rest.is_empty() {
                Ok(())
            } else {
                object(rest)
            }
        }
        None => object(reply),
    }
}

/// The length of the value block at the start of `reply` and its key, or `None` when it is not a whole
/// well-formed block.
fn value_block(reply: &[u8]) -> Option<(usize, &[u8])> {
    let line_end = reply.windows(2).position(|w| w == b"\r\n")?;
    let mut fields = reply[..line_end].split(|&b| b == b' ');
    let _value = fields.next()?;
    let key = fields.next()?;
    let _flags = fields.next()?;
    let bytes: usize = std::str::from_utf8(fields.next()?).ok()?.parse().ok()?;
    let end = line_end + 2 + bytes + 2;
    (reply.len() >= end && &reply[end - 2..end] == b"\r\n").then_some((end, key))
}

/// The last key of a text retrieval command at the start of `request` (`get`/`gets` keys..., `gat`/`gats`
/// exptime keys...), or `None` for any other command.
fn last_retrieval_key(request: &[u8]) -> Option<&[u8]> {
    let line_end = request.iter().position(|&b| b == b'\n')?;
    let line = request[..line_end]
        .strip_suffix(b"\r")
        .unwrap_or(&request[..line_end]);
    let mut tokens = line.split(|&b| b == b' ').filter(|t| !t.is_empty());
    let first_key = match tokens.next()? {
        b"get" | b"gets" => 0,
        b"gat" | b"gats" => 1,
        _ => return None,
    };
    tokens.skip(first_key).last()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn objects(request: &[u8], reply: &[u8]) -> Vec<Vec<u8>> {
        let mut all = Vec::new();
        for_each_object::<()>(request, reply, |o| {
            all.push(o.to_vec());
            Ok(())
        })
        .unwrap();
        all
    }

    #[test]
    fn request_header_rules() {
        let mut d = header(0x1234, 7, 1).to_vec();
        assert_eq!(parse_request(&d), None, "a bare header is not served");
        d.extend_from_slice(b"get a\r\n");
        assert_eq!(parse_request(&d), Some((0x1234, &b"get a\r\n"[..])));
        d[7] = 9;
        assert!(parse_request(&d).is_some(), "reserved is not checked");
        d[5] = 2;
        assert_eq!(
            parse_request(&d),
            None,
            "multi-datagram requests are dropped"
        );
        assert_eq!(header(0x0102, 0x0304, 0x0506), [1, 2, 3, 4, 5, 6, 0, 0]);
    }

    #[test]
    fn objects_are_cut_into_numbered_datagrams_of_at_most_1400_bytes() {
        let object = vec![b'x'; 2 * MAX_PAYLOAD_BYTES + 5];
        let mut frame = Vec::new();
        let mut sent = Vec::new();
        for_each_datagram::<()>(9, &object, &mut frame, |d| {
            sent.push(d.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(sent.len(), 3);
        for (i, d) in sent.iter().enumerate() {
            assert_eq!(&d[..8], &header(9, i as u16, 3));
            assert!(d.len() <= MAX_DATAGRAM_BYTES);
        }
        assert_eq!(sent[2].len(), HEADER_BYTES + 5);
        assert_eq!(datagram_count(&vec![0; MAX_PAYLOAD_BYTES]), Some(1));
        assert_eq!(
            datagram_count(&vec![0; MAX_PAYLOAD_BYTES * 65_535 + 1]),
            None
        );
    }

    #[test]
    fn a_retrieval_is_one_object_per_hit_with_end_on_the_last_keys() {
        let a = b"VALUE a 0 1\r\nx\r\n";
        let b = b"VALUE b 0 2 7\r\nyy\r\n";
        let reply = [&a[..], b, b"END\r\n"].concat();
        // The last key hit: END goes with it.
        assert_eq!(
            objects(b"get a b\r\n", &reply),
            vec![a.to_vec(), [&b[..], b"END\r\n"].concat()]
        );
        // The last key missed: END alone.
        assert_eq!(
            objects(b"gets a b c\r\n", &reply),
            vec![a.to_vec(), b.to_vec(), b"END\r\n".to_vec()]
        );
        assert_eq!(
            objects(b"gat 10 a b\r\n", &reply),
            vec![a.to_vec(), [&b[..], b"END\r\n"].concat()]
        );
        assert_eq!(objects(b"get z\r\n", b"END\r\n"), vec![b"END\r\n".to_vec()]);
        // A part drained between keys: its blocks, no END yet.
        assert_eq!(
            objects(b"get a b c\r\n", &[&a[..], b].concat()),
            vec![a.to_vec(), b.to_vec()]
        );
        // Anything else is one object; an empty reply none.
        assert_eq!(objects(b"mg a v\r\n", b"VA 1\r\nx\r\n").len(), 1);
        assert_eq!(
            objects(b"set a 0 0 1 noreply\r\n", b""),
            Vec::<Vec<u8>>::new()
        );
        // A value block cut short is not split.
        assert_eq!(
            objects(b"get a\r\n", b"VALUE a 0 9\r\nx\r\n"),
            vec![b"VALUE a 0 9\r\nx\r\n".to_vec()]
        );
    }
}
