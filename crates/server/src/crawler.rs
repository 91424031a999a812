//! The LRU crawler: memcached's `lru_crawler` on a background thread of its own.
//!
//! memcached has one crawler, and one job at a time: a crawl (`lru_crawler crawl <classes>`: unlink
//! the expired and flushed items of those classes) or a metadump. While one runs, another crawl or
//! metadump is answered `BUSY currently processing crawler request`. Here the same single slot is a
//! [`CrawlerClaim`]: whoever holds one is "the crawler's job" (`stats lru_crawler_running` is 1), and
//! dropping it frees the slot, so a job can never leak it (a metadump whose client disconnects drops
//! its session, and with it the claim).
//!
//! - A **crawl** runs here, on the crawler thread ([`Crawler::run`]): `lru_crawler crawl` claims the
//!   slot, posts the job and answers `OK` at once. The thread walks the engine
//!   (`Engine::crawl_expired`) in batches of [`CRAWL_BATCH_SLOTS`] index buckets, each under one shard
//!   lock (about a hundred microseconds), and sleeps `lru_crawler sleep` microseconds after each batch,
//!   as memcached sleeps after every thousand items. It inspects at most `lru_crawler tocrawl` items
//!   of each class (0: all of them), in index order — not LRU order, so the items a bounded crawl
//!   inspects are a sample of the class rather than its oldest.
//! - A **metadump** is walked and formatted on a dump thread of its own at the lowest priority, paced
//!   by `lru_crawler sleep` as a crawl is, and its lines are copied to the client by the connection's
//!   worker between the other connections' requests (`crate::dispatch::dump`). The connection holds
//!   the claim until it has written `END` or is gone.
//!
//! `lru_crawler enable` / `disable` turn the crawler on and off at run time (`-o no_lru_crawler`
//! starts it off): while off, crawls and metadumps are refused, a crawl under way stops after its
//! current batch, and the maintenance thread's periodic reaper (memcached's automatic crawler, which
//! stays there: it is a bounded per-tick job that never makes a client's crawl BUSY) stops too.
//!
//! Concurrency: every field is an atomic except the mailbox (a mutex and condvar between the worker
//! that posts a crawl and the crawler thread); the claim is a compare-and-swap on `busy`. The crawler
//! thread holds at most one shard lock at a time, never with the mailbox locked.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use mrcache_engine::{ClassSet, CrawlQuota, WalkCursor};

use crate::context::ServerContext;

/// Index buckets one crawl step inspects under one shard lock: about a thousand items, memcached's
/// `crawls_persleep`, and well under a millisecond of lock hold.
pub const CRAWL_BATCH_SLOTS: usize = 1024;

/// Why a crawl or a metadump did not start.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum StartError {
    /// The crawler is disabled (`-o no_lru_crawler`, `lru_crawler disable`).
    Disabled,
    /// Another crawl or metadump holds the crawler.
    Busy,
}

/// What the crawler thread is asked to do next.
enum Mailbox {
    Idle,
    Crawl(CrawlJob),
    Stop,
}

/// One `lru_crawler crawl`: which classes, how many items of each, and the claim it runs under.
struct CrawlJob {
    classes: ClassSet,
    per_class: Option<u64>,
    _claim: CrawlerClaim,
}

/// State shared by the crawler thread, the workers (commands, metadumps) and `stats`.
struct Shared {
    enabled: AtomicBool,
    sleep_us: AtomicU32,
    tocrawl: AtomicU32,
    busy: AtomicBool,
    /// Crawls and metadumps started (memcached's `lru_crawler_starts`, with the reaper's passes).
    starts: AtomicU64,
    mailbox: Mutex<Mailbox>,
    wake: Condvar,
}

/// The crawler's one job slot, held by a running crawl or metadump; dropping it frees the slot.
pub struct CrawlerClaim {
    shared: Arc<Shared>,
}

impl Drop for CrawlerClaim {
    fn drop(&mut self) {
        self.shared.busy.store(false, Ordering::Release);
    }
}

/// The LRU crawler's settings, job slot and mailbox (one per server, in `ServerContext`).
pub struct Crawler {
    shared: Arc<Shared>,
}

impl Crawler {
    /// A crawler, on or off, with memcached's `lru_crawler_sleep` and `lru_crawler_tocrawl`.
    pub fn new(enabled: bool, sleep_us: u32, tocrawl: u32) -> Crawler {
        Crawler {
            shared: Arc::new(Shared {
                enabled: AtomicBool::new(enabled),
                sleep_us: AtomicU32::new(sleep_us),
                tocrawl: AtomicU32::new(tocrawl),
                busy: AtomicBool::new(false),
                starts: AtomicU64::new(0),
                mailbox: Mutex::new(Mailbox::Idle),
                wake: Condvar::new(),
            }),
        }
    }

    /// Whether the crawler is on (`stats settings` `lru_crawler`).
    pub fn enabled(&self) -> bool {
        self.shared.enabled.load(Ordering::Relaxed)
    }

    /// `lru_crawler enable`: false if it was already on (memcached then fails to start a second
    /// crawler thread).
    pub fn enable(&self) -> bool {
        !self.shared.enabled.swap(true, Ordering::Relaxed)
    }

    /// `lru_crawler disable`: a crawl under way stops after its current batch.
    pub fn disable(&self) {
        self.shared.enabled.store(false, Ordering::Relaxed);
    }

    /// Microseconds the crawler sleeps after each batch (`lru_crawler sleep`).
    pub fn sleep_us(&self) -> u32 {
        self.shared.sleep_us.load(Ordering::Relaxed)
    }

    /// `lru_crawler sleep N`; the protocol caps N at a second.
    pub fn set_sleep_us(&self, micros: u32) {
        self.shared.sleep_us.store(micros, Ordering::Relaxed);
    }

    /// Items of each class a crawl inspects at most; 0 for all (`lru_crawler tocrawl`).
    pub fn tocrawl(&self) -> u32 {
        self.shared.tocrawl.load(Ordering::Relaxed)
    }

    /// `lru_crawler tocrawl N`, from the next crawl on.
    pub fn set_tocrawl(&self, items: u32) {
        self.shared.tocrawl.store(items, Ordering::Relaxed);
    }

    /// Whether a crawl or a metadump holds the crawler (`stats lru_crawler_running`).
    pub fn is_running(&self) -> bool {
        self.shared.busy.load(Ordering::Acquire)
    }

    /// Crawls and metadumps started since the server started.
    pub fn starts(&self) -> u64 {
        self.shared.starts.load(Ordering::Relaxed)
    }

    /// Takes the crawler's slot for a job (a metadump keeps it for as long as it streams).
    pub fn claim(&self) -> Result<CrawlerClaim, StartError> {
        if !self.enabled() {
            return Err(StartError::Disabled);
        }
        if self
            .shared
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(StartError::Busy);
        }
        self.shared.starts.fetch_add(1, Ordering::Relaxed);
        Ok(CrawlerClaim {
            shared: self.shared.clone(),
        })
    }

    /// `lru_crawler crawl`: claims the crawler and hands the crawl of `classes` to its thread, which
    /// inspects at most `lru_crawler tocrawl` items of each. Returns at once.
    pub fn start_crawl(&self, classes: ClassSet) -> Result<(), StartError> {
        let claim = self.claim()?;
        let per_class = Some(u64::from(self.tocrawl())).filter(|&n| n > 0);
        let mut mailbox = self.mailbox();
        // The slot was free, so the thread has taken any earlier job; only a stop can be waiting.
        if matches!(*mailbox, Mailbox::Idle) {
            *mailbox = Mailbox::Crawl(CrawlJob {
                classes,
                per_class,
                _claim: claim,
            });
            self.shared.wake.notify_all();
        }
        Ok(())
    }

    /// Asks the crawler thread to stop (after its current batch) and return from [`Crawler::run`].
    pub fn stop(&self) {
        *self.mailbox() = Mailbox::Stop;
        self.shared.wake.notify_all();
    }

    fn mailbox(&self) -> MutexGuard<'_, Mailbox> {
        self.shared
            .mailbox
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The crawler thread's body: runs each crawl posted to it until [`Crawler::stop`].
    pub fn run(&self, ctx: &ServerContext) {
        loop {
            let job = {
                let mut mailbox = self.mailbox();
                loop {
                    match std::mem::replace(&mut *mailbox, Mailbox::Idle) {
                        Mailbox::Idle => {
                            mailbox = self
                                .shared
                                .wake
                                .wait(mailbox)
                                .unwrap_or_else(|e| e.into_inner());
                        }
                        Mailbox::Crawl(job) => break job,
                        Mailbox::Stop => {
                            *mailbox = Mailbox::Stop;
                            return;
                        }
                    }
                }
            };
            if !self.crawl(ctx, &job) {
                return;
            }
        }
    }

    /// Runs one crawl to its end, or until the crawler is disabled; false if asked to stop meanwhile.
    fn crawl(&self, ctx: &ServerContext, job: &CrawlJob) -> bool {
        let mut cursor = WalkCursor::default();
        let mut quota = CrawlQuota::new(job.classes, job.per_class);
        while !cursor.is_done() && !quota.is_spent() && self.enabled() {
            // The engine counts what it inspects and unlinks, per class (`stats items`).
            ctx.engine
                .crawl_expired(&mut cursor, CRAWL_BATCH_SLOTS, ctx.clock(), &mut quota);
            if !self.pause(Duration::from_micros(u64::from(self.sleep_us()))) {
                return false;
            }
        }
        true
    }

    /// Sleeps `time` between batches, waking early for a stop; false if asked to stop.
    fn pause(&self, time: Duration) -> bool {
        let mut mailbox = self.mailbox();
        if !time.is_zero() && !matches!(*mailbox, Mailbox::Stop) {
            mailbox = self
                .shared
                .wake
                .wait_timeout(mailbox, time)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        !matches!(*mailbox, Mailbox::Stop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_job_at_a_time_and_a_dropped_claim_frees_the_slot() {
        let crawler = Crawler::new(true, 0, 0);
        let claim = crawler.claim().unwrap();
        assert!(crawler.is_running());
        assert_eq!(crawler.claim().err(), Some(StartError::Busy));
        assert_eq!(crawler.start_crawl(ClassSet::ALL), Err(StartError::Busy));
        drop(claim);
        assert!(!crawler.is_running());
        assert!(crawler.claim().is_ok());
        assert_eq!(crawler.starts(), 2);
    }

    #[test]
    fn a_disabled_crawler_starts_nothing_and_enable_reports_a_second_start() {
        let crawler = Crawler::new(false, 100, 0);
        assert_eq!(crawler.claim().err(), Some(StartError::Disabled));
        assert!(crawler.enable());
        assert!(!crawler.enable(), "already on");
        crawler.disable();
        assert!(!crawler.enabled());
    }
}
