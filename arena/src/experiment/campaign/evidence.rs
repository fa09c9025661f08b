//! What a row's evidence says of it: the report opens every evidence
//! reference an attempted row names and asks the repository about the
//! source revision it claims, so a row edited by hand, or pointed at other
//! evidence, is never reported as more than its evidence supports.
//!
//! For each attempted row (`DEFERRED` and `SKIPPED` rows carry no claim):
//!
//! - **Source revision.** A row's `source_revision` must be a full commit id
//!   the repository holding the campaign's root has ([`git::commit_exists`]).
//!   When the root is not in a Git checkout, the claim cannot be checked,
//!   and an unchecked claim counts as contradicted.
//! - **A scenario's bundle** (a run's own bundle, or the bundle a fixture
//!   replays): the folder must exist and hold a readable bundle whose
//!   receipts hash to its manifest's receipt root, whose scenario file is
//!   the task's, and whose receipt root is the reference's Merkle root. For
//!   a run, the bundle also decides the native outcome (`completed` with no
//!   mismatch is `passed`, with one `failed`; `stopped`; `failed` is
//!   `infrastructure-failure`), the calls, passes and failures, the failing
//!   steps, the stop step, the receipt root, the oracle checks and the steps
//!   and kernel evaluations spent, each of which the row must repeat. For a
//!   replay, the replayed bundle's step counts must match what the row
//!   spent; the replay's own verdict is not rerun (the report runs nothing).
//! - **An evolution's or matrix's output folder**: the folder must exist
//!   and its files must hash to the reference's Merkle root (the folder
//!   root [`folder_merkle_root`] defines). A matrix's `synthesis.json` there
//!   must be the record the row names (its SHA-256), and the outcome,
//!   counts and checks read from it must be the row's.
//! - **One attempt, one piece of evidence.** Two rows of live runs,
//!   evolutions or matrices must not name the same folder: a folder holds
//!   one attempt's evidence, so both rows are contradicted (fixture replays
//!   may name the bundle of the run they replay). This needs the whole
//!   ledger ([`check_ledger_evidence`]); the rest is per row
//!   ([`check_row_evidence`]).
//!
//! A run, replay or evolution record always names its folder, so such a
//! row with no evidence reference is contradicted. A reference without a
//! Merkle root claims nothing the report can check beyond what the row's
//! record states; such a pass is already not a
//! verified delivery ([`super::portfolio::evidence_gaps`]). A relative
//! evidence path is read from the folder the report runs in, as the tool
//! wrote it. Every disagreement is a [`Contradiction`] naming the row's
//! field and the reason; the report marks the row contradicted and blocks
//! its section's comparison.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::definition::{normalise, sha256_hex};
use super::git;
use super::ledger::{
    derive, is_unrun, Ledger, LedgerRow, OracleCheck, RecordEvidence, EVOLVE_RECORD, MATRIX_RECORD,
    REPLAY_RECORD, RUN_RECORD,
};
use super::{Campaign, Evidence, Task, TaskKind};
use crate::bundle::{BundleManifest, BundleStatus, MANIFEST_FILE, RECEIPTS_FILE};
use crate::scenario::ActionKind;

/// The file of a matrix's output folder that holds its synthesis.
pub const SYNTHESIS_FILE: &str = "synthesis.json";

/// One field of a row its evidence does not bear out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contradiction {
    /// The row's field, such as `native_outcome` or `evidence_refs[0].merkle_root`.
    pub field: String,
    /// What the evidence says instead.
    pub reason: String,
}

fn contradiction(field: impl Into<String>, reason: impl Into<String>) -> Contradiction {
    Contradiction {
        field: field.into(),
        reason: reason.into(),
    }
}

/// The contradictions of every row of a checked ledger, by schedule id;
/// rows whose evidence bears them out are absent.
pub fn check_ledger_evidence(
    campaign: &Campaign,
    ledger: &Ledger,
) -> BTreeMap<String, Vec<Contradiction>> {
    let mut revisions = BTreeMap::new();
    let mut found: BTreeMap<String, Vec<Contradiction>> = BTreeMap::new();
    let mut claims: BTreeMap<PathBuf, Vec<(&str, usize, &str)>> = BTreeMap::new();
    for row in &ledger.rows {
        let list = row_contradictions(campaign, row, &mut revisions);
        if !list.is_empty() {
            found.insert(row.schedule_id.clone(), list);
        }
        if is_unrun(&row.native_outcome) || row.evidence != Evidence::Live {
            continue;
        }
        for (i, reference) in row.evidence_refs.iter().enumerate() {
            let path = Path::new(&reference.path);
            let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
            claims.entry(key).or_default().push((
                row.schedule_id.as_str(),
                i,
                reference.path.as_str(),
            ));
        }
    }
    for claimants in claims.values() {
        let mut ids: Vec<&str> = claimants.iter().map(|(id, _, _)| *id).collect();
        ids.dedup();
        if ids.len() < 2 {
            continue;
        }
        for (id, i, path) in claimants {
            let others: Vec<&str> = ids.iter().copied().filter(|o| o != id).collect();
            found.entry(id.to_string()).or_default().push(contradiction(
                format!("evidence_refs[{i}].path"),
                format!(
                    "{path} is also the evidence of {}; one folder backs one attempt",
                    others.join(", ")
                ),
            ));
        }
    }
    found
}

/// The contradictions of one row of a checked ledger.
pub fn check_row_evidence(campaign: &Campaign, row: &LedgerRow) -> Vec<Contradiction> {
    row_contradictions(campaign, row, &mut BTreeMap::new())
}

/// One row's contradictions; `revisions` caches what the repository said
/// of each revision.
fn row_contradictions(
    campaign: &Campaign,
    row: &LedgerRow,
    revisions: &mut BTreeMap<String, Result<bool, String>>,
) -> Vec<Contradiction> {
    let mut found = Vec::new();
    if is_unrun(&row.native_outcome) {
        return found;
    }
    let Some(attempt) = campaign.attempt(&row.schedule_id) else {
        return found;
    };
    let task = &campaign.tasks[attempt.task];
    if let Some(revision) = &row.source_revision {
        let answer = revisions
            .entry(revision.clone())
            .or_insert_with(|| git::commit_exists(&campaign.root, revision));
        match answer {
            Ok(true) => {}
            Ok(false) => found.push(contradiction(
                "source_revision",
                format!("{revision} is not a commit the repository at the campaign root holds"),
            )),
            Err(why) => found.push(contradiction(
                "source_revision",
                format!("{revision} cannot be checked: {why}"),
            )),
        }
    }
    let schema = row.record.as_ref().map(|r| r.schema_version.as_str());
    if row.evidence_refs.is_empty() {
        if let Some(schema) =
            schema.filter(|s| [RUN_RECORD, REPLAY_RECORD, EVOLVE_RECORD].contains(s))
        {
            found.push(contradiction(
                "evidence_refs",
                format!("the row names no evidence, and a {schema} record always names its folder"),
            ));
        }
    }
    for (i, reference) in row.evidence_refs.iter().enumerate() {
        let at = |key: &str| format!("evidence_refs[{i}].{key}");
        let dir = Path::new(&reference.path);
        if !dir.is_dir() {
            if reference.merkle_root.is_some() {
                let what = match task.kind {
                    TaskKind::Scenario => "bundle",
                    _ => "output folder",
                };
                found.push(contradiction(
                    at("path"),
                    format!("no {what} at {}", reference.path),
                ));
            }
            continue;
        }
        match task.kind {
            TaskKind::Scenario => check_bundle(
                task,
                row,
                dir,
                reference.merkle_root.as_deref(),
                &at,
                &mut found,
            ),
            _ => check_folder(
                task,
                row,
                dir,
                reference.merkle_root.as_deref(),
                &at,
                &mut found,
            ),
        }
    }
    found
}

/// Reads a bundle's manifest and checks its receipts against its root.
fn read_bundle(dir: &Path) -> Result<BundleManifest, String> {
    let text = std::fs::read_to_string(dir.join(MANIFEST_FILE))
        .map_err(|e| format!("it holds no readable {MANIFEST_FILE} ({})", e.kind()))?;
    let manifest: BundleManifest = serde_json::from_str(&text)
        .map_err(|e| format!("its {MANIFEST_FILE} is not a bundle manifest ({e})"))?;
    let receipts = std::fs::read_to_string(dir.join(RECEIPTS_FILE))
        .map_err(|e| format!("it holds no readable {RECEIPTS_FILE} ({})", e.kind()))?;
    let mut ids = Vec::new();
    for line in receipts.lines() {
        let value: Value = serde_json::from_str(line)
            .map_err(|_| format!("a line of its {RECEIPTS_FILE} is not a receipt"))?;
        let id = value
            .get("id")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("a receipt of its {RECEIPTS_FILE} has no id"))?;
        ids.push(id.to_string());
    }
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let root = chio_kernel::receipt::merkle_root_of_ids(&refs);
    if root != manifest.receipt_root || ids.len() as u64 != manifest.receipt_count {
        return Err(format!(
            "its {} receipt(s) hash to {root}, not to the receipt root {} its manifest records",
            ids.len(),
            manifest.receipt_root
        ));
    }
    Ok(manifest)
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
/// reference's root, and for a run every field the row copied from it.
fn check_bundle(
    task: &Task,
    row: &LedgerRow,
    dir: &Path,
    root: Option<&str>,
    at: &dyn Fn(&str) -> String,
    found: &mut Vec<Contradiction>,
) {
    let manifest = match read_bundle(dir) {
        Ok(manifest) => manifest,
        Err(why) => {
            found.push(contradiction(
                at("path"),
                format!("{} is not a sound bundle: {why}", dir.display()),
            ));
            return;
        }
    };
    let scenario_hash = normalise(Path::new(&task.file)).ok().and_then(|file| {
        task.definition
            .rows
            .iter()
            .find(|r| r.path == file)
            .map(|r| r.sha256.clone())
    });
    if let Some(expected) = scenario_hash.filter(|h| *h != manifest.scenario_sha256) {
        found.push(contradiction(
            at("path"),
            format!(
                "the bundle ran a scenario file with SHA-256 {}, not the task's {} ({expected})",
                manifest.scenario_sha256, task.file
            ),
        ));
    }
    if let Some(root) = root.filter(|r| *r != manifest.receipt_root) {
        found.push(contradiction(
            at("merkle_root"),
            format!(
                "{root} is not the bundle's receipt root {}",
                manifest.receipt_root
            ),
        ));
    }
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
        return;
    }
    let outcome = run_outcome(&manifest);
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
    compare_checks(&row.oracle_checks, &checks, "the bundle", found);
}

/// Names the first oracle check the row holds that the evidence does not.
fn compare_checks(
    recorded: &[OracleCheck],
    evidence: &[OracleCheck],
    source: &str,
    found: &mut Vec<Contradiction>,
) {
    if recorded == evidence {
        return;
    }
    let at = recorded
        .iter()
        .zip(evidence)
        .position(|(a, b)| a != b)
        .unwrap_or(recorded.len().min(evidence.len()));
    let show = |check: Option<&OracleCheck>| match check {
        Some(c) => format!("{:?} {}", c.name, if c.ok { "held" } else { "failed" }),
        None => "no check".to_string(),
    };
    found.push(contradiction(
        format!("oracle_checks[{at}]"),
        format!(
            "the row records {}, {source} {} ({} check(s) recorded, {} in the evidence)",
            show(recorded.get(at)),
            show(evidence.get(at)),
            recorded.len(),
            evidence.len()
        ),
    ));
}

/// Checks an evolution's or matrix's output folder: its root, and for a
/// matrix the synthesis the row's record names.
fn check_folder(
    task: &Task,
    row: &LedgerRow,
    dir: &Path,
    root: Option<&str>,
    at: &dyn Fn(&str) -> String,
    found: &mut Vec<Contradiction>,
) {
    if let Some(root) = root {
        let actual = folder_merkle_root(dir);
        if actual.as_deref() != Some(root) {
            found.push(contradiction(
                at("merkle_root"),
                format!(
                    "{root} is not the Merkle root of the files now in {} ({})",
                    dir.display(),
                    actual.as_deref().unwrap_or("it holds no file")
                ),
            ));
        }
    }
    let Some(record) = row
        .record
        .as_ref()
        .filter(|r| r.schema_version == MATRIX_RECORD)
    else {
        return;
    };
    let path = dir.join(SYNTHESIS_FILE);
    let Ok(bytes) = std::fs::read(&path) else {
        found.push(contradiction(
            "record.sha256",
            format!("{} holds no {SYNTHESIS_FILE}", dir.display()),
        ));
        return;
    };
    let digest = sha256_hex(&bytes);
    if digest != record.sha256 {
        found.push(contradiction(
            "record.sha256",
            format!(
                "{} is not the SHA-256 of {} ({digest})",
                record.sha256,
                path.display()
            ),
        ));
        return;
    }
    let (outcome, evidence, checks) =
        match derive(&row.schedule_id, &path.display().to_string(), &bytes, task) {
            Ok(derived) => derived,
            Err(e) => {
                found.push(contradiction("record", e.summary()));
                return;
            }
        };
    if outcome != row.native_outcome {
        found.push(contradiction(
            "native_outcome",
            format!(
                "the row records {:?}, {SYNTHESIS_FILE} {outcome:?}",
                row.native_outcome
            ),
        ));
    }
    compare_records(record, &evidence, found);
    compare_checks(&row.oracle_checks, &checks, SYNTHESIS_FILE, found);
}

/// Names every field of the row's record that the record's bytes do not state.
fn compare_records(
    recorded: &RecordEvidence,
    evidence: &RecordEvidence,
    found: &mut Vec<Contradiction>,
) {
    let as_map = |r: &RecordEvidence| match serde_json::to_value(r) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (recorded, evidence) = (as_map(recorded), as_map(evidence));
    let mut keys: Vec<&String> = recorded.keys().chain(evidence.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let (a, b) = (recorded.get(key), evidence.get(key));
        if a != b {
            let show = |v: Option<&Value>| v.map_or("nothing".to_string(), Value::to_string);
            found.push(contradiction(
                format!("record.{key}"),
                format!("the row records {}, {SYNTHESIS_FILE} {}", show(a), show(b)),
            ));
        }
    }
}

/// A Merkle root over every file below `dir` (links are not followed):
/// leaves are SHA-256 of the `/`-joined relative path, a zero byte and the
/// file's bytes, in path order; each level hashes pairs of 32-byte digests
/// left then right, an odd last digest moving up unchanged. Null for a
/// folder with no file.
pub fn folder_merkle_root(dir: &Path) -> Option<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                walk(base, &path, out);
            } else if kind.is_file() {
                let Ok(relative) = path.strip_prefix(base) else {
                    continue;
                };
                let name = relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                if let Ok(bytes) = std::fs::read(&path) {
                    out.push((name, bytes));
                }
            }
        }
    }
    use sha2::{Digest, Sha256};
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.sort();
    let mut level: Vec<Vec<u8>> = files
        .iter()
        .map(|(name, bytes)| {
            let mut h = Sha256::new();
            h.update(name.as_bytes());
            h.update([0u8]);
            h.update(bytes);
            h.finalize().to_vec()
        })
        .collect();
    if level.is_empty() {
        return None;
    }
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|pair| match pair {
                [left, right] => {
                    let mut h = Sha256::new();
                    h.update(left);
                    h.update(right);
                    h.finalize().to_vec()
                }
                [one] => one.clone(),
                _ => Vec::new(),
            })
            .collect();
    }
    Some(hex::encode(&level[0]))
}
