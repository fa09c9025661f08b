//! The MCP edge (`chio mcp serve --stdio`) in front of real MCP servers:
//! a counting server on the official MCP Python SDK
//! (`fixtures/mcp/counting_server.py`, which logs every call it receives)
//! and the reference `mcp-server-git`, driven by the SDK's Rust client with
//! calls signed by real Ed25519 keys. Proves that admitted calls reach the
//! upstream and refused ones never do, whatever the refusal: no
//! capability, a tool outside it, a forged or replayed signed request,
//! another client's token, an oversized argument, a revocation mid-session
//! and trust-control down. Needs the venv `CHIO_MCP_PYTHON` names (see
//! `import_mcp.rs`).

use crate::mcp_edge_util;
use crate::trust_process;

use std::path::Path;

use mcp_edge_util::*;
use serde_json::{json, Value};

// Admitted calls reach the upstream once each; every refusal (no capability, a tool outside it, a forged, replayed or foreign signed request, an oversized argument, an exhausted budget) is an isError result and never reaches the upstream; the session folder records each call in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admitted_calls_reach_the_upstream_and_refused_ones_never_do() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let alice = client_key(1);
    let mallory = client_key(2);
    let token = grant(&authority, &alice, "notes", "echo", &["--max-calls", "3"]);
    let mallory_token = grant(&authority, &mallory, "notes", "echo,note", &[]);
    let session = dir.path().join("session");
    let mut args = counting_args(&python, &log, &authority);
    args.extend(["--session-out".into(), session.to_str().unwrap().into()]);
    args.extend(["--max-argument-bytes".into(), "4096".into()]);
    let edge = Edge::start(&args).await;

    // tools/list: nothing without a valid token, only the covered tools with one.
    assert_eq!(edge.list(None).await, Vec::<String>::new());
    assert_eq!(edge.list(Some("chio-cap1.e30")).await, Vec::<String>::new());
    assert_eq!(edge.list(Some(&token)).await, ["echo"]);
    assert_eq!(edge.list(Some(&mallory_token)).await, ["echo", "note"]);

    let hello = json!({"text": "hello"});
    let allowed = edge
        .call(&token, &alice, "notes", "echo", &hello, "r-1")
        .await;
    assert_eq!(
        verdict(&allowed),
        ("allow".into(), String::new()),
        "{allowed:?}"
    );
    assert_eq!(text(&allowed), "hello");
    assert_eq!(log_lines(&log), ["echo hello"]);

    let mut refused = Vec::new();
    // No capability at all.
    refused.push(edge.call_with_meta("echo", &hello, None).await);
    // A tool outside the capability.
    refused.push(
        edge.call(&token, &alice, "notes", "note", &hello, "r-2")
            .await,
    );
    // A replay of r-1.
    refused.push(
        edge.call(&token, &alice, "notes", "echo", &hello, "r-1")
            .await,
    );
    // A forged signed request: signed over other arguments.
    let meta = signed_meta(
        &token,
        &alice,
        "notes",
        "echo",
        &json!({"text": "other"}),
        "r-3",
    );
    refused.push(edge.call_with_meta("echo", &hello, Some(meta)).await);
    // Another client's token, signed by the thief's own key.
    refused.push(
        edge.call(&token, &mallory, "notes", "echo", &hello, "r-4")
            .await,
    );
    // A proof by alice's key naming mallory's capability.
    refused.push(
        edge.call(&mallory_token, &alice, "notes", "echo", &hello, "r-5")
            .await,
    );
    // An oversized argument.
    let big = json!({"text": "x".repeat(8192)});
    refused.push(
        edge.call(&token, &alice, "notes", "echo", &big, "r-6")
            .await,
    );
    // A tool no upstream declares.
    refused.push(
        edge.call(&token, &alice, "notes", "shell", &hello, "r-7")
            .await,
    );
    let codes: Vec<(String, String)> = refused.iter().map(verdict).collect();
    for (i, (v, code)) in codes.iter().enumerate() {
        assert_eq!(v, "deny", "refusal {i}: {:?}", refused[i]);
        assert!(
            !code.is_empty() && code != "?",
            "refusal {i} has a code: {:?}",
            refused[i]
        );
    }
    assert_eq!(codes[0].1, "edge-no-capability");
    assert_eq!(codes[6].1, "edge-arguments-too-large");
    assert_eq!(
        log_lines(&log),
        ["echo hello"],
        "a refused call reached the upstream"
    );

    // The invocation budget of 3: two more calls, then refused.
    for id in ["r-8", "r-9"] {
        let r = edge.call(&token, &alice, "notes", "echo", &hello, id).await;
        assert_eq!(verdict(&r).0, "allow", "{r:?}");
    }
    let over = edge
        .call(&token, &alice, "notes", "echo", &hello, "r-10")
        .await;
    assert_eq!(verdict(&over).0, "deny", "{over:?}");
    assert_eq!(log_lines(&log).len(), 3);
    edge.stop().await;

    let recorded = session_calls(&session);
    assert_eq!(recorded.len(), 1 + refused.len() + 3);
    let verdicts: Vec<&str> = recorded
        .iter()
        .map(|r| r["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts.iter().filter(|v| **v == "allow").count(), 3);
    assert_eq!(recorded[0]["seq"], 1);
    assert!(recorded[0]["admitted_at_ms"].as_u64().unwrap() > 0);
    assert_eq!(recorded[0]["upstream"]["content"][0]["text"], "hello");
    assert!(recorded[0]["receipt"]["signature"].is_string());
    let header: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join("session.json")).unwrap())
            .unwrap();
    assert_eq!(header["upstreams"][0]["tools"][0]["name"], "echo");
}

// A capability revoked in trust-control mid-session is refused on its next call, and with trust-control down every call is denied, never forwarded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocation_mid_session_and_control_down_fail_closed() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let token_file = trust_process::token_file(dir.path(), trust_process::TOKEN);
    let mut trust = trust_process::TrustProcess::start(&dir.path().join("trust.db"), &token_file);
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "echo", &["--id", "cap-alice"]);
    let second = grant(
        &authority,
        &alice,
        "notes",
        "echo",
        &["--id", "cap-alice-2"],
    );
    let control = [
        "--control-url".to_string(),
        trust.url.clone(),
        "--control-token-file".to_string(),
        token_file.to_str().unwrap().to_string(),
    ];
    let mut args = counting_args(&python, &log, &authority);
    args.extend(control.iter().cloned());
    let edge = Edge::start(&args).await;
    let hello = json!({"text": "hello"});

    let first = edge
        .call(&token, &alice, "notes", "echo", &hello, "r-1")
        .await;
    assert_eq!(verdict(&first).0, "allow", "{first:?}");

    let mut revoke = vec!["mcp", "revoke", "--capability", "cap-alice"];
    revoke.extend(control.iter().map(String::as_str));
    assert_eq!(chio_ok(&revoke).trim(), "revoked cap-alice");
    let after = edge
        .call(&token, &alice, "notes", "echo", &hello, "r-2")
        .await;
    assert_eq!(verdict(&after).0, "deny", "{after:?}");
    assert!(text(&after).contains("revoked"), "{after:?}");
    assert_eq!(log_lines(&log).len(), 1);
    // A revoked capability lists nothing; the other one still lists its tool.
    assert!(edge.list(Some(&token)).await.is_empty());
    assert_eq!(edge.list(Some(&second)).await, ["echo"]);

    // The other capability still works, until trust-control goes down.
    let other = edge
        .call(&second, &alice, "notes", "echo", &hello, "r-3")
        .await;
    assert_eq!(verdict(&other).0, "allow", "{other:?}");
    trust.kill9();
    let down = edge
        .call(&second, &alice, "notes", "echo", &hello, "r-4")
        .await;
    assert_eq!(verdict(&down).0, "deny", "{down:?}");
    assert_eq!(
        log_lines(&log).len(),
        2,
        "a call reached the upstream with trust-control down"
    );
    // With trust-control down nothing can say the capability stands: nothing is listed.
    assert!(edge.list(Some(&second)).await.is_empty());
    edge.stop().await;
}

// In front of the reference git server: git_status is admitted and answers; git_add, outside the capability, is refused and stages nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_upstream_admits_status_and_refuses_add() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = git_fixture_repo(dir.path());
    let git = |args: &[&str]| git_in(&repo, args);
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(&authority, &alice, "git", "git_status", &[]);
    let upstream = git_upstream(&python, &repo);
    let edge = Edge::start(&[
        "--upstream".into(),
        upstream,
        "--authority".into(),
        authority.to_str().unwrap().into(),
    ])
    .await;
    assert_eq!(edge.list(Some(&token)).await, ["git_status"]);
    let path = json!({"repo_path": repo.to_str().unwrap()});
    let status = edge
        .call(&token, &alice, "git", "git_status", &path, "g-1")
        .await;
    assert_eq!(verdict(&status).0, "allow", "{status:?}");
    assert!(text(&status).contains("new.txt"), "{status:?}");
    let add_args = json!({"repo_path": repo.to_str().unwrap(), "files": ["new.txt"]});
    let add = edge
        .call(&token, &alice, "git", "git_add", &add_args, "g-2")
        .await;
    assert_eq!(verdict(&add).0, "deny", "{add:?}");
    assert_eq!(
        git(&["diff", "--cached", "--name-only"]),
        "",
        "a refused git_add staged a file"
    );
    edge.stop().await;
}

// From the Python SDK's client: without a capability nothing is listed and every call is refused naming why; raw garbage, invalid UTF-8, nesting and numbers past the JSON reader's bounds, a frame over the edge's bound, a frame left without a newline and JSON-RPC of the wrong shape (arguments of [1] or null, even in a signed call) are each answered with a JSON-RPC error and the edge keeps answering; none of it reaches the upstream, and only the call signed as docs/mcp.md's Python example signs does; a signed call without arguments is read as arguments {}.
#[test]
fn unauthenticated_and_malformed_traffic_never_reaches_the_upstream() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let args = counting_args(&python, &log, &authority);
    // The signed call of docs/mcp.md's Python example, by the key of seed 3.
    let token = grant(&authority, &client_key(3), "notes", "echo", &[]);
    let output = std::process::Command::new(&python)
        .env("EDGE_TOKEN", &token)
        .env("EDGE_SECRET_HEX", hex::encode([3u8; 32]))
        .arg(fixture("edge_client.py"))
        .arg(chio_bin())
        .args(&args)
        .output()
        .expect("run the Python client");
    assert!(
        output.status.success(),
        "edge_client.py failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let got: Value = serde_json::from_slice(&output.stdout).expect("one JSON object");
    assert_eq!(got["list_without_capability"], json!([]));
    for (step, code) in [
        ("call_without_meta", "edge-no-capability"),
        ("call_token_not_string", "edge-token-malformed"),
        ("call_token_garbage", "edge-token-malformed"),
        ("call_undeclared_tool", "edge-no-capability"),
    ] {
        assert_eq!(got[step]["is_error"], true, "{step}: {got}");
        assert_eq!(got[step]["reason_code"], code, "{step}: {got}");
    }
    assert_eq!(
        got["errors"],
        json!([
            [13, -32602],
            [3, -32602],
            [9, -32602],
            [null, -32700],
            [null, -32700],
            [null, -32700],
            [null, -32700],
            [null, -32600]
        ]),
        "each refused message is answered: {got}"
    );
    assert_eq!(
        got["unterminated_answered"],
        json!([[null, -32700]]),
        "{got}"
    );
    assert_eq!(got["call_after_garbage"], "edge-no-capability", "{got}");
    assert_eq!(got["call_after_garbage_is_error"], true, "{got}");
    // Absent arguments are {} (the proof over {} verifies), which the tool's
    // schema then refuses; `null` never reached the kernel.
    assert_eq!(got["call_without_arguments"], "arguments-refused", "{got}");
    assert_eq!(got["alive_after"], true, "{got}");
    assert_eq!(got["exact_bound_11"], true, "{got}");
    assert_eq!(got["exact_bound_12"], true, "{got}");
    assert_eq!(
        got["oversized_answered"], false,
        "its id is never read: {got}"
    );
    assert_eq!(got["list_with_capability"], json!(["echo"]), "{got}");
    assert_eq!(got["signed_call"]["is_error"], false, "{got}");
    assert_eq!(got["signed_call"]["text"], "signed from python", "{got}");
    assert_eq!(
        log_lines(&log),
        ["echo signed from python"],
        "only the signed call reaches the upstream"
    );
}

/// An edge's world bound to a real trust-control with a `--policy` file:
/// the folder, the counting upstream's log, the authority, trust-control
/// (kept running while this lives) and the edge's arguments.
struct Behind {
    _dir: tempfile::TempDir,
    log: std::path::PathBuf,
    authority: std::path::PathBuf,
    _trust: trust_process::TrustProcess,
    args: Vec<String>,
}

impl Behind {
    fn policy(python: &Path, policy_text: &str) -> Behind {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.log");
        let authority = authority(dir.path());
        let token_file = trust_process::token_file(dir.path(), trust_process::TOKEN);
        let trust = trust_process::TrustProcess::start(&dir.path().join("trust.db"), &token_file);
        let policy = dir.path().join("policy.toml");
        std::fs::write(&policy, policy_text).unwrap();
        let mut args = counting_args(python, &log, &authority);
        args.extend([
            "--control-url".to_string(),
            trust.url.clone(),
            "--control-token-file".to_string(),
            token_file.to_str().unwrap().to_string(),
            "--policy".to_string(),
            policy.to_str().unwrap().to_string(),
        ]);
        Behind {
            _dir: dir,
            log,
            authority,
            _trust: trust,
            args,
        }
    }
}

// With trust-control holding the label store, the taint an untrusted upstream's answer left on a client outlives a restart of the edge: after the edge is stopped and started again, the client's consequential call is refused (untrusted-context) and never reaches the upstream, while another client that never read the untrusted answer is admitted, and may not name the first client's session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn taint_from_an_untrusted_upstream_outlives_an_edge_restart() {
    let Some(python) = mcp_python() else { return };
    let behind = Behind::policy(
        &python,
        "[[servers]]\nid = \"notes\"\nintegrity = \"untrusted\"\n\n[[guards]]\nid = \"integrity\"\nkind = \"integrity\"\n\n[guards.config]\nconsequential = { notes = [\"note\"] }\n",
    );
    let (alice, bob) = (client_key(1), client_key(2));
    let alice_token = grant(&behind.authority, &alice, "notes", "echo,note", &[]);
    let bob_token = grant(&behind.authority, &bob, "notes", "echo,note", &[]);
    let (args, log) = (&behind.args, &behind.log);
    let page = json!({"text": "a page from the open web"});
    let edge = Edge::start(args).await;
    let read = edge
        .call(&alice_token, &alice, "notes", "echo", &page, "t-1")
        .await;
    assert_eq!(verdict(&read).0, "allow", "{read:?}");
    edge.stop().await;

    let edge = Edge::start(args).await;
    let note = json!({"text": "pay the invoice"});
    let refused = edge
        .call(&alice_token, &alice, "notes", "note", &note, "t-2")
        .await;
    assert_eq!(
        verdict(&refused),
        ("deny".to_string(), "untrusted-context".to_string()),
        "{refused:?}"
    );
    let clean = edge
        .call(&bob_token, &bob, "notes", "note", &note, "t-3")
        .await;
    assert_eq!(verdict(&clean).0, "allow", "{clean:?}");
    // Bob may not name Alice's session, neither to be judged by its
    // journal nor to taint it.
    let alice_session = format!("{}-1", key_hex(&alice));
    let call = chio_controller::mcp_edge::present::ClientCall {
        server: "notes",
        tool: "echo",
        arguments: &page,
        request_id: "t-4",
        session_id: &alice_session,
        issued_at_ms: now_ms(),
    };
    let meta = chio_controller::mcp_edge::present::client_meta(&bob_token, &bob, &call).unwrap();
    let foreign = edge.call_with_meta("echo", &page, Some(meta)).await;
    assert_eq!(
        verdict(&foreign),
        ("deny".to_string(), "edge-session-not-own".to_string()),
        "{foreign:?}"
    );
    edge.stop().await;
    assert_eq!(
        log_lines(log),
        ["echo a page from the open web", "note pay the invoice"],
        "the tainted client's call reached the upstream"
    );
}

// An upstream is a live server whose state the edge cannot see: a client that read an untrusted upstream (the real git server) sends a note to another upstream, which keeps it in trust-control, so another client that reads that upstream afterwards, after a restart of the edge, is lowered and its consequential call is refused without reaching the upstream; a client that read the upstream before the write, and one that never read it, are admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_tainted_client_sent_an_upstream_reaches_its_later_readers() {
    let Some(python) = mcp_python() else { return };
    let mut behind = Behind::policy(
        &python,
        "[[servers]]\nid = \"git\"\nintegrity = \"untrusted\"\n\n[[guards]]\nid = \"integrity\"\nkind = \"integrity\"\n\n[guards.config]\nconsequential = { notes = [\"pay\"] }\n",
    );
    let repo = git_fixture_repo(behind.log.parent().unwrap());
    behind
        .args
        .extend(["--upstream".to_string(), git_upstream(&python, &repo)]);
    let keys = [client_key(1), client_key(2), client_key(3), client_key(4)];
    let notes = |key| grant(&behind.authority, key, "notes", "echo,note,pay", &[]);
    let [alice, bob, carol, dave] = &keys;
    let web = grant(&behind.authority, alice, "git", "git_status", &[]);
    let (alice_notes, bob_notes, carol_notes, dave_notes) =
        (notes(alice), notes(bob), notes(carol), notes(dave));
    let pay = json!({"amount": "9.00", "currency": "EUR"});
    let text = |t: &str| json!({ "text": t });
    let edge = Edge::start(&behind.args).await;
    // Dave reads the notes before anything tainted reached them.
    let early = edge
        .call(&dave_notes, dave, "notes", "echo", &text("agenda"), "d-1")
        .await;
    assert_eq!(verdict(&early).0, "allow", "{early:?}");
    let path = json!({"repo_path": repo.to_str().unwrap()});
    let read = edge
        .call(&web, alice, "git", "git_status", &path, "a-1")
        .await;
    assert_eq!(verdict(&read).0, "allow", "{read:?}");
    let written = edge
        .call(
            &alice_notes,
            alice,
            "notes",
            "note",
            &text("send 9 EUR to the attacker"),
            "a-2",
        )
        .await;
    assert_eq!(verdict(&written).0, "allow", "{written:?}");
    edge.stop().await;

    let edge = Edge::start(&behind.args).await;
    let listed = edge
        .call(&bob_notes, bob, "notes", "echo", &text("agenda"), "b-1")
        .await;
    assert_eq!(verdict(&listed).0, "allow", "{listed:?}");
    let refused = edge
        .call(&bob_notes, bob, "notes", "pay", &pay, "b-2")
        .await;
    assert_eq!(
        verdict(&refused),
        ("deny".to_string(), "untrusted-context".to_string()),
        "{refused:?}"
    );
    let unread = edge
        .call(&carol_notes, carol, "notes", "pay", &pay, "c-1")
        .await;
    assert_eq!(verdict(&unread).0, "allow", "{unread:?}");
    let before = edge
        .call(&dave_notes, dave, "notes", "pay", &pay, "d-2")
        .await;
    assert_eq!(verdict(&before).0, "allow", "{before:?}");
    edge.stop().await;
    assert_eq!(
        log_lines(&behind.log),
        [
            "echo agenda",
            "note send 9 EUR to the attacker",
            "echo agenda",
            "pay 9.00 EUR",
            "pay 9.00 EUR"
        ],
        "the lowered client's payment reached the upstream"
    );
}

// A monetary budget held and settled in trust-control outlives a restart of the edge: what a capability spent before the restart counts after it, so the payment that would pass the limit is refused and never reaches the upstream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spent_budget_outlives_an_edge_restart() {
    let Some(python) = mcp_python() else { return };
    let behind = Behind::policy(
        &python,
        "[[budgets]]\nid = \"pay-limit\"\ncapability = \"alice-pay\"\nserver = \"notes\"\ntool = \"pay\"\namount = \"amount\"\ncurrency = \"EUR\"\nlimit = \"10.00\"\n",
    );
    let alice = client_key(1);
    let token = grant(
        &behind.authority,
        &alice,
        "notes",
        "pay",
        &["--id", "alice-pay"],
    );
    let (args, log) = (&behind.args, &behind.log);
    let six = json!({"amount": "6.00", "currency": "EUR"});
    let edge = Edge::start(args).await;
    let first = edge.call(&token, &alice, "notes", "pay", &six, "b-1").await;
    assert_eq!(verdict(&first).0, "allow", "{first:?}");
    edge.stop().await;

    let edge = Edge::start(args).await;
    let second = edge.call(&token, &alice, "notes", "pay", &six, "b-2").await;
    assert_eq!(verdict(&second).0, "deny", "{second:?}");
    assert!(text(&second).contains("pay-limit"), "{second:?}");
    let four = json!({"amount": "4.00", "currency": "EUR"});
    let last = edge
        .call(&token, &alice, "notes", "pay", &four, "b-3")
        .await;
    assert_eq!(verdict(&last).0, "allow", "{last:?}");
    edge.stop().await;
    assert_eq!(log_lines(log), ["pay 6.00 EUR", "pay 4.00 EUR"]);
}

// Every id a client chooses is refused by the edge, before the kernel, when it holds a control character, as a malformed presentation naming the field: the request id, the agent id and the session id of the signed request (edge-request-malformed), and a delegated capability's id (edge-token-malformed); none is answered as a store failure, none reaches the upstream. Printable ids of any script, a space among them, and ids of exactly 256 characters are admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_a_client_chooses_are_refused_with_a_control_character() {
    use chio_controller::mcp_edge::grant::{decode_token, encode_token};
    use chio_controller::mcp_edge::present::{client_meta, ClientCall};
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let alice = client_key(1);
    let bob = client_key(2);
    let token = grant(&authority, &alice, "notes", "echo", &[]);
    let edge = Edge::start(&counting_args(&python, &log, &authority)).await;
    let hello = json!({"text": "hello"});
    let own = format!("{}-1", key_hex(&alice));
    let meta = |request_id: &str, session_id: &str| {
        let call = ClientCall {
            server: "notes",
            tool: "echo",
            arguments: &hello,
            request_id,
            session_id,
            issued_at_ms: now_ms(),
        };
        client_meta(&token, &alice, &call).unwrap()
    };
    let mut refused = Vec::new();
    for request_id in ["r\n1", "r\u{7f}2", "\u{0}", "r\u{85}3"] {
        refused.push(("request_id", meta(request_id, &own)));
    }
    refused.push(("session_id", meta("s-1", &format!("{own}\tx"))));
    let mut agent = meta("a-1", &own);
    agent["chio/request"]["agent_id"] = json!(format!("{}\r", key_hex(&alice)));
    refused.push(("agent_id", agent));
    for (field, meta) in refused {
        let result = edge.call_with_meta("echo", &hello, Some(meta)).await;
        assert_eq!(
            verdict(&result),
            ("deny".to_string(), "edge-request-malformed".to_string()),
            "{field}: {result:?}"
        );
        assert!(text(&result).contains(field), "{field}: {result:?}");
    }
    // A delegated capability whose id the delegating client chose.
    let root = decode_token(&token).unwrap();
    let delegated = root
        .delegate(
            &alice,
            &key_hex(&bob),
            &chio_kernel::token::Attenuation::default(),
            "alice-to-bob\n1",
            now_ms(),
        )
        .unwrap();
    let delegated = encode_token(&delegated).unwrap();
    let result = edge
        .call(&delegated, &bob, "notes", "echo", &hello, "d-1")
        .await;
    assert_eq!(
        verdict(&result),
        ("deny".to_string(), "edge-token-malformed".to_string()),
        "{result:?}"
    );
    assert!(
        log_lines(&log).is_empty(),
        "a refused id reached the upstream"
    );
    // Printable ids pass, whatever their script, up to 256 characters.
    let long = "é".repeat(256);
    for (request_id, session_id) in [
        ("r 1 ünïcödé ✓", own.clone()),
        (
            long.as_str(),
            format!("{}-{}", key_hex(&alice), "名".repeat(100)),
        ),
    ] {
        let result = edge
            .call_with_meta("echo", &hello, Some(meta(request_id, &session_id)))
            .await;
        assert_eq!(verdict(&result).0, "allow", "{request_id}: {result:?}");
    }
    assert_eq!(log_lines(&log), ["echo hello", "echo hello"]);
    edge.stop().await;
}

// An upstream answer holding an integer past 2^53 has no canonical form, so no receipt can bind its hash: the call reached the upstream, its answer is withheld as an error result with the output-uncanonical code and none of the number, the next call is answered as usual, and the session folder keeps the edge's signed record of both (a scenario cannot write the integer, so no bundle).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_answer_without_a_canonical_form_is_withheld() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "status", &[]);
    let session = dir.path().join("session");
    let mut args = counting_args(&python, &log, &authority);
    args.extend(["--session-out".into(), session.to_str().unwrap().into()]);
    let edge = Edge::start(&args).await;
    let huge = edge
        .call(
            &token,
            &alice,
            "notes",
            "status",
            &json!({"text": "huge"}),
            "h-1",
        )
        .await;
    assert_eq!(
        verdict(&huge),
        ("deny".to_string(), "output-uncanonical".to_string()),
        "{huge:?}"
    );
    let shown = serde_json::to_string(&huge).unwrap();
    assert!(!shown.contains("9007199254740993"), "{shown}");
    let quiet = edge
        .call(
            &token,
            &alice,
            "notes",
            "status",
            &json!({"text": "quiet"}),
            "h-2",
        )
        .await;
    assert_eq!(verdict(&quiet), ("allow".to_string(), String::new()));
    assert_eq!(log_lines(&log), ["status huge", "status quiet"]);
    edge.stop().await;
    // The session's record keeps both calls; a scenario cannot write the
    // integer, so the folder stays the edge's record without a bundle.
    assert_eq!(session_verdicts(&session), ["deny", "allow"]);
    assert_eq!(
        session_calls(&session)[0]["reason_code"],
        "output-uncanonical"
    );
    assert!(session.join("session-end.json").is_file());
    assert!(!session.join("arena.json").exists());
}

// An upstream that writes a line that is not JSON has its waiting call refused at once, naming why, instead of after the upstream timeout; the call it received spends its budget, and the next call is answered as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_upstream_answer_fails_the_waiting_call_at_once() {
    let Some(python) = mcp_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let authority = authority(dir.path());
    let alice = client_key(1);
    let token = grant(&authority, &alice, "notes", "echo", &[]);
    let mut args = counting_args(&python, &log, &authority);
    args.extend(["--upstream-timeout-ms".into(), "120000".into()]);
    let edge = Edge::start(&args).await;
    let started = std::time::Instant::now();
    let garbled = edge
        .call(
            &token,
            &alice,
            "notes",
            "echo",
            &json!({"text": "garbled"}),
            "g-1",
        )
        .await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(60),
        "refused at once, not after the upstream timeout"
    );
    assert_eq!(
        verdict(&garbled),
        ("deny".to_string(), "dispatch-failed".to_string()),
        "{garbled:?}"
    );
    let shown = serde_json::to_string(&garbled).unwrap();
    assert!(shown.contains("cannot be read"), "{shown}");
    let next = edge
        .call(
            &token,
            &alice,
            "notes",
            "echo",
            &json!({"text": "after"}),
            "g-2",
        )
        .await;
    assert_eq!(
        verdict(&next),
        ("allow".to_string(), String::new()),
        "{next:?}"
    );
    assert_eq!(log_lines(&log), ["echo garbled", "echo after"]);
    edge.stop().await;
}

/// Two authorities' folders (`a/`, `b/`, each for an `edge.key` and the
/// counting upstream's `calls.log`) beside one real trust-control.
struct TwoAuthorities {
    dir: tempfile::TempDir,
    token_file: std::path::PathBuf,
    trust: trust_process::TrustProcess,
}

impl TwoAuthorities {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["a", "b"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        let token_file = trust_process::token_file(dir.path(), trust_process::TOKEN);
        let trust = trust_process::TrustProcess::start(&dir.path().join("trust.db"), &token_file);
        TwoAuthorities {
            dir,
            token_file,
            trust,
        }
    }

    fn a(&self) -> std::path::PathBuf {
        self.dir.path().join("a")
    }

    fn b(&self) -> std::path::PathBuf {
        self.dir.path().join("b")
    }

    /// The flags of an edge whose files are in `sub`, bound to the shared
    /// trust-control under `namespace`.
    fn edge_args(&self, python: &Path, sub: &Path, namespace: &str) -> Vec<String> {
        let mut args = counting_args(python, &sub.join("calls.log"), &sub.join("edge.key"));
        args.extend([
            "--control-url".to_string(),
            self.trust.url.clone(),
            "--control-token-file".to_string(),
            self.token_file.to_str().unwrap().to_string(),
            "--namespace".to_string(),
            namespace.to_string(),
        ]);
        args
    }
}

// Two edges with their own authorities share one trust-control, each in its own namespace: each admits only the capabilities its own authority issued, whatever issuer keys trust-control holds (the other edge's, or a run's arena authority, which anyone knowing the run's seed can derive). Edge B refuses edge A's capability as untrusted and forwards nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edge_trusts_only_its_own_authority_in_a_shared_trust_control() {
    let Some(python) = mcp_python() else { return };
    let shared = TwoAuthorities::start();
    let edge_args = |sub: &Path, namespace: &str| shared.edge_args(&python, sub, namespace);
    let (dir_a, dir_b) = (shared.a(), shared.b());
    let (authority_a, authority_b) = (authority(&dir_a), authority(&dir_b));
    let alice = client_key(1);
    let token_a = grant(&authority_a, &alice, "notes", "echo", &[]);
    let token_b = grant(&authority_b, &alice, "notes", "echo", &[]);
    let edge_a = Edge::start(&edge_args(&dir_a, "edge-a")).await;
    let edge_b = Edge::start(&edge_args(&dir_b, "edge-b")).await;
    let hello = json!({"text": "hello"});
    // Both authorities' keys are in trust-control now.
    let own = edge_a
        .call(&token_a, &alice, "notes", "echo", &hello, "x-1")
        .await;
    assert_eq!(verdict(&own).0, "allow", "{own:?}");
    let foreign = edge_b
        .call(&token_a, &alice, "notes", "echo", &hello, "x-2")
        .await;
    assert_eq!(
        verdict(&foreign),
        ("deny".to_string(), "untrusted-issuer".to_string()),
        "{foreign:?}"
    );
    assert!(edge_b.list(Some(&token_a)).await.is_empty());
    let own_b = edge_b
        .call(&token_b, &alice, "notes", "echo", &hello, "x-3")
        .await;
    assert_eq!(verdict(&own_b).0, "allow", "{own_b:?}");
    edge_a.stop().await;
    edge_b.stop().await;
    assert_eq!(log_lines(&dir_a.join("calls.log")), ["echo hello"]);
    assert_eq!(log_lines(&dir_b.join("calls.log")), ["echo hello"]);
}

// A namespace in trust-control belongs to the first authority that serves in it: an edge of another authority naming the same namespace refuses to start (CHIO-MCP-CONFIG, exit 2) and leaves no mark, so the owner starts again, since budgets, revocations and seen request ids are kept there by capability and request id, which are not secret; an edge of the same authority shares it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_belongs_to_one_authority() {
    let Some(python) = mcp_python() else { return };
    let shared = TwoAuthorities::start();
    let edge_args = |sub: &Path| shared.edge_args(&python, sub, "shared");
    let (dir_a, dir_b) = (shared.a(), shared.b());
    let (authority_a, _) = (authority(&dir_a), authority(&dir_b));
    let alice = client_key(1);
    let token_a = grant(&authority_a, &alice, "notes", "echo", &["--id", "same-id"]);
    let edge_a = Edge::start(&edge_args(&dir_a)).await;
    let again = Edge::start(&edge_args(&dir_a)).await;
    let refused = std::process::Command::new(chio_bin())
        .args(["mcp", "serve", "--stdio"])
        .args(edge_args(&dir_b))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("CHIO-MCP-CONFIG"), "{stderr}");
    assert!(
        stderr.contains("belongs to another edge authority"),
        "{stderr}"
    );
    let hello = json!({"text": "hello"});
    let first = edge_a
        .call(&token_a, &alice, "notes", "echo", &hello, "n-1")
        .await;
    assert_eq!(verdict(&first).0, "allow", "{first:?}");
    let second = again
        .call(&token_a, &alice, "notes", "echo", &hello, "n-2")
        .await;
    assert_eq!(
        verdict(&second).0,
        "allow",
        "an edge of the same authority shares it: {second:?}"
    );
    edge_a.stop().await;
    again.stop().await;
    assert!(
        !dir_b.join("calls.log").exists(),
        "the refused edge started nothing"
    );
    // The refused start left no mark in the namespace: its owner starts
    // again and is served.
    let restarted = Edge::start(&edge_args(&dir_a)).await;
    let third = restarted
        .call(&token_a, &alice, "notes", "echo", &hello, "n-3")
        .await;
    assert_eq!(verdict(&third).0, "allow", "{third:?}");
    restarted.stop().await;
}
