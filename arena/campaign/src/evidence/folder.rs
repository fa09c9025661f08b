//! An evolution's or matrix's output folder as evidence: its Merkle root,
//! and for a matrix the synthesis the row's record names.

use std::path::Path;

use serde_json::Value;

use super::{compare_checks, contradiction, Contradiction, RefCheck, SYNTHESIS_FILE};
use crate::ledger::{derive, RecordEvidence, Spent, MATRIX_RECORD};
use crate::TaskKind;
use chio_experiment::definition::sha256_hex;
use chio_experiment::load_matrix;

/// Checks an evolution's or matrix's output folder: its root, and for a
/// matrix the synthesis the row's record names.
pub(super) fn check_folder(checked: &RefCheck<'_>, found: &mut Vec<Contradiction>) {
    let RefCheck {
        task,
        row,
        dir,
        root,
        ..
    } = *checked;
    if let Some(root) = root {
        let actual = folder_merkle_root(dir);
        if actual.as_deref() != Some(root) {
            found.push(contradiction(
                checked.at("merkle_root"),
                format!(
                    "{root} is not the Merkle root of the files now in {} ({})",
                    dir.display(),
                    actual.as_deref().unwrap_or("it holds no file")
                ),
            ));
        }
    }
    if task.kind == TaskKind::Evolve {
        super::evolution::check_evolution(checked, found);
        return;
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
    let (outcome, evidence, checks, spent) =
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
    compare_spent(&row.spent, &spent, found);
    if let Err(why) = derived_again(checked, &bytes) {
        found.push(contradiction("record", why));
    }
}

/// Whether `bytes` (the folder's synthesis) is what the task's matrix
/// derives from the run records beside it under the load the synthesis
/// states (`chio_experiment::synthesis::derived_again`, the check
/// `chio report` of the folder applies too); the reason when it is not, or
/// cannot be told.
fn derived_again(checked: &RefCheck<'_>, bytes: &[u8]) -> Result<(), String> {
    let file = checked.base.join(&checked.task.file);
    let matrix = load_matrix(&file)
        .map_err(|e| format!("{SYNTHESIS_FILE} cannot be re-derived: {}", e.summary()))?;
    chio_experiment::synthesis::derived_again(&matrix, &checked.task.file, checked.dir, bytes)
}

/// What the matrix spent is the synthesis's, which the limits judge.
fn compare_spent(recorded: &Spent, stated: &Spent, found: &mut Vec<Contradiction>) {
    for (field, recorded, stated) in [
        ("spent.steps", recorded.steps, stated.steps),
        (
            "spent.kernel_evaluations",
            recorded.kernel_evaluations,
            stated.kernel_evaluations,
        ),
    ] {
        if stated.is_some() && recorded != stated {
            let show = |v: Option<u64>| v.map_or("nothing".to_string(), |v| v.to_string());
            found.push(contradiction(
                field,
                format!(
                    "the row records {}, {SYNTHESIS_FILE} {}",
                    show(recorded),
                    show(stated)
                ),
            ));
        }
    }
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
