//! delete (`DELETED`/`NOT_FOUND`) and touch (`TOUCHED`/`NOT_FOUND`); both obey `noreply`.

use mrcache_protocol::{DeleteRequest, TouchRequest};

use super::{Ctx, Flow};
use crate::stats::detail::Op;

pub(crate) fn delete(ctx: &Ctx<'_>, r: &DeleteRequest<'_>, out: &mut Vec<u8>) -> Flow {
    ctx.server.detail.record(r.key, Op::Delete);
    let deleted = ctx.server.engine.delete(ctx.key(r.key), ctx.clock);
    ctx.reply(
        out,
        r.noreply,
        if deleted { "DELETED" } else { "NOT_FOUND" },
    );
    Flow::Continue
}

pub(crate) fn touch(ctx: &Ctx<'_>, r: &TouchRequest<'_>, out: &mut Vec<u8>) -> Flow {
    let touched = ctx
        .server
        .engine
        .touch(ctx.key(r.key), r.exptime, ctx.clock);
    ctx.reply(
        out,
        r.noreply,
        if touched { "TOUCHED" } else { "NOT_FOUND" },
    );
    Flow::Continue
}
