//! `mrcache plan --server` against three live `mrcached` nodes on 127.0.0.1: keys spread over the nodes
//! by hash, as a consistent-hashing client or proxy spreads them, with the lookaside pattern (get, and
//! set on a miss); then the planner reads every node's `stats mrc` and must predict the hit ratio the
//! cluster showed, the same hit ratio from one node of the same total memory, less from less memory, and
//! a memory for a target hit ratio, and draw the figure.
//!
//! The server binary is `MRCACHED_BIN`, else the `mrcached` beside this test's target directory (cargo
//! builds it for the workspace's tests); when neither exists the test builds it with cargo. Every wait is
//! bounded and every server is killed on drop.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);
const NODES: usize = 3;
/// Each node: 16 MiB of 1 MiB pages (the least at which mrcached profiles every class).
const NODE_MEMORY_MIB: u64 = 16;
/// 16,000-byte values: some fifty items a page, one slab class.
const VALUE_BYTES: usize = 16_000;
/// About twice what the three nodes hold, drawn uniformly: an LRU hit ratio near one half.
const KEYS: u64 = 5_400;
const REQUESTS: u64 = 40_000;

/// The `mrcached` to test.
fn mrcached() -> PathBuf {
    if let Some(path) = std::env::var_os("MRCACHED_BIN") {
        return PathBuf::from(path);
    }
    // target/<profile>/deps/<this test> -> target/<profile>/mrcached
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let path = profile_dir.join("mrcached");
    if !path.is_file() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "-p", "mrcache-server", "--bin", "mrcached"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build");
        assert!(status.success(), "cargo build of mrcached failed");
    }
    assert!(path.is_file(), "no mrcached at {}", path.display());
    path
}

/// One `mrcached` on free 127.0.0.1 ports (memcached and admin), killed on drop.
struct Node {
    child: Child,
    addr: String,
    admin: String,
}

impl Node {
    fn start(binary: &PathBuf) -> Node {
        let memory = NODE_MEMORY_MIB.to_string();
        let mut child = Command::new(binary)
            .args(["-U", "0", "-l", "127.0.0.1", "-p", "0", "-m", &memory])
            .args(["-o", "mrc_sample_rate=1", "--admin-port", "0"])
            .args(user_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mrcached");
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
                let _ = tx.send(std::mem::take(&mut line));
            }
        });
        let mut node = Node {
            child,
            addr: String::new(),
            admin: String::new(),
        };
        // `listening on ADDR`, then `admin listening on ADDR`.
        while node.addr.is_empty() || node.admin.is_empty() {
            let line: String = rx
                .recv_timeout(STARTUP_TIMEOUT)
                .expect("mrcached announces its ports");
            let line = line.trim_end();
            if let Some(admin) = line.strip_prefix("admin listening on ") {
                node.admin = format!("http://{admin}");
            } else if let Some(addr) = line.strip_prefix("listening on ") {
                node.addr = addr.to_owned();
            }
        }
        node
    }

    fn connect(&self) -> BufReader<TcpStream> {
        let s = TcpStream::connect(&self.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_nodelay(true).unwrap();
        BufReader::new(s)
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_line(conn: &mut BufReader<TcpStream>) -> String {
    let mut line = String::new();
    conn.read_line(&mut line).expect("reply");
    line
}

/// `get key`: true on a hit.
fn get(conn: &mut BufReader<TcpStream>, key: &str) -> bool {
    conn.get_mut()
        .write_all(format!("get {key}\r\n").as_bytes())
        .unwrap();
    let first = read_line(conn);
    if first == "END\r\n" {
        return false;
    }
    assert!(first.starts_with("VALUE "), "{first:?}");
    let mut value = vec![0; VALUE_BYTES + 2];
    std::io::Read::read_exact(conn, &mut value).unwrap();
    assert_eq!(read_line(conn), "END\r\n");
    true
}

fn set(conn: &mut BufReader<TcpStream>, key: &str, value: &str) {
    conn.get_mut()
        .write_all(format!("set {key} 0 0 {VALUE_BYTES}\r\n{value}\r\n").as_bytes())
        .unwrap();
    assert_eq!(read_line(conn), "STORED\r\n");
}

fn plan(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_mrcache"))
        .arg("plan")
        .args(args)
        .output()
        .expect("run mrcache plan");
    assert!(
        output.status.success(),
        "mrcache plan {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn plan_reads_live_nodes_and_predicts_the_cluster() {
    let binary = mrcached();
    let nodes: Vec<Node> = (0..NODES).map(|_| Node::start(&binary)).collect();
    let mut conns: Vec<_> = nodes.iter().map(Node::connect).collect();
    let value = "v".repeat(VALUE_BYTES);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let (mut hits, mut gets) = (0u64, 0u64);
    for request in 0..REQUESTS {
        rng = rng
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let id = (rng >> 33) % KEYS;
        let key = format!("key:{id}");
        // The node by a hash of the key (a multiplicative hash, as a client's would be).
        let node = (id.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 40) as usize % NODES;
        let hit = get(&mut conns[node], &key);
        if !hit {
            set(&mut conns[node], &key, &value);
        }
        // The steady state: the second half, once every node has filled.
        if request >= REQUESTS / 2 {
            gets += 1;
            hits += u64::from(hit);
        }
    }
    let observed = hits as f64 / gets as f64;
    assert!(
        (0.3..0.7).contains(&observed),
        "the workload should hit about half: {observed}"
    );

    let mut args: Vec<&str> = Vec::new();
    for n in &nodes {
        args.extend(["--server", &n.addr]);
    }
    let dir = std::env::temp_dir().join(format!("mrcache-plan-servers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let figure = dir.join("cluster.svg");
    let figure_arg = figure.to_str().unwrap().to_owned();
    let mut json_args = args.clone();
    json_args.extend([
        "--memory",
        "24MiB..48MiB:24MiB",
        "--nodes",
        "1,3",
        "--target-hit-ratio",
        "0.3",
        "--json",
        "--plot",
        &figure_arg,
    ]);
    let report: serde_json::Value = serde_json::from_str(&plan(&json_args)).expect("JSON");
    assert_eq!(
        report["total_memory_bytes"],
        (NODES as u64 * NODE_MEMORY_MIB) << 20
    );
    let hit_ratio = |nodes: u64, mib: u64| {
        let row = report["predictions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["nodes"] == nodes && r["total_memory_bytes"] == mib << 20)
            .unwrap_or_else(|| panic!("no prediction for {nodes} nodes, {mib} MiB: {report}"));
        assert_eq!(row["extrapolated"], false, "{row}");
        row["hit_ratio"].as_f64().unwrap()
    };
    // Today's cluster: the prediction matches what the clients saw.
    let today = hit_ratio(3, 48);
    assert!(
        (today - observed).abs() < 0.1,
        "predicted {today}, observed {observed}"
    );
    // One node of the same total memory sees all the keys in 48 pages: the same hit ratio.
    assert!((hit_ratio(1, 48) - today).abs() < 0.05, "{report}");
    // Half the memory hits less.
    assert!(hit_ratio(3, 24) < today - 0.1, "{report}");
    // The memory for a 30% hit ratio is less than today's, and reaches it.
    for plan in report["memory_for_target"].as_array().unwrap() {
        let p = &plan["plan"];
        assert!(p["hit_ratio"].as_f64().unwrap() >= 0.3, "{plan}");
        assert!(
            p["total_memory_bytes"].as_u64().unwrap() < 48 << 20,
            "{plan}"
        );
    }
    let svg = std::fs::read_to_string(&figure).expect("the figure");
    assert!(svg.contains("<svg") && svg.contains("3 nodes"), "{svg}");

    // The text report names the nodes and answers the target.
    let mut text_args = args.clone();
    text_args.extend(["--target-hit-ratio", "0.3"]);
    let text = plan(&text_args);
    eprintln!("observed hit ratio {observed:.4}\n{text}");
    assert!(text.contains(&nodes[0].addr), "{text}");
    assert!(text.contains("memory for hit ratio 0.3:"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);

    // The admin ports' curves run to the whole working set: twice today's memory holds every key, a
    // prediction (not a bound) well above today's.
    let mut admin_args: Vec<&str> = Vec::new();
    for n in &nodes {
        admin_args.extend(["--server", &n.admin]);
    }
    admin_args.extend(["--memory", "48MiB..96MiB:48MiB", "--nodes", "3", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&plan(&admin_args)).expect("JSON");
    eprintln!("from the admin ports: {report}");
    let rows = report["predictions"].as_array().unwrap();
    let (now, doubled) = (&rows[0], &rows[1]);
    assert_eq!(doubled["extrapolated"], false, "{report}");
    let now = now["hit_ratio"].as_f64().unwrap();
    assert!((now - observed).abs() < 0.1, "{report}");
    assert!(
        doubled["hit_ratio"].as_f64().unwrap() > now + 0.2,
        "{report}"
    );
}

#[test]
fn an_unreachable_node_is_an_error_that_names_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    drop(listener);
    let output = Command::new(env!("CARGO_BIN_EXE_mrcache"))
        .args(["plan", "--server", &addr])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
}

/// `-u root` when the test runs as root (the effective uid in /proc/self/status is 0): mrcached, like
/// memcached, refuses root without `-u`.
fn user_args() -> &'static [&'static str] {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0");
    if root {
        &["-u", "root"]
    } else {
        &[]
    }
}
