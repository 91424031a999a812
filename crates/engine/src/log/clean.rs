//! The cleaner (Memshare §3, Algorithm 1): which pool gives up memory (`victims`, by need), and cleaning
//! passes over a pool's oldest full segments, run in bounded steps: a *ranked* pass (`Pass`, below)
//! for the rankings that compare items (lru, lfu, slru, density), or a *sweep* (`super::sweep`) that
//! keeps each item by its own count (the clock ranking, and the probationary queue).
//!
//! A ranked pass takes the `k` oldest full segments of the victim pool (`k = clean_segments`, fewer if it has
//! fewer) off its queue, drops dead items (expired, flushed, overwritten), ranks the live ones by the
//! pool's ranking function, moves the highest ranked into `k - 1` output segments and evicts the rest
//! (into the pool's shadow queue). The inputs then hold nothing live: one is the pass's result (a free
//! segment, still counted in the victim) and the others become the next pass's outputs. Outputs that
//! received survivors rejoin the back of the pool's queue, so a survivor gets another whole round.
//!
//! **Steps.** A pass is started when a pool (the *asker*) takes a segment the cleaner freed or the
//! budget's last one (memory is full, so its next segment will have to be cleaned too) and the victim
//! has `k` full segments, and advances a little on every append to the shard (`step`): `2k` bytes of
//! scanning and moving per byte appended, so it is through its scan and moves by the time the asker's
//! head is three quarters full. Its evictions wait until that head has room for `EVICT_PACE` times
//! fewer bytes than are left to evict and then keep that pace, so memory is emptied no more than a
//! sixteenth of a segment early. When the asker needs its segment, `finish` does whatever is left
//! (usually nothing but handing the segments over). Each step holds the shard lock for a few records;
//! the longest is the one that ends the scan (ranking and sorting the candidates).
//! Between steps other requests run: an input item may be read (its rank is not revised), deleted or
//! overwritten elsewhere (it is then skipped), but never rewritten in place (`place` appends instead),
//! so an input record that was unlinked stays dead. A move copies, repoints and unlinks the old copy
//! at once, so every item is live in exactly one record at every step.
//!
//! **Outputs.** The `k - 1` output segments are memory outside the page budget (as a copy buffer would
//! be), allocated at the first pass and kept as the shard's spares; a pass's emptied inputs take their
//! place, so the number held beside the budget stays `k - 1`.
//!
//! Segments are owned by one pool, so Memshare's per-item choice by need reduces to choosing the victim
//! pool by need; its random half of the segment choice is replaced by taking the oldest segments,
//! which in a log are also the lowest ranked by LRU.
//!
//! Which queue a pass takes: the probationary one while it holds more than its share of the pool's
//! segments (or the main queue has no full segment), else the main queue (`queue_to_clean`).
//!
//! Invariants: at most one pass per shard; a pass copies at most `k - 1` segments of records and touches
//! only its inputs and outputs; under `-M` it evicts nothing live (it gives up when the survivors would
//! not fit, and its inputs return to the front of the queue); a pool at or below its reserve is never
//! a victim for another pool.

use super::sweep::Sweep;
use super::{prefix_freq, prefix_len, read_prefix, LogShard, LEN_BITS};
use crate::config::Ranking;
use crate::globals::Evicted;
use crate::item::bits;
use crate::shard::hash_key;
use crate::Clock;

/// A live record of a pass: where it is, its size, key hash, last access and access count.
struct Candidate {
    h: u32,
    rec: usize,
    hash: u64,
    atime: u32,
    freq: u32,
}

/// A candidate's rank in a pass: higher survives. Memshare's `rank(t, f)` of the last access time `t` and
/// the access count `f` for LRU, LFU and SLRU. `Density` is hits per byte, `(f + 1) / rec` for a record
/// of `rec` bytes (in units of 2^-32), except that an item unused for more than `STALE_LIFETIMES` of the
/// pool's cleaning cycles (`lifetime`: how long the pass's oldest input segment waited in the queue,
/// at least 1 s) ranks last: the size and the count decide among the items in use, and a small item
/// popular in a past phase, whose count has decayed to nothing, does not keep its place for its size.
fn rank(ranking: Ranking, c: &Candidate, lifetime: u32, now: u32) -> u64 {
    match ranking {
        // Ranked under `-M` and in pools too small to sweep: by count, then recency.
        Ranking::Clock => (c.freq.min(super::sweep::CLOCK_MAX) as u64) << 32 | c.atime as u64,
        Ranking::Lru => c.atime as u64,
        Ranking::Lfu => (c.freq as u64) << 32 | c.atime as u64,
        Ranking::Slru => u64::from(c.freq >= 1) << 32 | c.atime as u64,
        Ranking::Density if now.saturating_sub(c.atime) > STALE_LIFETIMES * lifetime.max(1) => 0,
        Ranking::Density => ((c.freq as u64 + 1) << 32) / c.rec as u64,
    }
}

/// Cleaning cycles without a use after which `Density` ranks an item last.
const STALE_LIFETIMES: u32 = 8;

/// Bytes of scanning and moving a step does per byte appended, per input segment of a pass (a pass
/// scans `k` segments and moves at most `k - 1`).
const PACE_PER_INPUT: usize = 2;

/// Bytes of evictions per byte appended once a pass's evictions have begun; they begin when the
/// asker's head has room for this many times fewer bytes than are left to evict.
const EVICT_PACE: usize = 16;

/// Where a pass is.
enum Stage {
    /// Reading the inputs' records: input index and offset of the next record.
    Scan { input: usize, off: usize },
    /// Moving survivors: the next candidate.
    Move { next: usize },
    /// Evicting the rest: the next candidate.
    Evict { next: usize },
    /// Done but for handing over the emptied segments (`finish`).
    Ready,
}

/// The cleaning under way: a ranked pass or a sweep.
pub(super) enum Cleaning {
    Ranked(Pass),
    Sweep(Sweep),
}

impl Cleaning {
    pub(super) fn victim(&self) -> usize {
        match self {
            Cleaning::Ranked(p) => p.victim,
            Cleaning::Sweep(s) => s.victim(),
        }
    }

    /// Its segments counted in the victim, and those beside the budget (see each kind).
    pub(super) fn segments(&self) -> (&[u32], &[u32]) {
        match self {
            Cleaning::Ranked(p) => (&p.inputs, &p.outputs),
            Cleaning::Sweep(s) => s.segments(),
        }
    }
}

/// A ranked cleaning pass under way (see the module doc).
pub(super) struct Pass {
    victim: usize,
    /// The pool whose next segment the pass is for: its evictions keep pace with that pool's head.
    asker: usize,
    /// Record bytes of the planned evictions not yet carried out.
    evict_left: usize,
    ranking: Ranking,
    /// How long the oldest input waited in the queue (`Density`'s cycle), from the pass's start.
    lifetime: u32,
    inputs: Vec<u32>,
    /// Output segment slots, highest ranked first.
    outputs: Vec<u32>,
    cands: Vec<Candidate>,
    /// Each candidate's output, or `None` to evict it; filled when the scan ends.
    dest: Vec<Option<u8>>,
    stage: Stage,
}

impl LogShard {
    /// The pools that may give `pool` a segment, best first. A pool at its cap cleans only itself.
    /// With targets set (an arbiter runs), by need: target bytes over the bytes the pool holds here,
    /// lowest first (Memshare's `need`); a pool without a target never gives to another. Without
    /// targets, `pool` itself, then the others by the bytes they hold. Pools at or below their
    /// reserve never give to another.
    pub(super) fn victims(&self, pool: usize) -> Vec<usize> {
        let table = &self.globals.pools;
        let cleanable = |q: usize| self.cleanable(q);
        if !table.may_grow(pool) {
            return if cleanable(pool) {
                vec![pool]
            } else {
                Vec::new()
            };
        }
        let n = self.pools.len();
        // Each pool's target in bytes (set in bytes by an arbiter, else its pages).
        let targets: Vec<Option<u64>> = (0..n)
            .map(|q| table.snapshot(q).target_in_bytes(self.seg_bytes))
            .collect();
        let any_target = targets.iter().any(Option::is_some);
        let mut order: Vec<(f64, usize)> = (0..n)
            .filter(|&q| cleanable(q) && (q == pool || table.above_reserve(q) > 0))
            .map(|q| {
                let live = self.pools[q].live_bytes.max(1) as f64;
                let key = if any_target {
                    match targets[q] {
                        None if q == pool => f64::MAX,
                        None => f64::INFINITY,
                        Some(t) => (t as f64 / self.shards as f64) / live,
                    }
                } else if q == pool {
                    f64::NEG_INFINITY
                } else {
                    -live
                };
                (key, q)
            })
            .collect();
        order.sort_by(|a, b| a.0.total_cmp(&b.0).then((a.1 != pool).cmp(&(b.1 != pool))));
        order
            .into_iter()
            .filter(|&(key, q)| q == pool || key.is_finite() || !any_target)
            .map(|(_, q)| q)
            .collect()
    }

    /// Whether `pool` has a full segment a pass could take.
    pub(super) fn cleanable(&self, pool: usize) -> bool {
        let p = &self.pools[pool];
        !p.full.is_empty() || !p.probation.is_empty() || p.tail.is_some()
    }

    /// A pool with no full segment but its tail gives the tail to its main queue, so that a pool of
    /// few segments can still be cleaned.
    fn surrender_tail(&mut self, pool: usize) {
        let p = &mut self.pools[pool];
        if p.full.is_empty() && p.probation.is_empty() {
            p.full.extend(p.tail.take());
        }
    }

    /// The queue a pass over `pool` takes its next input from (true: the probationary one; see the
    /// module doc), with the number of full segments it has.
    pub(super) fn queue_to_clean(&self, pool: usize) -> (bool, usize) {
        let p = &self.pools[pool];
        let probation = !p.probation.is_empty()
            && (p.full.is_empty() || p.probation_segments() > self.probation_target(pool));
        (
            probation,
            if probation {
                p.probation.len()
            } else {
                p.full.len()
            },
        )
    }

    /// Whether the next pass over `pool` is a sweep: its next input is probationary or it ranks by
    /// the clock (never under `-M`, whose passes must be able to give up).
    ///
    /// A clock pool of fewer than `MIN_SWEEP_SEGMENTS` here is cleaned by ranked passes (by count,
    /// then recency): a sweep's tail is one segment more than such a pool can spare.
    fn sweeps(&self, pool: usize) -> bool {
        self.evict_when_full
            && (self.queue_to_clean(pool).0
                || (self.pools[pool].ranking == Ranking::Clock
                    && self.segments_of(pool) >= super::alloc::MIN_PROBATION_SEGMENTS))
    }

    /// A whole cleaning pass over `victim`'s oldest full segments, now; returns the segment it emptied
    /// (still counted in `victim`), or `None` when it has none or, under `-M`, its survivors would not
    /// fit. No pass may be under way (callers `finish` it first).
    pub(super) fn clean(&mut self, victim: usize, clock: Clock) -> Option<u32> {
        debug_assert!(self.pass.is_none(), "finish the pass under way first");
        if !self.begin(victim, victim, clock) {
            return None;
        }
        self.finish(clock).map(|(_, slot)| slot)
    }

    /// Starts a pass for a pool that just took a cleaned segment or the last free one, to be advanced
    /// by `step` and completed by `finish`: over the first of `victims(pool)`, if it has a whole pass's
    /// worth of full segments. (With fewer, a pass now would take too few inputs and evict all it
    /// read; the pass runs whole when the segment is needed, when the head has joined the queue.)
    ///
    /// A sweep evicts as it goes, so it is not started here but by the first step that finds the
    /// fuller of the pool's heads with a `SWEEP_START`-th of a segment left (`step`).
    pub(super) fn begin_for(&mut self, pool: usize, clock: Clock) {
        if self.pass.is_none() {
            if let Some(&victim) = self.victims(pool).first() {
                if self.sweeps(victim) {
                    self.sweep_for = Some(pool);
                } else if self.pools[victim].full.len() >= self.clean_segments {
                    self.begin(victim, pool, clock);
                }
            }
        }
    }

    /// Takes `victim`'s `k` oldest full segments off its queue as a new pass's inputs, with the
    /// spares as its outputs. False when it has no full segment.
    fn begin(&mut self, victim: usize, asker: usize, clock: Clock) -> bool {
        self.sweep_for = None;
        self.surrender_tail(victim);
        if self.sweeps(victim) {
            return self.begin_sweep(victim, asker);
        }
        let k = self.clean_segments.min(self.pools[victim].full.len());
        if k == 0 {
            return false;
        }
        let inputs: Vec<u32> = self.pools[victim].full.drain(..k).collect();
        for &slot in &inputs {
            self.seg_mut(slot as usize).cleaning = true;
        }
        while self.spares.len() < self.clean_segments - 1 {
            let slot = self.install_slot(self.new_seg(victim));
            self.spares.push(slot);
        }
        let outputs: Vec<u32> = self.spares.drain(..k - 1).collect();
        for &slot in &outputs {
            let seg = self.seg_mut(slot as usize);
            debug_assert!(seg.used == 0 && seg.items == 0);
            seg.pool = victim;
        }
        self.pass = Some(Cleaning::Ranked(Pass {
            victim,
            asker,
            evict_left: 0,
            ranking: self.pools[victim].ranking,
            lifetime: clock.now.saturating_sub(self.seg(inputs[0] as usize).born),
            inputs,
            outputs,
            cands: Vec::new(),
            dest: Vec::new(),
            stage: Stage::Scan { input: 0, off: 0 },
        }));
        true
    }

    /// Advances the cleaning under way by the work owed for `appended` bytes (see the module doc);
    /// starts a sweep that is due.
    pub(super) fn step(&mut self, appended: usize, clock: Clock) {
        if let Some(asker) = self.sweep_for.filter(|_| self.pass.is_none()) {
            if self.min_head_room(asker) * super::sweep::SWEEP_START <= self.seg_bytes {
                self.sweep_for = None;
                if let Some(&victim) = self.victims(asker).first() {
                    self.begin(victim, asker, clock);
                }
            }
        }
        match self.pass.take() {
            Some(Cleaning::Ranked(pass)) => self.advance(pass, Some(appended), clock),
            Some(Cleaning::Sweep(sweep)) => self.advance_sweep(sweep, Some(appended), clock),
            None => {}
        }
    }

    /// Scans, moves and evicts the records owed for `appended` bytes (`None`: all that is left). Ends
    /// the scan with the plan; under `-M`, a plan that would evict abandons the pass.
    fn advance(&mut self, mut pass: Pass, appended: Option<usize>, clock: Clock) {
        let mut budget = appended.map_or(usize::MAX, |a| a * PACE_PER_INPUT * self.clean_segments);
        loop {
            match pass.stage {
                Stage::Scan { input, .. } if input == pass.inputs.len() => {
                    if !self.plan(&mut pass, clock) {
                        self.abandon(pass);
                        return;
                    }
                    pass.stage = Stage::Move { next: 0 };
                }
                Stage::Scan { input, off } => {
                    let slot = pass.inputs[input];
                    let used = self.seg(slot as usize).used;
                    let mut off = off;
                    while off < used && budget > 0 {
                        let rec = self.scan_record(&mut pass, slot, off, clock);
                        off += rec;
                        budget = budget.saturating_sub(rec);
                    }
                    pass.stage = if off < used {
                        Stage::Scan { input, off }
                    } else {
                        Stage::Scan {
                            input: input + 1,
                            off: 0,
                        }
                    };
                    if off < used {
                        break;
                    }
                }
                Stage::Move { next } => {
                    let mut next = next;
                    while next < pass.cands.len() && budget > 0 {
                        if let Some(out) = pass.dest[next] {
                            let c = &pass.cands[next];
                            budget = budget.saturating_sub(c.rec);
                            self.move_record(c, pass.outputs[out as usize], pass.ranking);
                        }
                        next += 1;
                    }
                    if next < pass.cands.len() {
                        pass.stage = Stage::Move { next };
                        break;
                    }
                    pass.stage = Stage::Evict { next: 0 };
                }
                Stage::Evict { next } => {
                    // Evictions free memory only when the pass ends: they wait until the asker's head
                    // has room for no more than `EVICT_PACE` times fewer bytes than are left to evict,
                    // then keep that pace, so they end as the head fills.
                    if let Some(appended) = appended {
                        let room = self.head_room(pass.asker);
                        if pass.evict_left <= room.saturating_mul(EVICT_PACE) {
                            break;
                        }
                        budget = appended.saturating_mul(EVICT_PACE);
                    }
                    let mut next = next;
                    while next < pass.cands.len() && budget > 0 {
                        if pass.dest[next].is_none() {
                            let c = &pass.cands[next];
                            budget = budget.saturating_sub(c.rec);
                            pass.evict_left -= c.rec;
                            self.evict(c, pass.victim, clock);
                        }
                        next += 1;
                    }
                    if next < pass.cands.len() {
                        pass.stage = Stage::Evict { next };
                        break;
                    }
                    pass.stage = Stage::Ready;
                }
                Stage::Ready => break,
            }
        }
        self.pass = Some(Cleaning::Ranked(pass));
    }

    /// Reads one input record at `off` of `slot`: unlinks it if dead, else makes it a candidate.
    /// Returns its length.
    fn scan_record(&mut self, pass: &mut Pass, slot: u32, off: usize, clock: Clock) -> usize {
        let (rec, live) = self.read_record(pass.victim, slot, off, clock);
        let Some((h, hash, p)) = live else {
            return rec;
        };
        let it = self.item(h);
        pass.cands.push(Candidate {
            h,
            rec,
            hash,
            atime: it.atime(),
            freq: prefix_freq(p),
        });
        rec
    }

    /// Reads the record at `off` of segment `slot` of pool `victim`: its length, and its handle, key
    /// hash and prefix if it is live. A dead one (expired, flushed) still linked is reclaimed.
    pub(super) fn read_record(
        &mut self,
        victim: usize,
        slot: u32,
        off: usize,
        clock: Clock,
    ) -> (usize, Option<(u32, u64, u32)>) {
        let p = read_prefix(&self.seg(slot as usize).mem, off);
        let (h, rec) = (self.handle(slot, off), prefix_len(p));
        let it = self.item(h);
        if !it.has(bits::LINKED) {
            return (rec, None);
        }
        let hash = hash_key(it.tenant_key());
        if self.is_dead(h, clock) {
            let fetched = it.has(bits::FETCHED);
            self.pools[victim].counters.count_reclaim(fetched);
            self.unlink(h, hash);
            return (rec, None);
        }
        (rec, Some((h, hash, p)))
    }

    /// Ranks the candidates and packs the highest ranked (ties in the inputs' order) into the outputs;
    /// false when under `-M` some would have to be evicted.
    fn plan(&self, pass: &mut Pass, clock: Clock) -> bool {
        let mut order: Vec<(u64, u32)> = (pass.cands.iter().enumerate())
            .map(|(i, c)| (rank(pass.ranking, c, pass.lifetime, clock.now), i as u32))
            .collect();
        order.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let outs = pass.outputs.len();
        let mut used = vec![0usize; outs];
        let mut cur = 0;
        pass.dest = vec![None; pass.cands.len()];
        let mut evicting = 0;
        for &(_, i) in &order {
            let rec = pass.cands[i as usize].rec;
            if outs > 0 && used[cur] + rec > self.seg_bytes && cur + 1 < outs {
                cur += 1;
            }
            if outs > 0 && used[cur] + rec <= self.seg_bytes {
                pass.dest[i as usize] = Some(cur as u8);
                used[cur] += rec;
            } else {
                evicting += 1;
                pass.evict_left += rec;
            }
        }
        self.evict_when_full || evicting == 0
    }

    /// Moves a survivor, if it is still live, to the end of output `out`: copies its record (aging
    /// its access count under LFU and density), repoints the index and unlinks the old copy's bytes.
    fn move_record(&mut self, c: &Candidate, out: u32, ranking: Ranking) {
        if !self.item(c.h).has(bits::LINKED) {
            return;
        }
        // Age the count under LFU and density: popularity that is not renewed fades.
        let aged = |freq: u32| match ranking {
            Ranking::Lfu | Ranking::Density => freq / 2,
            Ranking::Clock => freq.min(super::sweep::CLOCK_MAX).saturating_sub(1),
            Ranking::Lru | Ranking::Slru => freq,
        };
        self.relocate(c.h, c.hash, c.rec, out, aged);
    }

    /// Moves the live record `h` of `rec` bytes to the end of segment `out` (which has room), its
    /// access count `aged`: copies it, repoints the index and unlinks the old copy's bytes.
    pub(super) fn relocate(
        &mut self,
        h: u32,
        hash: u64,
        rec: usize,
        out: u32,
        aged: impl FnOnce(u32) -> u32,
    ) {
        let (slot, off) = self.split(h);
        let at = self.seg(out as usize).used;
        debug_assert!(at + rec <= self.seg_bytes, "the target has room");
        let (src, dst) = self.two_segs(slot, out as usize);
        let dst = &mut dst.mem[at..at + rec];
        dst.copy_from_slice(&src.mem[off..off + rec]);
        let p = u32::from_le_bytes(dst[..4].try_into().unwrap());
        let p = aged(prefix_freq(p)).min(super::FREQ_MAX) << LEN_BITS | (p & ((1 << LEN_BITS) - 1));
        dst[..4].copy_from_slice(&p.to_le_bytes());
        let new = self.handle(out, at);
        self.index.repoint(hash, h, new);
        self.item_mut(h).remove_bits(bits::LINKED);
        let old = self.seg_mut(slot);
        old.live -= rec;
        old.items -= 1;
        let seg = self.seg_mut(out as usize);
        seg.used += rec;
        seg.live += rec;
        seg.items += 1;
        self.cleaned_bytes += rec as u64;
    }

    /// Evicts a candidate the plan leaves out, if it is still live (into the victim's shadow queue,
    /// and the ghost when it keeps what the main queue evicts: without probation).
    fn evict(&mut self, c: &Candidate, victim: usize, clock: Clock) {
        if self.item(c.h).has(bits::LINKED) {
            self.evict_live(c.h, c.hash, victim, self.probation_share == 0.0, clock);
        }
    }

    /// Evicts the live item `h` of pool `victim`: counts it, remembers it (the ghost too if `ghost`)
    /// and unlinks it.
    pub(super) fn evict_live(
        &mut self,
        h: u32,
        hash: u64,
        victim: usize,
        ghost: bool,
        clock: Clock,
    ) {
        let (expiry, atime, fetched) = {
            let it = self.item(h);
            (it.expiry(), it.atime(), it.has(bits::FETCHED))
        };
        self.pools[victim]
            .counters
            .count_eviction(expiry, atime, fetched, clock.now);
        if let Some(observe) = self.globals.eviction_observer() {
            observe(&Evicted::of(self.item(h), super::LOG_CLASS, clock.now));
        }
        self.remember_evicted(h, hash, ghost);
        self.unlink(h, hash);
    }

    /// Completes the pass under way, if any: the rest of its scan, moves and evictions.
    /// Returns its victim and the segment it emptied (still counted in the victim), or `None` when
    /// there was no pass or it was abandoned under `-M`.
    pub(super) fn finish(&mut self, clock: Clock) -> Option<(usize, u32)> {
        let pass = match self.pass.take()? {
            Cleaning::Sweep(sweep) => return self.finish_sweep(sweep, clock),
            Cleaning::Ranked(pass) => {
                self.advance(pass, None, clock);
                match self.pass.take()? {
                    Cleaning::Ranked(pass) => pass,
                    Cleaning::Sweep(_) => unreachable!("a ranked pass stays ranked"),
                }
            }
        };
        let victim = pass.victim;
        for &slot in &pass.inputs {
            let seg = self.seg_mut(slot as usize);
            debug_assert_eq!(seg.items, 0, "a finished pass leaves its inputs empty");
            seg.used = 0;
            seg.live = 0;
            seg.items = 0;
            seg.cleaning = false;
        }
        // Outputs that received survivors join the queue, lower ranked first so they come up for
        // cleaning first; each takes the place in the pool of an emptied input, which becomes a
        // spare. Empty outputs stay spares, and the inputs they leave over go back to the budget.
        let (freed, emptied) = pass.inputs.split_last().expect("a pass has an input");
        let mut emptied = emptied.iter();
        for &out in pass.outputs.iter().rev() {
            if self.seg(out as usize).used > 0 {
                self.seg_mut(out as usize).born = clock.now;
                self.pools[victim].full.push_back(out);
                let input = *emptied.next().expect("an input per output");
                self.spares.push(input);
            } else {
                self.spares.push(out);
            }
        }
        for &input in emptied {
            self.release(input, victim);
        }
        self.clean_passes += 1;
        Some((victim, *freed))
    }

    /// Gives up a pass under `-M`: its inputs return to the front of the victim's queue, in order.
    fn abandon(&mut self, pass: Pass) {
        for &slot in pass.inputs.iter().rev() {
            self.seg_mut(slot as usize).cleaning = false;
            self.pools[pass.victim].full.push_front(slot);
        }
        for &slot in &pass.outputs {
            debug_assert_eq!(self.seg(slot as usize).used, 0);
            self.spares.push(slot);
        }
    }

    /// Bytes left in the fuller of `pool`'s heads, main and probationary (0 without one).
    pub(super) fn min_head_room(&self, pool: usize) -> usize {
        let p = &self.pools[pool];
        [p.head, p.probation_head]
            .iter()
            .flatten()
            .map(|&slot| self.seg_bytes - self.seg(slot as usize).used)
            .min()
            .unwrap_or(0)
    }

    /// Bytes left in `pool`'s head segment (0 without one).
    fn head_room(&self, pool: usize) -> usize {
        self.pools[pool]
            .head
            .map_or(0, |slot| self.seg_bytes - self.seg(slot as usize).used)
    }
}
