//! Tests of the simulated tool servers.

use super::*;

/// What a call from an agent that read nothing classified carries.
fn clean() -> BTreeSet<String> {
    BTreeSet::new()
}

/// A caller whose request id names no step.
fn anon() -> Caller<'static> {
    Caller {
        request_id: "req",
        agent: "alice",
    }
}

fn workspace() -> ToolServer {
    let mut files = BTreeMap::new();
    files.insert("/workspace/notes.txt".to_string(), "hello".to_string());
    files.insert(
        "/workspace/internal/plan.md".to_string(),
        "q3 plan".to_string(),
    );
    ToolServer::new(
        "workspace",
        ToolServerConfig::Workspace {
            root: "/workspace".to_string(),
            files,
            labels: vec![("/workspace/internal/**".to_string(), Label::Internal)],
        },
    )
}

// A read takes the lowest integrity of the globs it matches, else the server's; a failed call lowers nothing.
#[test]
fn reads_carry_integrity() {
    let mut ws = workspace().with_integrity(IntegrityPolicy {
        default: Integrity::Trusted,
        globs: vec![("/workspace/internal/**".to_string(), Integrity::Untrusted)],
    });
    let notes = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/workspace/notes.txt"}),
        &clean(),
    );
    assert_eq!(notes.integrity, Integrity::Trusted);
    let plan = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/workspace/internal/plan.md"}),
        &clean(),
    );
    assert_eq!(plan.integrity, Integrity::Untrusted);
    let missing = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/workspace/internal/none"}),
        &clean(),
    );
    assert_eq!(missing.integrity, Integrity::Trusted);
    let mut web = ToolServer::new("web", ToolServerConfig::Http).with_integrity(IntegrityPolicy {
        default: Integrity::Untrusted,
        globs: Vec::new(),
    });
    let answer = web.call(
        anon(),
        "http_post",
        &json!({"url": "https://example.test"}),
        &clean(),
    );
    assert_eq!(answer.integrity, Integrity::Untrusted);
}

// A sink refuses arguments with no canonical form (not performed, nothing kept, the value never echoed) instead of answering the digest of something else; the same arguments within range are published.
#[test]
fn sinks_refuse_arguments_with_no_canonical_form() {
    let huge = json!({"url": "https://example.test", "n": 1u64 << 60});
    for (config, tool) in [
        (ToolServerConfig::Http, "http_post"),
        (ToolServerConfig::Publish, "publish"),
    ] {
        let mut server = ToolServer::new("sink", config);
        let refused = server.call(anon(), tool, &huge, &clean());
        assert!(!refused.performed, "{tool}: {:?}", refused.content);
        // The arena's own refusal: no server received it, nothing is spent.
        assert!(!refused.received, "{tool}");
        assert_eq!(refused.content["ok"], false);
        let error = refused.content["error"].as_str().unwrap_or_default();
        assert!(error.contains("no canonical JSON form"), "{error}");
        assert!(!error.contains(&(1u64 << 60).to_string()), "{error}");
        let kept = server.call(
            anon(),
            tool,
            &json!({"url": "https://example.test", "n": 1}),
            &clean(),
        );
        assert!(kept.performed, "{tool}");
        assert_eq!(server.received(), 1, "{tool}: the refused call was kept");
    }
}

// What a call writes keeps the labels the call carried: a read of it, or a listing naming it, answers them joined with the declaration's; an overwrite takes its writer's labels; a fixture edit keeps the labels of the file it replaces.
#[test]
fn stored_items_keep_their_writers_labels() {
    let mut ws = workspace();
    let tainted: BTreeSet<String> = ["internal", "integrity:untrusted"]
        .into_iter()
        .map(str::to_string)
        .collect();
    let path = "/workspace/copy.txt";
    let written = ws.call(
        anon(),
        "write_file",
        &json!({"path": path, "content": "q3 plan"}),
        &tainted,
    );
    assert!(written.performed);
    assert_eq!(written.label, None, "a write reveals nothing");
    let read = ws.call(anon(), "read_file", &json!({"path": path}), &clean());
    assert_eq!(read.label, Some(Label::Internal));
    assert_eq!(read.integrity, Integrity::Untrusted);
    let listing = ws.call(anon(), "list_dir", &json!({"path": "/workspace"}), &clean());
    assert_eq!(listing.integrity, Integrity::Untrusted);
    // The declaration still counts: a clean write under a labelled glob reads labelled.
    let confidential: BTreeSet<String> = ["confidential".to_string()].into();
    ws.call(
        anon(),
        "write_file",
        &json!({"path": "/workspace/internal/plan.md", "content": "x"}),
        &confidential,
    );
    let plan = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/workspace/internal/plan.md"}),
        &clean(),
    );
    assert_eq!(plan.label, Some(Label::Confidential));
    // An edit outside any call keeps the stored labels; a clean overwrite replaces them.
    ws.change_file(path, FileChange::Write("edited".to_string()));
    let edited = ws.call(anon(), "read_file", &json!({"path": path}), &clean());
    assert_eq!(edited.content["content"], "edited");
    assert_eq!(edited.integrity, Integrity::Untrusted);
    ws.call(
        anon(),
        "write_file",
        &json!({"path": path, "content": "mine"}),
        &clean(),
    );
    let mine = ws.call(anon(), "read_file", &json!({"path": path}), &clean());
    assert_eq!((mine.label, mine.integrity), (None, Integrity::Trusted));
    // A delete tells that the file was there: its answer carries the file's labels.
    ws.call(
        anon(),
        "write_file",
        &json!({"path": path, "content": "x"}),
        &tainted,
    );
    let deleted = ws.call(anon(), "delete_file", &json!({"path": path}), &clean());
    assert_eq!(
        (deleted.label, deleted.integrity),
        (Some(Label::Internal), Integrity::Untrusted)
    );
    // A fixture edit of a seeded file stays unlabelled, as the fixture was.
    ws.change_file(
        "/workspace/notes.txt",
        FileChange::Write("edit".to_string()),
    );
    let notes = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/workspace/notes.txt"}),
        &clean(),
    );
    assert_eq!((notes.label, notes.integrity), (None, Integrity::Trusted));
}

// A read returns the seeded content and the label of the glob it matches.
#[test]
fn reads_carry_labels() {
    let mut ws = workspace();
    let plain = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/workspace/notes.txt"}),
        &clean(),
    );
    assert_eq!(plain.content["content"], "hello");
    assert_eq!(plain.label, None);
    let internal = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/workspace/internal/plan.md"}),
        &clean(),
    );
    assert_eq!(internal.content["content"], "q3 plan");
    assert_eq!(internal.label, Some(Label::Internal));
}

// A fixture edit answers what was there, and its restore puts it back.
#[test]
fn change_file_answers_the_previous_content_and_restores() {
    let mut server = workspace();
    let path = "/workspace/notes.txt";
    let original = server.change_file(path, FileChange::Keep);
    assert_eq!(original.as_deref(), Some("hello"));
    let edited = FileChange::Write("edited".to_string());
    assert_eq!(server.change_file(path, edited), original);
    assert_eq!(
        server.change_file(path, FileChange::Keep).as_deref(),
        Some("edited")
    );
    let restore = FileChange::Write("hello".to_string());
    assert_eq!(server.change_file(path, restore).as_deref(), Some("edited"));
    assert_eq!(server.change_file(path, FileChange::Keep), original);
    let fresh = "/workspace/new.txt";
    let written = FileChange::Write("x".to_string());
    assert_eq!(server.change_file(fresh, written), None);
    assert_eq!(
        server.change_file(fresh, FileChange::Delete).as_deref(),
        Some("x")
    );
    assert_eq!(server.change_file(fresh, FileChange::Keep), None);
}

// Writes are visible to later reads and listings, in sorted order.
#[test]
fn writes_then_reads_and_lists() {
    let mut ws = workspace();
    let w = ws.call(
        anon(),
        "write_file",
        &json!({"path": "/workspace/b.txt", "content": "x"}),
        &clean(),
    );
    assert_eq!(w.content["ok"], true);
    assert_eq!(
        ws.call(
            anon(),
            "read_file",
            &json!({"path": "/workspace/b.txt"}),
            &clean()
        )
        .content["content"],
        "x"
    );
    let listing = ws.call(anon(), "list_dir", &json!({"path": "/workspace"}), &clean());
    assert_eq!(
        listing.content["entries"],
        json!(["b.txt", "internal/", "notes.txt"])
    );
    assert_eq!(listing.label, Some(Label::Internal));
}

// Paths outside the root or climbing above it are answered as failures.
#[test]
fn paths_outside_root_fail() {
    let mut ws = workspace();
    let out = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/etc/passwd"}),
        &clean(),
    );
    assert_eq!(out.content["ok"], false);
    let climb = ws.call(
        anon(),
        "read_file",
        &json!({"path": "/workspace/../../etc"}),
        &clean(),
    );
    assert_eq!(climb.content["ok"], false);
    assert!(climb.content["error"]
        .as_str()
        .unwrap()
        .contains("escapes the root"));
}

// The test runner fails exactly when a failing test is run.
#[test]
fn test_runner_is_deterministic() {
    let mut failing = BTreeSet::new();
    failing.insert("test_pricing".to_string());
    let mut tr = ToolServer::new("tests", ToolServerConfig::TestRunner { failing });
    assert_eq!(
        tr.call(
            anon(),
            "run_tests",
            &json!({"tests": ["test_ok"]}),
            &clean()
        )
        .content["status"],
        "pass"
    );
    assert_eq!(
        tr.call(anon(), "run_tests", &json!({}), &clean()).content["status"],
        "fail"
    );
}

// Sinks keep what they receive and digest it canonically; an answer depends only on its own call, never on what other callers sent before (a count would carry one caller's data to the next), so it carries no one else's labels.
#[test]
fn sinks_record_and_answer_only_their_call() {
    let mut p = ToolServer::new("pub", ToolServerConfig::Publish);
    let a = p.call(anon(), "publish", &json!({"b": 1, "a": 2}), &clean());
    let b = p.call(anon(), "publish", &json!({"a": 2, "b": 1}), &clean());
    assert_eq!(p.received(), 2);
    assert_eq!(
        a.content, b.content,
        "the second answer reveals the first call"
    );
    let mut t = ToolServer::new(
        "tests",
        ToolServerConfig::TestRunner {
            failing: BTreeSet::new(),
        },
    );
    let first = t.call(anon(), "run_tests", &json!({}), &clean());
    assert_eq!(
        first.content,
        t.call(anon(), "run_tests", &json!({}), &clean()).content
    );
    let mut h = ToolServer::new("web", ToolServerConfig::Http);
    assert_eq!(
        h.call(anon(), "http_post", &json!({"url": "https://x"}), &clean())
            .content["status"],
        200
    );
    assert_eq!(
        h.call(anon(), "nope", &json!({}), &clean()).content["ok"],
        false
    );
}

fn recorded() -> ToolServer {
    let call = |agent: &str, tool: &str, arguments: Value, output: Value| RecordedAnswer {
        matches: AnswerMatch::Call {
            agent: agent.to_string(),
            tool: tool.to_string(),
            arguments: String::from_utf8(
                chio_kernel::canonical::canonical_bytes(&arguments).unwrap(),
            )
            .unwrap(),
        },
        ok: true,
        output,
    };
    ToolServer::new(
        "git",
        ToolServerConfig::Recorded {
            answers: vec![
                RecordedAnswer {
                    matches: AnswerMatch::Step("status".to_string()),
                    ok: true,
                    output: json!({"branch": "main"}),
                },
                call(
                    "alice",
                    "git_log",
                    json!({"max_count": 1, "repo_path": "/repo"}),
                    json!("first"),
                ),
                call(
                    "alice",
                    "git_log",
                    json!({"repo_path": "/repo", "max_count": 1}),
                    json!("second"),
                ),
                RecordedAnswer {
                    matches: AnswerMatch::Step("push".to_string()),
                    ok: false,
                    output: json!("rejected"),
                },
                call(
                    "alice",
                    "read",
                    json!({"path": "/repo/internal/plan"}),
                    json!("plan"),
                ),
            ],
            labels: vec![("/repo/internal/**".to_string(), Label::Internal)],
        },
    )
}

fn caller<'a>(request_id: &'a str, agent: &'a str) -> Caller<'a> {
    Caller { request_id, agent }
}

// A step's answer is matched by its request id once, whatever the arguments; other calls take the first unused answer of their agent, tool and canonical arguments, in order; an answer that is not ok is not performed, and every recorded answer was received by the server (it spends), unlike a call that matches none.
#[test]
fn recorded_answers_match_by_step_then_by_call() {
    let mut git = recorded();
    let status = git.call(
        caller("status", "alice"),
        "git_status",
        &json!({"x": 1}),
        &clean(),
    );
    assert!(status.performed);
    assert_eq!(
        status.content,
        json!({"ok": true, "output": {"branch": "main"}})
    );
    let again = git.call(
        caller("status", "alice"),
        "git_status",
        &json!({}),
        &clean(),
    );
    assert!(!again.performed, "a step's answer is given once");
    let args = json!({"repo_path": "/repo", "max_count": 1});
    let first = git.call(caller("adv#1", "alice"), "git_log", &args, &clean());
    let second = git.call(caller("adv#2", "alice"), "git_log", &args, &clean());
    assert_eq!(first.content["output"], "first");
    assert_eq!(second.content["output"], "second");
    let third = git.call(caller("adv#3", "alice"), "git_log", &args, &clean());
    assert!(!third.performed);
    let error = third.content["error"].as_str().unwrap();
    assert!(
        error.contains("answers[1]") && error.contains("used already"),
        "{error}"
    );
    let push = git.call(caller("push", "alice"), "git_push", &json!({}), &clean());
    assert_eq!(
        (push.performed, push.content["ok"].clone()),
        (false, json!(false))
    );
    assert_eq!(push.content["output"], "rejected");
    // Every recorded answer was the server's: received (its budget is
    // spent), performed or not; an answer the arena made for a call no
    // recorded answer matches was received by no server.
    assert!(status.received && push.received);
    assert!(!again.received && !third.received);
}

// A call that matches nothing is not performed, naming the nearest recorded call and the argument key that differs, never a value.
#[test]
fn unmatched_calls_name_the_nearest_answer_without_values() {
    let mut git = recorded();
    let secret = "sk-very-secret-value-0123456789";
    let miss = git.call(
        caller("s", "alice"),
        "git_log",
        &json!({"repo_path": "/repo", "max_count": secret}),
        &clean(),
    );
    assert!(!miss.performed);
    let error = miss.content["error"].as_str().unwrap();
    assert!(
        error.contains("answers[1]") && error.contains("argument max_count differs"),
        "{error}"
    );
    assert!(
        !error.contains(secret) && !error.contains("/repo"),
        "{error}"
    );
    let other = git.call(
        caller("s", "bob"),
        "git_log",
        &json!({"repo_path": "/repo", "max_count": 1}),
        &clean(),
    );
    let error = other.content["error"].as_str().unwrap();
    assert!(error.contains("recorded for agent alice"), "{error}");
    let none = git.call(caller("s", "alice"), "git_blame", &json!({}), &clean());
    let error = none.content["error"].as_str().unwrap();
    assert!(
        error.contains("no call of git_blame is recorded"),
        "{error}"
    );
    assert_eq!(git.received(), 0, "a miss uses no answer");
}

// An answer takes the labels of the globs its path argument matches; a server started afresh (a restart) has used no answer.
#[test]
fn recorded_answers_carry_labels_and_restart_fresh() {
    let mut git = recorded();
    let plan = git.call(
        caller("r", "alice"),
        "read",
        &json!({"path": "/repo/internal/plan"}),
        &clean(),
    );
    assert_eq!(plan.label, Some(Label::Internal));
    git.call(
        caller("status", "alice"),
        "git_status",
        &json!({}),
        &clean(),
    );
    assert_eq!(git.received(), 2);
    let mut restarted = recorded();
    assert_eq!(restarted.received(), 0);
    assert!(
        restarted
            .call(
                caller("status", "alice"),
                "git_status",
                &json!({}),
                &clean()
            )
            .performed
    );
}

// A replayed live server's answer belongs to its step only while the step makes the recorded call: another tool, agent or argument answers nothing, and the recorded call still answers its step.
#[test]
fn replayed_answers_need_their_step_to_make_the_recorded_call() {
    let recorded_args = json!({"repo_path": "/repo", "revision": "HEAD"});
    let answer = RecordedAnswer {
        matches: AnswerMatch::StepCall {
            step: "show-head".to_string(),
            agent: "dev".to_string(),
            tool: "git_show".to_string(),
            arguments: String::from_utf8(
                chio_kernel::canonical::canonical_bytes(&recorded_args).unwrap(),
            )
            .unwrap(),
        },
        ok: true,
        output: json!("commit abc"),
    };
    let server = || {
        ToolServer::new(
            "git",
            ToolServerConfig::Recorded {
                answers: vec![answer.clone()],
                labels: Vec::new(),
            },
        )
    };
    let changed = json!({"repo_path": "/repo", "revision": "HEAD:secrets/prod.env"});
    for (agent, tool, arguments) in [
        ("dev", "git_show", &changed),
        ("mallory", "git_show", &recorded_args),
        ("dev", "git_log", &recorded_args),
    ] {
        let mut git = server();
        let miss = git.call(caller("show-head", agent), tool, arguments, &clean());
        assert!(!miss.performed, "{agent} {tool} {arguments}");
        assert_ne!(miss.content["output"], "commit abc");
    }
    let mut git = server();
    let hit = git.call(
        caller("show-head", "dev"),
        "git_show",
        &recorded_args,
        &clean(),
    );
    assert!(hit.performed);
    assert_eq!(hit.content["output"], "commit abc");
}

// An answer the server gave as carried out, too large for a link between node processes to carry, is withheld and stays performed and received, so its call is spent and its money moves; a failure of the same size is withheld and stays not performed. The caller gets the bound, never the answer.
#[test]
fn an_answer_too_large_to_carry_is_withheld_not_undone() {
    let size = chio_arena::recording::MAX_ANSWER_BYTES;
    for ok in [true, false] {
        let answer = RecordedAnswer {
            matches: AnswerMatch::Step("pay".to_string()),
            ok,
            output: json!("a".repeat(size - 10)),
        };
        let mut bank = ToolServer::new(
            "bank",
            ToolServerConfig::Recorded {
                answers: vec![answer],
                labels: Vec::new(),
            },
        );
        let result = bank.call(caller("pay", "clerk"), "pay", &json!({}), &clean());
        assert_eq!(result.performed, ok, "ok = {ok}");
        assert!(result.received, "ok = {ok}");
        let error = result.content["error"].as_str().unwrap_or_default();
        if ok {
            assert!(
                error.starts_with("the server carried the call out; its answer is withheld: the server's answer is ")
                    && error.ends_with("a tool's answer may hold"),
                "{error}"
            );
        }
        assert!(result.content.to_string().len() < 1024);
    }
}
