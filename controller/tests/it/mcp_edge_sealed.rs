//! A session whose client sends a credential and whose upstream answers
//! one and a JSON null still gets its bundle: the equivalent scenario
//! reads the credential from a sealed file of the session folder
//! (`inputs/fixtures/secrets/`) and writes the null as `{ null = true }`,
//! `chio arena replay DIR` re-decides every call identically, the
//! credential reaches none of the bundle's evidence nor what the edge and
//! the replay print, and a sealed file changed after the fact fails the
//! replay on its digest. Needs the venv `CHIO_MCP_PYTHON` names (see
//! `import_mcp.rs`).

use crate::mcp_edge_util;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use mcp_edge_util::*;
use serde_json::json;

/// A GitHub-shaped token: a credential by the loader's own rule.
const TOKEN: &str = "ghp_7Hq2Lw9Zx4Rt6Yp1Kd8Mv3Nc5Bg0Fj2Se4Ua";

/// The file of the first sealed value, below the session folder.
const SEALED: &str = "inputs/fixtures/secrets/secret-1.txt";

/// Runs the session (the token echoed, a null answered, the token sent to
/// a tool outside the capability) with `extra` edge arguments; answers the
/// session folder, the edge's standard error and the echo's answer text.
async fn session(dir: &Path, python: &Path, extra: &[String]) -> (PathBuf, String, String) {
    let authority = authority(dir);
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "echo,status", &[]);
    let folder = dir.join("session");
    let stderr = dir.join("edge.stderr");
    let mut args = counting_args(python, &dir.join("calls.log"), &authority);
    args.extend(["--session-out".into(), folder.to_str().unwrap().into()]);
    args.extend_from_slice(extra);
    let edge =
        Edge::start_with_stderr(&args, Stdio::from(std::fs::File::create(&stderr).unwrap())).await;
    let sent = json!({"text": TOKEN});
    let answered = edge
        .call(&token, &alice, "notes", "echo", &sent, "r-0")
        .await;
    assert_eq!(verdict(&answered), ("allow".to_string(), String::new()));
    let quiet = json!({"text": "all quiet"});
    let status = edge
        .call(&token, &alice, "notes", "status", &quiet, "r-1")
        .await;
    assert_eq!(verdict(&status).0, "allow");
    let refused = edge
        .call(&token, &alice, "notes", "note", &sent, "r-2")
        .await;
    assert_eq!(verdict(&refused).0, "deny");
    edge.stop().await;
    (
        folder,
        std::fs::read_to_string(stderr).unwrap(),
        text(&answered),
    )
}

/// The edge's `--policy` arguments for a policy file in `dir` holding `toml`.
fn policy_args(dir: &Path, toml: &str) -> Vec<String> {
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, toml).unwrap();
    vec!["--policy".to_string(), policy.to_str().unwrap().to_string()]
}

/// Every file below `dir`, by path, but the edge's own record of the calls.
fn evidence(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if !path.ends_with("secrets") {
                evidence(&path, out);
            }
        } else if !path.ends_with("calls.jsonl") {
            out.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
}

/// Asserts the session folder's evidence (its receipts among it) holds no
/// run of 8 of the token's characters.
fn assert_token_out_of_evidence(folder: &Path) {
    let mut files = Vec::new();
    evidence(folder, &mut files);
    assert!(files.iter().any(|(p, _)| p.ends_with("receipts.ndjson")));
    for (path, bytes) in &files {
        assert!(!holds(bytes, TOKEN), "{} holds the token", path.display());
    }
}

/// Whether `bytes` hold any run of 8 characters of the token (what the
/// kernel's sealing rule promises for a sealed argument).
fn holds(bytes: &[u8], token: &str) -> bool {
    let chars: Vec<char> = token.chars().collect();
    let text = String::from_utf8_lossy(bytes);
    chars
        .windows(chio_kernel::seal::WINDOW)
        .any(|w| text.contains(w.iter().collect::<String>().as_str()))
}

/// `chio ARGS`'s standard output and error, asserting it exits 0.
fn printed(args: &[&str]) -> String {
    let output = std::process::Command::new(chio_bin())
        .args(args)
        .output()
        .unwrap();
    let both = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "chio {args:?}: {both}");
    both
}

// A session whose client sends a token and whose upstream answers it and a null is a bundle: its scenario reads the token from a sealed file and writes the null as { null = true }; replay re-decides every call identically; no run of 8 of the token's characters is in a file of the bundle but the sealed one and calls.jsonl, nor in what the edge, replay (--json too) or explain print; a changed sealed file fails replay on its digest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_carrying_a_credential_and_a_null_replays_sealed() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (folder, edge_stderr, echoed) = session(dir.path(), &python, &[]).await;
    assert_eq!(echoed, TOKEN);
    let calls = session_calls(&folder);
    assert_eq!(calls.len(), 3);
    assert!(
        calls[1]["upstream"]["structuredContent"]["previous"].is_null(),
        "the upstream answered a null: {}",
        calls[1]["upstream"]
    );
    assert!(folder.join("arena.json").is_file(), "no bundle was written");
    assert_eq!(
        std::fs::read_to_string(folder.join(SEALED)).unwrap(),
        format!("{TOKEN}\n")
    );
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&folder), 0o700, "the session folder is private");
    assert_eq!(
        mode(&folder.join(SEALED)),
        0o600,
        "a sealed file is private"
    );
    let scenario = std::fs::read_to_string(folder.join("inputs/scenario.toml")).unwrap();
    assert!(
        scenario.contains("{ fixture = \"fixtures/secrets/secret-1.txt\" }"),
        "{scenario}"
    );
    assert!(
        scenario.contains("\"previous\" = { null = true }"),
        "{scenario}"
    );

    let (ok, replayed) = replay(&folder);
    assert!(ok, "the session does not replay: {replayed}");
    assert!(replayed.contains("no drift"), "{replayed}");

    assert_token_out_of_evidence(&folder);
    let manifest = std::fs::read_to_string(folder.join("arena.json")).unwrap();
    assert!(
        manifest.contains("fixtures/secrets/secret-1.txt"),
        "{manifest}"
    );
    assert!(!holds(edge_stderr.as_bytes(), TOKEN), "{edge_stderr}");
    assert!(!holds(replayed.as_bytes(), TOKEN), "{replayed}");
    let folder_arg = folder.to_str().unwrap();
    let json = printed(&["arena", "replay", folder_arg, "--json"]);
    assert!(!holds(json.as_bytes(), TOKEN), "{json}");
    for step in ["call-1", "call-2", "call-3"] {
        let explained = printed(&["arena", "explain", folder_arg, step]);
        assert!(explained.contains(step), "{explained}");
        assert!(!holds(explained.as_bytes(), TOKEN), "{explained}");
    }

    let tampered = dir.path().join("tampered");
    copy_dir(&folder, &tampered);
    std::fs::write(
        tampered.join(SEALED),
        "ghp_0000000000000000000000000000000000aa\n",
    )
    .unwrap();
    let (ok, out) = replay(&tampered);
    assert!(!ok, "a changed sealed file replays: {out}");
    assert!(
        out.contains("sealed file fixtures/secrets/secret-1.txt no longer has the digest"),
        "{out}"
    );
    assert!(!holds(out.as_bytes(), TOKEN), "{out}");
}

// With a secret-redaction guard scanning output (--policy), the echoed token is redacted at the edge (a rewrite); the equivalent scenario declares the guard, its recorded answer reads the token from the sealed file, and replay re-decides the rewrite identically, so the guard saw the value at replay as at the edge; no bundle file holds 8 of its characters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_redacting_the_sealed_answer_replays_alike() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let extra = policy_args(
        dir.path(),
        "[[guards]]\nid = \"no-credentials-back\"\nkind = \"secret-redaction\"\n\n[guards.config]\nscan = [\"output\"]\n",
    );
    let (folder, edge_stderr, echoed) = session(dir.path(), &python, &extra).await;
    assert!(
        !holds(echoed.as_bytes(), TOKEN),
        "the client got the token: {echoed}"
    );
    assert_eq!(session_verdicts(&folder), ["rewrite", "allow", "deny"]);
    let (ok, replayed) = replay(&folder);
    assert!(ok, "the session does not replay: {replayed}");
    assert!(replayed.contains("no drift"), "{replayed}");
    assert_token_out_of_evidence(&folder);
    assert!(!holds(edge_stderr.as_bytes(), TOKEN), "{edge_stderr}");
    assert!(!holds(replayed.as_bytes(), TOKEN), "{replayed}");
}

// A deny reason that would quote a credential the client sent in the clear (a forbidden-path guard naming the path that holds it) quotes the seal's mark at the edge as at replay: the untouched session replays with no drift, and neither the edge's evidence nor its receipts hold the credential.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reason_quoting_a_credential_marks_it_at_the_edge_as_at_replay() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let policy = policy_args(
        dir.path(),
        "[[guards]]\nid = \"no-dotenv\"\nkind = \"forbidden-path\"\n\n[guards.config]\nglobs = [\"**/.env\"]\n",
    );
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "echo", &[]);
    let folder = dir.path().join("session");
    let mut args = counting_args(&python, &dir.path().join("calls.log"), &authority);
    args.extend(["--session-out".into(), folder.to_str().unwrap().into()]);
    args.extend(policy);
    let edge = Edge::start(&args).await;
    let sent = json!({ "text": format!("/workspace/{TOKEN}/.env") });
    let refused = edge
        .call(&token, &alice, "notes", "echo", &sent, "r-0")
        .await;
    assert_eq!(verdict(&refused).1, "forbidden-path", "{refused:?}");
    assert!(!holds(text(&refused).as_bytes(), TOKEN), "{refused:?}");
    edge.stop().await;
    let (ok, replayed) = replay(&folder);
    assert!(ok, "the session does not replay: {replayed}");
    assert!(replayed.contains("no drift"), "{replayed}");
    assert_token_out_of_evidence(&folder);
}
