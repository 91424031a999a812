//! Stand-alone driver for the load generator, for development before `mrcache bench` wires it:
//! `cargo run --release -p mrcache-loadgen --example bench -- --server 127.0.0.1:11211`.

use clap::Parser;
use mrcache_loadgen::BenchArgs;

#[derive(Parser)]
#[command(
    name = "bench",
    about = "Load a memcached-compatible server and measure latency"
)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

fn main() {
    let cli = Cli::parse();
    match mrcache_loadgen::run(&cli.args, &mut std::io::stderr()) {
        Ok(report) if cli.args.json => match serde_json::to_string_pretty(&report) {
            Ok(json) => println!("{json}"),
            Err(e) => {
                eprintln!("cannot encode report: {e}");
                std::process::exit(1);
            }
        },
        Ok(report) => print!("{report}"),
        Err(e) => {
            eprintln!("bench: {e}");
            std::process::exit(1);
        }
    }
}
