//! Writing binary-protocol replies: one header (magic 0x81, the request's opcode and opaque) followed by
//! extras, key and value, as memcached's `add_bin_header` lays them out. Nothing here allocates beyond
//! growing the output vector.

use super::{Header, Status, HEADER_LEN, RESPONSE_MAGIC};

/// Appends a reply header: `status`, the lengths of what follows, `request`'s opcode and opaque, `cas`.
pub fn header(
    out: &mut Vec<u8>,
    request: &Header,
    status: Status,
    extlen: usize,
    keylen: usize,
    bodylen: usize,
    cas: u64,
) {
    out.reserve(HEADER_LEN + bodylen);
    out.push(RESPONSE_MAGIC);
    out.push(request.opcode);
    out.extend_from_slice(&(keylen as u16).to_be_bytes());
    out.push(extlen as u8);
    out.push(0);
    out.extend_from_slice(&(status as u16).to_be_bytes());
    out.extend_from_slice(&(bodylen as u32).to_be_bytes());
    out.extend_from_slice(&request.opaque.to_be_bytes());
    out.extend_from_slice(&cas.to_be_bytes());
}

/// A whole reply packet: header, then `extras`, `key` and `value`.
pub fn packet(
    out: &mut Vec<u8>,
    request: &Header,
    status: Status,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
    cas: u64,
) {
    let body = extras.len() + key.len() + value.len();
    header(out, request, status, extras.len(), key.len(), body, cas);
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// A success reply with no body and `cas` (set, delete, flush, noop, quit).
pub fn ok(out: &mut Vec<u8>, request: &Header, cas: u64) {
    header(out, request, Status::Success, 0, 0, 0, cas);
}

/// An error reply: `status` with memcached's message as the body and CAS 0 (`write_bin_error`).
pub fn error(out: &mut Vec<u8>, request: &Header, status: Status) {
    packet(
        out,
        request,
        status,
        &[],
        &[],
        status.message().as_bytes(),
        0,
    );
}

/// One `stat` reply packet (`append_stats`): the figure's name as key, its value as value; the empty
/// name and value end the list.
pub fn stat(out: &mut Vec<u8>, request: &Header, name: &[u8], value: &[u8]) {
    packet(out, request, Status::Success, &[], name, value, 0);
}
