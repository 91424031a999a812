//! [`SettingsError`]: why a command line or its files were refused. Every variant's message starts with
//! the flag (or `-o` option) at fault, as memcached's do; `main` prints it and exits with `EX_USAGE`.

use std::fmt;

use mrcache_policy::SpecError;

use crate::tenants::ConfigError;

/// A bad command line; the message names the flag.
#[derive(Clone, Debug, PartialEq)]
pub enum SettingsError {
    /// clap's own refusal (an unknown flag, a number that does not parse), as clap renders it.
    CommandLine(String),
    /// A flag's value is out of range or malformed, or the flag is not supported: `{flag}: {reason}`.
    Flag {
        /// The flag as `-h` shows it (`-m/--memory-limit`).
        flag: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// An `-o` option's value: `-o {key}: {reason}`.
    Extended {
        /// The option.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// An `-o` option that is neither implemented nor ignored.
    UnknownExtended {
        /// The option.
        key: String,
    },
    /// A policy spec (`--slab-policy`, `--tenant-policy`): `{flag}: {error}`.
    Policy {
        /// The flag.
        flag: &'static str,
        /// Why the spec was refused.
        error: SpecError,
    },
    /// The tenant files (`--config`, `-Y/--auth-file`): `{flag}: {error}`.
    Tenants {
        /// The flag whose file is at fault.
        flag: &'static str,
        /// What is wrong in it.
        error: ConfigError,
    },
    /// The engine refused the geometry the flags make (its message names the flags).
    Engine(String),
}

impl SettingsError {
    /// A [`SettingsError::Flag`].
    pub(crate) fn flag(flag: &'static str, reason: impl Into<String>) -> SettingsError {
        SettingsError::Flag {
            flag,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsError::CommandLine(message) | SettingsError::Engine(message) => {
                f.write_str(message)
            }
            SettingsError::Flag { flag, reason } => write!(f, "{flag}: {reason}"),
            SettingsError::Extended { key, reason } => write!(f, "-o {key}: {reason}"),
            SettingsError::UnknownExtended { key } => {
                write!(f, "-o: unknown or unsupported option '{key}'")
            }
            SettingsError::Policy { flag, error } => write!(f, "{flag}: {error}"),
            SettingsError::Tenants { flag, error } => write!(f, "{flag}: {error}"),
        }
    }
}

impl std::error::Error for SettingsError {}
