//! What a worker measures: latency histograms, operation and hit counters, errors, per tenant.
//!
//! Each worker owns one [`RunStats`] and updates it without locks; the runner merges them when
//! the phase ends. Only requests *intended* inside the measured window enter the histograms and
//! counters; every completion (warm-up included) feeds the one-second progress [`Tick`].

use std::time::Instant;

use crate::conn::{ErrorReply, Pending, PendingOp};
use crate::histo::{LatencyHistogram, OpHistograms};
use crate::report::ErrorCounts;
use crate::worker::Window;
use crate::OpKind;

/// Per-tenant counters.
#[derive(Clone, Debug, Default)]
pub(crate) struct TenantStats {
    pub ops: u64,
    pub key_hits: u64,
    pub key_misses: u64,
    pub latency: LatencyHistogram,
}

/// What one worker measured; merged across workers at the end of a phase.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunStats {
    pub latency: OpHistograms,
    /// Intended-to-actual send delay: the client's own contribution to latency.
    pub send_delay: LatencyHistogram,
    pub ops: [u64; 3],
    pub lookaside_sets: u64,
    pub key_hits: u64,
    pub key_misses: u64,
    pub errors: ErrorCounts,
    pub last_error: Option<String>,
    pub tenants: Vec<TenantStats>,
    /// CPU time the load threads spent inside the measured window, and how many threads measured
    /// it: the load generator's own busy share, which says whether the client limited the run.
    pub client_cpu_secs: f64,
    pub client_threads: usize,
    /// Completions since the last progress tick, measured or not.
    pub tick_ops: u64,
    pub tick_latency: LatencyHistogram,
}

impl RunStats {
    pub fn new(tenants: usize) -> Self {
        RunStats {
            tenants: vec![TenantStats::default(); tenants],
            ..Default::default()
        }
    }

    /// Accounts a completed request.
    pub fn complete(&mut self, p: Pending, tenant: usize, now: Instant, window: &Window) {
        let latency_us = now.saturating_duration_since(p.intended).as_micros() as u64;
        self.tick_ops += 1;
        self.tick_latency.record_us(latency_us);
        if !window.is_measured(p.intended) {
            return;
        }
        let op = match p.op {
            PendingOp::Op(op) => op,
            PendingOp::LookasideSet => {
                self.lookaside_sets += 1;
                OpKind::Set
            }
            PendingOp::Auth => return,
        };
        self.ops[op as usize] += 1;
        self.latency.record(op, latency_us);
        self.send_delay
            .record_us(p.sent.saturating_duration_since(p.intended).as_micros() as u64);
        let t = &mut self.tenants[tenant];
        t.ops += 1;
        t.latency.record_us(latency_us);
        if op != OpKind::Set {
            let misses = u64::from(p.keys.saturating_sub(p.hits));
            self.key_hits += u64::from(p.hits);
            self.key_misses += misses;
            t.key_hits += u64::from(p.hits);
            t.key_misses += misses;
        }
    }

    pub fn count_error_reply(&mut self, reply: &ErrorReply<'_>) {
        match reply {
            ErrorReply::UnknownCommand => self.errors.unknown_command += 1,
            ErrorReply::Client(m) => {
                self.errors.client_errors += 1;
                self.last_error = Some(format!("CLIENT_ERROR {m}"));
            }
            ErrorReply::Server(m) => {
                self.errors.server_errors += 1;
                self.last_error = Some(format!("SERVER_ERROR {m}"));
            }
        }
    }

    pub fn merge(&mut self, other: &RunStats) {
        self.latency.merge(&other.latency);
        self.send_delay.merge(&other.send_delay);
        for (a, b) in self.ops.iter_mut().zip(other.ops) {
            *a += b;
        }
        self.lookaside_sets += other.lookaside_sets;
        self.client_cpu_secs += other.client_cpu_secs;
        self.client_threads += other.client_threads;
        self.key_hits += other.key_hits;
        self.key_misses += other.key_misses;
        self.errors.add(&other.errors);
        if other.last_error.is_some() {
            self.last_error.clone_from(&other.last_error);
        }
        for (a, b) in self.tenants.iter_mut().zip(&other.tenants) {
            a.ops += b.ops;
            a.key_hits += b.key_hits;
            a.key_misses += b.key_misses;
            a.latency.merge(&b.latency);
        }
    }
}

/// Progress of one worker over one tick.
pub(crate) struct Tick {
    pub ops: u64,
    pub latency: LatencyHistogram,
    /// Errors counted since the previous tick.
    pub errors: u64,
}
