//! `mrcache`: the offline tool. Each subcommand lives in its own module and owns its arguments;
//! `main` only parses, dispatches, and turns an error into a message and a non-zero exit.
//! Later subcommands (`sim`, `plan`, `bench`, `trace`) slot into [`Command`].

mod mrc;
mod plot;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Mrc(args) => mrc::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mrcache: {message}");
            ExitCode::FAILURE
        }
    }
}
