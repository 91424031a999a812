//! The log's ghost: fingerprints of the keys its cleaner evicted lately, so that a key written again
//! soon after its eviction (the `set` that follows the miss the eviction caused) is recognised and
//! starts with an access already counted. Under the frequency-aware rankings (density, LFU, segmented
//! LRU) it then outranks the items written once and never read when it reaches a cleaning pass: the
//! ghost of S3-FIFO and ARC, which tells a key with a history of reuse from a one-hit wonder.
//!
//! Layout: `WAYS`-way buckets of 32-bit fingerprints with the eviction sequence number at which each was
//! remembered. "Lately" is the last `capacity` evictions (about as many as the shard holds items, as
//! S3-FIFO sizes its ghost by its main queue); a full bucket drops its oldest entry. False positives are
//! possible (a 31-bit fingerprint match within one bucket) and only cost a head start for a new key.
//!
//! Memory: 8 bytes per entry, with entries between the shard's live items and twice as many; nothing
//! before the first eviction. The table grows (dropping what it held) when the shard's items outgrow it.
//!
//! Invariants: `fps.len() == stamps.len() == buckets * WAYS`, `buckets` a power of two; a fingerprint
//! is never 0 (0 marks an empty slot); a recalled entry is cleared, so one eviction earns one head start.

/// Slots per bucket.
const WAYS: usize = 4;
/// The smallest table, in buckets.
const MIN_BUCKETS: usize = 64;

/// Recently evicted keys of one log shard (see the module doc).
#[derive(Default)]
pub(super) struct Ghost {
    fps: Vec<u32>,
    stamps: Vec<u32>,
    /// Evictions remembered so far (wrapping); an entry is recent while `seq - stamp < capacity`.
    seq: u32,
}

#[inline]
fn fingerprint(hash: u64) -> u32 {
    (hash >> 32) as u32 | 1
}

impl Ghost {
    fn buckets(&self) -> usize {
        self.fps.len() / WAYS
    }

    fn capacity(&self) -> u32 {
        self.fps.len() as u32
    }

    fn bucket(&self, hash: u64) -> std::ops::Range<usize> {
        let b = (hash as usize) & (self.buckets() - 1);
        b * WAYS..(b + 1) * WAYS
    }

    /// Remembers an evicted key; `live_items` (the shard's items now) sizes the table.
    pub(super) fn remember(&mut self, hash: u64, live_items: usize) {
        let want = (live_items / WAYS).next_power_of_two().max(MIN_BUCKETS);
        if self.buckets() < want {
            self.fps = vec![0; want * WAYS];
            self.stamps = vec![0; want * WAYS];
        }
        self.seq = self.seq.wrapping_add(1);
        let range = self.bucket(hash);
        let fp = fingerprint(hash);
        let seq = self.seq;
        // An empty or matching slot, else the oldest.
        let slot = range
            .clone()
            .find(|&i| self.fps[i] == 0 || self.fps[i] == fp)
            .unwrap_or_else(|| {
                range
                    .max_by_key(|&i| seq.wrapping_sub(self.stamps[i]))
                    .expect("a bucket has slots")
            });
        self.fps[slot] = fp;
        self.stamps[slot] = seq;
    }

    /// Whether `hash` was evicted lately; forgets it if so.
    pub(super) fn recall(&mut self, hash: u64) -> bool {
        if self.fps.is_empty() {
            return false;
        }
        let fp = fingerprint(hash);
        let (seq, capacity) = (self.seq, self.capacity());
        for i in self.bucket(hash) {
            if self.fps[i] == fp {
                self.fps[i] = 0;
                return seq.wrapping_sub(self.stamps[i]) < capacity;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u64) -> u64 {
        i.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }

    #[test]
    fn recalls_recent_evictions_once() {
        let mut g = Ghost::default();
        assert!(!g.recall(h(1)));
        g.remember(h(1), 10);
        g.remember(h(2), 10);
        assert!(g.recall(h(1)));
        assert!(!g.recall(h(1)), "one eviction, one head start");
        assert!(!g.recall(h(3)));
        assert!(g.recall(h(2)));
    }

    #[test]
    fn forgets_what_is_older_than_its_capacity() {
        let mut g = Ghost::default();
        g.remember(h(0), 0);
        let capacity = g.capacity() as u64;
        for i in 1..=capacity {
            g.remember(h(1_000_000 + i), 0);
        }
        assert!(!g.recall(h(0)), "past the window");
        assert!(g.recall(h(1_000_000 + capacity)));
    }

    #[test]
    fn grows_with_the_shard() {
        let mut g = Ghost::default();
        g.remember(h(1), 0);
        let small = g.capacity();
        g.remember(h(2), 100_000);
        assert!(g.capacity() as usize >= 100_000 && g.capacity() as usize <= 2 * 100_000 + WAYS);
        assert!(g.capacity() > small);
        assert!(g.recall(h(2)));
    }
}
