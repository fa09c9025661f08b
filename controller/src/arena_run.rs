//! `chio arena run FILE [--json] [--out DIR] [--keep-going] [--junit PATH]`.
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
//! (`CHIO-REPORT-WRITE`, exit 3). The table's result column is coloured when
//! the `Palette` says so; JSON never is.

use std::io::Write;
use std::path::{Path, PathBuf};

use chio_arena::bundle::{Bundle, StepOutcome, StepRecord};
use chio_arena::{load_scenario_with_bytes, ActionKind, Scenario};
use serde::Serialize;

use crate::cli::RunArgs;
use crate::driver::{DispatchMode, RunInputs, RunOptions, RunResult, RunStatus, UNEXPECTED_REASON};
use crate::error::{codes, CliError};
use crate::report::{write_report, ReportKind};
use crate::term::{Palette, Tone};

const COMMAND: &str = "arena run";

/// The schema of the `--json` document.
pub const RUN_SCHEMA_VERSION: &str = "chio.arena.run/v1";

/// The code of a run stopped by a reason that lacks its `expect_reason`.
pub const UNEXPECTED_REASON_CODE: &str = codes::UNEXPECTED_REASON.code;

/// One step of the outcome.
#[derive(Debug, Serialize)]
struct OutcomeStep<'a> {
    step_id: &'a str,
    action: ActionKind,
    agent: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<StepOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    actual: Option<StepOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pass: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<&'a [String]>,
}

#[derive(Debug, Serialize)]
struct Outcome<'a> {
    status: RunStatus,
    calls: usize,
    passed: usize,
    failed: usize,
    receipt_root: &'a str,
    receipts: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_at: Option<&'a str>,
    steps: Vec<OutcomeStep<'a>>,
}

#[derive(Debug, Serialize)]
struct RunReport<'a> {
    bundle_dir: String,
    determinism: &'a chio_arena::DeterminismWitness,
    scenario_id: &'a str,
    scenario_title: &'a str,
    schema_version: &'static str,
    outcome: Outcome<'a>,
}

/// Loads a scenario and everything a run of it needs, or the CLI error.
/// Everything about the file and its fixtures is checked by the loader, as
/// `arena validate` checks it, so a run refuses no file validate accepts;
/// the one exception is a scenario without a world, which validates (the
/// seed's example has none) but gives a run nothing to dispatch.
pub fn load_for_run(command: &'static str, file: &Path) -> Result<(Scenario, RunInputs), CliError> {
    let (scenario, bytes) = load_scenario_with_bytes(file)
        .map_err(|e| CliError::from_scenario_file(command, file, &e))?;
    scenario
        .require_world()
        .map_err(|e| CliError::from_arena(command, &e))?;
    let inputs = RunInputs::load(&scenario, bytes).map_err(|e| CliError::node(command, &e))?;
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
    let (scenario, inputs) = load_for_run(COMMAND, &args.file)?;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("target/arena").join(scenario.id()));
    let options = RunOptions {
        keep_going: args.keep_going,
        dispatch: if args.one_at_a_time {
            DispatchMode::OneAtATime
        } else {
            DispatchMode::Pipelined
        },
    };
    let topology = args.topology.clone().unwrap_or_default();
    // The bundle is written as the run goes, so memory does not grow with
    // the records; the result keeps each step's summary for the report.
    let result = crate::topology::run_with_topology(
        COMMAND,
        &topology,
        &scenario,
        &inputs,
        options,
        Some(&dir),
    )?
    .map_err(|e| CliError::node(COMMAND, &e))?
    .map_err(|e| CliError::from_arena(COMMAND, &e))?;
    if let Some(path) = &args.junit {
        let suite = crate::junit::suite_from_run(&scenario, &result.bundle.manifest);
        let xml = crate::junit::render("chio arena run", &[suite]);
        write_report(ReportKind::Junit, path, xml.as_bytes()).map_err(|e| e.into_cli(COMMAND))?;
    }
    let text = if args.json {
        render_json(&scenario, &result, &dir)?
    } else {
        render_table(&scenario, &result, &dir, palette)
    };
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::output(COMMAND, &e))?;
    outcome_error(COMMAND, &result)
}

/// The error a finished run exits with, if any.
pub fn outcome_error(command: &'static str, result: &RunResult) -> Result<(), CliError> {
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
            // Only reasons missed when every mismatched step has the
            // expected verdict (or outcome).
            let only_reasons = manifest
                .steps
                .iter()
                .filter(|s| manifest.mismatches.contains(&s.step_id))
                .all(|s| s.expected == s.actual);
            let (code, help) = if only_reasons {
                (codes::UNEXPECTED_REASON, "fix the policy or the steps' expect_reason; each step's reason is in the bundle")
            } else {
                (codes::UNEXPECTED_VERDICT, "fix the policy or the steps' expect_verdict; each step's verdict and reason are in the bundle")
            };
            Err(CliError::new(
                code,
                command,
                format!(
                    "{} step(s) answered other than expected: {}",
                    manifest.mismatches.len(),
                    manifest.mismatches.join(", ")
                ),
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

fn outcome<'a>(result: &'a RunResult, bundle: &'a Bundle) -> Outcome<'a> {
    let manifest = &bundle.manifest;
    // `calls` counts the judged call steps, as the run document always has;
    // delegate and revoke steps with their own expectations are judged too,
    // and the table reports them on the same line.
    let calls: Vec<_> = manifest
        .steps
        .iter()
        .filter(|s| s.pass.is_some() && s.action == ActionKind::Call)
        .collect();
    Outcome {
        status: result.status.clone(),
        calls: calls.len(),
        passed: calls.iter().filter(|s| s.pass == Some(true)).count(),
        failed: calls.iter().filter(|s| s.pass == Some(false)).count(),
        receipt_root: &manifest.receipt_root,
        receipts: manifest.receipt_count,
        stopped_at: manifest.stopped.as_ref().map(|s| s.step_id.as_str()),
        steps: manifest
            .steps
            .iter()
            .map(|s| OutcomeStep {
                step_id: &s.step_id,
                action: s.action,
                agent: &s.agent,
                kernel: s.kernel.as_deref(),
                expected: s.expected,
                actual: s.actual,
                pass: s.pass,
                reason: s.reason.as_deref(),
                expected_reason: s.expected_reason.as_deref(),
                labels: s.labels.as_deref(),
            })
            .collect(),
    }
}

fn render_json(scenario: &Scenario, result: &RunResult, dir: &Path) -> Result<String, CliError> {
    let report = RunReport {
        bundle_dir: dir.display().to_string(),
        determinism: &result.bundle.manifest.determinism,
        scenario_id: scenario.id(),
        scenario_title: scenario.title(),
        schema_version: RUN_SCHEMA_VERSION,
        outcome: outcome(result, &result.bundle),
    };
    let mut text = chio_kernel::canonical::to_canonical_string(&report)
        .map_err(|e| CliError::from_arena(COMMAND, &chio_arena::ArenaError::from(e)))?;
    text.push('\n');
    Ok(text)
}

/// One row of the table: a step's cells, in column order.
fn table_row(s: &StepRecord, infrastructure_stop: Option<&str>) -> [String; 7] {
    [
        s.step_id.clone(),
        s.action.to_string(),
        s.agent.clone(),
        match (&s.target, &s.kernel, &s.detail) {
            (Some(t), Some(k), _) => format!("{t} @ {k}"),
            (Some(t), None, _) if s.action == ActionKind::Message => format!(
                "to {t} [{}]",
                s.labels.as_deref().unwrap_or_default().join(", ")
            ),
            (_, _, _) if s.action == ActionKind::Delegate => match s.labels.as_deref() {
                Some(labels) if !labels.is_empty() => {
                    format!("carries [{}]", labels.join(", "))
                }
                _ => String::new(),
            },
            (_, _, Some(d)) if matches!(s.action, ActionKind::Revoke | ActionKind::Fault) => {
                d.clone()
            }
            (_, _, Some(d)) if s.action == ActionKind::Advance => format!("+{d} ms"),
            _ => String::new(),
        },
        s.expected.map(|e| e.to_string()).unwrap_or_default(),
        s.actual.map(|a| a.to_string()).unwrap_or_default(),
        match s.pass {
            Some(true) => "pass".into(),
            Some(false) => "FAIL".into(),
            None if infrastructure_stop == Some(s.step_id.as_str()) => "ERROR".into(),
            None => "done".into(),
        },
    ]
}

fn render_table(scenario: &Scenario, result: &RunResult, dir: &Path, palette: Palette) -> String {
    let manifest = &result.bundle.manifest;
    let header: [String; 7] = [
        "STEP".into(),
        "ACTION".into(),
        "AGENT".into(),
        "TARGET".into(),
        "EXPECTED".into(),
        "ACTUAL".into(),
        "RESULT".into(),
    ];
    // The step an infrastructure failure stopped at did not complete.
    let infrastructure_stop = manifest
        .stopped
        .as_ref()
        .filter(|stop| stop.cause == "infrastructure")
        .map(|stop| stop.step_id.as_str());
    // Rows are made twice (widths, then lines) rather than kept, so a long
    // run's table costs no more memory than its text.
    let mut widths: Vec<usize> = header.iter().map(|c| c.chars().count()).collect();
    for s in &manifest.steps {
        for (i, cell) in table_row(s, infrastructure_stop).iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut text = format!(
        "scenario {}: {}\nbundle   {}\n\n",
        scenario.id(),
        scenario.title(),
        dir.display()
    );
    let rows = std::iter::once((header, None)).chain(
        manifest
            .steps
            .iter()
            .map(|s| (table_row(s, infrastructure_stop), Some(s))),
    );
    for (n, (row, step)) in rows.enumerate() {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate().take(6) {
            line.push_str(&format!("{:width$}  ", cell, width = widths[i]));
        }
        line.push_str(&match (n, row[6].as_str()) {
            (0, cell) => cell.to_string(),
            (_, "pass") => palette.paint(Tone::Good, "pass"),
            (_, "FAIL") => palette.paint(Tone::Bad, "FAIL"),
            (_, cell) => cell.to_string(),
        });
        text.push_str(line.trim_end());
        text.push('\n');
        if let Some(step) = step {
            if let Some(reason) = &step.reason {
                text.push_str(&format!(
                    "{:indent$}reason: {reason}\n",
                    "",
                    indent = widths[0] + 2
                ));
            }
            if let Some(miss) = crate::driver::reason_mismatch(step) {
                text.push_str(&format!("{:indent$}{miss}\n", "", indent = widths[0] + 2));
            }
        }
    }
    let o = outcome(result, &result.bundle);
    let others: Vec<_> = manifest
        .steps
        .iter()
        .filter(|s| s.pass.is_some() && s.action != ActionKind::Call)
        .collect();
    let others = if others.is_empty() {
        String::new()
    } else {
        format!(
            "; {} delegate or revoke steps, {} as expected",
            others.len(),
            others.iter().filter(|s| s.pass == Some(true)).count()
        )
    };
    text.push_str(&format!(
        "\nresult: {} ({} calls, {} passed, {} failed{others}){}\nreceipts: {} (root {})\n",
        match result.status {
            RunStatus::Passed => palette.paint(Tone::Good, "passed"),
            RunStatus::Failed => palette.paint(Tone::Bad, "failed"),
            RunStatus::Stopped => palette.paint(Tone::Bad, "stopped"),
            RunStatus::InfrastructureFailure => palette.paint(Tone::Bad, "infrastructure failure"),
        },
        o.calls,
        o.passed,
        o.failed,
        manifest
            .stopped
            .as_ref()
            .map(|s| format!(", stopped at {}", s.step_id))
            .unwrap_or_default(),
        manifest.receipt_count,
        manifest.receipt_root
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use chio_arena::bundle::{BundleManifest, BundleStatus, StepInputs, StepRecord, StopRecord};
    use chio_kernel::verdict::ProjectedVerdict;
    use std::collections::BTreeMap;

    fn step(id: &str) -> StepRecord {
        StepRecord {
            step_id: id.to_string(),
            action: ActionKind::Call,
            agent: "solo".to_string(),
            virtual_time: "2026-01-05T08:00:00.000Z".to_string(),
            kernel: Some("kernel-a".to_string()),
            target: Some("workspace/read_file".to_string()),
            expected: Some(ProjectedVerdict::Allow.into()),
            actual: None,
            verdict: None,
            reason: None,
            guard: None,
            receipt_id: None,
            recorded: None,
            pass: None,
            detail: None,
            expected_reason: None,
            labels: None,
            trace: None,
            inputs: StepInputs::default(),
        }
    }

    // The step an infrastructure failure stopped at shows ERROR, not done, in the table.
    #[test]
    fn infrastructure_stop_is_not_shown_as_done() {
        let scenario = chio_arena::load_scenario(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios/walking_skeleton.toml"),
        )
        .unwrap();
        let manifest = BundleManifest {
            schema_version: chio_arena::bundle::BUNDLE_SCHEMA.to_string(),
            determinism: scenario.determinism_witness(),
            scenario_title: scenario.title().to_string(),
            scenario_sha256: String::new(),
            status: BundleStatus::Failed,
            stopped: Some(StopRecord {
                step_id: "read-notes".to_string(),
                cause: "infrastructure".to_string(),
                message: "kernel kernel-a stopped before answering".to_string(),
            }),
            mismatches: Vec::new(),
            receipt_root: String::new(),
            receipt_count: 0,
            arena_keys: BTreeMap::new(),
            policies: BTreeMap::new(),
            steps: vec![step("read-notes")],
        };
        let result = RunResult {
            bundle: Bundle {
                manifest,
                receipts: Vec::new(),
                policies: BTreeMap::new(),
                inputs: BTreeMap::new(),
            },
            status: RunStatus::InfrastructureFailure,
            failure: None,
        };
        let table = render_table(
            &scenario,
            &result,
            Path::new("bundle"),
            crate::term::Palette::PLAIN,
        );
        let row = table.lines().find(|l| l.starts_with("read-notes")).unwrap();
        assert!(row.ends_with("ERROR"), "{table}");
        assert!(table.contains("result: infrastructure failure"), "{table}");
    }
}
