//! `lru_crawler …` and `stats cachedump`: memcached 1.6.18's replies over the crawler
//! (`crate::crawler`) and the key dumps (`dump`).
//!
//! Checks in memcached's order: the crawler must be on (`CLIENT_ERROR lru crawler disabled`), dumps
//! allowed (`-X`: `ERROR metadump not allowed`), the class list valid (`BADCLASS invalid class id`)
//! and not empty (`NOTSTARTED no items to crawl`), the crawler free (`BUSY currently processing
//! crawler request`). A class list is `all`, or ids between 1 and 63 separated by commas (empty
//! entries are skipped), as memcached takes them whether or not the engine has that class; `hash` is
//! a metadump's only (memcached walks its hash table for it; here every dump does).
//!
//! Scope: a tenant's connection may dump its own keys (metadump and cachedump list only them; its
//! metadump holds the crawler like any other); crawling and the crawler's settings are an operator's.

use mrcache_engine::{ClassSet, WalkFilter};
use mrcache_protocol::{response, LruCrawlerRequest};

use super::dump::Stream;
use super::{admin, Ctx, Flow};
use crate::crawler::{CrawlerClaim, StartError};
use crate::tenants::Scope;

/// memcached's `MAX_NUMBER_OF_SLAB_CLASSES`: class ids at or above it are refused.
pub(crate) const MAX_NUMBER_OF_SLAB_CLASSES: u32 = 64;

const DISABLED: &str = "CLIENT_ERROR lru crawler disabled";
const BUSY: &str = "BUSY currently processing crawler request";
const BADCLASS: &str = "BADCLASS invalid class id";
const NOTSTARTED: &str = "NOTSTARTED no items to crawl";

/// A class list as memcached's `lru_crawler_crawl` reads it.
#[derive(Debug, PartialEq, Eq)]
enum ClassList {
    /// `all` (and a metadump's `hash`).
    All,
    /// Some of the ids 1..=63 (possibly none: every entry was empty).
    Ids(ClassSet),
    /// An entry that is not a number from 1 to 63.
    Bad,
}

fn parse_classes(text: &[u8]) -> ClassList {
    if text == b"all" {
        return ClassList::All;
    }
    let mut set = ClassSet::NONE;
    for id in text.split(|&b| b == b',').filter(|id| !id.is_empty()) {
        match strtoul(id) {
            // memcached's `safe_strtoul` keeps the low 32 bits.
            Some(n) if (1..u64::from(MAX_NUMBER_OF_SLAB_CLASSES)).contains(&(n & 0xffff_ffff)) => {
                set = set.with(n as u8);
            }
            _ => return ClassList::Bad,
        }
    }
    ClassList::Ids(set)
}

/// memcached's `safe_strtoul` on one entry: decimal digits after an optional `+`.
fn strtoul(text: &[u8]) -> Option<u64> {
    let digits = text.strip_prefix(b"+").unwrap_or(text);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    digits.iter().try_fold(0u64, |n, &d| {
        n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

pub(crate) fn lru_crawler(ctx: &Ctx<'_>, r: LruCrawlerRequest<'_>, out: &mut Vec<u8>) -> Flow {
    let crawler = &ctx.server.crawler;
    let text = match r {
        // A tenant may dump its own keys; everything else here is an operator's (memcached never
        // reads `noreply` on these commands).
        LruCrawlerRequest::Metadump { classes } => return metadump(ctx, classes, out),
        _ if !admin::operator(ctx, "lru_crawler", false, out) => return Flow::Continue,
        LruCrawlerRequest::Crawl { classes, .. } => {
            if !crawler.enabled() {
                DISABLED
            } else {
                match parse_classes(classes) {
                    // memcached takes `hash` for a metadump only: a crawl of it fails, once the
                    // crawler is free.
                    ClassList::Bad if classes == b"hash" => {
                        busy_or(ctx, "ERROR an unknown error happened")
                    }
                    ClassList::Bad => BADCLASS,
                    ClassList::Ids(set) if set == ClassSet::NONE => busy_or(ctx, NOTSTARTED),
                    ClassList::All => start_crawl(ctx, ClassSet::ALL),
                    ClassList::Ids(set) => start_crawl(ctx, set),
                }
            }
        }
        LruCrawlerRequest::Enable { .. } => {
            if crawler.enable() {
                "OK"
            } else {
                "ERROR failed to start lru crawler thread"
            }
        }
        LruCrawlerRequest::Disable { .. } => {
            crawler.disable();
            "OK"
        }
        LruCrawlerRequest::Sleep { micros, .. } => {
            crawler.set_sleep_us(micros);
            "OK"
        }
        LruCrawlerRequest::ToCrawl { items, .. } => {
            crawler.set_tocrawl(items);
            "OK"
        }
    };
    response::line(out, text);
    Flow::Continue
}

/// `lru_crawler metadump <classes|all|hash>`: the dump streams ([`Flow::Stream`]) under the crawler's
/// claim.
fn metadump(ctx: &Ctx<'_>, classes: &[u8], out: &mut Vec<u8>) -> Flow {
    let server = ctx.server;
    let refusal = if !server.crawler.enabled() {
        Some(DISABLED)
    } else if !server.settings.dump_enabled {
        Some("ERROR metadump not allowed")
    } else {
        None
    };
    let list = match classes {
        b"hash" => ClassList::All,
        other => parse_classes(other),
    };
    let started = match (refusal, list) {
        (Some(text), _) => Err(text),
        (None, ClassList::Bad) => Err(BADCLASS),
        (None, ClassList::Ids(set)) if set == ClassSet::NONE => Err(busy_or(ctx, NOTSTARTED)),
        (None, ClassList::All) => claim(ctx, ClassSet::ALL),
        (None, ClassList::Ids(set)) => claim(ctx, set),
    };
    match started {
        Ok((classes, claim)) => {
            let filter = WalkFilter {
                tenant: own_keys_only(ctx),
                classes,
            };
            Flow::Stream(Stream::metadump(filter, claim))
        }
        Err(text) => {
            response::line(out, text);
            Flow::Continue
        }
    }
}

/// Hands a crawl of `classes` to the crawler thread: memcached's `OK` at once, or its refusal.
fn start_crawl(ctx: &Ctx<'_>, classes: ClassSet) -> &'static str {
    match ctx.server.crawler.start_crawl(classes) {
        Ok(()) => "OK",
        Err(StartError::Busy) => BUSY,
        Err(StartError::Disabled) => DISABLED,
    }
}

/// The crawler's claim for a metadump of `classes`, or memcached's refusal.
fn claim(ctx: &Ctx<'_>, classes: ClassSet) -> Result<(ClassSet, CrawlerClaim), &'static str> {
    match ctx.server.crawler.claim() {
        Ok(claim) => Ok((classes, claim)),
        Err(StartError::Busy) => Err(BUSY),
        Err(StartError::Disabled) => Err(DISABLED),
    }
}

/// memcached answers BUSY before it finds a request has nothing to crawl.
fn busy_or(ctx: &Ctx<'_>, text: &'static str) -> &'static str {
    if ctx.server.crawler.is_running() {
        BUSY
    } else {
        text
    }
}

/// `stats cachedump <class> <limit>`.
pub(crate) fn cachedump(ctx: &Ctx<'_>, class: u32, limit: u32, out: &mut Vec<u8>) -> Flow {
    if !ctx.server.settings.dump_enabled {
        response::line(out, "CLIENT_ERROR stats cachedump not allowed");
        return Flow::Continue;
    }
    if class >= MAX_NUMBER_OF_SLAB_CLASSES {
        response::line(out, "CLIENT_ERROR Illegal slab id");
        return Flow::Continue;
    }
    Flow::Stream(Stream::cachedump(class as u8, limit, own_keys_only(ctx)))
}

/// The tenant whose keys a dump may list: the connection's own for a tenant, every one for an
/// operator.
fn own_keys_only(ctx: &Ctx<'_>) -> Option<mrcache_engine::TenantId> {
    match ctx.tenancy.scope(&ctx.server.tenants) {
        Scope::Operator => None,
        Scope::Tenant(id, _) => Some(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_lists_parse_as_memcached_reads_them() {
        let ids =
            |list: &[u8]| ClassList::Ids(list.iter().fold(ClassSet::NONE, |s, &id| s.with(id)));
        assert_eq!(parse_classes(b"all"), ClassList::All);
        assert_eq!(parse_classes(b"1,2"), ids(&[1, 2]));
        assert_eq!(parse_classes(b"1,,63,"), ids(&[1, 63]));
        assert_eq!(parse_classes(b"+5,05"), ids(&[5]));
        assert_eq!(
            parse_classes(b"4294967297"),
            ids(&[1]),
            "low 32 bits, as safe_strtoul"
        );
        assert_eq!(parse_classes(b","), ids(&[]));
        for bad in [&b"0"[..], b"64", b"-1", b"1x", b"ALL", b"hash", b" 1"] {
            assert_eq!(parse_classes(bad), ClassList::Bad, "{bad:?}");
        }
    }
}
