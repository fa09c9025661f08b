//! Whether a folder `--out` names is a bundle a run wrote, and so may be
//! replaced by a new one.
//!
//! A folder is replaced only when its `arena.json` is this product's
//! bundle manifest (its `schema_version` is [`BUNDLE_SCHEMA`]) and it holds
//! nothing but the entries a bundle writes: `arena.json` and
//! `receipts.ndjson` as regular files, `policies/` and `inputs/` as
//! folders, and `recording/`, the folder `chio arena record` adds. Anything else (a project folder that happens to hold a file
//! named `arena.json`, a bundle someone added notes to) is refused with the
//! first foreign entry named, and left exactly as it was.

use std::io::{BufReader, Read};
use std::path::Path;

use super::{BUNDLE_SCHEMA, INPUTS_DIR, MANIFEST_FILE, POLICIES_DIR, RECEIPTS_FILE};
use crate::error::ArenaError;
use crate::files::open_regular;
use crate::recording::RECORDING_FOLDER;
use crate::report::printable;

/// The most bytes of `arena.json` read to find its schema: a bundle's
/// manifest is never larger (see [`super::MAX_FILE_BYTES`]).
const MANIFEST_LIMIT: u64 = super::MAX_FILE_BYTES;

/// The one field of the manifest this check reads.
#[derive(serde::Deserialize)]
struct SchemaOnly {
    schema_version: String,
}

fn refused(dir: &Path, cause: String) -> ArenaError {
    ArenaError::Bundle {
        path: printable(&dir.display().to_string()).into_owned(),
        cause: printable(&cause).into_owned(),
    }
}

/// Refuses `dir` unless it is a bundle a run wrote (see the module).
pub(super) fn check_replaceable(dir: &Path) -> Result<(), ArenaError> {
    const ADVICE: &str = "it was left as it was; pass an empty or new --out folder";
    let manifest = dir.join(MANIFEST_FILE);
    let file = open_regular(&manifest).map_err(|e| {
        refused(
            dir,
            format!("{MANIFEST_FILE} cannot be read ({e}); {ADVICE}"),
        )
    })?;
    let schema =
        serde_json::from_reader::<_, SchemaOnly>(BufReader::new(file.take(MANIFEST_LIMIT)))
            .map(|m| m.schema_version)
            .ok();
    if schema.as_deref() != Some(BUNDLE_SCHEMA) {
        return Err(refused(
            dir,
            format!(
                "the folder holds an {MANIFEST_FILE} that is not a bundle manifest (no schema_version \
                 {BUNDLE_SCHEMA}), so it is no bundle a run wrote; {ADVICE}"
            ),
        ));
    }
    let entries = std::fs::read_dir(dir).map_err(|e| refused(dir, e.to_string()))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| refused(dir, e.to_string()))?;
        let kind = entry.file_type().map_err(|e| refused(dir, e.to_string()))?;
        names.push((entry.file_name(), kind));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in names {
        let expected_file = name == MANIFEST_FILE || name == RECEIPTS_FILE;
        let expected_dir = name == POLICIES_DIR || name == INPUTS_DIR || name == RECORDING_FOLDER;
        let fits = (expected_file && kind.is_file()) || (expected_dir && kind.is_dir());
        if !fits {
            let shown = Path::new(&name).display().to_string();
            let what = if expected_file || expected_dir {
                format!("{shown} in a form no bundle writes (a link, or a file for a folder)")
            } else {
                format!("{shown}, which no bundle writes")
            };
            return Err(refused(
                dir,
                format!("the folder holds {what}, so replacing it would delete it; {ADVICE}"),
            ));
        }
    }
    Ok(())
}
