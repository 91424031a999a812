//! The open-files limit: raised at start-up to what `-c` needs, as memcached raises it, or the server
//! refuses to start with memcached's message.
//!
//! memcached sets `RLIMIT_NOFILE` to `-c` (soft and hard) and exits with `EX_OSERR` when it cannot. We
//! need `-c` client sockets plus [`RESERVED_FDS`] descriptors of our own (listeners, epoll instances,
//! wakers, signal pipes, the warm-restart file, the admin listener), so the soft limit must reach
//! `-c + RESERVED_FDS`. We raise only the soft limit when the hard limit allows it (the hard limit is left
//! as it was, where memcached lowers it to `-c`); otherwise we try to raise both (which needs
//! `CAP_SYS_RESOURCE`), and refuse to start if that fails too, where a server that started anyway would
//! leave connections above the limit hanging in the backlog.
//!
//! Invariant: when [`ensure_open_files`] returns `Ok`, the soft limit is at least `-c + RESERVED_FDS`,
//! or at least `-c` when the hard limit allows no more (memcached's own requirement); it returns `Err`
//! exactly when memcached would refuse: the hard limit is below `-c` and cannot be raised.

use std::fmt;

/// Descriptors mrcached keeps besides client sockets (memcached reserves 20 the same way).
pub const RESERVED_FDS: u64 = 20;

/// memcached's exit status when it cannot set the limit (`EX_OSERR`).
pub const EXIT_OSERR: u8 = 71;

/// The limit could not be raised far enough.
#[derive(Debug)]
pub struct OpenFilesError {
    /// Descriptors `-c` needs.
    pub needed: u64,
    /// The soft and hard limits found.
    pub soft: u64,
    /// The hard limit found.
    pub hard: u64,
    /// The system's reason for refusing to raise it.
    pub reason: String,
}

impl fmt::Display for OpenFilesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "failed to set rlimit for open files. Try starting as root or requesting smaller maxconns \
             value. (-c needs {} descriptors; the open-files limit is {} (hard {}): {})",
            self.needed, self.soft, self.hard, self.reason
        )
    }
}

impl std::error::Error for OpenFilesError {}

/// Raises the soft `RLIMIT_NOFILE` to `max_connections + RESERVED_FDS` if it is lower (see the module
/// doc); returns the soft limit in force.
pub fn ensure_open_files(max_connections: usize) -> Result<u64, OpenFilesError> {
    let needed = max_connections as u64 + RESERVED_FDS;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass, which lives for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(OpenFilesError {
            needed,
            soft: 0,
            hard: 0,
            reason: std::io::Error::last_os_error().to_string(),
        });
    }
    let (soft, hard): (u64, u64) = (lim.rlim_cur, lim.rlim_max);
    if soft >= needed {
        return Ok(soft);
    }
    let want = libc::rlimit {
        rlim_cur: needed as libc::rlim_t,
        rlim_max: lim.rlim_max.max(needed as libc::rlim_t),
    };
    // SAFETY: setrlimit reads the struct we pass, which lives for the call.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
        return Ok(needed);
    }
    let reason = std::io::Error::last_os_error().to_string();
    // memcached asks for exactly -c: where the hard limit allows that much but not our reserve too,
    // start as memcached would, with the soft limit at the hard one.
    if hard >= max_connections as u64 {
        let most = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: as above.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &most) } == 0 {
            return Ok(hard);
        }
    }
    Err(OpenFilesError {
        needed,
        soft,
        hard,
        reason,
    })
}
