//! [`SettingsError`]: why a command line or its files were refused. Every variant's message starts with
//! the flag (or `-o` option) at fault, as memcached's do; `main` prints it and exits with `EX_USAGE`.
//! [`OptionError`] is what is wrong with an `-o` option's value; [`SettingsError::Extended`] adds the key.

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
    /// An `-o` option's value: `-o {key}: {error}`.
    Extended {
        /// The option.
        key: String,
        /// What is wrong with its value.
        error: OptionError,
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
            SettingsError::Extended { key, error } => write!(f, "-o {key}: {error}"),
            SettingsError::UnknownExtended { key } => {
                write!(f, "-o: unknown or unsupported option '{key}'")
            }
            SettingsError::Policy { flag, error } => write!(f, "{flag}: {error}"),
            SettingsError::Tenants { flag, error } => write!(f, "{flag}: {error}"),
        }
    }
}

impl std::error::Error for SettingsError {}

/// Why an `-o` option's value was refused (the key is added by [`SettingsError::Extended`]).
#[derive(Clone, Debug, PartialEq)]
pub enum OptionError {
    /// The option takes a value and none was given: `needs a value ({expects})`.
    NeedsValue {
        /// What the value is, in words (`a ratio`).
        expects: &'static str,
    },
    /// The value is not a number.
    NotANumber,
    /// The value is not one the option takes: `must be {0}` (`0, 1 or 2`, `in [0, 1]`).
    Expected(&'static str),
    /// A number outside memcached's range for the option.
    OutOfRange {
        /// The least accepted.
        min: u64,
        /// The most accepted.
        max: u64,
    },
    /// `shards`: not a power of two, or above the engine's limit.
    NotPowerOfTwo {
        /// The most accepted.
        max: usize,
    },
    /// The process's allowed CPUs could not be read.
    AllowedCpusUnreadable(String),
    /// CPUs outside the process's allowed set.
    CpusNotAllowed {
        /// The CPUs outside it, comma-separated.
        outside: String,
        /// The allowed set.
        allowed: String,
    },
    /// The reason the value's own parser gave (`crate::isolation`'s CPU lists and policies).
    Invalid(String),
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionError::NeedsValue { expects } => write!(f, "needs a value ({expects})"),
            OptionError::NotANumber => f.write_str("must be a number"),
            OptionError::Expected(what) => write!(f, "must be {what}"),
            OptionError::OutOfRange { min, max } => write!(f, "must be between {min} and {max}"),
            OptionError::NotPowerOfTwo { max } => {
                write!(f, "must be a power of two between 1 and {max}")
            }
            OptionError::AllowedCpusUnreadable(why) => {
                write!(f, "cannot read the allowed CPUs: {why}")
            }
            OptionError::CpusNotAllowed { outside, allowed } => write!(
                f,
                "CPU {outside} not in this process's allowed CPUs ({allowed})"
            ),
            OptionError::Invalid(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for OptionError {}
