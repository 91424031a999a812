//! The server-wide budget for partly received values.
//!
//! memcached reads a value straight into the item it allocated for it, so a value still arriving lives in
//! cache memory, inside `-m`; when memory cannot be had, the store is refused with `SERVER_ERROR out of
//! memory storing object` and its data discarded. mrcached buffers a value in the connection's read
//! buffer until it is complete, outside `-m`, so without a bound every stalled upload would hold up to
//! `-I` of memory (500 connections stalling on 1 MB values: half a gigabyte).
//!
//! Policy:
//! - A request whose bytes (line, value and CRLF) fit in [`FREE_BYTES`] never draws on the budget: that
//!   much per connection is bounded like a command line.
//! - A larger storage request reserves all its bytes from the budget when its value is first found
//!   incomplete, and returns them when it completes or its connection closes.
//! - When the budget cannot cover it, the store is refused at once, exactly as memcached refuses a store
//!   it cannot allocate: `SERVER_ERROR out of memory storing object` (suppressed by `noreply` for the set
//!   family, always sent for `ms`), `store_no_memory` counted, the old item dropped (for `set` and `ms`),
//!   the value discarded as it arrives, the connection kept. Nobody waits for the budget, so stalled
//!   uploads can never block an honest one indefinitely: they can only make it fail, as memory pinned by
//!   half-read items makes it fail in memcached.
//! - The budget is a quarter of `-m`, and at least two values of the largest size (`-I`), so that large
//!   stores are possible even with a small `-m`.
//!
//! Invariant: `in_use` is the sum of the grants held by live sessions (each session holds at most one,
//! for the request at the front of its input).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// Bytes of one request a connection may buffer without a grant.
pub const FREE_BYTES: usize = 16 * 1024;

/// Bytes of partly received values all connections may buffer together.
#[derive(Debug)]
pub struct PartialValueBudget {
    limit: usize,
    in_use: AtomicUsize,
    refused: AtomicU64,
}

impl PartialValueBudget {
    /// The budget for a server of memory limit `memory_limit_bytes` and largest item `item_size_max_bytes`
    /// (see the module notes).
    pub fn new(memory_limit_bytes: u64, item_size_max_bytes: usize) -> PartialValueBudget {
        let quarter = usize::try_from(memory_limit_bytes / 4).unwrap_or(usize::MAX);
        PartialValueBudget::with_limit(quarter.max(item_size_max_bytes.saturating_mul(2)))
    }

    /// A budget of exactly `limit` bytes.
    pub fn with_limit(limit: usize) -> PartialValueBudget {
        PartialValueBudget {
            limit,
            in_use: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// Takes `bytes` if they fit; counts a refusal otherwise.
    pub fn try_take(&self, bytes: usize) -> bool {
        let taken = self
            .in_use
            .fetch_update(Relaxed, Relaxed, |n| {
                n.checked_add(bytes).filter(|&t| t <= self.limit)
            })
            .is_ok();
        if !taken {
            self.refused.fetch_add(1, Relaxed);
        }
        taken
    }

    /// Returns `bytes` taken earlier.
    pub fn give_back(&self, bytes: usize) {
        self.in_use.fetch_sub(bytes, Relaxed);
    }

    /// The budget in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes reserved now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Relaxed)
    }

    /// Stores refused because the budget was spent.
    pub fn refused(&self) -> u64 {
        self.refused.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_stay_within_the_limit_and_come_back() {
        let b = PartialValueBudget::with_limit(100);
        assert!(b.try_take(60));
        assert!(!b.try_take(41));
        assert_eq!(b.refused(), 1);
        assert!(b.try_take(40));
        assert_eq!(b.in_use(), 100);
        b.give_back(60);
        assert!(b.try_take(60));
        assert!(!b.try_take(usize::MAX), "no overflow");
    }

    #[test]
    fn the_budget_is_a_quarter_of_memory_and_at_least_two_largest_items() {
        assert_eq!(PartialValueBudget::new(64 << 20, 1 << 20).limit(), 16 << 20);
        assert_eq!(
            PartialValueBudget::new(64 << 20, 32 << 20).limit(),
            64 << 20
        );
    }
}
