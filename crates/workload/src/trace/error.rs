//! Errors of trace reading, located by file, byte offset and (text formats) line: [`TraceError`],
//! whose [`TraceErrorKind`] (and, for a bad line, [`LineError`]) callers can match on.

use std::fmt;
use std::path::{Path, PathBuf};

use super::TraceFormat;

/// What went wrong, without the location.
#[derive(Debug)]
pub enum TraceErrorKind {
    /// Reading or decompressing failed.
    Io(std::io::Error),
    /// The file holds nothing (after decompression).
    Empty,
    /// `auto` could not tell the format from the name or first line.
    UnknownFormat,
    /// A binary file ends inside a record.
    Truncated {
        /// Bytes of one record.
        record_bytes: usize,
        /// Bytes of the last, partial one.
        partial_bytes: usize,
    },
    /// A `.zst` file that is not a zstd stream; the decoder's message.
    NotZstd(String),
    /// A binary format asked of a file that starts as text.
    TextNotBinary(TraceFormat),
    /// A line of a text format that does not parse.
    Line(LineError),
}

/// Why a line of a text trace does not parse. Fields and lines are quoted as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineError {
    /// An ARC line with fewer than two fields.
    ArcFields {
        /// The line.
        line: String,
    },
    /// A CSV line with too few fields.
    TooFewFields {
        /// Fields the format has.
        expected: usize,
        /// Fields the line has.
        got: usize,
        /// The line.
        line: String,
    },
    /// A Meta row with fewer fields than its header.
    ShortRow {
        /// Fields the row has.
        fields: usize,
    },
    /// A Meta header without one of the columns read.
    MissingColumn {
        /// The column.
        name: &'static str,
        /// The header line.
        header: String,
    },
    /// A CloudPhysics file whose first line is not its header.
    BadHeader {
        /// The header expected.
        expected: &'static str,
        /// The first line.
        line: String,
    },
    /// A field that should be a non-negative integer.
    NotAnInteger {
        /// The field's name.
        name: &'static str,
        /// Its text.
        field: String,
    },
    /// An MSR operation other than Read or Write.
    MsrOp {
        /// The operation's text.
        op: String,
    },
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::ArcFields { line } => write!(
                f,
                "expected `start_block n_blocks ignored request_no`, got {line:?}"
            ),
            LineError::TooFewFields {
                expected,
                got,
                line,
            } => write!(
                f,
                "expected {expected} comma-separated fields, got {got}: {line:?}"
            ),
            LineError::ShortRow { fields } => write!(f, "row has {fields} fields, header more"),
            LineError::MissingColumn { name, header } => {
                write!(f, "header lacks column {name:?}: {header:?}")
            }
            LineError::BadHeader { expected, line } => {
                write!(f, "expected header `{expected}`, got {line:?}")
            }
            LineError::NotAnInteger { name, field } => {
                write!(f, "{name} {field:?} is not a non-negative integer")
            }
            LineError::MsrOp { op } => write!(f, "expected Read or Write, got {op:?}"),
        }
    }
}

/// An error positioned in the decompressed stream, before the path is attached.
#[derive(Debug)]
pub(crate) struct Located {
    pub offset_bytes: u64,
    pub line: Option<u64>,
    pub kind: TraceErrorKind,
}

/// A trace could not be opened or read: which file, where, and why.
#[derive(Debug)]
pub struct TraceError {
    path: PathBuf,
    offset_bytes: u64,
    line: Option<u64>,
    kind: TraceErrorKind,
}

impl TraceError {
    pub(crate) fn new(
        path: &Path,
        offset_bytes: u64,
        line: Option<u64>,
        kind: TraceErrorKind,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            offset_bytes,
            line,
            kind,
        }
    }

    /// The file that failed.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Offset in the decompressed stream where the bad record or line starts.
    pub fn offset_bytes(&self) -> u64 {
        self.offset_bytes
    }

    /// 1-based line number, for text formats.
    pub fn line(&self) -> Option<u64> {
        self.line
    }

    /// What went wrong.
    pub fn kind(&self) -> &TraceErrorKind {
        &self.kind
    }

    /// True when the format could not be detected, so the caller can name its own format option.
    pub fn is_unknown_format(&self) -> bool {
        matches!(self.kind, TraceErrorKind::UnknownFormat)
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: byte {}", self.path.display(), self.offset_bytes)?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        match &self.kind {
            TraceErrorKind::Io(e) => write!(f, ": {e}"),
            TraceErrorKind::Empty => write!(f, ": file is empty"),
            TraceErrorKind::UnknownFormat => {
                write!(f, ": cannot tell the trace format from the name or first line; pass --format")
            }
            TraceErrorKind::Truncated { record_bytes, partial_bytes } => write!(
                f,
                ": truncated record ({partial_bytes} of {record_bytes} bytes); the file is cut short or not in this format"
            ),
            TraceErrorKind::NotZstd(message) => write!(f, ": not a zstd stream: {message}"),
            TraceErrorKind::TextNotBinary(format) => {
                write!(f, ": file looks like text, not {format} binary records")
            }
            TraceErrorKind::Line(e) => write!(f, ": {e}"),
        }
    }
}

impl std::error::Error for TraceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            TraceErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}
