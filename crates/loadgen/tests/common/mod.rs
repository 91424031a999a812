//! What the loadgen integration tests share: `mrcache bench` options parsed through clap as the CLI
//! parses them, and a run of them against one server.

use clap::Parser;
use mrcache_loadgen::{BenchArgs, BenchError, Report};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

/// Runs `mrcache bench --server ADDR --duration DURATION --warmup WARMUP OPTIONS...`; returns the
/// report (or why the run failed) and the progress lines it wrote.
pub fn bench(
    addr: &str,
    duration: &str,
    warmup: &str,
    options: &[&str],
) -> (Result<Report, BenchError>, String) {
    let mut argv = vec![
        "bench",
        "--server",
        addr,
        "--duration",
        duration,
        "--warmup",
        warmup,
    ];
    argv.extend(options);
    let cli = Cli::try_parse_from(argv).expect("valid options");
    let mut progress = Vec::new();
    let report = mrcache_loadgen::run(&cli.args, &mut progress);
    (
        report,
        String::from_utf8(progress).expect("progress is text"),
    )
}
