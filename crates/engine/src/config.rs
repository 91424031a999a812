//! Engine configuration: one struct, defaults from named constants (memcached 1.6.18's), validated once.
//!
//! The server maps memcached's flags onto these fields (`-m -I -f -n -M -C`); the simulator fills them
//! directly. Every other module reads its limits from here, so a default is written exactly once.

/// `-m 64`: memcached's default memory limit.
pub const DEFAULT_MEMORY_LIMIT_BYTES: u64 = 64 * 1024 * 1024;
/// 1 MiB pages: the largest default item fits one page, and a page is the unit that moves between partitions.
pub const DEFAULT_PAGE_SIZE_BYTES: usize = 1024 * 1024;
/// `-I 1m`: memcached's default largest item, one default page.
pub const DEFAULT_ITEM_SIZE_MAX_BYTES: usize = DEFAULT_PAGE_SIZE_BYTES;
/// `-f 1.25`: each slab class's chunk is 1.25x the previous one.
pub const DEFAULT_GROWTH_FACTOR: f64 = 1.25;
/// `-n 48`: minimum space for key + value + flags in the smallest chunk.
pub const DEFAULT_MIN_CHUNK_DATA_BYTES: usize = 48;
/// memcached's `sizeof(item)` on 64-bit builds: the base of its slab ladder and of its item size accounting,
/// which decides the `-I` limit always and the slab class under `ItemAccounting::Memcached`.
pub const MEMCACHED_ITEM_HEADER_BYTES: usize = 48;
/// The CAS field memcached adds to each item unless `-C`.
pub const MEMCACHED_CAS_BYTES: usize = 8;
/// memcached's `MAX_NUMBER_OF_SLAB_CLASSES` less the pool class 0.
pub const MAX_SLAB_CLASSES: usize = 63;
/// Most tenant pools one engine keeps (each costs a class table per shard, about 4 KiB).
pub const MAX_TENANT_POOLS: usize = 1024;
/// Smallest `-I` memcached accepts.
pub const MIN_ITEM_SIZE_MAX_BYTES: usize = 1024;
/// Largest `-I` memcached accepts.
pub const MAX_ITEM_SIZE_MAX_BYTES: usize = 1024 * 1024 * 1024;

/// How an item's size is counted when it is placed in a slab class (and in `bytes`, `mem_requested` and
/// the profilers' byte curves). Either way the `-I` limit is memcached's accounting, so an item memcached
/// refuses as too large is refused here too, and one it stores is stored.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ItemAccounting {
    /// memcached 1.6.18's: its 48-byte header, CAS, key + NUL, flags suffix, value + CRLF, on memcached's
    /// ladder (class 1 = 48 + `-n`). Every item lands in the class memcached gives it, so simulations of
    /// memcached's allocation stay faithful; 30+ bytes of each chunk are never written (our header is 28).
    #[default]
    Memcached,
    /// The bytes the item occupies in its chunk (`item::stored_bytes`: our 28-byte header, key, value), on
    /// a ladder based on that header (class 1 = 28 + `-n`, rounded to 8). More items fit in each page;
    /// classes differ from memcached's.
    Compact,
}

impl ItemAccounting {
    /// The `-o item_accounting=` spelling.
    pub fn name(self) -> &'static str {
        match self {
            ItemAccounting::Memcached => "memcached",
            ItemAccounting::Compact => "compact",
        }
    }

    /// The accounting an `-o item_accounting=` value names, or `None` for an unknown one.
    pub fn parse(s: &str) -> Option<ItemAccounting> {
        match s {
            "memcached" => Some(ItemAccounting::Memcached),
            "compact" => Some(ItemAccounting::Compact),
            _ => None,
        }
    }
}

/// How item memory is laid out (`-o memory_layout=`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum MemoryLayout {
    /// memcached's: slab classes of fixed-size chunks in pages, one LRU per class; pages move between
    /// classes and tenants.
    #[default]
    Slab,
    /// Memshare's: items of every size appended to segments (one page each) owned by a tenant pool; a
    /// cleaner ranks, evicts and compacts, so memory moves between sizes and tenants in bytes.
    Log,
}

impl MemoryLayout {
    /// The `-o memory_layout=` spelling.
    pub fn name(self) -> &'static str {
        match self {
            MemoryLayout::Slab => "slab",
            MemoryLayout::Log => "log",
        }
    }

    /// The layout an `-o memory_layout=` value names, or `None` for an unknown one.
    pub fn parse(s: &str) -> Option<MemoryLayout> {
        match s {
            "slab" => Some(MemoryLayout::Slab),
            "log" => Some(MemoryLayout::Log),
            _ => None,
        }
    }
}

/// How the log layout's cleaner ranks a tenant's items: the highest ranked survive a cleaning pass
/// (Memshare's `rank(t, f)` of the last access time `t` and the access count `f`). The default is
/// `Density`: hits per byte make it size-aware, which pays when item sizes vary, as they do on the real
/// traces (docs/results.md §15).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Ranking {
    /// Least recently used goes first: rank = last access time.
    Lru,
    /// Least frequently used goes first: rank = (accesses, last access); counts halve when an item
    /// survives a pass, so old popularity fades.
    Lfu,
    /// Segmented LRU: items used at least twice (the protected segment) outrank the others, then by last
    /// access.
    Slru,
    /// Hits per byte: (accesses + 1) per byte of the item's record. The items a pass weighs were written
    /// about as long ago (the pass takes the oldest segments), so accesses measure the rate of hits, and
    /// dividing by the bytes keeps the items that earn the most hits for the memory they hold (what slab
    /// policies reach by moving pages to the classes with the most hits per byte). Counts halve when an
    /// item survives a pass, as under LFU, and an item unused for eight of its pool's cleaning cycles
    /// ranks last, so that small items of a past phase do not stay for their size.
    #[default]
    Density,
    /// A clock over the log (S3-FIFO's main queue): items read since their last pass outrank the
    /// others, by reads (counted up to 3), then the younger first; a survivor's count goes down by one
    /// each pass, so an item read once survives once.
    Clock,
}

impl Ranking {
    /// The names `parse` accepts, for error messages.
    pub const EXPECTED: &'static str =
        "lru, lfu, slru (segmented LRU), density (hits per byte) or clock";

    /// The spelling in `--config` (`ranking = "lru"`).
    pub fn name(self) -> &'static str {
        match self {
            Ranking::Lru => "lru",
            Ranking::Lfu => "lfu",
            Ranking::Slru => "slru",
            Ranking::Density => "density",
            Ranking::Clock => "clock",
        }
    }

    /// The ranking a name gives, or `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Ranking> {
        match s {
            "lru" => Some(Ranking::Lru),
            "lfu" => Some(Ranking::Lfu),
            "slru" | "segmented-lru" => Some(Ranking::Slru),
            "density" | "hits-per-byte" => Some(Ranking::Density),
            "clock" => Some(Ranking::Clock),
            _ => None,
        }
    }
}

/// The memory layout mrcached runs when `-o memory_layout` is not given, and `mrcache sim` replays when
/// `--layout` is not (so that a default simulation predicts a default server). [`EngineConfig::default`]
/// keeps memcached's slab layout: it is the engine's reference model of memcached, which the engine's
/// tests and `mrcache sim --memcached-defaults` use.
pub const MRCACHED_MEMORY_LAYOUT: MemoryLayout = MemoryLayout::Log;
/// The item accounting mrcached runs when `-o item_accounting` is not given, and `mrcache sim` when
/// `--item-accounting` is not: the bytes an item occupies (more items fit in `-m`).
/// [`EngineConfig::default`] keeps memcached's, as [`MRCACHED_MEMORY_LAYOUT`] says why.
pub const MRCACHED_ITEM_ACCOUNTING: ItemAccounting = ItemAccounting::Compact;

/// Segments a log cleaning pass takes by default: two in, one out, so a pass copies at most one
/// segment of survivors under its shard lock (Memshare's `n`).
pub const DEFAULT_LOG_CLEAN_SEGMENTS: usize = 2;
/// Most segments a pass may take (`n`): the bytes it copies under one lock grow with it.
pub const MAX_LOG_CLEAN_SEGMENTS: usize = 16;

/// The largest share of a pool's log segments that may be probationary (`log_probation`).
pub const MAX_LOG_PROBATION: f64 = 0.9;

/// How the engine is sized and how it behaves when full.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    /// `-m`: bytes of item memory; divided into pages.
    pub memory_limit_bytes: u64,
    /// `-I`: the largest item, always by memcached's accounting (header, CAS, key, suffix, value and CRLF).
    /// The page size is `max(1 MiB, item_size_max_bytes)`, so that the largest item always fits one page.
    pub item_size_max_bytes: usize,
    /// `-f`: chunk growth factor between slab classes.
    pub growth_factor: f64,
    /// `-n`: minimum key + value + flags space of the smallest class.
    pub min_chunk_data_bytes: usize,
    /// `!-C`: items carry a CAS value.
    pub use_cas: bool,
    /// How item sizes pick slab classes. memcached's by default, so that this default models memcached;
    /// mrcached's is [`MRCACHED_ITEM_ACCOUNTING`].
    pub item_accounting: ItemAccounting,
    /// `!-M`: evict the least recently used item when a class is full, instead of failing the store.
    pub evict_when_full: bool,
    /// Independent lock domains (hash-partitioned key space, each with its own pages and LRUs).
    /// One shard is exact global LRU per class; the simulator uses one.
    pub shards: usize,
    /// Online MRC profiling of every class: the initial sampling rate, or `None` for off. Profilers are
    /// sized to stay within their budget together (`profile_memory_share`, see `profiling`).
    pub profile_sample_rate: Option<f64>,
    /// Share of `memory_limit_bytes` the profilers may hold together (1% by default, the server's
    /// bound), or `profiling::PROFILE_MEMORY_FLOOR_BYTES` where that is more (within an eighth of the
    /// memory). The simulator may grant a larger share: its memory is not a real server's.
    pub profile_memory_share: f64,
    /// Tenants with memory of their own (ids `0..tenant_pools`): each gets its own pages, LRUs and page
    /// accounting (a pool), so tenants can be given reserves, caps and targets. Tenants with larger ids
    /// share pool 0 with the default tenant. 1 (the default) is one memory for everyone, as memcached.
    pub tenant_pools: usize,
    /// Bytes of evicted items each pool remembers (by key hash and size) in its shadow queue, so that a
    /// GET miss on a recently evicted key is counted as a shadow hit (Memshare); `None` keeps none.
    pub shadow_queue_bytes: Option<u64>,
    /// Slab classes (memcached's) or a log of segments (Memshare's).
    pub memory_layout: MemoryLayout,
    /// Log layout: how every pool ranks its items until `Engine::set_pool_ranking` changes it.
    pub log_ranking: Ranking,
    /// Log layout: segments one cleaning pass takes (`n`; it writes survivors into at most `n - 1`).
    pub log_clean_segments: usize,
    /// Log layout: remember the keys the cleaner evicts (a ghost of fingerprints), so a key written
    /// again soon after its eviction starts with one access counted (`log::ghost`). Off by default: on
    /// the shared traces it saves up to 3.3% of the density ranking's misses in small caches and
    /// costs up to 0.8% in one (docs/results.md §15.7); a candidate for a chooser, not yet a default.
    pub log_ghost: bool,
    /// Log layout: the share of each pool's segments that new keys enter on probation (S3-FIFO's small
    /// queue, `log` module doc), 0 for none: a key written for the first time goes to a probationary
    /// queue of segments, and its cleaning moves only the items read since to the main queue; the
    /// rest are evicted and remembered in the ghost, so a key that returns soon after enters the main
    /// queue directly. Turns the ghost on. 0..0.9.
    pub log_probation: f64,
    /// Log layout: candidate policies for the chooser (`engine::chooser`): with two or more, the
    /// engine runs a miniature of each on a sample of the keys and switches every pool to the one
    /// that misses least. The first runs at the start, in place of `log_ranking` and `log_probation`.
    pub log_choose: Vec<LogPolicy>,
    /// The share of keys the chooser's miniatures see, and of the memory each holds: (0, 1].
    pub log_choose_rate: f64,
    /// Log layout: segments of this many bytes instead of the page size (the chooser's miniatures).
    pub segment_bytes: Option<usize>,
}

/// A log eviction policy the chooser can run: a ranking and a probationary share. Written `density`,
/// `clock`, ... or with a share, `clock+p` (0.1, S3-FIFO's) or `clock+p0.05`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogPolicy {
    /// The cleaner's ranking.
    pub ranking: Ranking,
    /// The probationary share of each pool's segments (0: none).
    pub probation: f64,
}

impl LogPolicy {
    /// The probationary share `R+p` stands for.
    pub const DEFAULT_PROBATION: f64 = 0.1;

    /// A policy by its spelling (see the type's doc), or `None`.
    pub fn parse(s: &str) -> Option<LogPolicy> {
        let (ranking, probation) = match s.split_once("+p") {
            None => (s, 0.0),
            Some((r, "")) => (r, Self::DEFAULT_PROBATION),
            Some((r, share)) => (r, share.parse().ok()?),
        };
        let probation_ok = (0.0..=MAX_LOG_PROBATION).contains(&probation);
        Some(LogPolicy {
            ranking: Ranking::parse(ranking)?,
            probation,
        })
        .filter(|_| probation_ok)
    }

    /// A list of policies separated by `/` or `,` (`-o log_choose=density/clock+p`: memcached's `-o`
    /// separates options with commas), or `None` if one is not a policy.
    pub fn parse_list(s: &str) -> Option<Vec<LogPolicy>> {
        (s.split(['/', ',']).map(str::trim))
            .filter(|p| !p.is_empty())
            .map(LogPolicy::parse)
            .collect()
    }

    /// Its spelling, as `parse` reads it.
    pub fn name(&self) -> String {
        if self.probation == 0.0 {
            self.ranking.name().to_string()
        } else if self.probation == Self::DEFAULT_PROBATION {
            format!("{}+p", self.ranking.name())
        } else {
            format!("{}+p{}", self.ranking.name(), self.probation)
        }
    }
}

/// The chooser's default share of keys and memory per miniature.
pub const DEFAULT_LOG_CHOOSE_RATE: f64 = 1.0 / 16.0;

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            memory_limit_bytes: DEFAULT_MEMORY_LIMIT_BYTES,
            item_size_max_bytes: DEFAULT_ITEM_SIZE_MAX_BYTES,
            growth_factor: DEFAULT_GROWTH_FACTOR,
            min_chunk_data_bytes: DEFAULT_MIN_CHUNK_DATA_BYTES,
            use_cas: true,
            item_accounting: ItemAccounting::Memcached,
            evict_when_full: true,
            shards: 1,
            profile_sample_rate: Some(crate::profiling::DEFAULT_SAMPLE_RATE),
            profile_memory_share: crate::profiling::PROFILE_MEMORY_SHARE,
            tenant_pools: 1,
            shadow_queue_bytes: None,
            memory_layout: MemoryLayout::Slab,
            log_ranking: Ranking::default(),
            log_clean_segments: DEFAULT_LOG_CLEAN_SEGMENTS,
            log_ghost: false,
            log_probation: 0.0,
            log_choose: Vec::new(),
            log_choose_rate: DEFAULT_LOG_CHOOSE_RATE,
            segment_bytes: None,
        }
    }
}

/// A configuration value the engine cannot work with; the message names the setting (and the flag that
/// sets it in the server).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// `-f` is not a finite number above 1.
    #[error("growth factor (-f) must be greater than 1.0, got {0}")]
    GrowthFactor(f64),
    /// `-n 0`.
    #[error("chunk size (-n) must be greater than 0")]
    MinChunkData,
    /// `-I` below `MIN_ITEM_SIZE_MAX_BYTES`.
    #[error("item max size (-I) cannot be less than {MIN_ITEM_SIZE_MAX_BYTES} bytes")]
    ItemSizeMaxTooSmall,
    /// `-I` above `MAX_ITEM_SIZE_MAX_BYTES`.
    #[error("item max size (-I) cannot be larger than {MAX_ITEM_SIZE_MAX_BYTES} bytes")]
    ItemSizeMaxTooLarge,
    /// `-I` above half of `-m`.
    #[error("item max size (-I) cannot be larger than half of memory (-m)")]
    ItemSizeMaxOverHalfMemory,
    /// The profilers' initial sampling rate is outside (0, 1].
    #[error("MRC sampling rate must be in (0, 1], got {0}")]
    SampleRate(f64),
    /// The profilers' memory share is outside (0, 1].
    #[error("MRC profiler memory share must be in (0, 1], got {0}")]
    ProfileMemoryShare(f64),
    /// `shards` is not a power of two in 1..=1024.
    #[error("shards must be a power of two between 1 and 1024, got {0}")]
    Shards(usize),
    /// `tenant_pools` is outside 1..=`MAX_TENANT_POOLS`.
    #[error("tenant pools must be between 1 and {MAX_TENANT_POOLS}, got {0}")]
    TenantPools(usize),
    /// `log_clean_segments` outside 2..=`MAX_LOG_CLEAN_SEGMENTS`.
    #[error(
        "log cleaning pass must take between 2 and {MAX_LOG_CLEAN_SEGMENTS} segments, got {0}"
    )]
    LogCleanSegments(usize),
    /// `log_probation` outside 0..=`MAX_LOG_PROBATION`.
    #[error("log probation share must be between 0 and {MAX_LOG_PROBATION}, got {0}")]
    LogProbation(f64),
    /// `log_choose_rate` outside (0, 1].
    #[error("the chooser's sampling rate must be in (0, 1], got {0}")]
    LogChooseRate(f64),
    /// `segment_bytes` below `MIN_ITEM_SIZE_MAX_BYTES` or below the largest item.
    #[error("segments of {0} bytes cannot hold the largest item")]
    SegmentBytes(usize),
    /// `-m` holds more pages than the shards can address (each shard addresses `2^32` chunks).
    #[error("memory limit (-m) of {pages} pages exceeds the {max_pages} pages {shards} shards can address")]
    TooManyPages {
        /// Pages in `-m`.
        pages: usize,
        /// Most pages the shards can address together.
        max_pages: usize,
        /// Shards configured.
        shards: usize,
    },
}

impl EngineConfig {
    /// The page size: 1 MiB, or `-I` when that is larger.
    pub fn page_size_bytes(&self) -> usize {
        self.segment_bytes
            .unwrap_or(self.item_size_max_bytes.max(DEFAULT_PAGE_SIZE_BYTES))
    }

    /// Whole pages in `-m` (at least one).
    pub fn page_budget(&self) -> usize {
        ((self.memory_limit_bytes / self.page_size_bytes() as u64) as usize).max(1)
    }

    /// Most pages that partitions' first pages may take past `-m`. memcached gives every slab class its
    /// first 1 MiB page even over the limit, so its excess is at most one 1 MiB page per class; here a
    /// partition is a class of one tenant pool in one shard, and each may get a first page. The same
    /// excess is allowed in bytes: with 1 MiB pages every partition still gets its first page, and with
    /// `-I` above 1m (pages of `-I`) the rule cannot multiply `-I`-sized pages past `-m`.
    pub fn first_page_allowance(&self, classes: usize) -> usize {
        let bytes = classes
            .saturating_mul(self.tenant_pools)
            .saturating_mul(self.shards)
            .saturating_mul(DEFAULT_PAGE_SIZE_BYTES);
        bytes / self.page_size_bytes()
    }

    /// Fixed per-item overhead of memcached's accounting: header, plus CAS unless `-C`. This decides the
    /// `-I` limit whatever the `item_accounting`.
    pub fn memcached_item_overhead_bytes(&self) -> usize {
        MEMCACHED_ITEM_HEADER_BYTES + if self.use_cas { MEMCACHED_CAS_BYTES } else { 0 }
    }

    /// Checks every field, naming the one that is wrong (memcached's own limits where it has them).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.growth_factor > 1.0 && self.growth_factor.is_finite()) {
            return Err(ConfigError::GrowthFactor(self.growth_factor));
        }
        if self.min_chunk_data_bytes == 0 {
            return Err(ConfigError::MinChunkData);
        }
        if self.item_size_max_bytes < MIN_ITEM_SIZE_MAX_BYTES {
            return Err(ConfigError::ItemSizeMaxTooSmall);
        }
        if self.item_size_max_bytes > MAX_ITEM_SIZE_MAX_BYTES {
            return Err(ConfigError::ItemSizeMaxTooLarge);
        }
        if self.item_size_max_bytes as u64 > self.memory_limit_bytes / 2 {
            return Err(ConfigError::ItemSizeMaxOverHalfMemory);
        }
        if let Some(rate) = self.profile_sample_rate {
            if !(rate > 0.0 && rate <= 1.0) {
                return Err(ConfigError::SampleRate(rate));
            }
        }
        if !(self.profile_memory_share > 0.0 && self.profile_memory_share <= 1.0) {
            return Err(ConfigError::ProfileMemoryShare(self.profile_memory_share));
        }
        if self.shards == 0 || !self.shards.is_power_of_two() || self.shards > 1024 {
            return Err(ConfigError::Shards(self.shards));
        }
        if self.tenant_pools == 0 || self.tenant_pools > MAX_TENANT_POOLS {
            return Err(ConfigError::TenantPools(self.tenant_pools));
        }
        if !(2..=MAX_LOG_CLEAN_SEGMENTS).contains(&self.log_clean_segments) {
            return Err(ConfigError::LogCleanSegments(self.log_clean_segments));
        }
        if !(0.0..=MAX_LOG_PROBATION).contains(&self.log_probation) {
            return Err(ConfigError::LogProbation(self.log_probation));
        }
        if !(self.log_choose_rate > 0.0 && self.log_choose_rate <= 1.0) {
            return Err(ConfigError::LogChooseRate(self.log_choose_rate));
        }
        if let Some(segment) = self.segment_bytes {
            if segment < MIN_ITEM_SIZE_MAX_BYTES || self.item_size_max_bytes > segment {
                return Err(ConfigError::SegmentBytes(segment));
            }
        }
        Ok(())
    }
}
