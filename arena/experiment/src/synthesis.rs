//! The synthesis of a complete matrix: the hypothesis and the load at its
//! head, rates per cell, each cell's gap to the reference with its paired
//! bootstrap interval and verdict, the validators' judgement of every cell,
//! and, for a two-axis matrix, the same as a grid (first axis as rows,
//! second as columns), as canonical JSON (`chio.arena.matrix-synthesis/v2`),
//! Markdown and a self-contained HTML page with an inline SVG chart (the
//! matrix report, [`crate::report`]).
//!
//! A run enters a cell's aggregate only when every validity metric holds
//! and the criterion is defined for it; otherwise it is unjudged and left
//! out of the denominator, and the synthesis says how many runs each
//! validity condition removed. A gap whose cell or reference fails a
//! validator is `invalid` whatever its interval. Everything here is computed
//! from the run table and the load alone, with no wall-clock field, so the
//! three files are identical for identical runs under one load, however
//! the runs were scheduled or resumed.
//!
//! This module computes the synthesis and writes its JSON; `render` writes
//! its Markdown, and `derived` checks that a synthesis read back is what
//! its matrix derives from the run records beside it.

use serde::{Deserialize, Serialize};

use super::bootstrap::{judged_mean, paired_gap, GapInterval};
use super::execute::{measurements, Load, RunTable};
use super::metrics::{Metric, RunMetrics};
use super::Matrix;
use crate::error::ExperimentError;
pub use derived::{derived_again, SYNTHESIS_FILE};
pub use render::{to_markdown, to_printable_markdown};

mod derived;
mod render;

/// Schema id of the synthesis.
pub const SYNTHESIS_SCHEMA_VERSION: &str = "chio.arena.matrix-synthesis/v2";

/// Count totals of a cell's runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exclusion {
    /// The validity metric, or `criterion_undefined`.
    pub condition: String,
    /// Runs it removed.
    pub runs: u64,
}

/// One cell's line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub validation: String,
}

/// One cell's value under one validator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidatorCell {
    /// The cell.
    pub cell: String,
    /// The metric over the cell's runs; null when its denominator is zero.
    pub value: Option<f64>,
    /// Whether the value lies within the thresholds (null never does).
    pub passed: bool,
}

/// One validator's judgement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidatorResult {
    /// The metric.
    pub metric: String,
    /// The smallest passing value.
    pub min: Option<f64>,
    /// The largest passing value.
    pub max: Option<f64>,
    /// Each judged cell, in cell order.
    pub cells: Vec<ValidatorCell>,
}

/// One grid cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub verdict: String,
}

/// A two-axis matrix as a grid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerdictApplied {
    /// The criterion metric.
    pub criterion: String,
    /// The reference cell.
    pub reference: String,
    /// The validity metrics.
    pub validity: Vec<String>,
    /// Resampling draws.
    pub draws: u32,
    /// Resampling seed.
    pub seed: u64,
    /// The interval's coverage.
    pub interval: String,
}

/// The protocol as run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolApplied {
    /// Repetitions per cell.
    pub repetitions: u32,
    /// The seed of each repetition, shared by every cell.
    pub seeds: Vec<u64>,
}

/// The synthesis document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Synthesis {
    /// `chio.arena.matrix-synthesis/v1`.
    pub schema_version: String,
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
    let validators = validator_results(matrix, &runs);
    let failures = validator_failures(matrix, &validators);
    let cells = cell_summaries(matrix, &runs, &values, &failures);
    let reference_name = matrix.cells()[matrix.reference()].name.clone();
    let gaps = gap_summaries(matrix, &values, &failures);
    let grid = grid(matrix, &cells, &gaps);
    let scheduled = (matrix.cells().len() as u64) * u64::from(matrix.repetitions());
    let records = table.iter().flatten();
    Synthesis {
        schema_version: SYNTHESIS_SCHEMA_VERSION.to_string(),
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
            criterion: matrix.criterion().as_str().to_string(),
            reference: reference_name,
            validity: matrix
                .validity()
                .iter()
                .map(|m| m.as_str().to_string())
                .collect(),
            draws: matrix.draws(),
            seed: matrix.bootstrap_seed(),
            interval: "95% paired bootstrap percentile".to_string(),
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

/// Each validator's judgement of each cell it judges, in declaration order.
fn validator_results(matrix: &Matrix, runs: &[Vec<RunMetrics>]) -> Vec<ValidatorResult> {
    matrix
        .validators()
        .iter()
        .map(|v| ValidatorResult {
            metric: v.metric.as_str().to_string(),
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
        .collect()
}

/// Each cell's validator failures, as sentences, in cell order.
fn validator_failures(matrix: &Matrix, validators: &[ValidatorResult]) -> Vec<Vec<String>> {
    matrix
        .cells()
        .iter()
        .map(|cell| {
            matrix
                .validators()
                .iter()
                .zip(validators)
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
        .collect()
}

/// Each cell's summary: its runs, what was not judged and why, its
/// criterion rate, its totals and its validation state.
fn cell_summaries(
    matrix: &Matrix,
    runs: &[Vec<RunMetrics>],
    values: &[Vec<Option<f64>>],
    failures: &[Vec<String>],
) -> Vec<CellSummary> {
    matrix
        .cells()
        .iter()
        .enumerate()
        .zip(runs.iter().zip(values))
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
                }
                .to_string(),
            }
        })
        .collect()
}

/// The paired gap of every cell but the reference against the reference,
/// invalid when a validator fails on either side.
fn gap_summaries(
    matrix: &Matrix,
    values: &[Vec<Option<f64>>],
    failures: &[Vec<String>],
) -> Vec<GapSummary> {
    let reference = matrix.reference();
    let reference_name = matrix.cells()[reference].name.clone();
    (0..matrix.cells().len())
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
                interval.verdict = "invalid".to_string();
            }
            GapSummary {
                cell: matrix.cells()[c].name.clone(),
                reference: reference_name.clone(),
                interval,
                invalid_because,
            }
        })
        .collect()
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
                Some(g) => g.interval.verdict.clone(),
                None if name == *reference => "reference".to_string(),
                None => "n/a".to_string(),
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
    ExperimentError::canonical_line(synthesis)
}
