//! Every scenario a test: a `cargo test` harness that runs each scenario
//! file of a folder as its own named test against the real kernel.
//!
//! A crate that keeps scenarios beside its code declares a test target with
//! `harness = false` and hands the folder to [`run_scenarios_in`]; each
//! `*.toml` file directly in that folder (not in sub-folders, which hold
//! fixtures, matrices and campaigns) becomes one test named after its file
//! stem. A test loads and validates the scenario, runs every step in the
//! embedded topology (one process, the same run path as `chio arena run`,
//! continuing past a mismatch so every one is reported), and passes when
//! every step met its expectation. A failing test names each step whose
//! verdict was unexpected, with the expected and actual verdict and the
//! kernel's reason (and, for a step with `expect_reason`, the expected and
//! the actual reason). Filtering works as with the built-in harness:
//! `cargo test --test scenarios walking` runs the tests whose name contains
//! `walking`. Nothing is written to disk: the bundle stays in memory.
//!
//! A scenario that declares no world (a validate-only file such as the
//! seed's PR 421 example) has nothing to run: its test is listed as ignored,
//! never passed, and `--include-ignored` runs it into the same refusal
//! `chio arena run` prints (`CHIO-SCENARIO-NO-WORLD`). So is a scenario with
//! a live MCP server (`kind = "mcp"`), which runs only from a recording
//! `chio arena record` made: `--include-ignored` runs it into the refusal
//! `chio arena run` prints without `--replay-from`
//! (`CHIO-ARENA-MCP-NOT-RECORDED`).
//!
//! In `Cargo.toml`:
//!
//! ```toml
//! [[test]]
//! name = "scenarios"
//! harness = false
//! ```
//!
//! and `tests/scenarios.rs`:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     chio_controller::harness::run_scenarios_in(concat!(
//!         env!("CARGO_MANIFEST_DIR"),
//!         "/scenarios"
//!     ))
//! }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use libtest_mimic::{Arguments, Failed, Trial};

use crate::arena_run::load_for_run;
use crate::driver::{run_embedded, ReadBack, RunOptions, RunStatus};

const COMMAND: &str = "arena run";

/// The scenario files directly in `dir` (`*.toml`, not recursing), sorted
/// by path so test order never depends on the file system.
pub fn scenario_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Runs one scenario file to the end in the embedded topology; `Ok` when
/// every step met its expectation, otherwise a message naming each
/// mismatched step (or the error that kept the scenario from running).
pub fn check_scenario(file: &Path) -> Result<(), String> {
    let (scenario, inputs) = load_for_run(COMMAND, file).map_err(|e| e.render())?;
    if !crate::arena_record::mcp_servers(&scenario).is_empty() {
        return Err(crate::arena_record::not_recorded(COMMAND, &scenario).render());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let scratch = ReadBack::new().map_err(|e| format!("{}: {e}", file.display()))?;
    let options = RunOptions::keep_going(true);
    let live = BTreeMap::new();
    let run = runtime.block_on(run_embedded(
        &scenario,
        &inputs,
        options,
        &live,
        scratch.out(),
    ));
    let result = scratch
        .bundle(run)
        .map_err(|e| format!("{}: the world could not be started: {e}", file.display()))?;
    match result.status {
        RunStatus::Passed => Ok(()),
        RunStatus::InfrastructureFailure => Err(format!(
            "{}: infrastructure failure: {}",
            scenario.id(),
            result
                .bundle
                .manifest
                .stopped
                .as_ref()
                .map(|s| format!("at step {}: {}", s.step_id, s.message))
                .unwrap_or_default()
        )),
        RunStatus::Failed | RunStatus::Stopped => Err(format!(
            "{}: steps answered other than expected:\n{}",
            scenario.id(),
            mismatch_lines(&result.bundle.manifest.steps)
        )),
    }
}

/// One line per step that did not meet its expectation: the expected and
/// the actual outcome with the kernel's reason, or the reason mismatch when
/// the verdict held. Shared by the harness and `api::ScenarioRun`.
pub(crate) fn mismatch_lines(steps: &[chio_arena::bundle::StepRecord]) -> String {
    let mut text = String::new();
    for step in steps.iter().filter(|s| s.pass == Some(false)) {
        let message = crate::junit::failure_message(step);
        text.push_str(&format!("  {}: {message}\n", step.step_id));
    }
    text
}

/// One test per scenario file in `dir`, named after the file stem. A folder
/// that cannot be listed becomes one failing test, so the failure is seen
/// rather than a silent empty run.
///
/// ```
/// let empty = tempfile::tempdir().unwrap();
/// assert!(chio_controller::harness::trials_in(empty.path()).is_empty());
/// ```
pub fn trials_in(dir: impl AsRef<Path>) -> Vec<Trial> {
    let dir = dir.as_ref().to_path_buf();
    match scenario_files(&dir) {
        Ok(files) => files
            .into_iter()
            .map(|file| {
                let name = file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // A scenario that loads without a world has nothing to
                // run, and one with a live MCP server runs only from its
                // recording.
                let worldless = chio_arena::load_scenario(&file).is_ok_and(|s| {
                    !s.has_world() || !crate::arena_record::mcp_servers(&s).is_empty()
                });
                Trial::test(name, move || check_scenario(&file).map_err(Failed::from))
                    .with_kind("scenario")
                    .with_ignored_flag(worldless)
            })
            .collect(),
        Err(e) => vec![Trial::test("scenario-folder", move || {
            Err(Failed::from(format!(
                "cannot list the scenario folder {}: {e}; check the path given to run_scenarios_in",
                dir.display()
            )))
        })],
    }
}

/// Runs every scenario in `dir` as a test, reading the test binary's
/// arguments (filters, `--list`, `--exact`, `--test-threads` and the rest
/// of libtest's flags), and returns the exit code for `main`.
pub fn run_scenarios_in(dir: impl AsRef<Path>) -> ExitCode {
    let args = Arguments::from_args();
    libtest_mimic::run(&args, trials_in(dir)).exit_code()
}
