//! Long runs draw progress on stderr only when it is a terminal: with stderr piped (as here, and in
//! scripts and CI logs) `sim` and `mrc` write nothing there, with or without `--quiet`, and their
//! output on stdout is whole.

use std::process::Command;

fn run(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mrcache"))
        .args(args)
        .output()
        .expect("run mrcache");
    assert!(out.status.success(), "{args:?}: {out:?}");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn no_progress_when_stderr_is_piped() {
    let sim = [
        "sim",
        "--workload",
        "etc:requests=20000",
        "--memory",
        "4MiB",
    ];
    for quiet in [false, true] {
        let mut args = sim.to_vec();
        if quiet {
            args.push("--quiet");
        }
        let (stdout, stderr) = run(&args);
        assert!(stdout.contains("requests 20000"), "{stdout}");
        assert_eq!(stderr, "", "progress on a pipe");
    }
    let dir = std::env::temp_dir().join(format!("mrcache-progress-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.u32be");
    let records: Vec<u8> = (0..5000u32).flat_map(|i| (i % 700).to_be_bytes()).collect();
    std::fs::write(&trace, records).unwrap();
    let (stdout, stderr) = run(&["mrc", "--trace", trace.to_str().unwrap(), "-q"]);
    assert!(stdout.contains("requests=5000"), "{stdout}");
    assert_eq!(stderr, "");
    let _ = std::fs::remove_dir_all(&dir);
}
