//! Trace files: format names and detection, decompression, and the [`TraceReader`] iterator.
//!
//! Binary formats are fixed-size records; a file whose length is not a whole number of records
//! fails at the partial record. Text formats are parsed line by line; a line that does not parse
//! fails with its line number. An empty file (after decompression) is an error, not an empty
//! trace, because it is almost always a wrong path or a failed download.

mod binary;
mod error;
mod format;
mod source;
mod text;

pub use error::{LineError, TraceError, TraceErrorKind};
pub use format::{TraceFormat, FORMAT_NAMES};

use std::io::BufRead;
use std::path::Path;

use crate::Request;

/// Size given to every request of a trace that records no sizes (the cache2k and corda key
/// traces): 1 byte, so a byte curve equals the object curve and no value model is implied.
pub const KEY_ONLY_SIZE_BYTES: u32 = 1;

/// The environment variable naming the shared traces folder, where it is not `../shared/traces`.
pub const SHARED_TRACES_ENV: &str = "MRCACHE_TRACES";

/// The folder of the project's shared real traces: `$MRCACHE_TRACES`, else `../shared/traces` beside the
/// repository. An error (`NotFound`, saying where it looked and how to fix it) when it is not a folder,
/// so a test that needs the traces fails instead of passing without them.
pub fn shared_traces_dir() -> std::io::Result<std::path::PathBuf> {
    let dir = std::env::var_os(SHARED_TRACES_ENV)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/traces")
        });
    if dir.is_dir() {
        return Ok(dir);
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!(
            "no traces at {}: these tests read the shared traces, kept in ../shared/traces beside \
             the repository; put them there or set {SHARED_TRACES_ENV} to their folder",
            dir.display()
        ),
    ))
}

/// Opens `path` as a trace of `format` ([`TraceFormat::Auto`] detects it from the name and, for
/// CSV files, the first line).
pub fn open_trace(path: &Path, format: TraceFormat) -> Result<TraceReader, TraceError> {
    let mut input = source::open(path)?;
    let first_bytes = input
        .fill_buf()
        .map_err(|e| TraceError::new(path, 0, None, TraceErrorKind::Io(e)))?
        .to_vec();
    if first_bytes.is_empty() {
        return Err(TraceError::new(path, 0, None, TraceErrorKind::Empty));
    }
    let format = match format {
        TraceFormat::Auto => format::detect(path, &first_bytes)
            .ok_or_else(|| TraceError::new(path, 0, None, TraceErrorKind::UnknownFormat))?,
        explicit => explicit,
    };
    let decoder = if let Some(record_bytes) = format.record_bytes() {
        if binary::looks_like_text(&first_bytes) {
            return Err(TraceError::new(
                path,
                0,
                None,
                TraceErrorKind::TextNotBinary(format),
            ));
        }
        Decoder::Binary(binary::RecordReader::new(input, format, record_bytes))
    } else {
        Decoder::Text(text::LineReader::new(input, format))
    };
    Ok(TraceReader {
        path: path.to_path_buf(),
        format,
        decoder,
        failed: false,
    })
}

enum Decoder {
    Binary(binary::RecordReader),
    Text(text::LineReader),
}

/// Iterator over the requests of one trace file; stops after the first error.
pub struct TraceReader {
    path: std::path::PathBuf,
    format: TraceFormat,
    decoder: Decoder,
    failed: bool,
}

impl TraceReader {
    /// The format being read (the detected one, when opened with `Auto`).
    pub fn format(&self) -> TraceFormat {
        self.format
    }
}

impl Iterator for TraceReader {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let result = match &mut self.decoder {
            Decoder::Binary(reader) => reader.next_request(),
            Decoder::Text(reader) => reader.next_request(),
        };
        match result {
            Ok(request) => request.map(Ok),
            Err(located) => {
                self.failed = true;
                Some(Err(TraceError::new(
                    &self.path,
                    located.offset_bytes,
                    located.line,
                    located.kind,
                )))
            }
        }
    }
}
