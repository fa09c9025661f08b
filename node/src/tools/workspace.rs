//! The workspace server's calls: reading, writing, deleting and listing the
//! files it keeps, each stored file with the labels the writing call carried
//! (labels at rest, see the parent module), and a listing labelled with
//! every file it names.

use std::collections::{BTreeMap, BTreeSet};

use chio_kernel::glob::Glob;
use chio_kernel::label::Label;
use chio_kernel::path::normalize_path;
use serde_json::{json, Value};

use super::{glob_level, unknown_tool, Stored, ToolResult};

/// Who writes what a server keeps: an admitted call, with the labels it
/// carried, or a fixture edit outside any call, which keeps the labels of
/// the item it replaces.
#[derive(Debug, Clone, Copy)]
pub(super) enum Writer<'a> {
    Call(&'a BTreeSet<String>),
    Edit,
}

impl Writer<'_> {
    /// The labels an item written over `previous` keeps.
    pub(super) fn labels(self, previous: Option<&Stored>) -> BTreeSet<String> {
        match self {
            Writer::Call(carried) => carried.clone(),
            Writer::Edit => previous.map(|p| p.labels.clone()).unwrap_or_default(),
        }
    }
}

pub(super) fn workspace_call(
    root: &str,
    files: &mut BTreeMap<String, Stored>,
    labels: &[(Glob, Label)],
    tool: &str,
    arguments: &Value,
    writer: Writer<'_>,
) -> ToolResult {
    let raw = match arguments.get("path").and_then(Value::as_str) {
        Some(p) => p,
        None => return ToolResult::failed(format!("{tool} needs a string argument path")),
    };
    let path = match normalize_path(raw) {
        Ok(p) => p,
        Err(problem) => return ToolResult::failed(problem.reason(raw).to_string()),
    };
    if !chio_kernel::path::is_under(&path, root) {
        return ToolResult::failed(format!("path {path} is outside the workspace root {root}"));
    }
    match tool {
        "read_file" => match files.get(&path) {
            Some(stored) => ToolResult {
                content: json!({"ok": true, "path": path, "content": stored.content}),
                performed: true,
                received: true,
                integrity: stored.integrity(),
                label: glob_level(labels, &path).max(stored.level()),
            },
            None => ToolResult::failed(format!("no such file {path}")),
        },
        "write_file" => {
            let content = match arguments.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            let bytes = content.len();
            if bytes > chio_arena::fixtures::MAX_WORKSPACE_FILE_BYTES {
                return ToolResult::failed(format!(
                    "the content is {bytes} bytes, over the {} a workspace file holds",
                    chio_arena::fixtures::MAX_WORKSPACE_FILE_BYTES
                ));
            }
            let labels = writer.labels(files.get(&path));
            files.insert(path.clone(), Stored { content, labels });
            ToolResult::plain(json!({"ok": true, "path": path, "bytes": bytes}))
        }
        // The answer tells that the file was there, which its labels cover,
        // as a read's would: those it keeps and those the globs give it.
        "delete_file" => match files.remove(&path) {
            Some(removed) => ToolResult {
                content: json!({"ok": true, "path": path}),
                label: glob_level(labels, &path).max(removed.level()),
                integrity: removed.integrity(),
                performed: true,
                received: true,
            },
            None => ToolResult::failed(format!("no such file {path}")),
        },
        "list_dir" => list_dir(&path, files, labels),
        other => unknown_tool(other),
    }
}

/// Lists a workspace folder: the names under it, labelled with every file
/// the listing names.
fn list_dir(path: &str, files: &BTreeMap<String, Stored>, labels: &[(Glob, Label)]) -> ToolResult {
    let prefix = if path.ends_with('/') {
        path.to_string()
    } else {
        format!("{path}/")
    };
    let mut entries: BTreeSet<String> = BTreeSet::new();
    // A name is what a listing reveals, and whoever wrote a file
    // chose its name: the listing carries the labels of every file
    // it names, as a read of each would.
    let mut named = Stored::seeded(String::new());
    for (name, stored) in files.iter() {
        if let Some(rest) = name.strip_prefix(&prefix) {
            named.labels.extend(stored.labels.iter().cloned());
            let first = rest.split('/').next().unwrap_or(rest);
            if rest.contains('/') {
                entries.insert(format!("{first}/"));
            } else {
                entries.insert(first.to_string());
            }
        }
    }
    // A folder it names was made by writing the files below it, whose
    // writers chose its name: the globs of every file below count too.
    let label = files
        .keys()
        .filter(|name| name.starts_with(&prefix))
        .cloned()
        .chain(entries.iter().map(|e| format!("{prefix}{e}")))
        .filter_map(|place| glob_level(labels, &place))
        .chain(named.level())
        .max();
    ToolResult {
        content: json!({"ok": true, "path": path, "entries": entries}),
        label,
        integrity: named.integrity(),
        performed: true,
        received: true,
    }
}
