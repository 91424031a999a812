//! get/gets/gat/gats: one `VALUE` block per hit, in request order (duplicates included), then `END`.
//! The parser has already refused any key over 250 bytes, so no partial reply is ever withdrawn.

use mrcache_protocol::{response, GetRequest};

use super::{Ctx, Flow};
use crate::stats::detail::Op;

pub(crate) fn get(ctx: &Ctx<'_>, r: GetRequest<'_>, out: &mut Vec<u8>) -> Flow {
    let with_cas = r.kind.with_cas();
    let engine = &ctx.server.engine;
    let detail = &ctx.server.detail;
    for key in r.keys {
        let write = |it: mrcache_engine::ItemView<'_>| {
            response::value(
                out,
                it.key(),
                it.client_flags(),
                it.value(),
                with_cas.then(|| it.cas()),
            );
        };
        let hit = if r.kind.touches() {
            engine.get_and_touch(ctx.key(key), r.exptime, ctx.clock, write)
        } else {
            engine.get(ctx.key(key), ctx.clock, write)
        };
        detail.record(key, Op::Get { hit: hit.is_some() });
    }
    response::end(out);
    Flow::Continue
}
