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
//! the reply is complete, serving the worker's other connections in between. A step copies items out
//! of the engine [`DUMP_BATCH_SLOTS`] index buckets at a time (one shard lock each, released before a
//! line is written), and stops once it has written [`DUMP_STEP_BYTES`], the connection's output
//! reaches `OUTPUT_BOUND_BYTES`, or it has inspected [`DUMP_STEP_SLOTS`] buckets (a tenant's dump of a
//! large cache may find few of its own).
//! So a dump never holds a shard while it writes, and adds at most one batch of lines past the bound.
//! The metadump keeps the crawler's claim for its whole length: another crawl or metadump is BUSY.

use mrcache_engine::{ClassSet, ItemBatch, TenantId, WalkCursor, WalkFilter, WalkedItem};
use mrcache_protocol::response;

use crate::context::ServerContext;
use crate::crawler::CrawlerClaim;
use crate::session::OUTPUT_BOUND_BYTES;
use crate::watch::write_key;

/// Index buckets one engine call of a dump inspects: at most this many lines (under 800 bytes each)
/// are written past the output bound, and a shard lock is held for about 10 µs.
pub const DUMP_BATCH_SLOTS: usize = 128;
/// Index buckets one step inspects at most, however few lines they give: the bound on one turn's work.
pub const DUMP_STEP_SLOTS: usize = 16 * DUMP_BATCH_SLOTS;
/// Bytes of lines after which a step ends (with the batch under way): a quarter of the output bound,
/// so that the worker's other connections wait for at most about 50 µs of dumping between their turns.
pub const DUMP_STEP_BYTES: usize = 16 * 1024;
/// memcached's cap on a cachedump reply (`item_cachedump`'s buffer), `END` included.
const CACHEDUMP_MAX_BYTES: usize = 2 * 1024 * 1024;
/// Room `item_cachedump` keeps for `END\r\n` and a terminating NUL.
const CACHEDUMP_END_BYTES: usize = 6;

/// Which dump, with what it has left to give.
enum Kind {
    Metadump {
        _claim: CrawlerClaim,
    },
    Cachedump {
        /// Lines still allowed; `None`: no limit.
        lines_left: Option<u32>,
        /// Bytes of `ITEM` lines written so far.
        written: usize,
    },
}

/// A dump reply under way: the walk's cursor, what it reports, and its reusable batch.
pub struct Stream {
    kind: Kind,
    filter: WalkFilter,
    cursor: WalkCursor,
    batch: ItemBatch,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("filter", &self.filter)
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl Stream {
    /// `lru_crawler metadump`: every live item `filter` accepts, under the crawler's `claim`.
    pub(crate) fn metadump(filter: WalkFilter, claim: CrawlerClaim) -> Stream {
        Stream::new(Kind::Metadump { _claim: claim }, filter)
    }

    /// `stats cachedump <class> <limit>`: at most `limit` items of `class` (0: no limit).
    pub(crate) fn cachedump(class: u8, limit: u32, tenant: Option<TenantId>) -> Stream {
        let filter = WalkFilter {
            tenant,
            classes: ClassSet::NONE.with(class),
        };
        let kind = Kind::Cachedump {
            lines_left: Some(limit).filter(|&n| n > 0),
            written: 0,
        };
        Stream::new(kind, filter)
    }

    fn new(kind: Kind, filter: WalkFilter) -> Stream {
        Stream {
            kind,
            filter,
            cursor: WalkCursor::default(),
            batch: ItemBatch::new(),
        }
    }

    /// Writes the next part of the reply to `out` (see the module notes for how much); true once the
    /// reply is complete, `END` included.
    pub fn step(&mut self, ctx: &ServerContext, out: &mut Vec<u8>) -> bool {
        let (start, mut inspected) = (out.len(), 0);
        while !self.finished() {
            if out.len() >= OUTPUT_BOUND_BYTES
                || out.len() - start >= DUMP_STEP_BYTES
                || inspected >= DUMP_STEP_SLOTS
            {
                return false;
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
            for it in self.batch.iter() {
                let unix = |relative: u32| clock.unix_time(relative);
                match &mut self.kind {
                    Kind::Metadump { .. } => metadump_line(out, &it, unix),
                    Kind::Cachedump {
                        lines_left,
                        written,
                    } => {
                        if !cachedump_line(out, &it, unix, lines_left, written) {
                            // At the limit or the 2 MiB cap (`lines_left` is 0): done.
                            break;
                        }
                    }
                }
            }
        }
        response::end(out);
        true
    }

    fn finished(&self) -> bool {
        self.cursor.is_done()
            || matches!(
                self.kind,
                Kind::Cachedump {
                    lines_left: Some(0),
                    ..
                }
            )
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
