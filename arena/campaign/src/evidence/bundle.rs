//! A scenario's bundle as evidence: sound, the task's scenario, the
//! reference's root, and for a run every field the row copied from it.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::{compare_checks, contradiction, Contradiction, RefCheck, RowFindings};
use crate::ledger::{LedgerRow, OracleCheck, RUN_RECORD};
use chio_arena::bundle::{
    read_regular, schedule_faults, signed_receipts, step_faults, Bundle, BundleManifest,
    BundleStatus, INPUTS_DIR, MANIFEST_FILE, MAX_FILE_BYTES, RECEIPTS_FILE, SCENARIO_INPUT,
};
use chio_arena::scenario::ActionKind;
use chio_experiment::definition::normalise;
use chio_kernel::receipt::SignedReceipt;

/// Reads a bundle's manifest and checks its receipts against its root
/// (`chio_arena::bundle::signed_receipts`: each is what its kernel signed,
/// under the key the manifest records); answers the manifest and each
/// receipt by its id. Each file is read as every file of a bundle is: a
/// regular file, bounded.
fn read_bundle(dir: &Path) -> Result<(BundleManifest, BTreeMap<String, SignedReceipt>), String> {
    let read = |name: &str| {
        read_regular(&dir.join(name), MAX_FILE_BYTES)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| format!("it holds no readable {name}"))
    };
    let manifest: BundleManifest = serde_json::from_str(&read(MANIFEST_FILE)?)
        .map_err(|e| format!("its {MANIFEST_FILE} is not a bundle manifest ({e})"))?;
    let receipts: Vec<String> = read(RECEIPTS_FILE)?.lines().map(str::to_string).collect();
    // Each receipt is what its kernel signed: its id is the digest of its
    // body and its signature verifies under the key it names, so a verdict
    // edited into a receipt is refused, not counted.
    let signed = signed_receipts(&manifest, &receipts).map_err(|fault| fault.to_string())?;
    Ok((manifest, signed))
}

/// The manifest against what the bundle itself holds: the scenario file
/// it ran (its digest, and each call's expected verdict), the signed
/// receipts (each call's verdict), and its own judgements (a passing step
/// got what it expected; the mismatches are the failing steps). A manifest
/// edited after its run where a signature or the scenario file reaches
/// contradicts one of them; an edit of what neither covers is caught by
/// re-deciding the bundle ([`super::redecision`]).
fn check_against_itself(
    checked: &RefCheck<'_>,
    manifest: &BundleManifest,
    signed: &BTreeMap<String, SignedReceipt>,
    found: &mut Vec<Contradiction>,
) {
    let dir = checked.dir;
    let mut say = |why: String| found.push(contradiction(checked.at("path"), why));
    let scenario = match std::fs::read(dir.join(INPUTS_DIR).join(SCENARIO_INPUT)) {
        Ok(bytes) => bytes,
        Err(e) => {
            say(format!(
                "it holds no readable {INPUTS_DIR}/{SCENARIO_INPUT} ({})",
                e.kind()
            ));
            return;
        }
    };
    let digest = hex::encode(Sha256::digest(&scenario));
    if digest != manifest.scenario_sha256 {
        say(format!(
            "its manifest claims the scenario file {}, but the scenario file it holds hashes to {digest}",
            manifest.scenario_sha256
        ));
    }
    // The schedule its scenario file declares: the steps and what each
    // expects.
    for fault in schedule_faults(manifest, &scenario) {
        say(format!("its manifest says {}", fault.why));
    }
    // The verdicts its kernels signed, and its own judgements.
    for fault in step_faults(manifest, signed) {
        say(format!("its manifest says {}", fault.why));
    }
}

/// The native outcome a run's bundle records.
fn run_outcome(manifest: &BundleManifest) -> &'static str {
    match manifest.status {
        BundleStatus::Failed => "infrastructure-failure",
        BundleStatus::Stopped => "stopped",
        BundleStatus::Completed if manifest.mismatches.is_empty() => "passed",
        BundleStatus::Completed => "failed",
    }
}

fn shown<T: std::fmt::Debug>(value: &Option<T>) -> String {
    match value {
        Some(v) => format!("{v:?}"),
        None => "nothing".to_string(),
    }
}

/// Records a contradiction when the row's value is not the bundle's.
fn differ<T: std::fmt::Debug + PartialEq>(
    found: &mut Vec<Contradiction>,
    field: &str,
    recorded: &Option<T>,
    bundle: &Option<T>,
) {
    if recorded != bundle {
        found.push(contradiction(
            field,
            format!(
                "the row records {}, the bundle {}",
                shown(recorded),
                shown(bundle)
            ),
        ));
    }
}

/// Checks a scenario's bundle: readable, the task's scenario, the
/// reference's root, for a run every field the row copied from it, and
/// re-decided from its inputs ([`super::redecision`]).
pub(super) fn check_bundle(checked: &RefCheck<'_>, findings: &mut RowFindings) {
    let RefCheck { row, dir, .. } = *checked;
    let (manifest, signed) = match read_bundle(dir) {
        Ok(read) => read,
        Err(why) => {
            findings.contradictions.push(contradiction(
                checked.at("path"),
                format!("{} is not a sound bundle: {why}", dir.display()),
            ));
            return;
        }
    };
    let found = &mut findings.contradictions;
    check_identity(checked, &manifest, found);
    check_fixtures(checked, found);
    check_against_itself(checked, &manifest, &signed, found);
    let judged = manifest.steps.iter().filter(|s| s.pass.is_some()).count() as u64;
    let steps = Some(manifest.steps.len() as u64);
    let is_run = row
        .record
        .as_ref()
        .is_some_and(|r| r.schema_version == RUN_RECORD);
    if !is_run {
        // A replay: the replayed bundle's counts, when the row states them.
        if row.spent.steps.is_some() {
            differ(found, "spent.steps", &row.spent.steps, &steps);
        }
        if row.spent.kernel_evaluations.is_some() {
            differ(
                found,
                "spent.kernel_evaluations",
                &row.spent.kernel_evaluations,
                &Some(judged),
            );
        }
    } else {
        check_run_record(row, &manifest, steps, found);
    }
    super::redecision::check_redecided(checked, findings);
}

/// The bundle is of the task's scenario file, and its receipt root is the
/// one the reference claims.
fn check_identity(
    checked: &RefCheck<'_>,
    manifest: &BundleManifest,
    found: &mut Vec<Contradiction>,
) {
    let RefCheck { task, root, .. } = *checked;
    let scenario_hash = normalise(Path::new(&task.file)).ok().and_then(|file| {
        task.definition
            .rows
            .iter()
            .find(|r| r.path == file)
            .map(|r| r.sha256.clone())
    });
    if let Some(expected) = scenario_hash.filter(|h| *h != manifest.scenario_sha256) {
        found.push(contradiction(
            checked.at("path"),
            format!(
                "the bundle ran a scenario file with SHA-256 {}, not the task's {} ({expected})",
                manifest.scenario_sha256, task.file
            ),
        ));
    }
    if let Some(root) = root.filter(|r| *r != manifest.receipt_root) {
        found.push(contradiction(
            checked.at("merkle_root"),
            format!(
                "{root} is not the bundle's receipt root {}",
                manifest.receipt_root
            ),
        ));
    }
}

/// The fixture files among the bundle's inputs are the ones the task's
/// definition pins, byte for byte: a run of the same scenario file in
/// another world (other fixture bytes, a file added or left out) is not
/// evidence for this task. The world is read as every reader holding a
/// bundle to one reads it ([`Bundle::read_world`]): a recording of MCP
/// servers' answers is one of its files whether the bundle keeps it beside
/// its inputs (`chio arena record --out`) or among them (`--replay-from`),
/// so it is pinned, or named, the same way in either place. Names each
/// file that differs.
fn check_fixtures(checked: &RefCheck<'_>, found: &mut Vec<Contradiction>) {
    let inputs = match Bundle::read_world(checked.dir) {
        Ok(bundle) => bundle.inputs,
        Err(e) => {
            found.push(contradiction(
                checked.at("path"),
                format!("its inputs cannot be read: {e}"),
            ));
            return;
        }
    };
    let held: BTreeMap<&str, String> = inputs
        .iter()
        .filter(|(path, _)| path.as_str() != SCENARIO_INPUT)
        .map(|(path, bytes)| (path.as_str(), hex::encode(Sha256::digest(bytes))))
        .collect();
    let pinned = &checked.task.fixtures;
    let mut paths: Vec<&str> = held.keys().copied().collect();
    paths.extend(pinned.keys().map(String::as_str));
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        let why = match (held.get(path), pinned.get(path)) {
            (Some(a), Some(b)) if a == b => continue,
            (Some(a), Some(b)) => format!(
                "the bundle ran {INPUTS_DIR}/{path} with SHA-256 {a}, the task's definition pins {b}: it ran another world"
            ),
            (Some(_), None) => format!(
                "the bundle ran {INPUTS_DIR}/{path}, a fixture file the task's definition does not pin: it ran another world"
            ),
            (None, _) => format!(
                "the bundle holds no {INPUTS_DIR}/{path}, a fixture file the task's definition pins: it ran another world"
            ),
        };
        found.push(contradiction(checked.at("path"), why));
    }
}

/// A run's row against its bundle: the native outcome, the record's
/// counts and the oracle checks.
fn check_run_record(
    row: &LedgerRow,
    manifest: &BundleManifest,
    steps: Option<u64>,
    found: &mut Vec<Contradiction>,
) {
    let outcome = run_outcome(manifest);
    if row.native_outcome != outcome {
        found.push(contradiction(
            "native_outcome",
            format!(
                "the row records {:?}, the bundle {outcome:?} (status {}, {} mismatch(es))",
                row.native_outcome,
                manifest.status,
                manifest.mismatches.len()
            ),
        ));
    }
    check_record_counts(row, manifest, steps, found);
}

/// The counts a run's row copied from its bundle: calls, passes, failing
/// steps, where it stopped, and what it spent.
fn check_record_counts(
    row: &LedgerRow,
    manifest: &BundleManifest,
    steps: Option<u64>,
    found: &mut Vec<Contradiction>,
) {
    let calls = manifest
        .steps
        .iter()
        .filter(|s| s.action == ActionKind::Call && s.pass.is_some())
        .count() as u64;
    let passed = manifest
        .steps
        .iter()
        .filter(|s| s.action == ActionKind::Call && s.pass == Some(true))
        .count() as u64;
    let failing: Vec<String> = manifest
        .steps
        .iter()
        .filter(|s| s.pass == Some(false))
        .map(|s| s.step_id.clone())
        .collect();
    let record = row.record.clone().unwrap_or_default();
    differ(
        found,
        "record.receipt_root",
        &record.receipt_root,
        &Some(manifest.receipt_root.clone()),
    );
    differ(found, "record.calls", &record.calls, &Some(calls));
    differ(found, "record.passed", &record.passed, &Some(passed));
    differ(
        found,
        "record.failed",
        &record.failed,
        &Some(calls - passed),
    );
    differ(
        found,
        "record.failing_steps",
        &record.failing_steps,
        &Some(failing),
    );
    differ(
        found,
        "record.stopped_at",
        &record.stopped_at,
        &manifest.stopped.as_ref().map(|s| s.step_id.clone()),
    );
    differ(found, "spent.steps", &row.spent.steps, &steps);
    differ(
        found,
        "spent.kernel_evaluations",
        &row.spent.kernel_evaluations,
        &Some(calls),
    );
    compare_checks(
        &row.oracle_checks,
        &bundle_checks(manifest),
        "the bundle",
        found,
    );
}

/// One oracle check per judged step of the bundle: the step expects its
/// verdict, and whether it got it.
fn bundle_checks(manifest: &BundleManifest) -> Vec<OracleCheck> {
    let checks: Vec<OracleCheck> = manifest
        .steps
        .iter()
        .filter_map(|s| {
            Some(OracleCheck {
                name: format!(
                    "{} expects {}",
                    s.step_id,
                    s.expected.map_or("?", |e| e.as_str())
                ),
                ok: s.pass?,
            })
        })
        .collect();
    checks
}
