//! Slab geometry: the chunk size of every slab class, and which class an item of a given size belongs to.
//!
//! Classes follow memcached 1.6's `slabs_init` exactly: class 1 holds `48 + -n` bytes, each next class is
//! `-f` times larger (truncated, then rounded up to 8 bytes) while it stays below `chunk_max / -f`, and the
//! last regular class is `chunk_max` = page/2. Defaults give memcached's 39 classes, 96 B to 512 KiB.
//! memcached stores items above `chunk_max` as chains of 512 KiB chunks; we add one final class whose chunk
//! is a whole page instead, so every item is one contiguous chunk. An item's size is accounted exactly as
//! memcached accounts it (header, CAS, key + NUL, flags suffix, value + CRLF), so items land in the same
//! class as in memcached and simulations of memcached's allocation stay faithful.

use crate::config::{EngineConfig, MAX_SLAB_CLASSES};

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
    pub chunk_size_bytes: usize,
    pub chunks_per_page: usize,
}

/// All classes of one engine, and the item-size accounting that picks among them.
#[derive(Clone, Debug)]
pub struct Geometry {
    classes: Vec<ClassGeometry>,
    page_size_bytes: usize,
    item_size_max_bytes: usize,
    item_overhead_bytes: usize,
}

impl Geometry {
    pub fn new(config: &EngineConfig) -> Geometry {
        let page_size_bytes = config.page_size_bytes();
        let chunk_max = page_size_bytes / 2;
        let factor = config.growth_factor;
        let mut classes = Vec::new();
        let mut size = crate::config::MEMCACHED_ITEM_HEADER_BYTES + config.min_chunk_data_bytes;
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
            item_overhead_bytes: config.item_overhead_bytes(),
        }
    }

    pub fn page_size_bytes(&self) -> usize {
        self.page_size_bytes
    }

    pub fn item_size_max_bytes(&self) -> usize {
        self.item_size_max_bytes
    }

    /// Number of classes (the largest valid `ClassId`).
    pub fn class_count(&self) -> usize {
        self.classes.len()
    }

    pub fn class(&self, id: ClassId) -> ClassGeometry {
        self.classes[id.index()]
    }

    pub fn classes(&self) -> impl Iterator<Item = (ClassId, ClassGeometry)> + '_ {
        self.classes
            .iter()
            .enumerate()
            .map(|(i, g)| (ClassId::from_index(i), *g))
    }

    /// Whether `id` names a class of this geometry.
    pub fn is_valid(&self, id: i64) -> bool {
        id >= 1 && id as usize <= self.classes.len()
    }

    /// memcached's accounted size of an item (`item_make_header` + CAS): what decides its class.
    pub fn item_total_bytes(&self, key_len: usize, client_flags: u32, value_len: usize) -> usize {
        let suffix = if client_flags == 0 { 0 } else { 4 };
        self.item_overhead_bytes + key_len + 1 + suffix + value_len + 2
    }

    /// The smallest class that holds an item of `total_bytes`, or `None` if it exceeds `-I`.
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
}
