//! Errors of trace reading, located by file, byte offset and (text formats) line.

use std::fmt;
use std::path::{Path, PathBuf};

/// What went wrong, without the location.
#[derive(Debug)]
pub(crate) enum TraceErrorKind {
    Io(std::io::Error),
    Empty,
    UnknownFormat,
    Truncated {
        record_bytes: usize,
        partial_bytes: usize,
    },
    Parse(String),
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
            TraceErrorKind::Parse(message) => write!(f, ": {message}"),
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
