//! The matrix executor's protocol with a stand-in runner: retried attempts
//! are all recorded and counted in the synthesis, a run whose attempts all
//! fail stops the matrix with its attempts kept and is completed by a
//! resume, a slow attempt times out, and the state file records the load.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chio_arena::Scenario;
use chio_experiment::execute::{
    recorded_table, run_matrix, AttemptOutcome, Load, MatrixRunner, RunRecord, STATE_FILE,
};
use chio_experiment::metrics::RunMetrics;
use chio_experiment::synthesis::synthesize;
use chio_experiment::{load_matrix, Cell, Matrix};

fn matrix(dir: &Path, attempts: u32, timeout: &str) -> Matrix {
    let scenario = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/pr-421-review.toml");
    let text = format!(
        "schema_version = \"chio.arena.matrix/v2\"\nid = \"m\"\ntitle = \"t\"\nhypothesis = \"h\"\nscenario = {:?}\nroot = \"/\"\n\n[protocol]\nrepetitions = 3\nattempts = {attempts}\ntimeout = {timeout}\n\n[axes]\npipeline = [\"full\", \"weak\"]\n\n[values.pipeline.weak]\nguards = {{ kernel-a = [\"no-dotfiles\"] }}\n\n[verdict]\ncriterion = \"escape_rate\"\nreference = \"full\"\n",
        scenario.to_str().unwrap()
    );
    let file = dir.join("m.toml");
    std::fs::write(&file, text).unwrap();
    load_matrix(&file).unwrap()
}

fn load(m: &Matrix) -> Load {
    Load {
        runs_planned: (m.cells().len() as u64) * u64::from(m.repetitions()),
        concurrency: 2,
        concurrency_source: "protocol".to_string(),
        timeout_seconds: m.timeout_seconds(),
        attempts: m.attempts(),
    }
}

fn metrics() -> RunMetrics {
    RunMetrics {
        completed: true,
        calls: 2,
        expectations_met: 2,
        adversary_actions: 4,
        escapes: 1,
        evaluations: 6,
        decisions: 6,
        denied: 3,
        ..RunMetrics::default()
    }
}

/// Fails the first `failures` attempts it is given, whichever runs they
/// belong to (a run's seed is a digest of the design, so no property of it
/// picks a run reliably).
struct Flaky {
    failures: AtomicU32,
}

impl MatrixRunner for Flaky {
    fn run(&self, _cell: &Cell, _scenario: &Scenario) -> Result<RunMetrics, String> {
        if self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err("the world failed to start".into());
        }
        Ok(metrics())
    }
}

fn records(out: &Path) -> Vec<RunRecord> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(out.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

// A run that fails once is retried within its attempts; both attempts are recorded and the synthesis counts the run as retried.
#[test]
fn failed_attempts_are_retried_and_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let m = matrix(tmp.path(), 3, "60");
    let out = tmp.path().join("out");
    let runner = Arc::new(Flaky {
        failures: AtomicU32::new(1),
    });
    let (table, _) = run_matrix(&m, &out, false, runner, &load(&m), &|_, _| {}, &|| 0).unwrap();
    let synthesis = synthesize(&m, &table, &load(&m));
    let retried: Vec<&RunRecord> = table
        .iter()
        .flatten()
        .filter(|r| r.attempts.len() > 1)
        .collect();
    assert_eq!(retried.len(), 1);
    assert_eq!(
        retried[0].attempts[0].outcome,
        AttemptOutcome::InfrastructureFailure
    );
    assert_eq!(retried[0].attempts[1].outcome, AttemptOutcome::Completed);
    assert_eq!(synthesis.runs.retried, 1);
    assert_eq!(synthesis.runs.attempts, 7);
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(STATE_FILE)).unwrap()).unwrap();
    assert_eq!(state["status"], "complete");
    assert_eq!(state["load"]["runs_planned"], 6);
    assert_eq!(state["load"]["attempts"], 3);
    assert_eq!(state["runs"]["retried"], 1);
}

// A run whose every attempt fails stops the matrix, keeps its attempts on disk, and a resume appends new attempts to them.
#[test]
fn exhausted_attempts_stop_the_matrix_and_resume_continues() {
    let tmp = tempfile::tempdir().unwrap();
    let m = matrix(tmp.path(), 1, "60");
    let out = tmp.path().join("out");
    let runner = Arc::new(Flaky {
        failures: AtomicU32::new(1),
    });
    let err = run_matrix(
        &m,
        &out,
        false,
        runner.clone(),
        &load(&m),
        &|_, _| {},
        &|| 0,
    )
    .unwrap_err();
    assert_eq!(err.code(), "CHIO-MATRIX-RUN-FAILED");
    let failed: Vec<RunRecord> = records(&out)
        .into_iter()
        .filter(|r| r.metrics.is_none())
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].attempts.len(), 1);
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join(STATE_FILE)).unwrap()).unwrap();
    assert_eq!(state["status"], "failed");
    let (table, summary) =
        run_matrix(&m, &out, true, runner, &load(&m), &|_, _| {}, &|| 0).unwrap();
    assert!(summary.executed >= 1);
    let resumed = table
        .iter()
        .flatten()
        .find(|r| r.cell == failed[0].cell && r.repetition == failed[0].repetition)
        .unwrap();
    let numbers: Vec<u32> = resumed.attempts.iter().map(|a| a.attempt).collect();
    assert_eq!(
        numbers,
        [1, 2],
        "the earlier attempt is kept and numbering continues"
    );
}

// A run record whose counts no run measures (more escapes than counted adversary actions) is refused, naming the file and the field, by a resume and by the reader a campaign re-derives a synthesis with; nothing is synthesised from it.
#[test]
fn impossible_counts_in_a_run_record_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let m = matrix(tmp.path(), 1, "60");
    let out = tmp.path().join("out");
    let runner = Arc::new(Flaky {
        failures: AtomicU32::new(0),
    });
    run_matrix(
        &m,
        &out,
        false,
        runner.clone(),
        &load(&m),
        &|_, _| {},
        &|| 0,
    )
    .unwrap();
    recorded_table(&m, &out).unwrap();
    let path = out.join("runs/c000-r0001.json");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record["metrics"]["escapes"] = 1000.into();
    std::fs::write(&path, serde_json::to_vec(&record).unwrap()).unwrap();
    let resumed = run_matrix(&m, &out, true, runner, &load(&m), &|_, _| {}, &|| 0).unwrap_err();
    let read = recorded_table(&m, &out).unwrap_err();
    for err in [resumed, read] {
        assert_eq!(err.code(), "CHIO-EXPERIMENT-SYNTAX");
        let text = err.summary();
        assert!(
            text.contains("c000-r0001.json")
                && text
                    .contains("metrics.escapes is 1000, more than metrics.adversary_actions (4)"),
            "{text}"
        );
    }
}

/// Takes longer than any short timeout.
struct Slow;

impl MatrixRunner for Slow {
    fn run(&self, _cell: &Cell, _scenario: &Scenario) -> Result<RunMetrics, String> {
        std::thread::sleep(Duration::from_millis(400));
        Ok(metrics())
    }
}

// An attempt that outlives the protocol's timeout is recorded as a timeout and counts as failed.
#[test]
fn slow_attempts_time_out() {
    let tmp = tempfile::tempdir().unwrap();
    let m = matrix(tmp.path(), 1, "0.05");
    let out = tmp.path().join("out");
    let err = run_matrix(
        &m,
        &out,
        false,
        Arc::new(Slow),
        &load(&m),
        &|_, _| {},
        &|| 0,
    )
    .unwrap_err();
    assert_eq!(err.code(), "CHIO-MATRIX-RUN-FAILED");
    let timed_out = records(&out)
        .into_iter()
        .flat_map(|r| r.attempts)
        .filter(|a| a.outcome == AttemptOutcome::Timeout)
        .count();
    assert!(timed_out >= 1);
}
