//! The attempt ledger: its template, the checks every reader applies, and
//! the import that fills rows from native result records.
//!
//! A ledger (`chio.arena.campaign-ledger/v1`, canonical JSON) names the
//! campaign id and the SHA-256 of the declaration's exact bytes, and holds
//! one row per scheduled attempt. [`template`] writes every row DEFERRED.
//! [`check_ledger`] refuses a ledger that misses, duplicates or adds an
//! attempt, names another declaration or changed bytes, relabels a replay
//! as a fresh run (or the reverse), records an outcome the task never
//! produces, carries a pass its own evidence contradicts, a non-pass row
//! without a reason, or a DEFERRED row with results. [`import`] fills
//! DEFERRED rows from `chio.arena.run/v1`, `chio.arena.replay/v1`,
//! `chio.arena.evolve/v1` and `chio.arena.matrix-synthesis/v1` documents, copying the native outcome
//! as recorded, and refuses (returning the error, so the caller leaves the
//! file unchanged) whenever the resulting ledger would fail a check.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::definition::sha256_hex;
use super::{Campaign, Evidence, TaskKind};
use crate::experiment_error::ExperimentError;

/// Schema id of a ledger.
pub const LEDGER_SCHEMA_VERSION: &str = "chio.arena.campaign-ledger/v1";
/// The native outcome of an attempt that has not run.
pub const DEFERRED: &str = "DEFERRED";
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
    "elapsed_seconds",
    "evidence",
    "kernel_evaluations",
    "native_outcome",
    "reason",
    "record",
    "repetition",
    "schedule_id",
    "task",
];

/// The published record of a campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// Must be `chio.arena.campaign-ledger/v1`.
    pub schema_version: String,
    /// The declaration's campaign id.
    pub campaign_id: String,
    /// SHA-256 of the declaration's bytes when the ledger was admitted.
    pub declaration_sha256: String,
    /// One row per scheduled attempt.
    pub rows: Vec<LedgerRow>,
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
    /// `fresh` or `replay`, as scheduled.
    pub evidence: Evidence,
    /// The outcome exactly as the tool recorded it, or `DEFERRED`.
    pub native_outcome: String,
    /// Why the attempt did not pass (required unless it passed).
    pub reason: Option<String>,
    /// What the record established, copied from it.
    pub record: Option<RecordEvidence>,
    /// The definition hash the attempt ran against.
    pub definition_sha256: Option<String>,
    /// Kernel evaluations the attempt spent; null when the record does not say.
    pub kernel_evaluations: Option<u64>,
    /// Wall time of the attempt; null when unknown (run records carry no
    /// wall time, by the determinism contract).
    pub elapsed_seconds: Option<f64>,
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
}

/// The native outcomes a task's tool produces, besides `DEFERRED`.
pub fn native_outcomes(kind: TaskKind, evidence: Evidence) -> &'static [&'static str] {
    match (kind, evidence) {
        (TaskKind::Scenario, Evidence::Fresh) => {
            &["passed", "failed", "stopped", "infrastructure-failure"]
        }
        (TaskKind::Scenario, Evidence::Replay) => &["identical", "drifted"],
        (TaskKind::Evolve, _) => &["generations", "wall-budget"],
        (TaskKind::Matrix, _) => &["complete"],
    }
}

/// Whether a native outcome is its tool's pass.
pub fn is_pass(outcome: &str) -> bool {
    matches!(outcome, "passed" | "identical" | "complete" | "generations")
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
                let task = &campaign.tasks[a.task];
                LedgerRow {
                    schedule_id: a.schedule_id.clone(),
                    task: task.id.clone(),
                    repetition: a.repetition,
                    evidence: task.evidence,
                    native_outcome: DEFERRED.to_string(),
                    reason: Some(NOT_ATTEMPTED.to_string()),
                    record: None,
                    definition_sha256: None,
                    kernel_evaluations: None,
                    elapsed_seconds: None,
                }
            })
            .collect(),
    }
}

/// Parses ledger bytes, refusing a row that lacks a declared field or adds one.
pub fn read_ledger(bytes: &[u8], name: &str) -> Result<Ledger, ExperimentError> {
    let syntax = |reason: String| ExperimentError::Syntax {
        path: name.to_string(),
        reason,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| syntax(e.to_string()))?;
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
            REPLAY_RECORD => Evidence::Replay,
            _ => Evidence::Fresh,
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
    if row.native_outcome == DEFERRED {
        let carried = [
            ("a record", row.record.is_some()),
            ("a definition hash", row.definition_sha256.is_some()),
            ("kernel evaluations", row.kernel_evaluations.is_some()),
            ("an elapsed time", row.elapsed_seconds.is_some()),
        ];
        if let Some((field, _)) = carried.iter().find(|(_, set)| *set) {
            return Err(ExperimentError::DeferredWithResults {
                schedule_id: id(),
                field: (*field).into(),
            });
        }
    } else {
        let allowed = native_outcomes(task.kind, task.evidence);
        if !allowed.contains(&row.native_outcome.as_str()) {
            return Err(ExperimentError::UnknownOutcome {
                schedule_id: id(),
                outcome: row.native_outcome.clone(),
                allowed: format!("{DEFERRED}, {}", allowed.join(", ")),
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
                    if let Some(evidence) = contradiction(record) {
                        return Err(ExperimentError::ContradictedPass {
                            schedule_id: id(),
                            evidence,
                        });
                    }
                }
            }
        }
    }
    if !is_pass(&row.native_outcome) && row.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
        return Err(ExperimentError::MissingReason { schedule_id: id() });
    }
    if let Some(seconds) = row.elapsed_seconds {
        if !seconds.is_finite() || seconds < 0.0 {
            return Err(ExperimentError::Syntax {
                path: row.schedule_id.clone(),
                reason: "elapsed_seconds must be a finite nonnegative number or null".into(),
            });
        }
    }
    Ok(())
}

/// What in a passing record says it did not pass, if anything.
fn contradiction(record: &RecordEvidence) -> Option<String> {
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
    None
}

/// One record an import names: the schedule id it fills and the record's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportRecord {
    /// The schedule id the evaluator names; nothing is matched by guessing.
    pub schedule_id: String,
    /// The record's path, for messages.
    pub path: String,
    /// The record's bytes.
    pub bytes: Vec<u8>,
}

fn get_str<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

fn get_u64(value: &Value, key: &str) -> Option<u64> {
    value.get(key).and_then(Value::as_u64)
}

/// What a record fills in a row: outcome, reason, evidence and cost.
struct Filled {
    outcome: String,
    reason: Option<String>,
    record: RecordEvidence,
    evaluations: Option<u64>,
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
    let schema = get_str(&value, "schema_version").unwrap_or_default();
    let (record_kind, record_evidence) = match schema {
        RUN_RECORD => (TaskKind::Scenario, Evidence::Fresh),
        REPLAY_RECORD => (TaskKind::Scenario, Evidence::Replay),
        MATRIX_RECORD => (TaskKind::Matrix, Evidence::Fresh),
        EVOLVE_RECORD => (TaskKind::Evolve, Evidence::Fresh),
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
            Ok(Filled {
                outcome: status,
                reason,
                evaluations: evidence.calls,
                record: evidence,
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
            evidence.tampered_policies = value
                .get("policy_files")
                .and_then(Value::as_object)
                .map(|m| m.len() as u64);
            let outcome = if identical { "identical" } else { "drifted" };
            let reason = (!identical).then(|| match drifted.first() {
                Some(step) => format!("the replay drifted first at step {step}"),
                None => "the replay drifted: a policy file or receipt differs".to_string(),
            });
            evidence.drifted_steps = Some(drifted);
            Ok(Filled {
                outcome: outcome.to_string(),
                reason,
                evaluations: None,
                record: evidence,
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
            Ok(Filled {
                outcome: stopped_by,
                reason,
                evaluations: get_u64(&value, "kernel_evaluations"),
                record: evidence,
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
            Ok(Filled {
                outcome: "complete".to_string(),
                reason: None,
                evaluations: get_u64(runs, "kernel_evaluations"),
                record: evidence,
            })
        }
    }
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
        row.kernel_evaluations = filled.evaluations;
        row.elapsed_seconds = None;
    }
    check_ledger(campaign, &next)?;
    Ok(next)
}
