//! One load thread: a mio event loop over the connections it owns.
//!
//! The worker decides what each connection sends and when: closed loop (keep `pipeline` requests
//! in flight), open loop (each connection follows its own arrival process; a request's latency
//! counts from its intended time, however late it is sent), or preload (set a key range once).
//! Timers are a min-heap of connection wake-ups. epoll sleeps in whole milliseconds, so the loop
//! sleeps until [`SPIN_BEFORE`] ahead of the next arrival and polls without blocking after that:
//! an open-loop request then leaves within microseconds of its intended time, at the cost of a
//! busy core. The time between intended and actual send is recorded as the send delay.
//! Nothing here is shared with other threads except the progress channel and, in a bounded run
//! (`--requests`, `--once`), the [`RequestBudget`] every key is taken from: once it is spent no
//! connection issues anything new, and the phase ends as soon as what is in flight is answered.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use rand::rngs::SmallRng;
use rand::Rng;

use crate::conn::{Conn, ConnState, Fault, PendingOp};
use std::sync::Arc;

use crate::dist::{GapSampler, KeySampler, RequestBudget, ValueSizer};
use crate::request::{push_auth, push_get, push_set, KeySpace};
use crate::stats::{RunStats, Tick};
use crate::uring::{self, Retired, Ring, RingState};
use crate::OpKind;

/// Sleep in epoll only when the next timer is further than this; spin closer to it.
const SPIN_BEFORE: Duration = Duration::from_millis(1);
/// How often timeouts and reconnects are checked.
const SCAN_INTERVAL: Duration = Duration::from_millis(10);
/// Progress is reported once a second.
pub(crate) const TICK: Duration = Duration::from_secs(1);
/// Sets a preloading connection keeps in flight.
const PRELOAD_DEPTH: usize = 32;
/// Bound on counting an open-loop backlog left at the end of a run.
const UNSENT_COUNT_LIMIT: u64 = 10_000_000;

/// How new requests are generated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LoadMode {
    Closed,
    Open,
    Preload,
}

/// Everything a worker needs to generate load, shared read-only by all workers of a phase.
pub(crate) struct Plan {
    pub mode: LoadMode,
    pub pipeline: usize,
    pub get_ratio: f64,
    pub multiget: usize,
    pub lookaside: bool,
    pub backend_delay: Duration,
    pub keys: KeySampler,
    pub sizer: ValueSizer,
    /// `sizer.max_size()` bytes of filler; a set sends a prefix of it.
    pub value: Vec<u8>,
    pub tenants: Vec<TenantPlan>,
    pub timeout: Duration,
    /// `--io`: the client's network I/O path.
    pub io: ClientIo,
    /// A bounded run's keys, shared by every worker of the phase; None: bounded by time only.
    pub budget: Option<Arc<RequestBudget>>,
    /// `--tls-ca`: each connection speaks TLS with this configuration.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl Plan {
    /// True once a bounded run has requested every key it may.
    fn budget_spent(&self) -> bool {
        self.budget.as_ref().is_some_and(|b| b.is_spent())
    }
}

/// `mrcache bench --io`: how the load threads do their network I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientIo {
    /// epoll through mio: a `read` and a `write` per connection and turn.
    Epoll,
    /// io_uring: every connection's send and receive of a turn in one system call (`uring.rs`).
    Uring,
}

pub(crate) struct TenantPlan {
    pub space: KeySpace,
    pub user: String,
    pub password: String,
}

/// One connection to open: where, for whom, at what open-loop rate, which keys to preload.
#[derive(Clone, Debug)]
pub(crate) struct ConnSpec {
    pub addr: SocketAddr,
    pub tenant: usize,
    pub gaps: Option<GapSampler>,
    pub preload: std::ops::Range<u64>,
}

/// The phase's timeline: requests intended in `[measure_start, measure_end)` are measured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub measure_start: Instant,
    pub measure_end: Instant,
    /// After this, whatever is still in flight counts as timed out.
    pub drain_deadline: Instant,
}

impl Window {
    pub fn is_measured(&self, intended: Instant) -> bool {
        intended >= self.measure_start && intended < self.measure_end
    }
}

pub(crate) struct Worker<'a> {
    /// `--io uring`: declared first, so it is torn down before the buffers its operations point at.
    ring: Option<Ring>,
    /// Sockets and buffers of abandoned connections whose operations are still finishing.
    retired: Vec<Retired>,
    /// Connections with requests to send at the end of this turn (io_uring).
    dirty: Vec<usize>,
    completions: Vec<(u64, i32, u32)>,
    plan: &'a Plan,
    window: Window,
    poll: Poll,
    conns: Vec<Conn>,
    gaps: Vec<Option<GapSampler>>,
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
    rng: SmallRng,
    stats: RunStats,
    progress: Sender<Tick>,
    /// `stats.errors.total()` when the last tick was sent.
    errors_at_tick: u64,
    cpu: CpuWindow,
}

/// This thread's CPU clock over the measured window.
#[derive(Clone, Copy, Debug)]
enum CpuWindow {
    /// The window has not opened.
    Before,
    /// Opened; the clock read then.
    Open(Duration),
    /// Closed and counted, or there is nothing to count (no thread clock, or a preload).
    Done,
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`); `None` where the clock is missing.
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the call writes it and touches nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

impl<'a> Worker<'a> {
    /// Takes connected, authenticated sockets (one per spec) and registers them.
    pub fn new(
        plan: &'a Plan,
        specs: &[ConnSpec],
        streams: Vec<mio::net::TcpStream>,
        rng: SmallRng,
        progress: Sender<Tick>,
    ) -> std::io::Result<Self> {
        let poll = Poll::new()?;
        let ring = match plan.io {
            ClientIo::Epoll => None,
            ClientIo::Uring => Some(Ring::new()?),
        };
        let mut conns = Vec::with_capacity(specs.len());
        for (i, (spec, mut stream)) in specs.iter().zip(streams).enumerate() {
            let mut conn = if ring.is_some() {
                uring::set_blocking(&stream)?;
                let mut conn = Conn::new(spec.addr, spec.tenant, stream);
                conn.ring = Some(RingState::default());
                conn
            } else {
                poll.registry().register(
                    &mut stream,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                )?;
                let mut conn = Conn::new(spec.addr, spec.tenant, stream);
                if let Some(config) = &plan.tls {
                    conn.start_tls(config.clone())?;
                }
                conn
            };
            conn.preload = spec.preload.clone();
            conns.push(conn);
        }
        let gaps = specs.iter().map(|s| s.gaps).collect();
        let stats = RunStats::new(plan.tenants.len());
        // Placeholder until `run` is handed the phase's real timeline.
        let now = Instant::now();
        let window = Window {
            measure_start: now,
            measure_end: now,
            drain_deadline: now,
        };
        Ok(Worker {
            ring,
            retired: Vec::new(),
            dirty: Vec::new(),
            completions: Vec::new(),
            plan,
            window,
            poll,
            conns,
            gaps,
            heap: BinaryHeap::new(),
            rng,
            stats,
            progress,
            errors_at_tick: 0,
            cpu: if plan.mode == LoadMode::Preload {
                CpuWindow::Done
            } else {
                CpuWindow::Before
            },
        })
    }

    /// Runs the phase from `start` to completion and returns what was measured.
    pub fn run(mut self, start: Instant, window: Window) -> RunStats {
        self.window = window;
        let mut events = Events::with_capacity(1024);
        if let Some(ring) = self.ring.as_mut() {
            // Connects in progress (reconnects) are watched by the mio poll, whose descriptor the ring
            // polls.
            ring.poll_multi(self.poll.as_raw_fd());
            for i in 0..self.conns.len() {
                self.arm_recv(i);
            }
        }
        for i in 0..self.conns.len() {
            if let Some(g) = self.gaps[i] {
                let first = start + Duration::from_secs_f64(g.sample(&mut self.rng));
                self.conns[i].next_intended = Some(first);
            }
            self.service(i, start);
        }
        let mut next_tick = start + TICK;
        let mut next_scan = start + SCAN_INTERVAL;
        loop {
            let now = Instant::now();
            self.track_cpu(now);
            // Completion scans every connection: during a preload only as often as timeouts.
            let may_be_done = match self.plan.mode {
                LoadMode::Preload => now >= next_scan,
                LoadMode::Closed | LoadMode::Open => {
                    now >= self.window.measure_end || self.plan.budget_spent()
                }
            };
            if now >= self.window.drain_deadline || (may_be_done && self.finished(now)) {
                break;
            }
            while let Some(&Reverse((at, i))) = self.heap.peek() {
                if at > now {
                    break;
                }
                self.heap.pop();
                if self.conns[i].heap_wake == Some(at) {
                    self.conns[i].heap_wake = None;
                }
                self.service(i, now);
            }
            if now >= next_scan {
                self.scan(now);
                next_scan = now + SCAN_INTERVAL;
            }
            if now >= next_tick {
                self.send_tick();
                next_tick += TICK;
            }
            let phase_edge = if now < self.window.measure_end {
                self.window.measure_end
            } else {
                self.window.drain_deadline
            };
            let until_wake = next_scan
                .min(next_tick)
                .min(phase_edge)
                .saturating_duration_since(now);
            let timeout = match self
                .heap
                .peek()
                .map(|r| r.0 .0.saturating_duration_since(now))
            {
                // Wake early for a request timer, then spin: epoll rounds up to milliseconds.
                Some(until_timer) if until_timer <= until_wake => {
                    until_timer.saturating_sub(SPIN_BEFORE)
                }
                _ => until_wake,
            };
            if self.ring.is_some() {
                self.submit_sends();
                let entered = self.ring.as_mut().map(|r| r.enter(timeout));
                if let Some(Err(_)) = entered {
                    continue; // EINTR; anything else recurs and the deadline still ends the loop.
                }
                self.reap(&mut events);
                continue;
            }
            if self.poll.poll(&mut events, Some(timeout)).is_err() {
                continue; // EINTR; anything else recurs and the deadline still ends the loop.
            }
            self.on_poll_events(&events);
        }
        self.send_tick();
        self.close_cpu_window();
        self.finish();
        self.stats
    }

    /// Reads this thread's CPU clock as the measured window opens and as it closes.
    fn track_cpu(&mut self, now: Instant) {
        match self.cpu {
            // No thread clock: report nothing rather than a guess.
            CpuWindow::Before if now >= self.window.measure_start => {
                self.cpu = thread_cpu_time().map_or(CpuWindow::Done, CpuWindow::Open);
            }
            CpuWindow::Open(_) if now >= self.window.measure_end => self.close_cpu_window(),
            _ => {}
        }
    }

    /// Adds the CPU time since the window opened to the stats (at the window's end, or at the
    /// phase's end if that comes first).
    fn close_cpu_window(&mut self) {
        if let CpuWindow::Open(start) = self.cpu {
            if let Some(end) = thread_cpu_time() {
                self.stats.client_cpu_secs += end.saturating_sub(start).as_secs_f64();
                self.stats.client_threads += 1;
            }
        }
        self.cpu = CpuWindow::Done;
    }

    /// True when no more work can happen: measurement over and nothing in flight, or (preload)
    /// every range set.
    fn finished(&self, now: Instant) -> bool {
        let quiet = |c: &Conn| c.inflight.is_empty() && c.wbuf.is_empty();
        match self.plan.mode {
            LoadMode::Preload => self.conns.iter().all(|c| c.preload.is_empty() && quiet(c)),
            // A spent budget ends the run early: nothing new will be issued, only what is in
            // flight and the lookaside sets it brings are awaited.
            LoadMode::Closed | LoadMode::Open if self.plan.budget_spent() => self
                .conns
                .iter()
                .all(|c| quiet(c) && c.followups.is_empty()),
            LoadMode::Closed | LoadMode::Open => {
                now >= self.window.measure_end
                    && self.conns.iter().all(|c| {
                        quiet(c)
                            && c.next_intended
                                .map_or(true, |t| t >= self.window.measure_end)
                    })
            }
        }
    }

    /// The mio poll's events: every connection's on the epoll path, connects in progress on io_uring.
    fn on_poll_events(&mut self, events: &Events) {
        for ev in events.iter() {
            let peer_closed = ev.is_read_closed() || ev.is_error();
            self.on_event(ev.token().0, ev.is_readable() || peer_closed, peer_closed);
        }
    }

    fn on_event(&mut self, i: usize, readable: bool, peer_closed: bool) {
        let now = Instant::now();
        let conn = &mut self.conns[i];
        if let ConnState::Connecting(_) = conn.state {
            match conn.connect_finished() {
                Ok(false) => return,
                Ok(true) => self.on_connected(i, now),
                Err(_) => {
                    self.fault(i, Fault::ConnectFailed, now);
                    return;
                }
            }
        }
        let conn = &mut self.conns[i];
        if readable {
            if let Err(f) = conn.read_replies(self.plan, &self.window, &mut self.stats, peer_closed)
            {
                self.fault(i, f, now);
                return;
            }
        }
        self.service(i, now);
    }

    fn on_connected(&mut self, i: usize, now: Instant) {
        let conn = &mut self.conns[i];
        if let Some(s) = conn.stream.as_ref() {
            let _ = s.set_nodelay(true);
        }
        if self.ring.is_some() {
            // From now on the ring does this connection's I/O.
            if let Some(s) = conn.stream.as_mut() {
                let _ = self.poll.registry().deregister(s);
                if uring::set_blocking(s).is_err() {
                    self.fault(i, Fault::ConnectFailed, now);
                    return;
                }
            }
            let gen = conn.ring.as_ref().map_or(0, |r| r.gen);
            conn.ring = Some(RingState {
                gen,
                ..RingState::default()
            });
            self.arm_recv(i);
        }
        let conn = &mut self.conns[i];
        let tenant = &self.plan.tenants[conn.tenant];
        if tenant.user.is_empty() {
            conn.state = ConnState::Ready;
        } else {
            push_auth(&mut conn.wbuf, &tenant.user, &tenant.password);
            conn.push_pending(PendingOp::Auth, 0, now, now);
            conn.state = ConnState::Authenticating;
        }
    }

    fn fault(&mut self, i: usize, fault: Fault, now: Instant) {
        if let Some(ring) = self.ring.as_mut() {
            let conn = &mut self.conns[i];
            if let Some(state) = conn.ring.as_mut() {
                let (recv_in_flight, send_in_flight) = (state.recv_in_flight, state.send_in_flight);
                let gen = state.gen;
                let sending = std::mem::take(&mut state.sending);
                *state = RingState {
                    gen: (gen + 1) & 0xff_ffff,
                    ..RingState::default()
                };
                if recv_in_flight || send_in_flight {
                    // The kernel may still write to the read buffer or read the send buffer: keep them
                    // (and the socket, so the cancel can name it) until those operations complete.
                    if let Some(stream) = conn.stream.take() {
                        ring.cancel_fd(stream.as_raw_fd());
                        self.retired.push(Retired {
                            conn: i,
                            gen,
                            recv_in_flight,
                            send_in_flight,
                            _stream: stream,
                            _rbuf: conn.take_rbuf(),
                            _sending: sending,
                        });
                    }
                }
            }
        }
        self.conns[i].abandon(
            fault,
            now,
            &self.window,
            &mut self.stats,
            self.poll.registry(),
        );
    }

    /// Issues what connection `i` may send now, flushes it, and arms its next timer.
    fn service(&mut self, i: usize, now: Instant) {
        if self.conns[i].state == ConnState::Ready {
            self.issue(i, now);
        }
        let conn = &mut self.conns[i];
        if let Some(state) = conn.ring.as_mut() {
            if !state.dirty && !conn.wbuf.is_empty() {
                state.dirty = true;
                self.dirty.push(i);
            }
        }
        if let Err(f) = self.conns[i].flush() {
            self.fault(i, f, now);
            return;
        }
        if let Some(at) = self.next_wake(i) {
            let conn = &mut self.conns[i];
            if conn.heap_wake.map_or(true, |w| at < w) {
                conn.heap_wake = Some(at);
                self.heap.push(Reverse((at, i)));
            }
        }
    }

    fn next_wake(&self, i: usize) -> Option<Instant> {
        let c = &self.conns[i];
        // Reconnects of Down connections are the periodic scan's job, not a timer's.
        if c.state != ConnState::Ready || c.inflight.len() >= self.plan.pipeline {
            return None;
        }
        let followup = c.followups.front().map(|f| f.ready_at);
        let arrival = c.next_intended.filter(|t| {
            *t < self.window.measure_end
                && c.outstanding() < self.plan.pipeline
                && !self.plan.budget_spent()
        });
        followup.into_iter().chain(arrival).min()
    }

    fn issue(&mut self, i: usize, now: Instant) {
        let plan = self.plan;
        let depth = if plan.mode == LoadMode::Preload {
            PRELOAD_DEPTH
        } else {
            plan.pipeline
        };
        loop {
            let conn = &mut self.conns[i];
            if conn.inflight.len() >= depth {
                return;
            }
            if let Some(f) = conn
                .followups
                .front()
                .copied()
                .filter(|f| f.ready_at <= now)
            {
                conn.followups.pop_front();
                self.send_set(i, f.key, PendingOp::LookasideSet, f.ready_at, now);
                continue;
            }
            if conn.outstanding() >= depth {
                return;
            }
            let intended = match plan.mode {
                LoadMode::Preload => {
                    let Some(key) = conn.preload.next() else {
                        return;
                    };
                    self.send_set(i, key, PendingOp::Op(OpKind::Set), now, now);
                    continue;
                }
                LoadMode::Closed if now < self.window.measure_end => now,
                LoadMode::Closed => return,
                LoadMode::Open => match (conn.next_intended, self.gaps[i]) {
                    (Some(t), Some(g)) if t <= now && t < self.window.measure_end => {
                        let gap = Duration::from_secs_f64(g.sample(&mut self.rng));
                        conn.next_intended = Some(t + gap);
                        t
                    }
                    _ => return,
                },
            };
            if !self.send_new(i, intended, now) {
                // The budget is spent: this connection's arrivals end here.
                self.conns[i].next_intended = None;
                return;
            }
        }
    }

    /// Sends the next get or set; false (and nothing sent) once a bounded run's budget is spent.
    fn send_new(&mut self, i: usize, intended: Instant, now: Instant) -> bool {
        let plan = self.plan;
        let is_set = self.rng.gen::<f64>() >= plan.get_ratio;
        let want = if is_set { 1 } else { plan.multiget as u64 };
        let granted = match &plan.budget {
            Some(budget) => budget.take(want),
            None => want,
        };
        if granted == 0 {
            return false;
        }
        if is_set {
            let key = plan.keys.sample(&mut self.rng);
            self.send_set(i, key, PendingOp::Op(OpKind::Set), intended, now);
            return true;
        }
        let conn = &mut self.conns[i];
        let space = &plan.tenants[conn.tenant].space;
        let rng = &mut self.rng;
        let req_keys = &mut conn.req_keys;
        let keys = (0..granted).map(|_| {
            let key = plan.keys.sample(rng);
            if plan.lookaside {
                req_keys.push_back(key);
            }
            key
        });
        push_get(&mut conn.wbuf, space, keys);
        let op = if plan.multiget > 1 {
            OpKind::MultiGet
        } else {
            OpKind::Get
        };
        conn.push_pending(PendingOp::Op(op), granted as u32, intended, now);
        true
    }

    fn send_set(&mut self, i: usize, key: u64, op: PendingOp, intended: Instant, now: Instant) {
        let plan = self.plan;
        let conn = &mut self.conns[i];
        let len = plan.sizer.size_of(plan.keys.size_id(key));
        push_set(
            &mut conn.wbuf,
            &plan.tenants[conn.tenant].space,
            key,
            &plan.value[..len],
        );
        conn.push_pending(op, 1, intended, now);
    }

    /// Times out stalled requests and connects, and reconnects dropped connections.
    fn scan(&mut self, now: Instant) {
        let timeout = self.plan.timeout;
        for i in 0..self.conns.len() {
            let conn = &self.conns[i];
            let stalled = conn
                .inflight
                .front()
                .is_some_and(|p| now.duration_since(p.sent) > timeout);
            match conn.state {
                ConnState::Connecting(since) if now.duration_since(since) > timeout => {
                    self.fault(i, Fault::ConnectFailed, now);
                }
                ConnState::Authenticating if stalled => self.fault(i, Fault::AuthRefused, now),
                ConnState::Down(at) if at <= now && now < self.window.measure_end => {
                    self.reconnect(i, now)
                }
                _ if stalled => self.fault(i, Fault::Timeout, now),
                _ => {}
            }
        }
    }

    fn reconnect(&mut self, i: usize, now: Instant) {
        let conn = &mut self.conns[i];
        match mio::net::TcpStream::connect(conn.addr) {
            Ok(mut stream) => {
                let interest = Interest::READABLE | Interest::WRITABLE;
                if self
                    .poll
                    .registry()
                    .register(&mut stream, Token(i), interest)
                    .is_ok()
                {
                    conn.stream = Some(stream);
                    conn.state = ConnState::Connecting(now);
                    let tls = self.plan.tls.clone().map(|c| conn.start_tls(c));
                    if let Some(Err(_)) = tls {
                        self.stats.errors.connect_failures += 1;
                        conn.state = ConnState::Down(now + crate::conn::RECONNECT_BACKOFF);
                    }
                    return;
                }
                self.stats.errors.connect_failures += 1;
            }
            Err(_) => self.stats.errors.connect_failures += 1,
        }
        conn.state = ConnState::Down(now + crate::conn::RECONNECT_BACKOFF);
    }

    /// io_uring: queues connection `i`'s next receive, into the end of its read buffer.
    fn arm_recv(&mut self, i: usize) {
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        let conn = &mut self.conns[i];
        let Some(fd) = conn.stream.as_ref().map(|s| s.as_raw_fd()) else {
            return;
        };
        let (ptr, len) = conn.recv_target();
        let Some(state) = conn.ring.as_mut() else {
            return;
        };
        if state.recv_in_flight {
            return;
        }
        state.recv_in_flight = true;
        ring.recv(fd, ptr, len, i, state.gen);
    }

    /// io_uring: sends what each connection issued this turn, one send per connection, all submitted
    /// by the next enter.
    fn submit_sends(&mut self) {
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        for i in self.dirty.drain(..) {
            let conn = &mut self.conns[i];
            let Some(fd) = conn.stream.as_ref().map(|s| s.as_raw_fd()) else {
                continue;
            };
            let Some(state) = conn.ring.as_mut() else {
                continue;
            };
            state.dirty = false;
            if state.send_in_flight || conn.wbuf.is_empty() {
                continue;
            }
            // The write buffer goes out whole; requests issued meanwhile fill the other one.
            state.sending.clear();
            std::mem::swap(&mut state.sending, &mut conn.wbuf);
            state.send_pos = 0;
            state.send_in_flight = true;
            ring.send(fd, &state.sending, i, state.gen);
        }
    }

    /// io_uring: handles every completion that is ready.
    fn reap(&mut self, events: &mut Events) {
        let mut completions = std::mem::take(&mut self.completions);
        if let Some(ring) = self.ring.as_mut() {
            ring.drain(&mut completions);
        }
        for &(ud, res, flags) in &completions {
            let (kind, i, gen) = uring::split_user_data(ud);
            let now = Instant::now();
            match kind {
                uring::KIND_POLL => {
                    if self.poll.poll(events, Some(Duration::ZERO)).is_ok() {
                        self.on_poll_events(events);
                    }
                    if !io_uring::cqueue::more(flags) {
                        let fd = self.poll.as_raw_fd();
                        if let Some(ring) = self.ring.as_mut() {
                            ring.poll_multi(fd);
                        }
                    }
                }
                uring::KIND_RECV | uring::KIND_SEND => {
                    let live = self
                        .conns
                        .get(i)
                        .and_then(|c| c.ring.as_ref())
                        .map(|r| r.gen);
                    if live != Some(gen) {
                        self.retire_done(kind, i, gen);
                    } else if kind == uring::KIND_RECV {
                        self.on_recv(i, res);
                    } else {
                        self.on_send(i, res, now);
                    }
                }
                _ => {}
            }
        }
        self.completions = completions;
    }

    fn on_recv(&mut self, i: usize, res: i32) {
        let conn = &mut self.conns[i];
        let Some(state) = conn.ring.as_mut() else {
            return;
        };
        state.recv_in_flight = false;
        if res == -libc::EINTR || res == -libc::EAGAIN {
            self.arm_recv(i);
            return;
        }
        state.received = Some(res);
        if res > 0 {
            conn.ring_received(res as usize);
        }
        self.on_event(i, true, res <= 0);
        // After a fault the connection is down (its socket gone); it is re-armed once reconnected.
        if !matches!(self.conns[i].state, ConnState::Down(_)) {
            self.arm_recv(i);
        }
    }

    fn on_send(&mut self, i: usize, res: i32, now: Instant) {
        let conn = &mut self.conns[i];
        let Some(state) = conn.ring.as_mut() else {
            return;
        };
        state.send_in_flight = false;
        if res < 0 && res != -libc::EINTR && res != -libc::EAGAIN {
            state.send_error = true;
        } else {
            state.send_pos += res.max(0) as usize;
            if state.send_pos < state.sending.len() {
                // A partial send: the rest goes first, before anything issued since.
                let fd = conn.stream.as_ref().map(|s| s.as_raw_fd());
                if let (Some(fd), Some(ring)) = (fd, self.ring.as_mut()) {
                    state.send_in_flight = true;
                    ring.send(fd, &state.sending[state.send_pos..], i, state.gen);
                }
                return;
            }
            state.sending.clear();
            state.send_pos = 0;
        }
        self.service(i, now);
    }

    /// A completion for an abandoned socket: forget its leftovers once nothing is in flight on them.
    fn retire_done(&mut self, kind: u64, i: usize, gen: u32) {
        if let Some(k) = self
            .retired
            .iter()
            .position(|r| r.conn == i && r.gen == gen)
        {
            let r = &mut self.retired[k];
            if kind == uring::KIND_RECV {
                r.recv_in_flight = false;
            } else {
                r.send_in_flight = false;
            }
            if !r.recv_in_flight && !r.send_in_flight {
                self.retired.swap_remove(k);
            }
        }
    }

    fn send_tick(&mut self) {
        let errors = self.stats.errors.total();
        let tick = Tick {
            ops: self.stats.tick_ops,
            latency: self.stats.tick_latency.clone(),
            errors: errors - self.errors_at_tick,
        };
        self.errors_at_tick = errors;
        self.stats.tick_ops = 0;
        self.stats.tick_latency.clear();
        // The runner outlives its workers; a closed channel only means nobody is watching.
        let _ = self.progress.send(tick);
    }

    /// Counts what the phase left undone: requests still in flight time out, and an open-loop
    /// backlog (arrivals never sent) is counted as unsent.
    fn finish(&mut self) {
        let window = self.window;
        for (conn, gaps) in self.conns.iter().zip(&self.gaps) {
            let lost = conn
                .inflight
                .iter()
                .filter(|p| p.op != PendingOp::Auth && window.is_measured(p.intended))
                .count() as u64;
            self.stats.errors.timeouts += lost;
            // A spent budget, not the clock, ended these arrivals: none is owed.
            let arrivals = conn.next_intended.filter(|_| !self.plan.budget_spent());
            if let (Some(mut t), Some(g)) = (arrivals, gaps) {
                let mut unsent = 0;
                while t < window.measure_end && unsent < UNSENT_COUNT_LIMIT {
                    if window.is_measured(t) {
                        unsent += 1;
                    }
                    t += Duration::from_secs_f64(g.sample(&mut self.rng));
                }
                self.stats.errors.unsent += unsent;
            }
            if self.plan.mode == LoadMode::Preload {
                self.stats.errors.unsent += conn.preload.end - conn.preload.start;
            }
        }
    }
}
