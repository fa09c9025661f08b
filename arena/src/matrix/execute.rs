//! Running a matrix: every cell and repetition, a per-run ledger, resume.
//!
//! Each run's measurements are written, as soon as the run ends, to its own
//! record `runs/c<cell>-r<repetition>.json` under the output folder
//! (`chio.arena.matrix-run/v1`, canonical JSON, written to a temporary name
//! and renamed, so a record is whole or absent). An interrupted matrix
//! resumes from those records: `--resume` reads them, refuses any written
//! for another definition, and runs only what is missing. Runs are spread
//! over worker threads; each run is independent and its record is keyed by
//! (cell, repetition), so the records, and everything computed from them,
//! are identical whatever the interleaving. The kernel evaluation itself is
//! the [`MatrixRunner`]'s job: the controller implements it with the real
//! kernel in the cell's world.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::metrics::RunMetrics;
use super::{Cell, Matrix};
use crate::experiment_error::ExperimentError;
use crate::Scenario;

/// Schema id of a run record.
pub const RUN_RECORD_SCHEMA: &str = "chio.arena.matrix-run/v1";

/// Runs one cell's scenario for one repetition against the real kernel.
pub trait MatrixRunner: Sync {
    /// Evaluates `scenario` (the cell's, with the repetition's seed) to the
    /// end and measures it; an `Err` is an infrastructure failure that
    /// stops the matrix (the runs done so far stay recorded).
    fn run(&self, cell: &Cell, scenario: &Scenario) -> Result<RunMetrics, String>;
}

/// One run's record in the run ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    /// `chio.arena.matrix-run/v1`.
    pub schema_version: String,
    /// The matrix id.
    pub matrix_id: String,
    /// The definition hash the run belongs to.
    pub definition_sha256: String,
    /// The cell's name.
    pub cell: String,
    /// The repetition (0-based).
    pub repetition: u32,
    /// The repetition's seed.
    pub seed: u64,
    /// What the run measured.
    pub metrics: RunMetrics,
}

/// How much of a matrix this invocation ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutionSummary {
    /// Runs the matrix schedules.
    pub scheduled: usize,
    /// Runs found in the run ledger.
    pub from_ledger: usize,
    /// Runs executed now.
    pub executed: usize,
}

/// All measurements, indexed `[cell][repetition]`.
pub type RunTable = Vec<Vec<RunMetrics>>;

fn record_path(out: &Path, cell: usize, repetition: u32) -> PathBuf {
    out.join("runs")
        .join(format!("c{cell:03}-r{repetition:04}.json"))
}

fn io_error(path: &Path, e: &std::io::Error) -> ExperimentError {
    ExperimentError::Io {
        path: path.display().to_string(),
        reason: e.kind().to_string(),
    }
}

/// Writes `bytes` to `path` whole or not at all.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ExperimentError> {
    let tmp = path.with_extension("partial");
    std::fs::write(&tmp, bytes).map_err(|e| io_error(&tmp, &e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_error(path, &e))
}

fn read_record(
    matrix: &Matrix,
    path: &Path,
    cell: &Cell,
    repetition: u32,
) -> Result<RunMetrics, ExperimentError> {
    let bytes = std::fs::read(path).map_err(|e| ExperimentError::Unreadable {
        path: path.display().to_string(),
        reason: e.kind().to_string(),
    })?;
    let record: RunRecord =
        serde_json::from_slice(&bytes).map_err(|e| ExperimentError::Syntax {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    let expected = (
        RUN_RECORD_SCHEMA,
        matrix.id(),
        matrix.definition().sha256.as_str(),
        cell.name.as_str(),
        repetition,
        matrix.repetition_seed(repetition),
    );
    let found = (
        record.schema_version.as_str(),
        record.matrix_id.as_str(),
        record.definition_sha256.as_str(),
        record.cell.as_str(),
        record.repetition,
        record.seed,
    );
    if expected != found {
        return Err(ExperimentError::ForeignRunLedger {
            path: path.display().to_string(),
        });
    }
    Ok(record.metrics)
}

/// Runs every missing (cell, repetition) of `matrix` with `workers` threads,
/// recording each run under `out`; returns every run's measurements.
/// `progress` is told each finished run (done, total).
pub fn run_matrix(
    matrix: &Matrix,
    out: &Path,
    resume: bool,
    runner: &dyn MatrixRunner,
    workers: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(RunTable, ExecutionSummary), ExperimentError> {
    let runs_dir = out.join("runs");
    let existing = std::fs::read_dir(&runs_dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        })
        .unwrap_or(false);
    if existing && !resume {
        return Err(ExperimentError::RunLedgerExists {
            path: out.display().to_string(),
        });
    }
    std::fs::create_dir_all(&runs_dir).map_err(|e| io_error(&runs_dir, &e))?;

    let cells = matrix.cells();
    let repetitions = matrix.repetitions();
    let mut table: Vec<Vec<Option<RunMetrics>>> =
        vec![vec![None; repetitions as usize]; cells.len()];
    let mut pending = Vec::new();
    for (c, cell) in cells.iter().enumerate() {
        for r in 0..repetitions {
            let path = record_path(out, c, r);
            if path.exists() {
                table[c][r as usize] = Some(read_record(matrix, &path, cell, r)?);
            } else {
                pending.push((c, r));
            }
        }
    }
    let scheduled = cells.len() * repetitions as usize;
    let summary = ExecutionSummary {
        scheduled,
        from_ledger: scheduled - pending.len(),
        executed: pending.len(),
    };

    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(summary.from_ledger);
    let stop = AtomicBool::new(false);
    let results: Mutex<Vec<(usize, u32, RunMetrics)>> = Mutex::new(Vec::new());
    let failures: Mutex<Vec<(usize, ExperimentError)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for worker in 0..workers.max(1) {
            let (next, done, stop, results, failures, pending) =
                (&next, &done, &stop, &results, &failures, &pending);
            std::thread::Builder::new()
                .name(format!("matrix-worker-{worker}"))
                .spawn_scoped(scope, move || loop {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&(c, r)) = pending.get(i) else {
                        return;
                    };
                    let outcome = run_one(matrix, out, runner, c, r);
                    match outcome {
                        Ok(metrics) => {
                            if let Ok(mut list) = results.lock() {
                                list.push((c, r, metrics));
                            }
                            progress(done.fetch_add(1, Ordering::SeqCst) + 1, scheduled);
                        }
                        Err(e) => {
                            stop.store(true, Ordering::SeqCst);
                            if let Ok(mut list) = failures.lock() {
                                list.push((i, e));
                            }
                            return;
                        }
                    }
                })
                .map(|_| ())
                .unwrap_or_else(|e| {
                    stop.store(true, Ordering::SeqCst);
                    if let Ok(mut list) = failures.lock() {
                        list.push((usize::MAX, io_error(out, &e)));
                    }
                });
        }
    });
    let mut failures = failures.into_inner().unwrap_or_default();
    failures.sort_by_key(|(i, _)| *i);
    if let Some((_, first)) = failures.into_iter().next() {
        return Err(first);
    }
    for (c, r, metrics) in results.into_inner().unwrap_or_default() {
        table[c][r as usize] = Some(metrics);
    }
    let mut complete = Vec::with_capacity(cells.len());
    for (c, row) in table.into_iter().enumerate() {
        let mut runs = Vec::with_capacity(row.len());
        for (r, metrics) in row.into_iter().enumerate() {
            runs.push(metrics.ok_or_else(|| ExperimentError::RunFailed {
                cell: cells[c].name.clone(),
                repetition: r as u32,
                reason: "the run produced no record".into(),
            })?);
        }
        complete.push(runs);
    }
    Ok((complete, summary))
}

fn run_one(
    matrix: &Matrix,
    out: &Path,
    runner: &dyn MatrixRunner,
    c: usize,
    r: u32,
) -> Result<RunMetrics, ExperimentError> {
    let cell = &matrix.cells()[c];
    let scenario = matrix.scenario_for(cell, r)?;
    let metrics = runner
        .run(cell, &scenario)
        .map_err(|reason| ExperimentError::RunFailed {
            cell: cell.name.clone(),
            repetition: r,
            reason,
        })?;
    let record = RunRecord {
        schema_version: RUN_RECORD_SCHEMA.into(),
        matrix_id: matrix.id().into(),
        definition_sha256: matrix.definition().sha256.clone(),
        cell: cell.name.clone(),
        repetition: r,
        seed: matrix.repetition_seed(r),
        metrics: metrics.clone(),
    };
    let mut text = chio_kernel::canonical::to_canonical_string(&record).map_err(|e| {
        ExperimentError::Canonical {
            reason: e.to_string(),
        }
    })?;
    text.push('\n');
    write_atomically(&record_path(out, c, r), text.as_bytes())?;
    Ok(metrics)
}
