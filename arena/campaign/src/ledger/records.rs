//! Filling ledger rows from native result records: reading a
//! `chio.arena.run/v1`, `replay/v1`, `evolve/v1` or matrix-synthesis
//! record, turning the task's expectations into oracle checks, recording
//! what the caller measured, the estimated cost, and the rows of attempts
//! that failed before producing a record. The ledger's shape and checks
//! live in the parent module.

use super::*;

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
pub(super) struct Filled {
    pub(super) outcome: String,
    pub(super) reason: Option<String>,
    pub(super) record: RecordEvidence,
    pub(super) spent: Spent,
    pub(super) checks: Vec<OracleCheck>,
    pub(super) refs: Vec<EvidenceRef>,
}

/// The evidence a record points at: the folder its `key` names, if any.
fn evidence_ref(value: &Value, key: &str, merkle_root: Option<String>) -> Vec<EvidenceRef> {
    get_str(value, key)
        .map(|dir| EvidenceRef {
            path: dir.to_string(),
            merkle_root,
        })
        .into_iter()
        .collect()
}

fn check(name: impl Into<String>, ok: bool) -> OracleCheck {
    OracleCheck {
        name: name.into(),
        ok,
    }
}

/// Reads one native record: parses it, checks that its schema fits the
/// task's kind and declared evidence, then fills the row by its schema.
pub(super) fn read_record(
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
    let missing = |key: &str| syntax(format!("the record lacks {key}"));
    let subject = if schema == MATRIX_RECORD {
        "matrix_id"
    } else {
        "scenario_id"
    };
    let evidence = RecordEvidence {
        schema_version: schema.to_string(),
        sha256: sha256_hex(&record.bytes),
        subject: get_str(&value, subject)
            .ok_or_else(|| missing(subject))?
            .to_string(),
        ..RecordEvidence::default()
    };
    match schema {
        RUN_RECORD => fill_from_run(&value, evidence, missing),
        REPLAY_RECORD => fill_from_replay(&value, evidence, missing),
        EVOLVE_RECORD => fill_from_evolve(&value, evidence, missing),
        _ => fill_from_matrix(&value, evidence, missing),
    }
}

/// What a record's bytes establish for a task's row, as an import would
/// fill it: the native outcome, the record's evidence, the oracle checks
/// and what the attempt spent.
pub(crate) fn derive(
    schedule_id: &str,
    path: &str,
    bytes: &[u8],
    task: &Task,
) -> Result<(String, RecordEvidence, Vec<OracleCheck>, Spent), ExperimentError> {
    let record = ImportRecord {
        schedule_id: schedule_id.to_string(),
        path: path.to_string(),
        bytes: bytes.to_vec(),
        measured: None,
    };
    let filled = read_record(schedule_id, &record, task.evidence, task.kind)?;
    Ok((filled.outcome, filled.record, filled.checks, filled.spent))
}

/// Fills a row from a `chio.arena.run/v1` record: its status, its failing
/// steps and one check per step that states a pass.
fn fill_from_run(
    value: &Value,
    mut evidence: RecordEvidence,
    missing: impl Fn(&str) -> ExperimentError,
) -> Result<Filled, ExperimentError> {
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
    let refs = evidence_ref(value, "bundle_dir", evidence.receipt_root.clone());
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

/// Fills a row from a replay record: identical or drifted, and whether
/// every policy file matches the manifest.
fn fill_from_replay(
    value: &Value,
    mut evidence: RecordEvidence,
    missing: impl Fn(&str) -> ExperimentError,
) -> Result<Filled, ExperimentError> {
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
    let refs = evidence_ref(value, "left", None);
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

/// Fills a row from an `evolve/v1` record: what stopped the search and
/// whether every scheduled generation ran.
fn fill_from_evolve(
    value: &Value,
    mut evidence: RecordEvidence,
    missing: impl Fn(&str) -> ExperimentError,
) -> Result<Filled, ExperimentError> {
    let stopped_by = get_str(value, "stopped_by")
        .ok_or_else(|| missing("stopped_by"))?
        .to_string();
    evidence.generations_scheduled = get_u64(value, "generations");
    evidence.generations_completed = get_u64(value, "generations_completed");
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
    let refs = evidence_ref(value, "leaderboard_dir", None);
    Ok(Filled {
        outcome: stopped_by,
        reason,
        spent: Spent {
            steps: Some(0),
            kernel_evaluations: get_u64(value, "kernel_evaluations"),
            generations: evidence.generations_completed,
        },
        record: evidence,
        checks,
        refs,
    })
}

/// Fills a row from a matrix synthesis: its verdict counts, whether every
/// scheduled run is recorded and one check per validator and cell.
fn fill_from_matrix(
    value: &Value,
    mut evidence: RecordEvidence,
    missing: impl Fn(&str) -> ExperimentError,
) -> Result<Filled, ExperimentError> {
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
        evidence.runs_scheduled.is_some() && evidence.runs_scheduled == evidence.runs_recorded,
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

/// The estimated cost of a row under the declaration's `[cost]`, or null
/// when there is no cost model or an amount it needs is unknown.
pub fn estimated_cost(campaign: &Campaign, row: &LedgerRow) -> Option<f64> {
    let cost = campaign.file.cost.as_ref()?;
    let evaluations = row.spent.kernel_evaluations? as f64;
    let seconds = row.elapsed_seconds?;
    Some(evaluations * cost.per_kernel_evaluation + seconds * cost.per_wall_second)
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
pub(super) fn note_overruns(task: &Task, row: &mut LedgerRow) {
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
