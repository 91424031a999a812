//! Line-oriented trace formats: ARC `.lis`, Twitter, Meta kvcache, CloudPhysics and MSR CSV.
//!
//! One line can stand for several requests: an ARC line for a run of blocks, a Meta row for
//! `op_count` operations; the reader expands them in order. Block traces give each block
//! request [`ARC_BLOCK_SIZE_BYTES`]; Twitter and Meta sizes are key plus value bytes.

use std::io::BufRead;

use super::error::{LineError, Located, TraceErrorKind};
use super::TraceFormat;
use crate::{Op, Request};

/// ARC traces count 512-byte disk sectors.
const ARC_BLOCK_SIZE_BYTES: u32 = 512;

/// Column positions of a Meta kvcache file, read from its header (the two published files
/// order the trailing columns differently).
#[derive(Debug, Clone, Copy)]
struct MetaColumns {
    key: usize,
    key_size: usize,
    op: usize,
    op_count: usize,
    size: usize,
}

pub(crate) struct LineReader {
    input: Box<dyn BufRead>,
    format: TraceFormat,
    line: String,
    line_number: u64,
    /// Offset of the line being expanded, and of the next line.
    line_offset_bytes: u64,
    next_offset_bytes: u64,
    meta_columns: Option<MetaColumns>,
    /// Requests still to yield from the current line: the request and how many more times.
    repeat: Option<(Request, u64)>,
}

impl LineReader {
    pub(crate) fn new(input: Box<dyn BufRead>, format: TraceFormat) -> Self {
        Self {
            input,
            format,
            line: String::new(),
            line_number: 0,
            line_offset_bytes: 0,
            next_offset_bytes: 0,
            meta_columns: None,
            repeat: None,
        }
    }

    pub(crate) fn next_request(&mut self) -> Result<Option<Request>, Located> {
        loop {
            if let Some((request, remaining)) = self.repeat.take() {
                if remaining > 1 {
                    let next = match self.format {
                        // ARC runs advance one block each.
                        TraceFormat::ArcLis => Request {
                            key: request.key.wrapping_add(1),
                            ..request
                        },
                        _ => request,
                    };
                    self.repeat = Some((next, remaining - 1));
                }
                return Ok(Some(request));
            }
            self.line.clear();
            let read = self
                .input
                .read_line(&mut self.line)
                .map_err(|e| self.error(TraceErrorKind::Io(e)))?;
            if read == 0 {
                return Ok(None);
            }
            self.line_offset_bytes = self.next_offset_bytes;
            self.next_offset_bytes += read as u64;
            self.line_number += 1;
            let trimmed = self.line.trim();
            if trimmed.is_empty() {
                continue;
            }
            match self
                .parse_line()
                .map_err(|e| self.error(TraceErrorKind::Line(e)))?
            {
                Some((request, count)) if count > 0 => self.repeat = Some((request, count)),
                _ => continue,
            }
        }
    }

    fn error(&self, kind: TraceErrorKind) -> Located {
        Located {
            offset_bytes: self.line_offset_bytes,
            line: Some(self.line_number.max(1)),
            kind,
        }
    }

    /// The request of the current line and how many times it repeats; `None` for a header.
    fn parse_line(&mut self) -> Result<Option<(Request, u64)>, LineError> {
        let line = self.line.trim();
        match self.format {
            TraceFormat::ArcLis => {
                let fields: Vec<&str> = line.split_whitespace().collect();
                if fields.len() < 2 {
                    return Err(LineError::ArcFields { line: line.into() });
                }
                let start = number(fields[0], "start_block")?;
                let blocks = number(fields[1], "n_blocks")?;
                Ok(Some((
                    Request {
                        key: start,
                        size: ARC_BLOCK_SIZE_BYTES,
                        op: Op::Get,
                    },
                    blocks,
                )))
            }
            TraceFormat::TwitterCsv => {
                let fields = csv_fields(line, 7)?;
                let size = number(fields[2], "key_size")? + number(fields[3], "value_size")?;
                let op = match fields[5] {
                    "get" | "gets" => Op::Get,
                    "set" | "add" | "replace" | "cas" => Op::Set,
                    "append" | "prepend" | "incr" | "decr" => Op::Update,
                    "delete" => Op::Delete,
                    _ => Op::Other,
                };
                Ok(Some((
                    Request {
                        key: text_key_id(fields[1]),
                        size: clamp_size(size),
                        op,
                    },
                    1,
                )))
            }
            TraceFormat::MetaKvCsv => {
                let Some(columns) = self.meta_columns else {
                    self.meta_columns = Some(meta_columns(line)?);
                    return Ok(None);
                };
                let fields: Vec<&str> = line.split(',').collect();
                let field = |index: usize| {
                    fields.get(index).copied().ok_or(LineError::ShortRow {
                        fields: fields.len(),
                    })
                };
                let size = number(field(columns.key_size)?, "key_size")?
                    + number(field(columns.size)?, "size")?;
                let op = match field(columns.op)? {
                    "GET" | "GET_LEASE" => Op::Get,
                    "SET" | "SET_LEASE" | "ADD" | "REPLACE" | "CAS" => Op::Set,
                    "DELETE" => Op::Delete,
                    _ => Op::Other,
                };
                let count = number(field(columns.op_count)?, "op_count")?.max(1);
                let key = text_key_id(field(columns.key)?);
                Ok(Some((
                    Request {
                        key,
                        size: clamp_size(size),
                        op,
                    },
                    count,
                )))
            }
            TraceFormat::CloudPhysicsCsv => {
                if self.line_number == 1 {
                    const HEADER: &str = "version,time,op,size,lbn";
                    return match line.starts_with(HEADER) {
                        true => Ok(None),
                        false => Err(LineError::BadHeader {
                            expected: HEADER,
                            line: line.into(),
                        }),
                    };
                }
                let fields = csv_fields(line, 5)?;
                // SCSI opcodes: 0x28 READ(10), 0x2a WRITE(10).
                let op = match fields[2] {
                    "28" | "88" | "8" => Op::Get,
                    "2a" | "8a" | "a" => Op::Set,
                    _ => Op::Other,
                };
                let size = number(fields[3], "size")?;
                Ok(Some((
                    Request {
                        key: number(fields[4], "lbn")?,
                        size: clamp_size(size),
                        op,
                    },
                    1,
                )))
            }
            TraceFormat::MsrCsv => {
                let fields = csv_fields(line, 7)?;
                let op = match fields[3] {
                    "Read" => Op::Get,
                    "Write" => Op::Set,
                    other => return Err(LineError::MsrOp { op: other.into() }),
                };
                let size = number(fields[5], "size")?;
                Ok(Some((
                    Request {
                        key: number(fields[4], "offset")?,
                        size: clamp_size(size),
                        op,
                    },
                    1,
                )))
            }
            other => unreachable!("{other} is not a text format"),
        }
    }
}

fn meta_columns(header: &str) -> Result<MetaColumns, LineError> {
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let find = |name: &'static str| {
        names
            .iter()
            .position(|&n| n == name)
            .ok_or_else(|| LineError::MissingColumn {
                name,
                header: header.into(),
            })
    };
    Ok(MetaColumns {
        key: find("key")?,
        key_size: find("key_size")?,
        op: find("op")?,
        op_count: find("op_count")?,
        size: find("size")?,
    })
}

fn csv_fields(line: &str, expected: usize) -> Result<Vec<&str>, LineError> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    if fields.len() < expected {
        return Err(LineError::TooFewFields {
            expected,
            got: fields.len(),
            line: line.into(),
        });
    }
    Ok(fields)
}

fn number(field: &str, name: &'static str) -> Result<u64, LineError> {
    field.parse().map_err(|_| LineError::NotAnInteger {
        name,
        field: field.into(),
    })
}

fn clamp_size(size_bytes: u64) -> u32 {
    size_bytes.min(u64::from(u32::MAX)) as u32
}

/// A 64-bit id for a textual key: FNV-1a over its bytes, then a SplitMix64 finalizer so that
/// similar keys spread over all bits.
pub(crate) fn text_key_id(key: &str) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &byte in key.as_bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(format: TraceFormat, text: &str) -> Result<Vec<Request>, Located> {
        let mut reader = LineReader::new(Box::new(std::io::Cursor::new(text.to_owned())), format);
        let mut out = Vec::new();
        while let Some(request) = reader.next_request()? {
            out.push(request);
        }
        Ok(out)
    }

    #[test]
    fn arc_lines_expand_into_block_runs() {
        let out = requests(TraceFormat::ArcLis, "10 3 0 0\n\n7 1 0 1\n").unwrap();
        let keys: Vec<u64> = out.iter().map(|r| r.key).collect();
        assert_eq!(keys, vec![10, 11, 12, 7]);
    }

    #[test]
    fn meta_rows_follow_their_header_and_repeat_op_count() {
        let text = "op_time,key,key_size,op,op_count,size,cache_hits,usecase,sub_usecase,ttl\n\
                    1,abc,10,GET,3,20,0,1,1,0\n1,abd,10,SET,1,5,0,1,1,0\n";
        let out = requests(TraceFormat::MetaKvCsv, text).unwrap();
        assert_eq!(out.len(), 4);
        assert_eq!(out[0], out[2]);
        assert_eq!((out[0].size, out[0].op, out[3].op), (30, Op::Get, Op::Set));
    }

    #[test]
    fn bad_line_reports_line_and_offset() {
        let error = requests(
            TraceFormat::CloudPhysicsCsv,
            "version,time,op,size,lbn\n1,2,28,x,5\n",
        )
        .unwrap_err();
        assert_eq!((error.line, error.offset_bytes), (Some(2), 25));
        assert!(matches!(
            error.kind,
            TraceErrorKind::Line(LineError::NotAnInteger { name: "size", .. })
        ));
        let error = requests(TraceFormat::TwitterCsv, "0,k,1,2\n").unwrap_err();
        assert_eq!(error.line, Some(1));
    }

    #[test]
    fn text_keys_hash_apart() {
        assert_ne!(text_key_id("a"), text_key_id("b"));
        assert_eq!(text_key_id("abc"), text_key_id("abc"));
    }
}
