//! The attempt ledger: its template, the checks every reader applies, and
//! the import that fills rows from native result records.
//!
//! A ledger (`chio.arena.campaign-ledger/v2`, canonical JSON) names the
//! campaign id and the SHA-256 of the declaration's exact bytes, and holds
//! one row per scheduled attempt. [`template`] writes every row DEFERRED.
//! Each row records what the attempt produced and spent: the native outcome
//! and its reason, the record's evidence, the definition and the source
//! revision it ran against (or why that revision is unknown, as a
//! deviation), the runtime identity, the oracle checks (the task's own
//! expectations as named checks), human interventions (`decision`,
//! `repair`), the spent budget (`elapsed_seconds` and `spent`), the
//! estimated cost (null when unknown, never zero) and the evidence
//! references (bundle paths and Merkle roots).
//!
//! [`check_ledger`] refuses a ledger that misses, duplicates or adds an
//! attempt, names another declaration or changed bytes, relabels fixture
//! evidence as live (or the reverse), records an outcome its task never
//! produces, carries a pass its own evidence contradicts, a non-pass row
//! without a reason, a DEFERRED or SKIPPED row with results, a negative or
//! non-finite number, or a row over a declared limit whose reason does not
//! name the overrun. [`import`] fills DEFERRED rows from `chio.arena.run/v1`,
//! `chio.arena.replay/v1`, `chio.arena.evolve/v1` and
//! `chio.arena.matrix-synthesis/v2` documents, copying the native outcome as
//! recorded, with what the caller measured around the attempt when it ran
//! it ([`Measured`]); it refuses (returning the error, so the caller leaves
//! the file unchanged) whenever the resulting ledger would fail a check.
//! [`annotate`] adds an intervention or marks a row SKIPPED.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::definition::sha256_hex;
use super::{Campaign, Evidence, Task, TaskKind, LIMIT_NAMES};
use crate::experiment_error::ExperimentError;

/// Schema id of a ledger.
pub const LEDGER_SCHEMA_VERSION: &str = "chio.arena.campaign-ledger/v2";
/// The native outcome of an attempt that has not run.
pub const DEFERRED: &str = "DEFERRED";
/// The native outcome of an attempt deliberately not run.
pub const SKIPPED: &str = "SKIPPED";
/// The reason the template gives a DEFERRED row.
pub const NOT_ATTEMPTED: &str = "not attempted";

/// Schema of a `chio arena run --json` document.
pub const RUN_RECORD: &str = "chio.arena.run/v1";
/// Schema of a `chio arena replay --json` document.
pub const REPLAY_RECORD: &str = "chio.arena.replay/v1";
/// Schema of a `chio arena evolve --json` document.
pub const EVOLVE_RECORD: &str = "chio.arena.evolve/v1";
/// Schema of a `chio arena matrix --json` document.
pub const MATRIX_RECORD: &str = "chio.arena.matrix-synthesis/v2";

/// The keys every row holds, no more and no fewer.
pub const ROW_FIELDS: &[&str] = &[
    "definition_sha256",
    "deviations",
    "elapsed_seconds",
    "estimated_cost",
    "evidence",
    "evidence_refs",
    "interventions",
    "native_outcome",
    "oracle_checks",
    "reason",
    "record",
    "repetition",
    "runtime_identity",
    "schedule_id",
    "source_revision",
    "spent",
    "task",
];

/// The published record of a campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// Must be `chio.arena.campaign-ledger/v2`.
    pub schema_version: String,
    /// The declaration's campaign id.
    pub campaign_id: String,
    /// SHA-256 of the declaration's bytes when the ledger was admitted.
    pub declaration_sha256: String,
    /// One row per scheduled attempt.
    pub rows: Vec<LedgerRow>,
}

/// The runtime an attempt ran on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeIdentity {
    /// The `chio` version.
    pub chio_version: String,
    /// SHA-256 of the running `chio` binary.
    pub binary_sha256: String,
    /// `<os>-<arch>`.
    pub platform: String,
}

/// One of the task's own expectations, as a named check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OracleCheck {
    /// What is checked, such as `read-fixture expects allow`.
    pub name: String,
    /// Whether it held.
    pub ok: bool,
}

/// What kind of human intervention an attempt received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InterventionKind {
    /// A human judgement, such as that a stop was appropriate.
    Decision,
    /// A human fixed something so the attempt could succeed.
    Repair,
}

/// One human intervention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intervention {
    /// `decision` or `repair`.
    pub kind: InterventionKind,
    /// What was decided or repaired, and why.
    pub note: String,
}

/// Where an attempt's evidence lies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceRef {
    /// The bundle or output folder, as the tool wrote it.
    pub path: String,
    /// Its Merkle root (a bundle's receipt root, or the folder root
    /// `chio campaign run` computes); null when unknown.
    pub merkle_root: Option<String>,
}

/// The budget an attempt spent besides its wall time; null when unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spent {
    /// Scenario steps run.
    pub steps: Option<u64>,
    /// Kernel evaluations.
    pub kernel_evaluations: Option<u64>,
    /// Evolution generations.
    pub generations: Option<u64>,
}

/// One scheduled attempt and what it produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerRow {
    /// `<task>/<repetition>`.
    pub schedule_id: String,
    /// The task id.
    pub task: String,
    /// The 1-based repetition.
    pub repetition: u32,
    /// `live` or `fixture`, as scheduled.
    pub evidence: Evidence,
    /// The outcome exactly as the tool recorded it, `DEFERRED` or `SKIPPED`.
    pub native_outcome: String,
    /// Why the attempt did not pass, or went over a limit.
    pub reason: Option<String>,
    /// What the record established, copied from it.
    pub record: Option<RecordEvidence>,
    /// The definition hash the attempt ran against.
    pub definition_sha256: Option<String>,
    /// The commit of the tree that ran; null when it cannot be established.
    pub source_revision: Option<String>,
    /// The runtime that ran the attempt; null when not recorded.
    pub runtime_identity: Option<RuntimeIdentity>,
    /// The task's expectations as named checks.
    pub oracle_checks: Vec<OracleCheck>,
    /// Human decisions and repairs.
    pub interventions: Vec<Intervention>,
    /// Steps, kernel evaluations and generations spent.
    pub spent: Spent,
    /// Wall time of the attempt; null when unknown (run records carry no
    /// wall time, by the determinism contract).
    pub elapsed_seconds: Option<f64>,
    /// The estimated cost under the declaration's `[cost]`; null when unknown.
    pub estimated_cost: Option<f64>,
    /// Bundle paths and their Merkle roots.
    pub evidence_refs: Vec<EvidenceRef>,
    /// Departures from the protocol, such as an unknown source revision.
    pub deviations: Vec<String>,
}

/// What a native record establishes, copied without rescoring.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordEvidence {
    /// The record's schema id.
    pub schema_version: String,
    /// SHA-256 of the record's bytes, so the row points at one record.
    pub sha256: String,
    /// The scenario or matrix id the record names.
    pub subject: String,
    /// Run: calls evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// Run: calls whose expectation held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<u64>,
    /// Run: calls whose expectation did not hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
    /// Run: the steps listed with `pass: false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_steps: Option<Vec<String>>,
    /// Run: the step the run stopped at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<String>,
    /// Run: the receipts' Merkle root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt_root: Option<String>,
    /// Replay: steps that drifted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drifted_steps: Option<Vec<String>>,
    /// Replay: policy files that no longer match the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tampered_policies: Option<u64>,
    /// Evolution: generations requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generations_scheduled: Option<u64>,
    /// Evolution: generations completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generations_completed: Option<u64>,
    /// Matrix: runs the matrix schedules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_scheduled: Option<u64>,
    /// Matrix: runs its ledger holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runs_recorded: Option<u64>,
    /// Matrix: gaps established.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub established: Option<u64>,
    /// Matrix: gaps inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<u64>,
    /// Matrix: gaps invalid because a validator failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<u64>,
}

/// The native outcomes a task's tool produces, besides `DEFERRED` and `SKIPPED`.
pub fn native_outcomes(kind: TaskKind, evidence: Evidence) -> &'static [&'static str] {
    match (kind, evidence) {
        (TaskKind::Scenario, Evidence::Live) => {
            &["passed", "failed", "stopped", "infrastructure-failure"]
        }
        (TaskKind::Scenario, Evidence::Fixture) => &["identical", "drifted"],
        (TaskKind::Evolve, _) => &["generations", "wall-budget"],
        (TaskKind::Matrix, _) => &["complete"],
    }
}

/// Whether a native outcome is its tool's pass.
pub fn is_pass(outcome: &str) -> bool {
    matches!(outcome, "passed" | "identical" | "complete" | "generations")
}

/// Whether a row holds no attempt (never run, or deliberately skipped).
pub fn is_unrun(outcome: &str) -> bool {
    outcome == DEFERRED || outcome == SKIPPED
}

fn empty_row(campaign: &Campaign, schedule_id: &str, task: &Task, repetition: u32) -> LedgerRow {
    let _ = campaign;
    LedgerRow {
        schedule_id: schedule_id.to_string(),
        task: task.id.clone(),
        repetition,
        evidence: task.evidence,
        native_outcome: DEFERRED.to_string(),
        reason: Some(NOT_ATTEMPTED.to_string()),
        record: None,
        definition_sha256: None,
        source_revision: None,
        runtime_identity: None,
        oracle_checks: Vec::new(),
        interventions: Vec::new(),
        spent: Spent::default(),
        elapsed_seconds: None,
        estimated_cost: None,
        evidence_refs: Vec::new(),
        deviations: Vec::new(),
    }
}

/// A ledger with every scheduled attempt DEFERRED.
pub fn template(campaign: &Campaign) -> Ledger {
    Ledger {
        schema_version: LEDGER_SCHEMA_VERSION.to_string(),
        campaign_id: campaign.file.id.clone(),
        declaration_sha256: campaign.sha256.clone(),
        rows: campaign
            .schedule
            .iter()
            .map(|a| {
                empty_row(
                    campaign,
                    &a.schedule_id,
                    &campaign.tasks[a.task],
                    a.repetition,
                )
            })
            .collect(),
    }
}

/// Parses ledger bytes, refusing a row that lacks a declared field or adds
/// one, and a negative number where the row holds an amount.
pub fn read_ledger(bytes: &[u8], name: &str) -> Result<Ledger, ExperimentError> {
    let syntax = |reason: String| ExperimentError::Syntax {
        path: name.to_string(),
        reason,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| syntax(e.to_string()))?;
    exact_integers(&value, syntax)?;
    if let Some(rows) = value.get("rows").and_then(Value::as_array) {
        for (i, row) in rows.iter().enumerate() {
            let Some(object) = row.as_object() else {
                return Err(syntax(format!("rows[{i}] is not an object")));
            };
            for field in ROW_FIELDS {
                if !object.contains_key(*field) {
                    return Err(syntax(format!(
                        "rows[{i}] lacks the declared field {field}"
                    )));
                }
            }
            let id = object
                .get("schedule_id")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            let spent = object.get("spent");
            let amounts = [
                ("elapsed_seconds", object.get("elapsed_seconds")),
                ("estimated_cost", object.get("estimated_cost")),
                ("spent.steps", spent.and_then(|s| s.get("steps"))),
                (
                    "spent.kernel_evaluations",
                    spent.and_then(|s| s.get("kernel_evaluations")),
                ),
                (
                    "spent.generations",
                    spent.and_then(|s| s.get("generations")),
                ),
            ];
            for (field, amount) in amounts {
                if let Some(number) = amount.and_then(Value::as_f64) {
                    if !number.is_finite() || number < 0.0 {
                        return Err(ExperimentError::BadNumber {
                            schedule_id: id,
                            field: field.to_string(),
                        });
                    }
                }
            }
        }
    }
    let ledger: Ledger = serde_json::from_value(value).map_err(|e| syntax(e.to_string()))?;
    if ledger.schema_version != LEDGER_SCHEMA_VERSION {
        return Err(syntax(format!(
            "schema_version must be \"{LEDGER_SCHEMA_VERSION}\""
        )));
    }
    Ok(ledger)
}

/// Refuses a document holding an integer canonical JSON cannot print
/// exactly, naming its field, so it is refused as input (exit 2) when read
/// rather than failing when the ledger is written back.
fn exact_integers(
    value: &Value,
    syntax: impl Fn(String) -> ExperimentError,
) -> Result<(), ExperimentError> {
    match chio_kernel::canonical::first_inexact_integer(value, "") {
        Some(field) => Err(syntax(format!(
            "{field} is an integer outside -2^53..=2^53, which canonical JSON cannot print exactly"
        ))),
        None => Ok(()),
    }
}

/// The ledger as canonical JSON with a final newline.
pub fn ledger_bytes(ledger: &Ledger) -> Result<Vec<u8>, ExperimentError> {
    let mut text = chio_kernel::canonical::to_canonical_string(ledger).map_err(|e| {
        ExperimentError::Canonical {
            reason: e.to_string(),
        }
    })?;
    text.push('\n');
    Ok(text.into_bytes())
}

/// Applies every check of the report to a ledger.
pub fn check_ledger(campaign: &Campaign, ledger: &Ledger) -> Result<(), ExperimentError> {
    if ledger.campaign_id != campaign.file.id {
        return Err(ExperimentError::OtherDeclaration {
            ledger: ledger.campaign_id.clone(),
            declared: campaign.file.id.clone(),
        });
    }
    if ledger.declaration_sha256 != campaign.sha256 {
        return Err(ExperimentError::DeclarationChanged {
            recorded: ledger.declaration_sha256.clone(),
            actual: campaign.sha256.clone(),
        });
    }
    let mut seen = BTreeSet::new();
    for row in &ledger.rows {
        if !seen.insert(row.schedule_id.as_str()) {
            return Err(ExperimentError::DuplicateAttempt {
                schedule_id: row.schedule_id.clone(),
            });
        }
        if campaign.attempt(&row.schedule_id).is_none() {
            return Err(ExperimentError::UnscheduledAttempt {
                schedule_id: row.schedule_id.clone(),
            });
        }
    }
    for attempt in &campaign.schedule {
        if !seen.contains(attempt.schedule_id.as_str()) {
            return Err(ExperimentError::MissingAttempt {
                schedule_id: attempt.schedule_id.clone(),
            });
        }
    }
    for row in &ledger.rows {
        check_row(campaign, row)?;
    }
    Ok(())
}

/// How an attempt stands against one limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimitStatus {
    /// Spent no more than the limit.
    Within,
    /// Spent more than the limit.
    Over,
    /// The spend is unknown.
    Unknown,
}

/// The row's spend on one limit (`wall_seconds` reads `elapsed_seconds`).
pub fn spent_on(row: &LedgerRow, limit: &str) -> Option<f64> {
    match limit {
        "wall_seconds" => row.elapsed_seconds,
        "steps" => row.spent.steps.map(|v| v as f64),
        "kernel_evaluations" => row.spent.kernel_evaluations.map(|v| v as f64),
        _ => row.spent.generations.map(|v| v as f64),
    }
}

/// Each limit's status for a row, in [`LIMIT_NAMES`] order.
pub fn limit_statuses(task: &Task, row: &LedgerRow) -> Vec<(&'static str, LimitStatus)> {
    LIMIT_NAMES
        .iter()
        .map(|name| {
            let status = match spent_on(row, name) {
                None => LimitStatus::Unknown,
                Some(spent) if spent > task.limits.get(name) => LimitStatus::Over,
                Some(_) => LimitStatus::Within,
            };
            (*name, status)
        })
        .collect()
}

/// The words a reason uses to name an overrun of `limit`.
pub fn overrun_phrase(limit: &str) -> String {
    format!("over its {limit} limit")
}

fn check_row(campaign: &Campaign, row: &LedgerRow) -> Result<(), ExperimentError> {
    let id = || row.schedule_id.clone();
    // Both lookups succeed: check_ledger ran the schedule checks first.
    let Some(attempt) = campaign.attempt(&row.schedule_id) else {
        return Err(ExperimentError::UnscheduledAttempt { schedule_id: id() });
    };
    let task = &campaign.tasks[attempt.task];
    if row.task != task.id {
        return Err(ExperimentError::RowMismatch {
            schedule_id: id(),
            field: "task".into(),
        });
    }
    if row.repetition != attempt.repetition {
        return Err(ExperimentError::RowMismatch {
            schedule_id: id(),
            field: "repetition".into(),
        });
    }
    let record_evidence = row
        .record
        .as_ref()
        .map(|r| match r.schema_version.as_str() {
            REPLAY_RECORD => Evidence::Fixture,
            _ => Evidence::Live,
        });
    for claimed in [Some(row.evidence), record_evidence].into_iter().flatten() {
        if claimed != task.evidence {
            return Err(ExperimentError::RelabelledEvidence {
                schedule_id: id(),
                declared: task.evidence.as_str().into(),
                claimed: claimed.as_str().into(),
            });
        }
    }
    for (field, value) in [
        ("elapsed_seconds", row.elapsed_seconds),
        ("estimated_cost", row.estimated_cost),
    ] {
        if value.is_some_and(|v| !v.is_finite() || v < 0.0) {
            return Err(ExperimentError::BadNumber {
                schedule_id: id(),
                field: field.into(),
            });
        }
    }
    if is_unrun(&row.native_outcome) {
        let carried = [
            ("a record", row.record.is_some()),
            ("a definition hash", row.definition_sha256.is_some()),
            ("a source revision", row.source_revision.is_some()),
            ("a runtime identity", row.runtime_identity.is_some()),
            ("oracle checks", !row.oracle_checks.is_empty()),
            ("a spent budget", row.spent != Spent::default()),
            ("an elapsed time", row.elapsed_seconds.is_some()),
            ("an estimated cost", row.estimated_cost.is_some()),
            ("evidence references", !row.evidence_refs.is_empty()),
            (
                "interventions",
                row.native_outcome == DEFERRED && !row.interventions.is_empty(),
            ),
        ];
        if let Some((field, _)) = carried.iter().find(|(_, set)| *set) {
            return Err(ExperimentError::DeferredWithResults {
                schedule_id: id(),
                outcome: row.native_outcome.clone(),
                field: (*field).into(),
            });
        }
    } else {
        let allowed = native_outcomes(task.kind, task.evidence);
        if !allowed.contains(&row.native_outcome.as_str()) {
            return Err(ExperimentError::UnknownOutcome {
                schedule_id: id(),
                outcome: row.native_outcome.clone(),
                allowed: format!("{DEFERRED}, {SKIPPED}, {}", allowed.join(", ")),
            });
        }
        match &row.record {
            None if is_pass(&row.native_outcome) => {
                return Err(ExperimentError::ContradictedPass {
                    schedule_id: id(),
                    evidence: "no record at all".into(),
                })
            }
            None => {}
            Some(record) => {
                if record.subject != task.subject {
                    return Err(ExperimentError::WrongTask {
                        schedule_id: id(),
                        reason: format!(
                            "the record names {:?}, the task runs {:?}",
                            record.subject, task.subject
                        ),
                    });
                }
                if let Some(hash) = &row.definition_sha256 {
                    if *hash != task.definition.sha256 {
                        return Err(ExperimentError::DefinitionDrift {
                            task: task.id.clone(),
                            declared: task.definition.sha256.clone(),
                            actual: hash.clone(),
                        });
                    }
                }
                if is_pass(&row.native_outcome) {
                    if let Some(evidence) = contradiction(record, &row.evidence_refs) {
                        return Err(ExperimentError::ContradictedPass {
                            schedule_id: id(),
                            evidence,
                        });
                    }
                }
            }
        }
        for (limit, status) in limit_statuses(task, row) {
            let phrase = overrun_phrase(limit);
            if status == LimitStatus::Over
                && !row.reason.as_deref().is_some_and(|r| r.contains(&phrase))
            {
                return Err(ExperimentError::OverLimit {
                    schedule_id: id(),
                    limit: limit.to_string(),
                    spent: spent_on(row, limit).map_or("?".into(), |v| format!("{v}")),
                    declared: format!("{}", task.limits.get(limit)),
                });
            }
        }
    }
    let needs_reason = !is_pass(&row.native_outcome);
    if needs_reason && row.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
        return Err(ExperimentError::MissingReason { schedule_id: id() });
    }
    Ok(())
}

/// What in a passing record says it did not pass, if anything.
fn contradiction(record: &RecordEvidence, refs: &[EvidenceRef]) -> Option<String> {
    if let Some(failed) = record.failed.filter(|f| *f > 0) {
        return Some(format!("{failed} failed call(s)"));
    }
    if let Some(steps) = record.failing_steps.as_ref().filter(|s| !s.is_empty()) {
        return Some(format!("failing step(s) {}", steps.join(", ")));
    }
    if let Some(step) = &record.stopped_at {
        return Some(format!("the run stopped at step {step}"));
    }
    if let (Some(calls), Some(passed)) = (record.calls, record.passed) {
        if calls != passed {
            return Some(format!("{passed} of {calls} calls passed"));
        }
    }
    if let Some(steps) = record.drifted_steps.as_ref().filter(|s| !s.is_empty()) {
        return Some(format!("drift at step(s) {}", steps.join(", ")));
    }
    if let Some(n) = record.tampered_policies.filter(|n| *n > 0) {
        return Some(format!("{n} policy file(s) differ from the manifest"));
    }
    if let (Some(scheduled), Some(done)) =
        (record.generations_scheduled, record.generations_completed)
    {
        if scheduled != done {
            return Some(format!("{done} of {scheduled} generations completed"));
        }
    }
    if let (Some(scheduled), Some(recorded)) = (record.runs_scheduled, record.runs_recorded) {
        if scheduled != recorded {
            return Some(format!("{recorded} of {scheduled} runs recorded"));
        }
    }
    if let Some(root) = &record.receipt_root {
        if let Some(other) = refs
            .iter()
            .filter_map(|r| r.merkle_root.as_ref())
            .find(|r| *r != root)
        {
            return Some(format!(
                "its evidence reference's Merkle root {other} is not the record's receipt root {root}"
            ));
        }
    }
    None
}

/// What the caller measured around an attempt it ran itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// Wall time of the attempt.
    pub elapsed_seconds: f64,
    /// The runtime that ran it.
    pub runtime: RuntimeIdentity,
    /// The commit of the tree that ran, or why it is unknown.
    pub source_revision: Result<String, String>,
    /// Evidence the attempt wrote, with Merkle roots.
    pub evidence_refs: Vec<EvidenceRef>,
    /// Steps, when the record does not state them.
    pub steps: Option<u64>,
    /// Kernel evaluations, when the record does not state them.
    pub kernel_evaluations: Option<u64>,
}

/// One record an import names: the schedule id it fills and the record's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportRecord {
    /// The schedule id the evaluator names; nothing is matched by guessing.
    pub schedule_id: String,
    /// The record's path, for messages.
    pub path: String,
    /// The record's bytes.
    pub bytes: Vec<u8>,
    /// What was measured around the attempt, when the caller ran it.
    pub measured: Option<Measured>,
}

fn get_str<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn get_u64(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

/// What a record fills in a row.
struct Filled {
    outcome: String,
    reason: Option<String>,
    record: RecordEvidence,
    spent: Spent,
    checks: Vec<OracleCheck>,
    refs: Vec<EvidenceRef>,
}

fn check(name: impl Into<String>, ok: bool) -> OracleCheck {
    OracleCheck {
        name: name.into(),
        ok,
    }
}

fn read_record(
    schedule_id: &str,
    record: &ImportRecord,
    expected: Evidence,
    kind: TaskKind,
) -> Result<Filled, ExperimentError> {
    let syntax = |reason: String| ExperimentError::Syntax {
        path: record.path.clone(),
        reason,
    };
    let value: Value = serde_json::from_slice(&record.bytes).map_err(|e| syntax(e.to_string()))?;
    exact_integers(&value, syntax)?;
    let schema = get_str(&value, "schema_version").unwrap_or_default();
    let (record_kind, record_evidence) = match schema {
        RUN_RECORD => (TaskKind::Scenario, Evidence::Live),
        REPLAY_RECORD => (TaskKind::Scenario, Evidence::Fixture),
        MATRIX_RECORD => (TaskKind::Matrix, Evidence::Live),
        EVOLVE_RECORD => (TaskKind::Evolve, Evidence::Live),
        other => {
            return Err(syntax(format!(
                "schema_version {other:?} is not {RUN_RECORD}, {REPLAY_RECORD}, {EVOLVE_RECORD} or {MATRIX_RECORD}"
            )))
        }
    };
    if record_kind != kind {
        return Err(ExperimentError::WrongTask {
            schedule_id: schedule_id.to_string(),
            reason: format!("a {schema} record cannot fill a {kind:?} task's row"),
        });
    }
    if record_evidence != expected {
        return Err(ExperimentError::RelabelledEvidence {
            schedule_id: schedule_id.to_string(),
            declared: expected.as_str().into(),
            claimed: record_evidence.as_str().into(),
        });
    }
    let mut evidence = RecordEvidence {
        schema_version: schema.to_string(),
        sha256: sha256_hex(&record.bytes),
        ..RecordEvidence::default()
    };
    let missing = |key: &str| syntax(format!("the record lacks {key}"));
    match schema {
        RUN_RECORD => {
            evidence.subject = get_str(&value, "scenario_id")
                .ok_or_else(|| missing("scenario_id"))?
                .to_string();
            let outcome = value.get("outcome").ok_or_else(|| missing("outcome"))?;
            let status = get_str(outcome, "status")
                .ok_or_else(|| missing("outcome.status"))?
                .to_string();
            evidence.calls = get_u64(outcome, "calls");
            evidence.passed = get_u64(outcome, "passed");
            evidence.failed = get_u64(outcome, "failed");
            evidence.stopped_at = get_str(outcome, "stopped_at").map(str::to_string);
            evidence.receipt_root = get_str(outcome, "receipt_root").map(str::to_string);
            let steps = outcome
                .get("steps")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let failing: Vec<&Value> = steps
                .iter()
                .filter(|s| s.get("pass").and_then(Value::as_bool) == Some(false))
                .collect();
            evidence.failing_steps = Some(
                failing
                    .iter()
                    .filter_map(|s| get_str(s, "step_id").map(str::to_string))
                    .collect(),
            );
            let checks = steps
                .iter()
                .filter_map(|s| {
                    let pass = s.get("pass").and_then(Value::as_bool)?;
                    Some(check(
                        format!(
                            "{} expects {}",
                            get_str(s, "step_id").unwrap_or("?"),
                            get_str(s, "expected").unwrap_or("?")
                        ),
                        pass,
                    ))
                })
                .collect();
            let reason = (!is_pass(&status)).then(|| match failing.first() {
                Some(step) => format!(
                    "{status}: step {} expected {} and the kernel answered {}{}",
                    get_str(step, "step_id").unwrap_or("?"),
                    get_str(step, "expected").unwrap_or("?"),
                    get_str(step, "actual").unwrap_or("?"),
                    get_str(step, "reason")
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                ),
                None => match &evidence.stopped_at {
                    Some(step) => format!("{status} at step {step}"),
                    None => format!("the run recorded status {status}"),
                },
            });
            let refs = get_str(&value, "bundle_dir")
                .map(|dir| EvidenceRef {
                    path: dir.to_string(),
                    merkle_root: evidence.receipt_root.clone(),
                })
                .into_iter()
                .collect();
            Ok(Filled {
                outcome: status,
                reason,
                spent: Spent {
                    steps: Some(steps.len() as u64),
                    kernel_evaluations: evidence.calls,
                    generations: Some(0),
                },
                record: evidence,
                checks,
                refs,
            })
        }
        REPLAY_RECORD => {
            evidence.subject = get_str(&value, "scenario_id")
                .ok_or_else(|| missing("scenario_id"))?
                .to_string();
            let identical = value
                .get("identical")
                .and_then(Value::as_bool)
                .ok_or_else(|| missing("identical"))?;
            let drifted: Vec<String> = value
                .get("drifts")
                .and_then(Value::as_array)
                .map(|d| {
                    d.iter()
                        .filter_map(|s| get_str(s, "step_id").map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let tampered = value
                .get("policy_files")
                .and_then(Value::as_object)
                .map(|m| m.len() as u64);
            evidence.tampered_policies = tampered;
            let outcome = if identical { "identical" } else { "drifted" };
            let reason = (!identical).then(|| match drifted.first() {
                Some(step) => format!("the replay drifted first at step {step}"),
                None => "the replay drifted: a policy file or receipt differs".to_string(),
            });
            let checks = vec![
                check("the replay reproduces every step", drifted.is_empty()),
                check(
                    "every policy file matches the manifest",
                    tampered.unwrap_or(0) == 0,
                ),
            ];
            evidence.drifted_steps = Some(drifted);
            let refs = get_str(&value, "left")
                .map(|dir| EvidenceRef {
                    path: dir.to_string(),
                    merkle_root: None,
                })
                .into_iter()
                .collect();
            Ok(Filled {
                outcome: outcome.to_string(),
                reason,
                spent: Spent {
                    steps: None,
                    kernel_evaluations: None,
                    generations: Some(0),
                },
                record: evidence,
                checks,
                refs,
            })
        }
        EVOLVE_RECORD => {
            evidence.subject = get_str(&value, "scenario_id")
                .ok_or_else(|| missing("scenario_id"))?
                .to_string();
            let stopped_by = get_str(&value, "stopped_by")
                .ok_or_else(|| missing("stopped_by"))?
                .to_string();
            evidence.generations_scheduled = get_u64(&value, "generations");
            evidence.generations_completed = get_u64(&value, "generations_completed");
            let reason = (!is_pass(&stopped_by)).then(|| {
                format!(
                    "stopped by {stopped_by} after {} of {} generations",
                    evidence
                        .generations_completed
                        .map_or("?".to_string(), |n| n.to_string()),
                    evidence
                        .generations_scheduled
                        .map_or("?".to_string(), |n| n.to_string())
                )
            });
            let checks = vec![check(
                "every scheduled generation ran",
                evidence.generations_completed.is_some()
                    && evidence.generations_completed == evidence.generations_scheduled,
            )];
            let refs = get_str(&value, "leaderboard_dir")
                .map(|dir| EvidenceRef {
                    path: dir.to_string(),
                    merkle_root: None,
                })
                .into_iter()
                .collect();
            Ok(Filled {
                outcome: stopped_by,
                reason,
                spent: Spent {
                    steps: Some(0),
                    kernel_evaluations: get_u64(&value, "kernel_evaluations"),
                    generations: evidence.generations_completed,
                },
                record: evidence,
                checks,
                refs,
            })
        }
        _ => {
            evidence.subject = get_str(&value, "matrix_id")
                .ok_or_else(|| missing("matrix_id"))?
                .to_string();
            let runs = value.get("runs").ok_or_else(|| missing("runs"))?;
            evidence.runs_scheduled = get_u64(runs, "scheduled");
            evidence.runs_recorded = get_u64(runs, "recorded");
            let gaps = value
                .get("gaps")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let count = |verdict: &str| {
                gaps.iter()
                    .filter(|g| get_str(g, "verdict") == Some(verdict))
                    .count() as u64
            };
            evidence.established = Some(count("established"));
            evidence.inconclusive = Some(count("inconclusive"));
            evidence.invalid = Some(count("invalid"));
            let mut checks = vec![check(
                "every scheduled run is recorded",
                evidence.runs_scheduled.is_some()
                    && evidence.runs_scheduled == evidence.runs_recorded,
            )];
            for validator in value
                .get("validators")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let metric = get_str(validator, "metric").unwrap_or("?");
                for cell in validator
                    .get("cells")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    checks.push(check(
                        format!(
                            "validator {metric} holds for {}",
                            get_str(cell, "cell").unwrap_or("?")
                        ),
                        cell.get("passed").and_then(Value::as_bool) == Some(true),
                    ));
                }
            }
            Ok(Filled {
                outcome: "complete".to_string(),
                reason: None,
                spent: Spent {
                    steps: get_u64(runs, "steps"),
                    kernel_evaluations: get_u64(runs, "kernel_evaluations"),
                    generations: Some(0),
                },
                record: evidence,
                checks,
                refs: Vec::new(),
            })
        }
    }
}

/// The estimated cost of a row under the declaration's `[cost]`, or null
/// when there is no cost model or an amount it needs is unknown.
pub fn estimated_cost(campaign: &Campaign, row: &LedgerRow) -> Option<f64> {
    let cost = campaign.file.cost.as_ref()?;
    let evaluations = row.spent.kernel_evaluations? as f64;
    let seconds = row.elapsed_seconds?;
    Some(evaluations * cost.per_kernel_evaluation + seconds * cost.per_wall_second)
}

/// Fills DEFERRED rows from records; returns the new ledger, or the refusal.
pub fn import(
    campaign: &Campaign,
    ledger: &Ledger,
    records: &[ImportRecord],
) -> Result<Ledger, ExperimentError> {
    check_ledger(campaign, ledger)?;
    let mut ids = BTreeSet::new();
    let mut digests: BTreeMap<String, &str> = BTreeMap::new();
    for record in records {
        if !ids.insert(record.schedule_id.as_str()) {
            return Err(ExperimentError::ImportTwice {
                what: format!("schedule id {:?}", record.schedule_id),
            });
        }
        let digest = sha256_hex(&record.bytes);
        if let Some(first) = digests.insert(digest, record.path.as_str()) {
            return Err(ExperimentError::ImportTwice {
                what: format!(
                    "one record ({:?} and {:?} hold the same bytes) for two rows",
                    first, record.path
                ),
            });
        }
    }
    let mut next = ledger.clone();
    for record in records {
        let Some(attempt) = campaign.attempt(&record.schedule_id) else {
            return Err(ExperimentError::UnscheduledAttempt {
                schedule_id: record.schedule_id.clone(),
            });
        };
        let task = &campaign.tasks[attempt.task];
        let Some(row) = next
            .rows
            .iter_mut()
            .find(|r| r.schedule_id == record.schedule_id)
        else {
            return Err(ExperimentError::MissingAttempt {
                schedule_id: record.schedule_id.clone(),
            });
        };
        if row.native_outcome != DEFERRED {
            return Err(ExperimentError::AlreadyAttempted {
                schedule_id: record.schedule_id.clone(),
            });
        }
        let filled = read_record(&record.schedule_id, record, task.evidence, task.kind)?;
        if filled.record.subject != task.subject {
            return Err(ExperimentError::WrongTask {
                schedule_id: record.schedule_id.clone(),
                reason: format!(
                    "the record names {:?}, the task runs {:?}",
                    filled.record.subject, task.subject
                ),
            });
        }
        row.native_outcome = filled.outcome;
        row.reason = filled.reason;
        row.record = Some(filled.record);
        row.definition_sha256 = Some(task.definition.sha256.clone());
        row.oracle_checks = filled.checks;
        row.spent = filled.spent;
        row.evidence_refs = filled.refs;
        row.deviations = Vec::new();
        match &record.measured {
            Some(measured) => {
                row.elapsed_seconds = Some(measured.elapsed_seconds);
                row.runtime_identity = Some(measured.runtime.clone());
                match &measured.source_revision {
                    Ok(commit) => row.source_revision = Some(commit.clone()),
                    Err(why) => {
                        row.source_revision = None;
                        row.deviations
                            .push(format!("source revision unknown: {why}"));
                    }
                }
                if !measured.evidence_refs.is_empty() {
                    row.evidence_refs = measured.evidence_refs.clone();
                }
                row.spent.steps = row.spent.steps.or(measured.steps);
                row.spent.kernel_evaluations =
                    row.spent.kernel_evaluations.or(measured.kernel_evaluations);
            }
            None => {
                row.elapsed_seconds = None;
                row.runtime_identity = None;
                row.source_revision = None;
                row.deviations
                    .push("imported record: the commit it ran from is not recorded".to_string());
                row.deviations.push(
                    "imported record: the runtime and wall time are not recorded".to_string(),
                );
            }
        }
        note_overruns(task, row);
        let cost = estimated_cost(campaign, row);
        row.estimated_cost = cost;
    }
    check_ledger(campaign, &next)?;
    Ok(next)
}

/// Records an attempt that produced no record because its infrastructure
/// failed: native `infrastructure-failure`, with the failure as its reason
/// and what was measured around it; the row stays DEFERRED on refusal.
pub fn record_failure(
    campaign: &Campaign,
    ledger: &Ledger,
    schedule_id: &str,
    reason: &str,
    measured: &Measured,
) -> Result<Ledger, ExperimentError> {
    check_ledger(campaign, ledger)?;
    let Some(attempt) = campaign.attempt(schedule_id) else {
        return Err(ExperimentError::UnscheduledAttempt {
            schedule_id: schedule_id.to_string(),
        });
    };
    let task = &campaign.tasks[attempt.task];
    let mut next = ledger.clone();
    let Some(row) = next.rows.iter_mut().find(|r| r.schedule_id == schedule_id) else {
        return Err(ExperimentError::MissingAttempt {
            schedule_id: schedule_id.to_string(),
        });
    };
    if row.native_outcome != DEFERRED {
        return Err(ExperimentError::AlreadyAttempted {
            schedule_id: schedule_id.to_string(),
        });
    }
    if !native_outcomes(task.kind, task.evidence).contains(&"infrastructure-failure") {
        return Err(ExperimentError::UnknownOutcome {
            schedule_id: schedule_id.to_string(),
            outcome: "infrastructure-failure".into(),
            allowed: native_outcomes(task.kind, task.evidence).join(", "),
        });
    }
    row.native_outcome = "infrastructure-failure".to_string();
    row.reason = Some(reason.to_string());
    row.definition_sha256 = Some(task.definition.sha256.clone());
    row.elapsed_seconds = Some(measured.elapsed_seconds);
    row.runtime_identity = Some(measured.runtime.clone());
    match &measured.source_revision {
        Ok(commit) => row.source_revision = Some(commit.clone()),
        Err(why) => row
            .deviations
            .push(format!("source revision unknown: {why}")),
    }
    row.evidence_refs = measured.evidence_refs.clone();
    row.spent = Spent {
        steps: measured.steps,
        kernel_evaluations: measured.kernel_evaluations,
        generations: None,
    };
    note_overruns(task, row);
    let cost = estimated_cost(campaign, row);
    row.estimated_cost = cost;
    check_ledger(campaign, &next)?;
    Ok(next)
}

/// Appends every limit overrun to the row's reason, in the words the
/// checks look for.
fn note_overruns(task: &Task, row: &mut LedgerRow) {
    let mut overruns = Vec::new();
    for (limit, status) in limit_statuses(task, row) {
        if status == LimitStatus::Over {
            overruns.push(format!(
                "{}: spent {} of {}",
                overrun_phrase(limit),
                spent_on(row, limit).map_or("?".into(), |v| format!("{v}")),
                task.limits.get(limit)
            ));
        }
    }
    if !overruns.is_empty() {
        let text = overruns.join("; ");
        row.reason = Some(match row.reason.take() {
            Some(reason) => format!("{reason}; {text}"),
            None => text,
        });
    }
}

/// What [`annotate`] adds to a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Annotation {
    /// A human intervention on an attempted (or skipped) row.
    Intervention(Intervention),
    /// Marks a DEFERRED row SKIPPED with this reason.
    Skip(String),
}

/// Adds an annotation to one row; returns the new ledger, or the refusal.
pub fn annotate(
    campaign: &Campaign,
    ledger: &Ledger,
    schedule_id: &str,
    annotation: &Annotation,
) -> Result<Ledger, ExperimentError> {
    check_ledger(campaign, ledger)?;
    let mut next = ledger.clone();
    let Some(row) = next.rows.iter_mut().find(|r| r.schedule_id == schedule_id) else {
        return Err(ExperimentError::UnscheduledAttempt {
            schedule_id: schedule_id.to_string(),
        });
    };
    match annotation {
        Annotation::Skip(reason) => {
            if row.native_outcome != DEFERRED {
                return Err(ExperimentError::AlreadyAttempted {
                    schedule_id: schedule_id.to_string(),
                });
            }
            row.native_outcome = SKIPPED.to_string();
            row.reason = Some(reason.clone());
        }
        Annotation::Intervention(intervention) => {
            if row.native_outcome == DEFERRED {
                return Err(ExperimentError::DeferredWithResults {
                    schedule_id: schedule_id.to_string(),
                    outcome: DEFERRED.to_string(),
                    field: "interventions".into(),
                });
            }
            row.interventions.push(intervention.clone());
        }
    }
    check_ledger(campaign, &next)?;
    Ok(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    // A ledger holding an integer beyond 2^53 is refused when read, naming the field, instead of failing when written back.
    #[test]
    fn inexact_integers_are_refused_on_read() {
        let err =
            read_ledger(br#"{"rows": [{"calls": 9007199254740993}]}"#, "ledger.json").unwrap_err();
        assert_eq!(err.code(), "CHIO-EXPERIMENT-SYNTAX");
        assert!(err.summary().contains("rows[0].calls"), "{}", err.summary());
        assert!(!err.is_infrastructure());
    }
}
