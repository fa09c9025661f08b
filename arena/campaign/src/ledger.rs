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

use super::{Campaign, Evidence, Task, TaskKind, LIMIT_NAMES};
use chio_experiment::definition::sha256_hex;
use chio_experiment::error::ExperimentError;

mod checks;
pub use checks::{check_ledger, limit_statuses, overrun_phrase, spent_on, LimitStatus};
mod import;
pub use import::import;
mod records;
pub(crate) use records::derive;
pub use records::{estimated_cost, record_failure, ImportRecord, Measured};

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
            "{field} is a whole number beyond -2^53..=2^53 (written as an integer or as a number such as 1e308), which canonical JSON cannot print exactly; give a number within that range"
        ))),
        None => Ok(()),
    }
}

/// The ledger as canonical JSON with a final newline.
pub fn ledger_bytes(ledger: &Ledger) -> Result<Vec<u8>, ExperimentError> {
    Ok(ExperimentError::canonical_line(ledger)?.into_bytes())
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
        // A float far beyond 2^53 is named as the number it is, not as an integer.
        let err =
            read_ledger(br#"{"rows": [{"elapsed_seconds": 1e308}]}"#, "ledger.json").unwrap_err();
        assert!(
            err.summary().contains(
                "rows[0].elapsed_seconds is a whole number beyond -2^53..=2^53 (written as an integer or as a number such as 1e308)"
            ),
            "{}",
            err.summary()
        );
    }
}
