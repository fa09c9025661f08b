//! Acceptance: the MCP edge admits and refuses exactly what `chio arena
//! run` decides for the same calls. A sequence of calls goes through `chio
//! mcp serve` in front of the counting upstream on the MCP Python SDK; the
//! same calls become a scenario whose recorded server declares the same
//! tools and answers what the upstream answered (read from the edge's
//! session folder); the two are compared call by call: verdict, reason,
//! reason code, and every receipt field but the time, the ids and the
//! keys. Needs the venv `CHIO_MCP_PYTHON` names (see `import_mcp.rs`).

mod mcp_edge_util;

use std::path::Path;

use mcp_edge_util::*;
use serde_json::{json, Value};

/// `value` as a TOML value, inline.
fn toml_inline(value: &Value) -> String {
    match value {
        Value::Null => panic!("a recorded answer cannot hold null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => toml::Value::String(s.clone()).to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_inline).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .map(|(k, v)| format!("{} = {}", toml::Value::String(k.clone()), toml_inline(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The scenario of the session's calls: one agent, the grant the edge
/// issued (same id, tools and budget), a recorded server declaring the
/// upstream's tools and answering what it answered, one step per call
/// expecting the edge's verdict.
fn scenario(session: &[Value], tools: &Value, calls: &[(&str, &str, Value)]) -> String {
    let mut out = String::from(
        r#"schema_version = "chio.arena.scenario/v1"
id = "edge-parity"
title = "the edge's calls as a scenario"
rng_seed = 7
virtual_clock_start = "2026-07-01T10:00:00.000Z"

[determinism]
scheduler = "single-agent-v1"
locale = "C"

[[nodes]]
id = "node-a"

[[kernels]]
id = "kernel-a"
node = "node-a"

[[agents]]
id = "alice"
role = "developer"
model = "recorded:alice"
seed_prompt_ref = "prompt.txt"
kernel = "kernel-a"

[[servers]]
id = "notes"
kernel = "kernel-a"
kind = "recorded"
"#,
    );
    for tool in tools.as_array().unwrap() {
        out.push_str(&format!(
            "\n[[servers.tools]]\nname = {}\ndescription = {}\ninput_schema = {}\n",
            toml_inline(&tool["name"]),
            toml_inline(&tool["description"]),
            toml::Value::String(tool["inputSchema"].to_string()),
        ));
    }
    for (i, record) in session.iter().enumerate() {
        if let Some(answer) = record["upstream"].as_object() {
            out.push_str(&format!(
                "\n[[servers.answers]]\nstep = \"c{i}\"\noutput = {}\n",
                toml_inline(&Value::Object(answer.clone()))
            ));
        }
    }
    out.push_str(
        "\n[[grants]]\nid = \"alice-notes\"\nagent = \"alice\"\nserver = \"notes\"\ntools = [\"echo\"]\nmax_invocations = 3\n",
    );
    for (i, ((_, tool, arguments), record)) in calls.iter().zip(session).enumerate() {
        out.push_str(&format!(
            "\n[[steps]]\nid = \"c{i}\"\nagent = \"alice\"\nserver = \"notes\"\ntool = \"{tool}\"\narguments = {}\nexpect_verdict = {}\n",
            toml_inline(arguments),
            toml_inline(&record["verdict"]),
        ));
    }
    out
}

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
    std::fs::write(world.join("prompt.txt"), "the edge's client\n").unwrap();
    let file = world.join("parity.toml");
    std::fs::write(
        &file,
        scenario(&session, &header["upstreams"][0]["tools"], &calls),
    )
    .unwrap();
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
