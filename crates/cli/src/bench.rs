//! `mrcache bench`: load-test memcached-protocol servers with `mrcache-loadgen` and print its report.
//! While it runs, each phase draws a bar with its ETA and the last second's throughput and latency on
//! stderr when that is a terminal (nothing when piped, or with `--quiet`).

use clap::Args;
use mrcache_loadgen::BenchArgs;

use crate::progress::{self, BenchBar};

/// The load generator's options, and the CLI's own.
#[derive(Debug, Args)]
pub struct BenchCmd {
    #[command(flatten)]
    pub bench: BenchArgs,
    /// No progress bar (it is drawn on stderr only when stderr is a terminal).
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(cmd: &BenchCmd) -> Result<(), String> {
    let args = &cmd.bench;
    let mut bar = BenchBar::new(progress::wanted(cmd.quiet));
    let report = mrcache_loadgen::run_with_progress(args, &mut bar).map_err(|e| e.to_string())?;
    drop(bar);
    if args.json {
        println!(
            "{}",
            serde_json::to_string(&report).map_err(|e| e.to_string())?
        );
    } else {
        println!("{report}");
    }
    Ok(())
}
