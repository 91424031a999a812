//! Opening a trace file as a buffered stream, decompressing `.xz`, `.gz` and `.zst` by
//! extension with pure-Rust decoders.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::error::{TraceError, TraceErrorKind};

/// 256 KiB buffers: large sequential reads, small next to any trace worth profiling.
const BUFFER_BYTES: usize = 256 * 1024;

pub(crate) fn open(path: &Path) -> Result<Box<dyn BufRead>, TraceError> {
    let io_error = |e| TraceError::new(path, 0, None, TraceErrorKind::Io(e));
    let file = BufReader::with_capacity(BUFFER_BYTES, File::open(path).map_err(io_error)?);
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let decoded: Box<dyn Read> = match extension {
        "xz" => Box::new(lzma_rust2::XzReader::new(file, true)),
        "gz" => Box::new(flate2::read::MultiGzDecoder::new(file)),
        "zst" => {
            let decoder = ruzstd::decoding::StreamingDecoder::new(file).map_err(|e| {
                TraceError::new(path, 0, None, TraceErrorKind::NotZstd(e.to_string()))
            })?;
            Box::new(decoder)
        }
        _ => return Ok(Box::new(file)),
    };
    Ok(Box::new(BufReader::with_capacity(BUFFER_BYTES, decoded)))
}
