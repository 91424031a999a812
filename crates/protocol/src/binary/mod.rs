//! memcached's binary protocol, sans I/O: [`parse`] turns the front of a byte buffer into one
//! [`Packet`] (borrowing key, extras and value from the buffer) or says what to answer instead, and
//! [`response`] writes reply packets into a `Vec<u8>`.
//!
//! The behaviour is memcached 1.6.18's (`proto_bin.c`), byte for byte where clients can see it:
//! - a 24-byte header (magic 0x80, opcode, key length, extras length, data type, vbucket, body length,
//!   opaque, CAS); once 24 bytes are buffered, any other magic closes the connection without a reply;
//! - a body shorter than key + extras: `Unknown command`, then close;
//! - a key over 250 bytes, or a body whose shape the opcode does not allow (extras, key, value lengths,
//!   checked as `dispatch_bin_command` checks them): `Invalid arguments`, then close;
//! - an opcode memcached does not know (0x1b verbosity included: 1.6.18 does not answer it):
//!   `Unknown command`; memcached consumes the header, extras and key before it looks at the opcode
//!   and then discards `bodylen` more bytes, and so do we ([`Parsed::Error`] `swallow`);
//! - a value that can never fit (`item_size_ok`) is reported from its header, key and extras alone
//!   ([`Data::TooLarge`]) so that its bytes are swallowed as they arrive, never buffered;
//! - a command that reads only its key (get, delete, touch/gat, stat, …) consumes header, extras and key;
//!   any further body bytes are read as the next header, as memcached reads them.
//!
//! Quiet opcodes (`…Q`) map to their loud twins with [`Packet::quiet`] set; the opcode echoed in the
//! reply is always the one the client sent ([`Packet::opcode`]).
//!
//! Invariants: `parse` never panics and never allocates; a request is reported only once every byte it
//! needs is buffered (except the too-large and swallowed cases above); `Incomplete::needed` is never
//! more than the header, extras, a 250-byte key and the largest value that fits.

pub mod response;
pub mod sasl;

use crate::parse::Limits;
use crate::request::Data;
use crate::tokens::KEY_MAX_LENGTH;

/// The first byte of every request.
pub const REQUEST_MAGIC: u8 = 0x80;
/// The first byte of every response.
pub const RESPONSE_MAGIC: u8 = 0x81;
/// Bytes of a request or response header.
pub const HEADER_LEN: usize = 24;
/// memcached's `MAX_SASL_MECH_LEN`: a longer mechanism name is `Invalid arguments`.
pub const MAX_SASL_MECH_LEN: usize = 32;
/// The longest SASL payload we buffer; longer ones are swallowed and fail authentication.
pub const MAX_SASL_DATA_BYTES: usize = 64 * 1024;

/// The opcodes memcached 1.6.18 answers (and their numbers).
pub mod opcode {
    #![allow(missing_docs)]
    pub const GET: u8 = 0x00;
    pub const SET: u8 = 0x01;
    pub const ADD: u8 = 0x02;
    pub const REPLACE: u8 = 0x03;
    pub const DELETE: u8 = 0x04;
    pub const INCREMENT: u8 = 0x05;
    pub const DECREMENT: u8 = 0x06;
    pub const QUIT: u8 = 0x07;
    pub const FLUSH: u8 = 0x08;
    pub const GETQ: u8 = 0x09;
    pub const NOOP: u8 = 0x0a;
    pub const VERSION: u8 = 0x0b;
    pub const GETK: u8 = 0x0c;
    pub const GETKQ: u8 = 0x0d;
    pub const APPEND: u8 = 0x0e;
    pub const PREPEND: u8 = 0x0f;
    pub const STAT: u8 = 0x10;
    pub const SETQ: u8 = 0x11;
    pub const ADDQ: u8 = 0x12;
    pub const REPLACEQ: u8 = 0x13;
    pub const DELETEQ: u8 = 0x14;
    pub const INCREMENTQ: u8 = 0x15;
    pub const DECREMENTQ: u8 = 0x16;
    pub const QUITQ: u8 = 0x17;
    pub const FLUSHQ: u8 = 0x18;
    pub const APPENDQ: u8 = 0x19;
    pub const PREPENDQ: u8 = 0x1a;
    pub const VERBOSITY: u8 = 0x1b;
    pub const TOUCH: u8 = 0x1c;
    pub const GAT: u8 = 0x1d;
    pub const GATQ: u8 = 0x1e;
    pub const SASL_LIST_MECHS: u8 = 0x20;
    pub const SASL_AUTH: u8 = 0x21;
    pub const SASL_STEP: u8 = 0x22;
    pub const GATK: u8 = 0x23;
    pub const GATKQ: u8 = 0x24;
}

/// memcached's response status codes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Status {
    /// 0x00.
    Success = 0x00,
    /// 0x01 `Not found`.
    KeyNotFound = 0x01,
    /// 0x02 `Data exists for key.`
    KeyExists = 0x02,
    /// 0x03 `Too large.`
    TooLarge = 0x03,
    /// 0x04 `Invalid arguments`.
    InvalidArguments = 0x04,
    /// 0x05 `Not stored.`
    NotStored = 0x05,
    /// 0x06 `Non-numeric server-side value for incr or decr`.
    NonNumeric = 0x06,
    /// 0x20 `Auth failure.`
    AuthError = 0x20,
    /// 0x21: more SASL steps are needed.
    AuthContinue = 0x21,
    /// 0x81 `Unknown command`.
    UnknownCommand = 0x81,
    /// 0x82 `Out of memory`.
    OutOfMemory = 0x82,
    /// 0x86 `Temporary failure` (the protocol's ETMPFAIL; memcached 1.6.18 never sends it, mrcached sends
    /// it for a request its tenant's rate limit refuses).
    TemporaryFailure = 0x86,
}

impl Status {
    /// The body memcached's `write_bin_error` sends with this status.
    pub fn message(self) -> &'static str {
        match self {
            Status::Success | Status::AuthContinue => "",
            Status::KeyNotFound => "Not found",
            Status::KeyExists => "Data exists for key.",
            Status::TooLarge => "Too large.",
            Status::InvalidArguments => "Invalid arguments",
            Status::NotStored => "Not stored.",
            Status::NonNumeric => "Non-numeric server-side value for incr or decr",
            Status::AuthError => "Auth failure.",
            Status::UnknownCommand => "Unknown command",
            Status::OutOfMemory => "Out of memory",
            Status::TemporaryFailure => "Temporary failure",
        }
    }
}

/// The fields of a request header a reply echoes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The opcode as sent (a quiet opcode stays quiet).
    pub opcode: u8,
    /// Echoed unchanged in every reply.
    pub opaque: u32,
    /// The request's CAS (0: none).
    pub cas: u64,
}

/// Which storage command.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreKind {
    /// set (a non-zero CAS makes it a compare-and-swap).
    Set,
    /// add (a non-zero CAS makes it a compare-and-swap, as in memcached).
    Add,
    /// replace (likewise).
    Replace,
    /// append (a non-zero CAS must match).
    Append,
    /// prepend (a non-zero CAS must match).
    Prepend,
}

/// What a get-family opcode returns.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GetKind {
    /// getk/gatk: the key comes back, on a hit and on a miss.
    pub with_key: bool,
    /// gat/gatk/touch: the new exptime.
    pub touch: Option<u32>,
    /// touch: flags only, no value.
    pub value: bool,
}

/// One decoded request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    /// get/getq/getk/getkq/gat/gatq/gatk/gatkq/touch.
    Get {
        /// The key (1..=250 bytes).
        key: &'a [u8],
        /// What comes back.
        kind: GetKind,
    },
    /// set/add/replace/append/prepend and their quiet forms.
    Store {
        /// Which command.
        kind: StoreKind,
        /// The key.
        key: &'a [u8],
        /// Client flags (0 for append/prepend).
        flags: u32,
        /// Expiry as sent (memcached's `realtime` rules; 0 for append/prepend).
        exptime: u32,
        /// The value, or the swallow of one that can never fit.
        data: Data<'a>,
    },
    /// delete(q); the header's CAS, when non-zero, must match.
    Delete {
        /// The key.
        key: &'a [u8],
    },
    /// increment/decrement(q).
    Arith {
        /// increment (else decrement).
        incr: bool,
        /// The key.
        key: &'a [u8],
        /// The amount.
        delta: u64,
        /// The value a missing key is created with.
        initial: u64,
        /// Expiry of a created item; 0xffffffff: do not create, answer `Not found`.
        exptime: u32,
    },
    /// quit(q): reply (unless quiet), then close.
    Quit,
    /// flush(q), with an optional delay.
    Flush {
        /// The delay or absolute time, when the 4-byte extras were sent.
        exptime: Option<u32>,
    },
    /// noop.
    Noop,
    /// version.
    Version,
    /// stat with a group name ("" for the general figures).
    Stat {
        /// The group as sent.
        group: &'a [u8],
    },
    /// SASL list mechanisms.
    SaslListMechs,
    /// SASL auth (`step` false) or step.
    SaslAuth {
        /// SASL step (else the first auth packet).
        step: bool,
        /// The mechanism name (the key).
        mechanism: &'a [u8],
        /// The payload, or the swallow of one over [`MAX_SASL_DATA_BYTES`].
        data: Data<'a>,
    },
}

impl<'a> Command<'a> {
    /// The cache key the command names (get family, store family, delete, incr/decr); `None` for the
    /// others (a SASL mechanism name is no cache key).
    pub fn key(&self) -> Option<&'a [u8]> {
        match *self {
            Command::Get { key, .. }
            | Command::Store { key, .. }
            | Command::Delete { key }
            | Command::Arith { key, .. } => Some(key),
            Command::Quit
            | Command::Flush { .. }
            | Command::Noop
            | Command::Version
            | Command::Stat { .. }
            | Command::SaslListMechs
            | Command::SaslAuth { .. } => None,
        }
    }
}

/// One request packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// What the reply echoes.
    pub header: Header,
    /// A quiet opcode: success replies are not sent (errors are, and a get miss is not).
    pub quiet: bool,
    /// The command.
    pub command: Command<'a>,
}

/// What the front of a binary connection's buffer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A complete request.
    Request {
        /// The request.
        packet: Packet<'a>,
        /// Bytes of the buffer it took.
        consumed: usize,
    },
    /// More bytes are needed: `needed`, when known, counts from the start of the buffer.
    Incomplete {
        /// Bytes the request needs, when known.
        needed: Option<usize>,
    },
    /// Answer `status` (with its message) to `header`, consume `consumed` bytes, discard `swallow` more
    /// as they arrive, and close the connection after the reply when `close`.
    Error {
        /// What the reply echoes.
        header: Header,
        /// The error.
        status: Status,
        /// Bytes of the buffer to consume now.
        consumed: usize,
        /// Bytes still to discard as they arrive.
        swallow: usize,
        /// Close once the reply is written.
        close: bool,
    },
    /// Not a request (wrong magic): close without a reply.
    Close,
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// The quiet opcode's loud twin, and whether it was quiet.
fn unquiet(op: u8) -> (u8, bool) {
    use opcode::*;
    let loud = match op {
        GETQ => GET,
        GETKQ => GETK,
        SETQ => SET,
        ADDQ => ADD,
        REPLACEQ => REPLACE,
        DELETEQ => DELETE,
        INCREMENTQ => INCREMENT,
        DECREMENTQ => DECREMENT,
        QUITQ => QUIT,
        FLUSHQ => FLUSH,
        APPENDQ => APPEND,
        PREPENDQ => PREPEND,
        GATQ => GAT,
        GATKQ => GATK,
        _ => return (op, false),
    };
    (loud, true)
}

/// Parses the front of `input` as memcached 1.6.18 reads a binary connection. `limits` supplies the
/// item size checks (`item_size_max`, `item_overhead`); its text-only fields are ignored.
/// `unauthenticated`: the connection must still authenticate with SASL (`-S`), so every opcode but
/// version and the SASL ones is answered `Auth failure.` and closes, checked where memcached checks it
/// (after the body-length check, before any other).
pub fn parse<'a>(input: &'a [u8], limits: &Limits, unauthenticated: bool) -> Parsed<'a> {
    use opcode::*;
    // memcached waits for a whole header before it looks at the magic.
    if input.len() < HEADER_LEN {
        return Parsed::Incomplete {
            needed: Some(HEADER_LEN),
        };
    }
    if input[0] != REQUEST_MAGIC {
        return Parsed::Close;
    }
    let op = input[1];
    let keylen = be16(&input[2..]) as usize;
    let extlen = input[4] as usize;
    let bodylen = be32(&input[8..]) as usize;
    let header = Header {
        opcode: op,
        opaque: be32(&input[12..]),
        cas: be64(&input[16..]),
    };
    let error = |status, consumed, swallow, close| Parsed::Error {
        header,
        status,
        consumed,
        swallow,
        close,
    };
    // memcached reads the extras and the key with the header, before it looks at anything else.
    let ext_end = HEADER_LEN + extlen;
    let key_end = ext_end + keylen;
    if input.len() < key_end {
        return Parsed::Incomplete {
            needed: Some(key_end),
        };
    }
    if keylen + extlen > bodylen {
        return error(Status::UnknownCommand, key_end, 0, true);
    }
    if unauthenticated && !matches!(op, VERSION | SASL_LIST_MECHS | SASL_AUTH | SASL_STEP) {
        return error(Status::AuthError, key_end, 0, true);
    }
    if keylen > KEY_MAX_LENGTH {
        return error(Status::InvalidArguments, key_end, 0, true);
    }
    let (loud, quiet) = unquiet(op);
    // Shape checks, as `dispatch_bin_command` makes them.
    let valid = match loud {
        VERSION | NOOP | QUIT | SASL_LIST_MECHS => extlen == 0 && keylen == 0 && bodylen == 0,
        FLUSH => keylen == 0 && bodylen == extlen && (extlen == 0 || extlen == 4),
        SET | ADD | REPLACE => extlen == 8 && keylen != 0 && bodylen >= keylen + 8,
        GET | GETK => extlen == 0 && bodylen == keylen && keylen > 0,
        DELETE => keylen > 0 && extlen == 0 && bodylen == keylen,
        INCREMENT | DECREMENT => keylen > 0 && extlen == 20 && bodylen == keylen + extlen,
        APPEND | PREPEND => keylen > 0 && extlen == 0,
        STAT => extlen == 0,
        SASL_AUTH | SASL_STEP => extlen == 0 && keylen != 0,
        TOUCH | GAT | GATK => extlen == 4 && keylen != 0,
        // Unknown: header, extras and key are consumed, then the whole body length is swallowed on
        // top (memcached's arithmetic: the key and extras count twice).
        _ => return error(Status::UnknownCommand, key_end, bodylen, false),
    };
    if !valid {
        return error(Status::InvalidArguments, key_end, 0, true);
    }
    let extras = &input[HEADER_LEN..ext_end];
    let key = &input[ext_end..key_end];
    let value_len = bodylen - keylen - extlen;
    // Commands with a value: the whole body, unless it can never fit.
    let with_value = |fits: bool| -> Result<(Data<'a>, usize), Parsed<'a>> {
        if !fits {
            return Ok((Data::TooLarge { swallow: value_len }, key_end));
        }
        let end = key_end + value_len;
        match input.get(key_end..end) {
            Some(v) => Ok((Data::Value(v), end)),
            None => Err(Parsed::Incomplete { needed: Some(end) }),
        }
    };
    let (command, consumed) = match loud {
        VERSION => (Command::Version, key_end),
        NOOP => (Command::Noop, key_end),
        QUIT => (Command::Quit, key_end),
        SASL_LIST_MECHS => (Command::SaslListMechs, key_end),
        FLUSH => (
            Command::Flush {
                exptime: (extlen == 4).then(|| be32(extras)),
            },
            key_end,
        ),
        SET | ADD | REPLACE | APPEND | PREPEND => {
            let (kind, flags, exptime) = match loud {
                SET => (StoreKind::Set, be32(extras), be32(&extras[4..])),
                ADD => (StoreKind::Add, be32(extras), be32(&extras[4..])),
                REPLACE => (StoreKind::Replace, be32(extras), be32(&extras[4..])),
                APPEND => (StoreKind::Append, 0, 0),
                _ => (StoreKind::Prepend, 0, 0),
            };
            let fits = limits.item_fits(keylen, flags, value_len);
            let (data, consumed) = match with_value(fits) {
                Ok(v) => v,
                Err(incomplete) => return incomplete,
            };
            (
                Command::Store {
                    kind,
                    key,
                    flags,
                    exptime,
                    data,
                },
                consumed,
            )
        }
        GET | GETK => (
            Command::Get {
                key,
                kind: GetKind {
                    with_key: loud == GETK,
                    touch: None,
                    value: true,
                },
            },
            key_end,
        ),
        TOUCH | GAT | GATK => (
            Command::Get {
                key,
                kind: GetKind {
                    with_key: loud == GATK,
                    touch: Some(be32(extras)),
                    value: loud != TOUCH,
                },
            },
            key_end,
        ),
        DELETE => (Command::Delete { key }, key_end),
        INCREMENT | DECREMENT => (
            Command::Arith {
                incr: loud == INCREMENT,
                key,
                delta: be64(extras),
                initial: be64(&extras[8..]),
                exptime: be32(&extras[16..]),
            },
            key_end,
        ),
        STAT => (Command::Stat { group: key }, key_end),
        _ => {
            // SASL_AUTH | SASL_STEP
            if keylen > MAX_SASL_MECH_LEN {
                return error(Status::InvalidArguments, key_end, value_len, false);
            }
            let (data, consumed) = match with_value(value_len <= MAX_SASL_DATA_BYTES) {
                Ok(v) => v,
                Err(incomplete) => return incomplete,
            };
            (
                Command::SaslAuth {
                    step: loud == SASL_STEP,
                    mechanism: key,
                    data,
                },
                consumed,
            )
        }
    };
    Parsed::Request {
        packet: Packet {
            header,
            quiet,
            command,
        },
        consumed,
    }
}

/// The binary parser's contract as an executable check (shared by the fuzz target and the stable seed
/// replay): parse `input` packet after packet, honouring swallows, and panic if a result consumes
/// nothing or more than it was given, if `Incomplete` asks for no more than it had or for more than
/// any valid request needs, or if a key breaks the 250-byte limit.
pub fn check_binary_contract(input: &[u8], limits: &Limits, unauthenticated: bool) {
    let most = HEADER_LEN + 255 + 65535 + limits.item_size_max.max(MAX_SASL_DATA_BYTES);
    crate::contract::walk(input, |rest| match parse(rest, limits, unauthenticated) {
        Parsed::Request { packet, consumed } => {
            assert!(consumed >= HEADER_LEN && consumed <= rest.len());
            if let Some(key) = packet.command.key() {
                assert!(!key.is_empty() && key.len() <= KEY_MAX_LENGTH)
            }
            if let Command::SaslAuth { mechanism, .. } = packet.command {
                assert!(!mechanism.is_empty() && mechanism.len() <= MAX_SASL_MECH_LEN)
            }
            let swallow = match packet.command {
                Command::Store {
                    data: Data::TooLarge { swallow },
                    ..
                }
                | Command::SaslAuth {
                    data: Data::TooLarge { swallow },
                    ..
                } => swallow,
                _ => 0,
            };
            Some((consumed, swallow))
        }
        Parsed::Incomplete { needed } => {
            if let Some(needed) = needed {
                assert!(needed > rest.len(), "needs {needed} but has {}", rest.len());
                assert!(needed <= most, "needs {needed}, more than any request");
            }
            None
        }
        Parsed::Error {
            consumed,
            swallow,
            close,
            status,
            ..
        } => {
            assert!(consumed >= HEADER_LEN && consumed <= rest.len());
            assert!(!status.message().is_empty());
            (!close).then_some((consumed, swallow))
        }
        Parsed::Close => None,
    });
}

#[cfg(test)]
mod tests;
