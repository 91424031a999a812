//! The layout of one item inside its slab chunk, and accessors over the raw bytes.
//!
//! ```text
//! offset  0           8        12      16       20       24   25    26       28
//!         +-----------+--------+-------+--------+--------+----+-----+--------+-----+-------+
//!         |    cas    | expiry | atime | flags  |  vlen  |nkey| bits| tenant | key | value |
//!         +-----------+--------+-------+--------+--------+----+-----+--------+-----+-------+
//! ```
//! `expiry` and `atime` are relative seconds (see `clock`); `tenant` is the item's `TenantId`, part of its
//! identity (the index compares it with the key). All integers are little-endian. An item
//! occupies `stored_bytes` of its chunk: 28 header bytes, less than memcached's 56 (item + CAS), so every
//! item fits the chunk that memcached's accounting chooses for it, and exactly the chunk that compact
//! accounting chooses (`config::ItemAccounting`). The LRU and free-list links are not here but in a dense array beside each page
//! (`shard`), so that relinking a hit touches 8-byte entries instead of its neighbours' whole items.

use crate::tenant::{Key, TenantId};

/// Bytes before the key.
pub const HEADER_BYTES: usize = 28;
/// The "no chunk" handle, ending LRU and free lists.
pub const NIL: u32 = u32::MAX;

const CAS: usize = 0;
const EXPIRY: usize = 8;
const ATIME: usize = 12;
const FLAGS: usize = 16;
const VLEN: usize = 20;
const NKEY: usize = 24;
const BITS: usize = 25;
const TENANT: usize = 26;

/// Per-item state bits.
pub mod bits {
    /// The item is in the hash index and its class's LRU.
    pub const LINKED: u8 = 1;
    /// The chunk is on its class's free list.
    pub const FREE: u8 = 2;
    /// The item has been read at least once since it was stored.
    pub const FETCHED: u8 = 4;
    /// Meta protocol: the item was invalidated (`md I`, `ms I`) and is served as stale.
    pub const STALE: u8 = 8;
    /// Meta protocol: a client already won the right to recache this item.
    pub const TOKEN_SENT: u8 = 16;
    /// Meta protocol: the key arrived base64-encoded; replies echo it that way.
    pub const KEY_BINARY: u8 = 32;
}

#[inline]
fn read_u32(chunk: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(chunk[at..at + 4].try_into().unwrap())
}

#[inline]
fn write_u32(chunk: &mut [u8], at: usize, v: u32) {
    chunk[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Read access to an item's fields in its chunk.
#[derive(Copy, Clone)]
pub struct Item<'a>(pub &'a [u8]);

impl<'a> Item<'a> {
    #[inline]
    pub fn cas(&self) -> u64 {
        u64::from_le_bytes(self.0[CAS..CAS + 8].try_into().unwrap())
    }
    #[inline]
    pub fn expiry(&self) -> u32 {
        read_u32(self.0, EXPIRY)
    }
    #[inline]
    pub fn atime(&self) -> u32 {
        read_u32(self.0, ATIME)
    }
    #[inline]
    pub fn client_flags(&self) -> u32 {
        read_u32(self.0, FLAGS)
    }
    #[inline]
    pub fn value_len(&self) -> usize {
        read_u32(self.0, VLEN) as usize
    }
    #[inline]
    pub fn key_len(&self) -> usize {
        self.0[NKEY] as usize
    }
    #[inline]
    pub fn bits(&self) -> u8 {
        self.0[BITS]
    }
    #[inline]
    pub fn has(&self, bit: u8) -> bool {
        self.0[BITS] & bit != 0
    }
    #[inline]
    pub fn tenant(&self) -> TenantId {
        TenantId(u16::from_le_bytes([self.0[TENANT], self.0[TENANT + 1]]))
    }
    /// The item's identity: its tenant and key.
    #[inline]
    pub fn tenant_key(&self) -> Key<'a> {
        Key::new(self.tenant(), self.key())
    }
    /// The client's key bytes (without the tenant).
    #[inline]
    pub fn key(&self) -> &'a [u8] {
        &self.0[HEADER_BYTES..HEADER_BYTES + self.key_len()]
    }
    #[inline]
    pub fn value(&self) -> &'a [u8] {
        let start = HEADER_BYTES + self.key_len();
        &self.0[start..start + self.value_len()]
    }
}

/// Write access to an item's fields in its chunk.
pub struct ItemMut<'a>(pub &'a mut [u8]);

impl ItemMut<'_> {
    pub fn view(&self) -> Item<'_> {
        Item(self.0)
    }
    #[inline]
    pub fn set_cas(&mut self, cas: u64) {
        self.0[CAS..CAS + 8].copy_from_slice(&cas.to_le_bytes())
    }
    #[inline]
    pub fn set_expiry(&mut self, expiry: u32) {
        write_u32(self.0, EXPIRY, expiry)
    }
    #[inline]
    pub fn set_atime(&mut self, atime: u32) {
        write_u32(self.0, ATIME, atime)
    }
    #[inline]
    pub fn set_bits(&mut self, bits: u8) {
        self.0[BITS] = bits
    }
    #[inline]
    pub fn insert_bits(&mut self, bits: u8) {
        self.0[BITS] |= bits
    }
    #[inline]
    pub fn remove_bits(&mut self, bits: u8) {
        self.0[BITS] &= !bits
    }
    /// The value bytes, for in-place updates that keep the length (incr/decr).
    pub fn value_mut(&mut self) -> &mut [u8] {
        let view = Item(self.0);
        let (start, len) = (HEADER_BYTES + view.key_len(), view.value_len());
        &mut self.0[start..start + len]
    }

    /// Writes a fresh item: header, key, and a value assembled from `parts` (append/prepend join two).
    /// The caller has checked that it fits the chunk.
    pub fn init(
        &mut self,
        key: Key<'_>,
        client_flags: u32,
        expiry: u32,
        now: u32,
        parts: &[&[u8]],
    ) {
        let (tenant, key) = (key.tenant, key.bytes);
        let value_len: usize = parts.iter().map(|p| p.len()).sum();
        self.set_cas(0);
        write_u32(self.0, EXPIRY, expiry);
        write_u32(self.0, ATIME, now);
        write_u32(self.0, FLAGS, client_flags);
        write_u32(self.0, VLEN, value_len as u32);
        self.0[NKEY] = key.len() as u8;
        self.0[BITS] = 0;
        self.0[TENANT..TENANT + 2].copy_from_slice(&tenant.0.to_le_bytes());
        let mut at = HEADER_BYTES;
        self.0[at..at + key.len()].copy_from_slice(key);
        at += key.len();
        for part in parts {
            self.0[at..at + part.len()].copy_from_slice(part);
            at += part.len();
        }
    }
}

/// Bytes a chunk needs to hold an item with this key and value.
pub fn stored_bytes(key_len: usize, value_len: usize) -> usize {
    HEADER_BYTES + key_len + value_len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip() {
        let mut chunk = vec![0u8; 96];
        let mut item = ItemMut(&mut chunk);
        item.init(Key::new(TenantId(513), b"key"), 7, 99, 5, &[b"va", b"lue"]);
        item.set_cas(42);
        item.insert_bits(bits::LINKED | bits::FETCHED);
        let view = Item(&chunk);
        assert_eq!(view.key(), b"key");
        assert_eq!(view.tenant(), TenantId(513));
        assert_eq!(view.value(), b"value");
        assert_eq!(
            (view.client_flags(), view.expiry(), view.atime(), view.cas()),
            (7, 99, 5, 42)
        );
        assert!(view.has(bits::FETCHED) && !view.has(bits::STALE));
        assert_eq!(stored_bytes(3, 5), 36);
    }
}
