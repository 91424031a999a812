//! `-d` and `-P`: running detached from the terminal, and the pid file.
//!
//! [`daemonize`] forks in `main` before any thread exists: `fork` copies only the calling thread, so
//! a thread started earlier would be missing from the daemon (it checks `/proc/self/task` and refuses
//! otherwise). The starting process then waits on a pipe. The daemon writes one byte to it once its
//! server accepts connections and `-P`'s file is written ([`Daemon::started`]), and the starting
//! process exits 0; if the daemon exits first (its port taken, its pid file unwritable), the starting
//! process exits with the daemon's status, whose message is already on the terminal. memcached's
//! starting process exits at once, before its daemon has bound a port; waiting tells a script, or a
//! service manager's `Type=forking`, that the daemon is up, or why not. As in memcached, the daemon
//! starts a new session, works in `/` unless `-r` is given, and sends stdin, stdout and stderr to
//! `/dev/null` unless `-v` is (here once it is up, so that start-up errors still reach the terminal).
//! memcached also ignores SIGHUP under `-d`; mrcached keeps it as the tenant reload, and a daemon in a
//! session of its own has no terminal to hang up on it.
//!
//! [`PidFile`] is memcached's `save_pid`: the pid and a newline are written to `FILE.tmp`, which is
//! renamed over `FILE`, so a reader never finds it empty. `main` writes it once the sockets are bound
//! and, as memcached does, removes it at a clean stop only under `-d`. Unlike memcached, which warns
//! and runs on, a pid file that cannot be written stops start-up: a service manager or script that
//! finds no pid file cannot stop the server it started.

use std::fs;
use std::io::{self, PipeReader, PipeWriter, Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// What [`daemonize`] left running here.
pub enum Fork {
    /// The daemon: serve, then call [`Daemon::started`].
    Daemon(Daemon),
    /// The starting process, once the daemon is up (0) or gone (its exit status): exit with it.
    Starter(u8),
}

/// The daemon's end of the pipe the starting process waits on.
#[derive(Debug)]
pub struct Daemon {
    ready: PipeWriter,
}

/// Forks the daemon: a new session, working in `/` unless `keep_working_dir`. Must run before any
/// thread is started (see the module notes).
pub fn daemonize(keep_working_dir: bool) -> io::Result<Fork> {
    let threads = fs::read_dir("/proc/self/task")?.count();
    if threads != 1 {
        return Err(io::Error::other(format!(
            "{threads} threads are running; the daemon must fork before any starts"
        )));
    }
    let (mut ready_rx, ready_tx) = io::pipe()?;
    // SAFETY: this is the only thread (checked above), so the child is a whole copy of the process
    // and may go on running any code; both sides own the pipe ends they keep.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            drop(ready_rx);
            // SAFETY: setsid has no arguments; it fails only for a process group leader, which a
            // child just forked is not.
            if unsafe { libc::setsid() } == -1 {
                return Err(io::Error::last_os_error());
            }
            if !keep_working_dir {
                std::env::set_current_dir("/")?;
            }
            Ok(Fork::Daemon(Daemon { ready: ready_tx }))
        }
        daemon => {
            drop(ready_tx);
            Ok(Fork::Starter(wait_for(daemon, &mut ready_rx)))
        }
    }
}

/// The starting process's exit status: 0 once the daemon says it is up, else the daemon's own.
fn wait_for(daemon: libc::pid_t, ready: &mut PipeReader) -> u8 {
    if ready.read_exact(&mut [0u8; 1]).is_ok() {
        return 0;
    }
    // End of file: the daemon exited before it was up.
    let mut status = 0;
    // SAFETY: waitpid writes the child's status into `status`, a live local.
    if unsafe { libc::waitpid(daemon, &mut status, 0) } == -1 || !libc::WIFEXITED(status) {
        return 1;
    }
    libc::WEXITSTATUS(status) as u8
}

impl Daemon {
    /// The server is up: sends stdin, stdout and stderr to `/dev/null` (unless `keep_stdio`, `-v`)
    /// and lets the starting process exit 0.
    pub fn started(mut self, keep_stdio: bool) -> io::Result<()> {
        if !keep_stdio {
            io::stdout().flush()?;
            let null = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")?;
            for fd in 0..=2 {
                // SAFETY: dup2 replaces one of this process's standard descriptors with a copy of
                // `null`, which is open; no Rust object owns descriptors 0 to 2.
                if unsafe { libc::dup2(null.as_raw_fd(), fd) } == -1 {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        self.ready.write_all(b"R")
    }
}

/// `-P`'s file, once written (see the module notes).
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
}

impl PidFile {
    /// Writes this process's id to `path` (through `path.tmp`). As memcached does, warns when the file
    /// it replaces names a process that is running.
    pub fn write(path: &Path) -> io::Result<PidFile> {
        let cannot = |what: &str, e: io::Error| {
            io::Error::new(
                e.kind(),
                format!("-P/--pidfile: cannot {what} {}: {e}", path.display()),
            )
        };
        if let Some(pid) = running_pid_in(path) {
            eprintln!(
                "mrcached: warning: the pid file {} named process {pid}, which is running",
                path.display()
            );
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        fs::write(&tmp, format!("{}\n", std::process::id())).map_err(|e| cannot("write", e))?;
        fs::rename(&tmp, path).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            cannot("write", e)
        })?;
        Ok(PidFile {
            path: path.to_path_buf(),
        })
    }

    /// Removes the file.
    pub fn remove(self) -> io::Result<()> {
        fs::remove_file(&self.path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("-P/--pidfile: cannot remove {}: {e}", self.path.display()),
            )
        })
    }
}

/// The pid an existing pid file names, when that process is running and is not this one.
fn running_pid_in(path: &Path) -> Option<u32> {
    let pid: u32 = fs::read_to_string(path).ok()?.trim().parse().ok()?;
    let running = Path::new("/proc").join(pid.to_string()).exists();
    (running && pid != std::process::id()).then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(test: &str) -> Scratch {
            let dir =
                std::env::temp_dir().join(format!("mrcached-daemon-{test}-{}", std::process::id()));
            fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_pid_file_holds_the_pid_and_a_newline_and_goes_when_removed() {
        let dir = Scratch::new("write");
        let path = dir.0.join("a.pid");
        let file = PidFile::write(&path).unwrap();
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        assert!(!Path::new(&format!("{}.tmp", path.display())).exists());
        file.remove().unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn an_unwritable_pid_file_is_an_error_naming_the_flag_and_the_file() {
        let dir = Scratch::new("unwritable");
        let path = dir.0.join("no-such-dir/b.pid");
        let e = PidFile::write(&path).unwrap_err().to_string();
        assert!(e.starts_with("-P/--pidfile: cannot write "), "{e}");
        assert!(e.contains("no-such-dir/b.pid"), "{e}");
    }

    #[test]
    fn a_running_pid_is_recognised_but_not_our_own() {
        let dir = Scratch::new("running");
        let path = dir.0.join("c.pid");
        fs::write(&path, "1\n").unwrap();
        assert_eq!(running_pid_in(&path), Some(1));
        fs::write(&path, format!("{}\n", std::process::id())).unwrap();
        assert_eq!(running_pid_in(&path), None);
        fs::write(&path, "not a pid\n").unwrap();
        assert_eq!(running_pid_in(&path), None);
    }
}
