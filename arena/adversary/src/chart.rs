//! The SVG chart of the search per generation.
//!
//! Three lines: the best and the mean fitness over the generation's
//! populations (progress plus novelty, see the fitness module), and the best
//! survival rate; a red vertical rule marks the first generation with an
//! escape. Drawn with plotters' SVG backend into a string; the backend
//! writes no timestamp or random id, so the same trace gives the same bytes.

use plotters::prelude::*;

use crate::coevolution::GenerationRecord;
use chio_arena::error::ArenaError;

const BEST: RGBColor = RGBColor(31, 119, 180);
const MEAN: RGBColor = RGBColor(44, 160, 44);
const SURVIVAL: RGBColor = RGBColor(255, 127, 14);
const ESCAPE: RGBColor = RGBColor(214, 39, 40);

/// The first generation of the trace with an escape.
pub fn first_escape(trace: &[GenerationRecord]) -> Option<u32> {
    trace.iter().find(|r| r.escapes > 0).map(|r| r.generation)
}

/// One point per generation: its number and `value` of its record.
fn per_generation(
    trace: &[GenerationRecord],
    value: impl Fn(&GenerationRecord) -> f64,
) -> Vec<(u32, f64)> {
    trace.iter().map(|r| (r.generation, value(r))).collect()
}

/// Renders the chart as SVG text.
pub fn render_chart(scenario_id: &str, trace: &[GenerationRecord]) -> Result<String, ArenaError> {
    let mut svg = String::new();
    let fail = |e: String| ArenaError::Output {
        path: "survival.svg".to_string(),
        cause: format!("chart drawing failed: {e}"),
    };
    let best = per_generation(trace, |r| r.best_fitness);
    let mean = per_generation(trace, |r| r.mean_fitness);
    let survival = per_generation(trace, |r| {
        r.samples
            .iter()
            .map(|s| s.survival_rate())
            .fold(0.0, f64::max)
    });
    let top = best
        .iter()
        .chain(&survival)
        .map(|(_, v)| *v)
        .fold(1.0, f64::max)
        * 1.05;
    {
        let root = SVGBackend::with_string(&mut svg, (800, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(e.to_string()))?;
        let last = trace.last().map_or(1, |r| r.generation.max(1));
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("adversary search per generation: {scenario_id}"),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0u32..last, 0f64..top)
            .map_err(|e| fail(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("generation")
            .y_desc("fitness / survival rate")
            .draw()
            .map_err(|e| fail(e.to_string()))?;
        for (label, points, color) in [
            ("best fitness", best, BEST),
            ("mean fitness", mean, MEAN),
            ("best survival rate", survival, SURVIVAL),
        ] {
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| fail(e.to_string()))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 2, color.filled())),
                )
                .map_err(|e| fail(e.to_string()))?;
        }
        if let Some(g) = first_escape(trace) {
            chart
                .draw_series(LineSeries::new(
                    vec![(g, 0.0), (g, top)],
                    ESCAPE.stroke_width(2),
                ))
                .map_err(|e| fail(e.to_string()))?
                .label(format!("first escape (generation {g})"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], ESCAPE));
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
