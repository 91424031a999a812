//! The warm-restart file: a header, the items, a trailer; written and read as a stream, never held in
//! memory whole (at most one item's key and value at a time).
//!
//! ```text
//! magic      8 bytes   "MRCWARM\n"
//! version    u32       FORMAT_VERSION
//! settings   u32 len + text: one "name value\n" line per setting (Fingerprint)
//! tenants    u16 count, then per tenant: u16 id, u16 name length, name
//! items      per item: u8 ITEM_TAG, u16 tenant id, u8 key length, u8 marks, u32 client flags,
//!            u32 value length, i64 expiry (Unix time; 0 never), i64 last access (Unix time),
//!            u64 CAS, key, value
//! trailer    u8 END_TAG, u64 item count, u32 CRC-32 of every byte before it
//! ```
//! Integers are little-endian. Times are Unix times, so that a restart counts the time spent down
//! (memcached shifts its clock by the same). The tenant table names the tenants the items' ids stood
//! for when saved; a restart maps them by name.
//!
//! Invariants: a [`Reader`] hands out an item only after checking its lengths against the limits it was
//! given (the key against memcached's 250 bytes, the value against `-I`), so a corrupt length can never
//! make it allocate more than one item's worth; [`Reader::finish`] is the only place the checksum is
//! judged, so a caller that must not act on a corrupt file reads it through once before acting.

use std::io::{self, Read, Write};

/// The first bytes of every file.
pub const MAGIC: &[u8; 8] = b"MRCWARM\n";
/// Bumped on any change of the layout above.
pub const FORMAT_VERSION: u32 = 1;
/// The longest key a record may carry: the protocol's (memcached's `KEY_MAX_LENGTH`).
pub const KEY_MAX_BYTES: usize = mrcache_protocol::KEY_MAX_LENGTH;
/// The settings text may not be longer (a corrupt length must not allocate much).
const SETTINGS_MAX_BYTES: u32 = 64 * 1024;
const ITEM_TAG: u8 = 1;
const END_TAG: u8 = 0;

/// What can be wrong with a file; each says what it found.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// Reading or writing the file failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The file ends inside the named part.
    #[error("truncated: the file ends inside {0}")]
    Truncated(&'static str),
    /// The first bytes are not [`MAGIC`].
    #[error("not a mrcached warm-restart file")]
    BadMagic,
    /// Written in another format version.
    #[error("format version {found}, this mrcached reads {FORMAT_VERSION}")]
    Version {
        /// The version the file says.
        found: u32,
    },
    /// A length, tag or field out of range; says which.
    #[error("corrupt: {0}")]
    Corrupt(String),
    /// The trailer's CRC-32 differs from the bytes read.
    #[error("checksum mismatch: the file was changed or damaged after it was written")]
    Checksum,
}

/// One item as the file carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The tenant id, named by the header's tenant table.
    pub tenant: u16,
    /// The key, at most [`KEY_MAX_BYTES`].
    pub key: &'a [u8],
    /// The value, without the trailing CRLF.
    pub value: &'a [u8],
    /// The client's flags.
    pub client_flags: u32,
    /// Unix time; 0 never expires.
    pub expiry_unix: i64,
    /// Unix time of the last access.
    pub atime_unix: i64,
    /// The item's CAS value.
    pub cas: u64,
    /// The meta protocol's marks (fetched, stale, win token, binary key), as the engine's bits.
    pub marks: u8,
}

/// The header: the settings the file was written under, and the tenants its ids name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Header {
    /// `(name, value)` in the order written.
    pub settings: Vec<(String, String)>,
    /// `(id, name)` of every tenant an item may carry.
    pub tenants: Vec<(u16, String)>,
}

impl Header {
    /// The value of setting `name`.
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A stream that feeds every byte through the running CRC.
struct Crc<T> {
    inner: T,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for Crc<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes a file: [`Writer::new`] writes the header, [`Writer::item`] each item, [`Writer::finish`] the
/// trailer.
pub struct Writer<W: Write> {
    out: Crc<W>,
    items: u64,
}

impl<W: Write> Writer<W> {
    /// Starts a file on `out`: magic, version, the settings and the tenant table of `header`.
    pub fn new(out: W, header: &Header) -> io::Result<Writer<W>> {
        let mut out = Crc {
            inner: out,
            crc: crc32fast::Hasher::new(),
        };
        out.write_all(MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_le_bytes())?;
        let mut text = String::new();
        for (name, value) in &header.settings {
            debug_assert!(!name.contains([' ', '\n']) && !value.contains('\n'));
            text.push_str(name);
            text.push(' ');
            text.push_str(value);
            text.push('\n');
        }
        out.write_all(&(text.len() as u32).to_le_bytes())?;
        out.write_all(text.as_bytes())?;
        out.write_all(&(header.tenants.len() as u16).to_le_bytes())?;
        for (id, name) in &header.tenants {
            out.write_all(&id.to_le_bytes())?;
            out.write_all(&(name.len() as u16).to_le_bytes())?;
            out.write_all(name.as_bytes())?;
        }
        Ok(Writer { out, items: 0 })
    }

    /// Appends one item.
    pub fn item(&mut self, r: &Record<'_>) -> io::Result<()> {
        debug_assert!(r.key.len() <= KEY_MAX_BYTES);
        let mut head = [0u8; 1 + 2 + 1 + 1 + 4 + 4 + 8 + 8 + 8];
        head[0] = ITEM_TAG;
        head[1..3].copy_from_slice(&r.tenant.to_le_bytes());
        head[3] = r.key.len() as u8;
        head[4] = r.marks;
        head[5..9].copy_from_slice(&r.client_flags.to_le_bytes());
        head[9..13].copy_from_slice(&(r.value.len() as u32).to_le_bytes());
        head[13..21].copy_from_slice(&r.expiry_unix.to_le_bytes());
        head[21..29].copy_from_slice(&r.atime_unix.to_le_bytes());
        head[29..37].copy_from_slice(&r.cas.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(r.key)?;
        self.out.write_all(r.value)?;
        self.items += 1;
        Ok(())
    }

    /// Items written so far.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// Writes the trailer and returns the underlying stream (flushed).
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(&[END_TAG])?;
        self.out.write_all(&self.items.to_le_bytes())?;
        let crc = self.out.crc.clone().finalize();
        let mut out = self.out.inner;
        out.write_all(&crc.to_le_bytes())?;
        out.flush()?;
        Ok(out)
    }
}

/// Reads a file written by [`Writer`]: [`Reader::new`] reads the header, [`Reader::next`] each item,
/// then [`Reader::finish`] checks the trailer.
pub struct Reader<R: Read> {
    input: Crc<R>,
    max_value_bytes: usize,
    key: Vec<u8>,
    value: Vec<u8>,
    items: u64,
    /// The item count the trailer gave, once reached.
    trailer_items: Option<u64>,
}

impl<R: Read> Reader<R> {
    /// Reads the header; items longer than `max_value_bytes` are refused as corrupt.
    pub fn new(input: R, max_value_bytes: usize) -> Result<(Reader<R>, Header), FormatError> {
        let mut r = Reader {
            input: Crc {
                inner: input,
                crc: crc32fast::Hasher::new(),
            },
            max_value_bytes,
            key: Vec::with_capacity(KEY_MAX_BYTES),
            value: Vec::new(),
            items: 0,
            trailer_items: None,
        };
        let mut magic = [0u8; 8];
        r.exact(&mut magic, "the header")?;
        if &magic != MAGIC {
            return Err(FormatError::BadMagic);
        }
        let found = r.u32("the header")?;
        if found != FORMAT_VERSION {
            return Err(FormatError::Version { found });
        }
        let len = r.u32("the header")?;
        if len > SETTINGS_MAX_BYTES {
            return Err(FormatError::Corrupt(format!("settings of {len} bytes")));
        }
        let mut text = vec![0u8; len as usize];
        r.exact(&mut text, "the header")?;
        let text = String::from_utf8(text)
            .map_err(|_| FormatError::Corrupt("settings are not UTF-8".into()))?;
        let settings = text
            .lines()
            .map(|line| {
                line.split_once(' ')
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .ok_or_else(|| FormatError::Corrupt(format!("setting line {line:?}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let count = r.u16("the tenant table")?;
        let mut tenants = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let id = r.u16("the tenant table")?;
            let len = r.u16("the tenant table")?;
            let mut name = vec![0u8; len as usize];
            r.exact(&mut name, "the tenant table")?;
            let name = String::from_utf8(name)
                .map_err(|_| FormatError::Corrupt("a tenant name is not UTF-8".into()))?;
            tenants.push((id, name));
        }
        Ok((r, Header { settings, tenants }))
    }

    fn exact(&mut self, buf: &mut [u8], what: &'static str) -> Result<(), FormatError> {
        self.input.inner.read_exact(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                FormatError::Truncated(what)
            } else {
                FormatError::Io(e)
            }
        })?;
        self.input.crc.update(buf);
        Ok(())
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, FormatError> {
        let mut b = [0u8; 2];
        self.exact(&mut b, what)?;
        Ok(u16::from_le_bytes(b))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, FormatError> {
        let mut b = [0u8; 4];
        self.exact(&mut b, what)?;
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, FormatError> {
        let mut b = [0u8; 8];
        self.exact(&mut b, what)?;
        Ok(u64::from_le_bytes(b))
    }

    /// The next item, or `None` at the trailer (then call [`Reader::finish`]).
    #[allow(clippy::should_implement_trait)] // items borrow the reader's buffers: not an `Iterator`
    pub fn next(&mut self) -> Result<Option<Record<'_>>, FormatError> {
        if self.trailer_items.is_some() {
            return Ok(None);
        }
        let mut tag = [0u8; 1];
        self.exact(&mut tag, "an item")?;
        match tag[0] {
            END_TAG => {
                self.trailer_items = Some(self.u64("the trailer")?);
                return Ok(None);
            }
            ITEM_TAG => {}
            other => return Err(FormatError::Corrupt(format!("record tag {other}"))),
        }
        let mut head = [0u8; 2 + 1 + 1 + 4 + 4 + 8 + 8 + 8];
        self.exact(&mut head, "an item")?;
        let u32_at = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().unwrap());
        let i64_at = |i: usize| i64::from_le_bytes(head[i..i + 8].try_into().unwrap());
        let tenant = u16::from_le_bytes([head[0], head[1]]);
        let key_len = head[2] as usize;
        let marks = head[3];
        let client_flags = u32_at(4);
        let value_len = u32_at(8) as usize;
        let expiry_unix = i64_at(12);
        let atime_unix = i64_at(20);
        let cas = i64_at(28) as u64;
        if key_len == 0 || key_len > KEY_MAX_BYTES {
            return Err(FormatError::Corrupt(format!("a key of {key_len} bytes")));
        }
        if value_len > self.max_value_bytes {
            return Err(FormatError::Corrupt(format!(
                "a value of {value_len} bytes, over the item size limit"
            )));
        }
        let mut key = std::mem::take(&mut self.key);
        let mut value = std::mem::take(&mut self.value);
        key.resize(key_len, 0);
        value.resize(value_len, 0);
        let read = self
            .exact(&mut key, "an item")
            .and_then(|()| self.exact(&mut value, "an item"));
        self.key = key;
        self.value = value;
        read?;
        self.items += 1;
        Ok(Some(Record {
            tenant,
            key: &self.key,
            value: &self.value,
            client_flags,
            expiry_unix,
            atime_unix,
            cas,
            marks,
        }))
    }

    /// Checks the trailer: the item count, the checksum, and that nothing follows. Returns the items
    /// read.
    pub fn finish(mut self) -> Result<u64, FormatError> {
        let Some(count) = self.trailer_items else {
            return Err(FormatError::Corrupt("items after the last one read".into()));
        };
        if count != self.items {
            return Err(FormatError::Corrupt(format!(
                "the trailer counts {count} items, the file holds {}",
                self.items
            )));
        }
        let expected = self.input.crc.clone().finalize();
        let mut crc = [0u8; 4];
        self.input
            .inner
            .read_exact(&mut crc)
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => FormatError::Truncated("the trailer"),
                _ => FormatError::Io(e),
            })?;
        if u32::from_le_bytes(crc) != expected {
            return Err(FormatError::Checksum);
        }
        let mut extra = [0u8; 1];
        if self.input.inner.read(&mut extra)? != 0 {
            return Err(FormatError::Corrupt("bytes after the trailer".into()));
        }
        Ok(self.items)
    }
}
