//! `mrcache`: the offline tool. Each subcommand lives in its own module and owns its arguments;
//! `main` only parses, dispatches, and turns an error into a message and a non-zero exit.
//! Later subcommands (`plan`, `trace`) slot into [`Command`].

mod bench;
mod figures;
mod mrc;
mod plot;
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
    Sim(sim::SimArgs),
    /// Load-test memcached-protocol servers: closed or open loop, latency percentiles, QoS search.
    Bench(mrcache_loadgen::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Mrc(args) => mrc::run(&args),
        Command::Sim(args) => sim::run(&args),
        Command::Bench(args) => bench::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mrcache: {message}");
            ExitCode::FAILURE
        }
    }
}
