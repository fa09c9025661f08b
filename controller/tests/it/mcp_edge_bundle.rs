//! The edge's session folder is a bundle `chio arena replay` re-decides: a
//! session in front of the reference `mcp-server-git`, driven by the SDK's
//! Rust client with allowed and denied calls, replays with no drift; the
//! same folder edited after the fact (a verdict flipped, a call dropped, an
//! answer changed) fails, naming the step. Needs the venv
//! `CHIO_MCP_PYTHON` names (see `import_mcp.rs`).

use crate::mcp_edge_util;

use std::path::{Path, PathBuf};

use mcp_edge_util::*;
use serde_json::{json, Value};

/// A copy of the folder `from` at `to`, with `edit` applied to the lines
/// of its calls.jsonl.
fn edited(from: &Path, to: &Path, edit: impl FnOnce(&mut Vec<Value>)) -> PathBuf {
    copy_dir(from, to);
    let path = to.join("calls.jsonl");
    let mut lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    edit(&mut lines);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    to.to_path_buf()
}

/// Runs a session of allowed and denied calls; answers the session folder.
async fn session(dir: &Path, python: &Path) -> PathBuf {
    let repo = git_fixture_repo(dir);
    let authority = authority(dir);
    let alice = client_key(1);
    let token = grant(
        &authority,
        &alice,
        "git",
        "git_status,git_log",
        &["--max-calls", "3"],
    );
    let session_dir = dir.join("session");
    let upstream = git_upstream(python, &repo);
    let edge = Edge::start(&[
        "--upstream".into(),
        upstream,
        "--authority".into(),
        authority.to_str().unwrap().into(),
        "--session-out".into(),
        session_dir.to_str().unwrap().into(),
    ])
    .await;
    let path = json!({"repo_path": repo.to_str().unwrap()});
    let add = json!({"repo_path": repo.to_str().unwrap(), "files": ["new.txt"]});
    let calls = [
        ("git_status", &path),
        ("git_add", &add),
        ("git_log", &path),
        ("git_status", &path),
        ("git_status", &path),
    ];
    for (i, (tool, arguments)) in calls.iter().enumerate() {
        edge.call(&token, &alice, "git", tool, arguments, &format!("r-{i}"))
            .await;
    }
    edge.stop().await;
    session_dir
}

// An edge session in front of mcp-server-git (allowed calls, a tool outside the capability, a call past its budget) is a bundle chio arena replay re-decides with no drift; a verdict flipped, a call dropped or an answer changed in the folder fails replay naming the step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_folder_replays_and_an_edited_one_does_not() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let folder = session(dir.path(), &python).await;
    let verdicts: Vec<String> = std::fs::read_to_string(folder.join("calls.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["verdict"].to_string())
        .collect();
    assert_eq!(
        verdicts,
        [
            "\"allow\"",
            "\"deny\"",
            "\"allow\"",
            "\"allow\"",
            "\"deny\""
        ]
    );
    for name in [
        "arena.json",
        "receipts.ndjson",
        "inputs/scenario.toml",
        "session-end.json",
    ] {
        assert!(
            folder.join(name).is_file(),
            "the session folder lacks {name}"
        );
    }
    let (ok, out) = replay(&folder);
    assert!(ok, "the session does not replay: {out}");
    assert!(out.contains("no drift"), "{out}");

    let flipped = edited(&folder, &dir.path().join("flipped"), |lines| {
        lines[1]["verdict"] = json!("allow");
    });
    let (ok, out) = replay(&flipped);
    assert!(!ok, "a flipped verdict replays: {out}");
    assert!(out.contains("step call-2"), "{out}");
    assert!(
        out.contains("the edge session does not replay: step call-2"),
        "the error names the step: {out}"
    );

    let dropped = edited(&folder, &dir.path().join("dropped"), |lines| {
        lines.remove(2);
    });
    let (ok, out) = replay(&dropped);
    assert!(!ok, "a dropped call replays: {out}");
    assert!(out.contains("step call-3"), "{out}");

    let truncated = edited(&folder, &dir.path().join("truncated"), |lines| {
        lines.pop();
    });
    let (ok, out) = replay(&truncated);
    assert!(!ok, "a dropped last call replays: {out}");
    assert!(out.contains("the signed end counts 5"), "{out}");

    let answered = edited(&folder, &dir.path().join("answered"), |lines| {
        lines[0]["upstream"]["content"][0]["text"] = json!("Repository status:\nclean\n");
    });
    let (ok, out) = replay(&answered);
    assert!(!ok, "a changed answer replays: {out}");
    assert!(out.contains("step call-1"), "{out}");

    // The scenario among the inputs edited too, consistently with the
    // edited record: the edge's signed receipt still names the step.
    let both = dir.path().join("both");
    copy_dir(&answered, &both);
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(both.join("session.json")).unwrap()).unwrap();
    let calls = session_calls(&both);
    let rebuilt = chio_controller::mcp_edge::scenario::session_scenario(&header, &calls).unwrap();
    std::fs::write(both.join("inputs/scenario.toml"), rebuilt.text).unwrap();
    let (ok, out) = replay(&both);
    assert!(!ok, "a consistently changed answer replays: {out}");
    assert!(out.contains("step call-1"), "{out}");

    // The header edited after the session (a tool description the
    // upstream never listed), the scenario rebuilt to agree with it: the
    // signed end binds the header, so the folder does not replay.
    let header_edited = dir.path().join("header");
    copy_dir(&folder, &header_edited);
    let text = std::fs::read_to_string(header_edited.join("session.json")).unwrap();
    let mut header: Value = serde_json::from_str(&text).unwrap();
    let described = header
        .pointer_mut("/upstreams/0/tools/0/description")
        .expect("the header lists the upstream's tools");
    *described = json!("a description the upstream never listed");
    std::fs::write(header_edited.join("session.json"), header.to_string()).unwrap();
    let calls = session_calls(&header_edited);
    if let Ok(rebuilt) = chio_controller::mcp_edge::scenario::session_scenario(&header, &calls) {
        std::fs::write(header_edited.join("inputs/scenario.toml"), rebuilt.text).unwrap();
    }
    let (ok, out) = replay(&header_edited);
    assert!(!ok, "an edited header replays: {out}");
    assert!(
        out.contains("session.json: its SHA-256 is not the one the signed end states"),
        "{out}"
    );
}

// An upstream's error result (isError: true) is a call the upstream received and did not carry out: the client gets the error result, its invocation is spent (the upstream ran it), so under a capability of two calls the calls after it are refused and never reach the upstream, and the untouched session replays with no drift, its scenario answering that step not performed and spending it alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_error_result_spends_and_replays_as_not_performed() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "echo", &["--max-calls", "2"]);
    let folder = dir.path().join("session");
    let mut args = counting_args(&python, &log, &authority);
    args.extend(["--session-out".into(), folder.to_str().unwrap().into()]);
    let edge = Edge::start(&args).await;
    for (i, said) in ["a", "missing", "b", "c"].iter().enumerate() {
        let arguments = json!({ "text": said });
        let result = edge
            .call(
                &token,
                &alice,
                "notes",
                "echo",
                &arguments,
                &format!("r-{i}"),
            )
            .await;
        if *said == "missing" {
            assert_eq!(result.is_error, Some(true), "{result:?}");
            assert_eq!(text(&result), "file not found");
        }
    }
    edge.stop().await;
    assert_eq!(
        session_verdicts(&folder),
        ["allow", "allow", "deny", "deny"]
    );
    assert_eq!(log_lines(&log), ["echo a", "echo missing"]);
    let scenario = std::fs::read_to_string(folder.join("inputs/scenario.toml")).unwrap();
    assert!(scenario.contains("ok = false"), "{scenario}");
    let (ok, out) = replay(&folder);
    assert!(ok, "the session does not replay: {out}");
    assert!(out.contains("no drift"), "{out}");
}

// A session never holds what it cannot write: arguments nested past what a scenario holds are refused before the kernel and reach no upstream; an answer nested past it is not released (the upstream received the call, so it spends); after the upstream exits, a call is not sent and gives its budget back, so the next call is not refused for budget; the session replays with no drift.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_holds_only_what_it_can_write_and_charges_no_unsent_call() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "echo", &["--max-calls", "4"]);
    let folder = dir.path().join("session");
    let mut args = counting_args(&python, &log, &authority);
    args.extend(["--session-out".into(), folder.to_str().unwrap().into()]);
    let edge = Edge::start(&args).await;
    let mut deep_arguments = json!("bottom");
    for _ in 0..70 {
        deep_arguments = json!([deep_arguments]);
    }
    let mut results = Vec::new();
    for (i, arguments) in [
        json!({"text": "a"}),
        json!({"text": "deep"}),
        json!({"text": "too deep", "x": deep_arguments}),
        json!({"text": "exit"}),
        json!({"text": "b"}),
        json!({"text": "c"}),
    ]
    .iter()
    .enumerate()
    {
        if i == 4 {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        let id = format!("r-{i}");
        results.push(
            edge.call(&token, &alice, "notes", "echo", arguments, &id)
                .await,
        );
    }
    edge.stop().await;
    let codes: Vec<(String, String)> = results.iter().map(verdict).collect();
    assert_eq!(codes[0].0, "allow", "{:?}", results[0]);
    assert_eq!(codes[1].1, "dispatch-failed", "{:?}", results[1]);
    assert!(
        text(&results[1]).contains("cannot record"),
        "{:?}",
        results[1]
    );
    assert_eq!(codes[2].1, "edge-arguments-too-deep", "{:?}", results[2]);
    for i in [4, 5] {
        assert_eq!(codes[i].1, "dispatch-failed", "{:?}", results[i]);
        assert!(text(&results[i]).contains("not sent"), "{:?}", results[i]);
    }
    assert_eq!(log_lines(&log), ["echo a", "echo deep", "echo exit"]);
    let (ok, out) = replay(&folder);
    assert!(ok, "the session does not replay: {out}");
    assert!(out.contains("no drift"), "{out}");
}

// SIGTERM while a call is at the upstream: the call is still answered and recorded before the session ends, the session replays with no drift, and the edge exits although its client keeps standard input open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_waits_for_the_call_in_flight_and_the_edge_exits() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "slow", &[]);
    let folder = dir.path().join("session");
    let mut args = counting_args(&python, &log, &authority);
    args.extend(["--session-out".into(), folder.to_str().unwrap().into()]);
    let mut edge = Edge::start(&args).await;
    let arguments = json!({"text": "late"});
    let (result, ()) = tokio::join!(
        edge.call(&token, &alice, "notes", "slow", &arguments, "r-1"),
        async {
            tokio::time::sleep(std::time::Duration::from_millis(400)).await;
            edge.terminate();
        }
    );
    assert_eq!(verdict(&result).0, "allow", "{result:?}");
    assert_eq!(text(&result), "late");
    assert!(
        edge.exits_within(std::time::Duration::from_secs(20)).await,
        "the edge did not exit with its client's standard input open"
    );
    assert_eq!(log_lines(&log), ["slow late"]);
    assert_eq!(session_verdicts(&folder), ["allow"]);
    let (ok, out) = replay(&folder);
    assert!(ok, "the session does not replay: {out}");
    assert!(out.contains("no drift"), "{out}");
}
