//! The LRU stack of a set of keys, answering "how many distinct keys, and how many bytes of
//! them, were touched since this key's previous access" in `O(log k)`.
//!
//! Each live key owns one position on a logical timeline: the slot of its latest access. Two
//! Fenwick trees over the timeline hold a 1 and the key's size at every live slot, so the keys
//! above a key in the LRU stack are exactly the marks after its slot. The timeline is compacted
//! (live keys renumbered in access order) whenever it fills, which keeps its length within a
//! constant factor of the live key count: memory is `O(keys)`, not `O(accesses)`.

use crate::fenwick::Fenwick;
use crate::keymap::{key_map_memory_bytes, KeyMap};

/// Smallest timeline, so tiny stacks do not compact on every few accesses.
const MIN_TIMELINE_SLOTS: usize = 1024;
/// Timeline length after compaction, in multiples of the live key count: compaction costs
/// `O(k log k)` and happens at most every `(FACTOR - 1) * k` accesses, `O(log k)` amortised.
const TIMELINE_GROWTH_FACTOR: usize = 4;

#[derive(Debug, Clone, Copy)]
struct Slot {
    position: usize,
    size_bytes: u32,
    /// Accesses to the key since it entered the stack, this one included.
    accesses: u32,
}

/// What one access found in the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StackAccess {
    /// First access to the key (or first since it was removed).
    Cold,
    /// The key was in the stack below `keys_above` distinct keys holding `bytes_above` bytes;
    /// this is its `accesses`-th access since it entered the stack.
    Reuse {
        keys_above: u64,
        bytes_above: u64,
        accesses: u32,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct LruStack {
    slots: KeyMap<Slot>,
    key_marks: Fenwick,
    byte_marks: Fenwick,
    next_position: usize,
    total_bytes: u64,
}

impl Default for LruStack {
    fn default() -> Self {
        Self {
            slots: KeyMap::default(),
            key_marks: Fenwick::from_values(&[0; MIN_TIMELINE_SLOTS]),
            byte_marks: Fenwick::from_values(&[0; MIN_TIMELINE_SLOTS]),
            next_position: 0,
            total_bytes: 0,
        }
    }
}

impl LruStack {
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Moves `key` to the top of the stack and reports where it was.
    pub(crate) fn access(&mut self, key: u64, size_bytes: u32) -> StackAccess {
        if self.next_position == self.key_marks.len() {
            self.compact();
        }
        let position = self.next_position;
        self.next_position += 1;
        let slot = self.slots.entry(key).or_insert(Slot {
            position,
            size_bytes,
            accesses: 0,
        });
        let previous = (slot.accesses > 0).then_some(*slot);
        slot.accesses = slot.accesses.saturating_add(1);
        slot.position = position;
        slot.size_bytes = size_bytes;
        let accesses = slot.accesses;
        let access = match previous {
            None => StackAccess::Cold,
            Some(old) => {
                // Every live key, this one included, has one mark; those after `old` are above.
                let keys_above =
                    self.slots.len() as u64 - self.key_marks.prefix_sum_inclusive(old.position);
                let bytes_above =
                    self.total_bytes - self.byte_marks.prefix_sum_inclusive(old.position);
                self.key_marks.sub(old.position, 1);
                self.byte_marks.sub(old.position, u64::from(old.size_bytes));
                self.total_bytes -= u64::from(old.size_bytes);
                StackAccess::Reuse {
                    keys_above,
                    bytes_above,
                    accesses,
                }
            }
        };
        self.key_marks.add(position, 1);
        self.byte_marks.add(position, u64::from(size_bytes));
        self.total_bytes += u64::from(size_bytes);
        access
    }

    /// Removes `key` from the stack; a later access to it is cold.
    pub(crate) fn remove(&mut self, key: u64) {
        if let Some(old) = self.slots.remove(&key) {
            self.key_marks.sub(old.position, 1);
            self.byte_marks.sub(old.position, u64::from(old.size_bytes));
            self.total_bytes -= u64::from(old.size_bytes);
        }
    }

    /// Renumbers live keys `0..k` in access order and resizes the timeline.
    fn compact(&mut self) {
        let mut live: Vec<(usize, u64)> = self
            .slots
            .iter()
            .map(|(&key, slot)| (slot.position, key))
            .collect();
        live.sort_unstable_by_key(|&(position, _)| position);
        let slots_len = (live.len() * TIMELINE_GROWTH_FACTOR).max(MIN_TIMELINE_SLOTS);
        let mut key_values = vec![0u64; slots_len];
        let mut byte_values = vec![0u64; slots_len];
        for (new_position, &(_, key)) in live.iter().enumerate() {
            let slot = self.slots.get_mut(&key).expect("live key has a slot");
            slot.position = new_position;
            key_values[new_position] = 1;
            byte_values[new_position] = u64::from(slot.size_bytes);
        }
        self.key_marks = Fenwick::from_values(&key_values);
        self.byte_marks = Fenwick::from_values(&byte_values);
        self.next_position = live.len();
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        key_map_memory_bytes(&self.slots)
            + self.key_marks.memory_bytes()
            + self.byte_marks.memory_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distances by a naive list, for comparison.
    fn naive_keys_above(history: &[u64], key: u64) -> Option<u64> {
        let last = history.iter().rposition(|&k| k == key)?;
        let mut seen: Vec<u64> = history[last + 1..].to_vec();
        seen.sort_unstable();
        seen.dedup();
        Some(seen.len() as u64)
    }

    #[test]
    fn matches_naive_stack_across_compactions() {
        let mut stack = LruStack::default();
        let mut history = Vec::new();
        let mut state = 7u64;
        for _ in 0..5000 {
            state = crate::keymap::mix64(state);
            let key = state % 300;
            let expected = naive_keys_above(&history, key);
            match stack.access(key, 10) {
                StackAccess::Cold => assert_eq!(expected, None),
                StackAccess::Reuse {
                    keys_above,
                    bytes_above,
                    ..
                } => {
                    assert_eq!(Some(keys_above), expected);
                    assert_eq!(bytes_above, keys_above * 10);
                }
            }
            history.push(key);
        }
        assert_eq!(stack.len(), 300);
        assert_eq!(stack.total_bytes(), 3000);
    }

    #[test]
    fn bytes_above_use_latest_sizes_and_remove_forgets() {
        let mut stack = LruStack::default();
        assert_eq!(stack.access(1, 100), StackAccess::Cold);
        stack.access(2, 5);
        stack.access(3, 7);
        stack.access(2, 50);
        assert_eq!(
            stack.access(1, 1),
            StackAccess::Reuse {
                keys_above: 2,
                bytes_above: 57,
                accesses: 2
            }
        );
        stack.remove(3);
        assert_eq!(
            stack.access(2, 1),
            StackAccess::Reuse {
                keys_above: 1,
                bytes_above: 1,
                accesses: 3
            }
        );
        assert_eq!(stack.access(3, 1), StackAccess::Cold);
    }
}
