//! The checks every reader of a ledger applies: each scheduled attempt
//! exactly once, the declaration's exact bytes, evidence never relabelled,
//! outcomes the task can produce, passes their own evidence does not
//! contradict, finite non-negative numbers, and overruns of declared limits
//! named in the row's reason.

use super::*;

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

/// Checks one row against its scheduled attempt and its task: identity,
/// evidence labels and numbers, then what an unrun or an attempted row may
/// carry, then that a row which did not pass states why.
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
    check_row_labels(task, row)?;
    if is_unrun(&row.native_outcome) {
        check_unrun_row(row)?;
    } else {
        check_attempted_row(task, row)?;
    }
    let needs_reason = !is_pass(&row.native_outcome);
    if needs_reason && row.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
        return Err(ExperimentError::MissingReason { schedule_id: id() });
    }
    Ok(())
}

/// The row's evidence label and its record's agree with the task's, and
/// its wall time and cost are finite and not negative.
fn check_row_labels(task: &Task, row: &LedgerRow) -> Result<(), ExperimentError> {
    let id = || row.schedule_id.clone();
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
    Ok(())
}

/// A DEFERRED or SKIPPED row carries no result of an attempt.
fn check_unrun_row(row: &LedgerRow) -> Result<(), ExperimentError> {
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
            schedule_id: row.schedule_id.clone(),
            outcome: row.native_outcome.clone(),
            field: (*field).into(),
        });
    }
    Ok(())
}

/// An attempted row: its outcome is one the task's tool reports, its
/// record fits the task, and every limit overrun is named in its reason.
fn check_attempted_row(task: &Task, row: &LedgerRow) -> Result<(), ExperimentError> {
    let id = || row.schedule_id.clone();
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
