//! The `NAME[:key=value,...]` syntax of policy specs, shared by class policies
//! ([`crate::class::ClassPolicySpec`]) and tenant arbiters ([`crate::tenant::TenantPolicySpec`]), and the
//! errors it reports.
//!
//! A spec is read once, into a typed value that holds the parameters the text gave (absent ones take the
//! policy's defaults when it is built). Parameters are consumed key by key; a key left over, a pair
//! without `=`, a value that does not parse or is out of range is a [`SpecError`] naming the policy and
//! the key. Printing a spec writes its name and the parameters it was given, in the policy's own order,
//! so that parsing the text again gives the same spec.

use std::fmt;
use std::str::FromStr;

/// Which family a spec belongs to; errors say it in words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecKind {
    /// A slab-class policy (`--slab-policy`, the simulator's `--policy`).
    SlabPolicy,
    /// A tenant arbiter (`--tenant-policy`, `tenant_policy` in the tenant file).
    TenantArbiter,
}

impl fmt::Display for SpecKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpecKind::SlabPolicy => "slab policy",
            SpecKind::TenantArbiter => "tenant arbiter",
        })
    }
}

/// Why a policy spec was refused. The message names the policy and, where one is at fault, the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// No policy of that name.
    UnknownPolicy {
        /// The family searched.
        kind: SpecKind,
        /// The name given.
        name: String,
        /// The names the family has.
        names: &'static [&'static str],
    },
    /// A parameter without `=value`.
    MissingValue {
        /// The family of the policy.
        kind: SpecKind,
        /// The parameter as given.
        item: String,
    },
    /// A value that does not parse as the key's type.
    BadValue {
        /// The family of the policy.
        kind: SpecKind,
        /// The policy's name.
        policy: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
    },
    /// A key the policy does not have.
    UnknownParameter {
        /// The family of the policy.
        kind: SpecKind,
        /// The policy's name.
        policy: String,
        /// The key given.
        key: String,
    },
    /// Values that parse but that the policy cannot run with (out of range, inconsistent).
    Invalid {
        /// The family of the policy.
        kind: SpecKind,
        /// The policy's name.
        policy: String,
        /// What is wrong, in words.
        reason: String,
    },
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::UnknownPolicy { kind, name, names } => {
                write!(f, "unknown {kind} `{name}` (one of: {})", names.join(", "))
            }
            SpecError::MissingValue { kind, item } => {
                write!(f, "{kind} parameter `{item}` needs a value (key=value)")
            }
            SpecError::BadValue {
                kind,
                policy,
                key,
                value,
            } => write!(f, "{kind} `{policy}`: bad value `{value}` for `{key}`"),
            SpecError::UnknownParameter { kind, policy, key } => {
                write!(f, "{kind} `{policy}` has no parameter `{key}`")
            }
            SpecError::Invalid {
                kind,
                policy,
                reason,
            } => write!(f, "{kind} `{policy}`: {reason}"),
        }
    }
}

impl std::error::Error for SpecError {}

/// `name:key=value,...`, consumed key by key; keys left over are errors.
pub struct Params<'a> {
    kind: SpecKind,
    /// The policy's name, blanks trimmed.
    pub name: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Params<'a> {
    /// Splits `spec` into its name and `key=value` pairs.
    pub fn parse(kind: SpecKind, spec: &'a str) -> Result<Params<'a>, SpecError> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let mut pairs = Vec::new();
        for item in rest.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| SpecError::MissingValue {
                    kind,
                    item: item.to_string(),
                })?;
            pairs.push((k.trim(), v.trim()));
        }
        Ok(Params {
            kind,
            name: name.trim(),
            pairs,
        })
    }

    /// The raw value of `key`, removed from what is left.
    pub fn take(&mut self, key: &str) -> Option<&'a str> {
        let i = self.pairs.iter().position(|(k, _)| *k == key)?;
        Some(self.pairs.remove(i).1)
    }

    /// `key` parsed as `T`, `None` when absent.
    pub fn get<T: FromStr>(&mut self, key: &str) -> Result<Option<T>, SpecError> {
        match self.take(key) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| self.bad_value(key, v)),
        }
    }

    /// `key` given as `auto` (or absent: `None`) or as a `T` that `valid` accepts; anything else is
    /// refused with `reason(value)`.
    pub fn get_auto<T: FromStr>(
        &mut self,
        key: &str,
        valid: impl Fn(&T) -> bool,
        reason: impl Fn(&str) -> String,
    ) -> Result<Option<Auto<T>>, SpecError> {
        match self.take(key) {
            None => Ok(None),
            Some("auto") => Ok(Some(Auto::Auto)),
            Some(v) => match v.parse::<T>().ok().filter(|x| valid(x)) {
                Some(x) => Ok(Some(Auto::Value(x))),
                None => Err(self.invalid(reason(v))),
            },
        }
    }

    /// The error for `value` of `key` not parsing.
    pub fn bad_value(&self, key: &str, value: &str) -> SpecError {
        SpecError::BadValue {
            kind: self.kind,
            policy: self.name.to_string(),
            key: key.to_string(),
            value: value.to_string(),
        }
    }

    /// The error for values the policy cannot run with.
    pub fn invalid(&self, reason: impl Into<String>) -> SpecError {
        SpecError::Invalid {
            kind: self.kind,
            policy: self.name.to_string(),
            reason: reason.into(),
        }
    }

    /// The error for a name nobody knows.
    pub fn unknown(&self, names: &'static [&'static str]) -> SpecError {
        SpecError::UnknownPolicy {
            kind: self.kind,
            name: self.name.to_string(),
            names,
        }
    }

    /// Fails on any parameter nobody took.
    pub fn finish(&self) -> Result<(), SpecError> {
        match self.pairs.first() {
            None => Ok(()),
            Some((k, _)) => Err(SpecError::UnknownParameter {
                kind: self.kind,
                policy: self.name.to_string(),
                key: k.to_string(),
            }),
        }
    }
}

/// A parameter that may be `auto` (the policy decides) or a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auto<T> {
    /// `key=auto`.
    Auto,
    /// `key=value`.
    Value(T),
}

impl<T> Auto<T> {
    /// The value, `None` for auto.
    pub fn value(self) -> Option<T> {
        match self {
            Auto::Auto => None,
            Auto::Value(v) => Some(v),
        }
    }
}

impl<T: fmt::Display> fmt::Display for Auto<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auto::Auto => f.write_str("auto"),
            Auto::Value(v) => v.fmt(f),
        }
    }
}

/// Writes `name` and then `:key=value,...` for each parameter that is present.
pub fn write_spec(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    params: &[(&str, Option<&dyn fmt::Display>)],
) -> fmt::Result {
    f.write_str(name)?;
    let mut sep = ':';
    for (key, value) in params {
        if let Some(value) = value {
            write!(f, "{sep}{key}={value}")?;
            sep = ',';
        }
    }
    Ok(())
}

/// `Some(&value as &dyn Display)` for [`write_spec`].
pub fn shown<T: fmt::Display>(value: &Option<T>) -> Option<&dyn fmt::Display> {
    value.as_ref().map(|v| v as &dyn fmt::Display)
}
