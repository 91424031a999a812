//! The `stats` families and the Prometheus exposition, both fed by one metrics registry.
//!
//! - `registry` — [`Figure`](registry::Figure): stats name, Prometheus name, kind, help, reader; the two
//!   writers (`STAT` lines, Prometheus text) that walk the tables
//! - `general`  — `stats`: memcached 1.6.18's general figures in its order, then ours
//! - `classes`  — `stats items`, `stats slabs`, `stats sizes`; per-class series (`class` label)
//! - `tenants`  — `stats tenants`; per-tenant series (`tenant` label)
//! - `settings` — `stats settings` (configuration, not in the registry)
//! - `conns`    — `stats conns`
//! - `detail`   — `stats detail on|off|dump` (per-prefix counts, not registry figures: their names are
//!   the clients' prefixes)
//!
//! Each `stats` function appends `STAT <name> <value>\r\n` lines and `END\r\n` to `out`; dispatch calls
//! them, and [`reset`] for `stats reset`. [`prometheus`] renders `/metrics` from the same tables, so
//! every counter and gauge `stats`, `stats items`, `stats slabs` and `stats tenants` print is also a
//! series there: `mrcached_` prefix, `_total` on counters, base units (`_bytes`, `_seconds`). Two kinds
//! of `stats` figure are not separate series, by design: constants memcached prints for features our
//! design does not have (segmented LRU, hash table expansion, logger, extstore; printed with the value
//! memcached shows when the feature is idle, so tools that expect the names keep working), which a
//! dashboard could never see move; and the process identity (pid, versions, pointer size), which is
//! the one `mrcached_info{…} 1` series. Nothing here runs on the request path of other commands.

mod classes;
mod conns;
pub mod detail;
mod general;
mod registry;
mod settings;
mod tenants;

use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;

use crate::context::ServerContext;

pub(crate) use classes::{items, sizes, slabs};
pub(crate) use conns::conns;
pub(crate) use general::general;
pub(crate) use settings::settings;
pub(crate) use tenants::{tenant_general, tenants};

fn stat(out: &mut Vec<u8>, name: &str, value: impl Display) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "STAT {name} {value}\r\n");
}

fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"END\r\n");
}

/// `/metrics`: the Prometheus text exposition (format 0.0.4) of every registry table: the general
/// figures and the info series, the slab totals, the per-class and the per-tenant series.
pub(crate) fn prometheus(ctx: &ServerContext) -> String {
    let snapshot = general::General::take(ctx);
    let mut exposition = registry::Exposition::default();
    exposition.global(general::GENERAL, &snapshot);
    exposition.info(
        "info",
        "The running server's identity (pid, versions, pointer size); always 1.",
        general::GENERAL,
        &snapshot,
    );
    classes::expose(&snapshot.engine, &mut exposition);
    tenants::expose(ctx, &mut exposition);
    exposition.finish()
}

/// `stats reset`: zeroes the engine's counters, the workers' counters and the connection totals (not
/// the current figures). Workers update their counters without atomic read-modify-write, so an increment
/// racing with the reset may survive it; memcached has the same property.
pub(crate) fn reset(ctx: &ServerContext) {
    ctx.engine.reset_stats();
    ctx.detail.clear();
    ctx.tenants.reset_counters();
    for t in ctx.all_thread_stats() {
        for c in [
            &t.bytes_read,
            &t.bytes_written,
            &t.cmd_flush,
            &t.cmd_meta,
            &t.cmd_touch,
            &t.store_too_large,
            &t.store_no_memory,
            &t.conn_yields,
            &t.auth_cmds,
            &t.auth_errors,
        ] {
            c.store(0, Relaxed);
        }
    }
    ctx.conns.total_connections.store(0, Relaxed);
    ctx.conns.rejected_connections.store(0, Relaxed);
    ctx.conns.listen_disabled_num.store(0, Relaxed);
    ctx.conns.idle_kicks.store(0, Relaxed);
}

#[cfg(test)]
mod tests;
