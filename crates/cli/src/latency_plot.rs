//! `mrcache latency-plot`: latency against achieved throughput from saved `mrcache bench --scan --json`
//! reports, one pair of lines (two percentiles) per report, so two servers loaded the same way can be
//! compared in one figure (Leverich & Kozyrakis's latency-throughput curves).
//!
//! Reads only the `scan` array of each report (`throughput_ops`, `latency_us.pNN`); a report without
//! one is refused with its file name. The latency axis is logarithmic, from 10 µs to
//! `--max-latency-us`: points above it are left out so that the knee stays readable (the report's own
//! table keeps every number). Each report has its colour; the first percentile is drawn thin, the
//! next ones thicker, and the last dashed.

use std::path::{Path, PathBuf};

use crate::figures::{draw, Chart, Series, SeriesStyle};

#[derive(Debug, clap::Args)]
pub struct LatencyPlotArgs {
    /// Reports to draw, LABEL=FILE.json (each from `mrcache bench --scan ... --json > FILE.json`).
    #[arg(required = true, value_name = "LABEL=FILE")]
    pub reports: Vec<String>,

    /// The figure, .svg or .png.
    #[arg(long, short = 'o')]
    pub out: PathBuf,

    /// Percentiles to draw per report, from p50, p90, p95, p99, p999, max.
    #[arg(long, default_value = "p50,p99", value_delimiter = ',')]
    pub percentiles: Vec<String>,

    /// Top of the (logarithmic) latency axis, µs; points above it are left out.
    #[arg(long, default_value_t = 100_000.0)]
    pub max_latency_us: f64,
}

const PERCENTILES: [&str; 6] = ["p50", "p90", "p95", "p99", "p999", "max"];
/// Bottom of the latency axis: below any loopback round trip.
const MIN_LATENCY_US: f64 = 10.0;

pub fn run(args: &LatencyPlotArgs) -> Result<(), String> {
    for p in &args.percentiles {
        if !PERCENTILES.contains(&p.as_str()) {
            return Err(format!(
                "--percentiles: {p:?} is not one of {}",
                PERCENTILES.join(", ")
            ));
        }
    }
    if args.max_latency_us.is_nan() || args.max_latency_us <= MIN_LATENCY_US {
        return Err(format!("--max-latency-us must be above {MIN_LATENCY_US}"));
    }
    let mut series = Vec::new();
    let mut styles = Vec::new();
    for (r, spec) in args.reports.iter().enumerate() {
        let (label, file) = spec
            .split_once('=')
            .ok_or_else(|| format!("{spec:?}: reports are LABEL=FILE.json"))?;
        let steps = read_scan(Path::new(file))?;
        for (i, p) in args.percentiles.iter().enumerate() {
            styles.push(SeriesStyle {
                color: r,
                dashed: i + 1 == args.percentiles.len() && i > 0,
                width: 1 + i.min(2) as u32,
            });
            let points = steps
                .iter()
                .filter_map(|s| {
                    let y = s["latency_us"][p.as_str()].as_f64()?;
                    let x = s["throughput_ops"].as_f64()?;
                    (y <= args.max_latency_us).then_some((x, y.max(MIN_LATENCY_US)))
                })
                .collect();
            series.push(Series {
                label: format!("{label} {p}"),
                points,
            });
        }
    }
    draw(
        &args.out,
        &Chart {
            title: "Latency against throughput (open loop)",
            x_label: "achieved requests/s",
            y_label: "latency (µs, from intended send time)",
            y_range: Some((MIN_LATENCY_US, args.max_latency_us)),
            y_log: true,
            styles,
            series,
        },
    )
}

/// The `scan` steps of one saved report.
fn read_scan(path: &Path) -> Result<Vec<serde_json::Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let report: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a bench --json report: {e}", path.display()))?;
    match report.get("scan").and_then(|s| s.as_array()) {
        Some(steps) if !steps.is_empty() => Ok(steps.clone()),
        _ => Err(format!(
            "{}: no scan steps (run mrcache bench with --scan ... --json)",
            path.display()
        )),
    }
}
