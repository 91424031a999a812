//! Page grants: page moves decided ahead and made at the moment they are needed.
//!
//! A class policy that paces its moves (lama's `pace=true`) does not move a page when it plans the
//! move: it grants the receiving class pages of the donor, and the receiver takes one in its own
//! allocation, at the store that would otherwise evict one of its items (`Shard::alloc`). So the
//! donor keeps its items until the last moment, and the receiver never evicts while a grant to it
//! stands and the donor has a page in the receiver's shard; it never gets a page it does not fill.
//!
//! Invariants: every grant is of one tenant pool, between two different classes, for at least one
//! page (spent and empty grants are dropped); a pool's `receivers` word has bit `i` set exactly while
//! a grant to its class of index `i` stands, so an allocation that would evict pays one relaxed load
//! unless a grant to its own class stands. The list is behind its own leaf lock: taken under a
//! shard's lock by such an allocation, or alone by the rebalancer, never holding it while taking a
//! shard's lock. The receiver words and the pages-made counters are atomics, read without it.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

use crate::config::MAX_SLAB_CLASSES;
use crate::geometry::ClassId;

// A pool's receivers are one bit per class in a `u64`.
const _: () = assert!(MAX_SLAB_CLASSES <= 64);

fn class_bit(class: ClassId) -> u64 {
    1 << class.index()
}

/// Pages of class `src` that class `dst` of the same pool may take when it needs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageGrant {
    /// The class that gives the pages.
    pub src: ClassId,
    /// The class that takes them.
    pub dst: ClassId,
    /// How many are left to take.
    pub pages: usize,
}

/// Every pool's grants, their receivers, and the pages they have moved (all indexed by pool).
#[derive(Debug)]
pub struct PageGrants {
    pools: Mutex<Vec<Vec<PageGrant>>>,
    /// Per pool, the classes a grant to stands (bit `ClassId::index`); written under the lock.
    receivers: Box<[AtomicU64]>,
    /// Counted when a page is taken; read without the lock.
    pages_made: Box<[AtomicU64]>,
}

impl PageGrants {
    pub fn new(pools: usize) -> PageGrants {
        PageGrants {
            pools: Mutex::new(vec![Vec::new(); pools]),
            receivers: (0..pools).map(|_| AtomicU64::new(0)).collect(),
            pages_made: (0..pools).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Runs `f` on `pool`'s grants under the lock; drops what `f` leaves spent or malformed. `None`
    /// if there is no such pool.
    pub(crate) fn update<R>(
        &self,
        pool: usize,
        f: impl FnOnce(&mut Vec<PageGrant>) -> R,
    ) -> Option<R> {
        let mut pools = self.pools.lock();
        let grants = pools.get_mut(pool)?;
        let out = f(grants);
        grants.retain(|g| g.pages > 0 && g.src != g.dst);
        let receivers = grants.iter().fold(0, |bits, g| bits | class_bit(g.dst));
        self.receivers[pool].store(receivers, Relaxed);
        Some(out)
    }

    /// Pages granted and not yet taken, over every pool.
    pub(crate) fn pages_granted(&self) -> usize {
        let pools = self.pools.lock();
        pools.iter().flatten().map(|g| g.pages).sum()
    }

    /// Pages `pool`'s grants have moved (0 for no such pool).
    pub(crate) fn pages_made(&self, pool: usize) -> u64 {
        self.pages_made.get(pool).map_or(0, |m| m.load(Relaxed))
    }

    /// Takes one page of a grant to class `dst` of `pool` whose donor `has_page` (in the caller's
    /// shard); returns the donor. The page is counted as made: the caller moves it at once.
    pub(crate) fn take(
        &self,
        pool: usize,
        dst: ClassId,
        has_page: impl Fn(ClassId) -> bool,
    ) -> Option<ClassId> {
        let receivers = self.receivers.get(pool)?.load(Relaxed);
        if receivers & class_bit(dst) == 0 {
            return None;
        }
        let src = self
            .update(pool, |grants| {
                let grant = grants
                    .iter_mut()
                    .find(|g| g.dst == dst && has_page(g.src))?;
                grant.pages -= 1;
                Some(grant.src)
            })
            .flatten()?;
        self.pages_made[pool].fetch_add(1, Relaxed);
        Some(src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_is_taken_page_by_page_and_dropped_when_spent() {
        let grants = PageGrants::new(2);
        let (a, b) = (ClassId(3), ClassId(5));
        assert_eq!(grants.take(0, b, |_| true), None);
        grants.update(1, |g| {
            g.push(PageGrant {
                src: a,
                dst: b,
                pages: 2,
            })
        });
        assert_eq!(grants.receivers[1].load(Relaxed), class_bit(b));
        assert_eq!(grants.take(0, b, |_| true), None, "another pool's grant");
        assert_eq!(grants.take(1, a, |_| true), None, "the donor takes nothing");
        assert_eq!(
            grants.take(1, b, |_| false),
            None,
            "the donor has no page here"
        );
        assert_eq!(grants.take(1, b, |_| true), Some(a));
        assert_eq!(grants.take(1, b, |_| true), Some(a));
        assert_eq!(grants.take(1, b, |_| true), None);
        assert_eq!(
            (grants.update(1, |g| g.len()), grants.pages_made(1)),
            (Some(0), 2)
        );
        assert_eq!(grants.pages_made(0), 0);
        assert!(grants.receivers.iter().all(|r| r.load(Relaxed) == 0));
        assert_eq!(grants.update(2, |_| ()), None);
    }
}
