//! Drawing miss-ratio curves with plotters: a log-scaled size axis, miss ratio 0..1, one line per
//! curve. Text is measured (SVG) and rasterised (PNG) with a TrueType font found on the system
//! (`MRCACHE_FONT` names one explicitly), since no font ships with the binary.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::mrc::Curve;
use mrcache_profile::SizeUnit;

const WIDTH_PIXELS: u32 = 960;
const HEIGHT_PIXELS: u32 = 600;
/// Debian's fonts-dejavu-core, then other common locations.
const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

pub fn write_plot(
    path: &Path,
    title: &str,
    unit: SizeUnit,
    curves: &[Curve],
) -> Result<(), String> {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !matches!(extension.as_str(), "svg" | "png") {
        return Err(format!(
            "--plot {}: use a .svg or .png file name",
            path.display()
        ));
    }
    register_system_font()?;
    let result = match extension.as_str() {
        "svg" => draw(
            SVGBackend::new(path, (WIDTH_PIXELS, HEIGHT_PIXELS)).into_drawing_area(),
            title,
            unit,
            curves,
        ),
        "png" => draw(
            BitMapBackend::new(path, (WIDTH_PIXELS, HEIGHT_PIXELS)).into_drawing_area(),
            title,
            unit,
            curves,
        ),
        _ => {
            return Err(format!(
                "--plot {}: use a .svg or .png file name",
                path.display()
            ))
        }
    };
    result.map_err(|e| format!("drawing {}: {e}", path.display()))
}

pub(crate) fn register_system_font() -> Result<(), String> {
    let explicit = std::env::var("MRCACHE_FONT").ok();
    let candidates = explicit.iter().map(String::as_str).chain(FONT_PATHS);
    for candidate in candidates {
        if let Ok(bytes) = std::fs::read(candidate) {
            // The font must outlive every drawing; it is loaded once per process.
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| format!("{candidate} is not a usable TrueType font"));
        }
    }
    Err(
        "plots need a TrueType font: install fonts-dejavu-core or set MRCACHE_FONT=FILE.ttf"
            .to_owned(),
    )
}

fn draw<DB: DrawingBackend>(
    area: DrawingArea<DB, Shift>,
    title: &str,
    unit: SizeUnit,
    curves: &[Curve],
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let max_size = curves
        .iter()
        .filter_map(|c| c.mrc.points().last().map(|p| p.size))
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let x_label = match unit {
        SizeUnit::Objects => "cache size (objects)",
        SizeUnit::Bytes => "cache size (bytes)",
    };
    let mut chart = ChartBuilder::on(&area)
        .caption(format!("LRU miss-ratio curve: {title}"), ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d((1f64..max_size).log_scale(), 0f64..1f64)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc("miss ratio")
        .draw()?;
    for (index, curve) in curves.iter().enumerate() {
        let color = Palette99::pick(index).to_rgba();
        let points = curve
            .mrc
            .points()
            .iter()
            .map(|p| (p.size.max(1) as f64, p.miss_ratio));
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(curve.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    area.present()?;
    Ok(())
}
