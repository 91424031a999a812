//! `mrcache sim --policy oracle`: the dynamic oracle runs beside the fixed upper bound from one first
//! pass, both reports carry the model's miss ratio, and bad specs or combinations are refused with
//! the flag and the key named.

use std::process::{Command, Output};

fn sim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mrcache"))
        .arg("sim")
        .args(args)
        .output()
        .expect("run mrcache")
}

#[test]
fn oracle_beside_the_upper_bound() {
    let out = sim(&[
        "--workload",
        "zipf:objects=20000,requests=60000,value_size=100-3000",
        "--memory",
        "8MiB",
        "--policy",
        "upper-bound,oracle:window=10000,horizon=2",
        "--window-requests",
        "20000",
        "--json",
        // The bounds plan slab classes: the slab layout, memcached's accounting, as recorded.
        "--memcached-defaults",
    ]);
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].contains("\"policy\":\"upper-bound\""),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("\"policy\":\"oracle:window=10000,horizon=2\""),
        "{}",
        lines[1]
    );
    for line in lines {
        assert!(line.contains("\"model_miss_ratio\":0."), "{line}");
    }
}

#[test]
fn bad_oracle_specs_are_refused() {
    let refused = |args: &[&str], wanted: &str| {
        let out = sim(args);
        assert!(!out.status.success(), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(wanted), "{args:?}: {stderr}");
    };
    let small = [
        "--workload",
        "zipf:objects=1000,requests=2000",
        "--memory",
        "4MiB",
        "--memcached-defaults",
    ];
    refused(
        &[&small[..], &["--policy", "oracle:window=0"]].concat(),
        "window",
    );
    refused(
        &[&small[..], &["--policy", "oracle:step=5"]].concat(),
        "step",
    );
    refused(
        &[
            &small[..],
            &[
                "--policy",
                "oracle",
                "--tenant-policy",
                "static",
                "--tenant",
                "1",
            ],
        ]
        .concat(),
        "oracle",
    );
}
