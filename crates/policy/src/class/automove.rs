//! memcached 1.6's slab automove (`slab_automove=1`, `slab_automove.c`) as a pure function of class
//! snapshots, so the server's maintenance thread and the simulator run the same decision code (through
//! the `automove` class policy, `heuristics::MemcachedAutomove`).
//!
//! Once a tick (memcached: once a second) the caller passes every class's snapshot. For each class the
//! algorithm keeps a window of `window` samples: the LRU tail age, a dirty bit (the class evicted, ran out
//! of memory or gained pages in the tick), and its share of the tick's evictions in percent. Then:
//! - a class with more than 2.5 pages of free chunks and a clean window gives a page back to the pool;
//! - otherwise, once the window has filled, the page moves from the *oldest* class (largest average tail
//!   age, more than 2 pages) to the *youngest* evicting class (smallest average age, among classes whose
//!   summed eviction share over the window exceeds `window / 2`, or whose average share exceeds 25%), if
//!   the youngest age is below `ratio` times the oldest and the youngest evicted in this tick.
//!
//! It has no notion of miss ratios: it balances ages, which is exactly what LAMA improves on.

use mrcache_engine::{ClassId, ClassSnapshot};

/// memcached's `MIN_PAGES_FOR_SOURCE`: a source class keeps at least this many pages.
const MIN_PAGES_FOR_SOURCE: usize = 2;
/// memcached's `MIN_PAGES_FOR_RECLAIM`: free chunks worth this many pages are given back.
const MIN_PAGES_FOR_RECLAIM: f64 = 2.5;
/// memcached 1.6.18's default `slab_automove_window`.
pub const DEFAULT_WINDOW: usize = 30;
/// memcached's default `slab_automove_ratio`.
pub const DEFAULT_RATIO: f64 = 0.8;

/// One page move to make: `dst` is `None` to give the page back to the pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The class that gives a page (the oldest, or one with idle free chunks).
    pub src: ClassId,
    /// The class that takes it (the youngest evicting one), or `None` for the page budget.
    pub dst: Option<ClassId>,
}

#[derive(Copy, Clone, Default)]
struct Sample {
    age: u64,
    dirty: bool,
    evicted_pct: u64,
}

#[derive(Clone, Default)]
struct Before {
    evicted: u64,
    outofmemory: u64,
    total_pages: usize,
}

/// The automove state: one window of samples per class.
pub struct Automove {
    window: usize,
    ratio: f64,
    ticks: u64,
    samples: Vec<Vec<Sample>>,
    before: Vec<Before>,
}

impl Automove {
    /// A mover with `window` samples per class (at least 1) that moves when the youngest class's age is
    /// below `ratio` times the oldest's.
    pub fn new(window: usize, ratio: f64) -> Automove {
        Automove {
            window: window.max(1),
            ratio,
            ticks: 0,
            samples: Vec::new(),
            before: Vec::new(),
        }
    }

    /// `slabs automove ratio F`: the new ratio applies from the next tick; the windows are kept.
    pub fn set_ratio(&mut self, ratio: f64) {
        self.ratio = ratio;
    }

    /// One tick: records the classes' state and returns the page move to make, if any.
    pub fn tick(&mut self, classes: &[ClassSnapshot]) -> Option<Move> {
        if self.samples.len() != classes.len() {
            self.samples = vec![vec![Sample::default(); self.window]; classes.len()];
            self.before = classes
                .iter()
                .map(|c| Before {
                    evicted: c.counters.evicted,
                    outofmemory: c.counters.outofmemory,
                    total_pages: c.total_pages,
                })
                .collect();
        }
        let evicted_total: u64 = classes
            .iter()
            .zip(&self.before)
            .map(|(c, b)| c.counters.evicted.saturating_sub(b.evicted))
            .sum();
        self.ticks += 1;
        let slot = (self.ticks % self.window as u64) as usize;
        let mut decision = None;
        let (mut oldest, mut oldest_age) = (None, 0u64);
        let (mut youngest, mut youngest_age, mut youngest_evicting) = (None, u64::MAX, false);
        for (i, c) in classes.iter().enumerate() {
            let b = &self.before[i];
            let evicted_delta = c.counters.evicted.saturating_sub(b.evicted);
            let mut sample = Sample {
                age: c.tail_age_secs as u64,
                dirty: false,
                evicted_pct: 0,
            };
            if evicted_delta > 0 {
                sample.evicted_pct = evicted_delta * 100 / evicted_total;
                sample.dirty = true;
            }
            if c.counters.outofmemory > b.outofmemory || c.total_pages > b.total_pages {
                sample.dirty = true;
            }
            self.samples[i][slot] = sample;
            let window = &self.samples[i];
            let age = window.iter().map(|s| s.age).sum::<u64>() / self.window as u64;
            let dirty = window.iter().any(|s| s.dirty);
            let evicted_sum: u64 = window.iter().map(|s| s.evicted_pct).sum();
            if c.free_chunks as f64 > c.chunks_per_page as f64 * MIN_PAGES_FOR_RECLAIM && !dirty {
                decision = Some(Move {
                    src: c.class,
                    dst: None,
                });
                break;
            }
            if age > oldest_age && c.total_pages > MIN_PAGES_FOR_SOURCE {
                oldest = Some(c.class);
                oldest_age = age;
            }
            let window_len = self.window as u64;
            if age < youngest_age && (evicted_sum > window_len / 2 || evicted_sum / window_len > 25)
            {
                youngest = Some(c.class);
                youngest_age = age;
                youngest_evicting = sample.evicted_pct > 0;
            }
        }
        self.before = classes
            .iter()
            .map(|c| Before {
                evicted: c.counters.evicted,
                outofmemory: c.counters.outofmemory,
                total_pages: c.total_pages,
            })
            .collect();
        if decision.is_some() {
            return decision;
        }
        match (oldest, youngest) {
            (Some(src), Some(dst))
                if self.ticks > self.window as u64
                    && src != dst
                    && (youngest_age as f64) < oldest_age as f64 * self.ratio
                    && youngest_evicting =>
            {
                Some(Move {
                    src,
                    dst: Some(dst),
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mrcache_engine::ClassCounters;

    fn class(id: u8, pages: usize, age: u32, evicted: u64, free: usize) -> ClassSnapshot {
        ClassSnapshot {
            class: ClassId(id),
            chunk_size_bytes: 96,
            chunks_per_page: 100,
            total_pages: pages,
            used_chunks: 0,
            free_chunks: free,
            items: 0,
            requested_bytes: 0,
            tail_age_secs: age,
            counters: ClassCounters {
                evicted,
                ..Default::default()
            },
        }
    }

    #[test]
    fn moves_from_oldest_to_evicting_youngest_after_window_fills() {
        let mut a = Automove::new(3, 0.8);
        let mut decisions = Vec::new();
        for t in 0..6u64 {
            let snaps = [class(1, 10, 1000, 0, 0), class(2, 5, 10, t * 50, 0)];
            decisions.push(a.tick(&snaps));
        }
        assert!(decisions[..3].iter().all(Option::is_none), "{decisions:?}");
        assert_eq!(
            decisions[5],
            Some(Move {
                src: ClassId(1),
                dst: Some(ClassId(2))
            })
        );
    }

    #[test]
    fn idle_free_memory_goes_back_to_the_pool() {
        let mut a = Automove::new(2, 0.8);
        let snaps = [class(1, 10, 5, 0, 400)];
        assert_eq!(
            a.tick(&snaps),
            Some(Move {
                src: ClassId(1),
                dst: None
            })
        );
    }

    #[test]
    fn balanced_ages_move_nothing() {
        let mut a = Automove::new(2, 0.8);
        for t in 0..10u64 {
            let snaps = [class(1, 10, 100, t * 10, 0), class(2, 10, 95, t * 10, 0)];
            assert_eq!(a.tick(&snaps), None);
        }
    }
}
