//! Dispatch for the binary protocol: one decoded [`Packet`] in, memcached 1.6.18's reply packets out,
//! over the same engine operations and the same tenancy ([`Ctx::key`]) as the text dispatch.
//!
//! Sharing with the text side: stores go through [`storage::engine_store`] (which counts what the engine
//! cannot see and logs `watch mutations`), get and gat through [`retrieval::fetch`] (`stats detail`,
//! `watch fetchers`), `flush` through [`admin::flush_all`] and `stat` through [`admin::stats`], whose text
//! replies are turned into packets here, so the binary `stat` reply carries exactly the figures (and the
//! tenant scoping) of `stats` from the same registry. Only what the binary protocol adds is here:
//! header CAS compares for delete, incr/decr's initial value and expiry, and the status mapping.
//!
//! Replies: success packets are suppressed for quiet opcodes (a get miss too); error packets are always
//! sent, as memcached's `write_bin_error` sends them. SASL packets reach this dispatch only when `-S`
//! is off (the session handles them otherwise), and get memcached's `Unknown command`.

use mrcache_engine::{ArithOutcome, Delta, ItemView, StoreArgs, StoreMode, StoreOutcome};
use mrcache_protocol::binary::{response, Command, GetKind, Header, Packet, Status, StoreKind};
use mrcache_protocol::{Data, StatsRequest};

use super::{admin, retrieval, storage, Ctx, Flow};
use crate::context::{ServerContext, ThreadStats};
use crate::settings::MEMCACHED_COMPAT_VERSION;
use crate::stats::detail::Op;
use crate::tenants::Tenancy;

/// incr/decr's expiry that means "do not create a missing key".
const NO_CREATE: u32 = 0xffff_ffff;

/// Runs one binary request.
pub fn dispatch_binary(
    server: &ServerContext,
    stats: &ThreadStats,
    tenancy: &Tenancy,
    fd: i32,
    packet: &Packet<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    let ctx = Ctx::new(server, stats, tenancy, fd);
    let h = &packet.header;
    let quiet = packet.quiet;
    // The tenant's rate limit, as for text requests (`super::charged_key`): keyed commands only.
    if let Some(key) = packet.command.key() {
        if !server.tenants.admit(tenancy, key) {
            response::error(out, h, Status::TemporaryFailure);
            return match packet.command {
                Command::Store {
                    data: mrcache_protocol::Data::TooLarge { swallow },
                    ..
                } => Flow::Swallow(swallow),
                _ => Flow::Continue,
            };
        }
    }
    match packet.command {
        Command::Get { key, kind } => get(&ctx, h, quiet, key, kind, out),
        Command::Store {
            kind,
            key,
            flags,
            exptime,
            data,
        } => store(&ctx, h, quiet, (kind, key, flags, exptime), data, out),
        Command::Delete { key } => delete(&ctx, h, quiet, key, out),
        Command::Arith {
            incr,
            key,
            delta,
            initial,
            exptime,
        } => arith(&ctx, h, quiet, key, (incr, delta, initial, exptime), out),
        Command::Quit => {
            if !quiet {
                response::ok(out, h, 0);
            }
            Flow::Close
        }
        Command::Flush { exptime } => flush(&ctx, h, quiet, exptime, out),
        Command::Noop => {
            response::ok(out, h, 0);
            Flow::Continue
        }
        Command::Version => {
            let version = MEMCACHED_COMPAT_VERSION.as_bytes();
            response::packet(out, h, Status::Success, &[], &[], version, 0);
            Flow::Continue
        }
        Command::Stat { group } => stat(&ctx, h, group, out),
        Command::SaslListMechs | Command::SaslAuth { .. } => {
            response::error(out, h, Status::UnknownCommand);
            Flow::Continue
        }
    }
}

/// get/getk/gat/gatk/touch and their quiet forms. A hit carries the flags as extras, the key for the
/// `k` forms, the value except for touch, and the item's CAS.
fn get(
    ctx: &Ctx<'_>,
    h: &Header,
    quiet: bool,
    key: &[u8],
    kind: GetKind,
    out: &mut Vec<u8>,
) -> Flow {
    let reply_key: &[u8] = if kind.with_key { key } else { &[] };
    let write = |out: &mut Vec<u8>, it: &ItemView<'_>| {
        let value = if kind.value { it.value() } else { &[] };
        let flags = it.client_flags().to_be_bytes();
        response::packet(out, h, Status::Success, &flags, reply_key, value, it.cas());
    };
    let hit = match kind.touch {
        // touch: memcached's `item_touch`, answered with the flags; counted for `stats detail` as a
        // get, as memcached's `process_bin_touch` counts it (the text `touch` is not).
        Some(exptime) if !kind.value => {
            let hit = ctx.server.engine.with_entry(ctx.key(key), ctx.clock, |e| {
                e.count_touch();
                let Some(it) = e.item() else {
                    return false;
                };
                write(out, &it);
                e.set_exptime(i64::from(exptime));
                e.bump();
                true
            });
            ctx.server.detail.record(key, Op::Get { hit });
            hit
        }
        touch => retrieval::fetch(ctx, key, touch.map(i64::from), |it| write(out, it)),
    };
    if !hit && !quiet {
        if kind.with_key {
            response::packet(out, h, Status::KeyNotFound, &[], key, &[], 0);
        } else {
            response::error(out, h, Status::KeyNotFound);
        }
    }
    Flow::Continue
}

/// set/add/replace (a non-zero CAS makes any of them a compare-and-swap, as in memcached) and
/// append/prepend (a non-zero CAS must match).
fn store(
    ctx: &Ctx<'_>,
    h: &Header,
    quiet: bool,
    (kind, key, flags, exptime): (StoreKind, &[u8], u32, u32),
    data: Data<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    ctx.server.detail.record(key, Op::Set);
    let value = match data {
        Data::TooLarge { swallow } => {
            ctx.count(|s| &s.store_too_large);
            if kind == StoreKind::Set {
                storage::drop_item(ctx, key);
            }
            response::error(out, h, Status::TooLarge);
            return Flow::Swallow(swallow);
        }
        Data::Value(v) => v,
    };
    let cas = if ctx.server.settings.use_cas {
        h.cas
    } else {
        0
    };
    let mode = match kind {
        StoreKind::Set | StoreKind::Add | StoreKind::Replace if cas != 0 => StoreMode::Cas,
        StoreKind::Set => StoreMode::Set,
        StoreKind::Add => StoreMode::Add,
        StoreKind::Replace => StoreMode::Replace,
        StoreKind::Append => StoreMode::Append,
        StoreKind::Prepend => StoreMode::Prepend,
    };
    let args = StoreArgs {
        mode,
        key: ctx.key(key),
        client_flags: flags,
        exptime: i64::from(exptime),
        value,
        cas,
        invalidate: false,
        key_binary: false,
    };
    let status = match storage::engine_store(ctx, &args, key) {
        StoreOutcome::Stored { cas } => {
            if !quiet {
                response::ok(out, h, cas);
            }
            return Flow::Continue;
        }
        StoreOutcome::Exists => Status::KeyExists,
        StoreOutcome::NotFound => Status::KeyNotFound,
        // memcached's `complete_update_bin`: a refused add means the key exists, a refused replace
        // that it does not.
        StoreOutcome::NotStored => match mode {
            StoreMode::Add => Status::KeyExists,
            StoreMode::Replace => Status::KeyNotFound,
            _ => Status::NotStored,
        },
        StoreOutcome::TooLarge => Status::TooLarge,
        StoreOutcome::OutOfMemory => Status::OutOfMemory,
    };
    response::error(out, h, status);
    Flow::Continue
}

/// delete: a non-zero header CAS must match the item's.
fn delete(ctx: &Ctx<'_>, h: &Header, quiet: bool, key: &[u8], out: &mut Vec<u8>) -> Flow {
    ctx.server.detail.record(key, Op::Delete);
    let cas = h.cas;
    let status = ctx.server.engine.with_entry(ctx.key(key), ctx.clock, |e| {
        let Some(it) = e.item() else {
            e.count_delete();
            return Status::KeyNotFound;
        };
        if cas != 0 && cas != it.cas() {
            return Status::KeyExists;
        }
        e.count_delete();
        e.remove();
        Status::Success
    });
    match status {
        Status::Success if quiet => {}
        Status::Success => response::ok(out, h, 0),
        error => response::error(out, h, error),
    }
    Flow::Continue
}

/// incr/decr: the new value as 8 big-endian bytes and the item's new CAS; a missing key is created
/// with `initial` and `exptime` unless `exptime` is 0xffffffff.
fn arith(
    ctx: &Ctx<'_>,
    h: &Header,
    quiet: bool,
    key: &[u8],
    (incr, delta, initial, exptime): (bool, u64, u64, u32),
    out: &mut Vec<u8>,
) -> Flow {
    let engine = &ctx.server.engine;
    let delta = if incr {
        Delta::Incr(delta)
    } else {
        Delta::Decr(delta)
    };
    let cas = if ctx.server.settings.use_cas {
        h.cas
    } else {
        0
    };
    let status = match engine.arith(ctx.key(key), delta, cas, ctx.clock) {
        ArithOutcome::Value { value, cas } => Ok((value, cas)),
        ArithOutcome::NotFound if exptime != NO_CREATE => {
            let mut digits = Vec::with_capacity(20);
            mrcache_protocol::response::push_u64(&mut digits, initial);
            // memcached stores the initial value with an add: another connection may have won.
            let created = engine.with_entry(ctx.key(key), ctx.clock, |e| {
                if e.is_occupied() {
                    return Err(Status::NotStored);
                }
                e.insert(0, i64::from(exptime), &digits)
                    .map_err(|_| Status::OutOfMemory)
            });
            created.map(|cas| (initial, cas))
        }
        ArithOutcome::NotFound => Err(Status::KeyNotFound),
        ArithOutcome::NonNumeric => Err(Status::NonNumeric),
        ArithOutcome::Exists => Err(Status::KeyExists),
        ArithOutcome::OutOfMemory => Err(Status::OutOfMemory),
    };
    match status {
        Ok(_) if quiet => {}
        Ok((value, cas)) => {
            response::packet(out, h, Status::Success, &[], &[], &value.to_be_bytes(), cas)
        }
        Err(status) => response::error(out, h, status),
    }
    Flow::Continue
}

/// flush: the text `flush_all` (its counting, `-F` and tenant scoping), answered as a packet; a
/// refused flush is memcached's `Auth failure.`
fn flush(ctx: &Ctx<'_>, h: &Header, quiet: bool, exptime: Option<u32>, out: &mut Vec<u8>) -> Flow {
    let mut text = Vec::new();
    admin::flush_all(ctx, Some(exptime.map_or(0, i64::from)), false, &mut text);
    if text == b"OK\r\n" {
        if !quiet {
            response::ok(out, h, 0);
        }
    } else {
        response::error(out, h, Status::AuthError);
    }
    Flow::Continue
}

/// The text `stats` subcommand a binary `stat` group names, as memcached's `process_bin_stat` matches
/// them: `reset`, `settings` and `detail` by prefix, the others exactly; `None`: `Not found`.
fn stats_request(group: &[u8]) -> Option<StatsRequest<'_>> {
    Some(match group {
        b"" => StatsRequest::General,
        g if g.starts_with(b"reset") => StatsRequest::Reset,
        g if g.starts_with(b"settings") => StatsRequest::Settings,
        g if g.starts_with(b"detail") => match &g[6..] {
            d if d.starts_with(b" dump") => StatsRequest::DetailDump,
            d if d.starts_with(b" on") => StatsRequest::DetailOn,
            d if d.starts_with(b" off") => StatsRequest::DetailOff,
            _ => return None,
        },
        b"items" => StatsRequest::Items,
        b"slabs" => StatsRequest::Slabs,
        b"sizes" => StatsRequest::Sizes,
        b"sizes_enable" => StatsRequest::SizesEnable,
        b"sizes_disable" => StatsRequest::SizesDisable,
        // Ours (memcached answers `Not found`): per-tenant figures and miss-ratio curves.
        b"tenants" => StatsRequest::Other {
            sub: b"tenants",
            args: b"",
        },
        b"mrc" => StatsRequest::Other {
            sub: b"mrc",
            args: b"",
        },
        g if g.starts_with(b"mrc ") => StatsRequest::Other {
            sub: b"mrc",
            args: &g[4..],
        },
        _ => return None,
    })
}

/// stat: one packet per `STAT name value` line of the text reply, then the empty packet that ends the
/// list; `detail dump` is one `detailed` packet holding the dump, as in memcached.
fn stat(ctx: &Ctx<'_>, h: &Header, group: &[u8], out: &mut Vec<u8>) -> Flow {
    let Some(request) = stats_request(group) else {
        response::error(out, h, Status::KeyNotFound);
        return Flow::Continue;
    };
    let dump = matches!(request, StatsRequest::DetailDump);
    let mut text = Vec::new();
    admin::stats(ctx, request, &mut text);
    if dump {
        response::stat(out, h, b"detailed", &text);
    } else {
        for line in text.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(stat) = line.strip_prefix(b"STAT ") {
                let space = stat.iter().position(|&b| b == b' ').unwrap_or(stat.len());
                let value = stat.get(space + 1..).unwrap_or(&[]);
                response::stat(out, h, &stat[..space], value);
            } else if line.starts_with(b"CLIENT_ERROR") || line.starts_with(b"ERROR") {
                response::error(out, h, Status::InvalidArguments);
                return Flow::Continue;
            }
        }
    }
    response::stat(out, h, b"", b"");
    Flow::Continue
}
