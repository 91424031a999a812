//! Slab allocation policies the simulator can run, by name. Each is the same code the server runs.

use mrcache_engine::automove::{Automove, DEFAULT_RATIO, DEFAULT_WINDOW};
use mrcache_engine::{Clock, Engine};

/// A policy and its state.
pub enum SlabPolicy {
    /// memcached's demand-filled allocation with no moves (`slab_automove=0`).
    Memcached,
    /// memcached 1.6's automove (`slab_automove=1`), ticking once a logical second.
    Automove(Automove),
}

impl SlabPolicy {
    /// Names `--policy` accepts.
    pub const NAMES: &'static [&'static str] = &["memcached", "automove"];

    pub fn by_name(name: &str) -> Result<SlabPolicy, String> {
        match name {
            "memcached" => Ok(SlabPolicy::Memcached),
            "automove" => Ok(SlabPolicy::Automove(Automove::new(
                DEFAULT_WINDOW,
                DEFAULT_RATIO,
            ))),
            other => Err(format!(
                "unknown slab policy `{other}` (one of: {})",
                SlabPolicy::NAMES.join(", ")
            )),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            SlabPolicy::Memcached => "memcached",
            SlabPolicy::Automove(_) => "automove",
        }
    }

    /// Called once per logical second. Returns the number of pages moved.
    pub fn tick(&mut self, engine: &Engine, clock: Clock) -> u64 {
        match self {
            SlabPolicy::Memcached => 0,
            SlabPolicy::Automove(automove) => {
                let stats = engine.stats(clock);
                match automove.tick(&stats.classes) {
                    Some(m) => engine.move_page(m.src, m.dst).map_or(0, |_| 1),
                    None => 0,
                }
            }
        }
    }
}
