//! `mrcache bench`: load-test memcached-protocol servers with `mrcache-loadgen` and print its report.

use mrcache_loadgen::BenchArgs;

pub fn run(args: &BenchArgs) -> Result<(), String> {
    let report = mrcache_loadgen::run(args, &mut std::io::stderr()).map_err(|e| e.to_string())?;
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
