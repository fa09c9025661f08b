//! `chio arena run FILE [--json] [--out DIR] [--keep-going] [--junit PATH]
//! [--html FILE] [--replay-from DIR]`.
//!
//! A scenario with mcp servers runs only with `--replay-from DIR`, whose
//! recording answers their calls (`arena_record`); without it the run is
//! refused (`CHIO-ARENA-MCP-NOT-RECORDED`) and nothing is started.
//!
//! Loads and validates the scenario, refuses one without a world, runs it
//! in the embedded topology (or across node processes with `--topology
//! local|FILE`, see `topology`), writes the bundle (by default under
//! `target/arena/<scenario-id>/`) and prints the outcome: with `--json` the
//! `chio.arena.run/v1` document, otherwise a table. Exit 0 when every
//! expectation held, 1 when one did not (the run stops at the first unless
//! `--keep-going`), 2 for a refused scenario (every refusal `arena validate`
//! makes too, with the same code), 3 for an infrastructure failure; the
//! bundle is written in every case but the refusal. A bundle the disk cannot
//! hold is an infrastructure failure (`CHIO-ARENA-BUNDLE-IO`) that keeps the
//! previous bundle in `--out` intact. With `--junit PATH` a JUnit XML report
//! of the run (`junit`) is written too, atomically, after the bundle; a
//! report that cannot be written is an infrastructure failure
//! (`CHIO-REPORT-WRITE`, exit 3). With `--html FILE` the run's report page
//! is written the same way, rendered from the written bundle as `chio
//! report` renders it (`crate::html_report`). The run keeps no step record in memory:
//! the table, the document and the JUnit report read the steps back from
//! the written bundle one at a time (`outcome`), and a bundle that cannot be
//! read back is an infrastructure failure (`CHIO-REPORT-BUNDLE-READ`, exit
//! 3). A report path that is the scenario or a file it reads, lies in the
//! bundle folder or is the other report's path is refused before anything
//! runs (`CHIO-REPORT-PATH`, exit 2; `crate::report::paths`). The table's
//! result column is coloured when the `Palette` says so; JSON never is.

use std::io::Write;
use std::path::{Path, PathBuf};

use chio_arena::Scenario;

use crate::cli::RunArgs;
use crate::driver::{DispatchMode, RunInputs, RunOptions, RunResult, RunStatus, UNEXPECTED_REASON};
use crate::error::{codes, CliError};
use crate::report::{write_report, ReportKind};
use crate::term::Palette;

mod outcome;
#[cfg(test)]
mod outcome_tests;

pub(crate) use outcome::{bundle_error, each_step, read_back_error, write_table};

const COMMAND: &str = "arena run";

/// The schema of the `--json` document.
pub const RUN_SCHEMA_VERSION: &str = "chio.arena.run/v1";

/// Loads a scenario and everything a run of it needs, or the CLI error.
/// Everything about the file and its fixtures is checked by the loader, as
/// `arena validate` checks it, so a run refuses no file validate accepts;
/// the one exception is a scenario without a world, which validates (the
/// seed's example has none) but gives a run nothing to dispatch.
pub fn load_for_run(command: &'static str, file: &Path) -> Result<(Scenario, RunInputs), CliError> {
    load_for_run_sealed_from(command, file, None)
}

/// [`load_for_run`], reading sealed files below `sealed_from` when given
/// (see `chio_arena::scenario::sealed`).
pub fn load_for_run_sealed_from(
    command: &'static str,
    file: &Path,
    sealed_from: Option<&Path>,
) -> Result<(Scenario, RunInputs), CliError> {
    let scenario = chio_arena::scenario::load::load_scenario_sealed_from(file, sealed_from)
        .map_err(|e| CliError::from_scenario_file(command, file, &e))?;
    scenario
        .require_world()
        .map_err(|e| CliError::from_arena(command, &e))?;
    let inputs = RunInputs::load(&scenario).map_err(|e| CliError::node(command, &e))?;
    Ok((scenario, inputs))
}

/// A tokio runtime for one command.
pub fn runtime(command: &'static str) -> Result<tokio::runtime::Runtime, CliError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("chio-controller")
        .enable_all()
        .build()
        .map_err(|e| {
            CliError::infrastructure(command, format!("cannot start the async runtime: {e}"))
        })
}

/// Runs the command, printing to `out` in `palette`'s colours.
pub fn run(args: &RunArgs, out: &mut dyn Write, palette: Palette) -> Result<(), CliError> {
    let (scenario, mut inputs) = load_for_run(COMMAND, &args.file)?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/arena").join(scenario.id()));
    check_report_paths(args, &scenario, &dir)?;
    // A live MCP server is never started by a run: its calls are answered
    // from the recording `arena record` wrote.
    match &args.replay_from {
        Some(from) => {
            crate::arena_record::attach_recordings(COMMAND, &scenario, &mut inputs, from)?
        }
        None if !crate::arena_record::mcp_servers(&scenario).is_empty() => {
            return Err(crate::arena_record::not_recorded(COMMAND, &scenario))
        }
        None => {}
    }
    let options = RunOptions {
        keep_going: args.keep_going,
        dispatch: if args.one_at_a_time {
            DispatchMode::OneAtATime
        } else {
            DispatchMode::Pipelined
        },
    };
    let topology = args.topology.clone().unwrap_or_default();
    // The bundle is written as the run goes and the result keeps no step
    // record, so memory does not grow with the records; every report of
    // the steps reads them back from the bundle one at a time.
    let result =
        crate::topology::run_with_topology(COMMAND, &topology, &scenario, &inputs, options, &dir)?
            .map_err(|e| CliError::node(COMMAND, &e))?
            .map_err(|e| CliError::from_arena(COMMAND, &e))?;
    if let Some(path) = &args.junit {
        let suite =
            crate::junit::suite_from_bundle(COMMAND, &scenario, &result.bundle.manifest, &dir)?;
        crate::junit::render("chio arena run", &[suite])
            .and_then(|xml| write_report(ReportKind::Junit, path, &xml))
            .map_err(|e| e.into_cli(COMMAND))?;
    }
    if let Some(path) = &args.html {
        let html = crate::html_report::run_page(COMMAND, &dir)?;
        crate::html_report::write_page(COMMAND, path, &html)?;
    }
    let tally = if args.json {
        outcome::write_json(COMMAND, &scenario, &result, &dir, out)?
    } else {
        outcome::write_table(COMMAND, &scenario, &result, &dir, palette, out)?
    };
    outcome_error(COMMAND, &result, &tally).map_err(|e| CliError {
        location: failed_step_location(&args.file, &scenario, &result, &tally),
        ..e
    })
}

/// Refuses, before anything runs, a `--junit` or `--html` path that is
/// the scenario or a file it reads, the recording or the topology file, or
/// lies in the bundle folder `dir`, or is the other report's path
/// (`crate::report::paths`).
fn check_report_paths(args: &RunArgs, scenario: &Scenario, dir: &Path) -> Result<(), CliError> {
    use crate::report::paths::{check_reports, scenario_guards, topology_guard, Guard, Report};
    let mut guards = scenario_guards(&args.file, scenario);
    if let Some(from) = &args.replay_from {
        guards.push(Guard::reads(
            from,
            "the recording folder --replay-from names",
        ));
    }
    guards.extend(topology_guard(args.topology.as_ref()));
    guards.push(Guard::writes(dir, "the bundle folder"));
    let reports = [
        Report {
            flag: "--junit",
            path: args.junit.as_deref(),
            example: "target/reports/run.xml",
        },
        Report {
            flag: "--html",
            path: args.html.as_deref(),
            example: "target/reports/run.html",
        },
    ];
    check_reports(COMMAND, &reports, &guards)?;
    crate::report::paths::check_report_destinations(COMMAND, &reports)
}

/// Where the step a run stopped at (or, for `--keep-going`, its first
/// mismatching step) writes what it expected, as `FILE:LINE:COLUMN`: its
/// `expect_reason` for a reason mismatch, else its `expect_verdict` (or
/// `expect`), else its `id`.
fn failed_step_location(
    file: &Path,
    scenario: &Scenario,
    result: &RunResult,
    tally: &outcome::Tally,
) -> Option<String> {
    let manifest = &result.bundle.manifest;
    let (step_id, reason) = match (&manifest.stopped, manifest.mismatches.first()) {
        (Some(stop), _) => (stop.step_id.as_str(), stop.cause == UNEXPECTED_REASON),
        (None, Some(first)) => {
            let verdict = format!("{first} (");
            (
                first.as_str(),
                !tally
                    .verdict_mismatches
                    .iter()
                    .any(|m| m.starts_with(&verdict)),
            )
        }
        (None, None) => return None,
    };
    let index = scenario
        .steps()
        .position(|s| s.is_ok_and(|s| s.head.id == step_id))?;
    let text = String::from_utf8(scenario.text().to_vec().ok()?).ok()?;
    let fields: &[&str] = if reason {
        &["expect_reason", "expect_verdict", "id"]
    } else {
        &["expect_verdict", "expect", "id"]
    };
    fields.iter().find_map(|field| {
        let (line, column) =
            chio_arena::scenario::locate(&text, &format!("steps[{index}].{field}"))?;
        Some(format!("{}:{line}:{column}", file.display()))
    })
}

/// The error a finished run exits with, if any; the tally's mismatches
/// say, for a run that failed (`--keep-going`), which steps answered
/// another verdict and which only missed their reason: a run that missed
/// only reasons is `CHIO-ARENA-UNEXPECTED-REASON`, and either kind is
/// labelled as what it is, with what was expected and what came.
pub(crate) fn outcome_error(
    command: &'static str,
    result: &RunResult,
    tally: &outcome::Tally,
) -> Result<(), CliError> {
    let manifest = &result.bundle.manifest;
    match result.status {
        RunStatus::Passed => Ok(()),
        RunStatus::Stopped => {
            let stop = manifest.stopped.as_ref();
            if stop.is_some_and(|s| s.cause == UNEXPECTED_REASON) {
                return Err(CliError::new(
                    codes::UNEXPECTED_REASON,
                    command,
                    stop.map(|s| s.message.clone()).unwrap_or_default(),
                    "fix the policy or the step's expect_reason (a part of the reason, matched case-sensitively); chio arena explain BUNDLE STEP shows what the decision read, and --keep-going runs the remaining steps",
                ));
            }
            Err(CliError::new(
                codes::UNEXPECTED_VERDICT,
                command,
                stop.map(|s| s.message.clone()).unwrap_or_default(),
                "fix the policy or the step's expect_verdict (or expect, for a delegate or revoke step); the bundle keeps every receipt up to this step, and --keep-going runs the remaining steps",
            ))
        }
        RunStatus::Failed => {
            let (code, help) = if tally.only_reasons {
                (codes::UNEXPECTED_REASON, "fix the policy or the steps' expect_reason; each step's reason is in the bundle")
            } else {
                (codes::UNEXPECTED_VERDICT, "fix the policy or the steps' expect_verdict (and expect_reason); each step's verdict and reason are in the bundle")
            };
            Err(CliError::new(
                code,
                command,
                failed_message(manifest, tally),
                help,
            ))
        }
        RunStatus::InfrastructureFailure => Err(CliError::infrastructure(
            command,
            result
                .failure
                .as_ref()
                .map(|f| {
                    format!(
                        "run stopped at step {}: {f}",
                        manifest
                            .stopped
                            .as_ref()
                            .map(|s| s.step_id.as_str())
                            .unwrap_or("?")
                    )
                })
                .unwrap_or_default(),
        )),
    }
}

/// What a failed run missed: the verdict mismatches, then the reason
/// mismatches, each labelled and with expected and actual.
fn failed_message(manifest: &chio_arena::bundle::BundleManifest, tally: &outcome::Tally) -> String {
    let mut parts = Vec::new();
    if !tally.verdict_mismatches.is_empty() {
        parts.push(format!(
            "{} step(s) answered another verdict than expected: {}",
            tally.verdict_mismatches.len(),
            tally.verdict_mismatches.join(", ")
        ));
    }
    if !tally.reason_mismatches.is_empty() {
        parts.push(format!(
            "{} reason mismatch(es): {}",
            tally.reason_mismatches.len(),
            tally.reason_mismatches.join("; ")
        ));
    }
    if parts.is_empty() {
        format!(
            "{} step(s) answered other than expected: {}",
            manifest.mismatches.len(),
            manifest.mismatches.join(", ")
        )
    } else {
        parts.join("; ")
    }
}
