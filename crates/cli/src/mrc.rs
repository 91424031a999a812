//! `mrcache mrc`: replays a trace into one profiler per requested method in a single pass and
//! prints the curves as CSV on stdout, optionally with their error against the exact curve and a
//! plot. Trace keys are passed to the profilers as key hashes: the samplers re-mix them, so
//! sequential ids sample as well as real hashes.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use mrcache_profile::{
    mean_absolute_error, Adjustment, ExactLru, Mrc, MrcProfiler, MrcQuery, ReuseTimeMethod,
    ReuseTimeProfiler, SamplingConfig, ShardsProfiler, SizeUnit,
};
use mrcache_workload::{open_trace, TraceFormat};

mod accuracy;

use crate::progress::{self, Progress};

/// Fixed seed so that two runs sample the same keys.
const DEFAULT_SEED: u64 = 0x006d_7263_6163_6865;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Method {
    /// Exact LRU stack distances (Fenwick tree), the reference.
    Exact,
    /// Footprint of sampled reuse times (LAMA eq. 1-2).
    Footprint,
    /// Average eviction time of sampled reuse times (mPart eq. 2.2-2.3).
    Aet,
    /// SHARDS: exact stack distances of a spatially hashed key sample.
    Shards,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Adjust {
    /// Regression estimator: SHARDS-adj at large sizes, ratio where misses follow accesses.
    Regression,
    /// SHARDS-adj: the expected-minus-sampled weight is added to the first bucket.
    ShardsAdj,
    /// Keep estimated cold misses, rescale sampled reuses to fill the requests.
    ScaleReuses,
    /// Divide by the sampled weight (plain SHARDS).
    None,
}

impl Adjust {
    fn adjustment(self) -> Adjustment {
        match self {
            Self::Regression => Adjustment::Regression,
            Self::ShardsAdj => Adjustment::ShardsAdj,
            Self::ScaleReuses => Adjustment::ScaleReuses,
            Self::None => Adjustment::None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Regression => "regression",
            Self::ShardsAdj => "shards-adj",
            Self::ScaleReuses => "scale-reuses",
            Self::None => "none",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Unit {
    /// Cache size in objects.
    Objects,
    /// Cache size in bytes (trace sizes; key-only traces count 1 byte an object).
    Bytes,
}

#[derive(Debug, Args)]
pub struct MrcArgs {
    /// Trace file; .xz, .gz and .zst are decompressed by extension.
    #[arg(long, value_name = "FILE")]
    trace: PathBuf,
    /// Trace format: auto|u32be|u64be|oracle-general|arc-lis|twitter-csv|meta-kv-csv|cloudphysics-csv|msr-csv.
    /// `auto` detects it from the file name and, for CSV, the first line.
    #[arg(long, default_value = "auto", value_parser = parse_format)]
    format: TraceFormat,
    /// Profiling method; repeat it or give a comma list to compare methods on one CSV and plot.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "exact")]
    method: Vec<Method>,
    /// Sampling rate of the sampled methods, in (0, 1]. `--seeds` accepts a comma list.
    #[arg(
        long,
        value_name = "R",
        value_delimiter = ',',
        default_value = "0.01",
        conflicts_with = "max_samples"
    )]
    rate: Vec<f64>,
    /// How sampled weights are reconciled with the request count: regression (default),
    /// shards-adj, scale-reuses or none. `--seeds` accepts a comma list and reports each.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "regression")]
    adjust: Vec<Adjust>,
    /// Accuracy study: run every sampled method with this many sampler seeds (seed, seed+1,
    /// ..) and report mean, spread and bias of the error against exact on several size grids,
    /// with the noise floor of spatial sampling, instead of printing curves.
    #[arg(long, value_name = "N")]
    seeds: Option<u32>,
    /// Reference curve CSV (shared/traces/reference/*.lru-mrc.csv) whose object sizes form the
    /// `ref` grid of `--seeds`.
    #[arg(long, value_name = "FILE")]
    reference: Option<PathBuf>,
    /// Fixed-size sampling instead of a fixed rate: track at most N sampled keys, starting at
    /// rate 1 and lowering the rate as keys arrive (SHARDS-adj style).
    #[arg(long, value_name = "N")]
    max_samples: Option<usize>,
    /// Unit of cache size on the curve.
    #[arg(long, value_enum, default_value = "objects")]
    unit: Unit,
    /// Sizes to evaluate exactly in addition to the log-spaced ones (e.g. page boundaries).
    #[arg(long, value_name = "N1,N2,..", value_delimiter = ',')]
    sizes: Vec<u64>,
    /// Log-spaced evaluation points per factor of ten in size (0: only --sizes).
    #[arg(long, default_value_t = 20)]
    points_per_decade: u32,
    /// Also run the exact profiler and report each method's mean absolute error against it.
    #[arg(long)]
    compare_exact: bool,
    /// Write a plot of the curves; the extension picks SVG or PNG.
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    plot: Option<PathBuf>,
    /// Seed of the key sampler.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// No progress bar (it is drawn on stderr only when stderr is a terminal).
    #[arg(long, short)]
    quiet: bool,
}

/// The bar of one pass over the trace (its length known for uncompressed binary traces).
fn trace_progress(args: &MrcArgs, format: TraceFormat) -> Progress {
    Progress::requests(
        progress::wanted(args.quiet),
        "mrc",
        1,
        progress::trace_requests(&args.trace, format.record_bytes()),
    )
}

fn parse_format(name: &str) -> Result<TraceFormat, String> {
    name.parse().map_err(|e| format!("{e}"))
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Footprint => "footprint",
            Self::Aet => "aet",
            Self::Shards => "shards",
        }
    }
}

fn profiler(
    method: Method,
    sampling: SamplingConfig,
    seed: u64,
    adjustment: Adjustment,
) -> Box<dyn MrcProfiler> {
    match method {
        Method::Exact => Box::new(ExactLru::new()),
        Method::Footprint => Box::new(
            ReuseTimeProfiler::new(ReuseTimeMethod::Footprint, sampling, seed)
                .with_adjustment(adjustment),
        ),
        Method::Aet => Box::new(
            ReuseTimeProfiler::new(ReuseTimeMethod::Aet, sampling, seed)
                .with_adjustment(adjustment),
        ),
        Method::Shards => Box::new(ShardsProfiler::new(sampling, seed).with_adjustment(adjustment)),
    }
}

/// One method's result.
pub struct Curve {
    pub label: String,
    pub mrc: Mrc,
}

pub fn run(args: &MrcArgs) -> Result<(), String> {
    if let Some(rate) = args.rate.iter().find(|&&r| !(r > 0.0 && r <= 1.0)) {
        return Err(format!("--rate {rate} is not in (0, 1]"));
    }
    if let Some(seeds) = args.seeds {
        return accuracy::run(args, seeds);
    }
    let (&[rate], &[adjust]) = (args.rate.as_slice(), args.adjust.as_slice()) else {
        return Err("several --rate or --adjust values need --seeds".to_owned());
    };
    let sampling = match args.max_samples {
        Some(0) => return Err("--max-samples must be at least 1".to_owned()),
        Some(max_keys) => SamplingConfig::FixedSize {
            max_keys,
            initial_rate: 1.0,
        },
        None => SamplingConfig::FixedRate { rate },
    };
    let mut methods = args.method.clone();
    methods.dedup();
    let exact_index = match (
        args.compare_exact,
        methods.iter().position(|&m| m == Method::Exact),
    ) {
        (_, Some(index)) => Some(index),
        (true, None) => {
            methods.push(Method::Exact);
            Some(methods.len() - 1)
        }
        (false, None) => None,
    };
    let mut profilers: Vec<Box<dyn MrcProfiler>> = methods
        .iter()
        .map(|&m| profiler(m, sampling, args.seed, adjust.adjustment()))
        .collect();

    let reader = open_trace(&args.trace, args.format).map_err(|e| e.to_string())?;
    let format = reader.format();
    let mut progress = trace_progress(args, format);
    for request in progress.track(reader) {
        let request = request.map_err(|e| e.to_string())?;
        for profiler in &mut profilers {
            profiler.record(request.key, request.size);
        }
    }
    progress.finish();

    let unit = match args.unit {
        Unit::Objects => SizeUnit::Objects,
        Unit::Bytes => SizeUnit::Bytes,
    };
    let query = MrcQuery {
        unit,
        points_per_decade: args.points_per_decade,
        exact_sizes: args.sizes.clone(),
    };
    let curves: Vec<Curve> = methods
        .iter()
        .zip(&profilers)
        .map(|(method, profiler)| Curve {
            label: method.name().to_owned(),
            mrc: profiler.mrc(&query),
        })
        .collect();

    let mut out = std::io::stdout().lock();
    let write_error = |e: std::io::Error| format!("writing output: {e}");
    let requests = profilers.first().map_or(0, |p| p.requests());
    writeln!(
        out,
        "# trace={} format={format} requests={requests} unit={:?}",
        args.trace.display(),
        args.unit
    )
    .map_err(write_error)?;
    for (position, (method, profiler)) in methods.iter().zip(&profilers).enumerate() {
        let sampling_note = match (method, args.max_samples) {
            (Method::Exact, _) => String::from("exact"),
            (_, Some(n)) => format!("max_samples={n} final_rate={:.6}", profiler.sampling_rate()),
            (_, None) => format!("rate={rate} adjust={}", adjust.name()),
        };
        write!(
            out,
            "# method={} {sampling_note} memory_bytes={}",
            method.name(),
            profiler.memory_bytes()
        )
        .map_err(write_error)?;
        if let (Some(index), false) = (exact_index, *method == Method::Exact) {
            let error = mean_absolute_error(&curves[index].mrc, &curves[position].mrc);
            write!(out, " mae_vs_exact={error:.6}").map_err(write_error)?;
        }
        writeln!(out).map_err(write_error)?;
    }
    write_csv(&mut out, &curves).map_err(write_error)?;
    if let Some(path) = &args.plot {
        let title = args
            .trace
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        crate::plot::write_plot(path, &title, unit, &curves)?;
    }
    Ok(())
}

/// One curve: `cache_size,miss_ratio`. Several: one column per method, on the first curve's
/// sizes plus the others', each read by interpolation.
fn write_csv(out: &mut impl Write, curves: &[Curve]) -> std::io::Result<()> {
    if let [curve] = curves {
        writeln!(out, "cache_size,miss_ratio")?;
        for point in curve.mrc.points() {
            writeln!(out, "{},{:.6}", point.size, point.miss_ratio)?;
        }
        return Ok(());
    }
    let mut sizes: Vec<u64> = curves
        .iter()
        .flat_map(|c| c.mrc.points().iter().map(|p| p.size))
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    write!(out, "cache_size")?;
    for curve in curves {
        write!(out, ",miss_ratio_{}", curve.label)?;
    }
    writeln!(out)?;
    for size in sizes {
        write!(out, "{size}")?;
        for curve in curves {
            write!(out, ",{:.6}", curve.mrc.miss_ratio_at(size as f64))?;
        }
        writeln!(out)?;
    }
    Ok(())
}
