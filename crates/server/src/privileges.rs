//! `-u USER`: who the server runs as when it is started as root, by memcached 1.6.18's rule.
//!
//! A process whose real or effective user id is 0 must be given `-u`; without it, it refuses to start
//! with memcached's line `can't run as root without the -u switch` and `EX_USAGE` (64). With it, it
//! drops every supplementary group (`setgroups(0, NULL)`; `EPERM` there only warns, as in memcached),
//! then takes the user's primary group and the user's id. A user the system does not know is
//! `can't find the user NAME to switch to` with `EX_NOUSER` (67); a failed `setgid`/`setuid` is
//! `failed to assume identity of user NAME` with `EX_OSERR` (71). `-u root` keeps root. A process that
//! is not root ignores `-u`, without even looking the user up.
//!
//! When: `main` calls [`drop_root`] where memcached does, after the open-files limit is raised (which
//! may need root) and before `-d` forks, any thread starts or any socket is bound. So, as with
//! memcached, a port below 1024 cannot be bound under `-u` (unless the service manager grants the
//! capability), and the pid file (`-P`), the warm-restart file (`-e`) and SIGHUP's reload of `-Y` and
//! `--config` are opened as the user. The files `-Y` and `--config` name are first read while the
//! command line is parsed, as root. A single thread also means `setuid` changes the whole process.

use std::ffi::CString;
use std::fmt;
use std::io;

/// `EX_USAGE`: root without `-u`.
pub const EXIT_USAGE: u8 = 64;
/// `EX_NOUSER`: `-u` names no user.
pub const EXIT_NOUSER: u8 = 67;
/// `EX_OSERR`: the system refused the change of identity.
pub const EXIT_OSERR: u8 = 71;

/// Why the process could not become `-u`'s user. `Display` is memcached's message, word for word.
#[derive(Debug)]
pub enum PrivilegeError {
    /// Started as root without `-u` (or with an empty name).
    RootWithoutUser,
    /// The user database has no such user.
    UnknownUser(String),
    /// `setgroups` failed with something other than `EPERM`.
    SupplementaryGroups(io::Error),
    /// `setgid` or `setuid` failed.
    Identity(String),
}

impl PrivilegeError {
    /// The exit status memcached uses for this failure.
    pub fn exit_status(&self) -> u8 {
        match self {
            PrivilegeError::RootWithoutUser => EXIT_USAGE,
            PrivilegeError::UnknownUser(_) => EXIT_NOUSER,
            PrivilegeError::SupplementaryGroups(_) | PrivilegeError::Identity(_) => EXIT_OSERR,
        }
    }
}

impl fmt::Display for PrivilegeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrivilegeError::RootWithoutUser => {
                f.write_str("can't run as root without the -u switch")
            }
            PrivilegeError::UnknownUser(user) => {
                write!(f, "can't find the user {user} to switch to")
            }
            PrivilegeError::SupplementaryGroups(e) => {
                write!(f, "failed to drop supplementary groups: {e}")
            }
            PrivilegeError::Identity(user) => {
                write!(f, "failed to assume identity of user {user}")
            }
        }
    }
}

impl std::error::Error for PrivilegeError {}

/// Whether the real or the effective user id is root (memcached's test).
pub fn running_as_root() -> bool {
    // SAFETY: getuid and geteuid take no arguments and cannot fail.
    unsafe { libc::getuid() == 0 || libc::geteuid() == 0 }
}

/// Becomes `user` if this process is root (see the module notes); does nothing otherwise. Must run
/// before any thread is started.
pub fn drop_root(user: Option<&str>) -> Result<(), PrivilegeError> {
    if !running_as_root() {
        return Ok(());
    }
    let user = match user {
        Some(user) if !user.is_empty() => user,
        _ => return Err(PrivilegeError::RootWithoutUser),
    };
    let (uid, gid) = lookup(user).ok_or_else(|| PrivilegeError::UnknownUser(user.to_string()))?;
    // SAFETY: a count of 0 with a null list is setgroups' documented way to clear the list.
    if unsafe { libc::setgroups(0, std::ptr::null()) } == -1 {
        let e = io::Error::last_os_error();
        // memcached goes on after EPERM: the process already has no right to change its groups.
        if e.raw_os_error() != Some(libc::EPERM) {
            return Err(PrivilegeError::SupplementaryGroups(e));
        }
        eprintln!("{}", PrivilegeError::SupplementaryGroups(e));
    }
    // SAFETY: setgid and setuid take plain ids; the group goes first, while we may still change it.
    if unsafe { libc::setgid(gid) } == -1 || unsafe { libc::setuid(uid) } == -1 {
        return Err(PrivilegeError::Identity(user.to_string()));
    }
    Ok(())
}

/// The user id and primary group of `user`, from the system's user database.
fn lookup(user: &str) -> Option<(libc::uid_t, libc::gid_t)> {
    let name = CString::new(user).ok()?;
    // Large enough for any ordinary passwd entry; ERANGE doubles it.
    let mut buf = vec![0 as libc::c_char; 1024];
    loop {
        // SAFETY: passwd is plain old data, valid when zeroed; getpwnam_r fills it.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is to a live local of the size given; the strings getpwnam_r stores
        // in `entry` point into `buf`, which we do not read.
        let rc = unsafe {
            libc::getpwnam_r(
                name.as_ptr(),
                &mut entry,
                buf.as_mut_ptr(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 2, 0);
            continue;
        }
        return (rc == 0 && !found.is_null()).then_some((entry.pw_uid, entry.pw_gid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_exit_statuses_are_memcacheds() {
        let cases = [
            (
                PrivilegeError::RootWithoutUser,
                "can't run as root without the -u switch",
                64,
            ),
            (
                PrivilegeError::UnknownUser("nosuch".into()),
                "can't find the user nosuch to switch to",
                67,
            ),
            (
                PrivilegeError::Identity("nobody".into()),
                "failed to assume identity of user nobody",
                71,
            ),
        ];
        for (error, message, status) in cases {
            assert_eq!(error.to_string(), message);
            assert_eq!(error.exit_status(), status);
        }
    }

    #[test]
    fn root_is_user_zero_and_unknown_names_are_none() {
        assert_eq!(lookup("root").map(|(uid, _)| uid), Some(0));
        assert_eq!(lookup("no-such-user-mrcached"), None);
        assert_eq!(lookup("bad\0name"), None);
    }
}
