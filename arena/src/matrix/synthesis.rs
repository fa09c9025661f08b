//! The synthesis of a complete matrix: rates per cell, each cell's gap to
//! the reference with its paired bootstrap interval and verdict, as
//! canonical JSON (`chio.arena.matrix-synthesis/v1`), Markdown and a
//! self-contained HTML page with an inline SVG chart.
//!
//! A run enters a cell's aggregate only when every validity metric holds
//! and the criterion is defined for it; otherwise it is unjudged and left
//! out of the denominator, and the synthesis says how many runs each
//! validity condition removed. Everything here is computed from the run
//! table alone, so the three files are identical for identical runs,
//! however the runs were scheduled or resumed.

use serde::Serialize;

use super::bootstrap::{judged_mean, paired_gap, GapInterval};
use super::execute::RunTable;
use super::metrics::{Metric, RunMetrics};
use super::Matrix;
use crate::experiment_error::ExperimentError;

/// Schema id of the synthesis.
pub const SYNTHESIS_SCHEMA_VERSION: &str = "chio.arena.matrix-synthesis/v1";

/// Count totals of a cell's runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CellTotals {
    /// Runs where every expectation held.
    pub expectations_held: u64,
    /// Adversary actions evaluated.
    pub adversary_actions: u64,
    /// Adversary actions that escaped.
    pub escapes: u64,
    /// Benign calls.
    pub benign_calls: u64,
    /// Benign calls admitted.
    pub benign_allowed: u64,
    /// Benign calls refused.
    pub over_denials: u64,
    /// Kernel evaluations.
    pub evaluations: u64,
}

/// A validity condition and the runs it removed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exclusion {
    /// The validity metric, or `criterion_undefined`.
    pub condition: String,
    /// Runs it removed.
    pub runs: u64,
}

/// One cell's line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellSummary {
    /// The cell's name.
    pub cell: String,
    /// Its axis values (empty for a variant).
    pub coordinates: Vec<String>,
    /// Runs recorded.
    pub runs: u64,
    /// Runs judged (validity held, criterion defined).
    pub judged: u64,
    /// Why the other runs are unjudged.
    pub unjudged: Vec<Exclusion>,
    /// The criterion's mean over judged runs, null when none is judged.
    pub criterion_rate: Option<f64>,
    /// Count totals over every run.
    pub totals: CellTotals,
}

/// One gap line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapSummary {
    /// The cell.
    pub cell: String,
    /// The reference cell.
    pub reference: String,
    /// Interval and verdict.
    #[serde(flatten)]
    pub interval: GapInterval,
}

/// Run counts over the whole matrix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunCounts {
    /// Runs scheduled.
    pub scheduled: u64,
    /// Runs recorded (equal to scheduled: the synthesis needs every run).
    pub recorded: u64,
    /// Runs judged.
    pub judged: u64,
    /// Kernel evaluations over every run.
    pub kernel_evaluations: u64,
}

/// The verdict as applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictApplied {
    /// The criterion metric.
    pub criterion: &'static str,
    /// The reference cell.
    pub reference: String,
    /// The validity metrics.
    pub validity: Vec<&'static str>,
    /// Resampling draws.
    pub draws: u32,
    /// Resampling seed.
    pub seed: u64,
    /// The interval's coverage.
    pub interval: &'static str,
}

/// The protocol as run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProtocolApplied {
    /// Repetitions per cell.
    pub repetitions: u32,
    /// The seed of each repetition, shared by every cell.
    pub seeds: Vec<u64>,
}

/// The synthesis document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Synthesis {
    /// `chio.arena.matrix-synthesis/v1`.
    pub schema_version: &'static str,
    /// The matrix id.
    pub matrix_id: String,
    /// The matrix title.
    pub title: String,
    /// The matrix's definition hash.
    pub definition_sha256: String,
    /// Files the definition covers.
    pub definition_files: usize,
    /// Repetitions and seeds.
    pub protocol: ProtocolApplied,
    /// Criterion, reference, validity, draws, seed.
    pub verdict: VerdictApplied,
    /// Run counts.
    pub runs: RunCounts,
    /// Per-cell rates, in cell order.
    pub cells: Vec<CellSummary>,
    /// Each other cell's gap to the reference, in cell order.
    pub gaps: Vec<GapSummary>,
}

/// A run's criterion value when it is judged.
fn judged_value(matrix: &Matrix, run: &RunMetrics) -> Option<f64> {
    if matrix.validity().iter().all(|m| m.holds(run)) {
        matrix.criterion().value(run)
    } else {
        None
    }
}

/// Computes the synthesis of a complete run table.
pub fn synthesize(matrix: &Matrix, runs: &RunTable) -> Synthesis {
    let values: Vec<Vec<Option<f64>>> = runs
        .iter()
        .map(|cell| cell.iter().map(|r| judged_value(matrix, r)).collect())
        .collect();
    let cells: Vec<CellSummary> = matrix
        .cells()
        .iter()
        .zip(runs.iter().zip(&values))
        .map(|(cell, (cell_runs, cell_values))| {
            let mut unjudged = Vec::new();
            for metric in matrix.validity() {
                let removed = cell_runs.iter().filter(|r| !metric.holds(r)).count() as u64;
                unjudged.push(Exclusion {
                    condition: metric.as_str().to_string(),
                    runs: removed,
                });
            }
            let undefined = cell_runs
                .iter()
                .filter(|r| {
                    matrix.validity().iter().all(|m| m.holds(r))
                        && matrix.criterion().value(r).is_none()
                })
                .count() as u64;
            unjudged.push(Exclusion {
                condition: "criterion_undefined".to_string(),
                runs: undefined,
            });
            let mut totals = CellTotals::default();
            for r in cell_runs {
                totals.expectations_held += u64::from(Metric::ExpectationsHeld.holds(r));
                totals.adversary_actions += r.adversary_actions;
                totals.escapes += r.escapes;
                totals.benign_calls += r.benign_calls;
                totals.benign_allowed += r.benign_allowed;
                totals.over_denials += r.over_denials;
                totals.evaluations += r.evaluations;
            }
            CellSummary {
                cell: cell.name.clone(),
                coordinates: cell.coordinates.clone(),
                runs: cell_runs.len() as u64,
                judged: cell_values.iter().flatten().count() as u64,
                unjudged,
                criterion_rate: judged_mean(cell_values),
                totals,
            }
        })
        .collect();
    let reference = matrix.reference();
    let reference_name = matrix.cells()[reference].name.clone();
    let gaps = (0..matrix.cells().len())
        .filter(|c| *c != reference)
        .map(|c| GapSummary {
            cell: matrix.cells()[c].name.clone(),
            reference: reference_name.clone(),
            interval: paired_gap(
                &values[c],
                &values[reference],
                matrix.draws(),
                matrix.bootstrap_seed(),
            ),
        })
        .collect();
    let scheduled = (matrix.cells().len() as u64) * u64::from(matrix.repetitions());
    Synthesis {
        schema_version: SYNTHESIS_SCHEMA_VERSION,
        matrix_id: matrix.id().to_string(),
        title: matrix.title().to_string(),
        definition_sha256: matrix.definition().sha256.clone(),
        definition_files: matrix.definition().files,
        protocol: ProtocolApplied {
            repetitions: matrix.repetitions(),
            seeds: (0..matrix.repetitions())
                .map(|r| matrix.repetition_seed(r))
                .collect(),
        },
        verdict: VerdictApplied {
            criterion: matrix.criterion().as_str(),
            reference: reference_name,
            validity: matrix.validity().iter().map(|m| m.as_str()).collect(),
            draws: matrix.draws(),
            seed: matrix.bootstrap_seed(),
            interval: "95% paired bootstrap percentile",
        },
        runs: RunCounts {
            scheduled,
            recorded: runs.iter().map(|c| c.len() as u64).sum(),
            judged: cells.iter().map(|c| c.judged).sum(),
            kernel_evaluations: cells.iter().map(|c| c.totals.evaluations).sum(),
        },
        cells,
        gaps,
    }
}

/// The synthesis as canonical JSON with a final newline.
pub fn to_json(synthesis: &Synthesis) -> Result<String, ExperimentError> {
    let mut text = chio_kernel::canonical::to_canonical_string(synthesis).map_err(|e| {
        ExperimentError::Canonical {
            reason: e.to_string(),
        }
    })?;
    text.push('\n');
    Ok(text)
}

fn number(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:.4}"))
}

fn signed(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |v| format!("{v:+.4}"))
}

/// The synthesis as Markdown.
pub fn to_markdown(s: &Synthesis) -> String {
    let mut md = format!(
        "# {}\n\nMatrix `{}`, definition `{}` ({} files). {} repetitions per cell, paired seeds. \
         Criterion `{}`, reference `{}`, validity [{}], {} draws, seed {} ({}).\n\n",
        s.title,
        s.matrix_id,
        s.definition_sha256,
        s.definition_files,
        s.protocol.repetitions,
        s.verdict.criterion,
        s.verdict.reference,
        s.verdict.validity.join(", "),
        s.verdict.draws,
        s.verdict.seed,
        s.verdict.interval
    );
    md.push_str("## Cells\n\n| cell | judged | criterion rate | adversary actions | escapes | benign allowed | over-denials | expectations held | evaluations |\n|---|---|---|---|---|---|---|---|---|\n");
    for c in &s.cells {
        md.push_str(&format!(
            "| {} | {}/{} | {} | {} | {} | {}/{} | {} | {}/{} | {} |\n",
            c.cell,
            c.judged,
            c.runs,
            number(c.criterion_rate),
            c.totals.adversary_actions,
            c.totals.escapes,
            c.totals.benign_allowed,
            c.totals.benign_calls,
            c.totals.over_denials,
            c.totals.expectations_held,
            c.runs,
            c.totals.evaluations
        ));
    }
    md.push_str("\n## Gaps to the reference\n\n| cell | gap | 95% interval | verdict |\n|---|---|---|---|\n");
    for g in &s.gaps {
        md.push_str(&format!(
            "| {} | {} | [{}, {}] | {} |\n",
            g.cell,
            signed(g.interval.gap),
            signed(g.interval.low),
            signed(g.interval.high),
            g.interval.verdict
        ));
    }
    let removed: Vec<String> = s
        .cells
        .iter()
        .flat_map(|c| {
            c.unjudged.iter().filter(|e| e.runs > 0).map(move |e| {
                format!(
                    "- {}: {} run(s) unjudged by {}",
                    c.cell, e.runs, e.condition
                )
            })
        })
        .collect();
    md.push_str("\n## Unjudged runs\n\n");
    if removed.is_empty() {
        md.push_str("None: every run was judged.\n");
    } else {
        md.push_str(&removed.join("\n"));
        md.push('\n');
    }
    md
}

fn escape_html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An SVG chart: each cell's criterion rate as a bar, and each gap's
/// interval as a whisker around its point on a shared zero line.
pub fn to_svg(s: &Synthesis) -> String {
    let row = 28.0;
    let left = 220.0;
    let width = 360.0;
    let bars = s.cells.len() as f64;
    let gaps = s.gaps.len() as f64;
    let gap_top = 40.0 + bars * row + 40.0;
    let height = gap_top + gaps * row + 30.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" viewBox=\"0 0 {:.0} {height:.0}\" font-family=\"sans-serif\" font-size=\"12\">\n",
        left + width + 120.0,
        left + width + 120.0
    );
    svg.push_str(&format!(
        "<text x=\"10\" y=\"20\" font-weight=\"bold\">{} per cell (0 to 1)</text>\n",
        escape_html(s.verdict.criterion)
    ));
    for (i, c) in s.cells.iter().enumerate() {
        let y = 35.0 + i as f64 * row;
        let rate = c.criterion_rate.unwrap_or(0.0).clamp(0.0, 1.0);
        svg.push_str(&format!(
            "<text x=\"10\" y=\"{:.1}\">{}</text>\n<rect x=\"{left:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"18\" fill=\"#4a7ab5\"/>\n<text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            y + 13.0,
            escape_html(&c.cell),
            rate * width,
            left + rate * width + 6.0,
            y + 13.0,
            number(c.criterion_rate)
        ));
    }
    svg.push_str(&format!(
        "<text x=\"10\" y=\"{:.1}\" font-weight=\"bold\">gap to {} with 95% interval (-1 to +1)</text>\n",
        gap_top - 15.0,
        escape_html(&s.verdict.reference)
    ));
    let zero = left + width / 2.0;
    let x = |v: f64| zero + v.clamp(-1.0, 1.0) * width / 2.0;
    svg.push_str(&format!(
        "<line x1=\"{zero:.1}\" y1=\"{:.1}\" x2=\"{zero:.1}\" y2=\"{:.1}\" stroke=\"#888\"/>\n",
        gap_top - 5.0,
        gap_top + gaps * row
    ));
    for (i, g) in s.gaps.iter().enumerate() {
        let y = gap_top + i as f64 * row + 9.0;
        svg.push_str(&format!(
            "<text x=\"10\" y=\"{:.1}\">{}</text>\n",
            y + 4.0,
            escape_html(&g.cell)
        ));
        if let (Some(lo), Some(hi), Some(gap)) = (g.interval.low, g.interval.high, g.interval.gap) {
            let colour = if g.interval.verdict == "established" {
                "#b5402a"
            } else {
                "#777"
            };
            svg.push_str(&format!(
                "<line x1=\"{:.1}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"2\"/>\n<circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"/>\n",
                x(lo),
                x(hi),
                x(gap)
            ));
        }
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>\n",
            left + width + 10.0,
            y + 4.0,
            g.interval.verdict
        ));
    }
    svg.push_str("</svg>\n");
    svg
}

/// The synthesis as a self-contained HTML page (no external resource).
pub fn to_html(s: &Synthesis) -> String {
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>body{{font-family:sans-serif;margin:2em;max-width:60em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p>Matrix <code>{}</code>, definition <code>{}</code>. {} repetitions per cell with paired seeds; criterion <code>{}</code>, reference <code>{}</code>, {} draws, seed {}.</p>\n",
        escape_html(&s.title),
        escape_html(&s.title),
        escape_html(&s.matrix_id),
        s.definition_sha256,
        s.protocol.repetitions,
        s.verdict.criterion,
        escape_html(&s.verdict.reference),
        s.verdict.draws,
        s.verdict.seed
    );
    html.push_str(&to_svg(s));
    html.push_str("<h2>Cells</h2>\n<table>\n<tr><th>cell</th><th>judged</th><th>criterion rate</th><th>escapes / actions</th><th>over-denials / benign</th><th>evaluations</th></tr>\n");
    for c in &s.cells {
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}/{}</td><td>{}</td><td>{}/{}</td><td>{}/{}</td><td>{}</td></tr>\n",
            escape_html(&c.cell),
            c.judged,
            c.runs,
            number(c.criterion_rate),
            c.totals.escapes,
            c.totals.adversary_actions,
            c.totals.over_denials,
            c.totals.benign_calls,
            c.totals.evaluations
        ));
    }
    html.push_str("</table>\n<h2>Gaps to the reference</h2>\n<table>\n<tr><th>cell</th><th>gap</th><th>95% interval</th><th>verdict</th></tr>\n");
    for g in &s.gaps {
        html.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>[{}, {}]</td><td>{}</td></tr>\n",
            escape_html(&g.cell),
            signed(g.interval.gap),
            signed(g.interval.low),
            signed(g.interval.high),
            g.interval.verdict
        ));
    }
    html.push_str("</table>\n</body>\n</html>\n");
    html
}
