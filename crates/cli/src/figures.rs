//! Figures of simulations and benchmarks: miss ratio against memory (one line per policy), miss ratio over
//! time (one line per run), pages per slab class over time, latency against throughput (a log latency
//! axis, one colour per server, one line style per percentile). SVG or PNG by file extension, drawn with
//! plotters.

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
    /// A logarithmic y axis (the range must then be above 0).
    pub y_log: bool,
    /// Per series, in order; empty: a palette colour per series, solid lines.
    pub styles: Vec<SeriesStyle>,
    pub series: Vec<Series>,
}

/// How one line is drawn.
#[derive(Clone, Copy, Debug)]
pub struct SeriesStyle {
    /// Index into the palette: series sharing it share a colour.
    pub color: usize,
    pub dashed: bool,
    pub width: u32,
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
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(chart.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64);
    if chart.y_log {
        let mut ctx =
            builder.build_cartesian_2d(x_min..x_max, (y_min.max(1e-9)..y_max).log_scale())?;
        ctx.configure_mesh()
            .x_desc(chart.x_label)
            .y_desc(chart.y_label)
            .draw()?;
        draw_lines(&mut ctx, chart)?;
    } else {
        let mut ctx = builder.build_cartesian_2d(x_min..x_max, y_min..y_max)?;
        ctx.configure_mesh()
            .x_desc(chart.x_label)
            .y_desc(chart.y_label)
            .draw()?;
        draw_lines(&mut ctx, chart)?;
    }
    area.present()?;
    Ok(())
}

fn draw_lines<'a, DB: DrawingBackend + 'a, CT>(
    ctx: &mut ChartContext<'a, DB, CT>,
    chart: &Chart<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    for (i, s) in chart.series.iter().enumerate() {
        let style = chart.styles.get(i).copied().unwrap_or(SeriesStyle {
            color: i,
            dashed: false,
            width: 2,
        });
        let color = Palette99::pick(style.color).to_rgba();
        let stroke = color.stroke_width(style.width);
        let points = s.points.iter().copied();
        let drawn = if style.dashed {
            ctx.draw_series(DashedLineSeries::new(points, 6, 4, stroke))?
        } else {
            ctx.draw_series(LineSeries::new(points, stroke))?
        };
        drawn
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], stroke));
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}
