//! Hash maps keyed by 64-bit key hashes, and the bijective mixer the samplers use.
//!
//! Keys reaching the profilers are already hashes, but callers such as trace replays may pass
//! raw sequential ids; the map's hasher therefore applies one cheap multiply-xorshift so that
//! both spread over the table. [`mix64`] is a bijection on `u64`, so a mixed hash still names
//! exactly one key.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// SplitMix64's finalizer: a bijective, well-avalanching mix of a 64-bit value.
pub(crate) fn mix64(mut value: u64) -> u64 {
    value ^= value >> 30;
    value = value.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value ^= value >> 27;
    value = value.wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// Hasher for `u64` keys: one multiply and a fold of the high half into the low half.
#[derive(Debug, Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte) ^ self.0.rotate_left(8));
        }
    }

    fn write_u64(&mut self, value: u64) {
        let product =
            u128::from(value ^ self.0).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

/// A map from key hash to per-key state.
pub type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// Heap bytes of a [`KeyMap`] (buckets plus one control byte each).
pub(crate) fn key_map_memory_bytes<V>(map: &KeyMap<V>) -> usize {
    map.capacity() * (std::mem::size_of::<(u64, V)>() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_is_injective_on_a_sample_and_spreads_small_ids() {
        let mixed: std::collections::HashSet<u64> = (0..10_000u64).map(mix64).collect();
        assert_eq!(mixed.len(), 10_000);
        let below_half = (0..10_000u64)
            .filter(|&id| mix64(id) < u64::MAX / 2)
            .count();
        assert!((4_700..5_300).contains(&below_half), "{below_half}");
    }

    #[test]
    fn map_works_with_sequential_keys() {
        let mut map: KeyMap<u32> = KeyMap::default();
        for key in 0..1000u64 {
            map.insert(key, key as u32);
        }
        assert_eq!(map.get(&999), Some(&999));
        assert!(key_map_memory_bytes(&map) >= 1000 * 12);
    }
}
