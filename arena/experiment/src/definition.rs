//! Definition hashes: what pins the exact inputs of a task.
//!
//! A definition hash is the SHA-256 of compact ASCII JSON holding the sorted
//! rows `[relative_path, git_mode, sha256_of_bytes]` of every file a task
//! reads. Paths are relative to the definition root, `/`-separated, and
//! sorted by their UTF-8 bytes. Modes are Git's: `120000` for a symbolic
//! link (never followed: the bytes hashed are the link's target path, which
//! is what Git stores as the link's blob), `100755` for a file whose owner
//! execute bit is set, `100644` otherwise. The JSON is what Python's
//! `json.dumps(rows, separators=(",", ":"), ensure_ascii=True)` prints, so
//! the hash can be checked without this code. `docs/campaigns.md` states the
//! byte rules; this module owns their implementation and nothing else.
//! It lives with the matrices, which pin their files with the same rows;
//! campaigns (`chio-campaign`) use it for working-tree definitions and read
//! pinned revisions through `git` themselves.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ExperimentError;

/// The Git mode of a regular file.
pub const MODE_FILE: &str = "100644";
/// The Git mode of an executable file.
pub const MODE_EXECUTABLE: &str = "100755";
/// The Git mode of a symbolic link.
pub const MODE_SYMLINK: &str = "120000";

/// One hashed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefinitionRow {
    /// `/`-separated path relative to the definition root.
    pub path: String,
    /// `100644`, `100755` or `120000`.
    pub mode: String,
    /// Lowercase hex SHA-256 of the file's bytes (a link's target path).
    pub sha256: String,
}

/// A task's definition: its rows and their hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// Lowercase hex SHA-256 of the rows' compact ASCII JSON.
    pub sha256: String,
    /// How many rows (files) were hashed.
    pub files: usize,
    /// The rows, sorted by path.
    pub rows: Vec<DefinitionRow>,
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Appends `text` as a JSON string with every non-ASCII character escaped,
/// exactly as Python's `json.dumps(..., ensure_ascii=True)` does.
fn push_ascii_json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e && (c as u32) != 0x7f => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The compact ASCII JSON of sorted rows, the bytes the hash is taken of.
pub fn rows_json(rows: &[DefinitionRow]) -> String {
    let mut out = String::from("[");
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        push_ascii_json_string(&mut out, &row.path);
        out.push(',');
        push_ascii_json_string(&mut out, &row.mode);
        out.push(',');
        push_ascii_json_string(&mut out, &row.sha256);
        out.push(']');
    }
    out.push(']');
    out
}

/// Resolves `.` and `..` lexically, checks that `relative` stays inside the
/// root and returns its `/` form.
pub fn normalise(relative: &Path) -> Result<String, ExperimentError> {
    let mut parts = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => {
                parts.push(
                    part.to_str()
                        .ok_or_else(|| ExperimentError::DefinitionPath {
                            path: relative.to_string_lossy().into_owned(),
                            reason: "the name is not UTF-8".to_string(),
                        })?,
                )
            }
            Component::CurDir => {}
            Component::ParentDir if parts.pop().is_some() => {}
            _ => {
                return Err(ExperimentError::DefinitionPath {
                    path: relative.to_string_lossy().into_owned(),
                    reason: "the path leaves the definition root".to_string(),
                })
            }
        }
    }
    if parts.is_empty() {
        return Err(ExperimentError::DefinitionPath {
            path: relative.to_string_lossy().into_owned(),
            reason: "the path names the root itself".to_string(),
        });
    }
    Ok(parts.join("/"))
}

fn unreadable(path: &str, e: &std::io::Error) -> ExperimentError {
    ExperimentError::DefinitionPath {
        path: path.to_string(),
        reason: e.kind().to_string(),
    }
}

/// Where the link at `full` leads, relative to `root` and `/`-joined, when
/// that is below `root`.
fn within_root(root: &Path, full: &Path) -> Option<String> {
    let real = full.canonicalize().ok()?;
    let root = root.canonicalize().ok()?;
    let rel = real.strip_prefix(&root).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_str().map(str::to_string))
        .collect::<Option<_>>()?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Adds the row of `rel` (a file or link) or, for a folder, of everything
/// below it. Folders are walked; a link is kept as its target's text, and
/// what it leads to below the root is added as well.
fn collect(
    root: &Path,
    rel: &str,
    out: &mut BTreeMap<String, DefinitionRow>,
) -> Result<(), ExperimentError> {
    let full = root.join(rel);
    let meta = std::fs::symlink_metadata(&full).map_err(|e| unreadable(rel, &e))?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        let target = std::fs::read_link(&full).map_err(|e| unreadable(rel, &e))?;
        let target = target
            .to_str()
            .ok_or_else(|| ExperimentError::DefinitionPath {
                path: rel.to_string(),
                reason: "the link's target is not UTF-8".to_string(),
            })?;
        out.insert(
            rel.to_string(),
            DefinitionRow {
                path: rel.to_string(),
                mode: MODE_SYMLINK.to_string(),
                sha256: sha256_hex(target.as_bytes()),
            },
        );
        // A task reads what the link leads to, so the definition covers
        // that too when it lies below the root (the loader refuses a link
        // that leaves it): a change behind an unchanged link is a drift.
        if let Some(behind) = within_root(root, &full) {
            if !out.contains_key(&behind) {
                collect(root, &behind, out)?;
            }
        }
    } else if kind.is_dir() {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&full).map_err(|e| unreadable(rel, &e))? {
            let entry = entry.map_err(|e| unreadable(rel, &e))?;
            let name = entry.file_name();
            let name = name
                .to_str()
                .ok_or_else(|| ExperimentError::DefinitionPath {
                    path: format!("{rel}/{}", name.to_string_lossy()),
                    reason: "the name is not UTF-8".to_string(),
                })?;
            names.push(name.to_string());
        }
        // Directory order is the filesystem's; the rows are sorted anyway.
        names.sort();
        for name in names {
            collect(root, &format!("{rel}/{name}"), out)?;
        }
    } else if kind.is_file() {
        let bytes = std::fs::read(&full).map_err(|e| unreadable(rel, &e))?;
        out.insert(
            rel.to_string(),
            DefinitionRow {
                path: rel.to_string(),
                mode: file_mode(&meta).to_string(),
                sha256: sha256_hex(&bytes),
            },
        );
    } else {
        return Err(ExperimentError::DefinitionPath {
            path: rel.to_string(),
            reason: "neither a file, a folder nor a symbolic link".to_string(),
        });
    }
    Ok(())
}

#[cfg(unix)]
fn file_mode(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::PermissionsExt;
    if meta.permissions().mode() & 0o100 != 0 {
        MODE_EXECUTABLE
    } else {
        MODE_FILE
    }
}

#[cfg(not(unix))]
fn file_mode(_meta: &std::fs::Metadata) -> &'static str {
    MODE_FILE
}

/// Hashes the files and folders `paths` (relative to `root`) as one definition.
pub fn definition_hash(root: &Path, paths: &[PathBuf]) -> Result<Definition, ExperimentError> {
    let mut rows = BTreeMap::new();
    for path in paths {
        let rel = normalise(path)?;
        collect(root, &rel, &mut rows)?;
    }
    // BTreeMap<String, _> iterates in byte order of the UTF-8 paths.
    let rows: Vec<DefinitionRow> = rows.into_values().collect();
    Ok(Definition {
        sha256: sha256_hex(rows_json(&rows).as_bytes()),
        files: rows.len(),
        rows,
    })
}

/// The files a run of `scenario` reads, relative to the definition root:
/// the scenario file (`scenario_file`, itself root-relative), each workspace
/// server's fixture folder, and each agent's prompt and adversary corpus
/// when they exist.
pub fn scenario_input_paths(scenario: &chio_arena::Scenario, scenario_file: &Path) -> Vec<PathBuf> {
    let dir = scenario_file.parent().unwrap_or(Path::new(""));
    let mut paths = vec![scenario_file.to_path_buf()];
    let file = scenario.file();
    for server in &file.servers {
        if let Some(fixtures) = &server.fixtures {
            paths.push(dir.join(fixtures));
        }
    }
    let referenced = file
        .agents
        .iter()
        .map(|a| a.seed_prompt_ref.as_str())
        .chain(file.adversaries.iter().map(|a| a.seed_ref.as_str()));
    for reference in referenced {
        let relative = Path::new(reference);
        if relative.is_relative() && scenario.base_dir().join(relative).exists() {
            paths.push(dir.join(relative));
        }
    }
    paths
}

/// The path of `path` relative to `root`, both made absolute against the
/// working folder and cleaned lexically (links are not resolved); refused
/// when `path` is not below `root`.
pub fn relative_to(root: &Path, path: &Path) -> Result<PathBuf, ExperimentError> {
    let clean = |p: &Path| -> Result<PathBuf, ExperimentError> {
        let absolute = std::path::absolute(p).map_err(|e| unreadable(&p.to_string_lossy(), &e))?;
        let mut out = PathBuf::new();
        for component in absolute.components() {
            match component {
                Component::ParentDir => {
                    out.pop();
                }
                Component::CurDir => {}
                other => out.push(other.as_os_str()),
            }
        }
        Ok(out)
    };
    let root_clean = clean(root)?;
    let path_clean = clean(path)?;
    path_clean
        .strip_prefix(&root_clean)
        .map(Path::to_path_buf)
        .map_err(|_| ExperimentError::DefinitionPath {
            path: path.to_string_lossy().into_owned(),
            reason: "the file is outside the definition root".to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // The row JSON matches Python's json.dumps(ensure_ascii=True) for non-ASCII, quotes and controls.
    #[test]
    fn rows_json_is_python_compact_ascii() {
        let rows = vec![DefinitionRow {
            path: "d\u{e9}j\u{e0}/\"q\"\t\u{1f600}".to_string(),
            mode: MODE_FILE.to_string(),
            sha256: "ab".to_string(),
        }];
        assert_eq!(
            rows_json(&rows),
            "[[\"d\\u00e9j\\u00e0/\\\"q\\\"\\t\\ud83d\\ude00\",\"100644\",\"ab\"]]"
        );
    }

    // A path that climbs out of the root is refused before anything is read.
    #[test]
    fn escaping_paths_are_refused() {
        let err = definition_hash(Path::new("."), &[PathBuf::from("a/../../x")]).unwrap_err();
        assert_eq!(err.code(), "CHIO-CAMPAIGN-DEFINITION-PATH");
        assert_eq!(normalise(Path::new("a/./b/../c")).unwrap(), "a/c");
    }
}
