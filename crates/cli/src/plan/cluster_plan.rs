//! `mrcache plan --server HOST:PORT ...`: read every node's curves, then print (or write as JSON) the
//! predicted hit ratio of the cluster at each total memory and node count, the memory a target hit
//! ratio needs at each node count, and optionally a figure of both. The model is [`super::cluster`]'s.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::cluster::{Cluster, Prediction};
use super::servers::read_node;
use crate::figures::{draw, Chart, Series, SeriesStyle};

/// The target search looks this many times today's total memory far.
const SEARCH_BOUND_TIMES_TOTAL: u64 = 64;
/// Points per line in the figure.
const PLOT_POINTS: usize = 64;
const MIB: f64 = (1u64 << 20) as f64;

/// The cluster planner's options (`--server` turns it on).
#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// Plan a cluster from live mrcached nodes: each node's memcached port HOST:PORT (curves by `stats
    /// mrc`, measured up to the node's memory) or admin port http://HOST:PORT (`/mrc`, curves to each
    /// class's whole working set); repeat the flag or separate with commas. Model: consistent hashing gives each of n
    /// nodes 1/n of the keys and requests, so a node of a planned n'-node cluster with p pages in a slab
    /// class misses as a measured node did with p n'/n pages; each planned node divides its whole pages
    /// among classes optimally (LAMA Algorithm 1); the cluster's miss ratio is the request-weighted mean
    /// over the measured nodes (LAMA eq. 3). Past the memory `stats mrc` curves were measured to they are
    /// held flat, so such hit ratios are lower bounds (marked >=).
    #[arg(
        long = "server",
        value_name = "HOST:PORT",
        value_delimiter = ',',
        conflicts_with_all = ["workload", "trace"]
    )]
    pub servers: Vec<String>,
    /// With --server: node counts to plan for (default: 1, n-1, n, n+1 and 2n for today's n nodes).
    #[arg(long, value_delimiter = ',')]
    pub nodes: Vec<usize>,
    /// With --server: also find the least total memory that reaches this hit ratio (0..1) at each node
    /// count.
    #[arg(long)]
    pub target_hit_ratio: Option<f64>,
    /// With --server: draw hit ratio against total memory, one line per node count (.svg or .png).
    #[arg(long)]
    pub plot: Option<PathBuf>,
}

impl ClusterArgs {
    /// The cluster options given without `--server`, where they mean nothing.
    pub fn stray_option(&self) -> Option<&'static str> {
        if !self.servers.is_empty() {
            return None;
        }
        [
            (!self.nodes.is_empty(), "--nodes"),
            (self.target_hit_ratio.is_some(), "--target-hit-ratio"),
            (self.plot.is_some(), "--plot"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

pub fn run(
    args: &ClusterArgs,
    memories: Option<Vec<u64>>,
    json_output: bool,
) -> Result<(), String> {
    if let Some(t) = args.target_hit_ratio {
        if !(0.0..=1.0).contains(&t) {
            return Err(format!("--target-hit-ratio {t}: give a ratio from 0 to 1"));
        }
    }
    if args.nodes.contains(&0) {
        return Err("--nodes: a cluster has at least one node".into());
    }
    let nodes = args
        .servers
        .iter()
        .map(|s| read_node(s))
        .collect::<Result<Vec<_>, _>>()?;
    let cluster = Cluster::new(nodes)?;
    let today = cluster.total_memory_bytes();
    let memories = memories.unwrap_or_else(|| {
        let quarter = (today / 4).max(cluster.page_size_bytes());
        (1..=8).map(|k| k * quarter).collect()
    });
    let node_counts = if args.nodes.is_empty() {
        let n = cluster.len();
        let mut counts = vec![1, n.saturating_sub(1).max(1), n, n + 1, 2 * n];
        counts.dedup();
        counts
    } else {
        args.nodes.clone()
    };
    let table: Vec<Prediction> = memories
        .iter()
        .flat_map(|&m| node_counts.iter().map(move |&n| (n, m)))
        .map(|(n, m)| cluster.predict(n, m))
        .collect();
    let bound = today.saturating_mul(SEARCH_BOUND_TIMES_TOTAL);
    let targets: Vec<(usize, Option<Prediction>)> = match args.target_hit_ratio {
        Some(t) => node_counts
            .iter()
            .map(|&n| (n, cluster.memory_for(n, t, bound)))
            .collect(),
        None => Vec::new(),
    };
    if let Some(path) = &args.plot {
        plot(path, &cluster, &node_counts, &memories, &targets, args)?;
    }
    let out = &mut std::io::stdout().lock();
    let io = |e: std::io::Error| e.to_string();
    if json_output {
        let row = |p: &Prediction| {
            json!({
                "nodes": p.nodes,
                "total_memory_bytes": p.total_memory_bytes,
                "pages_per_node": p.pages_per_node,
                "hit_ratio": p.hit_ratio(),
                "extrapolated": p.extrapolated,
            })
        };
        let report = json!({
            "servers": args.servers,
            "page_size_bytes": cluster.page_size_bytes(),
            "total_memory_bytes": today,
            "predictions": table.iter().map(row).collect::<Vec<_>>(),
            "target_hit_ratio": args.target_hit_ratio,
            "memory_for_target": targets.iter().map(|(n, p)| json!({
                "nodes": n,
                "plan": p.as_ref().map(row),
            })).collect::<Vec<_>>(),
        });
        return writeln!(out, "{report}").map_err(io);
    }
    writeln!(
        out,
        "# cluster of {} nodes ({}), {} MiB in all, {} KiB pages",
        cluster.len(),
        args.servers.join(" "),
        today >> 20,
        cluster.page_size_bytes() >> 10
    )
    .map_err(io)?;
    writeln!(
        out,
        "# hit ratios marked >= use curves past the memory they were measured to: lower bounds"
    )
    .map_err(io)?;
    writeln!(
        out,
        "total_memory_mib  nodes  memory_per_node_mib  hit_ratio"
    )
    .map_err(io)?;
    for p in &table {
        writeln!(
            out,
            "{:>16}  {:>5}  {:>19}  {:>9}",
            p.total_memory_bytes >> 20,
            p.nodes,
            (p.pages_per_node as u64 * cluster.page_size_bytes()) >> 20,
            hit_ratio_text(p)
        )
        .map_err(io)?;
    }
    if let Some(t) = args.target_hit_ratio {
        writeln!(out, "memory for hit ratio {t}:").map_err(io)?;
        for (n, p) in &targets {
            match p {
                Some(p) => writeln!(
                    out,
                    "{n:>5} nodes: {} MiB in all ({} MiB each), hit ratio {}",
                    p.total_memory_bytes >> 20,
                    (p.pages_per_node as u64 * cluster.page_size_bytes()) >> 20,
                    hit_ratio_text(p)
                ),
                None => {
                    let there = cluster.predict(*n, bound);
                    let hint = if there.extrapolated {
                        "; `stats mrc` curves end at each node's memory: give the admin ports \
                         (--server http://HOST:PORT) to see past it"
                    } else {
                        ""
                    };
                    writeln!(
                        out,
                        "{n:>5} nodes: not reached with up to {} MiB (hit ratio there: {}){hint}",
                        bound >> 20,
                        hit_ratio_text(&there)
                    )
                }
            }
            .map_err(io)?;
        }
    }
    Ok(())
}

fn hit_ratio_text(p: &Prediction) -> String {
    if p.extrapolated {
        format!(">={:.4}", p.hit_ratio())
    } else {
        format!("{:.4}", p.hit_ratio())
    }
}

/// Hit ratio against total memory (MiB), one line per node count (dashed past the measured curves),
/// from nothing to the largest size asked for or found for the target; the target as a thin dashed line.
fn plot(
    path: &std::path::Path,
    cluster: &Cluster,
    node_counts: &[usize],
    memories: &[u64],
    targets: &[(usize, Option<Prediction>)],
    args: &ClusterArgs,
) -> Result<(), String> {
    let largest = memories
        .iter()
        .copied()
        .chain(
            targets
                .iter()
                .filter_map(|(_, p)| p.map(|p| p.total_memory_bytes)),
        )
        .max()
        .unwrap_or(cluster.total_memory_bytes())
        .max(1);
    // Per node count a solid line where the curves were measured, dashed (same colour) past it.
    let mut series: Vec<Series> = Vec::new();
    let mut styles: Vec<SeriesStyle> = Vec::new();
    for (color, &n) in node_counts.iter().enumerate() {
        let label = format!("{n} node{}", if n == 1 { "" } else { "s" });
        let predictions: Vec<Prediction> = (1..=PLOT_POINTS)
            .map(|k| cluster.predict(n, largest * k as u64 / PLOT_POINTS as u64))
            .collect();
        let point = |p: &Prediction| (p.total_memory_bytes as f64 / MIB, p.hit_ratio());
        let measured = predictions.iter().take_while(|p| !p.extrapolated).count();
        let mut style = SeriesStyle {
            color,
            dashed: false,
            width: 2,
        };
        if measured > 0 {
            series.push(Series {
                label: label.clone(),
                points: predictions[..measured].iter().map(point).collect(),
            });
            styles.push(style);
        }
        if measured < predictions.len() {
            series.push(Series {
                label: format!("{label}, past the measured curves (at least)"),
                points: predictions[measured.saturating_sub(1)..]
                    .iter()
                    .map(point)
                    .collect(),
            });
            style.dashed = true;
            styles.push(style);
        }
    }
    if let Some(t) = args.target_hit_ratio {
        series.push(Series {
            label: format!("target {t}"),
            points: vec![(0.0, t), (largest as f64 / MIB, t)],
        });
        styles.push(SeriesStyle {
            color: node_counts.len(),
            dashed: true,
            width: 1,
        });
    }
    let title = format!(
        "Cluster hit ratio from {} nodes' curves (today {} MiB)",
        cluster.len(),
        cluster.total_memory_bytes() >> 20
    );
    draw(
        path,
        &Chart {
            title: &title,
            x_label: "total memory (MiB)",
            y_label: "hit ratio",
            y_range: Some((0.0, 1.0)),
            y_log: false,
            styles,
            series,
        },
    )
}
