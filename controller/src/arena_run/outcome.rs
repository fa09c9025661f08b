//! What `chio arena run` prints, read back from the bundle it wrote: the
//! table, or the `chio.arena.run/v1` document with `--json`.
//!
//! A run keeps no step record in memory (the driver appends each to the
//! bundle as it is recorded), so every report of its steps reads them back
//! from `arena.json` one at a time (`chio_arena::bundle::for_each_step`),
//! and a long run's report costs the memory of one record. Both renderings
//! take two passes: the first counts the judged steps ([`Tally`], which
//! the document and the table's result line need before or after the rows)
//! and measures the table's columns, and checks that the records are the
//! run's (every scheduled step when the run completed, ending at the stop
//! step when it stopped); the second writes each row or document member
//! straight to the output, and must read as many records as the first. The document is written as its canonical JSON
//! would be written whole: its text without steps, cut where the outcome's
//! `steps` array opens, with the members written in between. A bundle that
//! cannot be read back is `CHIO-REPORT-BUNDLE-READ` (exit 3), never an
//! empty table. The exit code a run leaves with is `arena_run`'s.

use std::collections::BTreeSet;
use std::io::{BufWriter, Write};
use std::path::Path;

use chio_arena::bundle::{for_each_step, BundleManifest, StepOutcome, StepRecord, MANIFEST_FILE};
use chio_arena::{ActionKind, ArenaError, Scenario};
use serde::Serialize;

use super::RUN_SCHEMA_VERSION;
use crate::driver::{RunResult, RunStatus};
use crate::error::{codes, CliError};
use crate::term::{Palette, Tone};

/// One step of the outcome.
#[derive(Debug, Serialize)]
pub(super) struct OutcomeStep<'a> {
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
    reason_code: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    labels: Option<&'a [String]>,
}

impl<'a> OutcomeStep<'a> {
    /// The document's view of a step record.
    pub(super) fn of(s: &'a StepRecord) -> Self {
        OutcomeStep {
            step_id: &s.step_id,
            action: s.action,
            agent: &s.agent,
            kernel: s.kernel.as_deref(),
            expected: s.expected,
            actual: s.actual,
            pass: s.pass,
            reason: s.reason.as_deref(),
            reason_code: s.reason_code.as_deref(),
            expected_reason: s.expected_reason.as_deref(),
            labels: s.labels.as_deref(),
        }
    }
}

/// The run's outcome; canonical JSON sorts its keys, so `steps` comes
/// after `status` and before `stopped_at`.
#[derive(Debug, Serialize)]
pub(super) struct Outcome<'a> {
    pub(super) status: RunStatus,
    pub(super) calls: usize,
    pub(super) passed: usize,
    pub(super) failed: usize,
    pub(super) receipt_root: &'a str,
    pub(super) receipts: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) stopped_at: Option<&'a str>,
    pub(super) steps: Vec<OutcomeStep<'a>>,
}

/// The `--json` document.
#[derive(Debug, Serialize)]
pub(super) struct RunReport<'a> {
    pub(super) bundle_dir: String,
    pub(super) determinism: &'a chio_arena::DeterminismWitness,
    pub(super) scenario_id: &'a str,
    pub(super) scenario_title: &'a str,
    pub(super) schema_version: &'static str,
    pub(super) outcome: Outcome<'a>,
}

/// The document without steps, whose `steps` the caller fills or streams.
pub(super) fn report<'a>(
    scenario: &'a Scenario,
    result: &'a RunResult,
    dir: &Path,
    tally: &Tally,
) -> RunReport<'a> {
    let manifest = &result.bundle.manifest;
    RunReport {
        bundle_dir: dir.display().to_string(),
        determinism: &manifest.determinism,
        scenario_id: scenario.id(),
        scenario_title: scenario.title(),
        schema_version: RUN_SCHEMA_VERSION,
        outcome: Outcome {
            status: result.status.clone(),
            calls: tally.calls,
            passed: tally.passed,
            failed: tally.failed,
            receipt_root: &manifest.receipt_root,
            receipts: manifest.receipt_count,
            stopped_at: manifest.stopped.as_ref().map(|s| s.step_id.as_str()),
            steps: Vec::new(),
        },
    }
}

/// What one pass over a run's records counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Judged call steps (the document's `calls`).
    pub calls: usize,
    /// Judged call steps that met their expectation.
    pub passed: usize,
    /// Judged call steps that did not.
    pub failed: usize,
    /// Judged delegate, revoke and hand-over steps (the table reports them
    /// apart).
    pub others: usize,
    /// Judged delegate, revoke and hand-over steps that went as expected.
    pub others_passed: usize,
    /// Whether every mismatched step has its expected verdict (or
    /// outcome), so only reasons were missed.
    pub only_reasons: bool,
    /// Each step whose verdict (or outcome) differed from its expectation,
    /// with both: `read-notes (expected deny, actual allow)`.
    pub verdict_mismatches: Vec<String>,
    /// Each step with its expected verdict whose reason missed its
    /// `expect_reason`, naming the expected and the actual reason.
    pub reason_mismatches: Vec<String>,
    /// Records read.
    records: usize,
    /// The last record's step id.
    last: Option<String>,
    /// The step where the run stopped, if it stopped.
    stop: Option<String>,
    /// Whether the stop step's record was read.
    stop_seen: bool,
    /// When the stop step was decided (Unix ms), if it was a call over a
    /// delayed link: the steps decided up to then may follow its record.
    stop_arrival_ms: Option<u64>,
    /// A record after the stop step's that the run could not have reached
    /// before it stopped.
    past_stop: Option<String>,
}

/// When a record's step was decided (Unix ms): its arrival for a call over
/// a delayed link, otherwise its instant; `None` for an instant that does
/// not parse.
fn decided_ms(s: &StepRecord) -> Option<u64> {
    let instant = s.decided_time.as_deref().unwrap_or(&s.virtual_time);
    chio_arena::VirtualClock::parse(instant)
        .ok()
        .map(|clock| clock.now_ms())
}

impl Tally {
    /// Nothing counted yet, for a run that stopped at step `stop` (if it
    /// stopped).
    pub(super) fn new(stop: Option<&str>) -> Self {
        Tally {
            calls: 0,
            passed: 0,
            failed: 0,
            others: 0,
            others_passed: 0,
            only_reasons: true,
            verdict_mismatches: Vec::new(),
            reason_mismatches: Vec::new(),
            records: 0,
            last: None,
            stop: stop.map(str::to_string),
            stop_seen: false,
            stop_arrival_ms: None,
            past_stop: None,
        }
    }

    /// Counts one record; `mismatches` are the manifest's.
    fn add(&mut self, s: &StepRecord, mismatches: &BTreeSet<&str>) {
        match (s.pass, s.action == ActionKind::Call) {
            (Some(pass), true) => {
                self.calls += 1;
                self.passed += usize::from(pass);
                self.failed += usize::from(!pass);
            }
            (Some(pass), false) => {
                self.others += 1;
                self.others_passed += usize::from(pass);
            }
            (None, _) => {}
        }
        if mismatches.contains(s.step_id.as_str()) {
            if s.expected != s.actual {
                self.only_reasons = false;
                self.verdict_mismatches.push(format!(
                    "{} (expected {}, actual {})",
                    s.step_id,
                    s.expected.map_or("-", |o| o.as_str()),
                    s.actual.map_or("-", |o| o.as_str())
                ));
            } else if let Some(message) = crate::driver::reason_mismatch(s) {
                self.reason_mismatches.push(message);
            }
        }
        self.records += 1;
        self.last = Some(s.step_id.clone());
        // A call over a delayed link is decided when it arrives, after the
        // steps scheduled up to then: a run that stopped at such a call
        // recorded those after its record, and nothing decided later. Any
        // other stop step is the last record.
        if !self.stop_seen {
            if self.stop.as_deref() == Some(s.step_id.as_str()) {
                self.stop_seen = true;
                self.stop_arrival_ms = s.decided_time.as_ref().and_then(|_| decided_ms(s));
            }
        } else if self.past_stop.is_none() {
            let before_arrival = self
                .stop_arrival_ms
                .is_some_and(|arrival| decided_ms(s).is_some_and(|at| at <= arrival));
            if !before_arrival {
                self.past_stop = Some(s.step_id.clone());
            }
        }
    }

    /// Refuses records that are not the run's: a completed run recorded
    /// every scheduled step; a stopped one recorded its stop step, and
    /// after it only steps decided no later (those a call over a delayed
    /// link let pass before it arrived).
    fn check(
        &self,
        manifest: &BundleManifest,
        scheduled: usize,
        dir: &Path,
    ) -> Result<(), ArenaError> {
        let cause = match &manifest.stopped {
            Some(stop) if !self.stop_seen => format!(
                "it holds no record of step {}, where the run stopped (its last step record is {})",
                stop.step_id,
                self.last.as_deref().unwrap_or("absent"),
            ),
            Some(stop) if self.past_stop.is_some() => format!(
                "its step record {} follows step {}, where the run stopped, and was not decided before it",
                self.past_stop.as_deref().unwrap_or_default(),
                stop.step_id
            ),
            None if self.records != scheduled => format!(
                "it holds {} step records, not the {scheduled} steps the run recorded",
                self.records
            ),
            _ => return Ok(()),
        };
        Err(bundle_error(dir, cause))
    }
}

/// A refusal of the bundle in `dir`, naming its manifest.
pub(crate) fn bundle_error(dir: &Path, cause: String) -> ArenaError {
    ArenaError::Bundle {
        path: dir.join(MANIFEST_FILE).display().to_string(),
        cause,
    }
}

/// A written bundle that could not be read back for a report.
pub(crate) fn read_back_error(command: &'static str, e: &ArenaError) -> CliError {
    CliError::new(
        codes::REPORT_BUNDLE_READ,
        command,
        format!("cannot read the run's steps back from the bundle it wrote: {e}"),
        "the run was judged and its bundle written; keep other processes out of the --out folder while the run finishes, and run again",
    )
}

/// Calls `visit` with each step record of the bundle written in `dir`, in
/// order, and returns how many there were; a bundle that cannot be read
/// back is [`read_back_error`]'s error.
pub(crate) fn each_step(
    command: &'static str,
    dir: &Path,
    visit: impl FnMut(StepRecord) -> Result<(), CliError>,
) -> Result<u64, CliError> {
    for_each_step(dir, visit).map_err(|e| read_back_error(command, &e))?
}

/// The first pass: the tally, checked against the run, and `measure`
/// called on each record.
fn first_pass(
    command: &'static str,
    scenario: &Scenario,
    result: &RunResult,
    dir: &Path,
    mut measure: impl FnMut(&StepRecord),
) -> Result<Tally, CliError> {
    let manifest = &result.bundle.manifest;
    let mismatches: BTreeSet<&str> = manifest.mismatches.iter().map(String::as_str).collect();
    let mut tally = Tally::new(manifest.stopped.as_ref().map(|stop| stop.step_id.as_str()));
    each_step(command, dir, |s| {
        tally.add(&s, &mismatches);
        measure(&s);
        Ok(())
    })?;
    tally
        .check(manifest, scenario.schedule().len(), dir)
        .map_err(|e| read_back_error(command, &e))?;
    Ok(tally)
}

/// The second pass: `visit` called on each record, which must be as many
/// as the first pass read (a bundle changed in between is refused, not
/// printed short).
fn second_pass(
    command: &'static str,
    dir: &Path,
    tally: &Tally,
    visit: impl FnMut(StepRecord) -> Result<(), CliError>,
) -> Result<(), CliError> {
    let read = each_step(command, dir, visit)?;
    if usize::try_from(read).ok() == Some(tally.records) {
        return Ok(());
    }
    let cause = format!(
        "it held {} step records when first read and {read} when read again",
        tally.records
    );
    Err(read_back_error(command, &bundle_error(dir, cause)))
}

/// Writes the `--json` document to `out` and returns the tally.
pub fn write_json(
    command: &'static str,
    scenario: &Scenario,
    result: &RunResult,
    dir: &Path,
    out: &mut dyn Write,
) -> Result<Tally, CliError> {
    let tally = first_pass(command, scenario, result, dir, |_| {})?;
    let canonical = |e| CliError::from_arena(command, &ArenaError::from(e));
    let text = chio_kernel::canonical::to_canonical_string(&report(scenario, result, dir, &tally))
        .map_err(canonical)?;
    let text = crate::term::printable_json(&text).into_owned();
    // The outcome's `steps` is the document's last key named so: the
    // witness's comes before it, and later keys hold only strings, where a
    // quote is escaped.
    const EMPTY: &str = "\"steps\":[]";
    let Some(at) = text.rfind(EMPTY).map(|at| at + EMPTY.len() - 1) else {
        return Err(CliError::infrastructure(
            command,
            "the run document has no steps array to write the steps into".to_string(),
        ));
    };
    let mut out = BufWriter::new(out);
    let io = |e: std::io::Error| CliError::output(command, &e);
    // A streamed run returns its witness without step ids: they are
    // written from the scenario, one at a time, as its bundle's are.
    let mut from = 0;
    if result.bundle.manifest.determinism.steps.is_empty() && scenario.step_count() > 0 {
        let inner = chio_arena::witness::empty_steps_at(&text, at).ok_or_else(|| {
            CliError::infrastructure(
                command,
                "the run document has no witness steps to write the step ids into".to_string(),
            )
        })?;
        out.write_all(&text.as_bytes()[..inner]).map_err(io)?;
        scenario
            .write_witness_steps(&mut out)
            .map_err(|e| CliError::from_arena(command, &e))?;
        from = inner;
    }
    out.write_all(&text.as_bytes()[from..at]).map_err(io)?;
    let mut first = true;
    second_pass(command, dir, &tally, |s| {
        let member =
            chio_kernel::canonical::to_canonical_string(&OutcomeStep::of(&s)).map_err(canonical)?;
        let member = crate::term::printable_json(&member);
        if !std::mem::take(&mut first) {
            out.write_all(b",").map_err(io)?;
        }
        out.write_all(member.as_bytes()).map_err(io)
    })?;
    out.write_all(&text.as_bytes()[at..])
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(io)?;
    Ok(tally)
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
            (Some(t), None, Some(d)) if s.action == ActionKind::Redefine => {
                format!("{t} now {}", d.get(..16).unwrap_or(d))
            }
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

const HEADER: [&str; 7] = [
    "STEP", "ACTION", "AGENT", "TARGET", "EXPECTED", "ACTUAL", "RESULT",
];

/// One line of the table: the first six cells padded, the result painted
/// (except in the header), trailing blanks trimmed.
fn table_line(row: &[String; 7], widths: &[usize; 7], header: bool, palette: Palette) -> String {
    let mut line = String::new();
    for (i, cell) in row.iter().enumerate().take(6) {
        line.push_str(&format!("{:width$}  ", cell, width = widths[i]));
    }
    line.push_str(&match (header, row[6].as_str()) {
        (true, cell) => cell.to_string(),
        (_, "pass") => palette.paint(Tone::Good, "pass"),
        (_, "FAIL") => palette.paint(Tone::Bad, "FAIL"),
        (_, cell) => cell.to_string(),
    });
    let mut line = line.trim_end().to_string();
    line.push('\n');
    line
}

/// Writes the table to `out` and returns the tally. Rows are made twice
/// (widths, then lines) rather than kept, so a long run's table costs the
/// memory of one row.
pub fn write_table(
    command: &'static str,
    scenario: &Scenario,
    result: &RunResult,
    dir: &Path,
    palette: Palette,
    out: &mut dyn Write,
) -> Result<Tally, CliError> {
    let manifest = &result.bundle.manifest;
    // The step an infrastructure failure stopped at did not complete.
    let infrastructure_stop = manifest
        .stopped
        .as_ref()
        .filter(|stop| stop.cause == "infrastructure")
        .map(|stop| stop.step_id.as_str());
    let mut widths = HEADER.map(|c| c.chars().count());
    let tally = first_pass(command, scenario, result, dir, |s| {
        for (i, cell) in table_row(s, infrastructure_stop).iter().enumerate() {
            widths[i] = widths[i].max(cell.chars().count());
        }
    })?;
    let mut out = BufWriter::new(out);
    let io = |e: std::io::Error| CliError::output(command, &e);
    let indent = widths[0] + 2;
    let head = format!(
        "scenario {}: {}\nbundle   {}\n\n{}",
        scenario.id(),
        crate::term::printable(scenario.title()),
        dir.display(),
        table_line(&HEADER.map(String::from), &widths, true, palette)
    );
    out.write_all(head.as_bytes()).map_err(io)?;
    second_pass(command, dir, &tally, |step| {
        let mut text = table_line(
            &table_row(&step, infrastructure_stop),
            &widths,
            false,
            palette,
        );
        // A reason quotes the call's arguments (a path, a value): input.
        if let Some(reason) = &step.reason {
            let reason = crate::term::printable(reason);
            text.push_str(&format!("{:indent$}reason: {reason}\n", ""));
        }
        if let Some(miss) = crate::driver::reason_mismatch(&step) {
            let miss = crate::term::printable(&miss);
            text.push_str(&format!("{:indent$}{miss}\n", ""));
        }
        out.write_all(text.as_bytes()).map_err(io)
    })?;
    let others = if tally.others == 0 {
        String::new()
    } else {
        format!(
            "; {} delegate, revoke or hand-over steps, {} as expected",
            tally.others, tally.others_passed
        )
    };
    let foot = format!(
        "\nresult: {} ({} calls, {} passed, {} failed{others}){}\nreceipts: {} (root {})\n",
        match result.status {
            RunStatus::Passed => palette.paint(Tone::Good, "passed"),
            RunStatus::Failed => palette.paint(Tone::Bad, "failed"),
            RunStatus::Stopped => palette.paint(Tone::Bad, "stopped"),
            RunStatus::InfrastructureFailure => palette.paint(Tone::Bad, "infrastructure failure"),
        },
        tally.calls,
        tally.passed,
        tally.failed,
        manifest
            .stopped
            .as_ref()
            .map(|s| format!(", stopped at {}", s.step_id))
            .unwrap_or_default(),
        manifest.receipt_count,
        manifest.receipt_root
    );
    out.write_all(foot.as_bytes())
        .and_then(|()| out.flush())
        .map_err(io)?;
    Ok(tally)
}
