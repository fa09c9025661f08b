//! The synthesis of a complete matrix: the hypothesis and the load at its
//! head, rates per cell, each cell's gap to the reference with its paired
//! bootstrap interval and verdict, the validators' judgement of every cell,
//! and, for a two-axis matrix, the same as a grid (first axis as rows,
//! second as columns), as canonical JSON (`chio.arena.matrix-synthesis/v2`),
//! Markdown and a self-contained HTML page with an inline SVG chart.
//!
//! A run enters a cell's aggregate only when every validity metric holds
//! and the criterion is defined for it; otherwise it is unjudged and left
//! out of the denominator, and the synthesis says how many runs each
//! validity condition removed. A gap whose cell or reference fails a
//! validator is `invalid` whatever its interval. Everything here is computed
//! from the run table and the load alone, with no wall-clock field, so the
//! three files are identical for identical runs under one load, however
//! the runs were scheduled or resumed.

use serde::Serialize;

use super::bootstrap::{judged_mean, paired_gap, GapInterval};
use super::execute::{measurements, Load, RunTable};
use super::metrics::{Metric, RunMetrics};
use super::Matrix;
use crate::experiment_error::ExperimentError;

/// Schema id of the synthesis.
pub const SYNTHESIS_SCHEMA_VERSION: &str = "chio.arena.matrix-synthesis/v2";

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
    /// Kernel decisions (calls and every adversary action).
    pub decisions: u64,
    /// Decisions the kernel denied.
    pub denied: u64,
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
    /// `passed`, `failed`, or `none` when no validator judges the cell.
    pub validation: &'static str,
}

/// One cell's value under one validator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidatorCell {
    /// The cell.
    pub cell: String,
    /// The metric over the cell's runs; null when its denominator is zero.
    pub value: Option<f64>,
    /// Whether the value lies within the thresholds (null never does).
    pub passed: bool,
}

/// One validator's judgement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidatorResult {
    /// The metric.
    pub metric: &'static str,
    /// The smallest passing value.
    pub min: Option<f64>,
    /// The largest passing value.
    pub max: Option<f64>,
    /// Each judged cell, in cell order.
    pub cells: Vec<ValidatorCell>,
}

/// One grid cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridCell {
    /// The cell's name.
    pub cell: String,
    /// Its criterion rate.
    pub criterion_rate: Option<f64>,
    /// Its gap to the reference, null for the reference itself.
    pub gap: Option<f64>,
    /// The gap interval's lower bound.
    pub low: Option<f64>,
    /// The gap interval's upper bound.
    pub high: Option<f64>,
    /// The gap's verdict, or `reference`.
    pub verdict: &'static str,
}

/// A two-axis matrix as a grid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grid {
    /// The first axis: one row per value.
    pub rows_axis: String,
    /// The second axis: one column per value.
    pub columns_axis: String,
    /// The first axis's values.
    pub rows: Vec<String>,
    /// The second axis's values.
    pub columns: Vec<String>,
    /// `cells[row][column]`.
    pub cells: Vec<Vec<GridCell>>,
}

/// One gap line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapSummary {
    /// The cell.
    pub cell: String,
    /// The reference cell.
    pub reference: String,
    /// Interval and verdict (`invalid` when a side fails a validator).
    #[serde(flatten)]
    pub interval: GapInterval,
    /// The validator failures that made the verdict `invalid`.
    pub invalid_because: Vec<String>,
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
    /// Runs that needed more than one attempt.
    pub retried: u64,
    /// Attempts over every run.
    pub attempts: u64,
    /// Call steps evaluated over every run.
    pub steps: u64,
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
    /// What the matrix sets out to show.
    pub hypothesis: String,
    /// The matrix's definition hash.
    pub definition_sha256: String,
    /// Files the definition covers.
    pub definition_files: usize,
    /// The design hash that seeds the repetitions.
    pub design_sha256: String,
    /// Repetitions and seeds.
    pub protocol: ProtocolApplied,
    /// Runs planned, concurrency, timeout and attempts.
    pub load: Load,
    /// Criterion, reference, validity, draws, seed.
    pub verdict: VerdictApplied,
    /// Run counts.
    pub runs: RunCounts,
    /// Per-cell rates, in cell order.
    pub cells: Vec<CellSummary>,
    /// Each other cell's gap to the reference, in cell order.
    pub gaps: Vec<GapSummary>,
    /// Each validator's judgement, in declaration order.
    pub validators: Vec<ValidatorResult>,
    /// The grid of a two-axis matrix; null otherwise.
    pub grid: Option<Grid>,
}

/// A run's criterion value when it is judged.
fn judged_value(matrix: &Matrix, run: &RunMetrics) -> Option<f64> {
    if matrix.validity().iter().all(|m| m.holds(run)) {
        matrix.criterion().value(run)
    } else {
        None
    }
}

/// Computes the synthesis of a complete run table under `load`.
pub fn synthesize(matrix: &Matrix, table: &RunTable, load: &Load) -> Synthesis {
    let runs = measurements(table);
    let values: Vec<Vec<Option<f64>>> = runs
        .iter()
        .map(|cell| cell.iter().map(|r| judged_value(matrix, r)).collect())
        .collect();
    let validators: Vec<ValidatorResult> = matrix
        .validators()
        .iter()
        .map(|v| ValidatorResult {
            metric: v.metric.as_str(),
            min: v.min,
            max: v.max,
            cells: v
                .cells
                .iter()
                .map(|&c| {
                    let value = v.metric.value(&runs[c]);
                    ValidatorCell {
                        cell: matrix.cells()[c].name.clone(),
                        value,
                        passed: v.passes(value),
                    }
                })
                .collect(),
        })
        .collect();
    // Each cell's validator failures, as sentences.
    let failures: Vec<Vec<String>> = matrix
        .cells()
        .iter()
        .map(|cell| {
            matrix
                .validators()
                .iter()
                .zip(&validators)
                .flat_map(|(v, result)| {
                    result
                        .cells
                        .iter()
                        .filter(|c| c.cell == cell.name && !c.passed)
                        .map(|c| {
                            format!(
                                "{} fails {} ({}): {}",
                                c.cell,
                                v.metric.as_str(),
                                v.thresholds(),
                                c.value
                                    .map_or_else(|| "undefined".to_string(), |x| format!("{x}"))
                            )
                        })
                        .collect::<Vec<_>>()
                })
                .collect()
        })
        .collect();
    let cells: Vec<CellSummary> = matrix
        .cells()
        .iter()
        .enumerate()
        .zip(runs.iter().zip(&values))
        .map(|((index, cell), (cell_runs, cell_values))| {
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
                totals.decisions += r.decisions;
                totals.denied += r.denied;
            }
            let judged_by_any = matrix.validators().iter().any(|v| v.cells.contains(&index));
            CellSummary {
                cell: cell.name.clone(),
                coordinates: cell.coordinates.clone(),
                runs: cell_runs.len() as u64,
                judged: cell_values.iter().flatten().count() as u64,
                unjudged,
                criterion_rate: judged_mean(cell_values),
                totals,
                validation: match (judged_by_any, failures[index].is_empty()) {
                    (false, _) => "none",
                    (true, true) => "passed",
                    (true, false) => "failed",
                },
            }
        })
        .collect();
    let reference = matrix.reference();
    let reference_name = matrix.cells()[reference].name.clone();
    let gaps: Vec<GapSummary> = (0..matrix.cells().len())
        .filter(|c| *c != reference)
        .map(|c| {
            let mut interval = paired_gap(
                &values[c],
                &values[reference],
                matrix.draws(),
                matrix.bootstrap_seed(),
            );
            let invalid_because: Vec<String> = failures[c]
                .iter()
                .chain(&failures[reference])
                .cloned()
                .collect();
            if !invalid_because.is_empty() {
                interval.verdict = "invalid";
            }
            GapSummary {
                cell: matrix.cells()[c].name.clone(),
                reference: reference_name.clone(),
                interval,
                invalid_because,
            }
        })
        .collect();
    let grid = grid(matrix, &cells, &gaps);
    let scheduled = (matrix.cells().len() as u64) * u64::from(matrix.repetitions());
    let records = table.iter().flatten();
    Synthesis {
        schema_version: SYNTHESIS_SCHEMA_VERSION,
        matrix_id: matrix.id().to_string(),
        title: matrix.title().to_string(),
        hypothesis: matrix.hypothesis().to_string(),
        definition_sha256: matrix.definition().sha256.clone(),
        definition_files: matrix.definition().files,
        design_sha256: matrix.design_sha256().to_string(),
        protocol: ProtocolApplied {
            repetitions: matrix.repetitions(),
            seeds: (0..matrix.repetitions())
                .map(|r| matrix.repetition_seed(r))
                .collect(),
        },
        load: load.clone(),
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
            retried: records.clone().filter(|r| r.attempts.len() > 1).count() as u64,
            attempts: records.map(|r| r.attempts.len() as u64).sum(),
            steps: runs.iter().flatten().map(|r| r.calls).sum(),
            kernel_evaluations: cells.iter().map(|c| c.totals.evaluations).sum(),
        },
        cells,
        gaps,
        validators,
        grid,
    }
}

/// The grid of a matrix with exactly two axes (variants stay in the flat list).
fn grid(matrix: &Matrix, cells: &[CellSummary], gaps: &[GapSummary]) -> Option<Grid> {
    let [(rows_axis, rows), (columns_axis, columns)] = matrix.axes() else {
        return None;
    };
    let reference = &matrix.cells()[matrix.reference()].name;
    let lookup = |row: &String, column: &String| -> GridCell {
        let cell = cells.iter().find(|c| {
            c.coordinates.len() == 2 && c.coordinates[0] == *row && c.coordinates[1] == *column
        });
        let name = cell.map(|c| c.cell.clone()).unwrap_or_default();
        let gap = gaps.iter().find(|g| g.cell == name);
        GridCell {
            criterion_rate: cell.and_then(|c| c.criterion_rate),
            gap: gap.and_then(|g| g.interval.gap),
            low: gap.and_then(|g| g.interval.low),
            high: gap.and_then(|g| g.interval.high),
            verdict: match gap {
                Some(g) => g.interval.verdict,
                None if name == *reference => "reference",
                None => "n/a",
            },
            cell: name,
        }
    };
    Some(Grid {
        rows_axis: rows_axis.clone(),
        columns_axis: columns_axis.clone(),
        rows: rows.clone(),
        columns: columns.clone(),
        cells: rows
            .iter()
            .map(|row| columns.iter().map(|column| lookup(row, column)).collect())
            .collect(),
    })
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

fn load_line(s: &Synthesis) -> String {
    format!(
        "Load: {} runs planned ({} cells x {} repetitions), concurrency {} ({}), timeout {} s per attempt, up to {} attempt(s) per run; {} run(s) needed more than one attempt ({} attempts in all).",
        s.load.runs_planned,
        s.cells.len(),
        s.protocol.repetitions,
        s.load.concurrency,
        s.load.concurrency_source,
        s.load.timeout_seconds,
        s.load.attempts,
        s.runs.retried,
        s.runs.attempts
    )
}

fn grid_entry(c: &GridCell) -> String {
    match c.verdict {
        "reference" => format!("{} (reference)", number(c.criterion_rate)),
        verdict => format!(
            "{}; gap {} [{}, {}] {verdict}",
            number(c.criterion_rate),
            signed(c.gap),
            signed(c.low),
            signed(c.high)
        ),
    }
}

/// The synthesis as Markdown.
pub fn to_markdown(s: &Synthesis) -> String {
    let mut md = format!(
        "# {}\n\n**Hypothesis.** {}\n\n{}\n\nMatrix `{}`, definition `{}` ({} files), design `{}`. {} repetitions per cell, paired seeds. \
         Criterion `{}`, reference `{}`, validity [{}], {} draws, seed {} ({}).\n\n",
        s.title,
        s.hypothesis,
        load_line(s),
        s.matrix_id,
        s.definition_sha256,
        s.definition_files,
        s.design_sha256,
        s.protocol.repetitions,
        s.verdict.criterion,
        s.verdict.reference,
        s.verdict.validity.join(", "),
        s.verdict.draws,
        s.verdict.seed,
        s.verdict.interval
    );
    if let Some(grid) = &s.grid {
        md.push_str(&format!(
            "## Grid: {} (rows) by {} (columns)\n\nEach entry: the cell's {}; its gap to the reference [95% interval] and verdict.\n\n| {} \\ {} |",
            grid.rows_axis, grid.columns_axis, s.verdict.criterion, grid.rows_axis, grid.columns_axis
        ));
        for column in &grid.columns {
            md.push_str(&format!(" {column} |"));
        }
        md.push_str(&format!("\n|---|{}\n", "---|".repeat(grid.columns.len())));
        for (row, entries) in grid.rows.iter().zip(&grid.cells) {
            md.push_str(&format!("| {row} |"));
            for entry in entries {
                md.push_str(&format!(" {} |", grid_entry(entry)));
            }
            md.push('\n');
        }
        md.push('\n');
    }
    md.push_str("## Cells\n\n| cell | judged | criterion rate | adversary actions | escapes | benign allowed | over-denials | expectations held | evaluations | denied / decisions | validation |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for c in &s.cells {
        md.push_str(&format!(
            "| {} | {}/{} | {} | {} | {} | {}/{} | {} | {}/{} | {} | {}/{} | {} |\n",
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
            c.totals.evaluations,
            c.totals.denied,
            c.totals.decisions,
            c.validation
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
    md.push_str("\n## Validators\n\n");
    if s.validators.is_empty() {
        md.push_str("None declared.\n");
    } else {
        md.push_str("| metric | thresholds | cell | value | result |\n|---|---|---|---|---|\n");
        for v in &s.validators {
            let thresholds = [("min", v.min), ("max", v.max)]
                .iter()
                .filter_map(|(k, x)| x.map(|x| format!("{k} {x}")))
                .collect::<Vec<_>>()
                .join(", ");
            for c in &v.cells {
                md.push_str(&format!(
                    "| {} | {} | {} | {} | {} |\n",
                    v.metric,
                    thresholds,
                    c.cell,
                    number(c.value),
                    if c.passed { "passed" } else { "FAILED" }
                ));
            }
        }
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
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>body{{font-family:sans-serif;margin:2em;max-width:60em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p><strong>Hypothesis.</strong> {}</p>\n<p>{}</p>\n<p>Matrix <code>{}</code>, definition <code>{}</code>. {} repetitions per cell with paired seeds; criterion <code>{}</code>, reference <code>{}</code>, {} draws, seed {}.</p>\n",
        escape_html(&s.title),
        escape_html(&s.title),
        escape_html(&s.hypothesis),
        escape_html(&load_line(s)),
        escape_html(&s.matrix_id),
        s.definition_sha256,
        s.protocol.repetitions,
        s.verdict.criterion,
        escape_html(&s.verdict.reference),
        s.verdict.draws,
        s.verdict.seed
    );
    html.push_str(&to_svg(s));
    if let Some(grid) = &s.grid {
        html.push_str(&format!(
            "<h2>Grid: {} (rows) by {} (columns)</h2>\n<table>\n<tr><th>{} \\ {}</th>",
            escape_html(&grid.rows_axis),
            escape_html(&grid.columns_axis),
            escape_html(&grid.rows_axis),
            escape_html(&grid.columns_axis)
        ));
        for column in &grid.columns {
            html.push_str(&format!("<th>{}</th>", escape_html(column)));
        }
        html.push_str("</tr>\n");
        for (row, entries) in grid.rows.iter().zip(&grid.cells) {
            html.push_str(&format!("<tr><th>{}</th>", escape_html(row)));
            for entry in entries {
                html.push_str(&format!("<td>{}</td>", escape_html(&grid_entry(entry))));
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</table>\n");
    }
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
    html.push_str("</table>\n");
    if !s.validators.is_empty() {
        html.push_str("<h2>Validators</h2>\n<table>\n<tr><th>metric</th><th>cell</th><th>value</th><th>result</th></tr>\n");
        for v in &s.validators {
            for c in &v.cells {
                html.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                    v.metric,
                    escape_html(&c.cell),
                    number(c.value),
                    if c.passed { "passed" } else { "FAILED" }
                ));
            }
        }
        html.push_str("</table>\n");
    }
    html.push_str("</body>\n</html>\n");
    html
}
