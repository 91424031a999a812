//! The Debian package, end to end: `scripts/package-deb.sh --no-build` packs the release binaries this
//! test run built; the test reads the control fields, unpacks the package with `dpkg-deb -x` into a
//! temporary directory, and starts the shipped binary through the shipped wrapper with the shipped
//! `/etc/mrcached.conf` — and with Debian's own memcached.conf, which an operator may copy over — each
//! moved to 127.0.0.1, a free port (`-p 0`, read from the `listening on` line), a pid file in the
//! temporary directory and, as root, `-u nobody` (the package's `memcache` user need not exist here).
//! `systemd-analyze verify` must accept the unit without a word of complaint. The test is ignored unless
//! asked for (`--include-ignored`, as scripts/test.sh runs it); then a missing tool (dpkg-shlibdeps,
//! dpkg-deb, systemd-analyze, memcached's configuration) fails it, naming the tool: it is not skipped.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{nobody, require_tool, run_with_deadline, Announced, LineClient};

const TIMEOUT: Duration = Duration::from_secs(60);
/// Debian's memcached package ships its default configuration here (and copies it to /etc).
const DEBIAN_MEMCACHED_CONF: &str = "/usr/share/memcached/memcached.conf.default";

/// A fresh directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let dir = std::env::temp_dir().join(format!("mrcached-deb-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The directory of the binaries this test run built, with `mrcache` in it too (built when missing:
/// `cargo test -p mrcache-server` builds only `mrcached`).
fn release_binaries() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_mrcached"))
        .parent()
        .unwrap()
        .to_path_buf();
    if !dir.join("mrcache").is_file() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "-p", "mrcache-cli", "--bin", "mrcache"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        assert!(build.status().unwrap().success(), "cargo build of mrcache");
    }
    dir
}

/// Runs `program args`, which must succeed; returns its output.
fn run_ok(program: &str, args: &[&str]) -> String {
    let (code, output) = run_with_deadline(Command::new(program).args(args), TIMEOUT);
    assert_eq!(code, Some(0), "{program} {args:?}: {output}");
    output
}

/// `conf` moved to 127.0.0.1, a free port, `pid_file` and (as root) `-u nobody`; every line it
/// changes must be there to change.
fn for_this_test(conf: &str, pid_file: &Path) -> String {
    let user = if mrcache_server::privileges::running_as_root() {
        "nobody"
    } else {
        "memcache" // ignored: not root
    };
    let mut changed = Vec::new();
    let lines: Vec<String> = conf
        .lines()
        .map(|line| {
            let flag = line.split_whitespace().next().unwrap_or("");
            let new = match flag {
                "-p" => "-p 0".to_string(),
                "-l" => "-l 127.0.0.1".to_string(),
                "-P" => format!("-P {}", pid_file.display()),
                "-u" => format!("-u {user}"),
                _ => return line.to_string(),
            };
            changed.push(flag);
            new
        })
        .collect();
    changed.sort_unstable();
    assert_eq!(
        changed,
        ["-P", "-l", "-p", "-u"],
        "the lines to move:\n{conf}"
    );
    lines.join("\n") + "\n"
}

/// Starts `wrapper` on `conf` (moved by [`for_this_test`]) and checks that the server it execs
/// serves, wrote its pid file, runs in the foreground (despite the file's `-d`) and, as root, as
/// nobody.
fn serves_from(wrapper: &Path, conf: &str, scratch: &Path, name: &str) {
    let run_dir = scratch.join(format!("run-{name}"));
    fs::create_dir_all(&run_dir).unwrap();
    let (uid, gid) = nobody();
    if mrcache_server::privileges::running_as_root() {
        // As /run/mrcached belongs to the memcache user on an installed system.
        std::os::unix::fs::chown(&run_dir, Some(uid), Some(gid)).unwrap();
    }
    let pid_file = run_dir.join("mrcached.pid");
    let conf_path = scratch.join(format!("{name}.conf"));
    fs::write(&conf_path, for_this_test(conf, &pid_file)).unwrap();

    let server = Announced::start(Command::new(wrapper).arg(&conf_path));
    let pid = server.child.id();
    let mut c = LineClient::connect(server.addr.port());
    assert_eq!(c.call("set shipped 5 0 3\r\nyes\r\n"), "STORED", "{name}");
    assert_eq!(c.call("get shipped\r\n"), "VALUE shipped 5 3\nyes\nEND");
    // The wrapper execs mrcached: the process started is the server, and its pid is in the file.
    assert_eq!(
        fs::read_to_string(&pid_file).unwrap(),
        format!("{pid}\n"),
        "{name}"
    );
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    if mrcache_server::privileges::running_as_root() {
        assert!(status.contains(&format!("\nUid:\t{uid}\t")), "{status}");
    }
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
    assert!(!args.contains(&&b"-d"[..]), "{name}: -d is dropped");
    assert!(
        !args.contains(&&b"logfile"[..]),
        "{name}: logfile is dropped"
    );
}

#[test]
#[ignore = "needs dpkg-dev, systemd-analyze (systemd) and memcached"]
fn the_package_installs_mrcached_the_way_debian_installs_memcached() {
    let dpkg_deb = require_tool("/usr/bin/dpkg-deb", "dpkg-deb (dpkg)");
    let dpkg_deb = dpkg_deb.to_str().unwrap();
    let systemd_analyze = require_tool("/usr/bin/systemd-analyze", "systemd-analyze (systemd)");
    let scratch = Scratch::new();
    let dir = &scratch.0;

    let bins = release_binaries();
    let script = repo_root().join("scripts/package-deb.sh");
    let output = run_ok(
        script.to_str().unwrap(),
        &[
            "--no-build",
            "--bin-dir",
            bins.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    let deb = output.lines().last().expect("the .deb's path").to_string();
    let arch = run_ok("dpkg", &["--print-architecture"]);
    assert_eq!(
        Path::new(&deb).file_name().unwrap().to_str().unwrap(),
        format!("mrcached_{}_{}.deb", env!("CARGO_PKG_VERSION"), arch.trim())
    );

    // The control file.
    let field = |name: &str| run_ok(dpkg_deb, &["-f", &deb, name]).trim().to_string();
    assert_eq!(field("Package"), "mrcached");
    assert_eq!(field("Version"), env!("CARGO_PKG_VERSION"));
    assert_eq!(field("Architecture"), arch.trim());
    let depends = field("Depends");
    assert!(
        depends.starts_with("adduser, ") && depends.contains("libc6 (>= "),
        "{depends}"
    );
    assert!(!field("Maintainer").is_empty() && !field("Description").is_empty());
    let control = dir.join("control");
    run_ok(dpkg_deb, &["-e", &deb, control.to_str().unwrap()]);
    assert_eq!(
        fs::read_to_string(control.join("conffiles")).unwrap(),
        "/etc/mrcached.conf\n"
    );
    let postinst = fs::read_to_string(control.join("postinst")).unwrap();
    assert!(postinst.contains("adduser --system") && postinst.contains("memcache"));

    // The files.
    let root = dir.join("root");
    run_ok(dpkg_deb, &["-x", &deb, root.to_str().unwrap()]);
    for path in [
        "usr/bin/mrcached",
        "usr/bin/mrcache",
        "etc/mrcached.conf",
        "lib/systemd/system/mrcached.service",
        "usr/share/mrcached/scripts/systemd-mrcached-wrapper",
        "usr/lib/tmpfiles.d/mrcached.conf",
        "usr/share/doc/mrcached/compatibility.md",
    ] {
        assert!(root.join(path).is_file(), "{path} is not in the package");
    }
    let version = run_ok(root.join("usr/bin/mrcached").to_str().unwrap(), &["-V"]);
    assert!(
        version.starts_with(&format!("mrcached {} ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    run_ok(root.join("usr/bin/mrcache").to_str().unwrap(), &["--help"]);

    // The shipped configuration, through the shipped wrapper.
    let wrapper = root.join("usr/share/mrcached/scripts/systemd-mrcached-wrapper");
    let shipped = fs::read_to_string(root.join("etc/mrcached.conf")).unwrap();
    for line in [
        "-d",
        "-u memcache",
        "-m 64",
        "logfile /var/log/mrcached.log",
    ] {
        assert!(shipped.lines().any(|l| l == line), "{line:?} in the conf");
    }
    serves_from(&wrapper, &shipped, dir, "shipped");

    // An operator's copy of Debian's /etc/memcached.conf.
    let debian = fs::read_to_string(DEBIAN_MEMCACHED_CONF).unwrap_or_else(|e| {
        panic!("{DEBIAN_MEMCACHED_CONF}: {e}; this test needs it: apt-get install memcached")
    });
    serves_from(&wrapper, &debian, dir, "debian");

    // The unit, with its ExecStart pointing into the unpacked tree (verify checks that it exists).
    let unit = fs::read_to_string(root.join("lib/systemd/system/mrcached.service")).unwrap();
    assert!(unit.contains(
        "\nExecStart=/usr/share/mrcached/scripts/systemd-mrcached-wrapper /etc/mrcached.conf\n"
    ));
    let units = dir.join("units");
    fs::create_dir_all(&units).unwrap();
    let unpacked = format!("{}/usr/share/mrcached", root.display());
    fs::write(
        units.join("mrcached.service"),
        unit.replace("/usr/share/mrcached", &unpacked),
    )
    .unwrap();
    let (code, output) = run_with_deadline(
        Command::new(systemd_analyze)
            .arg("verify")
            .arg(units.join("mrcached.service")),
        TIMEOUT,
    );
    assert_eq!(
        (code, output.as_str()),
        (Some(0), ""),
        "systemd-analyze verify"
    );
}
