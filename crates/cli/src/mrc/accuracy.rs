//! `--seeds`: how accurate the sampled methods are on one trace, separating sampling noise
//! (spread over seeds), bias (the seed-averaged curve against exact) and the choice of the
//! sizes the error is averaged over.

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
        let residual = self.misses_sq[g] - 2.0 * m * self.misses_access[g] + m * m * self.access_sq;
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
    let mut progress = super::trace_progress(args, reader.format());
    let mut trace = Vec::new();
    for request in progress.track(reader) {
        let request = request.map_err(|e| e.to_string())?;
        trace.push((request.key, request.size));
    }
    progress.finish();

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

fn key_moments(accesses: &[(u32, u64)], keys: usize, sizes: &[u64], requests: f64) -> KeyMoments {
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
    let mut curves: Vec<Vec<Vec<Mrc>>> = vec![vec![Vec::new(); args.adjust.len()]; methods.len()];
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
