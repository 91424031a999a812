//! Key dumps: `lru_crawler metadump` and `stats cachedump`, written as memcached 1.6.18 writes them,
//! produced in steps ([`Stream`]) over an engine item walk.
//!
//! ```text
//! metadump:   key=<uri-encoded key> exp=<-1|unix time> la=<unix time> cas=<n> fetch=<yes|no> cls=<id> size=<bytes>\n
//!             ... END\r\n
//! cachedump:  ITEM <key> [<value bytes> b; <0|unix time> s]\r\n
//!             ... END\r\n
//! ```
//! A metadump's `size` is the item's accounted size (memcached's `ITEM_ntotal` under `-o
//! item_accounting=memcached`, as meta `me` reports it). A cachedump prints the key as stored, up to
//! any NUL byte (memcached copies it as a C string), skips keys that arrived base64-encoded, stops at
//! its limit of lines (0: none) and, as memcached, at 2 MiB of reply.
//!
//! Differences from memcached, by design: items come in index order, not LRU order (memcached's
//! metadump walks each LRU from its tail, its cachedump one class's COLD LRU from its head); expired
//! and flushed items are never listed (memcached's cachedump lists them until they are reaped); and
//! a connection that is one tenant lists only that tenant's keys.
//!
//! Streaming: the session holds the [`Stream`] and calls [`Stream::step`] once per turn until it says
//! the reply is complete, serving the worker's other connections in between.
//! - A **cachedump** is walked on the worker: a step copies items out of the engine
//!   [`DUMP_BATCH_SLOTS`] index buckets at a time (one shard lock each, released before a line is
//!   written), and stops once it has written [`DUMP_STEP_BYTES`], the connection's output reaches
//!   `OUTPUT_BOUND_BYTES`, or it has inspected [`DUMP_STEP_SLOTS`] buckets (a tenant's dump of a large
//!   cache may find few of its own). It is bounded at 2 MiB, as memcached's.
//! - A **metadump** (a million items make 100 MB of lines) is walked and formatted on a dump thread of
//!   its own, as memcached's crawler thread does it, so the worker only copies lines: the thread runs at
//!   the lowest priority (nice 19) on the service threads' CPUs and sleeps `lru_crawler sleep`
//!   microseconds after every [`CRAWL_BATCH_SLOTS`] buckets, so that it takes the core only when the
//!   workers leave it idle. It hands over [`METADUMP_CHUNK_BYTES`] of lines at a time through a channel
//!   holding at most [`METADUMP_CHUNKS_AHEAD`] (a slow client stops the thread, which then holds no
//!   lock), and wakes the connection's worker after each. A step takes the chunks that are ready and,
//!   when none is, parks the connection ([`Step::Parked`]) until the worker's waker fires. A session
//!   without a worker (UDP, tests) waits for the next chunk instead. The stream holds the crawler's
//!   claim (another crawl or metadump is BUSY) until it has written `END` or its connection is gone;
//!   the thread ends with the walk, or at its first hand-over after the stream was dropped.
//!
//! So a dump never holds a shard while it writes, and adds at most one batch of lines (a cachedump)
//! or one chunk (a metadump) past the bound.

use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use mio::Waker;
use mrcache_engine::{ClassSet, ItemBatch, TenantId, WalkCursor, WalkFilter, WalkedItem};
use mrcache_protocol::response;

use crate::context::ServerContext;
use crate::crawler::{CrawlerClaim, CRAWL_BATCH_SLOTS};
use crate::session::OUTPUT_BOUND_BYTES;
use crate::watch::write_key;

/// Index buckets one engine call of a dump inspects: at most this many lines (under 800 bytes each)
/// are written past the output bound, and a shard lock is held for about 10 µs.
pub const DUMP_BATCH_SLOTS: usize = 128;
/// Index buckets one cachedump step inspects at most, however few lines they give: the bound on one
/// turn's work.
pub const DUMP_STEP_SLOTS: usize = 16 * DUMP_BATCH_SLOTS;
/// Bytes of lines after which a cachedump step ends (with the batch under way): a quarter of the output
/// bound, so that the worker's other connections wait for at most about 50 µs of dumping between their
/// turns.
pub const DUMP_STEP_BYTES: usize = 16 * 1024;
/// Bytes of metadump lines the dump thread hands over at a time (the batch under way included): a
/// quarter of the output bound, about 3 µs of copying for the worker.
pub const METADUMP_CHUNK_BYTES: usize = 16 * 1024;
/// Chunks the dump thread makes ahead of its connection before it waits for the client.
pub const METADUMP_CHUNKS_AHEAD: usize = 4;
/// memcached's cap on a cachedump reply (`item_cachedump`'s buffer), `END` included.
const CACHEDUMP_MAX_BYTES: usize = 2 * 1024 * 1024;
/// Room `item_cachedump` keeps for `END\r\n` and a terminating NUL.
const CACHEDUMP_END_BYTES: usize = 6;

/// What one [`Stream::step`] left.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// More to write: step again once the output is below the bound (the worker serves others first).
    More,
    /// Nothing ready: the dump thread wakes the worker when it has handed over more.
    Parked,
    /// The reply is complete, `END` included.
    Done,
}

/// What the dump thread hands the connection.
enum Chunk {
    Lines(Vec<u8>),
    End,
}

/// A metadump before its first step (the thread starts then), and while its thread runs.
enum Metadump {
    Pending {
        filter: WalkFilter,
        claim: CrawlerClaim,
    },
    Running {
        rx: Receiver<Chunk>,
        _claim: CrawlerClaim,
    },
    /// The thread could not start, or was gone: nothing more to take.
    Over,
}

/// A cachedump: walked on the worker, step by step.
struct Cachedump {
    filter: WalkFilter,
    cursor: WalkCursor,
    batch: ItemBatch,
    /// Lines still allowed; `None`: no limit.
    lines_left: Option<u32>,
    /// Bytes of `ITEM` lines written so far.
    written: usize,
}

/// A dump reply under way.
pub struct Stream(Kind);

enum Kind {
    /// `lru_crawler metadump`.
    Metadump(Metadump),
    /// `stats cachedump`.
    Cachedump(Cachedump),
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.0 {
            Kind::Metadump(_) => "Metadump",
            Kind::Cachedump(_) => "Cachedump",
        };
        f.debug_struct(name).finish_non_exhaustive()
    }
}

impl Stream {
    /// `lru_crawler metadump`: every live item `filter` accepts, under the crawler's `claim`.
    pub(crate) fn metadump(filter: WalkFilter, claim: CrawlerClaim) -> Stream {
        Stream(Kind::Metadump(Metadump::Pending { filter, claim }))
    }

    /// `stats cachedump <class> <limit>`: at most `limit` items of `class` (0: no limit).
    pub(crate) fn cachedump(class: u8, limit: u32, tenant: Option<TenantId>) -> Stream {
        Stream(Kind::Cachedump(Cachedump {
            filter: WalkFilter {
                tenant,
                classes: ClassSet::NONE.with(class),
            },
            cursor: WalkCursor::default(),
            batch: ItemBatch::new(),
            lines_left: Some(limit).filter(|&n| n > 0),
            written: 0,
        }))
    }

    /// Writes the next part of the reply to `out` (see the module notes for how much). `waker` is the
    /// worker's, woken when a parked metadump has more; without one a metadump step waits for it.
    pub fn step(
        &mut self,
        ctx: &Arc<ServerContext>,
        waker: Option<&Arc<Waker>>,
        out: &mut Vec<u8>,
    ) -> Step {
        match &mut self.0 {
            Kind::Metadump(m) => m.step(ctx, waker, out),
            Kind::Cachedump(c) => c.step(ctx, out),
        }
    }

    /// Writes the whole reply to `out` at once, on the calling thread (for callers that do not bound
    /// their output: `dispatch_conn`).
    pub fn finish(self, ctx: &ServerContext, out: &mut Vec<u8>) {
        match self.0 {
            Kind::Metadump(m) => match m {
                Metadump::Pending {
                    filter,
                    claim: _claim,
                } => {
                    walk(ctx, filter, |lines| {
                        out.extend_from_slice(lines);
                        lines.clear();
                        true
                    });
                    response::end(out);
                }
                Metadump::Running { .. } | Metadump::Over => response::end(out),
            },
            Kind::Cachedump(mut c) => while c.step(ctx, out) != Step::Done {},
        }
    }
}

impl Metadump {
    fn step(
        &mut self,
        ctx: &Arc<ServerContext>,
        waker: Option<&Arc<Waker>>,
        out: &mut Vec<u8>,
    ) -> Step {
        if let Metadump::Pending { .. } = self {
            let Metadump::Pending { filter, claim } = std::mem::replace(self, Metadump::Over)
            else {
                unreachable!("matched above");
            };
            match start_dump_thread(ctx.clone(), filter, waker.cloned()) {
                Ok(rx) => *self = Metadump::Running { rx, _claim: claim },
                Err(e) => {
                    response::line(out, &format!("SERVER_ERROR cannot start the metadump: {e}"));
                    return Step::Done;
                }
            }
        }
        let Metadump::Running { rx, .. } = self else {
            response::end(out);
            return Step::Done;
        };
        while out.len() < OUTPUT_BOUND_BYTES {
            let chunk = match rx.try_recv() {
                Ok(chunk) => chunk,
                Err(TryRecvError::Empty) if waker.is_some() => return Step::Parked,
                Err(TryRecvError::Empty) => match rx.recv() {
                    Ok(chunk) => chunk,
                    Err(_) => return self.interrupted(out),
                },
                Err(TryRecvError::Disconnected) => return self.interrupted(out),
            };
            match chunk {
                Chunk::Lines(lines) => out.extend_from_slice(&lines),
                Chunk::End => {
                    *self = Metadump::Over;
                    response::end(out);
                    return Step::Done;
                }
            }
        }
        Step::More
    }

    /// The dump thread ended without `End` (it panicked): the list is incomplete, and says so.
    fn interrupted(&mut self, out: &mut Vec<u8>) -> Step {
        *self = Metadump::Over;
        response::line(out, "SERVER_ERROR metadump interrupted");
        Step::Done
    }
}

/// Starts the dump thread of a metadump. The connection keeps the crawler's claim until it has written
/// `END` or is gone; the thread ends at its next hand-over after that.
fn start_dump_thread(
    ctx: Arc<ServerContext>,
    filter: WalkFilter,
    waker: Option<Arc<Waker>>,
) -> std::io::Result<Receiver<Chunk>> {
    let (tx, rx) = mpsc::sync_channel(METADUMP_CHUNKS_AHEAD);
    let placement = ctx.settings.isolation.service();
    std::thread::Builder::new()
        .name("mrcached-metadump".into())
        .spawn(move || {
            // Placement is best effort here: the service threads were placed at start-up, so the CPUs
            // were valid then; a dump made on another CPU is still a correct dump.
            let _ = placement.apply_to_current_thread();
            crate::isolation::lower_current_thread_priority();
            dump_thread(&ctx, filter, &tx, waker.as_deref());
        })?;
    Ok(rx)
}

/// The dump thread's body: walks, formats and hands over chunks until the walk ends or the connection
/// is gone.
fn dump_thread(
    ctx: &ServerContext,
    filter: WalkFilter,
    tx: &SyncSender<Chunk>,
    waker: Option<&Waker>,
) {
    let hand_over = |chunk: Chunk| {
        let delivered = tx.send(chunk).is_ok();
        if let (true, Some(waker)) = (delivered, waker) {
            let _ = waker.wake();
        }
        delivered
    };
    let mut slots = 0;
    let finished = walk(ctx, filter, |lines| {
        slots += DUMP_BATCH_SLOTS;
        if slots >= CRAWL_BATCH_SLOTS {
            slots = 0;
            let pause = ctx.crawler.sleep_us();
            if pause > 0 {
                std::thread::sleep(Duration::from_micros(u64::from(pause)));
            }
        }
        if lines.len() < METADUMP_CHUNK_BYTES {
            return true;
        }
        let full = std::mem::replace(lines, Vec::with_capacity(METADUMP_CHUNK_BYTES + 4096));
        hand_over(Chunk::Lines(full))
    });
    if let Some(rest) = finished {
        if rest.is_empty() || hand_over(Chunk::Lines(rest)) {
            hand_over(Chunk::End);
        }
    }
}

/// Walks every item `filter` accepts in batches of [`DUMP_BATCH_SLOTS`] buckets, appending metadump
/// lines to a buffer and calling `after_batch` with it after each batch (it takes what it wants and
/// returns false to stop). Returns what is left in the buffer at the end of the walk, `None` if stopped.
fn walk(
    ctx: &ServerContext,
    filter: WalkFilter,
    mut after_batch: impl FnMut(&mut Vec<u8>) -> bool,
) -> Option<Vec<u8>> {
    let mut cursor = WalkCursor::default();
    let mut batch = ItemBatch::new();
    let mut lines = Vec::with_capacity(METADUMP_CHUNK_BYTES + 4096);
    while !cursor.is_done() {
        let clock = ctx.clock();
        ctx.engine
            .walk_items(&mut cursor, DUMP_BATCH_SLOTS, filter, clock, &mut batch);
        for it in batch.iter() {
            metadump_line(&mut lines, &it, |relative| clock.unix_time(relative));
        }
        if !after_batch(&mut lines) {
            return None;
        }
    }
    Some(lines)
}

impl Cachedump {
    fn step(&mut self, ctx: &ServerContext, out: &mut Vec<u8>) -> Step {
        let (start, mut inspected) = (out.len(), 0);
        while !self.cursor.is_done() && self.lines_left != Some(0) {
            if out.len() >= OUTPUT_BOUND_BYTES
                || out.len() - start >= DUMP_STEP_BYTES
                || inspected >= DUMP_STEP_SLOTS
            {
                return Step::More;
            }
            let clock = ctx.clock();
            ctx.engine.walk_items(
                &mut self.cursor,
                DUMP_BATCH_SLOTS,
                self.filter,
                clock,
                &mut self.batch,
            );
            inspected += DUMP_BATCH_SLOTS;
            let unix = |relative: u32| clock.unix_time(relative);
            for it in self.batch.iter() {
                if !cachedump_line(out, &it, unix, &mut self.lines_left, &mut self.written) {
                    // At the limit or the 2 MiB cap (`lines_left` is 0): done.
                    break;
                }
            }
        }
        response::end(out);
        Step::Done
    }
}

/// One metadump line (memcached's `crawler_metadump_eval`).
fn metadump_line(out: &mut Vec<u8>, it: &WalkedItem<'_>, unix: impl Fn(u32) -> i64) {
    out.extend_from_slice(b"key=");
    write_key(out, it.key);
    out.extend_from_slice(b" exp=");
    response::push_i64(out, if it.expiry == 0 { -1 } else { unix(it.expiry) });
    out.extend_from_slice(b" la=");
    response::push_i64(out, unix(it.atime));
    out.extend_from_slice(b" cas=");
    response::push_u64(out, it.cas);
    out.extend_from_slice(if it.fetched {
        b" fetch=yes"
    } else {
        b" fetch=no"
    });
    out.extend_from_slice(b" cls=");
    response::push_u64(out, u64::from(it.class.0));
    out.extend_from_slice(b" size=");
    response::push_u64(out, it.total_bytes as u64);
    out.push(b'\n');
}

/// One cachedump line (memcached's `item_cachedump`), unless the key is binary; false (and nothing
/// written) once the limit or the size cap is reached.
fn cachedump_line(
    out: &mut Vec<u8>,
    it: &WalkedItem<'_>,
    unix: impl Fn(u32) -> i64,
    lines_left: &mut Option<u32>,
    written: &mut usize,
) -> bool {
    if *lines_left == Some(0) {
        return false;
    }
    if it.key_binary {
        return true;
    }
    let key = it.key.split(|&b| b == 0).next().unwrap_or_default();
    let start = out.len();
    out.extend_from_slice(b"ITEM ");
    out.extend_from_slice(key);
    out.extend_from_slice(b" [");
    response::push_u64(out, it.value_len as u64);
    out.extend_from_slice(b" b; ");
    response::push_i64(out, if it.expiry == 0 { 0 } else { unix(it.expiry) });
    out.extend_from_slice(b" s]\r\n");
    let len = out.len() - start;
    if *written + len + CACHEDUMP_END_BYTES > CACHEDUMP_MAX_BYTES {
        out.truncate(start);
        *lines_left = Some(0);
        return false;
    }
    *written += len;
    if let Some(n) = lines_left {
        *n -= 1;
    }
    true
}
