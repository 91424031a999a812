//! `-o key[=value],...`: memcached's extended options and mrcached's own, each declared once as an
//! [`OptionSpec`] in [`OPTIONS`] (`table`). Everything else about them is generated from that table:
//! parsing ([`apply_group`]), the `-o` part of `-h` ([`help`]), their `--print-config` rows
//! ([`print_rows`], used by `Settings::describe`) and the rows of `stats settings` from `maxconns_fast`
//! on (`crate::stats`, which reads the [`Live`] values the table names).
//!
//! An entry is one option, its `no_` form included, or one `stats settings` row that no `-o` key sets.
//! What an option does is its [`Effect`]:
//! - `Sets`: implemented: a function checks the value against memcached's range and sets the fields
//!   of `Settings` it changes.
//! - `Records`: accepted, recorded, no effect: the value is checked, kept in `Settings::recorded` and
//!   shown by the entry's rows (memcached's `hashpower`, which tunes a table mrcached does not have).
//!   memcached reads some values with C's number parsers and checks nothing more; [`OptionArg`]'s
//!   `atoi`, `strtol` and `strtoul` read them the same way, so the rows show what memcached shows.
//! - `Ignored`: accepted with any value or none, not kept; the row shows memcached's default.
//! - `RowOnly`: no `-o` key: a row a flag sets (`flush_enabled` is `-F`), kept here for memcached's
//!   order, or memcached's value for an option mrcached does not accept yet (`track_sizes`).
//!
//! So a memcached option is one entry: a `RowOnly` row gains its key and becomes `Records` (checked,
//! shown, no effect) or `Sets` (with the field it sets), or a new entry is added where memcached
//! prints its row.
//!
//! Invariants (the tests check them): entries with a `stats settings` row stand in memcached 1.6.18's
//! order of those rows (the others may stand anywhere; they set `-h`'s order); a key belongs to one
//! entry and starts with a letter (a piece of an `-o` group starting with a digit continues a list);
//! `RowOnly` entries, and only they, have no key and no help; a `Records` entry's rows show
//! `Recorded`, and only its rows do. Every refusal is a [`SettingsError::Extended`] naming the key.

mod table;

use std::fmt::Write as _;
use std::ops::RangeInclusive;
use std::str::FromStr;

pub(crate) use table::{check_slab_chunk_max, OPTIONS};

use super::{OptionError, Settings, SettingsError};

/// One `-o` option, or one `stats settings` row no `-o` key sets.
pub(crate) struct OptionSpec {
    /// The keys that select it, the one `-h` leads with first (`lru_crawler`, `no_lru_crawler`);
    /// none for a `RowOnly` row.
    pub keys: &'static [&'static str],
    /// Its value, when it takes one.
    pub value: Option<ValueSyntax>,
    /// `-h`'s explanation.
    pub help: &'static str,
    /// `-h`'s `(default: …)`, when the help does not say it.
    pub default: Option<fn() -> String>,
    /// What giving it does.
    pub effect: Effect,
    /// Its `stats settings` row.
    pub stats: Option<Row<StatsValue>>,
    /// Its `--print-config` row.
    pub print: Option<Row<PrintValue>>,
}

/// How an option's value is written.
pub(crate) struct ValueSyntax {
    /// `-h`'s placeholder (`N` in `shards=N`).
    pub metavar: &'static str,
    /// What the value is, in words, when it is missing (`needs a value (a power of two)`).
    pub expects: &'static str,
}

/// What giving an option does.
pub(crate) enum Effect {
    /// Implemented: checks the value and sets the fields it changes.
    Sets(fn(&mut Settings, &OptionArg<'_>) -> Result<(), OptionError>),
    /// Accepted, recorded, no effect: `check` refuses what memcached refuses and returns the value as
    /// the rows show it; `default` is shown when the option is not given.
    Records {
        /// Checks and normalises the value.
        check: fn(&OptionArg<'_>) -> Result<String, OptionError>,
        /// The rows' value when not given (memcached's).
        default: &'static str,
    },
    /// Accepted with any value or none, and not kept: it tunes a part of memcached mrcached does not
    /// have, and its row shows memcached's default.
    Ignored,
    /// Not an option: a `stats settings` row only.
    RowOnly,
}

/// A row of `stats settings` or `--print-config`: a name and where its value comes from.
pub(crate) struct Row<V> {
    /// The row's name.
    pub name: &'static str,
    /// Its value.
    pub value: V,
}

/// Where a `stats settings` value comes from.
pub(crate) enum StatsValue {
    /// The configuration.
    Setting(fn(&Settings) -> String),
    /// memcached's value, which nothing in mrcached changes.
    Fixed(&'static str),
    /// A `Records` option's value.
    Recorded,
    /// The running server's value (`crate::stats` reads it).
    Live(Live),
}

/// Where a `--print-config` value comes from.
pub(crate) enum PrintValue {
    /// The configuration.
    Setting(fn(&Settings) -> String),
    /// A `Records` option's value.
    Recorded,
}

/// `stats settings` values the running server decides: changed by commands (`slabs automove`), chosen
/// by the engine or the kernel (`io` under `auto`), or published by the policies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Live {
    /// `slab_automove`, as `slabs automove N` left it.
    AutomoveMode,
    /// `slab_automove_ratio`, as `slabs automove ratio` left it.
    AutomoveRatio,
    /// The engine's shard count.
    Shards,
    /// The I/O path the workers run.
    Io,
    /// The engine's item accounting.
    ItemAccounting,
    /// The engine's memory layout.
    MemoryLayout,
    /// The class policy in force.
    SlabPolicy,
    /// The tenant arbiter in force.
    TenantPolicy,
    /// Whether the crawler is on, as `lru_crawler enable|disable` left it.
    LruCrawler,
    /// The crawler's sleep, as `lru_crawler sleep` left it.
    LruCrawlerSleep,
    /// The crawler's bound per class, as `lru_crawler tocrawl` left it.
    LruCrawlerTocrawl,
}

/// One `-o` option as given: the key and its value, if any.
pub(crate) struct OptionArg<'a> {
    key: &'a str,
    value: Option<&'a str>,
    expects: &'static str,
}

impl<'a> OptionArg<'a> {
    /// The `no_` form was given (`no_lru_crawler`).
    pub fn negated(&self) -> bool {
        self.key.starts_with("no_")
    }

    /// The value, or `None` when the option was given bare.
    pub fn optional_value(&self) -> Option<&'a str> {
        self.value
    }

    /// The value; refused when missing.
    pub fn value(&self) -> Result<&'a str, OptionError> {
        self.value.ok_or(OptionError::NeedsValue {
            expects: self.expects,
        })
    }

    /// The value as a number.
    pub fn number<T: FromStr>(&self) -> Result<T, OptionError> {
        self.value()?.parse().map_err(|_| OptionError::NotANumber)
    }

    /// The value as memcached reads it with C's `atoi` (`idle_timeout`, `temporary_ttl`): blanks, a
    /// sign and the digits after them, the rest ignored; no digits read as 0, and a number beyond an
    /// `int` keeps its low 32 bits, as glibc's does.
    pub fn atoi(&self) -> Result<i32, OptionError> {
        let text = self.value()?.trim_start_matches(C_BLANKS);
        let (negative, digits) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        // strtol's `long`, held at its bounds on overflow, then cut to an `int`.
        let mut n: i64 = 0;
        for digit in digits.bytes().take_while(u8::is_ascii_digit) {
            let digit = i64::from(digit - b'0');
            n = n.saturating_mul(10);
            n = if negative {
                n.saturating_sub(digit)
            } else {
                n.saturating_add(digit)
            };
        }
        Ok(n as i32)
    }

    /// The value as memcached's `safe_strtol` reads it (`slab_chunk_max`): a whole decimal number, with
    /// blanks and a sign before it and nothing but a blank after it, cut to 32 bits.
    pub fn strtol(&self) -> Result<i32, OptionError> {
        let (negative, digits) = c_number(self.value()?).ok_or(OptionError::NotANumber)?;
        let n: i64 = digits.parse().map_err(|_| OptionError::NotANumber)?;
        Ok((if negative { -n } else { n }) as i32)
    }

    /// The value as memcached's `safe_strtoul` reads it (`read_buf_mem_limit`): [`OptionArg::strtol`]'s
    /// syntax without a minus (but `-0`), cut to 32 bits.
    pub fn strtoul(&self) -> Result<u32, OptionError> {
        let (negative, digits) = c_number(self.value()?).ok_or(OptionError::NotANumber)?;
        let n: u64 = digits.parse().map_err(|_| OptionError::NotANumber)?;
        if negative && n != 0 {
            return Err(OptionError::NotANumber);
        }
        Ok(n as u32)
    }

    /// The value as a number in `range` (memcached's limits for the option).
    pub fn number_in<T>(&self, range: RangeInclusive<T>) -> Result<T, OptionError>
    where
        T: FromStr + PartialOrd + Copy + Into<u64>,
    {
        let n = self.number()?;
        if !range.contains(&n) {
            return Err(OptionError::OutOfRange {
                min: (*range.start()).into(),
                max: (*range.end()).into(),
            });
        }
        Ok(n)
    }
}

/// What C's `isspace` calls blank.
const C_BLANKS: &[char] = &[' ', '\t', '\n', '\x0b', '\x0c', '\r'];

/// A decimal number as C's `strtol` and `strtoul` take it whole: blanks, a sign, digits, and then
/// the end or a blank (after which anything goes); the sign and the digits, or `None`.
fn c_number(text: &str) -> Option<(bool, &str)> {
    let text = text.trim_start_matches(C_BLANKS);
    let (negative, rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let ends_well = rest[end..].is_empty() || rest[end..].starts_with(C_BLANKS);
    (end > 0 && ends_well).then(|| (negative, &rest[..end]))
}

/// The values of `Records` options given on the command line, by key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedOptions(Vec<(&'static str, String)>);

impl RecordedOptions {
    /// The value given for `key`, as its rows show it; `None` when it was not given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Keeps `value` for `key`; the last one given wins, as in memcached.
    fn record(&mut self, key: &'static str, value: String) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }
}

impl OptionSpec {
    /// The value of a `Records` option as its rows show it: what was given, else memcached's default.
    pub fn recorded<'s>(&self, settings: &'s Settings) -> &'s str {
        let Effect::Records { default, .. } = self.effect else {
            unreachable!("only Records options have recorded values")
        };
        settings.recorded.get(self.keys[0]).unwrap_or(default)
    }

    /// `-h`'s left column: `slab_automove=N`, `lru_crawler, no_lru_crawler`.
    fn usage(&self) -> String {
        let mut usage = self.keys.join(", ");
        if let Some(value) = &self.value {
            usage.insert_str(self.keys[0].len(), &format!("={}", value.metavar));
        }
        usage
    }
}

/// The options of one `-o` group: comma-separated, except that a piece starting with a digit continues
/// the option before it (no key starts with one), so `worker_cpus=0,2-3` is one option.
fn split_group(group: &str) -> Vec<String> {
    let mut opts: Vec<String> = Vec::new();
    for piece in group.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        match opts.last_mut() {
            Some(last) if piece.starts_with(|c: char| c.is_ascii_digit()) => {
                last.push(',');
                last.push_str(piece);
            }
            _ => opts.push(piece.to_string()),
        }
    }
    opts
}

/// Applies one `-o` argument (`key[=value],...`) in order; the first refusal names its key.
pub(crate) fn apply_group(settings: &mut Settings, group: &str) -> Result<(), SettingsError> {
    for opt in split_group(group) {
        apply(settings, &opt)?;
    }
    Ok(())
}

/// Applies one `key[=value]`.
fn apply(settings: &mut Settings, opt: &str) -> Result<(), SettingsError> {
    let (key, value) = match opt.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (opt, None),
    };
    let spec = find(key).ok_or_else(|| SettingsError::UnknownExtended {
        key: key.to_string(),
    })?;
    let arg = OptionArg {
        key,
        value,
        expects: spec.value.as_ref().map_or("", |v| v.expects),
    };
    let applied = match spec.effect {
        Effect::Sets(set) => set(settings, &arg),
        Effect::Records { check, .. } => {
            check(&arg).map(|shown| settings.recorded.record(spec.keys[0], shown))
        }
        Effect::Ignored => Ok(()),
        Effect::RowOnly => unreachable!("RowOnly entries have no keys"),
    };
    applied.map_err(|error| SettingsError::Extended {
        key: key.to_string(),
        error,
    })
}

/// The entry `key` selects.
fn find(key: &str) -> Option<&'static OptionSpec> {
    OPTIONS.iter().find(|spec| spec.keys.contains(&key))
}

/// The `--print-config` rows of the options, in the table's order.
pub(crate) fn print_rows(settings: &Settings) -> Vec<(&'static str, String)> {
    OPTIONS
        .iter()
        .filter_map(|spec| {
            let row = spec.print.as_ref()?;
            let value = match row.value {
                PrintValue::Setting(show) => show(settings),
                PrintValue::Recorded => spec.recorded(settings).to_string(),
            };
            Some((row.name, value))
        })
        .collect()
}

/// `-h`'s layout: the usage column's width (after a three-space indent and before one space), the
/// help column's start, and the longest line.
const HELP_USAGE_WIDTH: usize = 23;
const HELP_INDENT: usize = 3 + HELP_USAGE_WIDTH + 1;
const HELP_LINE_WIDTH: usize = 104;

/// The `-o` part of `-h`: the implemented options, then those accepted for compatibility.
pub(crate) fn help() -> String {
    let mut text = String::from("Extended options (-o key[=value],...):\n");
    let implemented = |spec: &&OptionSpec| matches!(spec.effect, Effect::Sets(_));
    for spec in OPTIONS.iter().filter(implemented) {
        help_entry(&mut text, spec);
    }
    text.push_str(
        "\nAccepted for compatibility, with no effect (they tune parts of memcached that mrcached \
         does not have):\n",
    );
    let compatible =
        |spec: &&OptionSpec| matches!(spec.effect, Effect::Records { .. } | Effect::Ignored);
    for spec in OPTIONS.iter().filter(compatible) {
        help_entry(&mut text, spec);
    }
    text
}

/// One option's `-h` lines: the usage, then the help (and its default) wrapped beside it (below it
/// when the usage is wider than its column).
fn help_entry(text: &mut String, spec: &OptionSpec) {
    let usage = spec.usage();
    let mut line = format!("   {usage:<HELP_USAGE_WIDTH$} ");
    if usage.len() >= HELP_USAGE_WIDTH {
        // Too wide for the column: the help starts on the next line.
        let _ = writeln!(text, "{}", line.trim_end());
        line = " ".repeat(HELP_INDENT);
    }
    let mut line_has_words = false;
    let default = spec.default.map(|d| format!("(default: {})", d()));
    let words = spec.help.split_whitespace();
    for word in words.chain(default.iter().flat_map(|d| d.split_whitespace())) {
        if line_has_words && line.len() + 1 + word.len() > HELP_LINE_WIDTH {
            let _ = writeln!(text, "{line}");
            line = " ".repeat(HELP_INDENT);
            line_has_words = false;
        }
        if line_has_words {
            line.push(' ');
        }
        line.push_str(word);
        line_has_words = true;
    }
    let _ = writeln!(text, "{line}");
}

/// `stats settings`'s spelling of a yes/no setting.
pub(crate) fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

#[cfg(test)]
mod tests;
