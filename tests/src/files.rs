//! Folders for process tests: repository paths, trees of files compared
//! byte for byte, scenario folders written by a test, and the lists of
//! reference scenarios.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A path inside the repository (`""` is its root).
pub fn repo_path(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// Entries of a folder (not recursive).
pub fn entries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{} does not list: {e}", dir.display()))
        .map(|e| e.expect("folder entry").path())
        .collect()
}

/// Every file under `root`, by relative path, with its bytes.
pub fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for path in entries(dir) {
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .expect("an entry lies under its root")
                    .to_string_lossy()
                    .into_owned();
                let bytes = std::fs::read(&path)
                    .unwrap_or_else(|e| panic!("{} does not read: {e}", path.display()));
                out.insert(rel, bytes);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Copies a folder recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        write_file(&to.join(rel), bytes);
    }
}

/// Writes `bytes` to `path`, creating its folder.
fn write_file(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    }
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// Writes a scenario folder: `scenario.toml`, the prompt
/// `prompts/agent.txt` and the fixture `files` (relative path, content).
pub fn write_scenario(dir: &Path, toml: &str, files: &[(&str, &str)]) -> PathBuf {
    write_file(&dir.join("prompts/agent.txt"), "You are a test agent.\n");
    for (path, content) in files {
        write_file(&dir.join(path), content);
    }
    let file = dir.join("scenario.toml");
    write_file(&file, toml);
    file
}

/// The reference scenarios of `scenarios/` that declare a world (or none,
/// with `world == false`), by file stem, sorted.
fn scenarios_with_world(world: bool) -> Vec<String> {
    let mut names: Vec<String> = entries(&repo_path("scenarios"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| {
            chio_arena::load_scenario(p)
                .is_ok_and(|s| s.has_world() == world && !has_mcp_server(&s))
        })
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

/// Whether a scenario declares a live MCP server (`kind = "mcp"`).
fn has_mcp_server(scenario: &chio_arena::Scenario) -> bool {
    scenario.file().servers.iter().any(|s| s.kind == "mcp")
}

/// The reference scenarios with a live MCP server, by file stem: they
/// validate, and run only from a recording (`chio arena record`, then
/// `chio arena run --replay-from`), so the runnable lists leave them out.
pub fn mcp_scenarios() -> Vec<String> {
    let mut names: Vec<String> = entries(&repo_path("scenarios"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .filter(|p| chio_arena::load_scenario(p).is_ok_and(|s| has_mcp_server(&s)))
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names
}

/// The runnable reference scenarios shipped in `scenarios/`, by file stem:
/// every one that declares a world (a world-less file such as the seed's
/// example validates but is refused by `arena run`), but those with a live
/// MCP server ([`mcp_scenarios`]).
pub fn reference_scenarios() -> Vec<String> {
    scenarios_with_world(true)
}

/// The reference scenarios that declare no world, by file stem.
pub fn worldless_scenarios() -> Vec<String> {
    scenarios_with_world(false)
}
