//! Options shared by the subcommands that replay requests (`sim`, `plan`): where the request stream comes
//! from (a synthetic workload or a trace, with the sizing of key-only traces) and the slab geometry of the
//! engine it is replayed for. Each subcommand flattens these into its own arguments.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clap::Args;
use mrcache_engine::config::ItemAccounting;
use mrcache_engine::config::{DEFAULT_GROWTH_FACTOR, DEFAULT_ITEM_SIZE_MAX_BYTES};
use mrcache_engine::EngineConfig;
use mrcache_sim::sweep::parse_bytes;
use mrcache_sim::TraceSizing;
use mrcache_units::format_size;
use mrcache_workload::synth::{Access, ValueSizeModel, WorkloadSpec};
use mrcache_workload::{open_trace, TraceFormat};

/// A request stream, consumed on the thread that made it.
pub type Stream = Box<dyn Iterator<Item = Access>>;

/// Where a trace stream leaves the error that ended it.
pub type TraceErrorSlot = Arc<Mutex<Option<String>>>;

/// The request stream: `--workload` or `--trace`.
#[derive(Args, Debug)]
pub struct SourceArgs {
    /// Synthetic workload, NAME[:key=value,...] (see below).
    #[arg(long, conflicts_with = "trace", required_unless_present = "trace")]
    pub workload: Option<String>,
    /// Trace file to replay (compressed files are read directly).
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Trace format: auto, u32be, u64be, oracle-general, arc-lis, twitter-csv, meta-kv-csv, cloudphysics-csv,
    /// msr-csv.
    #[arg(long, default_value = "auto")]
    pub format: String,
    /// Value sizes for key-only traces: N bytes, A-B uniform, or etc (Facebook ETC's distribution).
    #[arg(long, default_value = "etc")]
    pub value_size: String,
    /// Draw every trace request's value size from --value-size, also where the trace records sizes
    /// (a block trace's keys with ETC values, as `mrcache bench --popularity trace:PATH` replays them).
    #[arg(long)]
    pub override_sizes: bool,
    /// Key size in bytes for traces (they record numeric ids).
    #[arg(long, default_value_t = 16)]
    pub key_size: u8,
    /// Random seed for synthetic workloads and size models.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl SourceArgs {
    /// A fresh copy of the request stream. A trace error ends the stream and is left in `trace_error`.
    pub fn stream(&self, trace_error: &TraceErrorSlot) -> Result<Stream, String> {
        if let Some(spec) = &self.workload {
            let workload = WorkloadSpec::parse(spec).and_then(|w| w.build(self.seed));
            return Ok(workload.map_err(|e| e.to_string())?);
        }
        let path = self.trace.as_ref().ok_or("give --workload or --trace")?;
        let format: TraceFormat = self.format.parse().map_err(|e| format!("{e}"))?;
        let reader = open_trace(path, format).map_err(|e| e.to_string())?;
        let sizing = TraceSizing {
            key_size: self.key_size.max(8),
            value_size: parse_value_size(&self.value_size)?,
            override_sizes: self.override_sizes,
            seed: self.seed,
        };
        let slot = trace_error.clone();
        Ok(Box::new(reader.map_while(move |r| match r {
            Ok(r) => Some(sizing.access(&r)),
            Err(e) => {
                *slot.lock().unwrap() = Some(e.to_string());
                None
            }
        })))
    }

    /// The workload spec, or the trace's file name, for titles.
    pub fn name(&self) -> String {
        match (&self.workload, &self.trace) {
            (Some(w), _) => w.clone(),
            (None, Some(t)) => Path::new(t)
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            _ => String::new(),
        }
    }
}

/// The error a trace stream ended with, if any (taking it out of the slot).
pub fn take_trace_error(slot: &TraceErrorSlot) -> Result<(), String> {
    match slot.lock().unwrap().take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn parse_value_size(text: &str) -> Result<ValueSizeModel, String> {
    let bad = || format!("--value-size {text}: expected N, A-B or etc");
    if text == "etc" {
        return Ok(ValueSizeModel::ETC);
    }
    match text.split_once('-') {
        Some((a, b)) => Ok(ValueSizeModel::Uniform(
            a.parse().map_err(|_| bad())?,
            b.parse().map_err(|_| bad())?,
        )),
        None => Ok(ValueSizeModel::Fixed(text.parse().map_err(|_| bad())?)),
    }
}

/// The slab geometry: memcached's `-f` and `-I`.
#[derive(Args, Debug)]
pub struct SlabArgs {
    /// Slab growth factor (memcached's -f).
    #[arg(long, default_value_t = DEFAULT_GROWTH_FACTOR)]
    pub growth_factor: f64,
    /// Largest item (memcached's -I), e.g. 1MiB.
    #[arg(long, default_value_t = format_size(DEFAULT_ITEM_SIZE_MAX_BYTES as u64))]
    pub item_size_max: String,
    /// How an item's size picks its slab class: memcached (memcached 1.6's item header and classes)
    /// or compact (the bytes the item occupies: mrcached's `-o item_accounting=`). Default: in `sim`
    /// the server's, compact (memcached with --memcached-defaults); in `plan` memcached, whose default
    /// allocation it models.
    #[arg(long, value_parser = parse_item_accounting)]
    pub item_accounting: Option<ItemAccounting>,
}

fn parse_item_accounting(s: &str) -> Result<ItemAccounting, String> {
    ItemAccounting::parse(s).ok_or_else(|| format!("{s}: expected memcached or compact"))
}

impl SlabArgs {
    /// The simulator's engine configuration at `memory_bytes`: one shard (exact LRU per class), no online
    /// profiling, `accounting` unless `--item-accounting` gives another.
    pub fn engine_config(
        &self,
        memory_bytes: u64,
        accounting: ItemAccounting,
    ) -> Result<EngineConfig, String> {
        let item_size_max =
            parse_bytes(&self.item_size_max).map_err(|e| format!("--item-size-max {e}"))?;
        Ok(EngineConfig {
            memory_limit_bytes: memory_bytes,
            item_size_max_bytes: item_size_max as usize,
            growth_factor: self.growth_factor,
            item_accounting: self.item_accounting.unwrap_or(accounting),
            profile_sample_rate: None,
            ..EngineConfig::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        slab: SlabArgs,
    }

    #[derive(Parser)]
    struct SourceCli {
        #[command(flatten)]
        source: SourceArgs,
    }

    #[test]
    fn override_sizes_replaces_the_sizes_a_trace_records() {
        let dir = std::env::temp_dir().join(format!("mrcache-override-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.oracleGeneral.bin");
        // Two oracleGeneral records (u32 time, u64 id, u32 size, i64 next access), 4,096-byte objects.
        let mut bytes = Vec::new();
        for (t, id) in [(1u32, 7u64), (2, 9)] {
            bytes.extend(t.to_le_bytes());
            bytes.extend(id.to_le_bytes());
            bytes.extend(4096u32.to_le_bytes());
            bytes.extend((-1i64).to_le_bytes());
        }
        std::fs::write(&path, bytes).unwrap();
        let sizes = |extra: &[&str]| -> Vec<u32> {
            let mut argv = vec!["sim", "--trace", path.to_str().unwrap()];
            argv.extend(extra);
            let cli = SourceCli::try_parse_from(argv).unwrap();
            let slot = TraceErrorSlot::default();
            let stream = cli.source.stream(&slot).unwrap();
            stream
                .map(|a| u32::from(a.key_size) + a.value_size)
                .collect()
        };
        assert_eq!(
            sizes(&["--value-size", "100"]),
            [4096, 4096],
            "the trace's own"
        );
        let overridden = sizes(&["--value-size", "100", "--override-sizes"]);
        assert_eq!(overridden, [116, 116], "16-byte keys, 100-byte values");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn item_accounting_reaches_the_engine_and_a_bad_one_is_named() {
        let default = Cli::try_parse_from(["sim"]).unwrap();
        for accounting in [ItemAccounting::Memcached, ItemAccounting::Compact] {
            let config = default.slab.engine_config(64 << 20, accounting).unwrap();
            assert_eq!(config.item_accounting, accounting, "the caller's default");
        }
        let compact = Cli::try_parse_from(["sim", "--item-accounting", "compact"]).unwrap();
        let config = compact
            .slab
            .engine_config(64 << 20, ItemAccounting::Memcached)
            .unwrap();
        assert_eq!(config.item_accounting, ItemAccounting::Compact, "given");
        let err = Cli::try_parse_from(["sim", "--item-accounting", "tight"])
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("--item-accounting") && err.contains("memcached or compact"),
            "{err}"
        );
    }
}
