//! mrcached: a memcached 1.6.18-compatible server over the mrcache engine.
//!
//! - `settings` — the command line (memcached's flags) and the effective configuration
//! - `context`  — what every thread shares: engine, settings, clock, counters
//! - `crawler`  — memcached's LRU crawler: `lru_crawler` settings, its job slot, its thread
//! - `net`      — listener, workers, connections, maintenance thread, shutdown
//! - `session`  — one connection's protocol state: bytes in, replies out
//! - `dispatch` — one function per command family, over the engine
//! - `stats`    — the metrics registry: the `stats` families under memcached's names and `/metrics`
//! - `mrc_report` — the online miss-ratio curves of classes and tenants (`stats mrc`, `/mrc`)
//! - `memory`   — the memory model: tenant pools under a tenant arbiter, slab classes under a class policy
//! - `admin`    — the admin HTTP port (the dashboard `/`, `/mrc`, `/history`, `/metrics`)
//! - `restart`  — warm restart (`-e`): the cache saved at a graceful stop and loaded at start-up
//! - `isolation` — latency isolation: thread pinning (`-o worker_cpus`) and the workers' policy (`-o sched`)
//! - `tenants`  — tenant identity (password, prefix, port), the `--config`/`-Y` files, reload
//! - `daemon`   — `-d` (detaching from the terminal) and `-P` (the pid file)
//! - `privileges` — `-u`: root must name a user, and becomes it before anything starts

#![warn(missing_docs)]

pub mod admin;
pub mod context;
pub mod crawler;
pub mod daemon;
pub mod dispatch;
pub mod isolation;
pub mod memory;
pub mod mrc_report;
pub mod net;
pub mod privileges;
pub mod restart;
pub mod session;
pub mod settings;
pub(crate) mod stats;
pub mod tenants;
pub mod watch;
