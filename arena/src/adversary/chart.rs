//! The SVG chart of survival per generation.
//!
//! One line per lineage (a declared population and its offspring): at each
//! generation, the best survival rate among that lineage's populations.
//! Drawn with plotters' SVG backend into a string; the backend writes no
//! timestamp or random id, so the same trace gives the same bytes.

use std::collections::BTreeMap;

use plotters::prelude::*;

use crate::adversary::coevolution::GenerationRecord;
use crate::error::ArenaError;

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

/// Best survival rate per lineage per generation, lineages sorted by name.
pub fn lineage_series(trace: &[GenerationRecord]) -> BTreeMap<String, Vec<(u32, f64)>> {
    let mut series: BTreeMap<String, Vec<(u32, f64)>> = BTreeMap::new();
    for record in trace {
        let mut best: BTreeMap<&str, f64> = BTreeMap::new();
        for sample in &record.samples {
            let rate = sample.survival_rate();
            let entry = best.entry(sample.lineage.as_str()).or_insert(rate);
            if rate > *entry {
                *entry = rate;
            }
        }
        for (lineage, rate) in best {
            series
                .entry(lineage.to_string())
                .or_default()
                .push((record.generation, rate));
        }
    }
    series
}

/// Renders the chart as SVG text.
pub fn render_chart(scenario_id: &str, trace: &[GenerationRecord]) -> Result<String, ArenaError> {
    let mut svg = String::new();
    let fail = |e: String| ArenaError::Output {
        path: "survival.svg".to_string(),
        cause: format!("chart drawing failed: {e}"),
    };
    {
        let root = SVGBackend::with_string(&mut svg, (800, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let last = trace.last().map_or(1, |r| r.generation.max(1));
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("survival per generation: {scenario_id}"),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0u32..last, 0f64..1.05f64)
            .map_err(|e| fail(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("generation")
            .y_desc("survival rate")
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        for (i, (lineage, points)) in lineage_series(trace).into_iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| fail(e.to_string()))?
                .label(lineage)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(|e| fail(e.to_string()))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        root.present().map_err(|e| fail(e.to_string()))?;
    }
    Ok(svg)
}
