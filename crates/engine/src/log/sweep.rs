//! Sweeps: the cleaning of the clock ranking and of the probationary queue (S3-FIFO, Yang et al.,
//! SOSP'23, "FIFO queues are all you need for cache eviction", in a log).
//!
//! A sweep takes a pool's oldest full segments one at a time and decides each live record by its own
//! access count as it reaches it, with no ranking among records: a record read since it was written
//! (on probation) or since the last sweep passed it (in the main queue) is moved to the pool's *tail*
//! segment, at the back of the main queue, its count one lower (leaving probation, zero): the clock's
//! second chance, and S3-FIFO's promotion to its main queue. Every other record is evicted at once,
//! into the ghost when it leaves probation, so that a key written again soon after enters the main
//! queue directly. Expired and flushed records are reclaimed as in a ranked pass.
//!
//! **Where survivors go.** In order: the room left in the pool's tail, the cleaner's spare (one
//! segment beside the page budget, shared with ranked passes), then the inputs this sweep has emptied,
//! oldest first. An input holds at most one segment of survivors, so by the time the spare is full the
//! first input is empty, and so on: the spare is the only memory a sweep needs beyond its pool's. (The
//! spare comes before emptied inputs: each target taken is one segment fewer the sweep can free, and
//! taking emptied inputs first left fewer to take, so more read items were evicted.)
//!
//! **When it ends.** After each input, if the inputs it emptied and did not write to outnumber the
//! spare it wrote to: one of them repays the spare, one is the segment the sweep frees, and any more
//! go back to the budget. Otherwise it takes another input (the next the pool's queues offer: the
//! probationary queue's, or the main queue's when it ranks by the clock), up to `MAX_INPUTS`. A new
//! target is taken only while the inputs it has not written to and those still to come can free a
//! segment (`sweep_target`); past that point a survivor that does not fit the target being written
//! is evicted, so every sweep frees a segment. Segments whose items were all read cost the most: up to
//! `MAX_INPUTS - 1` segments copied for the one freed.
//!
//! **Pace.** A sweep is due when a pool takes a cleaned segment or the last free one, and starts when
//! the fuller of that pool's two heads has a `SWEEP_START`-th of a segment left: it evicts as it goes,
//! and an eviction made early is a miss the cache had room to avoid (starting at once cost misses on
//! the shared ORM and web traces). It does `SWEEP_PACE` bytes of scanning and moving per byte
//! appended, more when what it may still have to do would not be done before that head is full
//! (`sweep_pace`). Whatever is left when the segment is needed is done then (`finish`).
//!
//! Invariants: the sweep's segments are listed once each: the tail it began with and its inputs
//! (`counted`: all counted in the victim, all marked `cleaning`), and the spare once written to
//! (`beside`: outside the budget); `empty` and `targets` are disjoint subsets of them; the input being
//! swept is never a target; a sweep never runs under `-M` (it evicts as it goes).

use std::collections::VecDeque;

use super::clean::Cleaning;
use super::{prefix_freq, LogShard};
use crate::config::Ranking;
use crate::Clock;

/// Reads the clock counts (S3-FIFO's two-bit counter): a record read more often survives this many
/// sweeps without another read.
pub(super) const CLOCK_MAX: u32 = 3;

/// A sweep starts when its asker's fuller head has a this-many-th of a segment left.
pub(super) const SWEEP_START: usize = 4;

/// Bytes of scanning and moving a sweep does per byte appended, at least.
const SWEEP_PACE: usize = 16;

/// Most inputs one sweep takes.
const MAX_INPUTS: usize = 8;

/// A sweep under way (see the module doc).
pub(super) struct Sweep {
    victim: usize,
    /// The pool whose next segment it frees: it paces itself to that pool's heads.
    asker: usize,
    /// The victim's segments it holds: the tail it began with (if any), then its inputs in order.
    counted: Vec<u32>,
    /// Index in `counted` of the input being swept, and the offset of its next record.
    at: usize,
    off: usize,
    /// The spare, once written to.
    beside: Vec<u32>,
    /// Segments written to, in order; the last is being written.
    targets: Vec<u32>,
    /// Inputs emptied and not (yet) written to, oldest first.
    empty: VecDeque<u32>,
    /// Inputs taken.
    inputs: usize,
    done: bool,
}

impl Sweep {
    pub(super) fn victim(&self) -> usize {
        self.victim
    }

    /// Its segments counted in the victim (`counted`), and the spare it wrote to (`beside`).
    pub(super) fn segments(&self) -> (&[u32], &[u32]) {
        (&self.counted, &self.beside)
    }

    /// Index in `counted` of its first input (after the tail it began with, if any).
    fn first_input(&self) -> usize {
        self.counted.len() - self.inputs
    }
}

impl LogShard {
    /// Starts a sweep over `victim`: false when it has no input for one.
    pub(super) fn begin_sweep(&mut self, victim: usize, asker: usize) -> bool {
        let tail = self.pools[victim].tail.take();
        let counted: Vec<u32> = tail.into_iter().collect();
        let mut sweep = Sweep {
            victim,
            asker,
            at: counted.len(),
            off: 0,
            targets: counted.clone(),
            counted,
            beside: Vec::new(),
            empty: VecDeque::new(),
            inputs: 0,
            done: false,
        };
        if !self.take_input(&mut sweep) {
            self.pools[victim].tail = tail;
            return false;
        }
        if let Some(t) = tail {
            self.seg_mut(t as usize).cleaning = true;
        }
        if self.spares.is_empty() {
            let slot = self.install_slot(self.new_seg(victim));
            self.spares.push(slot);
        }
        self.pass = Some(Cleaning::Sweep(sweep));
        true
    }

    /// The full segments a sweep over `pool` may take: its probationary queue's, and its main
    /// queue's under the clock (a ranked pool's main queue is cleaned by ranked passes).
    fn sweepable(&self, pool: usize) -> (usize, usize) {
        let p = &self.pools[pool];
        let main = if p.ranking == Ranking::Clock {
            p.full.len()
        } else {
            0
        };
        (p.probation.len(), main)
    }

    /// Takes the sweep's next input: from the queue `queue_to_clean` names if the sweep may take it,
    /// else the other. False when there is none or the sweep has its `MAX_INPUTS`.
    fn take_input(&mut self, sweep: &mut Sweep) -> bool {
        let victim = sweep.victim;
        let (probation_segments, main_segments) = self.sweepable(victim);
        let (may_probation, may_main) = (probation_segments > 0, main_segments > 0);
        if sweep.inputs == MAX_INPUTS || !(may_probation || may_main) {
            return false;
        }
        let preferred = self.queue_to_clean(victim).0;
        let probation = if preferred { may_probation } else { !may_main };
        let p = &mut self.pools[victim];
        let slot = if probation {
            p.probation.pop_front()
        } else {
            p.full.pop_front()
        }
        .expect("a queue the sweep may take from is not empty");
        self.seg_mut(slot as usize).cleaning = true;
        sweep.counted.push(slot);
        sweep.inputs += 1;
        true
    }

    /// Inputs the sweep could still take after the one it is on: at most `MAX_INPUTS` in all, and
    /// no more than the queues it may take from hold. Queues only grow between steps (heads join
    /// them), so this never falls but as the sweep takes inputs.
    fn inputs_to_come(&self, sweep: &Sweep) -> usize {
        let (probation, main) = self.sweepable(sweep.victim);
        (MAX_INPUTS - sweep.inputs).min(probation + main)
    }

    /// Sweeps the records owed for `appended` bytes (`None`: all that is left), then puts the sweep
    /// back as the cleaning under way.
    pub(super) fn advance_sweep(
        &mut self,
        mut sweep: Sweep,
        appended: Option<usize>,
        clock: Clock,
    ) {
        let mut budget = appended.map_or(usize::MAX, |a| a.saturating_mul(self.sweep_pace(&sweep)));
        while !sweep.done && budget > 0 {
            let slot = sweep.counted[sweep.at];
            let used = self.seg(slot as usize).used;
            while sweep.off < used && budget > 0 {
                let rec = self.sweep_record(&mut sweep, slot, clock);
                sweep.off += rec;
                budget = budget.saturating_sub(rec);
            }
            if sweep.off < used {
                break;
            }
            debug_assert_eq!(self.seg(slot as usize).items, 0, "a swept input is empty");
            sweep.empty.push_back(slot);
            sweep.at += 1;
            sweep.off = 0;
            let freed = sweep.empty.len() > sweep.beside.len();
            if freed || !self.take_input(&mut sweep) {
                sweep.done = true;
            }
        }
        self.pass = Some(Cleaning::Sweep(sweep));
    }

    /// Bytes of work per byte appended: `SWEEP_PACE`, or more when what may be left (the inputs it
    /// may still take, scanned and copied) would not be done before the asker's fuller head is, so
    /// that the asker seldom waits for a sweep's rest (`finish_sweep`).
    fn sweep_pace(&self, sweep: &Sweep) -> usize {
        let room = self.min_head_room(sweep.asker).max(1);
        let left = (MAX_INPUTS + 1 - (sweep.at + 1 - sweep.first_input()).min(MAX_INPUTS))
            * 2
            * self.seg_bytes;
        SWEEP_PACE.max(left.div_ceil(room))
    }

    /// Decides the record at the sweep's offset in input `slot`: reclaims it if dead, moves it if it
    /// was read and has a target, else evicts it. Returns its length.
    fn sweep_record(&mut self, sweep: &mut Sweep, slot: u32, clock: Clock) -> usize {
        let (rec, live) = self.read_record(sweep.victim, slot, sweep.off, clock);
        let Some((h, hash, p)) = live else {
            return rec;
        };
        let probation = self.seg(slot as usize).probation;
        if prefix_freq(p) > 0 {
            if let Some(target) = self.sweep_target(sweep, rec) {
                let aged = |f: u32| if probation { 0 } else { f.min(CLOCK_MAX) - 1 };
                self.relocate(h, hash, rec, target, aged);
                return rec;
            }
        }
        let ghost = probation || self.probation_share == 0.0;
        self.evict_live(h, hash, sweep.victim, ghost, clock);
        rec
    }

    /// The segment a survivor of `rec` bytes is moved to: the one being written if it has room, else
    /// the next, an emptied input or else the spare, if the sweep can still free a segment after
    /// taking it (`None`: the survivor is evicted).
    ///
    /// What keeps that promise: were the sweep to write no new target from now on, the inputs it
    /// leaves unwritten (the emptied ones, the one it is on, those to come) must outnumber the spare
    /// it wrote, so that one repays the spare and one is freed. A new target is taken only if that
    /// still holds after taking it.
    fn sweep_target(&mut self, sweep: &mut Sweep, rec: usize) -> Option<u32> {
        if let Some(&t) = sweep.targets.last() {
            if self.seg(t as usize).used + rec <= self.seg_bytes {
                return Some(t);
            }
        }
        // The spare first (as long as it is unused), then emptied inputs.
        let to_spare = sweep.beside.is_empty() && !self.spares.is_empty();
        if !to_spare && sweep.empty.is_empty() {
            return None;
        }
        let (unwritten, spare) = if to_spare {
            (sweep.empty.len(), sweep.beside.len() + 1)
        } else {
            (sweep.empty.len() - 1, sweep.beside.len())
        };
        if unwritten + 1 + self.inputs_to_come(sweep) <= spare {
            return None;
        }
        let next = if to_spare {
            let spare = self.spares.pop().expect("a spare");
            sweep.beside.push(spare);
            spare
        } else {
            sweep.empty.pop_front().expect("an emptied input")
        };
        let seg = self.seg_mut(next as usize);
        debug_assert_eq!(seg.items, 0, "a target starts empty");
        seg.used = 0;
        seg.live = 0;
        seg.pool = sweep.victim;
        seg.probation = false;
        sweep.targets.push(next);
        Some(next)
    }

    /// Completes the sweep: the rest of its inputs; its targets join the victim's main queue (the
    /// last as its tail), an emptied input repays the spare, one is returned (still counted in the
    /// victim), and any more go back to the budget. `None` for the segment when it freed none.
    pub(super) fn finish_sweep(&mut self, sweep: Sweep, clock: Clock) -> Option<(usize, u32)> {
        self.advance_sweep(sweep, None, clock);
        let Some(Cleaning::Sweep(sweep)) = self.pass.take() else {
            unreachable!("advance_sweep puts the sweep back");
        };
        let victim = sweep.victim;
        for &slot in &sweep.counted {
            self.seg_mut(slot as usize).cleaning = false;
        }
        for &slot in &sweep.targets {
            let seg = self.seg_mut(slot as usize);
            seg.born = clock.now;
            seg.probation = false;
        }
        if let Some((&last, rest)) = sweep.targets.split_last() {
            let p = &mut self.pools[victim];
            p.full.extend(rest);
            p.tail = Some(last);
        }
        let mut emptied: Vec<u32> = sweep.empty.into_iter().collect();
        for &slot in &emptied {
            let seg = self.seg_mut(slot as usize);
            (seg.used, seg.live, seg.probation) = (0, 0, false);
        }
        if !sweep.beside.is_empty() {
            // The spare is the victim's now; an emptied input takes its place beside the budget.
            let input = emptied.remove(0);
            self.spares.push(input);
        }
        let freed = emptied.pop();
        for slot in emptied {
            self.release(slot, victim);
        }
        self.clean_passes += 1;
        freed.map(|slot| (victim, slot))
    }
}
