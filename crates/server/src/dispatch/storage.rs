//! set/add/replace/append/prepend/cas over `Engine::store`.
//!
//! A value that can never fit (`Data::TooLarge`) is answered `SERVER_ERROR object too large for cache` and
//! its data swallowed; for `set` the old item is dropped too, so a failed set never leaves stale data
//! (memcached does the same). Every reply obeys `noreply`.

use mrcache_engine::{StoreArgs, StoreMode, StoreOutcome};
use mrcache_protocol::{Data, StoreCommand, StoreRequest};

use super::{Ctx, Flow};
use crate::stats::detail::Op;
use crate::watch::{log_store, stream, StoreEvent};

pub(crate) const TOO_LARGE: &str = "SERVER_ERROR object too large for cache";
pub(crate) const NO_MEMORY: &str = "SERVER_ERROR out of memory storing object";

pub(crate) fn store(ctx: &Ctx<'_>, r: &StoreRequest<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.server.detail.record(r.key, Op::Set);
    let value = match r.data {
        Data::TooLarge { swallow } => {
            ctx.count(|s| &s.store_too_large);
            if r.command == StoreCommand::Set {
                drop_item(ctx, r.key);
            }
            ctx.reply(out, r.noreply, TOO_LARGE);
            return Flow::Swallow(swallow);
        }
        Data::Value(v) => v,
    };
    let mode = match r.command {
        StoreCommand::Set => StoreMode::Set,
        StoreCommand::Add => StoreMode::Add,
        StoreCommand::Replace => StoreMode::Replace,
        StoreCommand::Append => StoreMode::Append,
        StoreCommand::Prepend => StoreMode::Prepend,
        StoreCommand::Cas => StoreMode::Cas,
    };
    let args = StoreArgs {
        mode,
        key: ctx.key(r.key),
        client_flags: r.client_flags,
        exptime: r.exptime,
        value,
        cas: r.cas,
        invalidate: false,
        key_binary: false,
    };
    let text = match engine_store(ctx, &args, r.key) {
        StoreOutcome::Stored { .. } => "STORED",
        StoreOutcome::NotStored => "NOT_STORED",
        StoreOutcome::Exists => "EXISTS",
        StoreOutcome::NotFound => "NOT_FOUND",
        StoreOutcome::TooLarge => TOO_LARGE,
        StoreOutcome::OutOfMemory => NO_MEMORY,
    };
    ctx.reply(out, r.noreply, text);
    Flow::Continue
}

/// `Engine::store` of the client's `key`, counting the refusals the engine cannot see
/// (`store_too_large`, `store_no_memory`) and logging the `watch mutations` line (memcached logs it in
/// `do_store_item`, whatever the protocol); shared by the text, meta and binary dispatch.
pub(crate) fn engine_store(ctx: &Ctx<'_>, args: &StoreArgs<'_>, key: &[u8]) -> StoreOutcome {
    let outcome = ctx.server.engine.store(args, ctx.clock);
    match outcome {
        StoreOutcome::TooLarge => ctx.count(|s| &s.store_too_large),
        StoreOutcome::OutOfMemory => ctx.count(|s| &s.store_no_memory),
        _ => {}
    }
    if ctx.server.log.wants(stream::MUTATIONS) {
        log_mutation(ctx, args, key, &outcome);
    }
    outcome
}

/// A store refused before its value arrived (the budget for partly received values is spent):
/// memcached's out-of-memory path in `process_update_command`. `store_no_memory` is counted, a `set`
/// drops the old item so no stale value outlives it, and the value is discarded as it arrives.
pub(crate) fn refuse_no_memory(ctx: &Ctx<'_>, r: &StoreRequest<'_>, out: &mut Vec<u8>) -> Flow {
    let swallow = match r.data {
        Data::TooLarge { swallow } => swallow,
        Data::Value(_) => return store(ctx, r, out),
    };
    ctx.count(|s| &s.store_no_memory);
    if r.command == StoreCommand::Set {
        drop_item(ctx, r.key);
    }
    ctx.reply(out, r.noreply, NO_MEMORY);
    Flow::Swallow(swallow)
}

/// The slab class an item of these sizes takes, as `watch` lines report it (`clsid`).
pub(crate) fn class_id(ctx: &Ctx<'_>, key_len: usize, client_flags: u32, value_len: usize) -> u8 {
    let g = ctx.server.engine.geometry();
    g.class_for(g.item_total_bytes(key_len, client_flags, value_len))
        .map_or(0, |c| c.0)
}

/// memcached's `watch mutations` line for a storage command that reached the cache.
fn log_mutation(ctx: &Ctx<'_>, args: &StoreArgs<'_>, key: &[u8], outcome: &StoreOutcome) {
    let expiry = ctx.clock.expiry(args.exptime);
    log_store(
        &ctx.server.log,
        &StoreEvent {
            key,
            status: match outcome {
                StoreOutcome::Stored { .. } => "stored",
                StoreOutcome::NotStored => "not_stored",
                StoreOutcome::Exists => "exists",
                StoreOutcome::NotFound => "not_found",
                StoreOutcome::TooLarge => "too_large",
                StoreOutcome::OutOfMemory => "no_memory",
            },
            cmd: match args.mode {
                StoreMode::Set => "set",
                StoreMode::Add => "add",
                StoreMode::Replace => "replace",
                StoreMode::Append => "append",
                StoreMode::Prepend => "prepend",
                StoreMode::Cas => "cas",
            },
            ttl: if expiry == 0 {
                0
            } else {
                i64::from(expiry) - i64::from(ctx.clock.now)
            },
            class: class_id(ctx, key.len(), args.client_flags, args.value.len()),
            fd: ctx.fd,
            size: args.value.len(),
        },
    );
}

/// Unlinks a key without counting a delete (memcached's `item_unlink` after a failed allocation).
pub(crate) fn drop_item(ctx: &Ctx<'_>, key: &[u8]) {
    ctx.server
        .engine
        .with_entry(ctx.key(key), ctx.clock, |e| e.remove());
}
