//! Page grants: page moves decided ahead and made at the moment they are needed.
//!
//! A class policy that paces its moves (lama's `pace=true`) does not move a page when it plans the
//! move: it grants the receiving class pages of the donor, and the receiver takes one in its own
//! allocation, at the store that would otherwise evict one of its items (`Shard::alloc`). So the
//! donor keeps its items until the last moment, and the receiver never evicts while a grant to it
//! stands and the donor has a page in the receiver's shard; it never gets a page it does not fill.
//!
//! Invariants: every grant is of one tenant pool, between two different classes, for at least one
//! page (spent and empty grants are dropped); `waiting` is true exactly while some grant stands, so
//! an allocation that would evict pays one relaxed load when none does. The list is behind its own
//! leaf lock: taken under a shard's lock by an allocation, or alone by the rebalancer, never
//! holding it while taking a shard's lock. The pages-made counters are atomics, read without it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use parking_lot::Mutex;

use crate::geometry::ClassId;

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

/// Every pool's grants, and the pages they have moved (both indexed by pool).
#[derive(Debug)]
pub struct PageGrants {
    waiting: AtomicBool,
    pools: Mutex<Vec<Vec<PageGrant>>>,
    /// Counted when a page is taken; read without the lock.
    pages_made: Box<[AtomicU64]>,
}

impl PageGrants {
    pub fn new(pools: usize) -> PageGrants {
        PageGrants {
            waiting: AtomicBool::new(false),
            pools: Mutex::new(vec![Vec::new(); pools]),
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
        self.waiting
            .store(pools.iter().any(|g| !g.is_empty()), Relaxed);
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
        if !self.waiting.load(Relaxed) {
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
        assert!(!grants.waiting.load(Relaxed));
        assert_eq!(grants.update(2, |_| ()), None);
    }
}
