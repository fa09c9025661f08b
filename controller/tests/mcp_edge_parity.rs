//! Acceptance: the MCP edge admits and refuses exactly what `chio arena
//! run` decides for the same calls. A sequence of calls goes through `chio
//! mcp serve` in front of the counting upstream on the MCP Python SDK; the
//! same calls become the scenario the edge's builder makes of its session
//! folder (a recorded server declaring the same tools and answering what
//! the upstream answered), the one its session bundle holds; the two are compared call by call: verdict, reason,
//! reason code, and every receipt field but the time, the ids and the
//! keys. Needs the venv `CHIO_MCP_PYTHON` names (see `import_mcp.rs`).

mod mcp_edge_util;

use std::path::Path;

use chio_controller::mcp_edge::scenario::{
    session_scenario, Presentation, PROMPT_FILE, PROMPT_TEXT,
};
use mcp_edge_util::*;
use serde_json::{json, Value};

/// The receipt fields compared: all but the time, the ids and the keys.
fn comparable(receipt: &Value) -> Value {
    let body = &receipt["body"];
    json!({
        "server": body["server"],
        "tool": body["tool"],
        "parameter_hash": body["parameter_hash"],
        "decision": body["decision"],
        "observed": body["observed"],
        "output_hash": body["output_hash"],
    })
}

// The edge and `chio arena run` decide the same calls alike: an allowed call, a tool outside the capability, more allowed calls up to the capability's budget and one past it; verdicts, reasons, reason codes and receipts (but time, ids and keys) match call by call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_edge_decides_as_the_arena_decides() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(
        &authority,
        &alice,
        "notes",
        "echo",
        &["--max-calls", "3", "--id", "alice-notes"],
    );
    let session_dir = dir.path().join("session");
    let upstream = format!(
        "notes={}",
        shell_words::join([
            python.to_str().unwrap(),
            fixture("counting_server.py").to_str().unwrap(),
            log.to_str().unwrap(),
        ])
    );
    let edge = Edge::start(&[
        "--upstream".into(),
        upstream,
        "--authority".into(),
        authority.to_str().unwrap().into(),
        "--session-out".into(),
        session_dir.to_str().unwrap().into(),
    ])
    .await;
    let calls = [
        ("c0", "echo", json!({"text": "hello"})),
        ("c1", "note", json!({"text": "kept"})),
        ("c2", "echo", json!({"text": "two"})),
        ("c3", "echo", json!({"text": "three"})),
        ("c4", "echo", json!({"text": "four"})),
        ("c5", "note", json!({"text": "again"})),
    ];
    for (id, tool, arguments) in &calls {
        edge.call(&token, &alice, "notes", tool, arguments, id)
            .await;
    }
    edge.stop().await;
    let session: Vec<Value> = std::fs::read_to_string(session_dir.join("calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let verdicts: Vec<&str> = session
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(
        verdicts,
        ["allow", "deny", "allow", "allow", "deny", "deny"]
    );
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(session_dir.join("session.json")).unwrap())
            .unwrap();

    let world = dir.path().join("world");
    std::fs::create_dir_all(&world).unwrap();
    std::fs::write(world.join(PROMPT_FILE), PROMPT_TEXT).unwrap();
    let file = world.join("parity.toml");
    // The edge's own builder of the equivalent scenario, which its session
    // bundle holds.
    let built = session_scenario(&header, &session).unwrap();
    assert!(built
        .steps
        .iter()
        .all(|s| matches!(s, Presentation::Step(_))));
    assert_eq!(
        built.text.as_bytes(),
        std::fs::read(session_dir.join("inputs/scenario.toml")).unwrap()
    );
    std::fs::write(&file, built.text).unwrap();
    let bundle = dir.path().join("bundle");
    let output = std::process::Command::new(chio_bin())
        .args([
            "arena",
            "run",
            file.to_str().unwrap(),
            "--out",
            bundle.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the arena decides otherwise than the edge: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    compare(&session, &bundle);
}

/// Compares the edge's session with the arena's bundle, call by call.
fn compare(session: &[Value], bundle: &Path) {
    let arena: Value =
        serde_json::from_str(&std::fs::read_to_string(bundle.join("arena.json")).unwrap()).unwrap();
    let receipts: Vec<Value> = std::fs::read_to_string(bundle.join("receipts.ndjson"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let steps = arena["steps"].as_array().unwrap();
    assert_eq!(steps.len(), session.len());
    for (edge, step) in session.iter().zip(steps) {
        let at = step["step_id"].as_str().unwrap();
        assert_eq!(edge["verdict"], step["actual"], "{at}: verdict");
        assert_eq!(
            edge["reason"],
            step.get("reason").cloned().unwrap_or(Value::Null),
            "{at}: reason"
        );
        assert_eq!(
            edge["reason_code"],
            step.get("reason_code").cloned().unwrap_or(Value::Null),
            "{at}: reason code"
        );
        let receipt = receipts
            .iter()
            .find(|r| r["id"] == step["receipt_id"])
            .unwrap_or_else(|| panic!("{at}: the arena's receipt"));
        assert_eq!(
            comparable(&edge["receipt"]),
            comparable(receipt),
            "{at}: receipt"
        );
        // Nothing compared is vacuous: an allow released a hashed output,
        // a deny carries its reason.
        match edge["verdict"].as_str() {
            Some("allow") => assert!(receipt["body"]["output_hash"].is_string(), "{at}"),
            _ => assert!(
                edge["reason"].is_string() && edge["reason_code"].is_string(),
                "{at}"
            ),
        }
    }
}
