//! One connection's protocol state, sans I/O: bytes in, replies out.
//!
//! The network layer hands [`Session::process`] everything it has buffered; the session parses and runs
//! complete requests (at most `max_requests` per call, memcached's `-R`), appends their replies to `out`,
//! and says how many bytes it consumed. State that outlives one call:
//! - `swallow`: data bytes still to discard after a refused storage command (memcached's `conn_swallow`),
//!   consumed as they arrive without being buffered;
//! - `watching`: after `watch`, input is discarded (the connection only receives);
//! - `tenancy`: who the connection is (`tenants`), fixed when it opens or authenticates;
//! - `auth`: while the connection must still authenticate, its input goes to memcached's auth parser
//!   (`mrcache_protocol::auth`) instead of the command parser.
//!
//! Invariants: `consumed` never exceeds `input.len()`; replies are only appended; a request is run only
//! once complete, so a partial request costs nothing but its buffered bytes.

use std::net::SocketAddr;
use std::sync::Arc;

use mrcache_engine::TenantId;
use mrcache_protocol::auth::{parse_auth, AuthParsed, AUTH_FAILURE};
use mrcache_protocol::{parse, response, Limits, Parsed};

use crate::context::{ServerContext, ThreadStats};
use crate::dispatch::{dispatch, Flow};
use crate::settings::Protocol;
use crate::tenants::Tenancy;

/// Whether the connection must still authenticate.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Auth {
    Done,
    /// Credentials are required; `only` is the tenant of the port it arrived on, if any.
    Required {
        only: Option<TenantId>,
    },
}

/// What one [`Session::process`] call did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Bytes of `input` consumed (requests run, errors answered, data swallowed).
    pub consumed: usize,
    /// Close the connection once `out` is written.
    pub close: bool,
    /// Stopped because `max_requests` were run; call again without waiting for input.
    pub yielded: bool,
    /// The pending request needs this many bytes counted from the first unconsumed byte, when known.
    pub want_bytes: Option<usize>,
}

/// A connection's protocol session.
pub struct Session {
    ctx: Arc<ServerContext>,
    stats: Arc<ThreadStats>,
    limits: Limits,
    swallow: usize,
    watching: bool,
    tenancy: Tenancy,
    auth: Auth,
}

impl Session {
    /// A session for a connection accepted on `local` (its port may name a tenant).
    pub fn new(ctx: Arc<ServerContext>, stats: Arc<ThreadStats>, local: SocketAddr) -> Session {
        let table = ctx.tenants.current();
        let (tenancy, auth) = match table.port_tenant(local.port()) {
            Some((id, spec)) => (
                Tenancy::Fixed(id),
                match spec.password {
                    Some(_) => Auth::Required { only: Some(id) },
                    None => Auth::Done,
                },
            ),
            None if table.auth_required() => (
                Tenancy::Fixed(TenantId::DEFAULT),
                Auth::Required { only: None },
            ),
            None => (Tenancy::routed(&ctx.tenants), Auth::Done),
        };
        let config = ctx.engine.config();
        let limits = Limits {
            item_size_max: config.item_size_max_bytes,
            item_overhead: config.memcached_item_overhead_bytes(),
            // memcached negotiates the protocol on a connection's first byte: under `-B auto` a leading 0x80
            // is a binary client, which we close; afterwards (and under `-B ascii`) it is an ordinary byte.
            // Before authentication every byte goes to the auth parser, so nothing negotiates there.
            binary_magic_closes: ctx.settings.protocol != Protocol::Ascii && auth == Auth::Done,
            ..Limits::default()
        };
        Session {
            ctx,
            stats,
            limits,
            swallow: 0,
            watching: false,
            tenancy,
            auth,
        }
    }

    /// The auth exchange of memcached's `-Y`: one refusal or credentials check per call. Returns what
    /// was consumed and whether to stop (incomplete input or close).
    fn authenticate(&mut self, rest: &[u8], out: &mut Vec<u8>, progress: &mut Progress) -> bool {
        let Auth::Required { only } = self.auth else {
            return false;
        };
        match parse_auth(rest) {
            AuthParsed::Incomplete { needed } => {
                progress.want_bytes = needed;
                true
            }
            AuthParsed::Close => {
                progress.close = true;
                true
            }
            AuthParsed::Refused {
                line,
                consumed,
                swallow,
            } => {
                progress.consumed += consumed;
                self.swallow = swallow;
                if line == AUTH_FAILURE {
                    ThreadStats::add(&self.stats.auth_cmds, 1);
                    ThreadStats::add(&self.stats.auth_errors, 1);
                }
                response::line(out, line);
                false
            }
            AuthParsed::Credentials {
                user,
                password,
                consumed,
            } => {
                progress.consumed += consumed;
                ThreadStats::add(&self.stats.auth_cmds, 1);
                match self.ctx.tenants.authenticate(user, password, only) {
                    Some(id) => {
                        self.tenancy = Tenancy::Fixed(id);
                        self.auth = Auth::Done;
                        response::line(out, "STORED");
                    }
                    None => {
                        ThreadStats::add(&self.stats.auth_errors, 1);
                        response::line(out, AUTH_FAILURE);
                    }
                }
                false
            }
        }
    }

    /// Processes complete requests from `input` (at most `max_requests`), appending replies to `out`.
    pub fn process(&mut self, input: &[u8], out: &mut Vec<u8>, max_requests: usize) -> Progress {
        let mut progress = Progress::default();
        let mut requests = 0;
        loop {
            let rest = &input[progress.consumed..];
            if self.watching {
                progress.consumed = input.len();
                return progress;
            }
            if self.swallow > 0 {
                let take = self.swallow.min(rest.len());
                self.swallow -= take;
                progress.consumed += take;
                if self.swallow > 0 {
                    progress.want_bytes = Some(self.swallow);
                    return progress;
                }
                continue;
            }
            if rest.is_empty() {
                return progress;
            }
            if requests >= max_requests {
                progress.yielded = true;
                return progress;
            }
            requests += 1;
            if self.auth != Auth::Done {
                if self.authenticate(rest, out, &mut progress) {
                    return progress;
                }
                continue;
            }
            self.tenancy.refresh(&self.ctx.tenants);
            let parsed = parse(rest, &self.limits);
            if !matches!(parsed, Parsed::Incomplete { .. }) {
                self.limits.binary_magic_closes = false;
            }
            match parsed {
                Parsed::Request { request, consumed } => {
                    progress.consumed += consumed;
                    match dispatch(&self.ctx, &self.stats, &self.tenancy, request, out) {
                        Flow::Continue => {}
                        Flow::Swallow(n) => self.swallow = n,
                        Flow::Close => {
                            progress.close = true;
                            return progress;
                        }
                        Flow::Watch => self.watching = true,
                    }
                }
                Parsed::Incomplete { needed } => {
                    progress.want_bytes = needed;
                    return progress;
                }
                Parsed::Error(e) => {
                    progress.consumed += e.consumed;
                    self.swallow = e.swallow;
                    if !e.noreply {
                        response::line(out, e.line);
                    }
                }
                Parsed::Close => {
                    progress.close = true;
                    return progress;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Settings;
    use mrcache_engine::{Engine, EngineConfig};

    fn session_with(settings: Settings) -> Session {
        let engine = Engine::new(EngineConfig::default()).expect("default engine");
        let ctx = Arc::new(ServerContext::new(engine, settings, 1));
        let stats = ctx.thread_stats[0].clone();
        Session::new(ctx, stats, "127.0.0.1:11211".parse().unwrap())
    }

    fn session() -> Session {
        session_with(Settings::default())
    }

    /// Two sessions on one server whose tenants are `a` (password `pa`), `b` (password `pb`) and a
    /// prefix tenant `p` (`p:`), on the main port.
    fn tenant_server() -> Arc<ServerContext> {
        let config = crate::tenants::config::parse_config(
            "[[tenant]]\nname = \"a\"\npassword = \"pa\"\n[[tenant]]\nname = \"b\"\npassword = \"pb\"\n[[tenant]]\nname = \"p\"\nprefix = \"p:\"\nport = 11300\n",
        )
        .unwrap();
        let settings = Settings {
            tenants: crate::tenants::TenantsConfig::merge(config, Vec::new()).unwrap(),
            ..Settings::default()
        };
        let engine = Engine::new(EngineConfig::default()).expect("default engine");
        Arc::new(ServerContext::new(engine, settings, 1))
    }

    fn session_on(ctx: &Arc<ServerContext>, port: u16) -> Session {
        let stats = ctx.thread_stats[0].clone();
        Session::new(ctx.clone(), stats, SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// Runs `input` to completion and returns the replies.
    fn run(s: &mut Session, input: &[u8]) -> String {
        let mut out = Vec::new();
        let p = s.process(input, &mut out, usize::MAX);
        assert_eq!(
            p.consumed,
            input.len(),
            "all of {:?} consumed",
            String::from_utf8_lossy(input)
        );
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The number after `prefix` in `reply` (for CAS values, which servers number differently).
    fn number_after(reply: &str, prefix: &str) -> u64 {
        let start = reply.find(prefix).expect(prefix) + prefix.len();
        reply[start..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn unauthenticated_connections_get_memcached_s_auth_replies() {
        let ctx = tenant_server();
        let mut s = session_on(&ctx, 11211);
        assert_eq!(
            run(&mut s, b"get a\r\nmg a v\r\nset a 0 0 1 noreply\r\nx\r\n"),
            "CLIENT_ERROR unauthenticated\r\nCLIENT_ERROR unauthenticated\r\nCLIENT_ERROR bad authentication token format\r\n"
        );
        assert_eq!(
            run(&mut s, b"set a 0 0 4\r\na pb\r\nset a 0 0 3\r\nabcde\r\n"),
            "CLIENT_ERROR authentication failure\r\nCLIENT_ERROR bad command line termination\r\nCLIENT_ERROR unauthenticated\r\n"
        );
        assert_eq!(
            run(
                &mut s,
                b"set k 1 2 4 noreply\r\na pa\r\nset k 0 0 1\r\nx\r\nget k\r\n"
            ),
            "STORED\r\nSTORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n"
        );
        let stats = &s.stats;
        assert_eq!(
            stats.auth_cmds.load(std::sync::atomic::Ordering::Relaxed),
            2
        );
        assert_eq!(
            stats.auth_errors.load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    }

    #[test]
    fn tenants_cannot_reach_each_other() {
        let ctx = tenant_server();
        let mut a = session_on(&ctx, 11211);
        let mut b = session_on(&ctx, 11211);
        run(&mut a, b"set x 0 0 4\r\na pa\r\n");
        run(&mut b, b"set x 0 0 4\r\nb pb\r\n");
        assert_eq!(run(&mut a, b"set k 0 0 2\r\n10\r\n"), "STORED\r\n");
        assert_eq!(
            run(&mut b, b"get k\r\nincr k 1\r\ntouch k 0\r\ndelete k\r\nappend k 0 0 1\r\nx\r\nmg k v\r\nmd k\r\nma k\r\n"),
            "END\r\nNOT_FOUND\r\nNOT_FOUND\r\nNOT_FOUND\r\nNOT_STORED\r\nEN\r\nNF\r\nNF\r\n"
        );
        assert_eq!(
            run(&mut b, b"set k 0 0 1\r\nb\r\nflush_all\r\n"),
            "STORED\r\nOK\r\n"
        );
        assert_eq!(run(&mut a, b"get k\r\n"), "VALUE k 0 2\r\n10\r\nEND\r\n");
        // The prefix tenant's port is that tenant; its flush_all flushes only it.
        let mut p = session_on(&ctx, 11300);
        assert_eq!(
            run(&mut p, b"set k 0 0 1\r\np\r\nget k\r\n"),
            "STORED\r\nVALUE k 0 1\r\np\r\nEND\r\n"
        );
        assert_eq!(run(&mut a, b"get k\r\n"), "VALUE k 0 2\r\n10\r\nEND\r\n");
        let only_a = String::from_utf8({
            let mut out = Vec::new();
            a.process(b"stats tenants\r\n", &mut out, usize::MAX);
            out
        })
        .unwrap();
        assert!(
            only_a.contains("STAT tenant:a:items 1\r\n") && !only_a.contains("tenant:b:"),
            "{only_a}"
        );
    }

    #[test]
    fn set_get_and_multi_get() {
        let mut s = session();
        assert_eq!(
            run(&mut s, b"set k1 7 0 5\r\nhello\r\nget k1\r\n"),
            "STORED\r\nVALUE k1 7 5\r\nhello\r\nEND\r\n"
        );
        assert_eq!(
            run(&mut s, b"set k2 0 0 2\r\nv2\r\nget k2 missing k1 k2\r\n"),
            "STORED\r\nVALUE k2 0 2\r\nv2\r\nVALUE k1 7 5\r\nhello\r\nVALUE k2 0 2\r\nv2\r\nEND\r\n"
        );
        let gets = run(&mut s, b"gets k1\r\n");
        assert!(gets.starts_with("VALUE k1 7 5 "), "{gets}");
        assert_eq!(run(&mut s, b"get\r\n"), "ERROR\r\n");
    }

    #[test]
    fn storage_commands_and_cas() {
        let mut s = session();
        assert_eq!(
            run(&mut s, b"add a 1 0 1\r\nx\r\nadd a 2 0 1\r\ny\r\n"),
            "STORED\r\nNOT_STORED\r\n"
        );
        assert_eq!(
            run(&mut s, b"replace r 0 0 1\r\nx\r\nreplace a 5 0 2\r\nzz\r\n"),
            "NOT_STORED\r\nSTORED\r\n"
        );
        assert_eq!(
            run(
                &mut s,
                b"append a 99 0 1\r\n>\r\nprepend a 42 0 1\r\n<\r\nget a\r\n"
            ),
            "STORED\r\nSTORED\r\nVALUE a 5 4\r\n<zz>\r\nEND\r\n"
        );
        assert_eq!(run(&mut s, b"append nope 0 0 1\r\nx\r\n"), "NOT_STORED\r\n");
        let cas = number_after(&run(&mut s, b"gets a\r\n"), "VALUE a 5 4 ");
        assert_eq!(
            run(&mut s, format!("cas a 0 0 1 {cas}\r\nb\r\n").as_bytes()),
            "STORED\r\n"
        );
        assert_eq!(
            run(&mut s, format!("cas a 0 0 1 {cas}\r\nc\r\n").as_bytes()),
            "EXISTS\r\n"
        );
        assert_eq!(
            run(&mut s, b"cas missing 0 0 1 1\r\nx\r\n"),
            "NOT_FOUND\r\n"
        );
        assert_eq!(run(&mut s, b"cas a 0 0 1\r\nx\r\n"), "ERROR\r\nERROR\r\n");
    }

    #[test]
    fn noreply_suppresses_replies_and_errors() {
        let mut s = session();
        assert_eq!(
            run(&mut s, b"set nr 0 0 1 noreply\r\nq\r\nget nr\r\n"),
            "VALUE nr 0 1\r\nq\r\nEND\r\n"
        );
        assert_eq!(
            run(
                &mut s,
                b"add nr 0 0 1 noreply\r\nr\r\nincr nr 1 noreply\r\ndelete x noreply\r\n"
            ),
            ""
        );
        assert_eq!(
            run(&mut s, b"set a 0 0 1 noreply\r\nxyz\r\n"),
            "ERROR\r\n",
            "bad chunk hidden, CRLF is a command"
        );
        assert_eq!(
            run(&mut s, b"verbosity noreply\r\nflush_all noreply\r\nmn\r\n"),
            "MN\r\n"
        );
    }

    #[test]
    fn bad_input_like_memcached() {
        let mut s = session();
        assert_eq!(
            run(&mut s, b"set a 0 0 1\r\nxyz\r\n"),
            "CLIENT_ERROR bad data chunk\r\nERROR\r\n"
        );
        assert_eq!(
            run(&mut s, b"set a -1 0 1\r\nz\r\n"),
            "CLIENT_ERROR bad command line format\r\nERROR\r\n"
        );
        assert_eq!(
            run(&mut s, b"set neg 0 0 -1\r\nget neg\r\n"),
            "CLIENT_ERROR bad command line format\r\nEND\r\n"
        );
        let long = format!("set {} 0 0 1\r\nx\r\n", "a".repeat(251));
        assert_eq!(
            run(&mut s, long.as_bytes()),
            "CLIENT_ERROR bad command line format\r\nERROR\r\n"
        );
        assert_eq!(
            run(&mut s, b"set fl 4294967296 0 1\r\ny\r\nget fl\r\n"),
            "STORED\r\nVALUE fl 0 1\r\ny\r\nEND\r\n"
        );
        assert_eq!(
            run(&mut s, b"set e 0 -1 1\r\nx\r\nget e\r\n"),
            "STORED\r\nEND\r\n"
        );
        assert_eq!(
            run(&mut s, b"set e 0 2147483648 1\r\nx\r\nget e\r\n"),
            "STORED\r\nEND\r\n"
        );
    }

    #[test]
    fn too_large_swallows_across_calls_and_drops_the_old_value() {
        let mut s = session();
        assert_eq!(run(&mut s, b"set a 0 0 4\r\nabcd\r\n"), "STORED\r\n");
        let mut out = Vec::new();
        let p = s.process(b"set a 0 0 2000000\r\nxxxx", &mut out, usize::MAX);
        assert_eq!(out, b"SERVER_ERROR object too large for cache\r\n");
        assert_eq!((p.consumed, p.want_bytes), (23, Some(2_000_002 - 4)));
        let mut rest = vec![b'x'; 2_000_000 - 4];
        rest.extend_from_slice(b"\r\nget a\r\n");
        assert_eq!(run(&mut s, &rest), "END\r\n");
        let stats = &s.stats;
        assert_eq!(
            stats
                .store_too_large
                .load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    }

    #[test]
    fn largest_item_fits() {
        let mut s = session();
        let mut input = b"set a 0 0 1048516\r\n".to_vec();
        input.extend(std::iter::repeat_n(b'v', 1_048_516));
        input.extend_from_slice(b"\r\n");
        assert_eq!(run(&mut s, &input), "STORED\r\n");
    }

    #[test]
    fn partial_requests_wait_and_report_their_size() {
        let mut s = session();
        let mut out = Vec::new();
        let p = s.process(b"set k 0 0 10\r\nabc", &mut out, usize::MAX);
        assert_eq!((p.consumed, p.want_bytes, out.len()), (0, Some(26), 0));
        let p = s.process(b"get k", &mut out, usize::MAX);
        assert_eq!((p.consumed, p.want_bytes), (0, None));
    }

    #[test]
    fn max_requests_yields() {
        let mut s = session();
        let mut out = Vec::new();
        let p = s.process(b"mn\r\nmn\r\nmn\r\n", &mut out, 2);
        assert_eq!((p.consumed, p.yielded), (8, true));
        let p = s.process(b"mn\r\n", &mut out, 2);
        assert_eq!((p.consumed, p.yielded), (4, false));
        assert_eq!(out, b"MN\r\nMN\r\nMN\r\n");
    }

    #[test]
    fn arith_delete_touch() {
        let mut s = session();
        assert_eq!(run(&mut s, b"incr n 1\r\n"), "NOT_FOUND\r\n");
        assert_eq!(
            run(&mut s, b"set n 0 0 2\r\n10\r\ndecr n 1\r\nget n\r\n"),
            "STORED\r\n9\r\nVALUE n 0 2\r\n9 \r\nEND\r\n"
        );
        assert_eq!(run(&mut s, b"incr n 18446744073709551615\r\n"), "8\r\n");
        assert_eq!(run(&mut s, b"decr n 100\r\n"), "0\r\n");
        assert_eq!(
            run(&mut s, b"set t 0 0 1\r\na\r\nincr t 1\r\n"),
            "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
        );
        assert_eq!(
            run(&mut s, b"incr t x\r\n"),
            "CLIENT_ERROR invalid numeric delta argument\r\n"
        );
        assert_eq!(
            run(&mut s, b"touch t 10\r\ntouch nope 10\r\ntouch t x\r\n"),
            "TOUCHED\r\nNOT_FOUND\r\nCLIENT_ERROR invalid exptime argument\r\n"
        );
        assert_eq!(run(&mut s, b"gat 100 t\r\n"), "VALUE t 0 1\r\na\r\nEND\r\n");
        assert_eq!(
            run(&mut s, b"delete t 0\r\ndelete t\r\n"),
            "DELETED\r\nNOT_FOUND\r\n"
        );
        assert_eq!(
            run(&mut s, b"delete a 1\r\n"),
            "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
        );
    }

    #[test]
    fn admin_commands() {
        let mut s = session();
        assert_eq!(run(&mut s, b"version x\r\n"), "VERSION 1.6.18\r\n");
        assert_eq!(
            run(&mut s, b"verbosity\r\nverbosity 1\r\n"),
            "ERROR\r\nOK\r\n"
        );
        assert_eq!(
            run(&mut s, b"set a 0 0 1\r\nx\r\nflush_all\r\nget a\r\n"),
            "STORED\r\nOK\r\nEND\r\n"
        );
        assert_eq!(
            run(&mut s, b"flush_all x\r\n"),
            "CLIENT_ERROR invalid exptime argument\r\n"
        );
        assert_eq!(
            run(&mut s, b"shutdown\r\n"),
            "ERROR: shutdown not enabled\r\n"
        );
        assert_eq!(
            run(
                &mut s,
                b"cache_memlimit 100\r\ncache_memlimit 0\r\ncache_memlimit x\r\n"
            ),
            "OK\r\nMEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\nERROR\r\n"
        );
        assert_eq!(
            run(&mut s, b"slabs reassign 1 2\r\nslabs reassign 1 1\r\nslabs reassign 99 1\r\nslabs reassign x 1\r\n"),
            "NOSPARE source class has no spare pages\r\nSAME src and dst class are identical\r\nBADCLASS invalid src or dst class id\r\nCLIENT_ERROR bad command line format\r\n"
        );
        assert_eq!(
            run(
                &mut s,
                b"slabs automove 2\r\nslabs automove 3\r\nslabs automove ratio 0.5\r\n"
            ),
            "OK\r\nERROR\r\nOK\r\n"
        );
        assert_eq!(
            s.ctx
                .automove_mode
                .load(std::sync::atomic::Ordering::Relaxed),
            2
        );
        assert_eq!(s.ctx.automove_ratio(), 0.5);
        assert_eq!(
            run(
                &mut s,
                b"lru mode flat\r\nlru_crawler crawl 1\r\nlru_crawler crawl 99\r\n"
            ),
            "OK\r\nOK\r\nBADCLASS invalid class id\r\n"
        );
        assert_eq!(
            run(
                &mut s,
                b"stats x\r\nstats detail on\r\nstats cachedump 1 1\r\nstats reset\r\n"
            ),
            "ERROR\r\nOK\r\nEND\r\nRESET\r\n"
        );
        assert!(run(&mut s, b"stats\r\n").ends_with("END\r\n"));
        assert!(run(&mut s, b"stats settings\r\n").ends_with("END\r\n"));
    }

    #[test]
    fn flush_and_shutdown_switches() {
        let mut s = session_with(Settings {
            flush_enabled: false,
            shutdown_enabled: true,
            ..Settings::default()
        });
        assert_eq!(
            run(&mut s, b"flush_all x\r\n"),
            "CLIENT_ERROR flush_all not allowed\r\n"
        );
        assert_eq!(
            run(&mut s, b"shutdown x\r\n"),
            "CLIENT_ERROR invalid shutdown mode\r\n"
        );
        let mut out = Vec::new();
        let p = s.process(b"shutdown\r\nget a\r\n", &mut out, usize::MAX);
        assert!(p.close && s.ctx.is_shutting_down());
    }

    #[test]
    fn quit_http_binary_and_watch() {
        let mut out = Vec::new();
        let p = session().process(b"quit\r\nget a\r\n", &mut out, usize::MAX);
        assert!(p.close && out.is_empty());
        assert!(
            session()
                .process(b"GET / HTTP/1.1\r\n", &mut out, usize::MAX)
                .close
        );
        assert!(session().process(b"\x80\x00", &mut out, usize::MAX).close);
        let mut s = session();
        assert_eq!(
            run(&mut s, b"mn\r\n\x80\r\n"),
            "MN\r\nERROR\r\n",
            "only a first byte negotiates"
        );
        let mut s = session_with(Settings {
            protocol: Protocol::Ascii,
            ..Settings::default()
        });
        assert_eq!(run(&mut s, b"\x80\r\n"), "ERROR\r\n");
        assert!(session().process(&[b'x'; 3000], &mut out, usize::MAX).close);
        let mut s = session();
        assert_eq!(run(&mut s, b"watch\r\nget a\r\n"), "OK\r\n");
    }

    #[test]
    fn meta_get_flags() {
        let mut s = session();
        assert_eq!(
            run(&mut s, b"mg foo\r\nmg foo q\r\nmg foo k O1\r\n"),
            "EN\r\nEN kfoo O1\r\n"
        );
        assert_eq!(
            run(&mut s, b"set foo 0 0 2\r\nhi\r\nmg foo\r\nmg foo q v\r\n"),
            "STORED\r\nHD\r\nVA 2\r\nhi\r\n"
        );
        let r = run(&mut s, b"mg foo s t c f l h k O1 P L u\r\n");
        let cas = number_after(&r, " c");
        assert_eq!(r, format!("HD s2 t-1 c{cas} f0 l0 h1 kfoo O1\r\n"));
        assert_eq!(
            run(&mut s, b"mg foo x\r\nmg foo v v\r\n"),
            "CLIENT_ERROR invalid flag\r\nCLIENT_ERROR duplicate flag\r\n"
        );
    }

    #[test]
    fn meta_vivify_and_recache() {
        let mut s = session();
        let r = run(&mut s, b"mg v1 N30 t v c\r\n");
        let cas = number_after(&r, " c");
        assert_eq!(r, format!("VA 0 t30 c{cas} W\r\n\r\n"));
        assert_eq!(run(&mut s, b"mg v1 c\r\n"), format!("HD c{cas} Z\r\n"));
        let r = run(&mut s, b"set r1 0 10 1\r\nx\r\nmg r1 R30 c\r\n");
        let cas = number_after(&r, " c");
        assert_eq!(r, format!("STORED\r\nHD c{cas} W\r\n"));
        assert_eq!(
            run(&mut s, b"mg r1 R30\r\nmg r1 R5\r\n"),
            "HD Z\r\nHD Z\r\n"
        );
    }

    #[test]
    fn meta_invalidate_and_stale() {
        let mut s = session();
        assert_eq!(
            run(&mut s, b"set s1 0 0 1\r\nx\r\nmd s1 I T30\r\n"),
            "STORED\r\nHD\r\n"
        );
        let r = run(&mut s, b"mg s1 t c v\r\n");
        let cas = number_after(&r, " c");
        assert_eq!(r, format!("VA 1 t30 c{cas} X W\r\nx\r\n"));
        assert_eq!(run(&mut s, b"mg s1\r\n"), "HD Z X\r\n");
        assert_eq!(run(&mut s, b"ms s1 1 C1 I\r\ny\r\n"), "HD\r\n");
        assert_eq!(run(&mut s, b"mg s1 v\r\n"), "VA 1 Z X\r\ny\r\n");
        assert_eq!(
            run(&mut s, b"md s1 q\r\nmd s1 q\r\nmd s1 O5 k\r\n"),
            "NF\r\nNF O5 ks1\r\n"
        );
    }

    #[test]
    fn meta_set_modes_and_errors() {
        let mut s = session();
        assert_eq!(
            run(&mut s, b"ms k1 2\r\nhi\r\nms k1 2 q\r\nhi\r\nmn\r\n"),
            "HD\r\nMN\r\n"
        );
        assert_eq!(
            run(&mut s, b"ms k2 2 MX\r\nhi\r\nms k2 2 ME\r\nhi\r\nms k2 2 ME\r\nhi\r\nms k3 2 MR\r\nhi\r\nms k3 2 MA\r\nhi\r\nms k2 2 MA q\r\nzz\r\nmg k2 v\r\n"),
            "CLIENT_ERROR invalid mode for ms M token\r\nHD\r\nNS\r\nNS\r\nNS\r\nVA 4\r\nhizz\r\n"
        );
        assert_eq!(
            run(&mut s, b"ms k4 2 C999\r\nhi\r\nms k2 2 C999 q\r\nhi\r\n"),
            "NF\r\nEX\r\n"
        );
        assert_eq!(
            run(&mut s, b"ms k2 xx\r\nhi\r\n"),
            "CLIENT_ERROR bad command line format\r\nERROR\r\n"
        );
        assert_eq!(
            run(&mut s, b"ms k2 2 x\r\nhi\r\n"),
            "CLIENT_ERROR invalid flag\r\n"
        );
        assert_eq!(
            run(&mut s, b"ms k2 2 q\r\nhix\r\n"),
            "CLIENT_ERROR bad data chunk\r\nERROR\r\n"
        );
        let r = run(&mut s, b"ms azE= 2 b k c O3\r\nhi\r\n");
        let cas = number_after(&r, " c");
        assert_eq!(r, format!("HD kazE= b c{cas} O3\r\n"));
        assert_eq!(
            run(&mut s, b"mg azE= b k v\r\nget k1\r\n"),
            // The item remembers its key came in base64, so mg echoes it that way (as memcached 1.6.18).
            "VA 2 kazE= b\r\nhi\r\nVALUE k1 0 2\r\nhi\r\nEND\r\n"
        );
        assert_eq!(
            run(
                &mut s,
                b"ms AAEC 1 b\r\nx\r\nmg AAEC b k\r\nmg AAEd b k\r\n"
            ),
            "HD\r\nHD kAAEC b\r\nEN kAAEd b\r\n"
        );
        let mut big = b"ms k1 2000000 T0\r\n".to_vec();
        big.extend(std::iter::repeat_n(b'x', 2_000_000));
        big.extend_from_slice(b"\r\nmg k1 v\r\n");
        assert_eq!(
            run(&mut s, &big),
            "SERVER_ERROR object too large for cache\r\nEN\r\n"
        );
    }

    #[test]
    fn meta_arith() {
        let mut s = session();
        let r = run(&mut s, b"ma n1 N0 J10 v t c\r\n");
        let cas = number_after(&r, " c");
        assert_eq!(r, format!("VA 2 t-1 c{cas}\r\n10\r\n"));
        assert_eq!(
            run(&mut s, b"ma n1 v\r\nma n1 MD D5 v\r\nma n1 M- D100 v\r\n"),
            "VA 2\r\n11\r\nVA 1\r\n6\r\nVA 1\r\n0\r\n"
        );
        assert_eq!(
            run(&mut s, b"ma n1 q\r\nma n1 C1\r\nma n1 C1 q\r\n"),
            "EX\r\nEX\r\n"
        );
        assert_eq!(
            run(&mut s, b"ma m1 O9 k q\r\nma m1\r\n"),
            "NF O9 km1\r\nNF\r\n"
        );
        assert_eq!(
            run(&mut s, b"ma n2 N0 q v\r\nma n2 q v\r\n"),
            "VA 1\r\n0\r\n",
            "a created item answers even with q"
        );
        assert_eq!(run(&mut s, b"ma n1 MX\r\nma n1 Dx\r\n"), "CLIENT_ERROR invalid mode for ma M token\r\nCLIENT_ERROR invalid or duplicate flag\r\n");
        assert_eq!(
            run(&mut s, b"set nn 0 0 2\r\nab\r\nma nn q\r\n"),
            "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
        );
        assert_eq!(
            run(&mut s, b"set t1 0 100 3\r\n123\r\nma t1 T50 t\r\n"),
            "STORED\r\nHD t50\r\n"
        );
    }

    #[test]
    fn meta_debug_and_noop() {
        let mut s = session();
        let r = run(&mut s, b"set dbg 0 0 1\r\nx\r\nme dbg\r\n");
        let cas = number_after(&r, "cas=");
        assert_eq!(
            r,
            format!("STORED\r\nME dbg exp=-1 la=0 cas={cas} fetch=no cls=1 size=63\r\n")
        );
        assert_eq!(
            run(&mut s, b"me miss\r\nme\r\nmn extra\r\n"),
            "EN\r\nCLIENT_ERROR bad command line format\r\nMN\r\n"
        );
        assert!(s.stats.cmd_meta.load(std::sync::atomic::Ordering::Relaxed) >= 3);
    }
}
