//! The log's policy chooser: miniature simulations (Waldspurger et al., "Cache Modeling and
//! Optimization using Miniature Simulations", USENIX ATC'17) of candidate eviction policies on a
//! spatially sampled part of the live key stream, and a switch of the engine's log pools to the one
//! that misses least.
//!
//! **Miniatures.** A key is sampled when 16 bits of its hash fall below `rate x 2^16`, so a sampled
//! key is sampled on every request and the sample keeps the stream's reuse. Each candidate (a ranking
//! and a probationary share, `LogPolicy`) runs in an engine of its own: the real log engine, one
//! shard, `rate` of the memory in segments `rate` the size (never under `MIN_SEGMENT_BYTES`), so a
//! miniature has about as many segments as the cache it models and the same cleaning. It sees the
//! sampled GETs (a hit in the cache that misses in a miniature inserts the item there, at its real
//! size, as the lookaside client would have after a miss), SETs and DELETEs; its values are zeros.
//! Items larger than a miniature's segment miss in every miniature alike.
//!
//! **Decision.** Every `WINDOW` sampled GETs each miniature's misses are added to a score that
//! decays by `DECAY` each window (a memory of about ten windows). When another candidate's score is below the running
//! one's by `MARGIN` of it and by more than twice its noise (the square root of the running score)
//! for `STREAK` windows in a row, the engine switches: every pool's ranking and the probationary share
//! of every shard (`Engine::apply_log_policy`). So a stream too short to tell the candidates apart
//! keeps the configured policy.
//!
//! Cost: `rate` of the requests do a second lookup per candidate under the chooser's own mutex (never
//! held with a shard lock of the cache: the cache's lock is released first), and the miniatures hold
//! `rate` of the memory each.
//!
//! Invariants: the miniatures are log engines with one pool and no profiling; the running candidate
//! is `current`; the engine's policy changes only through `decide`.

use parking_lot::Mutex;

use crate::config::{EngineConfig, LogPolicy, MemoryLayout};
use crate::engine::{Engine, StoreArgs};
use crate::tenant::Key;
use crate::Clock;

/// The smallest segment of a miniature.
const MIN_SEGMENT_BYTES: usize = 4096;
/// Sampled GETs per decision window.
const WINDOW: u64 = 2_000;
/// How much fewer misses another candidate must have, relative to the running one's.
const MARGIN: f64 = 0.02;
/// Windows in a row another candidate must lead by `MARGIN` before the switch.
const STREAK: u32 = 3;
/// What a window's score keeps of the score before it: a memory of about ten windows.
const DECAY: f64 = 0.9;

/// One candidate and its miniature.
struct Mini {
    policy: LogPolicy,
    engine: Engine,
    /// Sampled GETs and misses in the window under way, and the decayed score of misses.
    gets: u64,
    misses: u64,
    score: f64,
    /// Sampled GETs and misses since start.
    total_gets: u64,
    total_misses: u64,
}

/// What the chooser is doing, for `stats` and reports.
#[derive(Clone, Debug, PartialEq)]
pub struct ChooserReport {
    /// The running candidate.
    pub current: LogPolicy,
    /// Each candidate, its miniature's sampled GETs and miss ratio since start.
    pub candidates: Vec<(LogPolicy, u64, f64)>,
    /// Switches since start.
    pub switches: u64,
}

struct State {
    minis: Vec<Mini>,
    current: usize,
    window_gets: u64,
    leader: Option<usize>,
    streak: u32,
    switches: u64,
    /// Zeros to store as values.
    zeros: Vec<u8>,
}

/// The chooser of an engine whose `log_choose` names candidates (see the module doc).
pub(crate) struct Chooser {
    /// Keys whose 16 sampling bits are below this are sampled.
    threshold: u32,
    state: Mutex<State>,
}

fn with_flags(args: StoreArgs<'_>, client_flags: u32) -> StoreArgs<'_> {
    StoreArgs {
        client_flags,
        ..args
    }
}

/// A key's 16 sampling bits (above those the index and shard choice use first).
#[inline]
fn sample_bits(hash: u64) -> u32 {
    ((hash >> 24) & 0xffff) as u32
}

impl Chooser {
    /// The chooser for `config`, or `None` when it names fewer than two candidates or does not run
    /// the log. Its first candidate is running (the engine starts with the configured policy).
    pub(crate) fn new(config: &EngineConfig) -> Option<Chooser> {
        if config.memory_layout != MemoryLayout::Log || config.log_choose.len() < 2 {
            return None;
        }
        let rate = config.log_choose_rate;
        let page = config.page_size_bytes();
        let segment = ((page as f64 * rate) as usize).max(MIN_SEGMENT_BYTES) / 8 * 8;
        let memory = ((config.memory_limit_bytes as f64 * rate) as u64).max(2 * segment as u64);
        let minis = config
            .log_choose
            .iter()
            .map(|&policy| Mini {
                policy,
                engine: Engine::new(EngineConfig {
                    memory_limit_bytes: memory,
                    item_size_max_bytes: segment,
                    segment_bytes: Some(segment),
                    memory_layout: MemoryLayout::Log,
                    log_ranking: policy.ranking,
                    log_probation: policy.probation,
                    shards: 1,
                    tenant_pools: 1,
                    profile_sample_rate: None,
                    shadow_queue_bytes: None,
                    evict_when_full: true,
                    log_choose: Vec::new(),
                    ..config.clone()
                })
                .expect("a miniature of a valid engine is valid"),
                gets: 0,
                misses: 0,
                score: 0.0,
                total_gets: 0,
                total_misses: 0,
            })
            .collect();
        Some(Chooser {
            threshold: ((rate * 65_536.0).ceil() as u32).clamp(1, 65_536),
            state: Mutex::new(State {
                minis,
                current: 0,
                window_gets: 0,
                leader: None,
                streak: 0,
                switches: 0,
                zeros: vec![0; segment],
            }),
        })
    }

    /// Whether requests for a key of this hash feed the miniatures.
    #[inline]
    pub(crate) fn samples(&self, hash: u64) -> bool {
        sample_bits(hash) < self.threshold
    }

    /// A sampled GET: `hit` is the item's flags and value length when the cache had it. Returns the
    /// policy to switch to, when a window ends with a decision.
    pub(crate) fn get(
        &self,
        key: Key<'_>,
        hit: Option<(u32, usize)>,
        clock: Clock,
    ) -> Option<LogPolicy> {
        let mut s = self.state.lock();
        let State { minis, zeros, .. } = &mut *s;
        for m in minis.iter_mut() {
            m.gets += 1;
            m.total_gets += 1;
            if m.engine.get(key, clock, |_| ()).is_none() {
                m.misses += 1;
                m.total_misses += 1;
                if let Some((flags, len)) = hit {
                    let value = &zeros[..len.min(zeros.len())];
                    if len <= zeros.len() {
                        m.engine
                            .store(&with_flags(StoreArgs::set(key, value), flags), clock);
                    }
                }
            }
        }
        s.window_gets += 1;
        if s.window_gets >= WINDOW {
            s.window_gets = 0;
            return s.decide();
        }
        None
    }

    /// A sampled SET of a value of `len` bytes that the cache stored.
    pub(crate) fn set(&self, key: Key<'_>, flags: u32, len: usize, clock: Clock) {
        let mut s = self.state.lock();
        let State { minis, zeros, .. } = &mut *s;
        for m in minis.iter_mut() {
            if len <= zeros.len() {
                let args = with_flags(StoreArgs::set(key, &zeros[..len]), flags);
                m.engine.store(&args, clock);
            } else {
                m.engine.delete(key, clock);
            }
        }
    }

    /// A sampled DELETE.
    pub(crate) fn delete(&self, key: Key<'_>, clock: Clock) {
        let mut s = self.state.lock();
        for m in s.minis.iter_mut() {
            m.engine.delete(key, clock);
        }
    }

    pub(crate) fn report(&self) -> ChooserReport {
        let s = self.state.lock();
        ChooserReport {
            current: s.minis[s.current].policy,
            candidates: (s.minis.iter())
                .map(|m| {
                    let ratio = m.total_misses as f64 / m.total_gets.max(1) as f64;
                    (m.policy, m.total_gets, ratio)
                })
                .collect(),
            switches: s.switches,
        }
    }
}

impl State {
    /// Ends a window: scores, and the switch if another candidate has led long enough.
    fn decide(&mut self) -> Option<LogPolicy> {
        for m in &mut self.minis {
            m.score = m.score * DECAY + m.misses as f64;
            (m.gets, m.misses) = (0, 0);
        }
        let current = self.minis[self.current].score;
        let (best, best_score) = (self.minis.iter().enumerate())
            .map(|(i, m)| (i, m.score))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("candidates");
        let leads = best != self.current
            && best_score < current * (1.0 - MARGIN)
            && current - best_score > 2.0 * current.sqrt();
        if !leads {
            (self.leader, self.streak) = (None, 0);
            return None;
        }
        if self.leader == Some(best) {
            self.streak += 1;
        } else {
            (self.leader, self.streak) = (Some(best), 1);
        }
        if self.streak < STREAK {
            return None;
        }
        (self.current, self.leader, self.streak) = (best, None, 0);
        self.switches += 1;
        Some(self.minis[best].policy)
    }
}
