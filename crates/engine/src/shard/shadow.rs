//! Memshare's shadow queue: the keys a pool most recently evicted, as 64-bit hashes with their sizes,
//! up to a byte budget of the items they stood for. A GET miss on a key in the queue is a *shadow hit*:
//! the pool would have hit with that much more memory, so shadow hits estimate the gradient of its
//! hit-ratio curve (Memshare §3.2).
//!
//! Invariants:
//! - `bytes` is the sum of the sizes of the live entries (those in `index`), at most `capacity` after
//!   every `push`.
//! - An entry of `fifo` is live iff `index` maps its hash to its sequence number; a key evicted again
//!   replaces its older entry, which becomes dead and is skipped when it reaches the front.
//! - Memory: one map entry and at most a few fifo entries per live key; dead fifo entries are dropped
//!   at the front, and the fifo is compacted when more than half of it is dead.
//!
//! The slab shard feeds its pools' queues (held in `ShardMeters`, which also answers a GET miss) from
//! here too: `remember_evicted` as an item is evicted.

use std::collections::VecDeque;

use mrcache_profile::KeyMap;

use super::{hash_key, Shard};

pub(crate) struct ShadowQueue {
    capacity: u64,
    bytes: u64,
    next_seq: u64,
    /// Live entries: hash -> (sequence, size).
    index: KeyMap<(u64, u64)>,
    /// Entries in eviction order, oldest first: (hash, sequence).
    fifo: VecDeque<(u64, u64)>,
}

impl ShadowQueue {
    /// A queue remembering up to `capacity` bytes of evicted items; `None` or 0 keeps nothing.
    pub(crate) fn new(capacity: Option<u64>) -> ShadowQueue {
        ShadowQueue {
            capacity: capacity.unwrap_or(0),
            bytes: 0,
            next_seq: 0,
            index: KeyMap::default(),
            fifo: VecDeque::new(),
        }
    }

    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Remembers an evicted item, forgetting the oldest ones beyond the capacity.
    pub(crate) fn push(&mut self, hash: u64, size: u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if let Some((_, old)) = self.index.insert(hash, (seq, size)) {
            self.bytes -= old;
        }
        self.bytes += size;
        self.fifo.push_back((hash, seq));
        while self.bytes > self.capacity {
            let Some((h, s)) = self.fifo.pop_front() else {
                break;
            };
            if self.index.get(&h).is_some_and(|&(live, _)| live == s) {
                let (_, size) = self.index.remove(&h).expect("live entry");
                self.bytes -= size;
            }
        }
        if self.fifo.len() > 2 * self.index.len() + 64 {
            let index = &self.index;
            self.fifo
                .retain(|&(h, s)| index.get(&h).is_some_and(|&(live, _)| live == s));
        }
    }

    /// Whether `hash` is in the queue; a hit removes it (the key is about to be stored again).
    pub(crate) fn take(&mut self, hash: u64) -> bool {
        match self.index.remove(&hash) {
            Some((_, size)) => {
                self.bytes -= size;
                true
            }
            None => false,
        }
    }

    #[cfg(test)]
    fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Shard {
    /// Puts an item about to be evicted into its pool's shadow queue (when shadow queues are on).
    pub(super) fn remember_evicted(&mut self, h: u32) {
        let pool = self.part_of(h).pool();
        if !self.meters.remembers_evictions(pool) {
            return;
        }
        let it = self.item(h);
        let size = self
            .geometry
            .item_total_bytes(it.key_len(), it.client_flags(), it.value_len());
        let hash = hash_key(it.tenant_key());
        self.meters.remember_evicted(pool, hash, size as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_most_recent_evictions_up_to_its_bytes() {
        let mut q = ShadowQueue::new(Some(300));
        for h in 0..5u64 {
            q.push(h, 100);
        }
        assert_eq!(q.bytes(), 300);
        assert!(!q.take(0) && !q.take(1), "oldest forgotten");
        assert!(q.take(4));
        assert!(!q.take(4), "a hit leaves the queue");
        assert_eq!(q.bytes(), 200);
    }

    #[test]
    fn a_key_evicted_twice_counts_once() {
        let mut q = ShadowQueue::new(Some(1000));
        for _ in 0..100 {
            q.push(7, 10);
        }
        assert_eq!(q.bytes(), 10);
        assert!(q.fifo.len() <= 2 * q.index.len() + 65);
        assert!(q.take(7));
    }

    #[test]
    fn disabled_keeps_nothing() {
        let mut q = ShadowQueue::new(None);
        assert!(!q.enabled());
        q.push(1, 10);
        assert!(!q.take(1));
    }
}
