//! The commands that write a scenario read a credential as the
//! `secret-redaction` guard does (decoded, split across arguments), and
//! read a schema's field names and prose as what they are.

use crate::util;

use std::path::Path;

use util::{chio, explain};

/// The base64 of a fixture GitHub token.
const ENCODED: &str = "Z2hwXzE2QzdlNDJGMjkyYzY5MTJFNzcxMGM4MzgzNDdBZTE3OEI0YQ==";

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

// A trace whose call sends a base64-encoded token is refused, and no
// scenario holding it is written.
#[test]
fn import_trace_refuses_an_encoded_credential_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = [
        r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}"#.to_string(),
        r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "post", "inputSchema": {"type": "object"}}]}}"#.to_string(),
        format!(r#"{{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {{"name": "post", "arguments": {{"a": "{ENCODED}"}}}}}}"#),
        r#"{"jsonrpc": "2.0", "id": 10, "result": {"content": [{"type": "text", "text": "ok"}]}}"#.to_string(),
    ];
    write(tmp.path(), "trace.jsonl", &(trace.join("\n") + "\n"));
    let args = [
        "import",
        "trace",
        "trace.jsonl",
        "--format",
        "mcp",
        "--out",
        "imported",
    ];
    let output = chio(tmp.path(), &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(stderr.contains("CHIO-SCENARIO-INLINE-SECRET"), "{stderr}");
    assert!(!stderr.contains(ENCODED), "{stderr}");
    assert!(!tmp.path().join("imported/scenario.toml").exists());
}

// A pagination property (`pageToken`) and prose about a page token import.
#[test]
fn import_mcp_reads_a_schema_field_name_and_prose_as_no_credential() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "tools.json",
        r#"{"tools":[{"name":"list_files","description":"List files. Each answer carries a page token: pass it back to read the next page.","inputSchema":{"type":"object","properties":{"folder":{"type":"string"},"pageToken":{"type":"string"}},"required":["pageToken"]}}]}"#,
    );
    let args = ["import", "mcp", "tools.json", "--id", "drive"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("pageToken"));
}
