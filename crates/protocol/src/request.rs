//! The values [`parse`](crate::parse) returns. Everything borrows from the request buffer; nothing here
//! allocates.

use crate::meta::{MetaFlags, MetaKey, MetaMode};

/// What the front of the buffer holds.
// A meta request carries its decoded key and flag list inline (a few hundred bytes) so that parsing never
// allocates; the value is moved once, into the dispatcher.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Parsed<'a> {
    /// A complete request; `consumed` covers its line and, for storage commands, its data block.
    Request {
        /// The request.
        request: Request<'a>,
        /// Bytes of the buffer it took.
        consumed: usize,
    },
    /// The request is not complete. `needed`, when known, is the total number of bytes (from the start of
    /// the buffer) the request needs, so the caller can reserve them.
    Incomplete {
        /// Bytes the request needs, counted from the start of the buffer, when known.
        needed: Option<usize>,
    },
    /// A protocol error: reply with `line` unless `noreply`, consume `consumed` bytes, then discard the
    /// next `swallow` bytes (memcached's `conn_swallow`) whenever they arrive.
    Error(ErrorReply),
    /// Close the connection without replying (binary protocol, HTTP, an endless line).
    Close,
}

/// An error line to send, memcached's exact text without the `\r\n`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ErrorReply {
    /// The line, without its `\r\n`.
    pub line: &'static str,
    /// Bytes of the buffer to consume now.
    pub consumed: usize,
    /// The request said `noreply`: send nothing.
    pub noreply: bool,
    /// Bytes still to discard as they arrive (an unwanted data block).
    pub swallow: usize,
}

/// One complete request.
#[derive(Debug)]
pub enum Request<'a> {
    /// set/add/replace/append/prepend/cas.
    Store(StoreRequest<'a>),
    /// get/gets/gat/gats.
    Get(GetRequest<'a>),
    /// incr/decr.
    Arith(ArithRequest<'a>),
    /// delete.
    Delete(DeleteRequest<'a>),
    /// touch.
    Touch(TouchRequest<'a>),
    /// `mg`.
    MetaGet(MetaGet<'a>),
    /// `ms`.
    MetaSet(MetaSet<'a>),
    /// `md`.
    MetaDelete(MetaDelete<'a>),
    /// `ma`.
    MetaArith(MetaArith<'a>),
    /// `mn`: replies `MN` (and asks the caller to flush).
    MetaNoop,
    /// `me`.
    MetaDebug(MetaDebug<'a>),
    /// `flush_all [delay] [noreply]`; `delay` 0 means now, `None` is a delay that is not a number
    /// (`CLIENT_ERROR invalid exptime argument`, reported after the server's `-F` check, as memcached does).
    FlushAll {
        /// Seconds until the flush takes effect.
        delay: Option<i64>,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `version`.
    Version,
    /// `verbosity <level> [noreply]`.
    Verbosity {
        /// The level asked for.
        level: u32,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `quit`: close the connection.
    Quit,
    /// `shutdown [graceful]`.
    Shutdown(ShutdownMode),
    /// `cache_memlimit <megabytes> [noreply]`.
    CacheMemlimit {
        /// The new memory limit, in megabytes.
        megabytes: u32,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `refresh_certs [noreply]`: reload the TLS certificates (`-Z`).
    RefreshCerts {
        /// Send no reply on success (`noreply`).
        noreply: bool,
    },
    /// `stats [<sub> …]`.
    Stats(StatsRequest<'a>),
    /// `slabs …`.
    Slabs(SlabsRequest),
    /// `lru …`.
    Lru(LruRequest),
    /// `lru_crawler …`.
    LruCrawler(LruCrawlerRequest<'a>),
    /// `watch [stream…]`: the connection becomes a log stream. `streams` is the rest of the line after
    /// `watch` (stream names separated by spaces; empty: memcached's default, `fetchers`).
    Watch {
        /// The bytes after `watch`, unparsed.
        streams: &'a [u8],
    },
}

/// The data block of a storage command.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Data<'a> {
    /// The value, without its `\r\n`.
    Value(&'a [u8]),
    /// The item can never fit (`item_size_max`): the request was consumed up to its line, and the caller
    /// replies `SERVER_ERROR object too large for cache` and discards the next `swallow` bytes. Also the
    /// data of a block not yet complete under `Limits::refuse_incomplete_data` (the caller refuses it).
    TooLarge {
        /// Bytes of the data block still to discard as they arrive.
        swallow: usize,
    },
}

/// Which storage command.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreCommand {
    /// `set`: store unconditionally.
    Set,
    /// `add`: store only if the key is absent.
    Add,
    /// `replace`: store only if the key is present.
    Replace,
    /// `append`: add after the existing value.
    Append,
    /// `prepend`: add before the existing value.
    Prepend,
    /// `cas`: store only if the item's CAS is unchanged.
    Cas,
}

/// set/add/replace/append/prepend/cas.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StoreRequest<'a> {
    /// Which command.
    pub command: StoreCommand,
    /// The key, as the client sent it.
    pub key: &'a [u8],
    /// The client's opaque flags.
    pub client_flags: u32,
    /// Protocol exptime as memcached read it (32-bit signed); the engine interprets it.
    pub exptime: i64,
    /// `cas` only; 0 otherwise.
    pub cas: u64,
    /// Send no reply (`noreply`).
    pub noreply: bool,
    /// The data block.
    pub data: Data<'a>,
}

/// Which retrieval command.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GetKind {
    /// `get`: values.
    Get,
    /// `gets`: values and CAS.
    Gets,
    /// `gat`: touch, then values.
    Gat,
    /// `gats`: touch, then values and CAS.
    Gats,
}

impl GetKind {
    /// Whether the reply carries the CAS value.
    pub fn with_cas(self) -> bool {
        matches!(self, GetKind::Gets | GetKind::Gats)
    }
    /// Whether the command also touches.
    pub fn touches(self) -> bool {
        matches!(self, GetKind::Gat | GetKind::Gats)
    }
}

/// get/gets/gat/gats. Every key is known to be at most 250 bytes.
#[derive(Copy, Clone, Debug)]
pub struct GetRequest<'a> {
    /// Which command.
    pub kind: GetKind,
    /// gat/gats only; 0 otherwise.
    pub exptime: i64,
    /// The keys, in the order sent.
    pub keys: Keys<'a>,
}

/// The keys of a multi-get, split from the line on demand (no allocation).
#[derive(Copy, Clone, Debug)]
pub struct Keys<'a> {
    rest: &'a [u8],
}

impl<'a> Keys<'a> {
    pub(crate) fn new(rest: &'a [u8]) -> Keys<'a> {
        Keys { rest }
    }
}

impl<'a> Iterator for Keys<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|&b| b != b' ')?;
        let rest = &self.rest[start..];
        let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        self.rest = &rest[end..];
        Some(&rest[..end])
    }
}

/// incr/decr.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ArithRequest<'a> {
    /// `incr` (else `decr`).
    pub incr: bool,
    /// The key, as the client sent it.
    pub key: &'a [u8],
    /// The amount, a 64-bit unsigned number.
    pub delta: u64,
    /// Send no reply (`noreply`).
    pub noreply: bool,
}

/// `delete <key> [0] [noreply]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeleteRequest<'a> {
    /// The key, as the client sent it.
    pub key: &'a [u8],
    /// Send no reply (`noreply`).
    pub noreply: bool,
}

/// `touch <key> <exptime> [noreply]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TouchRequest<'a> {
    /// The key, as the client sent it.
    pub key: &'a [u8],
    /// The new exptime as memcached read it; the engine interprets it.
    pub exptime: i64,
    /// Send no reply (`noreply`).
    pub noreply: bool,
}

/// `mg <key> <flags>*`.
#[derive(Clone, Debug)]
pub struct MetaGet<'a> {
    /// The key, decoded if it came base64-encoded (`b`).
    pub key: MetaKey<'a>,
    /// The flags, in the client's order.
    pub flags: MetaFlags<'a>,
}

/// `ms <key> <datalen> <flags>*` and its data block.
#[derive(Clone, Debug)]
pub struct MetaSet<'a> {
    /// The key, decoded if it came base64-encoded (`b`).
    pub key: MetaKey<'a>,
    /// The flags, in the client's order.
    pub flags: MetaFlags<'a>,
    /// The mode (`M` flag).
    pub mode: MetaMode,
    /// The data block.
    pub data: Data<'a>,
}

/// `md <key> <flags>*`.
#[derive(Clone, Debug)]
pub struct MetaDelete<'a> {
    /// The key, decoded if it came base64-encoded (`b`).
    pub key: MetaKey<'a>,
    /// The flags, in the client's order.
    pub flags: MetaFlags<'a>,
}

/// `ma <key> <flags>*`.
#[derive(Clone, Debug)]
pub struct MetaArith<'a> {
    /// The key, decoded if it came base64-encoded (`b`).
    pub key: MetaKey<'a>,
    /// The flags, in the client's order.
    pub flags: MetaFlags<'a>,
    /// Increment (the default, mode `MI` or `M+`); else decrement (`MD` or `M-`).
    pub incr: bool,
}

/// `me <key> [b]`.
#[derive(Clone, Debug)]
pub struct MetaDebug<'a> {
    /// The key, decoded if it came base64-encoded (`b`).
    pub key: MetaKey<'a>,
}

/// `shutdown [graceful]`; whether shutdown is enabled is the server's to check first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ShutdownMode {
    /// `shutdown`: stop now.
    Now,
    /// `shutdown graceful`: stop accepting, finish the connections' requests.
    Graceful,
    /// Anything else: `CLIENT_ERROR invalid shutdown mode` once shutdown is enabled.
    Invalid,
}

/// `stats [<sub> …]`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum StatsRequest<'a> {
    /// `stats`.
    General,
    /// `stats settings`.
    Settings,
    /// `stats items`.
    Items,
    /// `stats slabs`.
    Slabs,
    /// `stats sizes`.
    Sizes,
    /// `stats sizes_enable`.
    SizesEnable,
    /// `stats sizes_disable`.
    SizesDisable,
    /// `stats conns`.
    Conns,
    /// `stats extstore`.
    Extstore,
    /// `stats reset`.
    Reset,
    /// `stats detail on`.
    DetailOn,
    /// `stats detail off`.
    DetailOff,
    /// `stats detail dump`.
    DetailDump,
    /// `stats cachedump <class> <limit>`.
    Cachedump {
        /// The slab class.
        class: u32,
        /// Most items to list, as sent.
        limit: u32,
    },
    /// Any other subcommand (the server may know it, e.g. `stats mrc`; memcached answers `ERROR`).
    Other {
        /// The subcommand.
        sub: &'a [u8],
        /// The rest of the line, unparsed.
        args: &'a [u8],
    },
}

/// `slabs …`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum SlabsRequest {
    /// `slabs reassign <src> <dst>`; `None` when either is not a number (reported after the
    /// "reassignment disabled" check, as memcached does).
    Reassign {
        /// The source and destination class numbers as sent (memcached's -1 is "any source").
        classes: Option<(i32, i32)>,
    },
    /// `slabs automove <0|1|2> [noreply]`.
    Automove {
        /// memcached's `slab_automove` mode.
        mode: u32,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `slabs automove ratio <f> [noreply]`.
    AutomoveRatio {
        /// The new `slab_automove_ratio`.
        ratio: f64,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
}

/// `lru …` (validated; the engine has one exact LRU per class, so these only change settings).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum LruRequest {
    /// `lru tune <hot%> <warm%> <hot factor> <warm factor>`.
    Tune {
        /// Percent of a class's memory for the hot LRU.
        hot_pct: u32,
        /// Percent for the warm LRU.
        warm_pct: u32,
        /// memcached's `hot_max_factor`: a hot item this much older than the cold tail moves on.
        hot_factor: f64,
        /// memcached's `warm_max_factor`: a warm item this much older than the cold tail moves on.
        warm_factor: f64,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `lru mode <flat|segmented>`.
    Mode {
        /// Segmented (else flat).
        segmented: bool,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `lru temp_ttl <ttl>`.
    TempTtl {
        /// memcached's `temp_lru` TTL: items with a shorter TTL go to the temporary LRU.
        ttl: i32,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
}

/// `lru_crawler …`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LruCrawlerRequest<'a> {
    /// `lru_crawler enable`.
    Enable {
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `lru_crawler disable`.
    Disable {
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `lru_crawler sleep <microseconds>`.
    Sleep {
        /// Microseconds between steps.
        micros: u32,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `lru_crawler tocrawl <items>`.
    ToCrawl {
        /// Most items inspected per class per run.
        items: u32,
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `crawl <ids|all>`: class list unparsed (comma-separated ids or `all`).
    Crawl {
        /// The classes, unparsed.
        classes: &'a [u8],
        /// Send no reply (`noreply`).
        noreply: bool,
    },
    /// `metadump <ids|all|hash>`.
    Metadump {
        /// The classes, unparsed.
        classes: &'a [u8],
    },
}
