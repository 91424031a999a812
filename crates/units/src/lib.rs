//! Byte sizes as people write them: one parser and one formatter, shared by the server's `-m` and
//! `-I`, the tenant file's `reserved`/`max`, and the tool's `--memory`, sweeps and tenant specs, so a
//! size means the same thing wherever it is typed.
//!
//! Grammar (ASCII, case-insensitive, surrounding and inner blanks ignored):
//!
//! ```text
//! size   = ["+"] digits ["." digits] [unit]
//! unit   = "b" | "k" | "kb" | "kib" | "m" | "mb" | "mib" | "g" | "gb" | "gib"
//! ```
//!
//! Every unit is a power of 1024, as in memcached's `-m`: `64MB`, `64MiB`, `64m` and `64M` are all
//! 2^26 bytes. A number without a unit is in the caller's [`Unit`] (`-m 64` is 64 MiB, `-I 1024` is
//! 1024 bytes). A fraction (`1.5GiB`) is accepted only where the caller allows it
//! ([`SizeSyntax::fractions`]); it is rounded down to whole bytes.
//!
//! Invariants: the parser never panics and never overflows (a size past `u64::MAX` bytes is
//! [`SizeError::Overflow`]); [`format_size`] writes the exact value in the largest unit that divides it,
//! which [`parse_size`] reads back to the same number whatever the bare unit.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::fmt;

/// A binary unit of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// 1 byte.
    Bytes,
    /// 2^10 bytes.
    KiB,
    /// 2^20 bytes.
    MiB,
    /// 2^30 bytes.
    GiB,
}

impl Unit {
    /// Bytes in one of this unit.
    pub const fn bytes(self) -> u64 {
        match self {
            Unit::Bytes => 1,
            Unit::KiB => 1 << 10,
            Unit::MiB => 1 << 20,
            Unit::GiB => 1 << 30,
        }
    }

    /// The suffix [`format_size`] writes.
    pub const fn suffix(self) -> &'static str {
        match self {
            Unit::Bytes => "B",
            Unit::KiB => "KiB",
            Unit::MiB => "MiB",
            Unit::GiB => "GiB",
        }
    }

    /// The unit a suffix names (any case), if any; `""` is `None` (no unit given).
    fn from_suffix(suffix: &str) -> Option<Unit> {
        Some(match suffix.to_ascii_lowercase().as_str() {
            "b" => Unit::Bytes,
            "k" | "kb" | "kib" => Unit::KiB,
            "m" | "mb" | "mib" => Unit::MiB,
            "g" | "gb" | "gib" => Unit::GiB,
            _ => return None,
        })
    }
}

/// What a caller accepts beyond the grammar's fixed part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeSyntax {
    /// The unit of a number written without one.
    pub bare: Unit,
    /// Whether `1.5GiB` is accepted (rounded down to whole bytes).
    pub fractions: bool,
}

impl SizeSyntax {
    /// Whole numbers only, bare numbers in `bare`.
    pub const fn whole(bare: Unit) -> SizeSyntax {
        SizeSyntax {
            bare,
            fractions: false,
        }
    }

    /// Fractions allowed, bare numbers in `bare`.
    pub const fn fractional(bare: Unit) -> SizeSyntax {
        SizeSyntax {
            bare,
            fractions: true,
        }
    }
}

/// Why a text is not a size. Each message quotes the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeError {
    /// No number where one was expected (empty text, a sign, letters).
    NotANumber {
        /// The text as given.
        text: String,
    },
    /// A suffix that is not one of the grammar's units.
    UnknownUnit {
        /// The text as given.
        text: String,
        /// The suffix, blanks trimmed.
        unit: String,
    },
    /// A fraction where the caller takes whole numbers only.
    Fraction {
        /// The text as given.
        text: String,
    },
    /// More than `u64::MAX` bytes.
    Overflow {
        /// The text as given.
        text: String,
    },
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeError::NotANumber { text } => write!(f, "`{text}` is not a size"),
            SizeError::UnknownUnit { text, unit } => write!(
                f,
                "`{text}`: unknown size unit `{unit}` (use B, KiB, MiB or GiB)"
            ),
            SizeError::Fraction { text } => {
                write!(f, "`{text}`: a whole number is needed here")
            }
            SizeError::Overflow { text } => write!(f, "`{text}`: too large"),
        }
    }
}

impl std::error::Error for SizeError {}

/// Parses `text` as a size in bytes by the grammar above, a bare number being in `syntax.bare`.
pub fn parse_size(text: &str, syntax: SizeSyntax) -> Result<u64, SizeError> {
    let not_a_number = || SizeError::NotANumber {
        text: text.to_string(),
    };
    let overflow = || SizeError::Overflow {
        text: text.to_string(),
    };
    let t = text.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let number_end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, suffix) = t.split_at(number_end);
    let (whole, fraction) = match number.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (number, None),
    };
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || !fraction.is_none_or(all_digits) {
        return Err(not_a_number());
    }
    if whole.is_empty() && fraction.is_none_or(str::is_empty) {
        return Err(not_a_number());
    }
    let suffix = suffix.trim();
    let unit = if suffix.is_empty() {
        syntax.bare
    } else {
        Unit::from_suffix(suffix).ok_or_else(|| SizeError::UnknownUnit {
            text: text.to_string(),
            unit: suffix.to_string(),
        })?
    };
    if fraction.is_some() && !syntax.fractions {
        return Err(SizeError::Fraction {
            text: text.to_string(),
        });
    }
    // Leading zeros are harmless; past them, more than 20 digits cannot fit a u64.
    let whole = whole.trim_start_matches('0');
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| overflow())?
    };
    let mut bytes = whole.checked_mul(unit.bytes()).ok_or_else(overflow)?;
    if let Some(fraction) = fraction {
        // Exact: floor(0.fraction × unit), from at most 19 digits (the rest cannot add a byte).
        let digits = &fraction[..fraction.len().min(19)];
        if !digits.is_empty() {
            let numerator: u128 = digits.parse().map_err(|_| not_a_number())?;
            let scale = 10u128.pow(digits.len() as u32);
            let part = (numerator * u128::from(unit.bytes()) / scale) as u64;
            bytes = bytes.checked_add(part).ok_or_else(overflow)?;
        }
    }
    Ok(bytes)
}

/// `bytes` in the largest unit that divides it exactly: `64MiB`, `1GiB`, `1536KiB`, `100B`, `0B`.
/// [`parse_size`] reads it back to `bytes` whatever the caller's bare unit.
pub fn format_size(bytes: u64) -> String {
    let unit = [Unit::GiB, Unit::MiB, Unit::KiB]
        .into_iter()
        .find(|u| bytes != 0 && bytes.is_multiple_of(u.bytes()))
        .unwrap_or(Unit::Bytes);
    format!("{}{}", bytes / unit.bytes(), unit.suffix())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const BYTES: SizeSyntax = SizeSyntax::whole(Unit::Bytes);
    const MEGABYTES: SizeSyntax = SizeSyntax::whole(Unit::MiB);
    const FRACTIONAL: SizeSyntax = SizeSyntax::fractional(Unit::Bytes);

    #[test]
    fn every_unit_spelling_is_a_power_of_1024() {
        for (suffixes, bytes) in [
            (&["b", "B"][..], 1u64),
            (&["k", "K", "kb", "KB", "kib", "KiB", "KIB"][..], 1 << 10),
            (&["m", "M", "mb", "MB", "mib", "MiB"][..], 1 << 20),
            (&["g", "G", "gb", "GB", "gib", "GiB"][..], 1 << 30),
        ] {
            for suffix in suffixes {
                assert_eq!(parse_size(&format!("3{suffix}"), BYTES), Ok(3 * bytes));
                assert_eq!(parse_size(&format!(" 3 {suffix} "), BYTES), Ok(3 * bytes));
            }
        }
    }

    #[test]
    fn bare_numbers_take_the_callers_unit() {
        assert_eq!(parse_size("64", MEGABYTES), Ok(64 << 20));
        assert_eq!(parse_size("1024", BYTES), Ok(1024));
        assert_eq!(parse_size("+64", MEGABYTES), Ok(64 << 20));
        assert_eq!(parse_size("0", BYTES), Ok(0));
        assert_eq!(parse_size("007k", BYTES), Ok(7 << 10));
    }

    #[test]
    fn fractions_only_where_allowed() {
        assert_eq!(parse_size("1.5GiB", FRACTIONAL), Ok(3 << 29));
        assert_eq!(parse_size("0.5k", FRACTIONAL), Ok(512));
        assert_eq!(parse_size("1.", FRACTIONAL), Ok(1));
        assert_eq!(parse_size(".5m", FRACTIONAL), Ok(1 << 19));
        assert_eq!(parse_size("1.7", FRACTIONAL), Ok(1), "rounded down");
        assert!(matches!(
            parse_size("1.5g", BYTES),
            Err(SizeError::Fraction { .. })
        ));
    }

    #[test]
    fn bad_sizes_say_why() {
        let e = |t: &str| parse_size(t, FRACTIONAL).unwrap_err();
        assert!(matches!(e(""), SizeError::NotANumber { .. }));
        assert!(matches!(e("abc"), SizeError::NotANumber { .. }));
        assert!(matches!(e("-1"), SizeError::NotANumber { .. }));
        assert!(matches!(e("."), SizeError::NotANumber { .. }));
        assert!(matches!(e("1.2.3"), SizeError::NotANumber { .. }));
        assert_eq!(
            e("12 parsecs").to_string(),
            "`12 parsecs`: unknown size unit `parsecs` (use B, KiB, MiB or GiB)"
        );
        assert_eq!(e("x").to_string(), "`x` is not a size");
        assert!(matches!(e("16777216TB"), SizeError::UnknownUnit { .. }));
        assert!(matches!(e("17179869184g"), SizeError::Overflow { .. }));
        assert!(matches!(
            e("99999999999999999999999"),
            SizeError::Overflow { .. }
        ));
    }

    #[test]
    fn formats_in_the_largest_exact_unit() {
        assert_eq!(format_size(64 << 20), "64MiB");
        assert_eq!(format_size(1 << 30), "1GiB");
        assert_eq!(format_size(1536 << 10), "1536KiB");
        assert_eq!(format_size(100), "100B");
        assert_eq!(format_size(0), "0B");
    }

    proptest! {
        #[test]
        fn format_then_parse_is_the_identity(bytes in any::<u64>()) {
            for syntax in [BYTES, MEGABYTES, FRACTIONAL] {
                prop_assert_eq!(parse_size(&format_size(bytes), syntax), Ok(bytes));
            }
        }

        #[test]
        fn parsing_never_panics(text in "\\PC{0,24}") {
            let _ = parse_size(&text, FRACTIONAL);
        }
    }
}
