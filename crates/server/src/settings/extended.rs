//! `-o key[=value],...`: memcached's extended options, those mrcached implements (`slab_automove`,
//! `lru_crawler`, ...) and its own (`shards`, `item_accounting`, `memory_layout`, `mrc_sample_rate`, `io`), each checked against
//! memcached's range with an error that names the option. Options memcached has that cannot change what
//! a client sees are accepted and ignored; any other is refused.

use mrcache_engine::{ItemAccounting, MemoryLayout};

use super::{Settings, SettingsError, HASHPOWER_RANGE, MAX_LRU_CRAWLER_SLEEP_US, MAX_SHARDS};
use crate::isolation::{allowed_cpus, CpuList, SchedPolicy, ServiceCpus};

/// `-o slab_automove_window=N` accepts memcached's range of seconds.
const SLAB_AUTOMOVE_WINDOW_RANGE: std::ops::RangeInclusive<u32> = 3..=1800;

impl Settings {
    /// Applies one `-o` option.
    pub(super) fn apply_extended(
        &mut self,
        opt: &str,
        shards: &mut Option<usize>,
    ) -> Result<(), SettingsError> {
        let (key, value) = match opt.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (opt, None),
        };
        let bad = |why: &str| SettingsError::Extended {
            key: key.to_string(),
            reason: why.to_string(),
        };
        let need = |what: &str| -> Result<&str, SettingsError> {
            value.ok_or_else(|| bad(&format!("needs a value ({what})")))
        };
        match key {
            "slab_reassign" => self.slab_reassign = true,
            "no_slab_reassign" => self.slab_reassign = false,
            "slab_automove" => {
                let n: u32 = need("0, 1 or 2")?
                    .parse()
                    .map_err(|_| bad("must be 0, 1 or 2"))?;
                if n > 2 {
                    return Err(bad("must be 0, 1 or 2"));
                }
                self.slab_automove = n;
                self.slab_automove_given = true;
            }
            "slab_automove_ratio" => {
                let f: f64 = need("a ratio")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if !(f > 0.0 && f <= 1.0) {
                    return Err(bad("must be greater than 0 and at most 1"));
                }
                self.slab_automove_ratio = f;
            }
            "slab_automove_window" => {
                let n: u32 = need("seconds")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if !SLAB_AUTOMOVE_WINDOW_RANGE.contains(&n) {
                    return Err(bad(&format!(
                        "must be between {} and {}",
                        SLAB_AUTOMOVE_WINDOW_RANGE.start(),
                        SLAB_AUTOMOVE_WINDOW_RANGE.end()
                    )));
                }
                self.slab_automove_window = n;
            }
            "slab_chunk_max" => {
                // memcached takes kilobytes (and, for compatibility, bytes); our engine fixes it at half a page.
                let n: usize = need("kilobytes")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                let supported = self.page_size_bytes() / 2;
                if n != supported / 1024 && n != supported {
                    return Err(bad(&format!(
                        "only the default ({} kilobytes, half a page) is supported",
                        supported / 1024
                    )));
                }
            }
            "hashpower" => {
                let n: u32 = need("a power of two exponent")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if !HASHPOWER_RANGE.contains(&n) {
                    return Err(bad(&format!(
                        "must be between {} and {}",
                        HASHPOWER_RANGE.start(),
                        HASHPOWER_RANGE.end()
                    )));
                }
                self.hashpower_init = n;
            }
            "lru_crawler" => self.lru_crawler = true,
            "no_lru_crawler" => self.lru_crawler = false,
            "lru_crawler_sleep" => {
                let n: u32 = need("microseconds")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if n > MAX_LRU_CRAWLER_SLEEP_US {
                    return Err(bad("must be between 0 and 1 second"));
                }
                self.lru_crawler_sleep_us = n;
            }
            "lru_crawler_tocrawl" => {
                self.lru_crawler_tocrawl = need("items per class")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
            }
            "modern" => {}
            "no_modern" => {
                self.slab_reassign = false;
                self.slab_automove = 0;
                self.slab_automove_given = true;
            }
            "mrc_sample_rate" => {
                let rate: f64 = need("a rate in [0, 1]")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if !(0.0..=1.0).contains(&rate) {
                    return Err(bad("must be in [0, 1]"));
                }
                self.mrc_sample_rate = rate;
            }
            "item_accounting" => {
                self.item_accounting = ItemAccounting::parse(need("compact or memcached")?)
                    .ok_or_else(|| bad("must be compact or memcached"))?;
            }
            "io" => {
                self.io = super::IoMode::parse(need("auto, uring or epoll")?)
                    .ok_or_else(|| bad("must be auto, uring or epoll"))?;
            }
            "memory_layout" => {
                self.memory_layout = MemoryLayout::parse(need("slab or log")?)
                    .ok_or_else(|| bad("must be slab or log"))?;
            }
            "shards" => {
                let n: usize = need("a power of two")?
                    .parse()
                    .map_err(|_| bad("must be a number"))?;
                if n == 0 || !n.is_power_of_two() || n > MAX_SHARDS {
                    return Err(bad(&format!(
                        "must be a power of two between 1 and {MAX_SHARDS}"
                    )));
                }
                *shards = Some(n);
            }
            // Latency isolation (crate::isolation): CPU lists must lie in the process's allowed set.
            "worker_cpus" => {
                self.isolation.worker_cpus =
                    Some(allowed_cpu_list(need("a CPU list")?).map_err(|e| bad(&e))?);
            }
            "service_cpus" => {
                self.isolation.service_cpus = match need("a CPU list or any")? {
                    "any" => ServiceCpus::Any,
                    list => ServiceCpus::List(allowed_cpu_list(list).map_err(|e| bad(&e))?),
                };
            }
            "sched" => {
                self.isolation.sched = SchedPolicy::parse(need("fifo:PRIO, rr:PRIO or other")?)
                    .map_err(|e| bad(&e))?;
            }
            "no_hashexpand"
            | "hash_algorithm"
            | "maxconns_fast"
            | "no_maxconns_fast"
            | "lru_maintainer"
            | "no_lru_maintainer"
            | "hot_lru_pct"
            | "warm_lru_pct"
            | "hot_max_factor"
            | "warm_max_factor"
            | "worker_logbuf_size"
            | "watcher_logbuf_size" => {}
            _ => {
                return Err(SettingsError::UnknownExtended {
                    key: key.to_string(),
                })
            }
        }
        Ok(())
    }
}

/// A CPU list whose every CPU this process may run on.
fn allowed_cpu_list(text: &str) -> Result<CpuList, String> {
    let list = CpuList::parse(text)?;
    let allowed = allowed_cpus().map_err(|e| format!("cannot read the allowed CPUs: {e}"))?;
    match list.outside(&allowed).as_slice() {
        [] => Ok(list),
        outside => Err(format!(
            "CPU {} not in this process's allowed CPUs ({allowed})",
            outside
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )),
    }
}
