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
    for request in reader {
        let request = request.map_err(|e| e.to_string())?;
        for profiler in &mut profilers {
            profiler.record(request.key, request.size);
        }
    }

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

/// `--seeds`: how accurate the sampled methods are on one trace, separating sampling noise
/// (spread over seeds), bias (the seed-averaged curve against exact) and the choice of the
/// sizes the error is averaged over.
mod accuracy {
    use std::collections::HashMap;

    use mrcache_profile::{
        AccessObserver, ExactLru, Mrc, MrcProfiler, MrcQuery, ReuseTimeMethod, ReuseTimeProfiler,
        SamplingConfig, ShardsProfiler, SizeUnit,
    };
    use mrcache_workload::open_trace;

    use super::{Method, MrcArgs};

    /// Points of the evenly spaced grid (the SHARDS paper's kind of MAE: every cache size of a
    /// linear histogram up to the working set, weighted alike).
    const LINEAR_POINTS: u64 = 100;

    /// A named set of cache sizes, in objects.
    struct Grid {
        name: String,
        sizes: Vec<u64>,
    }

    /// Per-size sums over keys of the exact per-key miss counts `x_i(c)` (cold miss included)
    /// and access counts `a_i`, from which the variance of a spatially sampled estimate follows.
    struct KeyMoments {
        requests: f64,
        keys: f64,
        /// `sum_i a_i^2`.
        access_sq: f64,
        /// Per size of `sizes`: `sum_i x_i`, `sum_i x_i^2`, `sum_i x_i a_i`.
        misses: Vec<f64>,
        misses_sq: Vec<f64>,
        misses_access: Vec<f64>,
        sizes: Vec<u64>,
    }

    impl KeyMoments {
        /// Standard deviations of the miss-ratio estimate at `sizes[g]` when keys are sampled
        /// independently with probability `rate`, as `(Horvitz-Thompson = SHARDS-adj, ratio =
        /// plain SHARDS)`, assuming every sampled reuse's depth is known exactly. Linearised
        /// (delta method) for the ratio estimator.
        fn sigma(&self, g: usize, rate: f64) -> (f64, f64, f64) {
            let factor = (1.0 - rate) / rate;
            let n2 = self.requests * self.requests;
            let ht = (factor * self.misses_sq[g] / n2).sqrt();
            let m = self.misses[g] / self.requests;
            let residual =
                self.misses_sq[g] - 2.0 * m * self.misses_access[g] + m * m * self.access_sq;
            let ratio = (factor * residual.max(0.0) / n2).sqrt();
            let slope = self.misses_access[g] / self.access_sq;
            let residual = self.misses_sq[g] - slope * self.misses_access[g];
            let regression = (factor * residual.max(0.0) / n2).sqrt();
            (ht, ratio, regression)
        }

        fn index(&self, size: u64) -> usize {
            self.sizes
                .binary_search(&size)
                .expect("grid size was profiled")
        }
    }

    /// Mean, standard deviation, min and max.
    fn summary(values: &[f64]) -> (f64, f64, f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (mean, var.sqrt(), min, max)
    }

    fn reference_sizes(path: &std::path::Path) -> Result<Vec<u64>, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(text
            .lines()
            .skip_while(|line| !line.starts_with("cache_size_objects"))
            .skip(1)
            .take_while(|line| !line.starts_with('#'))
            .filter_map(|line| line.split(',').next()?.trim().parse().ok())
            .collect())
    }

    pub(super) fn run(args: &MrcArgs, seeds: u32) -> Result<(), String> {
        if seeds == 0 {
            return Err("--seeds must be at least 1".to_owned());
        }
        if args.max_samples.is_some() {
            return Err("--seeds measures fixed-rate sampling; drop --max-samples".to_owned());
        }
        let reader = open_trace(&args.trace, args.format).map_err(|e| e.to_string())?;
        let mut trace = Vec::new();
        for request in reader {
            let request = request.map_err(|e| e.to_string())?;
            trace.push((request.key, request.size));
        }

        // Exact pass: depth of every access, keyed by a dense key index.
        let mut exact = ExactLru::new();
        let mut key_index: HashMap<u64, u32> = HashMap::new();
        let mut accesses: Vec<(u32, u64)> = Vec::with_capacity(trace.len());
        for &(key, size) in &trace {
            let next = key_index.len() as u32;
            let index = *key_index.entry(key).or_insert(next);
            let depth = exact.record_depth(key, size).unwrap_or(u64::MAX);
            accesses.push((index, depth));
        }
        let working_set = exact.distinct_keys() as u64;
        let requests = trace.len() as f64;

        let log_sizes = MrcQuery::new(SizeUnit::Objects).sizes(working_set);
        let mut grids = Vec::new();
        if let Some(path) = &args.reference {
            grids.push(Grid {
                name: "ref".to_owned(),
                sizes: reference_sizes(path)?,
            });
        }
        grids.push(Grid {
            name: "log".to_owned(),
            sizes: log_sizes.clone(),
        });
        for &rate in &args.rate {
            let floor = (1.0 / rate).ceil() as u64;
            grids.push(Grid {
                name: format!("log>=1/{}", floor),
                sizes: log_sizes.iter().copied().filter(|&s| s >= floor).collect(),
            });
        }
        let mut linear: Vec<u64> = (1..=LINEAR_POINTS)
            .map(|i| (working_set * i).div_ceil(LINEAR_POINTS))
            .filter(|&s| s > 0)
            .collect();
        linear.dedup();
        grids.push(Grid {
            name: "linear".to_owned(),
            sizes: linear,
        });
        grids.dedup_by(|a, b| a.sizes == b.sizes);
        let mut all_sizes: Vec<u64> = grids.iter().flat_map(|g| g.sizes.clone()).collect();
        all_sizes.sort_unstable();
        all_sizes.dedup();

        let moments = key_moments(&accesses, key_index.len(), &all_sizes, requests);
        drop(accesses);
        let query = MrcQuery {
            unit: SizeUnit::Objects,
            points_per_decade: 0,
            exact_sizes: all_sizes.clone(),
        };
        let exact_curve = exact.mrc(&query);

        println!(
            "# trace={} requests={} keys={} seeds={seeds} first_seed={}",
            args.trace.display(),
            trace.len(),
            working_set,
            args.seed
        );
        for grid in &grids {
            println!("# grid={} points={}", grid.name, grid.sizes.len());
        }
        let access_sq = moments.access_sq;
        for &rate in &args.rate {
            // Effective number of sampled keys for access-weighted quantities.
            let effective = rate * requests * requests / access_sq;
            for grid in &grids {
                let (mut ht, mut ratio, mut regression) = (0.0, 0.0, 0.0);
                for &size in &grid.sizes {
                    let (a, b, c) = moments.sigma(moments.index(size), rate);
                    ht += a;
                    ratio += b;
                    regression += c;
                }
                // E|N(0, s^2)| = s * sqrt(2 / pi).
                let scale = (2.0 / std::f64::consts::PI).sqrt() / grid.sizes.len().max(1) as f64;
                println!(
                    "floor rate={rate} grid={} sampled_keys={:.0} effective_keys={effective:.1} \
                     shards_adj={:.6} ratio={:.6} regression={:.6}",
                    grid.name,
                    rate * moments.keys,
                    ht * scale,
                    ratio * scale,
                    regression * scale
                );
            }
            measure(args, seeds, rate, &trace, &grids, &exact_curve, &query);
        }
        Ok(())
    }

    fn key_moments(
        accesses: &[(u32, u64)],
        keys: usize,
        sizes: &[u64],
        requests: f64,
    ) -> KeyMoments {
        // Group accesses by key (counting sort), then sweep each key's miss counts over sizes.
        let mut starts = vec![0usize; keys + 1];
        for &(key, _) in accesses {
            starts[key as usize + 1] += 1;
        }
        for k in 0..keys {
            starts[k + 1] += starts[k];
        }
        let mut fill = starts.clone();
        // Position of the first size that hits: the access misses at sizes[..position].
        let mut positions = vec![0u32; accesses.len()];
        for &(key, depth) in accesses {
            let position = sizes.partition_point(|&c| c < depth);
            positions[fill[key as usize]] = position as u32;
            fill[key as usize] += 1;
        }
        let g = sizes.len();
        let mut moments = KeyMoments {
            requests,
            keys: keys as f64,
            access_sq: 0.0,
            misses: vec![0.0; g],
            misses_sq: vec![0.0; g],
            misses_access: vec![0.0; g],
            sizes: sizes.to_vec(),
        };
        let mut counts = vec![0u32; g + 1];
        for k in 0..keys {
            let own = &positions[starts[k]..starts[k + 1]];
            let a = own.len() as f64;
            moments.access_sq += a * a;
            counts.iter_mut().for_each(|c| *c = 0);
            for &p in own {
                counts[p as usize] += 1;
            }
            // x(sizes[j]) = accesses with position > j.
            let mut x = 0.0;
            for j in (0..g).rev() {
                x += f64::from(counts[j + 1]);
                if x == 0.0 {
                    continue;
                }
                moments.misses[j] += x;
                moments.misses_sq[j] += x * x;
                moments.misses_access[j] += x * a;
            }
        }
        moments
    }

    /// Runs every sampled method with `seeds` seeds at `rate` and prints, per method,
    /// adjustment and grid, the error's mean, spread and range over seeds and the error of
    /// the seed-averaged curve (the bias, plus noise shrunk by the square root of the seeds).
    fn measure(
        args: &MrcArgs,
        seeds: u32,
        rate: f64,
        trace: &[(u64, u32)],
        grids: &[Grid],
        exact: &Mrc,
        query: &MrcQuery,
    ) {
        let sampling = SamplingConfig::FixedRate { rate };
        let methods: Vec<Method> = args
            .method
            .iter()
            .copied()
            .filter(|&m| m != Method::Exact)
            .collect();
        // curves[method][adjust][seed]
        let mut curves: Vec<Vec<Vec<Mrc>>> =
            vec![vec![Vec::new(); args.adjust.len()]; methods.len()];
        for i in 0..u64::from(seeds) {
            let seed = args.seed.wrapping_add(i);
            let needs_reuse = methods.iter().any(|&m| m != Method::Shards);
            let mut shards = methods
                .contains(&Method::Shards)
                .then(|| ShardsProfiler::new(sampling, seed));
            let mut reuse =
                needs_reuse.then(|| ReuseTimeProfiler::new(ReuseTimeMethod::Aet, sampling, seed));
            if let Some(profiler) = shards.as_mut() {
                for &(key, size) in trace {
                    profiler.record(key, size);
                }
            }
            if let Some(profiler) = reuse.as_mut() {
                for &(key, size) in trace {
                    profiler.record(key, size);
                }
            }
            let reuse_histogram = reuse.as_ref().map(ReuseTimeProfiler::histogram);
            for (m, method) in methods.iter().enumerate() {
                for (a, adjust) in args.adjust.iter().enumerate() {
                    let adjustment = adjust.adjustment();
                    let curve = match method {
                        Method::Shards => shards
                            .as_ref()
                            .expect("shards profiler")
                            .histogram()
                            .clone()
                            .with_adjustment(adjustment)
                            .mrc(query),
                        Method::Footprint | Method::Aet => {
                            let kind = if *method == Method::Aet {
                                ReuseTimeMethod::Aet
                            } else {
                                ReuseTimeMethod::Footprint
                            };
                            reuse_histogram
                                .clone()
                                .expect("reuse-time profiler")
                                .with_adjustment(adjustment)
                                .mrc(kind, query)
                        }
                        Method::Exact => unreachable!("filtered out"),
                    };
                    curves[m][a].push(curve);
                }
            }
        }
        for (m, method) in methods.iter().enumerate() {
            for (a, adjust) in args.adjust.iter().enumerate() {
                let runs = &curves[m][a];
                for grid in grids {
                    let exact_at: Vec<f64> = grid
                        .sizes
                        .iter()
                        .map(|&c| exact.miss_ratio_at(c as f64))
                        .collect();
                    let errors: Vec<f64> = runs
                        .iter()
                        .map(|curve| {
                            grid.sizes
                                .iter()
                                .zip(&exact_at)
                                .map(|(&c, e)| (curve.miss_ratio_at(c as f64) - e).abs())
                                .sum::<f64>()
                                / grid.sizes.len() as f64
                        })
                        .collect();
                    let bias = grid
                        .sizes
                        .iter()
                        .zip(&exact_at)
                        .map(|(&c, e)| {
                            let mean = runs.iter().map(|r| r.miss_ratio_at(c as f64)).sum::<f64>()
                                / runs.len() as f64;
                            mean - e
                        })
                        .collect::<Vec<f64>>();
                    let bias_mae = bias.iter().map(|b| b.abs()).sum::<f64>() / bias.len() as f64;
                    let bias_signed = bias.iter().sum::<f64>() / bias.len() as f64;
                    let (mean, sd, min, max) = summary(&errors);
                    println!(
                        "mae rate={rate} method={} adjust={} grid={} mean={mean:.6} sd={sd:.6} \
                         min={min:.6} max={max:.6} bias_mae={bias_mae:.6} bias_signed={bias_signed:+.6}",
                        method.name(),
                        adjust.name(),
                        grid.name
                    );
                }
            }
        }
    }
}
