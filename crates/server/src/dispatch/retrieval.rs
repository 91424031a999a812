//! get/gets/gat/gats: one `VALUE` block per hit, in request order (duplicates included), then `END`.
//! Each key is counted for `stats detail` and, while someone watches `fetchers`, logged (`crate::watch`).
//! The parser has already refused any key over 250 bytes, so no partial reply is ever withdrawn.
//!
//! Bounded output: before each key after the first one of a call, a reply that has reached
//! `session::OUTPUT_BOUND_BYTES` stops with `Flow::Suspended` (keys answered so far); the session runs the
//! same request again from that key once the connection's output has drained. The bytes on the wire are
//! those of one uninterrupted reply, and a line of many keys of large values holds at most the bound plus
//! one value in memory, however many keys it names.

use mrcache_engine::ItemView;
use mrcache_protocol::{response, GetRequest};

use super::storage::class_id;
use super::{Ctx, Flow};
use crate::session::OUTPUT_BOUND_BYTES;
use crate::stats::detail::Op;
use crate::watch::{log_fetch, stream};

pub(crate) fn get(ctx: &Ctx<'_>, r: GetRequest<'_>, resume_at: usize, out: &mut Vec<u8>) -> Flow {
    let with_cas = r.kind.with_cas();
    let touch = r.kind.touches().then_some(r.exptime);
    for (i, key) in r.keys.enumerate().skip(resume_at) {
        if i > resume_at && out.len() >= OUTPUT_BOUND_BYTES {
            return Flow::Suspended { keys_done: i };
        }
        fetch(ctx, key, touch, |it| {
            response::value(
                out,
                it.key(),
                it.client_flags(),
                it.value(),
                with_cas.then(|| it.cas()),
            )
        });
    }
    response::end(out);
    Flow::Continue
}

/// One key of a get-type lookup (get, gat; text or binary): `Engine::get`, or `Engine::get_and_touch`
/// with the new `touch` exptime, running `write` on a hit. The key is counted for `stats detail` and,
/// while someone watches, logged on `watch fetchers`, as memcached does in its item-level code whatever
/// the protocol. Returns whether it hit.
pub(crate) fn fetch(
    ctx: &Ctx<'_>,
    key: &[u8],
    touch: Option<i64>,
    write: impl FnOnce(&ItemView<'_>),
) -> bool {
    let engine = &ctx.server.engine;
    let watching = ctx.server.log.wants(stream::FETCHERS);
    let hit = |it: ItemView<'_>| {
        write(&it);
        // The class and size a `watch fetchers` line reports, read only while someone watches.
        watching.then(|| {
            let size = it.value().len();
            (class_id(ctx, it.key().len(), it.client_flags(), size), size)
        })
    };
    let found = match touch {
        Some(exptime) => engine.get_and_touch(ctx.key(key), exptime, ctx.clock, hit),
        None => engine.get(ctx.key(key), ctx.clock, hit),
    };
    ctx.server.detail.record(
        key,
        Op::Get {
            hit: found.is_some(),
        },
    );
    if watching {
        log_fetch(
            &ctx.server.log,
            key,
            found.flatten().ok_or("not_found"),
            ctx.fd,
        );
    }
    found.is_some()
}
