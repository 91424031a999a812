//! `-o idle_timeout=N`: memcached's idle-connection check, run by the maintenance thread once a
//! second.
//!
//! A connection is idle when it has waited for a command more than N seconds: its registry entry
//! (`ConnInfo`) says it is waiting for a command or for the rest of its line, with no reply unsent,
//! and the session last ran (or the connection was accepted) longer ago than that; a watcher
//! (`watch`) never is idle. These are the connections memcached kicks: those in `conn_new_cmd` and
//! `conn_read`, not those reading or discarding a value (`conn_nread`, `conn_swallow`) or writing.
//!
//! The check does not ask the worker that owns the connection: it claims the entry (waiting becomes
//! closing, atomically, so a connection whose worker has just started a command is left alone) and
//! shuts the socket down, both ways, under the registry's mutex, which keeps the descriptor open and
//! the connection's own (`registry.rs`). The worker then sees the end of stream on either I/O path and
//! closes the connection as it closes any other; the client sees its end of stream as it does from
//! memcached. Each claimed connection counts once in `idle_kicks`.

use std::sync::atomic::Ordering::Relaxed;

use crate::context::ServerContext;

/// Closes the connections idle longer than `-o idle_timeout` (none when it is 0 or, as memcached
/// reads it, below); returns how many.
pub fn close_idle(ctx: &ServerContext) -> u64 {
    let Ok(timeout_secs) = u32::try_from(ctx.settings.idle_timeout_secs) else {
        return 0;
    };
    if timeout_secs == 0 {
        return 0;
    }
    let now_secs = ctx.clock().now;
    let mut kicked = 0;
    ctx.connections.for_each(|conn| {
        if !conn.claim_idle(now_secs, timeout_secs) {
            return;
        }
        crate::session::conn_idle_closing(ctx, conn.fd);
        // SAFETY: shutdown(2) takes no memory; `conn.fd` is open and this connection's while the
        // registry's mutex is held (see `registry.rs`), so no other file is touched.
        unsafe { libc::shutdown(conn.fd, libc::SHUT_RDWR) };
        kicked += 1;
    });
    ctx.conns.idle_kicks.fetch_add(kicked, Relaxed);
    kicked
}
