//! `chio arena explain BUNDLE STEP [--json]`.
//!
//! Reads a bundle a run wrote and prints one step as evidence: for a call,
//! the decision's inputs (the invocation, the principal and chain, every
//! label key the kernel read with what it held, every budget key it held,
//! the session journal entries the guards saw) and the pipeline stage by
//! stage (capability, revocation, binding, scope, budgets, guards with each
//! guard's answer, shares, output), marking the stages the decision never
//! reached; for a message or a delegation, the labels it carried; for a
//! revocation, what was revoked or why it was refused. An allow nobody
//! expected is then read off the table: which keys were clean, which guard
//! let it through. Everything printed comes from the bundle (its manifest
//! and its recorded scenario), in recorded order, so the output is the same
//! bytes on every machine. With `--json` the document is canonical JSON,
//! `chio.arena.explain/v1`. Nothing is written.
//!
//! A bundle is shown as evidence only once it holds up: it must agree with
//! its own signed receipts, and re-deciding it from its inputs (the path of
//! `chio arena replay`, `crate::redecide`) must give the recorded run. A
//! bundle that re-decides otherwise has its step printed below every
//! difference (each naming the step and the field), as what the bundle
//! claims, and the command exits with `CHIO-ARENA-DRIFT`; one that cannot be
//! re-decided here (a run that read sealed files, given no `--sealed-from`)
//! is refused.

use std::io::Write;

use chio_arena::bundle::{Bundle, StepOutcome, StepRecord, SCENARIO_INPUT};
use chio_arena::ActionKind;
use chio_kernel::trace::{always_recorded, DecisionTrace, STAGES};
use chio_kernel::verdict::ProjectedVerdict;
use serde::Serialize;
use serde_json::Value;

use crate::cli::arena::ExplainArgs;
use crate::error::{codes, CliError};

const COMMAND: &str = "arena explain";

/// The schema of the `--json` document.
pub const EXPLAIN_SCHEMA_VERSION: &str = "chio.arena.explain/v1";

#[derive(Serialize)]
struct ExplainReport<'a> {
    schema_version: &'static str,
    scenario_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<Value>,
    step: &'a StepRecord,
    /// Each difference re-deciding the bundle found; none when it holds up.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    drift: &'a [String],
}

/// Runs the command, printing to `out`.
pub fn run(args: &ExplainArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let bundle = crate::arena_replay::read_verified_bundle(COMMAND, &args.bundle)?;
    let manifest = &bundle.manifest;
    let Some(step) = manifest.steps.iter().find(|s| s.step_id == args.step) else {
        let recorded: Vec<&str> = manifest.steps.iter().map(|s| s.step_id.as_str()).collect();
        return Err(CliError::new(
            codes::UNRECORDED_STEP,
            COMMAND,
            format!(
                "bundle {} records no step {:?}; it records: {}",
                args.bundle.display(),
                args.step,
                recorded.join(", ")
            ),
            "name a step the run dispatched; a run that stopped early records no later step",
        ));
    };
    let drift = crate::redecide::differences(COMMAND, &args.bundle, args.sealed_from.as_deref())?;
    let arguments = (step.action == ActionKind::Call)
        .then(|| recorded_arguments(&bundle, &step.step_id))
        .flatten();
    let text = if args.json {
        let report = ExplainReport {
            schema_version: EXPLAIN_SCHEMA_VERSION,
            scenario_id: &manifest.determinism.scenario_id,
            arguments,
            step,
            drift: &drift,
        };
        CliError::json_document(COMMAND, &report)?
    } else {
        let shown = match shown_step(step) {
            Some(shown) => render(&shown, arguments.as_ref()),
            None => render(step, arguments.as_ref())
                .lines()
                .map(|l| format!("{}\n", crate::term::printable(l)))
                .collect(),
        };
        drift_lines(&drift) + &shown
    };
    CliError::print(COMMAND, out, text.as_bytes())?;
    drift_refusal(&args.bundle, &drift)
}

/// The lines printed above the step of a bundle that drifts: what it
/// claims is not what its inputs decide.
fn drift_lines(drift: &[String]) -> String {
    if drift.is_empty() {
        return String::new();
    }
    let mut text = "DRIFT: re-deciding this bundle from its inputs gives another run; the step below is what the bundle claims, not evidence\n".to_string();
    for line in drift {
        text.push_str(&format!("  drift: {}\n", crate::term::printable(line)));
    }
    text.push('\n');
    text
}

/// The command's error for a bundle that drifts when re-decided.
fn drift_refusal(dir: &std::path::Path, drift: &[String]) -> Result<(), CliError> {
    let Some(first) = drift.first() else {
        return Ok(());
    };
    let shown = crate::term::printable(&dir.display().to_string()).into_owned();
    Err(CliError::new(
        codes::DRIFT,
        COMMAND,
        format!(
            "bundle {shown} does not hold up: re-deciding it gives another run ({}{}), so it was changed after its run",
            crate::term::printable(first),
            match drift.len() {
                1 => String::new(),
                n => format!("; and {} more difference(s)", n - 1),
            }
        ),
        format!("`chio arena replay {shown}` names each difference; run the scenario again for evidence"),
    ))
}

/// The step's `arguments` as the recorded scenario declares them, as JSON;
/// `None` when the scenario cannot be read back (the manifest still says
/// everything else).
fn recorded_arguments(bundle: &Bundle, step_id: &str) -> Option<Value> {
    let text = std::str::from_utf8(bundle.inputs.get(SCENARIO_INPUT)?).ok()?;
    let table: toml::Table = text.parse().ok()?;
    let steps = table.get("steps")?.as_array()?;
    let step = steps
        .iter()
        .find(|s| s.get("id").and_then(toml::Value::as_str) == Some(step_id))?;
    match step.get("arguments") {
        Some(arguments) => chio_arena::scenario::validate::arguments_as_sent(arguments),
        None => Some(Value::Object(Default::default())),
    }
}

/// `value` with every string and every object key printable
/// (`crate::term::printable`).
fn printable_value(value: Value) -> Value {
    let shown = |s: &str| crate::term::printable(s).into_owned();
    match value {
        Value::String(s) => Value::String(shown(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(printable_value).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (shown(&k), printable_value(v)))
                .collect(),
        ),
        other => other,
    }
}

/// The step as a terminal may show it: every text it records (a reason,
/// a guard's answer, a label key, a journal entry) comes from the run's
/// input, so each is printed with its control characters and
/// bidirectional overrides escaped. `None` when the record does not read
/// back so (none does: it was read from JSON); each line of the text is
/// then escaped whole.
fn shown_step(step: &StepRecord) -> Option<StepRecord> {
    serde_json::to_value(step)
        .ok()
        .map(printable_value)
        .and_then(|value| serde_json::from_value(value).ok())
}

fn line(text: &mut String, key: &str, value: impl std::fmt::Display) {
    text.push_str(&format!("  {key:<12}{value}\n"));
}

fn labels_text(labels: &[String]) -> String {
    if labels.is_empty() {
        "(none)".to_string()
    } else {
        labels.join(", ")
    }
}

/// The text form: the step, then (for a call) its decision inputs and the
/// pipeline.
fn render(step: &StepRecord, arguments: Option<&Value>) -> String {
    let mut text = format!(
        "step {} ({}) by {} at {}\n",
        step.step_id, step.action, step.agent, step.virtual_time
    );
    action_lines(&mut text, step, arguments);
    outcome_lines(&mut text, step);
    call_trace_lines(&mut text, step);
    text
}

fn render_trace(text: &mut String, trace: &DecisionTrace) {
    text.push_str("\ndecision inputs\n");
    line(
        text,
        "principal",
        trace.principal.as_deref().unwrap_or("(not bound)"),
    );
    if !trace.chain.is_empty() {
        line(text, "chain", trace.chain.join(" > "));
    }
    label_lines(text, trace);
    budget_lines(text, trace);
    journal_lines(text, trace);
    pipeline_lines(text, trace);
}

/// The lines that say what the step did: a call's target and arguments,
/// a message's recipient, a delegation's child, a revocation, an advance
/// of the clock or a fault.
fn action_lines(text: &mut String, step: &StepRecord, arguments: Option<&Value>) {
    match step.action.as_str() {
        "call" => {
            if let Some(target) = &step.target {
                let at = step.kernel.as_deref().unwrap_or("?");
                line(text, "target", format!("{target} @ {at}"));
            }
            if let Some(arguments) = arguments {
                let printed = chio_kernel::canonical::to_canonical_string(arguments)
                    .unwrap_or_else(|_| arguments.to_string());
                // One line of JSON, whose escapes leave bidirectional
                // overrides and C1 controls as they are.
                line(text, "arguments", crate::term::printable(&printed));
            }
        }
        "message" => {
            line(text, "to", step.target.as_deref().unwrap_or("?"));
            if let Some(detail) = &step.detail {
                line(text, "content", format!("sha256 {detail}"));
            }
        }
        "delegate" => {
            if let Some(detail) = &step.detail {
                line(text, "child", format!("token sha256 {detail}"));
            }
        }
        "revoke" => line(text, "target", step.detail.as_deref().unwrap_or("?")),
        "advance" => line(
            text,
            "advance",
            format!("+{} ms", step.detail.as_deref().unwrap_or("?")),
        ),
        "fault" => line(text, "fault", step.detail.as_deref().unwrap_or("?")),
        _ => {}
    }
}

/// The lines of the step's labels, expected and actual outcome, reason,
/// guard and receipt.
fn outcome_lines(text: &mut String, step: &StepRecord) {
    if let Some(labels) = &step.labels {
        let what = if step.action == ActionKind::Delegate {
            "labels kept"
        } else {
            "labels sent"
        };
        line(text, what, labels_text(labels));
    }
    if let Some(expected) = &step.expected {
        line(text, "expected", expected);
    }
    if let Some(actual) = &step.actual {
        let verdict = match &step.verdict {
            Some(v) if v.as_str() != actual.as_str() => format!(" (kernel verdict {v})"),
            _ => String::new(),
        };
        let pass = match step.pass {
            Some(true) => ", pass",
            Some(false) => ", FAIL",
            None => "",
        };
        line(text, "actual", format!("{actual}{verdict}{pass}"));
    }
    if let Some(reason) = &step.reason {
        line(text, "reason", reason);
    }
    if let Some(expected) = &step.expected_reason {
        line(text, "reason has", format!("{expected:?} expected"));
    }
    if let Some(guard) = &step.guard {
        line(text, "guard", guard);
    }
    if let Some(receipt) = &step.receipt_id {
        line(text, "receipt", receipt);
    }
}

/// A call's delay and its decision trace, or why the bundle has none.
fn call_trace_lines(text: &mut String, step: &StepRecord) {
    if step.action == ActionKind::Call {
        if let Some(detail) = &step.detail {
            line(text, "delayed", detail);
        }
        match &step.trace {
            Some(trace) => render_trace(text, trace),
            // The agent's node or the controller denied the call (a fault
            // in effect, a capability not held, a value missing, a stop
            // before its arrival): no kernel ran.
            None if step.receipt_id.is_none() && step.actual == Some(StepOutcome::Verdict(ProjectedVerdict::Deny)) => text
                .push_str(
                    "
the agent's node or the controller decided this deny before any kernel ran; no kernel evaluated the call, so there is no receipt and no trace
",
                ),
            None => text.push_str(
                "\nthis bundle records no decision trace for the step (an older chio wrote it); run the scenario again to record one\n",
            ),
        }
    }
}

/// One indented line per entry, each key padded to the longest.
fn keyed_lines(text: &mut String, entries: Vec<(&str, String)>) {
    let width = entries
        .iter()
        .map(|(key, _)| key.chars().count())
        .max()
        .unwrap_or(0);
    for (key, value) in entries {
        text.push_str(&format!("    {key:<width$}  {value}\n"));
    }
}

/// A label key (or argument pointer) with its labels.
fn labelled<'a>((key, labels): (&'a String, &'a Vec<String>)) -> (&'a str, String) {
    (key.as_str(), labels_text(labels))
}

/// The label keys the call read and, for a call with arguments built from
/// earlier values, the labels of those arguments and the run-time
/// allowlist records read for them.
fn label_lines(text: &mut String, trace: &DecisionTrace) {
    text.push_str("  label keys read\n");
    if trace.label_keys.is_empty() {
        text.push_str("    (none: no guard of the kernel reads labels, or the call stopped before the guards)\n");
    }
    keyed_lines(text, trace.label_keys.iter().map(labelled).collect());
    // Only a call with arguments built from earlier values has any.
    if !trace.argument_labels.is_empty() {
        text.push_str("  argument labels\n");
        keyed_lines(text, trace.argument_labels.iter().map(labelled).collect());
    }
    // Only a call with a protected argument a run-time allowlist may admit.
    if !trace.allowlists_read.is_empty() {
        text.push_str("  allowlist records read\n");
        let held = trace
            .allowlists_read
            .iter()
            .map(|(record, held)| (record.as_str(), format!("{held} value(s)")));
        keyed_lines(text, held.collect());
    }
}

/// The budget keys the call held, each with its use and this hold.
fn budget_lines(text: &mut String, trace: &DecisionTrace) {
    text.push_str("  budget keys held\n");
    if trace.budget_keys.is_empty() {
        text.push_str("    (none)\n");
    }
    let held = trace.budget_keys.iter().map(|budget| {
        let what = match (budget.outcome.as_str(), budget.settled.as_deref()) {
            ("refused", _) => format!(
                "{} of {} used; {} more refused",
                budget.used, budget.limit, budget.amount
            ),
            (_, settled) => format!(
                "{} of {} used with this hold of {}{}",
                budget.used,
                budget.limit,
                budget.amount,
                settled.map(|s| format!(", {s}")).unwrap_or_default()
            ),
        };
        (budget.key.as_str(), what)
    });
    keyed_lines(text, held.collect());
}

/// The journal entries the call read.
fn journal_lines(text: &mut String, trace: &DecisionTrace) {
    text.push_str("  journal entries read\n");
    if trace.journal.is_empty() {
        text.push_str("    (none)\n");
    }
    for entry in &trace.journal {
        text.push_str(&format!(
            "    {}  {}/{}  {}{}\n",
            entry.request_id,
            entry.server,
            entry.tool,
            entry.verdict,
            if entry.performed {
                ", performed"
            } else {
                ", not performed"
            }
        ));
    }
}

/// The pipeline stage by stage, with each guard's answer under its stage
/// and the stages never reached marked.
fn pipeline_lines(text: &mut String, trace: &DecisionTrace) {
    text.push_str("\npipeline\n");
    // A stage only some calls record is shown where it was recorded.
    let shown = STAGES
        .iter()
        .filter(|stage| always_recorded(stage) || trace.stages.iter().any(|s| s.stage == **stage));
    for (index, stage) in shown.enumerate() {
        let recorded = trace.stages.iter().find(|s| s.stage == *stage);
        match recorded {
            Some(s) => text.push_str(&format!(
                "  {} {:<11} {:<16} {}\n",
                index + 1,
                stage,
                s.outcome,
                s.detail
            )),
            None => text.push_str(&format!("  {} {:<11} not reached\n", index + 1, stage)),
        }
        let phase = match *stage {
            "guards" => Some("request"),
            "output" => Some("output"),
            _ => None,
        };
        if let Some(phase) = phase {
            for answer in trace.guards.iter().filter(|g| g.phase == phase) {
                text.push_str(&format!("      {answer}\n"));
            }
        }
        if *stage == "shares" {
            for share in &trace.shares {
                text.push_str(&format!(
                    "      {} > {} at {} bps: {}\n",
                    share.parent, share.child, share.child_bps, share.outcome
                ));
            }
        }
        if *stage == "output" && recorded.is_some() {
            if let Some(label) = &trace.output_label {
                text.push_str(&format!(
                    "      label {label} joined into {}\n",
                    trace.label_writes.join(", ")
                ));
            }
        }
    }
}
