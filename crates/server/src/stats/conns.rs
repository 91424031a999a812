//! `stats conns`: every listening socket, UDP socket and client connection, keyed by file descriptor,
//! with memcached's address forms (`registry::Endpoint`) and state names. A UDP socket is listed as
//! memcached lists its UDP connections: a `UDP` line, its bound address, `conn_read` between datagrams.
//! A tenant's connection sees only its tenant's connections.

use mrcache_engine::TenantId;

use super::stat;
use crate::context::ServerContext;
use crate::net::registry::Endpoint;

/// `stats conns`: every listening socket and client connection, keyed by file descriptor; for `only`
/// (a tenant's own view) just the connections fixed to that tenant, no listeners.
pub(crate) fn conns(ctx: &ServerContext, only: Option<TenantId>, out: &mut Vec<u8>) {
    let now = ctx.clock().now;
    enum Row<'a> {
        Listener(&'a crate::net::registry::ListenerInfo),
        Client(std::sync::Arc<crate::net::registry::ConnInfo>),
    }
    let mut rows: Vec<(i32, Row<'_>)> = Vec::new();
    if let (Some(ls), None) = (ctx.listeners.get(), only) {
        rows.extend(ls.iter().map(|l| (l.fd, Row::Listener(l))));
    }
    rows.extend(
        ctx.connections
            .snapshot()
            .into_iter()
            .filter(|c| only.is_none() || c.tenant() == only)
            .map(|c| (c.fd, Row::Client(c))),
    );
    rows.sort_by_key(|r| r.0);
    for (fd, row) in rows {
        match row {
            Row::Listener(l) => match (&l.addr, &l.udp) {
                (Endpoint::Udp(_), Some(info)) => {
                    stat(out, &format!("{fd}:UDP"), "UDP");
                    stat(out, &format!("{fd}:addr"), &l.addr);
                    stat(out, &format!("{fd}:state"), "conn_read");
                    stat(
                        out,
                        &format!("{fd}:secs_since_last_cmd"),
                        now.saturating_sub(info.last_cmd_secs()),
                    );
                }
                _ => {
                    stat(out, &format!("{fd}:addr"), &l.addr);
                    stat(out, &format!("{fd}:state"), "conn_listening");
                    stat(out, &format!("{fd}:secs_since_last_cmd"), 0);
                }
            },
            Row::Client(c) => {
                stat(out, &format!("{fd}:addr"), &c.peer);
                stat(out, &format!("{fd}:listen_addr"), &c.local);
                stat(out, &format!("{fd}:state"), c.state().name());
                stat(
                    out,
                    &format!("{fd}:secs_since_last_cmd"),
                    now.saturating_sub(c.last_cmd_secs()),
                );
            }
        }
    }
    super::end(out);
}
