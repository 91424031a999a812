//! Administrative commands: flush_all, verbosity, shutdown, cache_memlimit, stats, slabs, lru, lru_crawler,
//! refresh_certs.
//! (`version`, `quit` and `watch` take no arguments worth parsing and are recognised in `parse`.)
//!
//! Token rules are memcached 1.6.18's; where memcached calls `set_noreply_maybe` before an error, the error
//! carries `noreply` and is suppressed like any reply.

use crate::parse::Line;
use crate::request::{
    LruCrawlerRequest, LruRequest, Parsed, Request, ShutdownMode, SlabsRequest, StatsRequest,
};
use crate::tokens::{after_token, strtod, strtol32, strtoul32};

const BAD_FORMAT: &str = "CLIENT_ERROR bad command line format";

fn ok<'a>(line: &Line<'a>, request: Request<'a>) -> Parsed<'a> {
    Parsed::Request {
        request,
        consumed: line.len,
    }
}

/// `flush_all [delay] [noreply]`: two to four tokens.
pub(crate) fn parse_flush_all<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    let n = t.ntokens();
    if !(2..=4).contains(&n) {
        return line.error("ERROR", false);
    }
    let noreply = t.noreply();
    let delay = if n != if noreply { 3 } else { 2 } {
        strtol32(t.get(1)).map(i64::from)
    } else {
        Some(0)
    };
    ok(line, Request::FlushAll { delay, noreply })
}

/// `verbosity <level> [noreply]`: three or four tokens (`verbosity` alone is `ERROR`).
pub(crate) fn parse_verbosity<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    if !(t.ntokens() == 3 || t.ntokens() == 4) {
        return line.error("ERROR", false);
    }
    let noreply = t.noreply();
    match strtoul32(t.get(1)) {
        Some(level) => ok(line, Request::Verbosity { level, noreply }),
        None => line.error(BAD_FORMAT, noreply),
    }
}

/// `shutdown [graceful]`: the mode is judged by the server after its `-A` check.
pub(crate) fn parse_shutdown<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    let mode = match (t.ntokens(), t.get(1)) {
        (2, _) => ShutdownMode::Now,
        (3, b"graceful") => ShutdownMode::Graceful,
        _ => ShutdownMode::Invalid,
    };
    ok(line, Request::Shutdown(mode))
}

/// `cache_memlimit <megabytes> [noreply]`: a bad number is a bare `ERROR`.
pub(crate) fn parse_memlimit<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    if !(t.ntokens() == 3 || t.ntokens() == 4) {
        return line.error("ERROR", false);
    }
    let noreply = t.noreply();
    match strtoul32(t.get(1)) {
        Some(megabytes) => ok(line, Request::CacheMemlimit { megabytes, noreply }),
        None => line.error("ERROR", noreply),
    }
}

/// `refresh_certs [noreply]`: memcached reads no other token.
pub(crate) fn parse_refresh_certs<'a>(line: &Line<'a>) -> Parsed<'a> {
    let noreply = line.tokens.noreply();
    ok(line, Request::RefreshCerts { noreply })
}

/// `stats [<sub> …]`.
pub(crate) fn parse_stats<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    if t.ntokens() == 2 {
        return ok(line, Request::Stats(StatsRequest::General));
    }
    let sub = t.get(1);
    let request = match sub {
        b"settings" => StatsRequest::Settings,
        b"items" => StatsRequest::Items,
        b"slabs" => StatsRequest::Slabs,
        b"sizes" => StatsRequest::Sizes,
        b"sizes_enable" => StatsRequest::SizesEnable,
        b"sizes_disable" => StatsRequest::SizesDisable,
        b"conns" => StatsRequest::Conns,
        b"extstore" => StatsRequest::Extstore,
        b"reset" => StatsRequest::Reset,
        b"detail" => match (t.ntokens(), t.get(2)) {
            (n, _) if n < 4 => {
                return line.error("CLIENT_ERROR usage: stats detail on|off|dump", false)
            }
            (_, b"on") => StatsRequest::DetailOn,
            (_, b"off") => StatsRequest::DetailOff,
            (_, b"dump") => StatsRequest::DetailDump,
            _ => return line.error("CLIENT_ERROR usage: stats detail on|off|dump", false),
        },
        b"cachedump" => {
            if t.ntokens() < 5 {
                return line.error("CLIENT_ERROR bad command line", false);
            }
            match (strtoul32(t.get(2)), strtoul32(t.get(3))) {
                (Some(class), Some(limit)) => StatsRequest::Cachedump { class, limit },
                _ => return line.error(BAD_FORMAT, false),
            }
        }
        _ => StatsRequest::Other {
            sub,
            args: after_token(line.text, sub),
        },
    };
    ok(line, Request::Stats(request))
}

/// `slabs reassign <src> <dst>` (exactly five tokens), `slabs automove <0|1|2>`, `slabs automove ratio <f>`.
pub(crate) fn parse_slabs<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    let n = t.ntokens();
    if n == 5 && t.get(1) == b"reassign" {
        let classes = strtol32(t.get(2)).zip(strtol32(t.get(3)));
        return ok(line, Request::Slabs(SlabsRequest::Reassign { classes }));
    }
    if n < 4 || t.get(1) != b"automove" {
        return line.error("ERROR", false);
    }
    let noreply = t.noreply();
    if t.get(2) == b"ratio" {
        return match (n >= 5).then(|| strtod(t.get(3))).flatten() {
            Some(ratio) => ok(
                line,
                Request::Slabs(SlabsRequest::AutomoveRatio { ratio, noreply }),
            ),
            None => line.error("ERROR", noreply),
        };
    }
    match strtoul32(t.get(2)) {
        None => line.error(BAD_FORMAT, noreply),
        Some(mode @ 0..=2) => ok(
            line,
            Request::Slabs(SlabsRequest::Automove { mode, noreply }),
        ),
        Some(_) => line.error("ERROR", noreply),
    }
}

/// `lru tune <hot%> <warm%> <hot_factor> <warm_factor>`, `lru mode flat|segmented`, `lru temp_ttl <n>`.
pub(crate) fn parse_lru<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    let n = t.ntokens();
    if n < 3 {
        return line.error("ERROR", false);
    }
    let noreply = t.noreply();
    let request = match t.get(1) {
        b"tune" if n >= 7 => {
            let parsed = (
                strtoul32(t.get(2)),
                strtoul32(t.get(3)),
                strtod(t.get(4)),
                strtod(t.get(5)),
            );
            let (Some(hot_pct), Some(warm_pct), Some(hot_factor), Some(warm_factor)) = parsed
            else {
                return line.error("ERROR", noreply);
            };
            if u64::from(hot_pct) + u64::from(warm_pct) > 80 {
                return line.error("ERROR hot and warm pcts must not exceed 80", noreply);
            }
            if hot_factor <= 0.0 || warm_factor <= 0.0 {
                return line.error("ERROR hot/warm age factors must be greater than 0", noreply);
            }
            LruRequest::Tune {
                hot_pct,
                warm_pct,
                hot_factor,
                warm_factor,
                noreply,
            }
        }
        b"mode" if n >= 4 => match t.get(2) {
            b"flat" => LruRequest::Mode {
                segmented: false,
                noreply,
            },
            b"segmented" => LruRequest::Mode {
                segmented: true,
                noreply,
            },
            _ => return line.error("ERROR", noreply),
        },
        b"temp_ttl" if n >= 4 => match strtol32(t.get(2)) {
            Some(ttl) => LruRequest::TempTtl { ttl, noreply },
            None => return line.error("ERROR", noreply),
        },
        _ => return line.error("ERROR", noreply),
    };
    ok(line, Request::Lru(request))
}

/// `lru_crawler enable|disable|sleep <us>|tocrawl <n>|crawl <ids|all>|metadump <ids|all|hash>`.
/// memcached reads no `noreply` here: a trailing one is an extra token (`ERROR`), and every reply is
/// sent (measured on 1.6.18: `lru_crawler crawl all noreply` → `ERROR`, `lru_crawler crawl noreply` →
/// `BADCLASS invalid class id`).
pub(crate) fn parse_lru_crawler<'a>(line: &Line<'a>) -> Parsed<'a> {
    let t = &line.tokens;
    let n = t.ntokens();
    let noreply = false;
    let request = match (n, t.get(1)) {
        (4, b"crawl") => LruCrawlerRequest::Crawl {
            classes: t.get(2),
            noreply,
        },
        (4, b"metadump") => LruCrawlerRequest::Metadump { classes: t.get(2) },
        (4, b"tocrawl") => match strtoul32(t.get(2)) {
            Some(items) => LruCrawlerRequest::ToCrawl { items, noreply },
            None => return line.error(BAD_FORMAT, noreply),
        },
        (4, b"sleep") => match strtoul32(t.get(2)) {
            Some(micros) if micros <= 1_000_000 => LruCrawlerRequest::Sleep { micros, noreply },
            Some(_) => return line.error("CLIENT_ERROR sleep must be one second or less", noreply),
            None => return line.error(BAD_FORMAT, noreply),
        },
        (3, b"enable") => LruCrawlerRequest::Enable { noreply },
        (3, b"disable") => LruCrawlerRequest::Disable { noreply },
        _ => return line.error("ERROR", noreply),
    };
    ok(line, Request::LruCrawler(request))
}

#[cfg(test)]
mod tests {
    use crate::parse::tests::{error_of, request_of};
    use crate::request::*;

    #[test]
    fn flush_all_forms() {
        for (input, delay, noreply) in [
            (&b"flush_all\r\n"[..], Some(0), false),
            (b"flush_all 0\r\n", Some(0), false),
            (b"flush_all -1\r\n", Some(-1), false),
            (b"flush_all noreply\r\n", Some(0), true),
            (b"flush_all 10 noreply\r\n", Some(10), true),
            (b"flush_all 1 2\r\n", Some(1), false),
            (b"flush_all x\r\n", None, false),
        ] {
            let Request::FlushAll {
                delay: d,
                noreply: n,
            } = request_of(input).0
            else {
                panic!()
            };
            assert_eq!((d, n), (delay, noreply), "{input:?}");
        }
        assert_eq!(error_of(b"flush_all 1 2 3\r\n").line, "ERROR");
    }

    #[test]
    fn verbosity_forms() {
        assert_eq!(error_of(b"verbosity\r\n").line, "ERROR");
        assert_eq!(error_of(b"verbosity 1 2 3\r\n").line, "ERROR");
        assert_eq!(
            error_of(b"verbosity x\r\n").line,
            "CLIENT_ERROR bad command line format"
        );
        assert!(
            error_of(b"verbosity noreply\r\n").noreply,
            "memcapable expects silence"
        );
        let Request::Verbosity { level, noreply } = request_of(b"verbosity 5 2\r\n").0 else {
            panic!()
        };
        assert_eq!((level, noreply), (5, false));
    }

    #[test]
    fn shutdown_modes() {
        let mode = |i: &'static [u8]| match request_of(i).0 {
            Request::Shutdown(m) => m,
            _ => panic!(),
        };
        assert_eq!(mode(b"shutdown\r\n"), ShutdownMode::Now);
        assert_eq!(mode(b"shutdown graceful\r\n"), ShutdownMode::Graceful);
        assert_eq!(mode(b"shutdown x\r\n"), ShutdownMode::Invalid);
        assert_eq!(mode(b"shutdown graceful x\r\n"), ShutdownMode::Invalid);
    }

    #[test]
    fn memlimit_forms() {
        let Request::CacheMemlimit { megabytes, noreply } =
            request_of(b"cache_memlimit 100 noreply\r\n").0
        else {
            panic!()
        };
        assert_eq!((megabytes, noreply), (100, true));
        assert_eq!(error_of(b"cache_memlimit\r\n").line, "ERROR");
        assert_eq!(error_of(b"cache_memlimit x\r\n").line, "ERROR");
        assert_eq!(error_of(b"cache_memlimit -5\r\n").line, "ERROR");
        assert_eq!(error_of(b"cache_memlimit 1 2 3\r\n").line, "ERROR");
    }

    #[test]
    fn stats_subcommands() {
        let stats = |i: &'static [u8]| match request_of(i).0 {
            Request::Stats(s) => s,
            _ => panic!(),
        };
        assert_eq!(stats(b"stats\r\n"), StatsRequest::General);
        assert_eq!(stats(b"stats settings\r\n"), StatsRequest::Settings);
        assert_eq!(stats(b"stats reset x\r\n"), StatsRequest::Reset);
        assert_eq!(stats(b"stats detail dump\r\n"), StatsRequest::DetailDump);
        assert_eq!(
            stats(b"stats cachedump 1 2\r\n"),
            StatsRequest::Cachedump { class: 1, limit: 2 }
        );
        assert_eq!(
            stats(b"stats mrc 1 2\r\n"),
            StatsRequest::Other {
                sub: b"mrc",
                args: b" 1 2"
            }
        );
        assert_eq!(
            error_of(b"stats detail\r\n").line,
            "CLIENT_ERROR usage: stats detail on|off|dump"
        );
        assert_eq!(
            error_of(b"stats detail x\r\n").line,
            "CLIENT_ERROR usage: stats detail on|off|dump"
        );
        assert_eq!(
            error_of(b"stats cachedump 1\r\n").line,
            "CLIENT_ERROR bad command line"
        );
        assert_eq!(
            error_of(b"stats cachedump x 1\r\n").line,
            "CLIENT_ERROR bad command line format"
        );
    }

    #[test]
    fn slabs_forms() {
        let slabs = |i: &'static [u8]| match request_of(i).0 {
            Request::Slabs(s) => s,
            _ => panic!(),
        };
        assert_eq!(
            slabs(b"slabs reassign 1 2\r\n"),
            SlabsRequest::Reassign {
                classes: Some((1, 2))
            }
        );
        assert_eq!(
            slabs(b"slabs reassign x 2\r\n"),
            SlabsRequest::Reassign { classes: None }
        );
        assert_eq!(
            slabs(b"slabs automove 2\r\n"),
            SlabsRequest::Automove {
                mode: 2,
                noreply: false
            }
        );
        assert_eq!(
            slabs(b"slabs automove 1 noreply\r\n"),
            SlabsRequest::Automove {
                mode: 1,
                noreply: true
            }
        );
        assert_eq!(
            slabs(b"slabs automove ratio 0.5\r\n"),
            SlabsRequest::AutomoveRatio {
                ratio: 0.5,
                noreply: false
            }
        );
        for input in [
            &b"slabs\r\n"[..],
            b"slabs x\r\n",
            b"slabs reassign\r\n",
            b"slabs reassign 1 2 3\r\n",
            b"slabs automove\r\n",
            b"slabs automove 3\r\n",
            b"slabs automove ratio\r\n",
            b"slabs automove ratio x\r\n",
        ] {
            assert_eq!(error_of(input).line, "ERROR", "{input:?}");
        }
        assert_eq!(
            error_of(b"slabs automove x\r\n").line,
            "CLIENT_ERROR bad command line format"
        );
    }

    #[test]
    fn lru_forms() {
        assert!(matches!(
            request_of(b"lru mode flat\r\n").0,
            Request::Lru(LruRequest::Mode {
                segmented: false,
                ..
            })
        ));
        assert!(matches!(
            request_of(b"lru temp_ttl 10\r\n").0,
            Request::Lru(LruRequest::TempTtl { ttl: 10, .. })
        ));
        assert!(matches!(
            request_of(b"lru tune 10 20 0.1 2\r\n").0,
            Request::Lru(LruRequest::Tune { .. })
        ));
        for input in [
            &b"lru\r\n"[..],
            b"lru x\r\n",
            b"lru mode x\r\n",
            b"lru temp_ttl x\r\n",
            b"lru tune 1 2\r\n",
            b"lru tune x 1 1 1\r\n",
        ] {
            assert_eq!(error_of(input).line, "ERROR", "{input:?}");
        }
        assert_eq!(
            error_of(b"lru tune 50 50 1 1\r\n").line,
            "ERROR hot and warm pcts must not exceed 80"
        );
    }

    #[test]
    fn lru_crawler_forms() {
        let crawler = |i: &'static [u8]| match request_of(i).0 {
            Request::LruCrawler(c) => c,
            _ => panic!(),
        };
        assert_eq!(
            crawler(b"lru_crawler crawl all\r\n"),
            LruCrawlerRequest::Crawl {
                classes: b"all",
                noreply: false
            }
        );
        assert_eq!(
            crawler(b"lru_crawler metadump 1,2\r\n"),
            LruCrawlerRequest::Metadump { classes: b"1,2" }
        );
        assert_eq!(
            crawler(b"lru_crawler sleep 10\r\n"),
            LruCrawlerRequest::Sleep {
                micros: 10,
                noreply: false
            }
        );
        assert_eq!(
            crawler(b"lru_crawler tocrawl 5\r\n"),
            LruCrawlerRequest::ToCrawl {
                items: 5,
                noreply: false
            }
        );
        assert_eq!(
            crawler(b"lru_crawler enable\r\n"),
            LruCrawlerRequest::Enable { noreply: false }
        );
        assert_eq!(
            crawler(b"lru_crawler disable\r\n"),
            LruCrawlerRequest::Disable { noreply: false }
        );
        assert_eq!(error_of(b"lru_crawler\r\n").line, "ERROR");
        assert_eq!(error_of(b"lru_crawler x\r\n").line, "ERROR");
        assert_eq!(
            error_of(b"lru_crawler sleep 2000000\r\n").line,
            "CLIENT_ERROR sleep must be one second or less"
        );
        assert_eq!(
            error_of(b"lru_crawler tocrawl x\r\n").line,
            "CLIENT_ERROR bad command line format"
        );
        // No `noreply` on these commands (memcached 1.6.18): an extra token, or a class list.
        for extra in [
            &b"lru_crawler crawl all noreply\r\n"[..],
            b"lru_crawler sleep 5 noreply\r\n",
        ] {
            let e = error_of(extra);
            assert_eq!((e.line, e.noreply), ("ERROR", false));
        }
        assert_eq!(
            crawler(b"lru_crawler crawl noreply\r\n"),
            LruCrawlerRequest::Crawl {
                classes: b"noreply",
                noreply: false
            }
        );
        assert!(!error_of(b"lru_crawler sleep noreply\r\n").noreply);
    }
}
