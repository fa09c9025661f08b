//! Importing native records into DEFERRED rows: each record named once, by
//! the schedule id it fills, read as its task's kind, with what the caller
//! measured around it.

use super::records::{estimated_cost, note_overruns, read_record, ImportRecord, Measured};
use super::*;

/// Fills DEFERRED rows from records; returns the new ledger, or the refusal.
pub fn import(
    campaign: &Campaign,
    ledger: &Ledger,
    records: &[ImportRecord],
) -> Result<Ledger, ExperimentError> {
    check_ledger(campaign, ledger)?;
    each_once(records)?;
    let mut next = ledger.clone();
    for record in records {
        fill_row(campaign, &mut next, record)?;
    }
    check_ledger(campaign, &next)?;
    Ok(next)
}

/// Refuses a schedule id named twice, and one record's bytes imported for
/// two rows.
fn each_once(records: &[ImportRecord]) -> Result<(), ExperimentError> {
    let mut ids = BTreeSet::new();
    let mut digests: BTreeMap<String, (&str, &str)> = BTreeMap::new();
    for record in records {
        if !ids.insert(record.schedule_id.as_str()) {
            return Err(ExperimentError::ImportTwice {
                what: format!("names schedule id {:?} twice", record.schedule_id),
            });
        }
        let digest = sha256_hex(&record.bytes);
        if let Some((first, first_id)) =
            digests.insert(digest, (record.path.as_str(), record.schedule_id.as_str()))
        {
            return Err(ExperimentError::ImportTwice {
                what: format!(
                    "gives rows {first_id:?} and {:?} the same record: {first:?} and {:?} hold the same bytes, and one attempt's record backs one row",
                    record.schedule_id, record.path
                ),
            });
        }
    }
    Ok(())
}

/// Fills the DEFERRED row `record` names from it, refusing an unscheduled,
/// missing or already attempted row and a record of another task.
fn fill_row(
    campaign: &Campaign,
    next: &mut Ledger,
    record: &ImportRecord,
) -> Result<(), ExperimentError> {
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
    note_measured(row, record.measured.as_ref());
    note_overruns(task, row);
    let cost = estimated_cost(campaign, row);
    row.estimated_cost = cost;
    Ok(())
}

/// Records what the caller measured around the attempt, or, for a record
/// imported without it, the deviations that say what is not recorded.
fn note_measured(row: &mut LedgerRow, measured: Option<&Measured>) {
    match measured {
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
            row.deviations
                .push("imported record: the runtime and wall time are not recorded".to_string());
        }
    }
}
