//! How long does this machine stop the load generator on its own? A platform hiccup meter.
//!
//! `cargo run --release -p mrcache-loadgen --example hiccups -- [seconds]` (default 10; pin it with
//! `taskset -c N` to the core the load generator uses).
//!
//! The thread reads the monotonic clock in a tight loop, doing nothing else, and counts the gaps between
//! consecutive readings. A gap is time the thread was not running: an interrupt, the kernel's own work,
//! another task, or (on a virtual machine) the hypervisor running something else on the physical core.
//! No server or network is involved, so whatever tail it shows is a floor under every latency percentile
//! `mrcache bench` can measure on this core, whichever server it drives (docs/results.md §4).

use std::time::{Duration, Instant};

/// Gap thresholds counted, in microseconds.
const THRESHOLDS_US: [u64; 6] = [10, 50, 100, 500, 1_000, 5_000];

fn main() {
    let secs: f64 = match std::env::args().nth(1).map(|s| s.parse()) {
        None => 10.0,
        Some(Ok(s)) if s > 0.0 && s <= 3600.0 => s,
        Some(_) => {
            eprintln!("usage: hiccups [SECONDS in (0, 3600]]");
            std::process::exit(64);
        }
    };
    let run_for = Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut prev = start;
    let mut counts = [0u64; THRESHOLDS_US.len()];
    let mut stalled = Duration::ZERO;
    let mut max = Duration::ZERO;
    let mut readings = 0u64;
    loop {
        let now = Instant::now();
        readings += 1;
        let gap = now - prev;
        prev = now;
        if gap.as_micros() as u64 >= THRESHOLDS_US[0] {
            stalled += gap;
            for (c, &t) in counts.iter_mut().zip(&THRESHOLDS_US) {
                if gap.as_micros() as u64 >= t {
                    *c += 1;
                }
            }
        }
        max = max.max(gap);
        if now - start >= run_for {
            break;
        }
    }
    let elapsed = prev - start;
    println!(
        "{:.1} s spinning, {readings} clock readings; time in gaps of 10 us or more: {:.3}%",
        elapsed.as_secs_f64(),
        100.0 * stalled.as_secs_f64() / elapsed.as_secs_f64()
    );
    for (c, t) in counts.iter().zip(THRESHOLDS_US) {
        println!(
            "  gaps >= {t:>5} us: {c:>8}  ({:.2}/s)",
            *c as f64 / elapsed.as_secs_f64()
        );
    }
    println!("  longest gap: {} us", max.as_micros());
}
