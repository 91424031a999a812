//! Progress of long runs (`sim`, `mrc`, `bench`) on stderr: a bar with rate and ETA when stderr is a
//! terminal, nothing when it is not (piped, redirected to a file) or with `--quiet`.
//!
//! Progress is the CLI's business: the simulator, the profilers and the engine only see an iterator
//! ([`Progress::track`] wraps the request stream and counts what it yields) and the load generator
//! reports through its [`mrcache_loadgen::Progress`] hook. The bar's length is the requests the run
//! will replay when that is known (synthetic workloads say how many they make; an uncompressed binary
//! trace has one record per fixed number of bytes), times the passes over them; otherwise it is a
//! spinner with the count and the rate. Counting costs one add per request; the bar is touched once
//! every [`BATCH`] requests.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use indicatif::{HumanCount, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use mrcache_workload::open_trace;

use crate::input::{SourceArgs, TraceErrorSlot};

/// Requests counted locally before the bar is told.
const BATCH: u64 = 4096;
/// How often the bar redraws.
const REFRESH: Duration = Duration::from_millis(200);

/// Whether progress is drawn: stderr is a terminal and `--quiet` was not given.
pub fn wanted(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A bar (or spinner) counting requests over one or more passes.
pub struct Progress {
    bar: ProgressBar,
    /// Passes over the request stream the run makes (each [`track`](Progress::track) is one).
    passes: u64,
    /// Requests of one pass, when known before the first stream is made.
    per_pass: Option<u64>,
}

impl Progress {
    /// A bar for `passes` passes over a stream of `per_pass` requests (`None`: learnt from the first
    /// stream's size hint, or unknown), labelled `what`; hidden unless `shown`.
    pub fn requests(shown: bool, what: &str, passes: u64, per_pass: Option<u64>) -> Progress {
        let bar = if shown {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        bar.set_message(what.to_string());
        let progress = Progress {
            bar,
            passes: passes.max(1),
            per_pass,
        };
        if let Some(n) = per_pass {
            progress.set_length(n);
        } else {
            progress.bar.set_style(spinner_style());
        }
        if shown {
            progress.bar.enable_steady_tick(REFRESH);
        }
        progress
    }

    fn set_length(&self, per_pass: u64) {
        self.bar.set_length(per_pass.saturating_mul(self.passes));
        self.bar.set_style(bar_style());
    }

    /// Counts the requests `stream` yields on this bar. The first stream with a known length (an
    /// exact upper size hint) sets the bar's length, when it was not known before.
    pub fn track<I: Iterator>(&mut self, stream: I) -> Counted<I> {
        if self.per_pass.is_none() {
            if let (_, Some(n)) = stream.size_hint() {
                self.per_pass = Some(n as u64);
                self.set_length(n as u64);
            }
        }
        Counted {
            inner: stream,
            bar: self.bar.clone(),
            pending: 0,
        }
    }

    /// A handle that counts on this bar from other threads (a sweep's workers).
    pub fn counter(&self) -> ProgressBar {
        self.bar.clone()
    }

    /// Runs `f` with the bar hidden (to print a result on the terminal it shares).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Clears the bar (the run's output follows on stdout).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if !self.bar.is_finished() {
            self.bar.finish_and_clear();
        }
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{msg} [{wide_bar}] {percent:>3}% {human_pos}/{human_len} requests, {rate}, ETA {eta}",
    )
    .expect("a valid template")
    .with_key("rate", rate)
    .progress_chars("=> ")
}

fn spinner_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg}: {human_pos} requests, {rate}, {elapsed}")
        .expect("a valid template")
        .with_key("rate", rate)
}

/// Requests a second, as a whole number with thousands separators.
fn rate(state: &ProgressState, out: &mut dyn std::fmt::Write) {
    let _ = write!(out, "{}/s", HumanCount(state.per_sec() as u64));
}

/// An iterator that counts what it yields on a bar, [`BATCH`] at a time (the rest when dropped).
pub struct Counted<I> {
    inner: I,
    bar: ProgressBar,
    pending: u64,
}

impl<I> Counted<I> {
    /// Wraps `inner`, counting on `bar` (for streams made away from the [`Progress`], e.g. on a
    /// sweep's worker threads).
    pub fn on(bar: ProgressBar, inner: I) -> Counted<I> {
        Counted {
            inner,
            bar,
            pending: 0,
        }
    }
}

impl<I: Iterator> Iterator for Counted<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        let item = self.inner.next();
        if item.is_some() {
            self.pending += 1;
            if self.pending == BATCH {
                self.bar.inc(BATCH);
                self.pending = 0;
            }
        }
        item
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<I> Drop for Counted<I> {
    fn drop(&mut self) {
        self.bar.inc(self.pending);
    }
}

/// Requests one pass over `source` replays, when known up front: a synthetic workload's count (its
/// generator's exact size hint), or an uncompressed binary trace's records.
pub fn source_requests(source: &SourceArgs) -> Option<u64> {
    if source.workload.is_some() {
        let stream = source.stream(&TraceErrorSlot::default()).ok()?;
        return stream.size_hint().1.map(|n| n as u64);
    }
    let path = source.trace.as_deref()?;
    let format = open_trace(path, source.format.parse().ok()?).ok()?.format();
    trace_requests(path, format.record_bytes())
}

/// Requests in an uncompressed trace of fixed-size records: its length over the record size. `None`
/// for compressed files (their decompressed length is not known up front) and text formats.
pub fn trace_requests(path: &Path, record_bytes: Option<usize>) -> Option<u64> {
    let record = record_bytes? as u64;
    let ext = path.extension()?.to_str()?;
    if ["gz", "xz", "zst"].contains(&ext) {
        return None;
    }
    let len = std::fs::metadata(path).ok()?.len();
    (record > 0).then(|| len / record)
}

/// `mrcache bench`'s progress: one bar per phase, its length the phase's planned time, its message
/// the last second's throughput and latency line.
pub struct BenchBar {
    bar: Option<ProgressBar>,
    shown: bool,
}

impl BenchBar {
    pub fn new(shown: bool) -> BenchBar {
        BenchBar { bar: None, shown }
    }

    fn close(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for BenchBar {
    fn drop(&mut self) {
        self.close();
    }
}

impl mrcache_loadgen::Progress for BenchBar {
    fn phase(&mut self, label: &str, planned: Duration) {
        self.close();
        if !self.shown {
            return;
        }
        let bar = ProgressBar::with_draw_target(
            Some(planned.as_millis() as u64),
            ProgressDrawTarget::stderr(),
        );
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{wide_bar}] ETA {eta}\n{msg}")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(REFRESH);
        self.bar = Some(bar);
    }

    fn tick(&mut self, elapsed: Duration, line: &str) {
        if let Some(bar) = &self.bar {
            bar.set_position(elapsed.as_millis() as u64);
            bar.set_message(line.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_counts_every_item_and_keeps_the_size_hint() {
        let mut progress = Progress::requests(false, "test", 2, None);
        let stream = progress.track(0..10_000u32);
        assert_eq!(stream.size_hint(), (10_000, Some(10_000)));
        assert_eq!(stream.count(), 10_000);
        let bar = progress.counter();
        assert_eq!(bar.length(), Some(20_000), "two passes of 10000");
        assert_eq!(bar.position(), 10_000);
        let partial: Vec<u32> = Counted::on(bar.clone(), 0..5u32).collect();
        assert_eq!(partial.len(), 5);
        assert_eq!(bar.position(), 10_005);
    }

    #[test]
    fn only_uncompressed_fixed_record_traces_have_a_known_length() {
        let dir = std::env::temp_dir().join(format!("mrcache-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("t.u32be");
        std::fs::write(&plain, [0u8; 40]).unwrap();
        assert_eq!(trace_requests(&plain, Some(4)), Some(10));
        assert_eq!(trace_requests(&plain, None), None);
        let packed = dir.join("t.u32be.zst");
        std::fs::write(&packed, [0u8; 40]).unwrap();
        assert_eq!(trace_requests(&packed, Some(4)), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
