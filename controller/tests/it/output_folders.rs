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
