//! The metrics registry: one table entry per figure, read by both `stats` and `/metrics`.
//!
//! A [`Figure`] names a value twice, under memcached's `stats` name (or none: a `/metrics`-only series)
//! and under our Prometheus name, says what kind it is and how to read it from a snapshot `S` (the
//! general snapshot, one slab class, one tenant). `stats` walks a table in order and prints every figure
//! that has a stats name, so its names and order are the table's; `/metrics` walks the same tables, so
//! the two cannot drift apart.
//!
//! Kinds and what `/metrics` makes of them:
//! - [`Kind::Counter`]: a family `mrcached_<name>`, `<name>` ending in `_total`;
//! - [`Kind::Gauge`]: a family `mrcached_<name>`, in base units (`_bytes`, `_seconds`);
//! - [`Kind::Info`]: a label `<name>` of the one `mrcached_info` series (value 1): process identity that
//!   does not change while it runs (pid, versions, pointer size);
//! - [`Kind::Fixed`]: a constant memcached prints for a feature our design does not have (segmented LRU,
//!   hash table expansion, logger, extstore); it is a literal in the table, and `/metrics` leaves it out,
//!   since a series that can never move tells a dashboard nothing;
//! - [`Kind::Alias`]: the same value as another figure of the same table (memcached prints our one LRU
//!   per class as its `cold` segment, `number_cold` = `number`); `/metrics` carries it once, in the
//!   family the alias names.
//!
//! A figure memcached prints only while its feature is on ([`Figure::shown_when`]: `idle_kicks`, with
//! `-o idle_timeout`) is left out of `stats` otherwise; `/metrics` always carries it.

use std::fmt::Write as _;

/// What a figure is; see the module doc for how each kind is exposed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Info,
    Fixed,
    Alias,
}

/// One value as read from a snapshot.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Uint(u64),
    Int(i64),
    /// Printed as Rust prints an `f64` (`0`, `0.95`).
    Float(f64),
    /// Seconds with microseconds: `stats` prints `S.UUUUUU`, `/metrics` seconds.
    Micros(u64),
    /// A ratio that may not exist yet: `stats` prints `none` or four decimals, `/metrics` NaN or the
    /// ratio.
    Ratio(Option<f64>),
    /// Text: an info label's value.
    Text(String),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Uint(v)
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::Uint(v as u64)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Uint(u64::from(v))
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

impl Value {
    /// The text `stats` prints.
    pub(crate) fn write_stats(&self, out: &mut Vec<u8>) {
        use std::io::Write as _;
        // Writing to a Vec cannot fail.
        let _ = match self {
            Value::Uint(v) => write!(out, "{v}"),
            Value::Int(v) => write!(out, "{v}"),
            Value::Float(v) => write!(out, "{v}"),
            Value::Micros(us) => write!(out, "{}.{:06}", us / 1_000_000, us % 1_000_000),
            Value::Ratio(Some(r)) => write!(out, "{r:.4}"),
            Value::Ratio(None) => write!(out, "none"),
            Value::Text(t) => write!(out, "{t}"),
        };
    }

    /// The sample value `/metrics` prints, or `None` for text (which only an info label carries).
    pub(crate) fn prometheus(&self) -> Option<String> {
        let float = |v: f64| {
            if v.is_nan() {
                "NaN".to_string()
            } else if v.is_infinite() {
                if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
            } else {
                v.to_string()
            }
        };
        Some(match self {
            Value::Uint(v) => v.to_string(),
            Value::Int(v) => v.to_string(),
            Value::Float(v) => float(*v),
            Value::Micros(us) => float(*us as f64 / 1e6),
            Value::Ratio(r) => float(r.unwrap_or(f64::NAN)),
            Value::Text(_) => return None,
        })
    }
}

/// Where a figure's value comes from.
pub(crate) enum Read<S> {
    /// A constant ([`Kind::Fixed`]).
    Fixed(u64),
    Snapshot(fn(&S) -> Value),
}

/// One entry of a registry table.
pub(crate) struct Figure<S> {
    /// memcached's name in the `stats` family the table feeds, or `None` for a `/metrics`-only series.
    pub stats: Option<&'static str>,
    /// The Prometheus family without the `mrcached_` prefix (counters, gauges), the label (info), the
    /// family that carries the value (alias); `None` for a fixed figure.
    pub metric: Option<&'static str>,
    pub kind: Kind,
    /// The family's `# HELP` (for a fixed figure: why it is constant).
    pub help: &'static str,
    pub read: Read<S>,
    /// When `stats` prints it, if not always (memcached prints some figures only while their feature
    /// is on); `/metrics` always carries it.
    pub shown: Option<fn(&S) -> bool>,
}

impl<S> Figure<S> {
    /// The figure, printed by `stats` only when `shown` holds of the snapshot.
    pub(crate) const fn shown_when(mut self, shown: fn(&S) -> bool) -> Self {
        self.shown = Some(shown);
        self
    }

    pub(crate) fn value(&self, snapshot: &S) -> Value {
        match self.read {
            Read::Fixed(v) => Value::Uint(v),
            Read::Snapshot(read) => read(snapshot),
        }
    }

    /// The family `/metrics` prints for it, if any.
    pub(crate) fn family(&self) -> Option<(&'static str, &'static str)> {
        match self.kind {
            Kind::Counter => Some((self.metric?, "counter")),
            Kind::Gauge => Some((self.metric?, "gauge")),
            Kind::Info | Kind::Fixed | Kind::Alias => None,
        }
    }
}

/// A counter: `stats` name, Prometheus name (ending in `_total`), help, reader.
pub(crate) const fn counter<S>(
    stats: &'static str,
    metric: &'static str,
    help: &'static str,
    read: fn(&S) -> Value,
) -> Figure<S> {
    Figure {
        stats: Some(stats),
        metric: Some(metric),
        kind: Kind::Counter,
        help,
        read: Read::Snapshot(read),
        shown: None,
    }
}

/// A gauge: `stats` name, Prometheus name (in base units), help, reader.
pub(crate) const fn gauge<S>(
    stats: &'static str,
    metric: &'static str,
    help: &'static str,
    read: fn(&S) -> Value,
) -> Figure<S> {
    Figure {
        stats: Some(stats),
        metric: Some(metric),
        kind: Kind::Gauge,
        help,
        read: Read::Snapshot(read),
        shown: None,
    }
}

/// A gauge on `/metrics` only (not in memcached's `stats`, whose output stays memcached's).
pub(crate) const fn metrics_gauge<S>(
    metric: &'static str,
    help: &'static str,
    read: fn(&S) -> Value,
) -> Figure<S> {
    Figure {
        stats: None,
        metric: Some(metric),
        kind: Kind::Gauge,
        help,
        read: Read::Snapshot(read),
        shown: None,
    }
}

/// Process identity: a label of `mrcached_info`.
pub(crate) const fn info<S>(
    stats: &'static str,
    label: &'static str,
    help: &'static str,
    read: fn(&S) -> Value,
) -> Figure<S> {
    Figure {
        stats: Some(stats),
        metric: Some(label),
        kind: Kind::Info,
        help,
        read: Read::Snapshot(read),
        shown: None,
    }
}

/// A constant memcached prints; `why` says which feature we do not have.
pub(crate) const fn fixed<S>(stats: &'static str, value: u64, why: &'static str) -> Figure<S> {
    Figure {
        stats: Some(stats),
        metric: None,
        kind: Kind::Fixed,
        help: why,
        read: Read::Fixed(value),
        shown: None,
    }
}

/// The same value as `family` (another figure of the table), under memcached's name.
pub(crate) const fn alias<S>(
    stats: &'static str,
    family: &'static str,
    read: fn(&S) -> Value,
) -> Figure<S> {
    Figure {
        stats: Some(stats),
        metric: Some(family),
        kind: Kind::Alias,
        help: "",
        read: Read::Snapshot(read),
        shown: None,
    }
}

/// Appends `STAT <prefix><name> <value>\r\n` for every figure of `table` that `stats` prints.
pub(crate) fn write_stats<S>(out: &mut Vec<u8>, prefix: &str, table: &[Figure<S>], snapshot: &S) {
    for figure in table {
        let Some(name) = figure.stats else { continue };
        if figure.shown.is_some_and(|shown| !shown(snapshot)) {
            continue;
        }
        out.extend_from_slice(b"STAT ");
        out.extend_from_slice(prefix.as_bytes());
        out.extend_from_slice(name.as_bytes());
        out.push(b' ');
        figure.value(snapshot).write_stats(out);
        out.extend_from_slice(b"\r\n");
    }
}

/// The prefix of every family `/metrics` prints.
const PREFIX: &str = "mrcached_";

/// A Prometheus text exposition (format 0.0.4) being written.
#[derive(Default)]
pub(crate) struct Exposition {
    text: String,
}

impl Exposition {
    /// `# HELP` and `# TYPE` of one family.
    fn header(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(
            self.text,
            "# HELP {PREFIX}{name} {}\n# TYPE {PREFIX}{name} {kind}",
            escape_help(help)
        );
    }

    /// Every counter and gauge of `table`, one unlabelled sample each.
    pub(crate) fn global<S>(&mut self, table: &[Figure<S>], snapshot: &S) {
        for figure in table {
            let Some((name, kind)) = figure.family() else {
                continue;
            };
            if let Some(value) = figure.value(snapshot).prometheus() {
                self.header(name, kind, figure.help);
                let _ = writeln!(self.text, "{PREFIX}{name} {value}");
            }
        }
    }

    /// Every counter and gauge of `table`, one sample per row labelled `label="<row name>"`. A family is
    /// printed (with no samples) even when there are no rows, so its `HELP` is always there.
    pub(crate) fn labelled<S>(&mut self, table: &[Figure<S>], label: &str, rows: &[(String, &S)]) {
        for figure in table {
            let Some((name, kind)) = figure.family() else {
                continue;
            };
            self.header(name, kind, figure.help);
            for (row, snapshot) in rows {
                if let Some(value) = figure.value(snapshot).prometheus() {
                    let _ = writeln!(
                        self.text,
                        "{PREFIX}{name}{{{label}=\"{}\"}} {value}",
                        escape_label(row)
                    );
                }
            }
        }
    }

    /// The `<name>` info series: the info figures of `table` as labels, value 1.
    pub(crate) fn info<S>(&mut self, name: &str, help: &str, table: &[Figure<S>], snapshot: &S) {
        self.header(name, "gauge", help);
        let labels: Vec<String> = table
            .iter()
            .filter(|f| f.kind == Kind::Info)
            .filter_map(|f| {
                let label = f.metric?;
                let value = match f.value(snapshot) {
                    Value::Text(t) => t,
                    other => other.prometheus()?,
                };
                Some(format!("{label}=\"{}\"", escape_label(&value)))
            })
            .collect();
        let _ = writeln!(self.text, "{PREFIX}{name}{{{}}} 1", labels.join(","));
    }

    pub(crate) fn finish(self) -> String {
        self.text
    }
}

/// A label value as the text format wants it: backslash, double quote and newline escaped.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A `# HELP` text: backslash and newline escaped.
fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_memcached_and_prometheus_want_them() {
        let stats = |v: Value| {
            let mut out = Vec::new();
            v.write_stats(&mut out);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(stats(Value::Micros(3_000_042)), "3.000042");
        assert_eq!(stats(Value::Ratio(None)), "none");
        assert_eq!(stats(Value::Ratio(Some(0.123456))), "0.1235");
        assert_eq!(stats(Value::Float(1.0)), "1");
        assert_eq!(stats(Value::Int(-3)), "-3");
        assert_eq!(Value::Micros(1_500_000).prometheus().unwrap(), "1.5");
        assert_eq!(Value::Ratio(None).prometheus().unwrap(), "NaN");
        assert_eq!(Value::Float(f64::INFINITY).prometheus().unwrap(), "+Inf");
        assert_eq!(Value::Text("x".into()).prometheus(), None);
    }

    #[test]
    fn labels_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        let table = [gauge::<u64>("n", "n", "N.", |v| (*v).into())];
        let mut e = Exposition::default();
        e.labelled(&table, "tenant", &[("q\"".to_string(), &5)]);
        assert_eq!(
            e.finish(),
            "# HELP mrcached_n N.\n# TYPE mrcached_n gauge\nmrcached_n{tenant=\"q\\\"\"} 5\n"
        );
    }
}
