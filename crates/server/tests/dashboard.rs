//! The admin port's dashboard (`GET /`) in a real browser: mrcached with two tenants and the admin port
//! on port 0 (announced on stdout as `admin listening on ADDR`), traffic in two slab classes, then
//! headless Chromium (Debian's `chromium`) loads the page, runs its script against `/mrc` and
//! `/history`, and dumps the DOM; the test checks that every tenant's and used class's miss-ratio curve
//! is drawn with its allocation marked, and that the series over time are there.
//!
//! Without Chromium the test fails, naming the package (`scripts/test.sh` installs it);
//! `CHROMIUM_BIN` overrides the path.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(30);
/// How long Chromium may take to start, load the page and dump it.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(120);

/// The mrcached process, killed on drop.
struct Mrcached {
    child: Child,
    addr: SocketAddr,
    admin: SocketAddr,
}

impl Drop for Mrcached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts mrcached on port 0 with the admin port on port 0 and reads both announced addresses.
fn start(args: &[&str]) -> Mrcached {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mrcached"))
        .args(["-U", "0", "-l", "127.0.0.1", "-p", "0", "--admin-port", "0"])
        .args(user_args())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start mrcached");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        // Keeps draining stdout so that the server never blocks on it.
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let (mut addr, mut admin) = (None, None);
    let deadline = Instant::now() + TIMEOUT;
    while addr.is_none() || admin.is_none() {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("mrcached announces `listening on` and `admin listening on`");
        if let Some(a) = line.strip_prefix("admin listening on ") {
            admin = Some(a.parse().unwrap());
        } else if let Some(a) = line.strip_prefix("listening on ") {
            addr = Some(a.parse().unwrap());
        }
    }
    Mrcached {
        child,
        addr: addr.unwrap(),
        admin: admin.unwrap(),
    }
}

/// A GET against the admin port: status and body.
fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_string())
}

/// Lookaside traffic (get; set on a miss) over `keys` keys per prefix, values of `size` bytes.
fn lookaside(
    conn: &mut BufReader<TcpStream>,
    rng: &mut u64,
    prefixes: &[&str],
    keys: u64,
    size: usize,
) {
    for prefix in prefixes {
        *rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let key = format!("{prefix}{}", (*rng >> 33) % keys);
        conn.get_mut()
            .write_all(format!("get {key}\r\n").as_bytes())
            .unwrap();
        let mut line = String::new();
        conn.read_line(&mut line).unwrap();
        if line == "END\r\n" {
            let set = format!("set {key} 0 0 {size}\r\n{}\r\n", "v".repeat(size));
            conn.get_mut().write_all(set.as_bytes()).unwrap();
            line.clear();
            conn.read_line(&mut line).unwrap();
            assert_eq!(line, "STORED\r\n");
        } else {
            // VALUE line, data, END.
            let mut data = vec![0; size + 2];
            conn.read_exact(&mut data).unwrap();
            line.clear();
            conn.read_line(&mut line).unwrap();
            assert_eq!(line, "END\r\n");
        }
    }
}

/// Chromium's path: `CHROMIUM_BIN`, or Debian's. Panics with the package to install when it is missing.
fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.is_file(),
        "chromium not found at {path:?}: the dashboard test needs a real browser; install it \
         (apt-get install chromium; scripts/test.sh does) or set CHROMIUM_BIN"
    );
    path
}

/// Loads `url` in headless Chromium, lets its scripts run for a few virtual seconds, returns the DOM.
fn dump_dom(url: &str) -> String {
    let browser = chromium();
    let profile = std::env::temp_dir().join(format!(
        "mrcache-dashboard-chromium-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let _ = std::fs::remove_dir_all(&profile);
    std::fs::create_dir_all(&profile).unwrap();
    let mut child = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--dump-dom", url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {browser:?}: {e}"));
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "chromium did not finish within {BROWSER_TIMEOUT:?}: {}",
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let dom = out.join().unwrap();
    let errors = err.join().unwrap();
    let _ = std::fs::remove_dir_all(&profile);
    assert!(status.success(), "chromium: {status}: {errors}");
    assert!(dom.contains("</html>"), "no DOM from chromium: {errors}");
    dom
}

/// Every `<tag ...>` element of `dom` as its attributes (a small parser for the serialised DOM: values
/// are double-quoted and contain no `"`).
fn elements(dom: &str, tag: &str) -> Vec<HashMap<String, String>> {
    let open = format!("<{tag} ");
    dom.match_indices(&open)
        .map(|(at, _)| {
            let rest = &dom[at + open.len()..];
            let end = rest.find('>').unwrap();
            let mut attrs = HashMap::new();
            let mut s = &rest[..end];
            while let Some(eq) = s.find("=\"") {
                let name = s[..eq].trim().to_string();
                let value_end = s[eq + 2..].find('"').unwrap();
                attrs.insert(name, s[eq + 2..eq + 2 + value_end].to_string());
                s = &s[eq + 2 + value_end + 1..];
            }
            attrs
        })
        .collect()
}

/// The drawn points of a path's `d` (its `M`/`L` commands).
fn points(d: &str) -> usize {
    d.matches(['M', 'L']).count()
}

#[test]
#[ignore = "needs chromium"]
fn the_dashboard_draws_every_curve_in_a_real_browser() {
    chromium();
    for layout in ["log", "slab"] {
        draws_every_curve(layout);
    }
}

/// The dashboard of a server in `layout`, with tenants and traffic in two size classes: every curve
/// and series it should draw is in the browser's DOM.
fn draws_every_curve(layout: &str) {
    let dir =
        std::env::temp_dir().join(format!("mrcache-dashboard-{}-{layout}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tenants.toml");
    std::fs::write(
        &conf,
        "tenant_policy = \"mpart:interval=500,min_requests=50\"\n\
         [[tenant]]\nname = \"x\"\nprefix = \"x:\"\nreserved = \"4MiB\"\n\
         [[tenant]]\nname = \"y\"\nprefix = \"y:\"\n",
    )
    .unwrap();
    let server = start(&[
        "-m",
        "64",
        "-o",
        &format!("shards=1,mrc_sample_rate=1,memory_layout={layout}"),
        "--config",
        conf.to_str().unwrap(),
    ]);
    let mut conn = BufReader::new(TcpStream::connect(server.addr).unwrap());
    conn.get_mut().set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut rng = 7u64;
    // Two classes (100- and 2000-byte values), both tenants and the default one.
    for _ in 0..3000 {
        lookaside(&mut conn, &mut rng, &["x:", "y:", "plain:"], 400, 100);
        lookaside(&mut conn, &mut rng, &["x:big"], 100, 2000);
    }
    // Traffic goes on while the browser looks, so the hit ratio moves.
    let stop = Arc::new(AtomicBool::new(false));
    let traffic = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                lookaside(&mut conn, &mut rng, &["x:", "y:", "plain:"], 400, 100);
            }
        })
    };
    // A few seconds of history.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let (status, history) = http_get(server.admin, "/history");
        assert_eq!(status, 200, "{history}");
        if history.matches("\"t\":").count() >= 3 {
            assert!(history.contains("\"capacity\":600"), "{history}");
            break;
        }
        assert!(Instant::now() < deadline, "no history: {history}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (status, mrc) = http_get(server.admin, "/mrc");
    assert_eq!(status, 200);
    let mrc: serde_json::Value = serde_json::from_str(&mrc).unwrap();
    let used: Vec<u64> = mrc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["requests"].as_u64().unwrap() > 0 || c["pages"].as_u64().unwrap() > 0)
        .map(|c| c["class"].as_u64().unwrap())
        .collect();
    // The log layout reports its one class (its segments); the slab layout several.
    let classes = if layout == "log" {
        1..=1
    } else {
        2..=usize::MAX
    };
    assert!(
        classes.contains(&used.len()),
        "{layout}: classes in use: {mrc}"
    );
    let (status, page) = http_get(server.admin, "/");
    assert_eq!(status, 200);
    assert!(page.contains("<script src=\"/dashboard.js\">"), "{page}");
    assert_eq!(http_get(server.admin, "/dashboard.js").0, 200);
    assert_eq!(http_get(server.admin, "/dashboard.css").0, 200);

    let dom = dump_dom(&format!("http://{}/", server.admin));
    stop.store(true, Ordering::Relaxed);
    traffic.join().unwrap();
    assert!(
        dom.contains("data-refreshes=\""),
        "the script did not finish a refresh: {dom}"
    );
    let paths = elements(&dom, "path");
    let lines = elements(&dom, "line");
    let find = |attr: &str, value: &str| {
        paths
            .iter()
            .find(|p| p.get(attr).map(String::as_str) == Some(value))
            .unwrap_or_else(|| panic!("no path with {attr}=\"{value}\" in {dom}"))
    };
    let marked = |attr: &str, value: &str| {
        lines.iter().any(|l| {
            l.get(attr).map(String::as_str) == Some(value)
                && l.get("class").map(String::as_str) == Some("alloc")
                && l.contains_key("data-pages")
        })
    };
    for tenant in ["default", "x", "y"] {
        let curve = find("data-tenant", tenant);
        assert!(points(&curve["d"]) >= 2, "{tenant}'s curve: {curve:?}");
        assert!(marked("data-tenant", tenant), "{tenant}'s allocation");
    }
    for class in &used {
        let class = class.to_string();
        let curve = find("data-class", &class);
        assert!(points(&curve["d"]) >= 2, "class {class}'s curve: {curve:?}");
        assert!(marked("data-class", &class), "class {class}'s allocation");
        let series = find("data-series", &format!("class:{class}"));
        assert!(
            points(&series["d"]) >= 2,
            "class {class} over time: {series:?}"
        );
    }
    for tenant in ["x", "y"] {
        let series = find("data-series", &format!("tenant:{tenant}"));
        assert!(points(&series["d"]) >= 2, "{tenant} over time: {series:?}");
    }
    let hit = find("data-series", "hit_ratio");
    assert!(points(&hit["d"]) >= 1, "hit ratio over time: {hit:?}");
    for s in ["predicted", "observed"] {
        find("data-series", s);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-u root` when the test runs as root: mrcached, like memcached, refuses root without `-u`.
fn user_args() -> &'static [&'static str] {
    if mrcache_server::privileges::running_as_root() {
        &["-u", "root"]
    } else {
        &[]
    }
}
