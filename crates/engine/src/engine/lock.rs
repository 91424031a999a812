//! The shard locks, with what they cost counted: how often a thread had to wait for one, for how long
//! in all and at most, and the longest any thread held one (`stats`: `shard_lock_*`). These are the
//! figures that say whether shards serialise the workers (issue 38), readable on any machine.
//!
//! Counting costs an uncontended acquisition one `try_lock` and two reads of the monotonic clock (the
//! hold's start and end); only a contended one also times its wait. The counters are relaxed atomics
//! beside the mutex, written on contention and when a hold beats the longest so far (a read first, so
//! the usual hold writes nothing). They describe the server's timing only: no engine decision reads
//! them, so the simulator stays deterministic.
//!
//! Invariant: every guard comes from [`ShardLock::lock`], so every hold is measured.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use parking_lot::{Mutex, MutexGuard};

use crate::layout::AnyShard;

/// One shard behind its mutex, with its lock counters.
pub(crate) struct ShardLock {
    shard: Mutex<AnyShard>,
    waits: AtomicU64,
    wait_ns: AtomicU64,
    longest_wait_ns: AtomicU64,
    longest_hold_ns: AtomicU64,
}

/// What one shard's lock has cost since start (or `stats reset`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    /// Acquisitions that found the lock held and waited.
    pub waits: u64,
    /// Nanoseconds spent waiting, all waits together.
    pub wait_ns: u64,
    /// The longest single wait, nanoseconds.
    pub longest_wait_ns: u64,
    /// The longest single hold, nanoseconds.
    pub longest_hold_ns: u64,
}

impl LockStats {
    /// Every shard's figures together: waits and wait time summed, the longest of the longest.
    pub fn combine(all: impl IntoIterator<Item = LockStats>) -> LockStats {
        all.into_iter()
            .fold(LockStats::default(), |a, b| LockStats {
                waits: a.waits + b.waits,
                wait_ns: a.wait_ns + b.wait_ns,
                longest_wait_ns: a.longest_wait_ns.max(b.longest_wait_ns),
                longest_hold_ns: a.longest_hold_ns.max(b.longest_hold_ns),
            })
    }
}

/// A held shard lock; the hold is measured when it drops.
pub(crate) struct ShardGuard<'a> {
    guard: MutexGuard<'a, AnyShard>,
    since: Instant,
    longest_hold_ns: &'a AtomicU64,
}

impl ShardLock {
    pub(crate) fn new(shard: AnyShard) -> ShardLock {
        ShardLock {
            shard: Mutex::new(shard),
            waits: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
            longest_wait_ns: AtomicU64::new(0),
            longest_hold_ns: AtomicU64::new(0),
        }
    }

    /// Takes the lock, counting the wait if it was held.
    #[inline]
    pub(crate) fn lock(&self) -> ShardGuard<'_> {
        let guard = match self.shard.try_lock() {
            Some(guard) => guard,
            None => {
                let start = Instant::now();
                let guard = self.shard.lock();
                let waited = nanos(start);
                self.waits.fetch_add(1, Relaxed);
                self.wait_ns.fetch_add(waited, Relaxed);
                raise(&self.longest_wait_ns, waited);
                guard
            }
        };
        ShardGuard {
            guard,
            since: Instant::now(),
            longest_hold_ns: &self.longest_hold_ns,
        }
    }

    /// The counters now.
    pub(crate) fn stats(&self) -> LockStats {
        LockStats {
            waits: self.waits.load(Relaxed),
            wait_ns: self.wait_ns.load(Relaxed),
            longest_wait_ns: self.longest_wait_ns.load(Relaxed),
            longest_hold_ns: self.longest_hold_ns.load(Relaxed),
        }
    }

    /// `stats reset`: the counters start again from 0.
    pub(crate) fn reset_stats(&self) {
        for counter in [
            &self.waits,
            &self.wait_ns,
            &self.longest_wait_ns,
            &self.longest_hold_ns,
        ] {
            counter.store(0, Relaxed);
        }
    }
}

impl Deref for ShardGuard<'_> {
    type Target = AnyShard;

    #[inline]
    fn deref(&self) -> &AnyShard {
        &self.guard
    }
}

impl DerefMut for ShardGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut AnyShard {
        &mut self.guard
    }
}

impl Drop for ShardGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        raise(self.longest_hold_ns, nanos(self.since));
    }
}

fn nanos(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Raises `longest` to `value` if it is longer, writing only then.
#[inline]
fn raise(longest: &AtomicU64, value: u64) {
    if value > longest.load(Relaxed) {
        longest.fetch_max(value, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Clock, Engine, EngineConfig, Key};

    #[test]
    fn a_request_that_finds_its_shard_held_is_counted_as_a_wait() {
        let engine = Engine::new(EngineConfig {
            shards: 1,
            ..EngineConfig::default()
        })
        .unwrap();
        let (held, released) = (
            std::sync::Barrier::new(2),
            std::time::Duration::from_millis(30),
        );
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _guard = engine.shards[0].lock();
                held.wait();
                std::thread::sleep(released);
            });
            held.wait();
            // The holder keeps the only shard for `released`: this get must wait for it.
            engine.get(Key::default_tenant(b"k"), Clock::logical(1), |_| ());
        });
        let stats = LockStats::combine(engine.lock_stats());
        assert!(stats.waits >= 1, "{stats:?}");
        assert!(
            stats.longest_hold_ns >= released.as_nanos() as u64,
            "{stats:?}"
        );
        assert!(stats.wait_ns >= stats.longest_wait_ns && stats.longest_wait_ns > 0);
        engine.reset_stats();
        assert_eq!(
            LockStats::combine(engine.lock_stats()),
            LockStats::default()
        );
    }

    #[test]
    fn combined_figures_sum_waits_and_keep_the_longest() {
        let a = LockStats {
            waits: 2,
            wait_ns: 30,
            longest_wait_ns: 20,
            longest_hold_ns: 5,
        };
        let b = LockStats {
            waits: 1,
            wait_ns: 7,
            longest_wait_ns: 7,
            longest_hold_ns: 9,
        };
        assert_eq!(
            LockStats::combine([a, b]),
            LockStats {
                waits: 3,
                wait_ns: 37,
                longest_wait_ns: 20,
                longest_hold_ns: 9,
            }
        );
    }
}
