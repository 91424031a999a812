//! Fixed-size binary records: u32be and u64be keys, and libCacheSim's oracleGeneral.

use std::io::{BufRead, ErrorKind};

use super::error::{Located, TraceErrorKind};
use super::{TraceFormat, KEY_ONLY_SIZE_BYTES};
use crate::{Op, Request};

/// Largest record of any binary format (oracleGeneral).
const MAX_RECORD_BYTES: usize = 24;

/// True when the first bytes read as a line of text: no binary trace of ids starts with a
/// kilobyte-or-less of printable ASCII ending in a newline.
pub(crate) fn looks_like_text(first_bytes: &[u8]) -> bool {
    let head = &first_bytes[..first_bytes.len().min(256)];
    head.contains(&b'\n')
        && head
            .iter()
            .all(|&b| b == b'\n' || b == b'\r' || b == b'\t' || (0x20..0x7f).contains(&b))
}

pub(crate) struct RecordReader {
    input: Box<dyn BufRead>,
    format: TraceFormat,
    record_bytes: usize,
    offset_bytes: u64,
}

impl RecordReader {
    pub(crate) fn new(input: Box<dyn BufRead>, format: TraceFormat, record_bytes: usize) -> Self {
        debug_assert!(record_bytes <= MAX_RECORD_BYTES);
        Self {
            input,
            format,
            record_bytes,
            offset_bytes: 0,
        }
    }

    pub(crate) fn next_request(&mut self) -> Result<Option<Request>, Located> {
        let mut record = [0u8; MAX_RECORD_BYTES];
        let record = &mut record[..self.record_bytes];
        let mut filled = 0;
        while filled < record.len() {
            match self.input.read(&mut record[filled..]) {
                Ok(0) => break,
                Ok(read) => filled += read,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.error(TraceErrorKind::Io(e))),
            }
        }
        if filled == 0 {
            return Ok(None);
        }
        if filled < record.len() {
            let kind = TraceErrorKind::Truncated {
                record_bytes: record.len(),
                partial_bytes: filled,
            };
            return Err(self.error(kind));
        }
        let request = decode(self.format, record);
        self.offset_bytes += record.len() as u64;
        Ok(Some(request))
    }

    fn error(&self, kind: TraceErrorKind) -> Located {
        Located {
            offset_bytes: self.offset_bytes,
            line: None,
            kind,
        }
    }
}

fn decode(format: TraceFormat, record: &[u8]) -> Request {
    let bytes = |range: std::ops::Range<usize>| -> [u8; 8] {
        let mut out = [0u8; 8];
        out[..range.len()].copy_from_slice(&record[range]);
        out
    };
    match format {
        TraceFormat::U32Be => Request {
            key: u64::from(u32::from_be_bytes(
                record[..4].try_into().expect("4-byte record"),
            )),
            size: KEY_ONLY_SIZE_BYTES,
            op: Op::Get,
        },
        TraceFormat::U64Be => Request {
            key: u64::from_be_bytes(bytes(0..8)),
            size: KEY_ONLY_SIZE_BYTES,
            op: Op::Get,
        },
        // u32 time (unused), u64 id, u32 size, i64 next access (unused).
        TraceFormat::OracleGeneral => Request {
            key: u64::from_le_bytes(bytes(4..12)),
            size: u32::from_le_bytes(record[12..16].try_into().expect("4 bytes")),
            op: Op::Get,
        },
        other => unreachable!("{other} is not a binary format"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(format: TraceFormat, bytes: Vec<u8>) -> RecordReader {
        let record_bytes = format.record_bytes().unwrap();
        RecordReader::new(Box::new(std::io::Cursor::new(bytes)), format, record_bytes)
    }

    #[test]
    fn decodes_each_binary_format() {
        let mut u32s = reader(TraceFormat::U32Be, vec![0, 0, 1, 2, 0, 0, 0, 7]);
        assert_eq!(u32s.next_request().unwrap().unwrap().key, 0x102);
        assert_eq!(u32s.next_request().unwrap().unwrap().key, 7);
        assert!(u32s.next_request().unwrap().is_none());

        let mut record = Vec::new();
        record.extend(5u32.to_le_bytes());
        record.extend(0xabcdu64.to_le_bytes());
        record.extend(4096u32.to_le_bytes());
        record.extend((-1i64).to_le_bytes());
        let mut oracle = reader(TraceFormat::OracleGeneral, record);
        let request = oracle.next_request().unwrap().unwrap();
        assert_eq!((request.key, request.size), (0xabcd, 4096));
    }

    #[test]
    fn partial_record_is_an_error_at_its_offset() {
        let mut u64s = reader(TraceFormat::U64Be, vec![0; 11]);
        assert!(u64s.next_request().unwrap().is_some());
        let error = u64s.next_request().unwrap_err();
        assert_eq!(error.offset_bytes, 8);
        assert!(matches!(
            error.kind,
            TraceErrorKind::Truncated {
                partial_bytes: 3,
                ..
            }
        ));
    }

    #[test]
    fn text_is_recognised() {
        assert!(looks_like_text(b"version,time,op\n1,2,3\n"));
        assert!(!looks_like_text(&[0, 0, 0, 1, b'\n']));
    }
}
