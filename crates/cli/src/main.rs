//! `mrcache`: the offline tool. Each subcommand lives in its own module and owns its arguments;
//! `main` only parses, dispatches, and turns an error into a message and a non-zero exit.
//! Later subcommands (`trace`) slot into [`Command`].
#![forbid(unsafe_code)]

mod bench;
mod figures;
mod input;
mod latency_plot;
mod mrc;
mod plan;
mod plot;
mod progress;
mod sim;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "mrcache",
    version,
    about = "Simulate, profile, plan and benchmark mrcache caches"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure the LRU miss-ratio curve of a trace, exactly or by sampling, as CSV (and a plot).
    Mrc(mrc::MrcArgs),
    /// Replay a workload or trace through the real engine under a logical clock (one size or a sweep).
    Sim(Box<sim::SimArgs>),
    /// Predict miss ratios at many memory sizes from one pass: memcached's default (LAMA eq. 6) and the
    /// optimal allocation (the theoretical upper bound).
    ///
    /// The pass attributes every request to its slab class (memcached's item accounting) and measures each
    /// class's exact LRU stack distances and footprint. Then, per memory size: `default` is memcached's
    /// demand-filled allocation as LAMA eq. 6 predicts it (the pages each class has asked for when memory
    /// fills) with its miss ratio (eq. 3); `upper_bound` is the allocation with the fewest misses (LAMA
    /// Algorithm 1 over the exact curves), the bound no slab policy can beat. Miss ratios are GET misses
    /// over GETs, over the whole run and over its steady state (the last half of the --window-requests
    /// windows, as `mrcache sim` reports it); --allocation prints pages per class (class:pages).
    ///
    /// With --server HOST:PORT ... it plans a consistent-hashing cluster from the curves its live nodes
    /// report instead: the hit ratio at other total memory sizes (--memory) and node counts (--nodes), the
    /// memory a --target-hit-ratio needs, and a --plot (the model is under --server).
    Plan(plan::PlanArgs),
    /// Load-test memcached-protocol servers: closed or open loop, latency percentiles, QoS search.
    Bench(bench::BenchCmd),
    /// Draw latency against achieved throughput from saved `mrcache bench --scan --json` reports, one
    /// pair of lines per report (e.g. memcached and mrcached under the same load).
    LatencyPlot(latency_plot::LatencyPlotArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Mrc(args) => mrc::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Plan(args) => plan::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::LatencyPlot(args) => latency_plot::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mrcache: {message}");
            ExitCode::FAILURE
        }
    }
}
