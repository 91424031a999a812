//! `stats settings`: the effective configuration under memcached's names, in memcached 1.6.18's order
//! (the build-dependent extstore and TLS groups are left out, as in a memcached built without them),
//! then ours. The rows of the flags up to `item_size_max` are written here; from `maxconns_fast` on,
//! the rows come from the `-o` table (`crate::settings::options::OPTIONS`, in the same order), whose
//! [`Live`] values are read here from the running server. Settings are configuration, not
//! measurements, so they are not in the metrics registry.

use std::sync::atomic::Ordering::Relaxed;

use mrcache_engine::MemoryLayout;

use super::stat;
use crate::context::ServerContext;
use crate::settings::options::{yes_no, Live, StatsValue, OPTIONS};

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// `stats settings`: the effective configuration under memcached's names (the build-dependent extstore
/// and TLS groups are left out, as in a memcached built without them), then ours.
pub(crate) fn settings(ctx: &ServerContext, out: &mut Vec<u8>) {
    let s = &ctx.settings;
    let e = ctx.engine.stats(ctx.clock());
    let inter = if s.listen.is_empty() {
        "NULL".to_string()
    } else {
        s.listen
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    stat(
        out,
        "maxbytes",
        e.page_limit as u64 * e.page_size_bytes as u64,
    );
    stat(out, "maxconns", s.max_connections);
    stat(out, "tcpport", s.port);
    stat(out, "udpport", s.udp_port);
    stat(out, "inter", inter);
    stat(out, "verbosity", ctx.verbosity.load(Relaxed));
    stat(out, "oldest", 0);
    stat(out, "evictions", on_off(s.evict_when_full));
    match &s.unix_socket {
        Some(path) => stat(out, "domain_socket", path.display()),
        None => stat(out, "domain_socket", "NULL"),
    }
    // memcached prints the mask in octal digits: `700`, `755`.
    stat(out, "umask", format!("{:o}", s.unix_mask));
    stat(out, "shutdown_command", yes_no(s.shutdown_enabled));
    stat(out, "growth_factor", format!("{:.2}", s.growth_factor));
    stat(out, "chunk_size", s.min_chunk_data_bytes);
    stat(out, "num_threads", s.threads);
    stat(out, "num_threads_per_udp", s.threads);
    stat(out, "stat_key_prefix", char::from(s.prefix_delimiter));
    stat(out, "detail_enabled", yes_no(ctx.detail.enabled()));
    stat(out, "reqs_per_event", s.reqs_per_event);
    stat(out, "cas_enabled", yes_no(s.use_cas));
    stat(out, "tcp_backlog", s.listen_backlog);
    stat(out, "binding_protocol", s.protocol.stats_name());
    stat(out, "auth_enabled_sasl", yes_no(s.sasl));
    // memcached prints the -Y path; a config that sets passwords turns auth on too.
    let auth = match (&ctx.settings.auth_file, &ctx.settings.config_file) {
        (Some(path), _) => path.display().to_string(),
        (None, Some(path)) if ctx.tenants.current().auth_required() => path.display().to_string(),
        _ => "no".to_string(),
    };
    stat(out, "auth_enabled_ascii", auth);
    stat(out, "item_size_max", s.item_size_max_bytes);
    for spec in OPTIONS {
        let Some(row) = &spec.stats else { continue };
        match &row.value {
            StatsValue::Setting(show) => stat(out, row.name, show(s)),
            StatsValue::Fixed(value) => stat(out, row.name, value),
            StatsValue::Recorded => stat(out, row.name, spec.recorded(s)),
            StatsValue::Live(live) => stat(out, row.name, live_value(ctx, *live)),
        }
    }
    super::end(out);
}

/// The running server's value of a [`Live`] row.
fn live_value(ctx: &ServerContext, live: Live) -> String {
    // The log layout has no class pages: no mover and no class policy runs, whatever was asked.
    let log_layout = ctx.engine.memory_layout() == MemoryLayout::Log;
    match live {
        Live::AutomoveMode if log_layout => "0".to_string(),
        Live::SlabPolicy if log_layout => "none".to_string(),
        Live::AutomoveMode => ctx.automove_mode.load(Relaxed).to_string(),
        Live::AutomoveRatio => format!("{:.2}", ctx.automove_ratio()),
        Live::Shards => ctx.engine.shard_count().to_string(),
        // `-o io=auto` resolved: the same probe result the server started with.
        Live::Io => crate::net::resolve_io(ctx.settings.io)
            .map_or("unavailable", |b| b.name())
            .to_string(),
        Live::ItemAccounting => ctx.engine.config().item_accounting.name().to_string(),
        Live::MemoryLayout => ctx.engine.memory_layout().name().to_string(),
        Live::SlabPolicy => ctx.slab_policy().to_string(),
        Live::LruCrawler => yes_no(ctx.crawler.enabled()).to_string(),
        Live::LruCrawlerSleep => ctx.crawler.sleep_us().to_string(),
        Live::LruCrawlerTocrawl => ctx.crawler.tocrawl().to_string(),
        Live::TenantPolicy => ctx
            .tenant_policy
            .lock()
            .map_or_else(|e| e.into_inner().clone(), |s| s.clone()),
    }
}
