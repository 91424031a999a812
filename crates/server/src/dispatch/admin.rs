//! Administrative commands: flush_all, version, verbosity, shutdown, cache_memlimit, stats, slabs, lru,
//! watch (`lru_crawler` and `stats cachedump` are `crawler.rs`'s). Replies are memcached 1.6.18's; where
//! our design has no counterpart (segmented LRU tuning) the command is validated and acknowledged as
//! memcached would acknowledge it.
//!
//! Scope (`crate::tenants::Scope`): every server-wide command here is an operator's; a tenant's
//! connection gets `CLIENT_ERROR <command> not allowed for tenant <name>`, and its `stats` and `stats
//! conns` show only its own figures and connections.

use std::sync::atomic::Ordering::Relaxed;

use mrcache_engine::{ClassId, MemoryLayout, ReassignOutcome};
use mrcache_policy::class::AutomoveParams;
use mrcache_policy::ClassPolicySpec;
use mrcache_protocol::{response, LruRequest, ShutdownMode, SlabsRequest, StatsRequest};

use super::{Ctx, Flow};
use crate::settings::MEMCACHED_COMPAT_VERSION;
use crate::stats;
use crate::tenants::Scope;

/// memcached's `MAX_VERBOSITY_LEVEL`.
const MAX_VERBOSITY_LEVEL: u32 = 2;
/// memcached refuses a `cache_memlimit` below 8 MB.
const MIN_MEMLIMIT_MB: u32 = 8;
/// memcached's guard against a limit given in bytes instead of megabytes.
const MAX_MEMLIMIT_MB: u32 = 1_000_000_000;
/// Page moves one `cache_memlimit` may make inline; the maintenance thread gives back the rest.
const MEMLIMIT_PAGES_PER_CALL: usize = 16;

/// The connection's right to a server-wide command: `true` for an operator (see
/// [`crate::tenants::Scope`]); for a tenant writes memcached-style `CLIENT_ERROR <what> not allowed for
/// tenant <name>` (unless `noreply`) and returns `false`.
pub(super) fn operator(ctx: &Ctx<'_>, what: &str, noreply: bool, out: &mut Vec<u8>) -> bool {
    match ctx.tenancy.scope(&ctx.server.tenants) {
        Scope::Operator => true,
        Scope::Tenant(_, name) => {
            ctx.reply(
                out,
                noreply,
                &format!("CLIENT_ERROR {what} not allowed for tenant {name}"),
            );
            false
        }
    }
}

pub(crate) fn flush_all(
    ctx: &Ctx<'_>,
    delay: Option<i64>,
    noreply: bool,
    out: &mut Vec<u8>,
) -> Flow {
    ctx.count(|s| &s.cmd_flush);
    if !ctx.server.settings.flush_enabled {
        ctx.reply(out, noreply, "CLIENT_ERROR flush_all not allowed");
        return Flow::Continue;
    }
    let Some(delay) = delay else {
        ctx.reply(out, noreply, "CLIENT_ERROR invalid exptime argument");
        return Flow::Continue;
    };
    ctx.server
        .engine
        .flush_all(ctx.tenancy.flush_tenant(), delay, ctx.clock);
    ctx.reply(out, noreply, "OK");
    Flow::Continue
}

pub(crate) fn version(out: &mut Vec<u8>) -> Flow {
    out.extend_from_slice(b"VERSION ");
    response::line(out, MEMCACHED_COMPAT_VERSION);
    Flow::Continue
}

pub(crate) fn verbosity(ctx: &Ctx<'_>, level: u32, noreply: bool, out: &mut Vec<u8>) -> Flow {
    if !operator(ctx, "verbosity", noreply, out) {
        return Flow::Continue;
    }
    ctx.server
        .verbosity
        .store(level.min(MAX_VERBOSITY_LEVEL), Relaxed);
    ctx.reply(out, noreply, "OK");
    Flow::Continue
}

pub(crate) fn shutdown(ctx: &Ctx<'_>, mode: ShutdownMode, out: &mut Vec<u8>) -> Flow {
    if !operator(ctx, "shutdown", false, out) {
        return Flow::Continue;
    }
    if !ctx.server.settings.shutdown_enabled {
        response::line(out, "ERROR: shutdown not enabled");
        return Flow::Continue;
    }
    match mode {
        // memcached raises SIGINT for `shutdown` and SIGUSR1 for `shutdown graceful`: only the latter
        // saves the cache for a warm restart (`-e`).
        ShutdownMode::Now => {
            ctx.server.request_shutdown();
            Flow::Close
        }
        ShutdownMode::Graceful => {
            ctx.server.request_graceful_shutdown();
            Flow::Close
        }
        ShutdownMode::Invalid => {
            response::line(out, "CLIENT_ERROR invalid shutdown mode");
            Flow::Continue
        }
    }
}

pub(crate) fn memlimit(ctx: &Ctx<'_>, megabytes: u32, noreply: bool, out: &mut Vec<u8>) -> Flow {
    if !operator(ctx, "cache_memlimit", noreply, out) {
        return Flow::Continue;
    }
    let text = if megabytes < MIN_MEMLIMIT_MB {
        "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m"
    } else if megabytes > MAX_MEMLIMIT_MB {
        "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes"
    } else {
        let bytes = u64::from(megabytes) * 1024 * 1024;
        ctx.server
            .engine
            .set_memory_limit(bytes, MEMLIMIT_PAGES_PER_CALL);
        "OK"
    };
    ctx.reply(out, noreply, text);
    Flow::Continue
}

/// `refresh_certs`: reads the TLS certificate files again (new connections use them); memcached's
/// `Error ...` line when TLS is off or a file does not load (the certificates in use then stay).
pub(crate) fn refresh_certs(ctx: &Ctx<'_>, noreply: bool, out: &mut Vec<u8>) -> Flow {
    if !operator(ctx, "refresh_certs", noreply, out) {
        return Flow::Continue;
    }
    let Some(tls) = ctx.server.tls.get() else {
        response::line(out, "Error TLS not enabled");
        return Flow::Continue;
    };
    match tls.refresh(&ctx.server.settings.tls, ctx.server.clock().now) {
        Ok(()) => ctx.reply(out, noreply, "OK"),
        Err(why) => response::line(out, &format!("Error loading the certificates: {why}")),
    }
    Flow::Continue
}

pub(crate) fn stats(ctx: &Ctx<'_>, r: StatsRequest<'_>, out: &mut Vec<u8>) -> Flow {
    let server = ctx.server;
    let tenant = match ctx.tenancy.scope(&server.tenants) {
        Scope::Operator => None,
        Scope::Tenant(id, _) => Some(id),
    };
    // Server-wide families (every tenant's items, classes, keys, or a server-wide switch) are an
    // operator's; a tenant gets its own figures where it has some.
    let what = match &r {
        StatsRequest::Items => Some("stats items"),
        StatsRequest::Slabs => Some("stats slabs"),
        StatsRequest::Sizes | StatsRequest::SizesEnable | StatsRequest::SizesDisable => {
            Some("stats sizes")
        }
        StatsRequest::Reset => Some("stats reset"),
        StatsRequest::DetailOn | StatsRequest::DetailOff | StatsRequest::DetailDump => {
            Some("stats detail")
        }
        // A tenant's `stats cachedump` lists its own keys (`crawler::cachedump`).
        _ => None,
    };
    if let Some(what) = what {
        if !operator(ctx, what, false, out) {
            return Flow::Continue;
        }
    }
    match r {
        StatsRequest::General => match tenant {
            None => stats::general(server, out),
            Some(id) => stats::tenant_general(server, id, out),
        },
        StatsRequest::Settings => stats::settings(server, out),
        StatsRequest::Items => stats::items(server, out),
        StatsRequest::Slabs => stats::slabs(server, out),
        StatsRequest::Sizes => stats::sizes(server, out),
        // We keep no size histogram, so it stays disabled whatever is asked.
        StatsRequest::SizesEnable | StatsRequest::SizesDisable => {
            response::line(out, "STAT sizes_status disabled");
            response::end(out);
        }
        StatsRequest::Conns => stats::conns(server, tenant, out),
        StatsRequest::Extstore => response::end(out),
        StatsRequest::Reset => {
            stats::reset(server);
            response::line(out, "RESET");
        }
        StatsRequest::DetailOn => {
            server.detail.set_enabled(true);
            response::line(out, "OK");
        }
        StatsRequest::DetailOff => {
            server.detail.set_enabled(false);
            response::line(out, "OK");
        }
        StatsRequest::DetailDump => server.detail.dump(out),
        StatsRequest::Cachedump { class, limit } => {
            return super::crawler::cachedump(ctx, class, limit, out);
        }
        StatsRequest::Other { sub: b"mrc", args } => stats_mrc(ctx, args, out),
        StatsRequest::Other {
            sub: b"tenants",
            args: b"",
        } => stats::tenants(server, ctx.tenancy.own_tenant(), out),
        StatsRequest::Other { .. } => response::line(out, "ERROR"),
    }
    Flow::Continue
}

/// `stats mrc [class]` (ours): every profiled class's miss-ratio curve and every tenant's (only its own
/// for a connection that is one tenant), or one class's. A class that is not a number or not a class
/// gets memcached's `stats` argument error.
fn stats_mrc(ctx: &Ctx<'_>, args: &[u8], out: &mut Vec<u8>) {
    let arg = std::str::from_utf8(args).unwrap_or("").trim();
    let class = if arg.is_empty() {
        None
    } else {
        match arg.parse::<i64>() {
            Ok(n) if ctx.server.engine.geometry().is_valid(n) => {
                Some(mrcache_engine::ClassId(n as u8))
            }
            _ => return response::line(out, "CLIENT_ERROR bad command line format"),
        }
    };
    // A tenant sees its own curve only; the class curves are an operator's.
    let is_operator = ctx.tenancy.scope(&ctx.server.tenants) == Scope::Operator;
    if class.is_some() && !operator(ctx, "stats mrc <class>", false, out) {
        return;
    }
    crate::mrc_report::write_stats(
        ctx.server,
        class,
        ctx.tenancy.own_tenant(),
        is_operator,
        out,
    );
}

pub(crate) fn slabs(ctx: &Ctx<'_>, r: SlabsRequest, out: &mut Vec<u8>) -> Flow {
    let (what, noreply) = match r {
        SlabsRequest::Reassign { .. } => ("slabs reassign", false),
        SlabsRequest::Automove { noreply, .. } | SlabsRequest::AutomoveRatio { noreply, .. } => {
            ("slabs automove", noreply)
        }
    };
    if !operator(ctx, what, noreply, out) {
        return Flow::Continue;
    }
    if ctx.server.engine.memory_layout() == MemoryLayout::Log && what == "slabs automove" {
        // Acknowledged as memcached acknowledges it (scripts that send it keep working), but the log
        // has no class pages to move: no mover starts, and `stats settings` keeps showing
        // `slab_automove 0` and `slab_policy none`.
        ctx.reply(out, noreply, "OK");
        return Flow::Continue;
    }
    match r {
        SlabsRequest::Reassign { classes } => {
            let text = if !ctx.server.settings.slab_reassign {
                "CLIENT_ERROR slab reassignment disabled"
            } else if let Some((src, dst)) = classes {
                // memcached's class numbers; one that is no class id at all (memcached's -1, "any
                // source", included) is BADCLASS, like one the engine does not have.
                let class = |n: i32| u8::try_from(n).ok().map(ClassId);
                let outcome = match (class(src), class(dst)) {
                    (Some(src), Some(dst)) => ctx.server.engine.reassign(src, dst),
                    _ => ReassignOutcome::BadClass,
                };
                match outcome {
                    ReassignOutcome::Moved { .. } => "OK",
                    ReassignOutcome::NoSpare => "NOSPARE source class has no spare pages",
                    ReassignOutcome::Same => "SAME src and dst class are identical",
                    ReassignOutcome::BadClass => "BADCLASS invalid src or dst class id",
                }
            } else {
                "CLIENT_ERROR bad command line format"
            };
            response::line(out, text);
        }
        SlabsRequest::Automove { mode, noreply } => {
            let server = &ctx.server;
            server.automove_mode.store(mode, Relaxed);
            let window = server.settings.slab_automove_window as usize;
            server.set_slab_policy(ClassPolicySpec::automove_mode(
                mode,
                window,
                server.automove_ratio(),
            ));
            ctx.reply(out, noreply, "OK");
        }
        SlabsRequest::AutomoveRatio { ratio, noreply } => {
            let server = &ctx.server;
            server.automove_ratio_bits.store(ratio.to_bits(), Relaxed);
            // memcached takes any number and its age balancer (`slab_automove=1`) uses it from then
            // on: when memcached's balancer is the class policy in force, it runs with the new ratio
            // (keeping its window); under another policy the ratio is kept (`stats settings`) for the
            // balancer `slabs automove 1` starts.
            if let ClassPolicySpec::Automove(params) = server.slab_policy() {
                server.set_slab_policy(ClassPolicySpec::Automove(AutomoveParams {
                    ratio: Some(ratio),
                    ..params
                }));
            }
            ctx.reply(out, noreply, "OK");
        }
    }
    Flow::Continue
}

/// `lru …`: accepted and acknowledged; the engine keeps one exact LRU per class, so segment sizes, the
/// flat/segmented switch and the temporary LRU have nothing to change.
pub(crate) fn lru(ctx: &Ctx<'_>, r: LruRequest, out: &mut Vec<u8>) -> Flow {
    let noreply = match r {
        LruRequest::Tune { noreply, .. }
        | LruRequest::Mode { noreply, .. }
        | LruRequest::TempTtl { noreply, .. } => noreply,
    };
    if operator(ctx, "lru", noreply, out) {
        ctx.reply(out, noreply, "OK");
    }
    Flow::Continue
}

/// `watch [streams]`: memcached's `-W` refusal when watching is disabled, `ERROR` for an unknown
/// stream, else [`Flow::Watch`] (the session makes the connection a watcher; see `crate::watch`).
/// Watching shows every tenant's keys, so it is an operator's command.
pub(crate) fn watch(ctx: &Ctx<'_>, streams: &[u8], out: &mut Vec<u8>) -> Flow {
    if !ctx.server.settings.watch_enabled {
        response::line(out, "CLIENT_ERROR watch commands not allowed");
        return Flow::Continue;
    }
    if !operator(ctx, "watch", false, out) {
        return Flow::Continue;
    }
    match crate::watch::parse_streams(streams) {
        Some(mask) => Flow::Watch(mask),
        None => {
            response::line(out, "ERROR");
            Flow::Continue
        }
    }
}
