//! Comparing two runs of one scenario: step by step (`chio arena diff`,
//! replay's drift), field by field of the manifest, and line by line of
//! the receipt log (replay's evidence check).

use serde::{Deserialize, Serialize};

use super::{BundleManifest, StepOutcome};

/// The first difference between two runs of (nominally) one scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepDrift {
    /// The step index in dispatch order.
    pub index: usize,
    /// The step id (of the first run when the ids differ).
    pub step_id: String,
    /// What differs: `verdict`, `receipt`, `step` (another step at this
    /// position) or `missing` (one run ended before this step).
    pub what: String,
    /// The first run's verdict, when it has the step.
    pub left: Option<StepOutcome>,
    /// The second run's verdict, when it has the step.
    pub right: Option<StepOutcome>,
    /// The inputs that changed, in checklist order; the first is the one
    /// to investigate first.
    pub changed_inputs: Vec<String>,
}

/// Compares two runs step by step and returns every differing step, first
/// one first. Two runs with no drift give an empty list.
pub fn compare_runs(left: &BundleManifest, right: &BundleManifest) -> Vec<StepDrift> {
    let mut drifts = Vec::new();
    let n = left.steps.len().max(right.steps.len());
    for index in 0..n {
        match (left.steps.get(index), right.steps.get(index)) {
            (Some(a), Some(b)) => {
                let what = if a.step_id != b.step_id {
                    Some("step")
                } else if a.actual != b.actual || a.verdict != b.verdict {
                    Some("verdict")
                } else if a.receipt_id != b.receipt_id || a.detail != b.detail {
                    Some("receipt")
                } else {
                    None
                };
                if let Some(what) = what {
                    let mut changed: Vec<String> = a
                        .inputs
                        .differences(&b.inputs)
                        .into_iter()
                        .map(str::to_string)
                        .collect();
                    if what == "step" && !changed.iter().any(|c| c == "invocation") {
                        changed.insert(0, "invocation".to_string());
                    }
                    drifts.push(StepDrift {
                        index,
                        step_id: a.step_id.clone(),
                        what: what.to_string(),
                        left: a.actual,
                        right: b.actual,
                        changed_inputs: changed,
                    });
                }
            }
            (Some(a), None) => drifts.push(StepDrift {
                index,
                step_id: a.step_id.clone(),
                what: "missing".to_string(),
                left: a.actual,
                right: None,
                changed_inputs: Vec::new(),
            }),
            (None, Some(b)) => drifts.push(StepDrift {
                index,
                step_id: b.step_id.clone(),
                what: "missing".to_string(),
                left: None,
                right: b.actual,
                changed_inputs: Vec::new(),
            }),
            (None, None) => {}
        }
    }
    drifts
}

/// Every place where two manifests differ, as a field of `arena.json`: a
/// top-level field by name (`receipt_root`), a step's by its index and
/// name (`steps[3].expected`), and `steps` when their numbers differ.
/// Empty when they are the same manifest.
pub fn manifest_differences(left: &BundleManifest, right: &BundleManifest) -> Vec<String> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) =
        (serde_json::to_value(left), serde_json::to_value(right))
    else {
        return vec!["arena.json".to_string()];
    };
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut out = Vec::new();
    for key in keys {
        match (a.get(key), b.get(key)) {
            (Some(serde_json::Value::Array(x)), Some(serde_json::Value::Array(y)))
                if key == "steps" && x.len() == y.len() =>
            {
                for (i, (s, t)) in x.iter().zip(y).enumerate() {
                    if s == t {
                        continue;
                    }
                    let (Some(s), Some(t)) = (s.as_object(), t.as_object()) else {
                        out.push(format!("steps[{i}]"));
                        continue;
                    };
                    let fields: std::collections::BTreeSet<&String> =
                        s.keys().chain(t.keys()).collect();
                    out.extend(
                        fields
                            .into_iter()
                            .filter(|f| s.get(*f) != t.get(*f))
                            .map(|f| format!("steps[{i}].{f}")),
                    );
                }
            }
            (x, y) if x != y => out.push(key.clone()),
            _ => {}
        }
    }
    out
}

/// Where two receipt logs first differ: the 1-based line, or both counts
/// when one is a prefix of the other; `None` when they are the same.
pub fn receipts_difference(left: &[String], right: &[String]) -> Option<String> {
    match left.iter().zip(right).position(|(a, b)| a != b) {
        Some(i) => Some(format!("receipts.ndjson line {}", i + 1)),
        None if left.len() != right.len() => Some(format!(
            "receipts.ndjson ({} receipts against {})",
            left.len(),
            right.len()
        )),
        None => None,
    }
}

/// Every file below `dir`, by its `/`-joined path relative to `dir`, with
/// its bytes; a folder is listed as `<path>/` with none, and a symbolic link
/// with the text of its target, so a folder or link planted in a bundle is
/// a difference too. Only regular files are read, each up to
/// [`super::MAX_FILE_BYTES`]: an unreadable or longer one, or anything else
/// (a FIFO, a device), is listed with no bytes, which matches nothing.
pub fn bundle_files(dir: &std::path::Path) -> std::collections::BTreeMap<String, Option<Vec<u8>>> {
    fn walk(
        base: &std::path::Path,
        dir: &std::path::Path,
        out: &mut std::collections::BTreeMap<String, Option<Vec<u8>>>,
    ) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path
                .strip_prefix(base)
                .map(|rel| {
                    rel.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .unwrap_or_default();
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => {
                    // A folder is an entry too, so an empty one planted in
                    // a bundle is a difference.
                    out.insert(format!("{name}/"), Some(Vec::new()));
                    walk(base, &path, out);
                }
                Ok(kind) if kind.is_symlink() => {
                    let target = std::fs::read_link(&path).ok();
                    let text = target.map(|t| format!("-> {}", t.display()).into_bytes());
                    out.insert(name, text);
                }
                // Only a regular file is read: a FIFO or a device would
                // block the read, and is no file a run writes.
                // A file over the bound is listed with no bytes too.
                Ok(kind) if kind.is_file() => {
                    let bytes = super::read_regular(&path, super::MAX_FILE_BYTES).ok();
                    out.insert(name, bytes);
                }
                _ => {
                    out.insert(name, None);
                }
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Every file where two bundle folders are not the same bytes, as a place
/// of the bundle: `file <path>` for a file whose bytes differ, `file <path>
/// (only in <side>)` for one only one side holds. A bundle is the same
/// bytes whenever its inputs run again, so any such file is a claim the run
/// does not make: an edited `arena.json` (a key added, the file
/// re-indented), receipts with other line endings, a policy file with a
/// byte more, a file planted beside them. The recording a `chio arena
/// record` bundle keeps beside its inputs (`recording/`) is the one a
/// replayed run keeps among them (`inputs/recording/`), and is compared
/// there. `names` says what each side is (`the bundle`, `the replay`).
pub fn file_differences(
    left: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
    right: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
    names: (&str, &str),
) -> Vec<String> {
    let (left, right) = (recording_among_inputs(left), recording_among_inputs(right));
    let paths: std::collections::BTreeSet<&String> = left.keys().chain(right.keys()).collect();
    let mut out = Vec::new();
    for path in paths {
        match (left.get(path), right.get(path)) {
            (Some(Some(a)), Some(Some(b))) if a == b => {}
            (Some(_), Some(_)) => out.push(format!("file {path}")),
            (Some(_), None) => out.push(format!("file {path} (only in {})", names.0)),
            (None, Some(_)) => out.push(format!("file {path} (only in {})", names.1)),
            (None, None) => {}
        }
    }
    out
}

/// `files` with a recording kept beside the inputs (`recording/<name>`)
/// read where a replayed run keeps it (`inputs/recording/<name>`), when it
/// is not there already ([`world_place`]).
fn recording_among_inputs(
    files: &std::collections::BTreeMap<String, Option<Vec<u8>>>,
) -> std::collections::BTreeMap<String, Option<Vec<u8>>> {
    let among = holds_recording_among_inputs(files.keys());
    files
        .iter()
        .map(|(path, bytes)| (world_place(path, among), bytes.clone()))
        .collect()
}

/// Whether the bundle files `paths` (below the bundle folder) hold a
/// recording among the inputs (`inputs/recording/<name>`), as a replayed
/// run keeps it.
pub(crate) fn holds_recording_among_inputs<'a>(
    paths: impl IntoIterator<Item = &'a String>,
) -> bool {
    let among = format!(
        "{}/{}/",
        super::INPUTS_DIR,
        crate::recording::RECORDING_FOLDER
    );
    paths.into_iter().any(|p| p.starts_with(&among))
}

/// The one mapping of the two layouts of a recording: where the bundle
/// file `path` (below the bundle folder) lies in the world its run read.
/// The recording a `chio arena record --out` bundle keeps beside its inputs
/// (`recording/<name>`) is the one a replayed run keeps among them
/// (`inputs/recording/<name>`), unless `among` (the inputs hold a recording
/// already, and the one beside them is a file of its own); every other
/// path is its own place.
pub(crate) fn world_place(path: &str, among: bool) -> String {
    let beside = format!("{}/", crate::recording::RECORDING_FOLDER);
    match path.strip_prefix(&beside) {
        Some(rest) if !among => format!("{}/{beside}{rest}", super::INPUTS_DIR),
        _ => path.to_string(),
    }
}

/// The two places, below a bundle folder, of the recording file `name`
/// (`<server>.json`): beside the inputs (`recording/<name>`), where
/// `chio arena record --out` writes it, and among them
/// (`inputs/recording/<name>`), where a replayed run keeps it; the second
/// is the first's place in the world its run read ([`world_place`]).
pub fn recording_places(name: &str) -> (String, String) {
    let beside = format!("{}/{name}", crate::recording::RECORDING_FOLDER);
    let among = world_place(&beside, false);
    (beside, among)
}
