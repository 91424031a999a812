//! incr/decr over `Engine::arith`: the new value, `NOT_FOUND`, or
//! `CLIENT_ERROR cannot increment or decrement non-numeric value`; every reply obeys `noreply`.

use mrcache_engine::{ArithOutcome, Delta};
use mrcache_protocol::{response, ArithRequest};

use super::{Ctx, Flow};

pub(crate) const NON_NUMERIC: &str = "CLIENT_ERROR cannot increment or decrement non-numeric value";

pub(crate) fn arith(ctx: &Ctx<'_>, r: &ArithRequest<'_>, out: &mut Vec<u8>) -> Flow {
    let delta = if r.incr {
        Delta::Incr(r.delta)
    } else {
        Delta::Decr(r.delta)
    };
    match ctx.server.engine.arith(ctx.key(r.key), delta, 0, ctx.clock) {
        ArithOutcome::Value { value, .. } => {
            if r.noreply {
                crate::session::log_noreply(ctx.server, ctx.fd, &value.to_string());
            } else {
                response::number_line(out, value);
            }
        }
        ArithOutcome::NotFound => ctx.reply(out, r.noreply, "NOT_FOUND"),
        ArithOutcome::NonNumeric => ctx.reply(out, r.noreply, NON_NUMERIC),
        // Only a meta CAS can mismatch; classic incr sends none.
        ArithOutcome::Exists => ctx.reply(out, r.noreply, "EXISTS"),
        ArithOutcome::OutOfMemory => ctx.reply(out, r.noreply, "SERVER_ERROR out of memory"),
    }
    Flow::Continue
}
