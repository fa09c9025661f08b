//! Running a matrix: every cell and repetition under the declared protocol,
//! a per-run ledger, a state file, retries, timeouts and resume.
//!
//! Each run's record is written, as soon as the run ends, to
//! `runs/c<cell>-r<repetition>.json` under the output folder
//! (`chio.arena.matrix-run/v2`, canonical JSON, written to a temporary name
//! and renamed, so a record is whole or absent). A run gets up to the
//! protocol's `attempts`: an attempt that the runner cannot complete (the
//! world failed to start), that exceeds the protocol's `timeout`, or that
//! dispatched only part of its actions fails for an infrastructure reason
//! and is tried again while attempts remain. Every attempt is listed in the
//! record with its outcome; a run without measurements after all its
//! attempts is recorded as such and stops the matrix (a run whose attempts
//! were merely incomplete keeps the measurements of its last attempt that
//! produced any, and the validity conditions decide whether it is judged). A timed-out attempt is abandoned:
//! its thread may finish in the background, and what it returns is dropped.
//!
//! An interrupted matrix resumes from the records: `--resume` reads them,
//! refuses any written for another design or holding counts no run
//! measures ([`RunMetrics::inconsistency`]), and runs only the runs without
//! measurements, appending their new attempts to the earlier ones. Runs are
//! spread over `concurrency` worker threads; each run is independent and its
//! record is keyed by (cell, repetition), so the records, and everything
//! computed from them, are identical whatever the interleaving.
//!
//! The state file `state.json` (`chio.arena.matrix-state/v1`) beside the
//! runs records the load (runs planned, concurrency, timeout, attempts), how
//! many runs are recorded and how many needed more than one attempt, and the
//! status (`running`, `complete`, `failed`). Its only wall-clock fields sit
//! in its `wall_clock` object, read through the `now_ms` the caller
//! passes (this library never reads a clock itself); everything else is
//! identical for identical runs. The timeout is a bounded wait for the
//! attempt's answer: time reaches a record only as a `timeout` outcome. The kernel evaluation itself is the [`MatrixRunner`]'s job: the
//! controller implements it with the real kernel in the cell's world.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::metrics::RunMetrics;
use super::{Cell, Matrix};
use crate::error::ExperimentError;
use chio_arena::Scenario;
use workers::{Execution, Queue};

mod workers;

/// Schema id of a run record.
pub const RUN_RECORD_SCHEMA: &str = "chio.arena.matrix-run/v2";
/// Schema id of the state file.
pub const STATE_SCHEMA: &str = "chio.arena.matrix-state/v1";
/// The state file's name in the output folder.
pub const STATE_FILE: &str = "state.json";

/// Runs one cell's scenario for one repetition against the real kernel.
pub trait MatrixRunner: Send + Sync {
    /// Evaluates `scenario` (the cell's, with the repetition's seed) to the
    /// end and measures it; an `Err` is an infrastructure failure of this
    /// attempt (the executor retries it while attempts remain).
    fn run(&self, cell: &Cell, scenario: &Scenario) -> Result<RunMetrics, String>;
}

/// How one attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptOutcome {
    /// The attempt completed and its measurements are the run's.
    Completed,
    /// The attempt ran but did not dispatch every scheduled action.
    Incomplete,
    /// The runner could not complete the attempt (the world failed).
    InfrastructureFailure,
    /// The attempt took longer than the protocol's timeout.
    Timeout,
}

/// One attempt of a run, as its record lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptRecord {
    /// 1-based, continuing across resumed invocations.
    pub attempt: u32,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// Why it failed, for a failed attempt.
    pub reason: Option<String>,
}

/// One run's record in the run ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    /// `chio.arena.matrix-run/v2`.
    pub schema_version: String,
    /// The matrix id.
    pub matrix_id: String,
    /// The design hash the run belongs to.
    pub design_sha256: String,
    /// The cell's name.
    pub cell: String,
    /// The repetition (0-based).
    pub repetition: u32,
    /// The repetition's seed.
    pub seed: u64,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptRecord>,
    /// What the run measured; null while no attempt produced measurements.
    pub metrics: Option<RunMetrics>,
}

/// The load a matrix runs under, as the state file and the synthesis state it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// Runs the matrix plans: cells times repetitions.
    pub runs_planned: u64,
    /// Runs at once.
    pub concurrency: u32,
    /// Where the concurrency came from: `protocol`, `--workers` or `machine cores`.
    pub concurrency_source: String,
    /// Seconds one attempt may take.
    pub timeout_seconds: f64,
    /// Attempts a run gets.
    pub attempts: u32,
}

/// How much of a matrix this invocation ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutionSummary {
    /// Runs the matrix schedules.
    pub scheduled: usize,
    /// Runs found complete in the run ledger.
    pub from_ledger: usize,
    /// Runs executed now.
    pub executed: usize,
}

/// All run records, indexed `[cell][repetition]`, each with measurements.
pub type RunTable = Vec<Vec<RunRecord>>;

/// The measurements of a complete run table, indexed `[cell][repetition]`.
pub fn measurements(table: &RunTable) -> Vec<Vec<RunMetrics>> {
    table
        .iter()
        .map(|cell| {
            cell.iter()
                .map(|r| r.metrics.clone().unwrap_or_default())
                .collect()
        })
        .collect()
}

/// The state file's counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct StateRuns {
    recorded: u64,
    retried: u64,
    failed: u64,
}

/// Wall-clock fields, the only ones that differ between identical runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct WallClock {
    started_unix_ms: u64,
    updated_unix_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct State<'a> {
    schema_version: &'static str,
    matrix_id: &'a str,
    definition_sha256: &'a str,
    design_sha256: &'a str,
    load: &'a Load,
    runs: StateRuns,
    status: &'static str,
    wall_clock: WallClock,
}

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

/// Writes `bytes` to `path` whole or not at all, and only over a regular
/// file ([`chio_arena::output::write_whole`]).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ExperimentError> {
    chio_arena::output::write_whole(path, bytes, ".chio-").map_err(|e| ExperimentError::Io {
        path: path.display().to_string(),
        reason: e.describe(),
    })
}

fn read_record(
    matrix: &Matrix,
    path: &Path,
    cell: &Cell,
    repetition: u32,
) -> Result<RunRecord, ExperimentError> {
    let bytes = ExperimentError::read(path)?;
    let record: RunRecord =
        serde_json::from_slice(&bytes).map_err(|e| ExperimentError::Syntax {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
    let expected = (
        RUN_RECORD_SCHEMA,
        matrix.id(),
        matrix.design_sha256(),
        cell.name.as_str(),
        repetition,
        matrix.repetition_seed(repetition),
    );
    let found = (
        record.schema_version.as_str(),
        record.matrix_id.as_str(),
        record.design_sha256.as_str(),
        record.cell.as_str(),
        record.repetition,
        record.seed,
    );
    if expected != found {
        return Err(ExperimentError::ForeignRunLedger {
            path: path.display().to_string(),
        });
    }
    // Counts no run measures (more escapes than counted actions, a rate
    // above one) are refused, never synthesised.
    if let Some(why) = record.metrics.as_ref().and_then(RunMetrics::inconsistency) {
        return Err(ExperimentError::Syntax {
            path: path.display().to_string(),
            reason: format!("its counts cannot be a run's: {why}"),
        });
    }
    Ok(record)
}

/// Milliseconds since the Unix epoch, as the caller's wall clock reads them.
pub type WallClockMs<'a> = &'a (dyn Fn() -> u64 + Sync);

/// Writes the state file.
fn write_state(
    matrix: &Matrix,
    out: &Path,
    load: &Load,
    runs: StateRuns,
    status: &'static str,
    clock: (u64, WallClockMs<'_>),
) -> Result<(), ExperimentError> {
    let (started, now_ms) = clock;
    let state = State {
        schema_version: STATE_SCHEMA,
        matrix_id: matrix.id(),
        definition_sha256: &matrix.definition().sha256,
        design_sha256: matrix.design_sha256(),
        load,
        runs,
        status,
        wall_clock: WallClock {
            started_unix_ms: started,
            updated_unix_ms: now_ms(),
        },
    };
    write_atomically(
        &out.join(STATE_FILE),
        ExperimentError::canonical_line(&state)?.as_bytes(),
    )
}

/// Counts of a (possibly partial) table for the state file.
fn counts(table: &[Vec<Option<RunRecord>>]) -> StateRuns {
    let records = table.iter().flatten().flatten();
    let mut runs = StateRuns {
        recorded: 0,
        retried: 0,
        failed: 0,
    };
    for record in records {
        if record.metrics.is_some() {
            runs.recorded += 1;
            runs.retried += u64::from(record.attempts.len() > 1);
        } else {
            runs.failed += 1;
        }
    }
    runs
}

/// Runs every missing (cell, repetition) of `matrix` under `load`,
/// recording each run under `out`; returns every run's record.
/// `progress` is told each finished run (done, total); `now_ms` reads the
/// wall clock for the state file's `wall_clock` fields.
pub fn run_matrix(
    matrix: &Matrix,
    out: &Path,
    resume: bool,
    runner: Arc<dyn MatrixRunner>,
    load: &Load,
    progress: &(dyn Fn(usize, usize) + Sync),
    now_ms: WallClockMs<'_>,
) -> Result<(RunTable, ExecutionSummary), ExperimentError> {
    let started = now_ms();
    let clock = (started, now_ms);
    prepare_runs_dir(out, resume)?;
    let (table, pending) = recorded_runs(matrix, out)?;
    let scheduled = matrix.cells().len() * matrix.repetitions() as usize;
    let summary = ExecutionSummary {
        scheduled,
        from_ledger: scheduled - pending.len(),
        executed: pending.len(),
    };
    write_state(matrix, out, load, counts(&table), "running", clock)?;
    let execution = Execution {
        matrix,
        out,
        runner,
        load,
        progress,
        clock,
    };
    let queue = Queue {
        pending: &pending,
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(summary.from_ledger),
        stop: AtomicBool::new(false),
        table: Mutex::new(table),
        failures: Mutex::new(Vec::new()),
        scheduled,
    };
    execution.run_workers(&queue);
    let table = queue.table.into_inner().unwrap_or_default();
    let mut failures = queue.failures.into_inner().unwrap_or_default();
    failures.sort_by_key(|(i, _)| *i);
    if let Some((_, first)) = failures.into_iter().next() {
        write_state(matrix, out, load, counts(&table), "failed", clock)?;
        return Err(first);
    }
    let final_counts = counts(&table);
    let complete = complete_table(matrix.cells(), table)?;
    write_state(matrix, out, load, final_counts, "complete", clock)?;
    Ok((complete, summary))
}

/// The complete run table a finished matrix left under `out`, read back
/// as a resumed run reads it: every record must be this design's, and a
/// run without measurements is refused. What the campaign report derives
/// a synthesis from, so a synthesis is never taken on its own word.
pub fn recorded_table(matrix: &Matrix, out: &Path) -> Result<RunTable, ExperimentError> {
    let (table, _) = recorded_runs(matrix, out)?;
    complete_table(matrix.cells(), table)
}

/// Refuses an existing run ledger unless resuming, then makes the `runs`
/// folder.
fn prepare_runs_dir(out: &Path, resume: bool) -> Result<(), ExperimentError> {
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
    std::fs::create_dir_all(&runs_dir).map_err(|e| io_error(&runs_dir, &e))
}

/// A (cell, repetition) still to run, with its earlier failed record.
type PendingRun = (usize, u32, Option<RunRecord>);

/// The run table while runs are still missing, by cell then repetition.
type PartialTable = Vec<Vec<Option<RunRecord>>>;

/// The table of runs the ledger already holds with measurements, and every
/// run still to go, in cell then repetition order.
fn recorded_runs(
    matrix: &Matrix,
    out: &Path,
) -> Result<(PartialTable, Vec<PendingRun>), ExperimentError> {
    let cells = matrix.cells();
    let repetitions = matrix.repetitions();
    let mut table: PartialTable = vec![vec![None; repetitions as usize]; cells.len()];
    let mut pending = Vec::new();
    for (c, cell) in cells.iter().enumerate() {
        for r in 0..repetitions {
            let path = record_path(out, c, r);
            let record = if path.exists() {
                Some(read_record(matrix, &path, cell, r)?)
            } else {
                None
            };
            if record.as_ref().is_none_or(|rec| rec.metrics.is_none()) {
                pending.push((c, r, record));
            } else {
                table[c][r as usize] = record;
            }
        }
    }
    Ok((table, pending))
}

/// The complete table, refusing any run without measurements.
fn complete_table(cells: &[Cell], table: PartialTable) -> Result<RunTable, ExperimentError> {
    let mut complete = Vec::with_capacity(cells.len());
    for (c, row) in table.into_iter().enumerate() {
        let mut runs = Vec::with_capacity(row.len());
        for (r, record) in row.into_iter().enumerate() {
            match record {
                Some(record) if record.metrics.is_some() => runs.push(record),
                _ => {
                    return Err(ExperimentError::RunFailed {
                        cell: cells[c].name.clone(),
                        repetition: r as u32,
                        reason: "the run produced no measurements".into(),
                    })
                }
            }
        }
        complete.push(runs);
    }
    Ok(complete)
}

/// One attempt on its own thread, abandoned when it outlives `timeout`.
fn attempt(
    runner: &Arc<dyn MatrixRunner>,
    cell: &Cell,
    scenario: &Scenario,
    timeout: Duration,
) -> (AttemptOutcome, Option<String>, Option<RunMetrics>) {
    let (send, receive) = std::sync::mpsc::channel();
    let (runner, cell_owned, scenario_owned) = (Arc::clone(runner), cell.clone(), scenario.clone());
    let spawned = std::thread::Builder::new()
        .name("matrix-attempt".into())
        .spawn(move || {
            let _ = send.send(runner.run(&cell_owned, &scenario_owned));
        });
    if let Err(e) = spawned {
        return (
            AttemptOutcome::InfrastructureFailure,
            Some(format!("cannot start the attempt's thread: {e}")),
            None,
        );
    }
    match receive.recv_timeout(timeout) {
        Ok(Ok(metrics)) if metrics.completed => (AttemptOutcome::Completed, None, Some(metrics)),
        Ok(Ok(metrics)) => (
            AttemptOutcome::Incomplete,
            Some("the run did not dispatch every scheduled action".into()),
            Some(metrics),
        ),
        Ok(Err(reason)) => (AttemptOutcome::InfrastructureFailure, Some(reason), None),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => (
            AttemptOutcome::Timeout,
            Some(format!(
                "the attempt took longer than the protocol's timeout of {} s",
                timeout.as_secs_f64()
            )),
            None,
        ),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => (
            AttemptOutcome::InfrastructureFailure,
            Some("the attempt's thread ended without an answer".into()),
            None,
        ),
    }
}

/// Runs one run's attempts and writes its record.
fn run_one(
    matrix: &Matrix,
    out: &Path,
    runner: &Arc<dyn MatrixRunner>,
    load: &Load,
    c: usize,
    r: u32,
    earlier: Option<&RunRecord>,
) -> Result<RunRecord, ExperimentError> {
    let cell = &matrix.cells()[c];
    let scenario = matrix.scenario_for(cell, r)?;
    let timeout = Duration::from_secs_f64(load.timeout_seconds);
    let mut attempts: Vec<AttemptRecord> = earlier.map(|e| e.attempts.clone()).unwrap_or_default();
    let first = u32::try_from(attempts.len()).unwrap_or(u32::MAX);
    let mut metrics = None;
    for n in 1..=load.attempts.max(1) {
        let (outcome, reason, measured) = attempt(runner, cell, &scenario, timeout);
        attempts.push(AttemptRecord {
            attempt: first.saturating_add(n),
            outcome,
            reason,
        });
        if measured.is_some() {
            metrics = measured;
        }
        if outcome == AttemptOutcome::Completed {
            break;
        }
    }
    let record = RunRecord {
        schema_version: RUN_RECORD_SCHEMA.into(),
        matrix_id: matrix.id().into(),
        design_sha256: matrix.design_sha256().into(),
        cell: cell.name.clone(),
        repetition: r,
        seed: matrix.repetition_seed(r),
        attempts,
        metrics,
    };
    write_atomically(
        &record_path(out, c, r),
        ExperimentError::canonical_line(&record)?.as_bytes(),
    )?;
    Ok(record)
}
