//! `mrcache sim`'s defaults are the server's (mrcached with no flags): the log layout, compact item
//! accounting, lama-mr when the slab layout is chosen, the server's profiler share and mpart for
//! tenants; `--memcached-defaults` gives the simulator's former ones (memcached's model) in one flag,
//! and flags given override either. Each check compares a default with the same run spelt out: the
//! simulator is deterministic, so equal settings give byte-equal reports.

use std::process::Command;

/// Variable value sizes (so the accounting matters) in a cache small enough to evict.
const WORKLOAD: &[&str] = &[
    "--workload",
    "zipf:objects=20000,requests=60000,value_size=100-3000",
    "--memory",
    "8MiB",
    "--window-requests",
    "20000",
    "--json",
    "-q",
];

/// The run's stdout, or its stderr as the error.
fn sim(args: &[&str]) -> Result<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_mrcache"))
        .arg("sim")
        .args(WORKLOAD)
        .args(args)
        .output()
        .expect("run mrcache");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8(out.stderr).unwrap())
    }
}

#[test]
fn the_default_is_the_servers() {
    let default = sim(&[]).unwrap();
    assert!(default.contains("\"policy\":\"log\""), "{default}");
    let spelt = sim(&[
        "--layout",
        "log",
        "--item-accounting",
        "compact",
        "--mrc-memory-share",
        "0.01",
    ]);
    assert_eq!(default, spelt.unwrap());
    // On the slab layout, the server's slab policy with the server's curves' memory.
    let slab = sim(&["--layout", "slab"]).unwrap();
    assert!(slab.contains("\"policy\":\"lama-mr\""), "{slab}");
    let spelt = sim(&[
        "--layout",
        "slab",
        "--policy",
        "lama-mr",
        "--item-accounting",
        "compact",
        "--mrc-memory-share",
        "0.01",
    ]);
    assert_eq!(slab, spelt.unwrap());
}

#[test]
fn memcached_defaults_are_the_former_ones_and_flags_override_them() {
    let former = sim(&["--memcached-defaults"]).unwrap();
    assert!(former.contains("\"policy\":\"memcached\""), "{former}");
    let spelt = [
        "--layout",
        "slab",
        "--policy",
        "memcached",
        "--item-accounting",
        "memcached",
        "--mrc-memory-share",
        "0.1",
    ];
    assert_eq!(former, sim(&spelt).unwrap());
    let lama = sim(&["--memcached-defaults", "--policy", "lama-mr"]).unwrap();
    assert_eq!(
        lama,
        sim(&[&spelt[..2], &["--policy", "lama-mr"], &spelt[4..]].concat()).unwrap()
    );
    let log = sim(&["--memcached-defaults", "--layout", "log"]).unwrap();
    assert_eq!(
        log,
        sim(&["--layout", "log", "--item-accounting", "memcached"]).unwrap()
    );
    let compact = sim(&["--memcached-defaults", "--item-accounting", "compact"]).unwrap();
    assert_eq!(
        compact,
        sim(&[&spelt[..4], &["--item-accounting", "compact"], &spelt[6..]].concat()).unwrap()
    );
    assert_ne!(compact, former, "the accounting given counts");
}

#[test]
fn a_slab_policy_without_a_layout_names_the_fix() {
    let err = sim(&["--policy", "lama-mr"]).unwrap_err();
    assert!(
        err.contains("--layout slab") && err.contains("--memcached-defaults"),
        "{err}"
    );
    // Where the layout is given, or the preset's is slab, the policy runs.
    assert!(sim(&["--policy", "psa", "--layout", "slab,log"]).is_ok());
    assert!(sim(&["--policy", "psa", "--memcached-defaults"]).is_ok());
}

#[test]
fn tenants_without_an_arbiter_get_the_servers() {
    let tenants = ["--tenant", "0:initial=4MiB", "--tenant", "1:initial=4MiB"];
    let default = sim(&tenants).unwrap();
    assert!(default.contains("\"tenant_policy\":\"mpart"), "{default}");
    let named = sim(&[&tenants[..], &["--tenant-policy", "mpart"]].concat()).unwrap();
    assert_eq!(default, named);
    let err = sim(&[&tenants[..], &["--memcached-defaults"]].concat()).unwrap_err();
    assert!(err.contains("--tenant needs --tenant-policy"), "{err}");
}
