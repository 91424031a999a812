//! The exact LRU profiler against the shared reference curves, every trace, every printed point,
//! and the trace readers against every shared file and against bad input.
//!
//! The traces live in the shared folder beside the repository (`../shared/traces` from the
//! workspace root, or the folder `MRCACHE_TRACES` names). Without them these tests fail, saying
//! where they looked: a missing folder must not pass as a test run.

use std::io::Write;
use std::path::PathBuf;

use mrcache_profile::{AccessObserver, ExactLru, MrcProfiler, MrcQuery, SizeUnit};
use mrcache_workload::{open_trace, TraceFormat};

/// The shared traces folder; panics, naming it, when it is missing.
fn traces_dir() -> PathBuf {
    mrcache_workload::trace::shared_traces_dir().unwrap_or_else(|e| panic!("{e}"))
}

/// (trace file, reference name) for every reference curve.
const TRACES: [(&str, &str); 7] = [
    ("kv/cache2k-web07.trace.xz", "cache2k-web07"),
    ("kv/cache2k-web12.trace.xz", "cache2k-web12"),
    ("kv/cache2k-orm-busy.trace.xz", "cache2k-orm-busy"),
    ("kv/cache2k-orm-night.trace.xz", "cache2k-orm-night"),
    ("kv/corda_vaultservice.trace.gz", "corda-vaultservice"),
    ("block/cloudPhysicsIO.oracleGeneral.bin", "cloudPhysicsIO"),
    ("block/arc-OLTP.lis.zst", "arc-OLTP"),
];

/// One section of a reference file, the rows under the header that starts with `header`:
/// (cache size, miss ratio as printed).
fn reference_points(text: &str, header: &str) -> Vec<(u64, String)> {
    text.lines()
        .skip_while(|line| !line.starts_with(header))
        .skip(1)
        .take_while(|line| !line.starts_with('#'))
        .map(|line| {
            let mut cells = line.split(',');
            let size = cells.next().expect("size").parse().expect("size");
            let ratio = cells.next().expect("miss ratio").trim().to_owned();
            (size, ratio)
        })
        .collect()
}

/// The exact LRU curve of trace `file` at the sizes of one section (`header`, in `unit`) of reference
/// `name`: (size, computed miss ratio, the reference's printed miss ratio) at every printed size.
fn exact_against_reference(
    dir: &std::path::Path,
    file: &str,
    name: &str,
    header: &str,
    unit: SizeUnit,
) -> Vec<(u64, f64, String)> {
    let reference =
        std::fs::read_to_string(dir.join(format!("reference/{name}.lru-mrc.csv"))).unwrap();
    let expected = reference_points(&reference, header);
    assert!(
        expected.len() > 10,
        "{name}: reference has {} points",
        expected.len()
    );
    let mut profiler = ExactLru::new();
    for request in open_trace(&dir.join(file), TraceFormat::Auto).unwrap() {
        let request = request.unwrap();
        profiler.record(request.key, request.size);
    }
    let query = MrcQuery {
        unit,
        points_per_decade: 0,
        exact_sizes: expected.iter().map(|&(size, _)| size).collect(),
    };
    let curve = profiler.mrc(&query);
    assert_eq!(curve.points().len(), expected.len(), "{name}: points");
    curve
        .points()
        .iter()
        .zip(expected)
        .map(|(point, (size, ratio))| {
            assert_eq!(point.size, size, "{name}");
            (size, point.miss_ratio, ratio)
        })
        .collect()
}

#[test]
fn exact_lru_reproduces_every_reference_curve() {
    let dir = traces_dir();
    for (file, name) in TRACES {
        let points =
            exact_against_reference(&dir, file, name, "cache_size_objects", SizeUnit::Objects);
        for (size, miss_ratio, ratio) in points {
            assert_eq!(format!("{miss_ratio:.6}"), ratio, "{name} at {size}");
        }
    }
}

/// The byte-capacity section of cloudPhysicsIO's reference (the one trace with sizes): the miss ratio
/// of an LRU cache of so many bytes. Byte stack depths are kept in buckets of 0.1% relative width
/// (module notes of `mrcache_profile::exact`), so a size that falls inside a bucket may be off by the
/// requests in that bucket: at the printed sizes the largest difference is 0.000009, against the
/// reference's printed precision of 0.000001.
#[test]
fn exact_lru_reproduces_the_byte_capacity_reference_curve() {
    let dir = traces_dir();
    let points = exact_against_reference(
        &dir,
        "block/cloudPhysicsIO.oracleGeneral.bin",
        "cloudPhysicsIO",
        "cache_size_bytes",
        SizeUnit::Bytes,
    );
    let mut worst = 0f64;
    for (_, miss_ratio, ratio) in points {
        let want: f64 = ratio.parse().unwrap();
        worst = worst.max((miss_ratio - want).abs());
    }
    eprintln!("byte-capacity curve: largest difference {worst:.6}");
    assert!(worst < 2e-5, "largest difference {worst}");
}

#[test]
fn every_shared_trace_file_reads() {
    let dir = traces_dir();
    let expected = [
        (
            "block/cloudPhysicsIO.csv",
            TraceFormat::CloudPhysicsCsv,
            113_872,
        ),
        (
            "block/msr-cambridge1-sample.csv",
            TraceFormat::MsrCsv,
            1_000,
        ),
        (
            "format-samples/cachelib-twitter_sample.csv",
            TraceFormat::TwitterCsv,
            100,
        ),
        ("kv/cache2k-web12.trace.xz", TraceFormat::U32Be, 95_607),
        (
            "kv/corda_vaultservice.trace.gz",
            TraceFormat::U64Be,
            135_702,
        ),
        ("block/arc-OLTP.lis.zst", TraceFormat::ArcLis, 914_145),
    ];
    for (file, format, requests) in expected {
        let reader = open_trace(&dir.join(file), TraceFormat::Auto).unwrap();
        assert_eq!(reader.format(), format, "{file}");
        assert_eq!(reader.map(Result::unwrap).count(), requests, "{file}");
    }
    for file in [
        "format-samples/meta-kv_traces_1.csv",
        "format-samples/meta-kv_traces_2.csv",
    ] {
        let reader = open_trace(&dir.join(file), TraceFormat::Auto).unwrap();
        assert_eq!(reader.format(), TraceFormat::MetaKvCsv);
        let requests: Vec<_> = reader.map(Result::unwrap).collect();
        assert!(requests.len() >= 99, "{file}: op_count expands rows");
        assert!(requests
            .iter()
            .all(|r| r.size > 0 || r.op != mrcache_workload::Op::Set));
    }
}

fn scratch_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mrcache-trace-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

#[test]
fn bad_input_names_file_offset_and_line() {
    let empty = scratch_file("empty.trace", b"");
    let error = open_trace(&empty, TraceFormat::Auto)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("empty.trace") && error.contains("empty"),
        "{error}"
    );

    let truncated = scratch_file("cut.oracleGeneral.bin", &[1u8; 30]);
    let error = open_trace(&truncated, TraceFormat::Auto)
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert_eq!(error.offset_bytes(), 24);
    assert!(
        error
            .to_string()
            .contains("truncated record (6 of 24 bytes)"),
        "{error}"
    );

    let text = scratch_file("text.trace", b"version,time,op,size,lbn\n1,2,28,512,7\n");
    let error = open_trace(&text, TraceFormat::Auto)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("looks like text"), "{error}");

    let bad_line = scratch_file("bad.lis", b"1 2 0 0\nten 1 0 1\n");
    let error = open_trace(&bad_line, TraceFormat::Auto)
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert_eq!((error.line(), error.offset_bytes()), (Some(2), 8));
    assert!(
        error
            .to_string()
            .contains("bad.lis: byte 8, line 2: start_block"),
        "{error}"
    );

    let unknown = scratch_file("mystery.dat", b"abc");
    let error = open_trace(&unknown, TraceFormat::Auto)
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("--format"), "{error}");

    let not_zstd = scratch_file("fake.lis.zst", b"plain text\n");
    assert!(open_trace(&not_zstd, TraceFormat::Auto).is_err());
}

#[test]
fn binary_reports_help_and_errors() {
    let binary = env!("CARGO_BIN_EXE_mrcache");
    let help = std::process::Command::new(binary)
        .args(["mrc", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    for option in [
        "--trace",
        "--method",
        "--rate",
        "--max-samples",
        "--unit",
        "--sizes",
        "--plot",
    ] {
        assert!(help.contains(option), "help lacks {option}");
    }
    let missing = std::process::Command::new(binary)
        .args(["mrc", "--trace", "/nonexistent/x.trace"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/x.trace"));
    let version = std::process::Command::new(binary)
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&version.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn accuracy_study_reports_spread_bias_and_floor() {
    let dir = traces_dir();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mrcache"))
        .args([
            "mrc",
            "--method",
            "footprint,shards",
            "--rate",
            "0.1",
            "--seeds",
            "3",
        ])
        .args(["--adjust", "regression,shards-adj", "--trace"])
        .arg(dir.join("kv/cache2k-web12.trace.xz"))
        .arg("--reference")
        .arg(dir.join("reference/cache2k-web12.lru-mrc.csv"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("mae ")).collect();
    // 2 methods x 2 adjustments x 4 grids (ref, log, log >= 1/rate, linear).
    assert_eq!(rows.len(), 16, "{text}");
    for row in rows {
        let mean: f64 = row
            .split(' ')
            .find_map(|f| f.strip_prefix("mean="))
            .unwrap()
            .parse()
            .unwrap();
        assert!(mean > 0.0 && mean < 0.1, "{row}");
    }
    assert!(text.contains("floor rate=0.1 grid=linear"), "{text}");
}
