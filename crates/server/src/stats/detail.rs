//! `stats detail on|off|dump`: memcached's per-prefix counts of gets, hits, sets and deletes.
//!
//! A key's prefix is its bytes before the first `-D` delimiter (`:` by default); keys without one are
//! not counted, as in memcached. Counting is off until `stats detail on`; `stats detail off` stops it and
//! keeps the counts; `stats detail dump` prints `PREFIX <p> get <n> hit <n> set <n> del <n>` per prefix,
//! then `END`; `stats reset` clears them. What is counted is what memcached counts: every key of a
//! get/gets/gat/gats and of a binary get, gat or touch (hit when found), every text or binary storage
//! command (whatever its outcome), every text or binary delete (whatever its outcome); not the meta
//! commands.
//!
//! The dump lists prefixes in memcached's order: memcached keeps them in a 256-bucket hash table
//! (`PREFIX_HASH_SIZE`) by its default hash, MurmurHash3 (x86, 32-bit, seed 0), each new prefix at the
//! head of its bucket, and dumps bucket by bucket; we keep the same table, so the dump is byte for byte
//! memcached's.
//!
//! Invariants: at most [`MAX_PREFIXES`] prefixes are held (memcached holds every prefix it ever sees, so
//! a client sending random prefixes grows its memory without bound; past the cap new prefixes are not
//! counted, and `stats detail dump` says how many were dropped in a last `PREFIX` line named
//! `*overflow*`). Off costs one relaxed load per request; on, one short leaf lock per counted key.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

/// Most distinct prefixes counted.
pub const MAX_PREFIXES: usize = 10_000;
/// memcached's `PREFIX_HASH_SIZE`.
const BUCKETS: usize = 256;

/// The prefixes, in memcached's table: bucket by hash, newest first within a bucket.
#[derive(Debug)]
struct Table {
    buckets: Vec<Vec<(Vec<u8>, Counts)>>,
    len: usize,
}

impl Table {
    fn new() -> Table {
        Table {
            buckets: vec![Vec::new(); BUCKETS],
            len: 0,
        }
    }
}

/// MurmurHash3 x86 32-bit with seed 0: memcached 1.6's default `hash_algorithm`.
fn murmur3_32(data: &[u8]) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h: u32 = 0;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let mut k = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h ^= k;
        h = h.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    let mut k: u32 = 0;
    for (i, &b) in tail.iter().enumerate() {
        k ^= u32::from(b) << (8 * i);
    }
    if !tail.is_empty() {
        h ^= k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// Counts of one prefix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    get: u64,
    hit: u64,
    set: u64,
    del: u64,
}

/// What was done to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// A get-type lookup, and whether it found the item.
    Get {
        /// Found.
        hit: bool,
    },
    /// A storage command.
    Set,
    /// A delete.
    Delete,
}

/// The server's per-prefix counts (one per server, in `ServerContext`).
#[derive(Debug)]
pub struct DetailStats {
    enabled: AtomicBool,
    delimiter: u8,
    prefixes: Mutex<Table>,
    dropped: AtomicU64,
}

impl DetailStats {
    /// Off, with prefixes ending at `delimiter`.
    pub fn new(delimiter: u8) -> DetailStats {
        DetailStats {
            enabled: AtomicBool::new(false),
            delimiter,
            prefixes: Mutex::new(Table::new()),
            dropped: AtomicU64::new(0),
        }
    }

    /// Whether counting is on (`stats settings` `detail_enabled`).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    /// `stats detail on` / `off`.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Relaxed);
    }

    /// Counts `op` on `key`, when on and the key has a prefix.
    #[inline]
    pub fn record(&self, key: &[u8], op: Op) {
        if !self.enabled() {
            return;
        }
        let Some(end) = key.iter().position(|&b| b == self.delimiter) else {
            return;
        };
        let prefix = &key[..end];
        let bucket = murmur3_32(prefix) as usize % BUCKETS;
        let mut table = self.prefixes.lock();
        let full = table.len >= MAX_PREFIXES;
        let entries = &mut table.buckets[bucket];
        let at = match entries.iter().position(|(p, _)| p.as_slice() == prefix) {
            Some(at) => at,
            None if full => {
                self.dropped.fetch_add(1, Relaxed);
                return;
            }
            None => {
                entries.insert(0, (prefix.to_vec(), Counts::default()));
                table.len += 1;
                0
            }
        };
        let counts = &mut table.buckets[bucket][at].1;
        match op {
            Op::Get { hit } => {
                counts.get += 1;
                counts.hit += u64::from(hit);
            }
            Op::Set => counts.set += 1,
            Op::Delete => counts.del += 1,
        }
    }

    /// `stats detail dump`: one `PREFIX` line per prefix, then `END`.
    pub fn dump(&self, out: &mut Vec<u8>) {
        let table = self.prefixes.lock();
        for (prefix, c) in table.buckets.iter().flatten() {
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(prefix);
            // Writing to a Vec cannot fail.
            let _ = write!(
                out,
                " get {} hit {} set {} del {}\r\n",
                c.get, c.hit, c.set, c.del
            );
        }
        let dropped = self.dropped.load(Relaxed);
        if dropped > 0 {
            let _ = write!(
                out,
                "PREFIX *overflow* get 0 hit 0 set 0 del 0 dropped {dropped}\r\n"
            );
        }
        out.extend_from_slice(b"END\r\n");
    }

    /// `stats reset`: forgets every prefix.
    pub fn clear(&self) {
        *self.prefixes.lock() = Table::new();
        self.dropped.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_prefix_only_when_on_and_dumps_in_memcached_form() {
        let d = DetailStats::new(b':');
        d.record(b"a:1", Op::Set);
        assert!(!d.enabled());
        d.set_enabled(true);
        d.record(b"a:1", Op::Set);
        d.record(b"a:1", Op::Get { hit: true });
        d.record(b"a:2", Op::Get { hit: false });
        d.record(b"a:1", Op::Delete);
        d.record(b"nodelim", Op::Set);
        d.record(b"b:x:y", Op::Get { hit: false });
        let mut out = Vec::new();
        d.dump(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            // memcached's order: `b` hashes to an earlier bucket than `a`.
            "PREFIX b get 1 hit 0 set 0 del 0\r\nPREFIX a get 2 hit 1 set 1 del 1\r\nEND\r\n"
        );
        d.clear();
        let mut out = Vec::new();
        d.dump(&mut out);
        assert_eq!(out, b"END\r\n");
    }

    #[test]
    fn murmur3_matches_the_reference_vectors() {
        // MurmurHash3_x86_32 with seed 0 (SMHasher's reference implementation).
        assert_eq!(murmur3_32(b""), 0);
        assert_eq!(murmur3_32(b"hello"), 0x248b_fa47);
        assert_eq!(murmur3_32(b"Hello, world!"), 0xc036_3e43);
        assert_eq!(
            murmur3_32(b"The quick brown fox jumps over the lazy dog"),
            0x2e4f_f723
        );
    }

    #[test]
    fn prefixes_are_bounded() {
        let d = DetailStats::new(b'/');
        d.set_enabled(true);
        for i in 0..MAX_PREFIXES + 5 {
            d.record(format!("{i}/k").as_bytes(), Op::Set);
        }
        assert_eq!(d.prefixes.lock().len, MAX_PREFIXES);
        let mut out = Vec::new();
        d.dump(&mut out);
        assert!(String::from_utf8(out)
            .unwrap()
            .contains("dropped 5\r\nEND\r\n"));
    }
}
