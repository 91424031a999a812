//! set/add/replace/append/prepend/cas over `Engine::store`.
//!
//! A value that can never fit (`Data::TooLarge`) is answered `SERVER_ERROR object too large for cache` and
//! its data swallowed; for `set` the old item is dropped too, so a failed set never leaves stale data
//! (memcached does the same). Every reply obeys `noreply`.

use mrcache_engine::{StoreArgs, StoreMode, StoreOutcome};
use mrcache_protocol::{Data, StoreCommand, StoreRequest};

use super::{reply, Ctx, Flow};
use crate::stats::detail::Op;

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
            reply(out, r.noreply, TOO_LARGE);
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
    let text = match ctx.server.engine.store(&args, ctx.clock) {
        StoreOutcome::Stored { .. } => "STORED",
        StoreOutcome::NotStored => "NOT_STORED",
        StoreOutcome::Exists => "EXISTS",
        StoreOutcome::NotFound => "NOT_FOUND",
        StoreOutcome::TooLarge => {
            ctx.count(|s| &s.store_too_large);
            TOO_LARGE
        }
        StoreOutcome::OutOfMemory => {
            ctx.count(|s| &s.store_no_memory);
            NO_MEMORY
        }
    };
    reply(out, r.noreply, text);
    Flow::Continue
}

/// Unlinks a key without counting a delete (memcached's `item_unlink` after a failed allocation).
pub(crate) fn drop_item(ctx: &Ctx<'_>, key: &[u8]) {
    ctx.server
        .engine
        .with_entry(ctx.key(key), ctx.clock, |e| e.remove());
}
