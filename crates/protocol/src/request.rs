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
        request: Request<'a>,
        consumed: usize,
    },
    /// The request is not complete. `needed`, when known, is the total number of bytes (from the start of
    /// the buffer) the request needs, so the caller can reserve them.
    Incomplete { needed: Option<usize> },
    /// A protocol error: reply with `line` unless `noreply`, consume `consumed` bytes, then discard the
    /// next `swallow` bytes (memcached's `conn_swallow`) whenever they arrive.
    Error(ErrorReply),
    /// Close the connection without replying (binary protocol, HTTP, an endless line).
    Close,
}

/// An error line to send, memcached's exact text without the `\r\n`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ErrorReply {
    pub line: &'static str,
    pub consumed: usize,
    pub noreply: bool,
    pub swallow: usize,
}

/// One complete request.
#[derive(Debug)]
pub enum Request<'a> {
    Store(StoreRequest<'a>),
    Get(GetRequest<'a>),
    Arith(ArithRequest<'a>),
    Delete(DeleteRequest<'a>),
    Touch(TouchRequest<'a>),
    MetaGet(MetaGet<'a>),
    MetaSet(MetaSet<'a>),
    MetaDelete(MetaDelete<'a>),
    MetaArith(MetaArith<'a>),
    /// `mn`: replies `MN` (and asks the caller to flush).
    MetaNoop,
    MetaDebug(MetaDebug<'a>),
    /// `flush_all [delay] [noreply]`; `delay` 0 means now, `None` is a delay that is not a number
    /// (`CLIENT_ERROR invalid exptime argument`, reported after the server's `-F` check, as memcached does).
    FlushAll {
        delay: Option<i64>,
        noreply: bool,
    },
    Version,
    /// `verbosity <level> [noreply]`.
    Verbosity {
        level: u32,
        noreply: bool,
    },
    Quit,
    Shutdown(ShutdownMode),
    /// `cache_memlimit <megabytes> [noreply]`.
    CacheMemlimit {
        megabytes: u32,
        noreply: bool,
    },
    Stats(StatsRequest<'a>),
    Slabs(SlabsRequest),
    Lru(LruRequest),
    LruCrawler(LruCrawlerRequest<'a>),
    /// `watch …`: the connection becomes a log stream.
    Watch,
}

/// The data block of a storage command.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Data<'a> {
    /// The value, without its `\r\n`.
    Value(&'a [u8]),
    /// The item can never fit (`item_size_max`): the request was consumed up to its line, and the caller
    /// replies `SERVER_ERROR object too large for cache` and discards the next `swallow` bytes.
    TooLarge { swallow: usize },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StoreCommand {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    Cas,
}

/// set/add/replace/append/prepend/cas.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StoreRequest<'a> {
    pub command: StoreCommand,
    pub key: &'a [u8],
    pub client_flags: u32,
    /// Protocol exptime as memcached read it (32-bit signed); the engine interprets it.
    pub exptime: i64,
    /// `cas` only; 0 otherwise.
    pub cas: u64,
    pub noreply: bool,
    pub data: Data<'a>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GetKind {
    Get,
    Gets,
    Gat,
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
    pub kind: GetKind,
    /// gat/gats only; 0 otherwise.
    pub exptime: i64,
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
    pub incr: bool,
    pub key: &'a [u8],
    pub delta: u64,
    pub noreply: bool,
}

/// `delete <key> [0] [noreply]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeleteRequest<'a> {
    pub key: &'a [u8],
    pub noreply: bool,
}

/// `touch <key> <exptime> [noreply]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TouchRequest<'a> {
    pub key: &'a [u8],
    pub exptime: i64,
    pub noreply: bool,
}

/// `mg <key> <flags>*`.
#[derive(Clone, Debug)]
pub struct MetaGet<'a> {
    pub key: MetaKey<'a>,
    pub flags: MetaFlags<'a>,
}

/// `ms <key> <datalen> <flags>*` and its data block.
#[derive(Clone, Debug)]
pub struct MetaSet<'a> {
    pub key: MetaKey<'a>,
    pub flags: MetaFlags<'a>,
    pub mode: MetaMode,
    pub data: Data<'a>,
}

/// `md <key> <flags>*`.
#[derive(Clone, Debug)]
pub struct MetaDelete<'a> {
    pub key: MetaKey<'a>,
    pub flags: MetaFlags<'a>,
}

/// `ma <key> <flags>*`.
#[derive(Clone, Debug)]
pub struct MetaArith<'a> {
    pub key: MetaKey<'a>,
    pub flags: MetaFlags<'a>,
    pub incr: bool,
}

/// `me <key> [b]`.
#[derive(Clone, Debug)]
pub struct MetaDebug<'a> {
    pub key: MetaKey<'a>,
}

/// `shutdown [graceful]`; whether shutdown is enabled is the server's to check first.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ShutdownMode {
    Now,
    Graceful,
    /// Anything else: `CLIENT_ERROR invalid shutdown mode` once shutdown is enabled.
    Invalid,
}

/// `stats [<sub> …]`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum StatsRequest<'a> {
    General,
    Settings,
    Items,
    Slabs,
    Sizes,
    SizesEnable,
    SizesDisable,
    Conns,
    Extstore,
    Reset,
    DetailOn,
    DetailOff,
    DetailDump,
    /// `stats cachedump <class> <limit>`.
    Cachedump {
        class: u32,
        limit: u32,
    },
    /// Any other subcommand (the server may know it, e.g. `stats mrc`; memcached answers `ERROR`).
    Other {
        sub: &'a [u8],
        args: &'a [u8],
    },
}

/// `slabs …`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum SlabsRequest {
    /// `slabs reassign <src> <dst>`; `None` when either is not a number (reported after the
    /// "reassignment disabled" check, as memcached does).
    Reassign { classes: Option<(i32, i32)> },
    /// `slabs automove <0|1|2> [noreply]`.
    Automove { mode: u32, noreply: bool },
    /// `slabs automove ratio <f> [noreply]`.
    AutomoveRatio { ratio: f64, noreply: bool },
}

/// `lru …` (validated; the engine has one exact LRU per class, so these only change settings).
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum LruRequest {
    Tune {
        hot_pct: u32,
        warm_pct: u32,
        hot_factor: f64,
        warm_factor: f64,
        noreply: bool,
    },
    Mode {
        segmented: bool,
        noreply: bool,
    },
    TempTtl {
        ttl: i32,
        noreply: bool,
    },
}

/// `lru_crawler …`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LruCrawlerRequest<'a> {
    Enable {
        noreply: bool,
    },
    Disable {
        noreply: bool,
    },
    Sleep {
        micros: u32,
        noreply: bool,
    },
    ToCrawl {
        items: u32,
        noreply: bool,
    },
    /// `crawl <ids|all>`: class list unparsed (comma-separated ids or `all`).
    Crawl {
        classes: &'a [u8],
        noreply: bool,
    },
    /// `metadump <ids|all|hash>`.
    Metadump {
        classes: &'a [u8],
    },
}
