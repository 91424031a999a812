//! The shard locks, with what they cost counted: how often a thread had to wait for one, for how long
//! in all and at most, and the longest any thread held one (`stats`: `shard_lock_*`). These are the
//! figures that say whether shards serialise the workers (issue 38), readable on any machine.
//!
//! The engine reads no clock: the embedder that wants the figures gives it one ([`LockClock`],
//! `Engine::time_locks`; the server does, the simulator does not and pays nothing). Timed, an
//! uncontended acquisition costs one `try_lock` and two clock reads (the hold's start and end); only a
//! contended one also times its wait. The counters are relaxed atomics beside the mutex, written on
//! contention and when a hold beats the longest so far (a read first, so the usual hold writes
//! nothing). No engine decision reads them.
//!
//! Invariant: every guard comes from [`ShardLock::lock`], so with a clock every hold is measured.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot::{Mutex, MutexGuard};

use crate::layout::AnyShard;

/// A monotonic clock in nanoseconds, given by the engine's embedder to time the shard locks.
pub type LockClock = fn() -> u64;

/// One shard behind its mutex, with its lock counters.
pub(crate) struct ShardLock {
    shard: Mutex<AnyShard>,
    /// `None`: the locks are not timed (and nothing is counted).
    clock: Option<LockClock>,
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

/// A held shard lock; a timed hold is measured when it drops.
pub(crate) struct ShardGuard<'a> {
    guard: MutexGuard<'a, AnyShard>,
    /// The clock, the hold's start, and the longest hold to raise.
    timing: Option<(LockClock, u64, &'a AtomicU64)>,
}

impl ShardLock {
    pub(crate) fn new(shard: AnyShard) -> ShardLock {
        ShardLock {
            shard: Mutex::new(shard),
            clock: None,
            waits: AtomicU64::new(0),
            wait_ns: AtomicU64::new(0),
            longest_wait_ns: AtomicU64::new(0),
            longest_hold_ns: AtomicU64::new(0),
        }
    }

    /// Times the lock with `clock` from now on.
    pub(crate) fn time_with(&mut self, clock: LockClock) {
        self.clock = Some(clock);
    }

    /// Takes the lock; timed, it counts the wait if the lock was held.
    #[inline]
    pub(crate) fn lock(&self) -> ShardGuard<'_> {
        let Some(clock) = self.clock else {
            return ShardGuard {
                guard: self.shard.lock(),
                timing: None,
            };
        };
        let guard = match self.shard.try_lock() {
            Some(guard) => guard,
            None => {
                let start = clock();
                let guard = self.shard.lock();
                let waited = clock().saturating_sub(start);
                self.waits.fetch_add(1, Relaxed);
                self.wait_ns.fetch_add(waited, Relaxed);
                raise(&self.longest_wait_ns, waited);
                guard
            }
        };
        ShardGuard {
            guard,
            timing: Some((clock, clock(), &self.longest_hold_ns)),
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
        if let Some((clock, since, longest)) = self.timing {
            raise(longest, clock().saturating_sub(since));
        }
    }
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

    /// The embedder's clock, as the server gives it.
    fn test_clock() -> u64 {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }

    #[test]
    fn without_a_clock_nothing_is_timed() {
        let engine = Engine::new(EngineConfig::default()).unwrap();
        engine.get(Key::default_tenant(b"k"), Clock::logical(1), |_| ());
        assert_eq!(
            LockStats::combine(engine.lock_stats()),
            LockStats::default()
        );
    }

    #[test]
    fn a_request_that_finds_its_shard_held_is_counted_as_a_wait() {
        let mut engine = Engine::new(EngineConfig {
            shards: 1,
            ..EngineConfig::default()
        })
        .unwrap();
        engine.time_locks(test_clock);
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
