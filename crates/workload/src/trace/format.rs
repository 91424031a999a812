//! Trace format names (as the CLI spells them) and detection from a file's name and first line.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use crate::WorkloadError;

/// A trace file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// Detect from the file name and, for CSV, the first line.
    Auto,
    /// cache2k `.trace`: big-endian u32 keys, 4 bytes a request, no sizes.
    U32Be,
    /// Big-endian u64 keys, 8 bytes a request (cache2k's corda traces).
    U64Be,
    /// libCacheSim oracleGeneral: 24-byte little-endian records (u32 time, u64 id, u32 size, i64 next).
    OracleGeneral,
    /// ARC `.lis`: lines `start n ignored request_no`, expanded into blocks start..start+n-1.
    ArcLis,
    /// Twitter cache-trace CSV: `timestamp,key,key_size,value_size,client_id,op,ttl`.
    TwitterCsv,
    /// Meta kvcache CSV with a header naming the columns.
    MetaKvCsv,
    /// CloudPhysics CSV with header `version,time,op,size,lbn`.
    CloudPhysicsCsv,
    /// MSR Cambridge CSV: `filetime,host,disk,Read/Write,offset,size,response_time`.
    MsrCsv,
}

/// Every format name the parser accepts, for help texts.
pub const FORMAT_NAMES: &str =
    "auto|u32be|u64be|oracle-general|arc-lis|twitter-csv|meta-kv-csv|cloudphysics-csv|msr-csv";

impl TraceFormat {
    /// The name `--format` accepts for this format.
    pub fn name(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::U32Be => "u32be",
            Self::U64Be => "u64be",
            Self::OracleGeneral => "oracle-general",
            Self::ArcLis => "arc-lis",
            Self::TwitterCsv => "twitter-csv",
            Self::MetaKvCsv => "meta-kv-csv",
            Self::CloudPhysicsCsv => "cloudphysics-csv",
            Self::MsrCsv => "msr-csv",
        }
    }

    /// Bytes per record of binary formats; `None` for text formats and `Auto`.
    pub fn record_bytes(self) -> Option<usize> {
        match self {
            Self::U32Be => Some(4),
            Self::U64Be => Some(8),
            Self::OracleGeneral => Some(24),
            Self::Auto
            | Self::ArcLis
            | Self::TwitterCsv
            | Self::MetaKvCsv
            | Self::CloudPhysicsCsv
            | Self::MsrCsv => None,
        }
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TraceFormat {
    type Err = WorkloadError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let all = [
            Self::Auto,
            Self::U32Be,
            Self::U64Be,
            Self::OracleGeneral,
            Self::ArcLis,
            Self::TwitterCsv,
            Self::MetaKvCsv,
            Self::CloudPhysicsCsv,
            Self::MsrCsv,
        ];
        all.into_iter()
            .find(|format| format.name() == name)
            .ok_or_else(|| WorkloadError::UnknownTraceFormat { name: name.into() })
    }
}

/// Detects the format of `path`, whose decompressed stream starts with `first_bytes`.
///
/// Names (after any `.xz`/`.gz`/`.zst` suffix): `*.oracleGeneral[.bin]`, `*.lis`, `*.u32be`,
/// `*.u64be`, `*.trace` (u32be, except cache2k's corda traces, which are u64be). CSV files are
/// told apart by their first line: a header names the CloudPhysics and Meta formats; otherwise
/// the operation column (`Read`/`Write` fourth for MSR, a memcached verb sixth for Twitter).
pub(crate) fn detect(path: &Path, first_bytes: &[u8]) -> Option<TraceFormat> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    let name = ["xz", "gz", "zst"]
        .iter()
        .find_map(|ext| name.strip_suffix(&format!(".{ext}")))
        .unwrap_or(&name);
    if name.ends_with(".oraclegeneral.bin") || name.ends_with(".oraclegeneral") {
        return Some(TraceFormat::OracleGeneral);
    }
    if name.ends_with(".lis") {
        return Some(TraceFormat::ArcLis);
    }
    if name.ends_with(".u64be") || (name.ends_with(".trace") && name.contains("corda")) {
        return Some(TraceFormat::U64Be);
    }
    if name.ends_with(".trace") || name.ends_with(".u32be") {
        return Some(TraceFormat::U32Be);
    }
    if name.ends_with(".csv") {
        return detect_csv(first_bytes);
    }
    None
}

fn detect_csv(first_bytes: &[u8]) -> Option<TraceFormat> {
    let text = String::from_utf8_lossy(first_bytes);
    let first_line = text.lines().next()?.trim();
    if first_line.starts_with("version,time,op,size,lbn") {
        return Some(TraceFormat::CloudPhysicsCsv);
    }
    let fields: Vec<&str> = first_line.split(',').collect();
    if fields.contains(&"op_time") && fields.contains(&"key") {
        return Some(TraceFormat::MetaKvCsv);
    }
    if fields.len() == 7 && matches!(fields[3], "Read" | "Write") {
        return Some(TraceFormat::MsrCsv);
    }
    if fields.len() == 7
        && fields[5].chars().all(|c| c.is_ascii_lowercase())
        && !fields[5].is_empty()
    {
        return Some(TraceFormat::TwitterCsv);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in FORMAT_NAMES.split('|') {
            assert_eq!(name.parse::<TraceFormat>().unwrap().name(), name);
        }
        assert!("bogus"
            .parse::<TraceFormat>()
            .unwrap_err()
            .to_string()
            .contains("u32be"));
    }

    #[test]
    fn detects_by_name_and_first_line() {
        let cases = [
            ("a/cache2k-web07.trace.xz", "", Some(TraceFormat::U32Be)),
            ("corda_vaultservice.trace.gz", "", Some(TraceFormat::U64Be)),
            ("x.oracleGeneral.bin", "", Some(TraceFormat::OracleGeneral)),
            ("arc-OLTP.lis.zst", "", Some(TraceFormat::ArcLis)),
            (
                "c.csv",
                "version,time,op,size,lbn\n",
                Some(TraceFormat::CloudPhysicsCsv),
            ),
            (
                "m.csv",
                "op_time,key,key_size,op\n",
                Some(TraceFormat::MetaKvCsv),
            ),
            (
                "t.csv",
                "0,q:1,17,249,1,get,0\n",
                Some(TraceFormat::TwitterCsv),
            ),
            (
                "s.csv",
                "1281,hm,0,Write,905,2048,28\n",
                Some(TraceFormat::MsrCsv),
            ),
            ("u.csv", "a,b\n", None),
            ("notes.txt", "", None),
        ];
        for (path, first, expected) in cases {
            assert_eq!(
                detect(Path::new(path), first.as_bytes()),
                expected,
                "{path}"
            );
        }
    }
}
