//! get/gets/gat/gats: one `VALUE` block per hit, in request order (duplicates included), then `END`.
//! Each key is counted for `stats detail` and, while someone watches `fetchers`, logged (`crate::watch`).
//! The parser has already refused any key over 250 bytes, so no partial reply is ever withdrawn.
//!
//! Bounded output: before each key after the first one of a call, a reply that has reached
//! `session::OUTPUT_BOUND_BYTES` stops with `Flow::Suspended` (keys answered so far); the session runs the
//! same request again from that key once the connection's output has drained. The bytes on the wire are
//! those of one uninterrupted reply, and a line of many keys of large values holds at most the bound plus
//! one value in memory, however many keys it names.

use mrcache_protocol::{response, GetRequest};

use super::{Ctx, Flow};
use crate::session::OUTPUT_BOUND_BYTES;
use crate::stats::detail::Op;
use crate::watch::{log_fetch, stream};

pub(crate) fn get(ctx: &Ctx<'_>, r: GetRequest<'_>, resume_at: usize, out: &mut Vec<u8>) -> Flow {
    let with_cas = r.kind.with_cas();
    let engine = &ctx.server.engine;
    let detail = &ctx.server.detail;
    for (i, key) in r.keys.enumerate().skip(resume_at) {
        if i > resume_at && out.len() >= OUTPUT_BOUND_BYTES {
            return Flow::Suspended { keys_done: i };
        }
        let watching = ctx.server.log.wants(stream::FETCHERS);
        let write = |it: mrcache_engine::ItemView<'_>| {
            response::value(
                out,
                it.key(),
                it.client_flags(),
                it.value(),
                with_cas.then(|| it.cas()),
            );
            // The class and size a `watch fetchers` line reports, read only while someone watches.
            watching.then(|| {
                let g = engine.geometry();
                let total = g.item_total_bytes(it.key().len(), it.client_flags(), it.value().len());
                (g.class_for(total).map_or(0, |c| c.0), it.value().len())
            })
        };
        let hit = if r.kind.touches() {
            engine.get_and_touch(ctx.key(key), r.exptime, ctx.clock, write)
        } else {
            engine.get(ctx.key(key), ctx.clock, write)
        };
        detail.record(key, Op::Get { hit: hit.is_some() });
        if watching {
            log_fetch(
                &ctx.server.log,
                key,
                hit.flatten().ok_or("not_found"),
                ctx.fd,
            );
        }
    }
    response::end(out);
    Flow::Continue
}
