//! `mrcache sim`'s figures of pages over time: one per tenant run (`--plot-tenants`) and the shared
//! drawing of pages per partition.

use super::*;

/// `--plot-tenants`: each tenant's pages over time, one figure per run with tenants.
pub(super) fn plot_tenants(
    args: &SimArgs,
    path: &std::path::Path,
    reports: &[SimReport],
) -> Result<(), String> {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("tenants");
    let ext = path.extension().and_then(|s| s.to_str()).unwrap_or("svg");
    let mut used: Vec<String> = Vec::new();
    for r in reports {
        let Some(arbiter) = &r.tenant_policy else {
            continue;
        };
        // The arbiter's name; a second run of the same arbiter (other parameters) gets its number.
        let base = arbiter.split(':').next().unwrap_or(arbiter).to_string();
        let same = used.iter().filter(|u| **u == base).count();
        let name = if same > 0 {
            format!("{base}-{}", same + 1)
        } else {
            base.clone()
        };
        used.push(base);
        let tenants = r.windows.iter().map(|w| w.tenants.len()).max().unwrap_or(0);
        let series = (0..tenants)
            .map(|t| Series {
                label: format!("tenant {t}"),
                points: r
                    .windows
                    .iter()
                    .filter_map(|w| {
                        let pages = w.tenants.get(t)?.pages?;
                        Some((w.end_request as f64 / 1e6, pages as f64))
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect::<Vec<_>>();
        if series.is_empty() {
            // Shared pools (`pooled`): no tenant has pages of its own.
            continue;
        }
        draw_pages(
            &path.with_file_name(format!("{stem}-{name}.{ext}")),
            &format!(
                "Pages per tenant, {} ({})",
                args.source.name(),
                run_label(r)
            ),
            series,
        )?;
    }
    Ok(())
}

/// A figure of pages over time (requests in millions), one series per partition.
pub(super) fn draw_pages(
    path: &std::path::Path,
    title: &str,
    series: Vec<Series>,
) -> Result<(), String> {
    draw(
        path,
        &Chart {
            title,
            x_label: "requests (millions)",
            y_label: "pages",
            y_range: None,
            y_log: false,
            styles: Vec::new(),
            series,
        },
    )
}
