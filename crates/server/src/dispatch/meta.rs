//! The meta commands over the engine, following memcached 1.6.18's `process_m*_command`.
//!
//! - Return flags are written in the order the client sent them; `W`, `X`, `Z` come last (Z, then X,
//!   then W). Miss/failure replies (`EN`, `NF`, `NS`, `EX`) echo only `O` and `k`.
//! - `q` hides the nominal reply: `EN` for mg, `HD` for ms and md, the whole success reply for ma (but not
//!   the reply of an ma that just created the item, as 1.6.18 does). A hit of mg with `q` still answers.
//! - mg: `N` creates an empty item on a miss and wins (`W`); `R` wins when the remaining TTL is below the
//!   token and no token was sent; a sent token shows `Z`; a stale item shows `X` and wins if no token was
//!   sent. `l` and `h` show the state before this request's bump.
//! - md `I` marks the item stale, clears the sent token, renews its CAS and applies `T`, instead of deleting.
//! - ms `I` with a CAS older than the item's stores it as stale (the engine's `invalidate`).
//! - As memcached, an item remembers whether its key arrived base64-encoded (`ms … b`); mg's `k` on a hit
//!   and `me` echo the key in that form, whatever the request used.

use mrcache_engine::{
    ArithOutcome, Delta, Entry, ItemFlag, Miss, StoreArgs, StoreMode, StoreOutcome,
};
use mrcache_protocol::{
    response, Data, MetaArith, MetaDebug, MetaDelete, MetaFlags, MetaGet, MetaKey, MetaMode,
    MetaSet,
};

use super::arith::NON_NUMERIC;
use super::storage::{class_id, drop_item, engine_store, NO_MEMORY, TOO_LARGE};
use super::{Ctx, Flow};
use crate::watch::{log_fetch, stream};

/// ` O…` and ` k…` for replies that carry no item.
fn echo_opaque_and_key(out: &mut Vec<u8>, flags: &MetaFlags<'_>, key: &MetaKey<'_>) {
    for f in flags.iter() {
        match f.letter {
            b'O' => response::meta_token(out, f.token),
            b'k' => response::meta_key(out, key.bytes(), key.is_binary()),
            _ => {}
        }
    }
}

/// A status code with the `O`/`k` echo and the line end.
fn status(out: &mut Vec<u8>, code: &str, flags: &MetaFlags<'_>, key: &MetaKey<'_>) {
    out.extend_from_slice(code.as_bytes());
    echo_opaque_and_key(out, flags, key);
    out.extend_from_slice(b"\r\n");
}

fn ttl_flag(out: &mut Vec<u8>, entry: &Entry<'_>) {
    let ttl = entry.item().and_then(|it| it.ttl_secs()).unwrap_or(-1);
    response::meta_i64(out, b't', ttl);
}

pub(crate) fn get(ctx: &Ctx<'_>, r: &MetaGet<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.count(|s| &s.cmd_meta);
    let f = &r.flags;
    let clock = ctx.clock;
    let watching = ctx.server.log.wants(stream::FETCHERS);
    ctx.server
        .engine
        .with_entry(ctx.key(r.key.bytes()), clock, |e| {
            let mut created = false;
            if !e.is_occupied() && f.vivify.is_some() {
                // memcached links an empty, immortal item first; `N` sets its TTL in the flag loop below.
                created = e.insert(0, 0, b"").is_ok();
                if created && r.key.is_binary() {
                    e.set_flag(ItemFlag::KeyBinary, true);
                }
            }
            if f.ttl.is_some() {
                e.count_touch();
            } else {
                e.count_get();
            }
            if watching {
                let found = match e.item() {
                    Some(it) => {
                        let size = it.value().len();
                        Ok((class_id(ctx, it.key().len(), it.client_flags(), size), size))
                    }
                    None => Err(match e.miss_reason() {
                        Miss::Expired => "expired",
                        Miss::Flushed => "flushed",
                        Miss::Absent => "not_found",
                    }),
                };
                log_fetch(&ctx.server.log, r.key.bytes(), found, ctx.fd);
            }
            let Some(item) = e.item() else {
                if !f.quiet {
                    status(out, "EN", f, &r.key);
                }
                return;
            };
            if f.value {
                out.extend_from_slice(b"VA ");
                response::push_u64(out, item.value().len() as u64);
            } else {
                out.extend_from_slice(b"HD");
            }
            let mut won = false;
            for flag in f.iter() {
                match flag.letter {
                    b'T' => e.set_exptime(f.ttl.unwrap_or(0)),
                    b'N' if created => {
                        e.set_exptime(f.vivify.unwrap_or(0));
                        won = true;
                    }
                    b'R' => {
                        let Some(it) = e.item() else { continue };
                        let recache = i64::from(clock.expiry(f.recache.unwrap_or(0)));
                        if let Some(ttl) = it.ttl_secs() {
                            let expiry = i64::from(clock.now) + ttl;
                            if !it.token_sent() && !created && expiry < recache {
                                won = true;
                            }
                        }
                    }
                    b's' => response::meta_u64(
                        out,
                        b's',
                        e.item().map_or(0, |it| it.value().len() as u64),
                    ),
                    b't' => ttl_flag(out, e),
                    b'c' => response::meta_u64(out, b'c', e.item().map_or(0, |it| it.cas())),
                    b'f' => response::meta_u64(
                        out,
                        b'f',
                        e.item().map_or(0, |it| u64::from(it.client_flags())),
                    ),
                    b'l' => response::meta_u64(
                        out,
                        b'l',
                        e.item().map_or(0, |it| u64::from(it.idle_secs())),
                    ),
                    b'h' => response::meta_u64(
                        out,
                        b'h',
                        u64::from(e.item().is_some_and(|it| it.fetched())),
                    ),
                    b'O' => response::meta_token(out, flag.token),
                    b'k' => {
                        let binary = e.item().is_some_and(|it| it.key_binary());
                        response::meta_key(out, r.key.bytes(), binary);
                    }
                    _ => {}
                }
            }
            let Some(item) = e.item() else { return };
            let (token_sent, stale) = (item.token_sent(), item.stale());
            if token_sent {
                response::meta_bare(out, b'Z');
            }
            if stale {
                response::meta_bare(out, b'X');
                won |= !token_sent;
            }
            if won {
                response::meta_bare(out, b'W');
                e.set_flag(ItemFlag::TokenSent, true);
            }
            out.extend_from_slice(b"\r\n");
            if f.value {
                if let Some(item) = e.item() {
                    out.extend_from_slice(item.value());
                    out.extend_from_slice(b"\r\n");
                }
            }
            if !f.no_update {
                e.bump();
            }
        });
    Flow::Continue
}

pub(crate) fn set(ctx: &Ctx<'_>, r: &MetaSet<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.count(|s| &s.cmd_meta);
    let f = &r.flags;
    let key = r.key.bytes();
    let value = match r.data {
        Data::TooLarge { swallow } => {
            ctx.count(|s| &s.store_too_large);
            // memcached drops the old item whatever the mode, so no stale value outlives a failed ms.
            drop_item(ctx, key);
            response::line(out, TOO_LARGE);
            return Flow::Swallow(swallow);
        }
        Data::Value(v) => v,
    };
    // A CAS upgrades set and replace to a compare-and-swap; append/prepend compare it themselves; add
    // ignores it (memcached's NREAD_* mapping).
    let cas = f.cas.unwrap_or(0);
    let (mode, cas) = match (r.mode, f.cas.is_some()) {
        (MetaMode::Set | MetaMode::Replace, true) => (StoreMode::Cas, cas),
        (MetaMode::Set, false) => (StoreMode::Set, 0),
        (MetaMode::Replace, false) => (StoreMode::Replace, 0),
        (MetaMode::Add, _) => (StoreMode::Add, 0),
        (MetaMode::Append, _) => (StoreMode::Append, cas),
        (MetaMode::Prepend, _) => (StoreMode::Prepend, cas),
    };
    let args = StoreArgs {
        mode,
        key: ctx.key(key),
        client_flags: f.client_flags,
        exptime: f.ttl.unwrap_or(0),
        value,
        cas,
        invalidate: f.invalidate,
        key_binary: r.key.is_binary(),
    };
    let (code, stored_cas) = match engine_store(ctx, &args, key) {
        StoreOutcome::Stored { cas } => ("HD", cas),
        StoreOutcome::NotStored => ("NS", 0),
        StoreOutcome::Exists => ("EX", 0),
        StoreOutcome::NotFound => ("NF", 0),
        StoreOutcome::TooLarge => {
            response::line(out, TOO_LARGE);
            return Flow::Continue;
        }
        StoreOutcome::OutOfMemory => {
            response::line(out, NO_MEMORY);
            return Flow::Continue;
        }
    };
    if code == "HD" && f.quiet {
        return Flow::Continue;
    }
    out.extend_from_slice(code.as_bytes());
    for flag in f.iter() {
        match flag.letter {
            b'O' => response::meta_token(out, flag.token),
            b'k' => response::meta_key(out, key, r.key.is_binary()),
            b'c' => response::meta_u64(out, b'c', stored_cas),
            _ => {}
        }
    }
    out.extend_from_slice(b"\r\n");
    Flow::Continue
}

/// An `ms` refused before its value arrived (the budget for partly received values is spent):
/// memcached's out-of-memory path in `process_mset_command`, whose error is sent even with `q`; the old
/// item is dropped whatever the mode, and the value discarded as it arrives.
pub(crate) fn refuse_no_memory(ctx: &Ctx<'_>, r: &MetaSet<'_>, out: &mut Vec<u8>) -> Flow {
    let swallow = match r.data {
        Data::TooLarge { swallow } => swallow,
        Data::Value(_) => return set(ctx, r, out),
    };
    ctx.count(|s| &s.cmd_meta);
    ctx.count(|s| &s.store_no_memory);
    drop_item(ctx, r.key.bytes());
    response::line(out, NO_MEMORY);
    Flow::Swallow(swallow)
}

pub(crate) fn delete(ctx: &Ctx<'_>, r: &MetaDelete<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.count(|s| &s.cmd_meta);
    let f = &r.flags;
    let code = ctx
        .server
        .engine
        .with_entry(ctx.key(r.key.bytes()), ctx.clock, |e| {
            let Some(item) = e.item() else {
                e.count_delete();
                return "NF";
            };
            if f.cas.is_some_and(|cas| cas != item.cas()) {
                return "EX";
            }
            if f.invalidate {
                if let Some(ttl) = f.ttl {
                    e.set_exptime(ttl);
                }
                e.set_flag(ItemFlag::Stale, true);
                // The next client may win the recache.
                e.set_flag(ItemFlag::TokenSent, false);
                e.renew_cas();
            } else {
                e.count_delete();
                e.remove();
            }
            "HD"
        });
    if !(code == "HD" && f.quiet) {
        status(out, code, f, &r.key);
    }
    Flow::Continue
}

pub(crate) fn arith(ctx: &Ctx<'_>, r: &MetaArith<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.count(|s| &s.cmd_meta);
    let f = &r.flags;
    let key = r.key.bytes();
    let delta = if r.incr {
        Delta::Incr(f.delta)
    } else {
        Delta::Decr(f.delta)
    };
    let engine = &ctx.server.engine;
    let (value, created) = match engine.arith(ctx.key(key), delta, f.cas.unwrap_or(0), ctx.clock) {
        ArithOutcome::Value { value, .. } => {
            if f.quiet {
                return Flow::Continue;
            }
            (value, false)
        }
        ArithOutcome::NotFound if f.vivify.is_some() => {
            let mut digits = Vec::with_capacity(20);
            response::push_u64(&mut digits, f.initial);
            let inserted = engine.with_entry(ctx.key(key), ctx.clock, |e| {
                // Another connection may have created it since; memcached's add would then fail.
                !e.is_occupied() && e.insert(0, 0, &digits).is_ok()
            });
            if !inserted {
                status(out, "NS", f, &r.key);
                return Flow::Continue;
            }
            (f.initial, true)
        }
        ArithOutcome::NotFound => {
            status(out, "NF", f, &r.key);
            return Flow::Continue;
        }
        ArithOutcome::Exists => {
            status(out, "EX", f, &r.key);
            return Flow::Continue;
        }
        ArithOutcome::NonNumeric => {
            response::line(out, NON_NUMERIC);
            return Flow::Continue;
        }
        ArithOutcome::OutOfMemory => {
            response::line(out, "SERVER_ERROR out of memory");
            return Flow::Continue;
        }
    };
    let mut digits = Vec::with_capacity(20);
    response::push_u64(&mut digits, value);
    if f.value {
        out.extend_from_slice(b"VA ");
        response::push_u64(out, digits.len() as u64);
    } else {
        out.extend_from_slice(b"HD");
    }
    engine.with_entry(ctx.key(key), ctx.clock, |e| {
        for flag in f.iter() {
            match flag.letter {
                b'c' => response::meta_u64(out, b'c', e.item().map_or(0, |it| it.cas())),
                b't' => ttl_flag(out, e),
                b'T' => e.set_exptime(f.ttl.unwrap_or(0)),
                b'N' if created => e.set_exptime(f.vivify.unwrap_or(0)),
                b'O' => response::meta_token(out, flag.token),
                b'k' => response::meta_key(out, key, r.key.is_binary()),
                _ => {}
            }
        }
    });
    out.extend_from_slice(b"\r\n");
    if f.value {
        out.extend_from_slice(&digits);
        out.extend_from_slice(b"\r\n");
    }
    Flow::Continue
}

pub(crate) fn noop(ctx: &Ctx<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.count(|s| &s.cmd_meta);
    response::line(out, "MN");
    Flow::Continue
}

/// `me`: `ME <key> exp=<ttl|-1> la=<idle> cas=<cas> fetch=<yes|no> cls=<class> size=<bytes>` or `EN`.
pub(crate) fn debug(ctx: &Ctx<'_>, r: &MetaDebug<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.count(|s| &s.cmd_meta);
    ctx.server
        .engine
        .with_entry(ctx.key(r.key.bytes()), ctx.clock, |e| {
            let Some(it) = e.item() else {
                response::line(out, "EN");
                return;
            };
            out.extend_from_slice(b"ME ");
            if it.key_binary() {
                mrcache_protocol::base64::encode(it.key(), out);
            } else {
                out.extend_from_slice(it.key());
            }
            out.extend_from_slice(b" exp=");
            response::push_i64(out, it.ttl_secs().unwrap_or(-1));
            out.extend_from_slice(b" la=");
            response::push_u64(out, u64::from(it.idle_secs()));
            out.extend_from_slice(b" cas=");
            response::push_u64(out, it.cas());
            out.extend_from_slice(if it.fetched() {
                b" fetch=yes"
            } else {
                b" fetch=no"
            });
            out.extend_from_slice(b" cls=");
            response::push_u64(out, e.class().map_or(0, |c| u64::from(c.0)));
            out.extend_from_slice(b" size=");
            response::push_u64(out, e.total_bytes().unwrap_or(0) as u64);
            out.extend_from_slice(b"\r\n");
        });
    Flow::Continue
}
