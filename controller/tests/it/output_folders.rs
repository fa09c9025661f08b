//! Commands that write several files into one folder never follow a link
//! on the way out of it, and check every destination before writing any.

use crate::util;

use std::path::Path;

use util::{chio, explain};

const TRACE: &str = concat!(
    r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}"#,
    "\n",
    r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "post", "inputSchema": {"type": "object"}}]}}"#,
    "\n",
    r#"{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "post", "arguments": {"a": "hello"}}}"#,
    "\n",
    r#"{"jsonrpc": "2.0", "id": 10, "result": {"content": [{"type": "text", "text": "ok"}]}}"#,
    "\n",
);

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// `prompts/` linked elsewhere: init and import trace refuse naming it, and
// nothing lands where it points.
#[test]
fn a_linked_folder_inside_the_destination_is_refused_and_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("trace.jsonl"), TRACE).unwrap();
    std::fs::create_dir(tmp.path().join("elsewhere")).unwrap();
    for dir in ["init-dir", "import-dir"] {
        std::fs::create_dir(tmp.path().join(dir)).unwrap();
        std::os::unix::fs::symlink("../elsewhere", tmp.path().join(dir).join("prompts")).unwrap();
    }
    let init = ["arena", "init", "init-dir"];
    let import = [
        "import",
        "trace",
        "trace.jsonl",
        "--format",
        "mcp",
        "--out",
        "import-dir",
    ];
    for args in [&init[..], &import[..]] {
        let output = chio(tmp.path(), args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_ne!(output.status.code(), Some(0), "{}", explain(args, &output));
        assert!(stderr.contains("prompts is a symbolic link"), "{stderr}");
    }
    assert!(entries(&tmp.path().join("elsewhere")).is_empty());
    assert_eq!(entries(&tmp.path().join("init-dir")), ["prompts"]);
    assert_eq!(entries(&tmp.path().join("import-dir")), ["prompts"]);
}

// import trace with `scenario.toml` a folder: refused naming it before the
// prompt is written.
#[test]
fn import_trace_checks_both_destinations_before_writing_either() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("trace.jsonl"), TRACE).unwrap();
    std::fs::create_dir_all(tmp.path().join("imp/scenario.toml")).unwrap();
    let args = [
        "import",
        "trace",
        "trace.jsonl",
        "--format",
        "mcp",
        "--out",
        "imp",
    ];
    let output = chio(tmp.path(), &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert!(stderr.contains("scenario.toml"), "{stderr}");
    assert_eq!(entries(&tmp.path().join("imp")), ["scenario.toml"]);
}

/// The reference scenario `name` staged in `dir` with its fixtures and prompts.
fn stage(dir: &Path, name: &str) -> String {
    util::copy_tree(
        &util::repo_path("scenarios/fixtures"),
        &dir.join("fixtures"),
    );
    util::copy_tree(&util::repo_path("scenarios/prompts"), &dir.join("prompts"));
    let file = format!("{name}.toml");
    std::fs::copy(
        util::repo_path(&format!("scenarios/{file}")),
        dir.join(&file),
    )
    .unwrap();
    file
}

// A `--junit` path that is a link is refused before the run: no bundle is
// installed and the link's target is kept.
#[test]
fn a_report_path_refused_at_the_start_leaves_no_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let file = stage(tmp.path(), "sealed_secret");
    std::fs::write(tmp.path().join("real.xml"), "keep").unwrap();
    std::os::unix::fs::symlink("real.xml", tmp.path().join("junit.xml")).unwrap();
    let args = [
        "arena",
        "run",
        &file,
        "--out",
        "bundle",
        "--junit",
        "junit.xml",
    ];
    let output = chio(tmp.path(), &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert!(
        stderr.contains("CHIO-REPORT-WRITE") && stderr.contains("symbolic link"),
        "{stderr}"
    );
    assert!(!tmp.path().join("bundle").exists());
    assert_eq!(
        std::fs::read_to_string(tmp.path().join("real.xml")).unwrap(),
        "keep"
    );
}

// evolve with its trace's path taken by a folder: refused before the
// search, so no leaderboard of the new search is written beside it.
#[test]
fn evolve_checks_every_output_before_the_search() {
    let tmp = tempfile::tempdir().unwrap();
    let file = stage(tmp.path(), "adversaries-reference");
    std::fs::create_dir_all(tmp.path().join("evo/evolve-trace.json")).unwrap();
    let args = [
        "arena",
        "evolve",
        &file,
        "--generations",
        "1",
        "--population-size",
        "2",
        "--out",
        "evo",
    ];
    let output = chio(tmp.path(), &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert!(stderr.contains("evolve-trace.json"), "{stderr}");
    assert_eq!(entries(&tmp.path().join("evo")), ["evolve-trace.json"]);
}
