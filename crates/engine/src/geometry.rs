//! Slab geometry: the chunk size of every slab class, and which class an item of a given size belongs to.
//!
//! Classes follow memcached 1.6's `slabs_init` exactly: class 1 holds `header + -n` bytes, each next class
//! is `-f` times larger (truncated, then rounded up to 8 bytes) while it stays below `chunk_max / -f`, and
//! the last regular class is `chunk_max` = page/2. memcached stores items above `chunk_max` as chains of
//! 512 KiB chunks; we add one final class whose chunk is a whole page instead, so every item is one
//! contiguous chunk.
//!
//! Item accounting (`config::ItemAccounting`) decides `header` and how an item's size is counted:
//! - `Memcached`: header 48, so defaults give memcached's 39 classes, 96 B to 512 KiB; an item counts as
//!   memcached counts it (header, CAS, key + NUL, flags suffix, value + CRLF), so it lands in the same
//!   class as in memcached and simulations of memcached's allocation stay faithful.
//! - `Compact`: header 28 (`item::HEADER_BYTES`), so class 1 is 80 B by default; an item counts as the
//!   bytes it occupies (`item::stored_bytes`).
//!
//! Invariants: an item's accounted size is at least `item::stored_bytes`, so its class's chunk holds it;
//! and whether an item is too large is decided by memcached's accounting against `-I` under both, so
//! `SERVER_ERROR object too large for cache` answers exactly the items memcached refuses.

use crate::config::{EngineConfig, ItemAccounting, MAX_SLAB_CLASSES, MEMCACHED_ITEM_HEADER_BYTES};
use crate::item;

/// memcached's `CHUNK_ALIGN_BYTES`.
const CHUNK_ALIGN_BYTES: usize = 8;

/// A slab class id as memcached numbers them: 1 is the smallest chunk. 0 is never a class.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClassId(pub u8);

impl ClassId {
    /// Zero-based index into per-class arrays.
    pub fn index(self) -> usize {
        self.0 as usize - 1
    }

    /// The class at zero-based `index`.
    pub fn from_index(index: usize) -> ClassId {
        ClassId(index as u8 + 1)
    }
}

/// One class: its chunk size and how many chunks a page holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ClassGeometry {
    /// Bytes of each chunk (a multiple of 8).
    pub chunk_size_bytes: usize,
    /// Chunks one page holds.
    pub chunks_per_page: usize,
}

/// All classes of one engine, and the item-size accounting that picks among them.
#[derive(Clone, Debug)]
pub struct Geometry {
    classes: Vec<ClassGeometry>,
    page_size_bytes: usize,
    item_size_max_bytes: usize,
    /// memcached's fixed bytes per item (header and CAS): the `-I` limit, and the class under `Memcached`.
    memcached_item_overhead_bytes: usize,
    accounting: ItemAccounting,
}

impl Geometry {
    /// memcached's slab ladder for `config`: from header + `-n`, growing by `-f` and aligned to
    /// 8 bytes, up to half a page, then a half-page class and a whole-page class.
    pub fn new(config: &EngineConfig) -> Geometry {
        let page_size_bytes = config.page_size_bytes();
        let chunk_max = page_size_bytes / 2;
        let factor = config.growth_factor;
        let mut classes = Vec::new();
        let header = match config.item_accounting {
            ItemAccounting::Memcached => MEMCACHED_ITEM_HEADER_BYTES,
            ItemAccounting::Compact => item::HEADER_BYTES,
        };
        let mut size = header + config.min_chunk_data_bytes;
        while classes.len() < MAX_SLAB_CLASSES - 2 && (size as f64) < chunk_max as f64 / factor {
            if !size.is_multiple_of(CHUNK_ALIGN_BYTES) {
                size += CHUNK_ALIGN_BYTES - size % CHUNK_ALIGN_BYTES;
            }
            classes.push(ClassGeometry {
                chunk_size_bytes: size,
                chunks_per_page: page_size_bytes / size,
            });
            // memcached multiplies an unsigned int by a double and truncates.
            size = (size as f64 * factor) as usize;
        }
        classes.push(ClassGeometry {
            chunk_size_bytes: chunk_max,
            chunks_per_page: page_size_bytes / chunk_max,
        });
        classes.push(ClassGeometry {
            chunk_size_bytes: page_size_bytes,
            chunks_per_page: 1,
        });
        Geometry {
            classes,
            page_size_bytes,
            item_size_max_bytes: config.item_size_max_bytes,
            memcached_item_overhead_bytes: config.memcached_item_overhead_bytes(),
            accounting: config.item_accounting,
        }
    }

    /// Bytes of one page.
    pub fn page_size_bytes(&self) -> usize {
        self.page_size_bytes
    }

    /// `-I`: the largest item, by memcached's accounting.
    pub fn item_size_max_bytes(&self) -> usize {
        self.item_size_max_bytes
    }

    /// Number of classes (the largest valid `ClassId`).
    pub fn class_count(&self) -> usize {
        self.classes.len()
    }

    /// The geometry of class `id` (which must be one of this geometry).
    pub fn class(&self, id: ClassId) -> ClassGeometry {
        self.classes[id.index()]
    }

    /// Every class, smallest chunk first.
    pub fn classes(&self) -> impl Iterator<Item = (ClassId, ClassGeometry)> + '_ {
        self.classes
            .iter()
            .enumerate()
            .map(|(i, g)| (ClassId::from_index(i), *g))
    }

    /// Whether `id`, a class number as memcached's commands spell it, names a class of this geometry.
    pub fn is_valid(&self, id: i64) -> bool {
        id >= 1 && id as usize <= self.classes.len()
    }

    /// Whether `id` is a class of this geometry.
    pub fn contains(&self, id: ClassId) -> bool {
        self.is_valid(i64::from(id.0))
    }

    /// How item sizes pick classes.
    pub fn accounting(&self) -> ItemAccounting {
        self.accounting
    }

    /// memcached's size of an item (`item_make_header` + CAS), saturating: what `-I` limits.
    pub fn memcached_item_bytes(
        &self,
        key_len: usize,
        client_flags: u32,
        value_len: usize,
    ) -> usize {
        let suffix = if client_flags == 0 { 0 } else { 4 };
        self.memcached_item_overhead_bytes
            .saturating_add(key_len + 1 + suffix + 2)
            .saturating_add(value_len)
    }

    /// The accounted size of an item: what decides its class, and what `bytes` and the profilers count.
    pub fn item_total_bytes(&self, key_len: usize, client_flags: u32, value_len: usize) -> usize {
        match self.accounting {
            ItemAccounting::Memcached => {
                self.memcached_item_bytes(key_len, client_flags, value_len)
            }
            ItemAccounting::Compact => item::stored_bytes(key_len, value_len),
        }
    }

    /// Whether memcached would store an item this large (`item_size_ok`): its size within `-I`.
    pub fn within_item_limit(&self, key_len: usize, client_flags: u32, value_len: usize) -> bool {
        self.memcached_item_bytes(key_len, client_flags, value_len) <= self.item_size_max_bytes
    }

    /// The class of an item, or `None` if it is larger than memcached allows (`-I`).
    pub fn class_for_item(
        &self,
        key_len: usize,
        client_flags: u32,
        value_len: usize,
    ) -> Option<ClassId> {
        if !self.within_item_limit(key_len, client_flags, value_len) {
            return None;
        }
        self.class_for(self.item_total_bytes(key_len, client_flags, value_len))
    }

    /// The smallest class that holds `total_bytes` of accounted size, or `None` if it exceeds `-I` (which
    /// alone does not make an item too large under `Compact`: see `class_for_item`).
    pub fn class_for(&self, total_bytes: usize) -> Option<ClassId> {
        if total_bytes == 0 || total_bytes > self.item_size_max_bytes {
            return None;
        }
        let index = self
            .classes
            .partition_point(|c| c.chunk_size_bytes < total_bytes);
        (index < self.classes.len()).then(|| ClassId::from_index(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_classes_match_memcached_1_6_18() {
        let g = Geometry::new(&EngineConfig::default());
        let sizes: Vec<usize> = g.classes().map(|(_, c)| c.chunk_size_bytes).collect();
        let memcached = [
            96, 120, 152, 192, 240, 304, 384, 480, 600, 752, 944, 1184, 1480, 1856, 2320, 2904,
            3632, 4544, 5680, 7104, 8880, 11104, 13880, 17352, 21696, 27120, 33904, 42384, 52984,
            66232, 82792, 103496, 129376, 161720, 202152, 252696, 315872, 394840, 524288,
        ];
        assert_eq!(&sizes[..39], &memcached[..]);
        assert_eq!(sizes[39], 1 << 20, "the extra whole-page class");
        let per_page: Vec<usize> = g.classes().map(|(_, c)| c.chunks_per_page).collect();
        assert_eq!(&per_page[..5], &[10922, 8738, 6898, 5461, 4369]);
        assert_eq!(&per_page[36..], &[3, 2, 2, 1]);
    }

    #[test]
    fn item_accounting_matches_memcached() {
        let g = Geometry::new(&EngineConfig::default());
        // `me dbg` on memcached 1.6.18 for value "x": size=63, class 1.
        assert_eq!(g.item_total_bytes(3, 0, 1), 63);
        assert_eq!(g.class_for(63), Some(ClassId(1)));
        // The largest value for a 1-byte key with flags 0 is 1,048,516 bytes.
        assert!(g.class_for(g.item_total_bytes(1, 0, 1_048_516)).is_some());
        assert!(g.class_for(g.item_total_bytes(1, 0, 1_048_517)).is_none());
        assert_eq!(g.class_for(97), Some(ClassId(2)));
        assert_eq!(g.class_for(524_288), Some(ClassId(39)));
        assert_eq!(g.class_for(524_289), Some(ClassId(40)));
    }

    fn compact(config: EngineConfig) -> Geometry {
        Geometry::new(&EngineConfig {
            item_accounting: ItemAccounting::Compact,
            ..config
        })
    }

    #[test]
    fn compact_ladder_starts_at_our_header_plus_n() {
        let g = compact(EngineConfig::default());
        let sizes: Vec<usize> = g.classes().map(|(_, c)| c.chunk_size_bytes).collect();
        // 28 + 48 = 76, rounded to 80; then x1.25 truncated and rounded up to 8, as memcached does.
        assert_eq!(&sizes[..6], &[80, 104, 136, 176, 224, 280]);
        assert_eq!(&sizes[sizes.len() - 2..], &[524_288, 1 << 20]);
        assert_eq!(g.class(ClassId(1)).chunks_per_page, 13_107);
        // -n still sets the smallest chunk's payload: 28 + 100 = 128.
        let g = compact(EngineConfig {
            min_chunk_data_bytes: 100,
            ..EngineConfig::default()
        });
        assert_eq!(g.class(ClassId(1)).chunk_size_bytes, 128);
    }

    #[test]
    fn compact_accounting_counts_the_stored_bytes() {
        let g = compact(EngineConfig::default());
        // A 32-byte key and a 10-byte ETC value: 70 bytes in the 80-byte class, where memcached accounts
        // 56 + 33 + 12 = 101 bytes and uses its 120-byte class 2.
        assert_eq!(g.item_total_bytes(32, 0, 10), 70);
        assert_eq!(g.item_total_bytes(32, 0, 10), item::stored_bytes(32, 10));
        assert_eq!(g.memcached_item_bytes(32, 0, 10), 101);
        assert_eq!(g.class_for_item(32, 0, 10), Some(ClassId(1)));
        // Flags cost nothing extra: they are in our header.
        assert_eq!(g.item_total_bytes(32, 7, 10), 70);
        assert_eq!(
            g.class_for_item(32, 0, 20),
            Some(ClassId(1)),
            "80 bytes fit"
        );
        assert_eq!(g.class_for_item(32, 0, 21), Some(ClassId(2)));
        let m = Geometry::new(&EngineConfig::default());
        assert_eq!(m.class_for_item(32, 0, 10), Some(ClassId(2)));
        assert_eq!(m.item_total_bytes(32, 0, 10), 101);
    }

    #[test]
    fn the_item_limit_is_memcached_s_under_both_accountings() {
        for accounting in [ItemAccounting::Memcached, ItemAccounting::Compact] {
            for item_size_max_bytes in [1 << 20, 2 << 20, 1024, 4000] {
                let g = Geometry::new(&EngineConfig {
                    item_accounting: accounting,
                    item_size_max_bytes,
                    memory_limit_bytes: 64 << 20,
                    ..EngineConfig::default()
                });
                // memcached: 56 + key + 1 + value + 2 (+ 4 with flags) <= -I.
                let max_value = item_size_max_bytes - 60;
                assert!(
                    g.class_for_item(1, 0, max_value).is_some(),
                    "{accounting:?}"
                );
                assert!(g.class_for_item(1, 0, max_value + 1).is_none());
                assert!(g.class_for_item(1, 9, max_value - 4).is_some());
                assert!(g.class_for_item(1, 9, max_value - 3).is_none());
                assert!(g.within_item_limit(250, 0, item_size_max_bytes - 309));
                assert!(!g.within_item_limit(250, 0, item_size_max_bytes - 308));
                assert!(!g.within_item_limit(1, 0, usize::MAX));
            }
        }
        // -C: memcached's header has no CAS, so 8 more value bytes fit, under both.
        for accounting in [ItemAccounting::Memcached, ItemAccounting::Compact] {
            let g = Geometry::new(&EngineConfig {
                item_accounting: accounting,
                use_cas: false,
                ..EngineConfig::default()
            });
            assert!(g.class_for_item(1, 0, 1_048_524).is_some());
            assert!(g.class_for_item(1, 0, 1_048_525).is_none());
        }
    }
}
