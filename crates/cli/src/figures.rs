//! Figures of simulations: miss ratio against memory (one line per policy), miss ratio over time (one line
//! per run), and pages per slab class over time. SVG or PNG by file extension, drawn with plotters.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

const WIDTH_PIXELS: u32 = 960;
const HEIGHT_PIXELS: u32 = 600;

/// One line of a figure.
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart with labelled axes.
pub struct Chart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    /// `None`: from the data.
    pub y_range: Option<(f64, f64)>,
    pub series: Vec<Series>,
}

/// Writes `chart` to `path` (.svg or .png).
pub fn draw(path: &Path, chart: &Chart<'_>) -> Result<(), String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    crate::plot::register_system_font()?;
    let result = match ext.as_str() {
        "svg" => render(
            SVGBackend::new(path, (WIDTH_PIXELS, HEIGHT_PIXELS)).into_drawing_area(),
            chart,
        ),
        "png" => render(
            BitMapBackend::new(path, (WIDTH_PIXELS, HEIGHT_PIXELS)).into_drawing_area(),
            chart,
        ),
        _ => return Err(format!("{}: use a .svg or .png file name", path.display())),
    };
    result.map_err(|e| format!("drawing {}: {e}", path.display()))
}

fn render<DB: DrawingBackend>(
    area: DrawingArea<DB, Shift>,
    chart: &Chart<'_>,
) -> Result<(), String> {
    draw_chart(&area, chart).map_err(|e| e.to_string())
}

fn draw_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    area.fill(&WHITE)?;
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let (x_min, x_max) = xs.fold((f64::MAX, f64::MIN), |(a, b), x| (a.min(x), b.max(x)));
    let (x_min, x_max) = if x_min <= x_max {
        (x_min, x_max.max(x_min + 1e-9))
    } else {
        (0.0, 1.0)
    };
    let (y_min, y_max) = chart.y_range.unwrap_or_else(|| {
        let ys = chart
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1));
        let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
        if lo <= hi {
            (0f64.min(lo), hi * 1.05 + 1e-9)
        } else {
            (0.0, 1.0)
        }
    });
    let mut ctx = ChartBuilder::on(area)
        .caption(chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x_min..x_max, y_min..y_max)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .draw()?;
    for (i, s) in chart.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        ctx.draw_series(LineSeries::new(
            s.points.iter().copied(),
            color.stroke_width(2),
        ))?
        .label(s.label.clone())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    area.present()?;
    Ok(())
}
