//! Process tests of the commands that read a bundle as evidence (`chio
//! eval --from-bundle`, `chio report`, `chio arena explain`, `replay`,
//! `diff`): a recorded call is evaluated at its receipt's millisecond; a
//! bundle whose manifest contradicts its own signed receipts is refused;
//! text from a bundle reaches the terminal printable; and an entry that is
//! no regular file or folder is refused rather than read.

use crate::util;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::Value;
use util::{chio, copy_tree, edit_manifest, explain, repo_path, run};

/// A fresh copy of the reference scenarios.
fn workspace() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    copy_tree(&repo_path("scenarios"), &tmp.path().join("scenarios"));
    tmp
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A scenario in the world of `deny_reasons.toml`: one grant with `window`
/// (its TOML lines), one call at 1 ms and one at 1700 ms.
fn window_scenario(dir: &Path, id: &str, window: &str, early: &str, late: &str) -> String {
    let text = format!(
        r#"schema_version = "chio.arena.scenario/v1"
id = "{id}"
title = "a call 200 ms past a window's edge"
rng_seed = 503
virtual_clock_start = "2026-04-06T11:00:00.000Z"

[determinism]
rng_seed = 503
virtual_clock_start = "2026-04-06T11:00:00.000Z"
scheduler = "deterministic-multi-v1"
locale = "C"

[[nodes]]
id = "node-a"

[[kernels]]
id = "kernel-a"
node = "node-a"

[[servers]]
id = "workspace"
kernel = "kernel-a"
kind = "workspace"
fixtures = "fixtures/deny-reasons"

[[agents]]
id = "operator"
role = "operator"
model = "recorded:operator"
seed_prompt_ref = "prompts/deny-reasons.txt"
kernel = "kernel-a"

[[grants]]
id = "operator-read"
agent = "operator"
server = "workspace"
tools = ["read_file"]
path_prefix = "/workspace/"
{window}

[[steps]]
id = "early"
agent = "operator"
server = "workspace"
tool = "read_file"
arguments = {{ path = "/workspace/notes.txt" }}
expect_verdict = "{early}"
at = 1

[[steps]]
id = "late"
agent = "operator"
server = "workspace"
tool = "read_file"
arguments = {{ path = "/workspace/notes.txt" }}
expect_verdict = "{late}"
at = 1700
"#
    );
    let name = format!("scenarios/{id}.toml");
    std::fs::write(dir.join(&name), text).unwrap();
    name
}

/// `chio eval --from-bundle BUNDLE STEP --json`, parsed.
fn eval_step(dir: &Path, bundle: &str, step: &str) -> Value {
    let answer = run(dir, &["eval", "--from-bundle", bundle, step, "--json"], 0);
    serde_json::from_slice(&answer.stdout).unwrap()
}

// A call 200 ms past its capability's expiry, which the kernel denied, is denied as expired by eval of the bundle too; a call 200 ms past its start, which the kernel allowed, passes. The envelope keeps the receipt's millisecond.
#[test]
fn eval_of_a_bundle_decides_at_the_receipts_millisecond() {
    let tmp = workspace();
    let dir = tmp.path();
    let expiry = window_scenario(dir, "expiry_ms", "expires_after_ms = 1500", "allow", "deny");
    run(dir, &["arena", "run", &expiry, "--out", "expiry"], 0);
    let late = eval_step(dir, "expiry", "late");
    assert_eq!(late["verdict"], "deny", "{late}");
    assert_eq!(late["reason"], "capability has expired", "{late}");
    let early = eval_step(dir, "expiry", "early");
    assert_eq!(early["verdict"], "pending_approval", "{early}");

    let start = window_scenario(dir, "start_ms", "not_before_ms = 1500", "deny", "allow");
    run(dir, &["arena", "run", &start, "--out", "start"], 0);
    let late = eval_step(dir, "start", "late");
    assert_eq!(late["verdict"], "pending_approval", "{late}");
    assert_eq!(late["evaluated_at_unix_ms"], 1_775_473_201_700u64, "{late}");
    assert_eq!(late["evaluated_at_unix_secs"], 1_775_473_201u64, "{late}");
    let early = eval_step(dir, "start", "early");
    assert_eq!(early["reason"], "capability not yet valid", "{early}");

    // The envelope written holds the millisecond, and evaluates the same.
    run(
        dir,
        &[
            "eval",
            "--from-bundle",
            "expiry",
            "late",
            "--write-envelope",
            "late.json",
        ],
        0,
    );
    let envelope: Value =
        serde_json::from_slice(&std::fs::read(dir.join("late.json")).unwrap()).unwrap();
    assert_eq!(envelope["clock_override_unix_ms"], 1_775_473_201_700u64);
    assert!(envelope.get("clock_override_unix_secs").is_none());
    let again = run(dir, &["eval", "late.json"], 0);
    assert!(
        stdout(&again).contains("evaluated at: 1775473201700 (Unix milliseconds)"),
        "{}",
        stdout(&again)
    );
}

// An envelope with both clocks is refused, naming the field; a clock in milliseconds past 2^53 is out of range.
#[test]
fn an_envelope_has_one_clock() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let fixture = repo_path("kernel/tests/fixtures/portable/envelope.json");
    let mut envelope: Value = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    envelope["clock_override_unix_ms"] = Value::from(1_710_000_300_000u64);
    std::fs::write(dir.join("both.json"), envelope.to_string()).unwrap();
    let both = stderr(&run(dir, &["eval", "both.json"], 2));
    assert!(
        both.starts_with("error[CHIO-EVAL-INVALID-FIELD]")
            && both.contains("clock_override_unix_ms"),
        "{both}"
    );
    let top = envelope.as_object_mut().unwrap();
    top.remove("clock_override_unix_secs");
    top.insert("clock_override_unix_ms".into(), Value::from(1u64 << 54));
    std::fs::write(dir.join("far.json"), envelope.to_string()).unwrap();
    let far = stderr(&run(dir, &["eval", "far.json"], 2));
    assert!(far.starts_with("error[CHIO-EVAL-OUT-OF-RANGE]"), "{far}");
    // One millisecond past the fixture's last valid one is expired.
    envelope["clock_override_unix_ms"] = Value::from(1_710_000_801_000u64);
    std::fs::write(dir.join("expired.json"), envelope.to_string()).unwrap();
    let expired = run(dir, &["eval", "expired.json", "--json"], 0);
    assert!(
        stdout(&expired).contains("capability has expired"),
        "{}",
        stdout(&expired)
    );
    envelope["clock_override_unix_ms"] = Value::from(1_710_000_800_999u64);
    std::fs::write(dir.join("last.json"), envelope.to_string()).unwrap();
    let last = run(dir, &["eval", "last.json", "--json"], 0);
    assert!(
        stdout(&last).contains("pending_approval"),
        "{}",
        stdout(&last)
    );
}

/// Runs `chio ARGS` in `dir`, failing when it has not ended after a minute.
fn run_bounded(dir: &Path, args: &[&str]) -> Output {
    let (send, receive) = std::sync::mpsc::channel();
    let (dir, owned) = (
        dir.to_path_buf(),
        args.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
    );
    std::thread::spawn(move || {
        let args: Vec<&str> = owned.iter().map(String::as_str).collect();
        send.send(chio(&dir, &args))
    });
    receive
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("chio {args:?} blocked"))
}

// A named pipe among a bundle's inputs, or a top-level file linked to a device, is refused by every command that reads the bundle, naming the file, instead of blocking or reading without end.
#[test]
fn entries_that_are_no_regular_file_are_refused() {
    let tmp = workspace();
    let dir = tmp.path();
    run(
        dir,
        &["arena", "run", "scenarios/deny_reasons.toml", "--out", "b"],
        0,
    );
    let fifo = dir.join("b/inputs/fixtures/deny-reasons/pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let commands: [&[&str]; 4] = [
        &["arena", "replay", "b"],
        &["arena", "explain", "b", "read-notes"],
        &["report", "b", "--out", "b.html"],
        &["eval", "--from-bundle", "b", "read-notes"],
    ];
    for args in commands {
        let output = run_bounded(dir, args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
        assert!(err.starts_with("error[CHIO-ARENA-BUNDLE]"), "{err}");
        assert!(
            err.contains("pipe") && err.contains("a named pipe"),
            "{err}"
        );
    }
    std::fs::remove_file(&fifo).unwrap();
    std::fs::remove_file(dir.join("b/receipts.ndjson")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.join("b/receipts.ndjson")).unwrap();
    for args in commands {
        let output = run_bounded(dir, args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{}", explain(args, &output));
        assert!(
            err.contains("receipts.ndjson") && err.contains("a symbolic link"),
            "{err}"
        );
    }
}

/// `deny_reasons.toml` with `read-dotenv` expecting `allow`, run to the
/// end into `dir/bundle`: a bundle that genuinely fails one step.
fn failing_bundle(dir: &Path, bundle: &str) {
    let text = std::fs::read_to_string(dir.join("scenarios/deny_reasons.toml")).unwrap();
    let failing = text.replacen(
        "expect_verdict = \"deny\"\nexpect_reason = \"matches forbidden glob **/.env\"",
        "expect_verdict = \"allow\"",
        1,
    );
    assert_ne!(failing, text);
    std::fs::write(dir.join("scenarios/failing.toml"), failing).unwrap();
    run(
        dir,
        &[
            "arena",
            "run",
            "scenarios/failing.toml",
            "--out",
            bundle,
            "--keep-going",
        ],
        1,
    );
}

/// The refusal of `report` and `arena explain` of a bundle: both exit 2
/// with `CHIO-ARENA-BUNDLE`, name `place` and point at replay.
fn refused_as_evidence(dir: &Path, bundle: &str, place: &str) {
    let commands: [&[&str]; 3] = [
        &["report", bundle, "--out", "page.html"],
        &["arena", "explain", bundle, "read-dotenv"],
        &["eval", "--from-bundle", bundle, "read-notes"],
    ];
    for args in commands {
        let err = stderr(&run(dir, args, 2));
        assert!(err.starts_with("error[CHIO-ARENA-BUNDLE]"), "{err}");
        assert!(err.contains(place), "{place}: {err}");
        assert!(
            err.contains(&format!(
                "`chio arena replay {bundle}` re-decides every call"
            )),
            "{err}"
        );
    }
    assert!(!dir.join("page.html").exists());
}

// A manifest edited to turn a signed deny into a passing allow is refused by report, explain and eval, naming the step and field; so are receipts emptied, replaced, reordered or re-signed with edited verdicts, and a bundle as the run wrote it is presented.
#[test]
fn a_bundle_that_contradicts_its_receipts_is_refused() {
    let tmp = workspace();
    let dir = tmp.path();
    failing_bundle(dir, "bf");
    run(dir, &["report", "bf", "--out", "bf.html"], 0);
    run(dir, &["arena", "explain", "bf", "read-dotenv"], 0);
    let copy = |name: &str| copy_tree(&dir.join("bf"), &dir.join(name));

    copy("forged");
    edit_manifest(dir, "forged", |m| {
        m["steps"][1]["actual"] = "allow".into();
        m["steps"][1]["pass"] = true.into();
        m["mismatches"] = Value::Array(Vec::new());
        m["status"] = "completed".into();
    });
    refused_as_evidence(
        dir,
        "forged",
        "arena.json steps[1].actual (step read-dotenv)",
    );

    copy("verdict");
    edit_manifest(dir, "verdict", |m| {
        m["steps"][1]["verdict"] = "allow".into()
    });
    refused_as_evidence(
        dir,
        "verdict",
        "arena.json steps[1].verdict (step read-dotenv)",
    );

    copy("judged");
    edit_manifest(dir, "judged", |m| {
        m["mismatches"] = Value::Array(Vec::new())
    });
    refused_as_evidence(dir, "judged", "arena.json mismatches");

    let receipts = std::fs::read_to_string(dir.join("bf/receipts.ndjson")).unwrap();
    let lines: Vec<&str> = receipts.lines().collect();
    let reversed: String = lines.iter().rev().map(|l| format!("{l}\n")).collect();
    for (name, text, place) in [
        ("emptied", String::new(), "arena.json receipt_root"),
        ("garbage", "garbage\n".to_string(), "receipts.ndjson line 1"),
        ("reordered", reversed, "arena.json receipt_root"),
        (
            "flipped",
            receipts.replace("\"verdict\":\"allow\"", "\"verdict\":\"deny\""),
            "receipts.ndjson line 1",
        ),
    ] {
        copy(name);
        std::fs::write(dir.join(name).join("receipts.ndjson"), text).unwrap();
        refused_as_evidence(dir, name, place);
    }
}

/// `bf`'s receipt log without the receipt of `request`, with the Merkle
/// root and count of what is left.
fn without_receipt(dir: &Path, request: &str) -> (String, String, u64) {
    let receipts = std::fs::read_to_string(dir.join("bf/receipts.ndjson")).unwrap();
    let kept: Vec<&str> = receipts
        .lines()
        .filter(|l| !l.contains(&format!("\"request_id\":\"{request}\"")))
        .collect();
    let ids: Vec<String> = kept
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let text = kept.iter().map(|l| format!("{l}\n")).collect();
    (
        text,
        chio_kernel::receipt::merkle_root_of_ids(&refs),
        ids.len() as u64,
    )
}

/// Edits of what no receipt signs, each refused: a refused revocation
/// recorded as done (its refusal's reason kept), steps reordered, and a
/// denied call's receipt removed (the root and count recomputed) with the
/// call recorded as allowed.
fn refused_unsigned_edits(dir: &Path, copy: &dyn Fn(&str)) {
    copy("revoked");
    edit_manifest(dir, "revoked", |m| {
        m["steps"][6]["actual"] = "done".into();
    });
    refused_as_evidence(dir, "revoked", "steps[6].");
    copy("reordered");
    edit_manifest(dir, "reordered", |m| {
        m["steps"].as_array_mut().unwrap().swap(0, 1);
    });
    refused_as_evidence(dir, "reordered", "steps[1].virtual_time");
    let (text, root, count) = without_receipt(dir, "read-dotenv");
    copy("unsigned");
    std::fs::write(dir.join("unsigned/receipts.ndjson"), &text).unwrap();
    edit_manifest(dir, "unsigned", |m| {
        let step = m["steps"][1].as_object_mut().unwrap();
        for key in [
            "verdict",
            "receipt_id",
            "reason",
            "reason_code",
            "guard",
            "trace",
        ] {
            step.remove(key);
        }
        step.insert("actual".into(), "allow".into());
        step.insert("pass".into(), true.into());
        m["mismatches"] = Value::Array(Vec::new());
        m["receipt_root"] = root.clone().into();
        m["receipt_count"] = count.into();
    });
    refused_as_evidence(dir, "unsigned", "steps[1].actual (step read-dotenv): step read-dotenv records a call carried out, but names no signed receipt");
}

// A manifest whose step records say what the bundle's own receipts and scenario do not is refused by report, explain and eval, naming the field: an expectation the scenario does not declare (made to pass), a failing step deleted (with or without its receipt and the witness's step id), the agent, kernel, tool, reason, guard or instant of a call, the reason code its trace names, an expected reason, and the policies emptied.
#[test]
fn a_bundle_whose_steps_contradict_its_receipts_or_scenario_is_refused() {
    let tmp = workspace();
    let dir = tmp.path();
    failing_bundle(dir, "bf");
    let copy = |name: &str| copy_tree(&dir.join("bf"), &dir.join(name));
    let passed = |m: &mut Value| {
        m["steps"][1]["pass"] = true.into();
        m["mismatches"] = Value::Array(Vec::new());
    };
    type Edit = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "expected",
            Box::new(move |m| {
                m["steps"][1]["expected"] = "deny".into();
                passed(m);
            }),
            "steps[1].expected (step read-dotenv): step read-dotenv expects deny, its scenario file allow",
        ),
        (
            "deleted",
            Box::new(|m| {
                m["steps"].as_array_mut().unwrap().remove(1);
                m["mismatches"] = Value::Array(Vec::new());
            }),
            "the signed receipt of request read-dotenv is named by no step",
        ),
        ("agent", Box::new(|m| m["steps"][1]["agent"] = "deputy".into()), "steps[1].agent"),
        ("kernel", Box::new(|m| m["steps"][1]["kernel"] = "kernel-b".into()), "steps[1].kernel"),
        (
            "target",
            Box::new(|m| m["steps"][1]["target"] = "workspace/write_file".into()),
            "steps[1].target",
        ),
        (
            "reason",
            Box::new(|m| m["steps"][1]["reason"] = "rate limit (benign)".into()),
            "steps[1].reason",
        ),
        ("guard", Box::new(|m| m["steps"][1]["guard"] = "other".into()), "steps[1].guard"),
        (
            "time",
            Box::new(|m| m["steps"][1]["virtual_time"] = "2026-01-05T09:00:00.001Z".into()),
            "steps[1].virtual_time",
        ),
        (
            "code",
            Box::new(|m| m["steps"][1]["reason_code"] = "rate-limited".into()),
            "steps[1].reason_code",
        ),
        (
            "expected_reason",
            Box::new(|m| m["steps"][1]["expected_reason"] = "forbidden".into()),
            "steps[1].expected_reason",
        ),
        (
            "policies",
            Box::new(|m| m["policies"] = Value::Object(Default::default())),
            "arena.json policies",
        ),
    ];
    for (name, edit, place) in cases {
        copy(name);
        edit_manifest(dir, name, |m| edit(m));
        refused_as_evidence(dir, name, place);
    }
    refused_unsigned_edits(dir, &copy);

    // The failing step deleted with its receipt, the root and count
    // recomputed: the completed run no longer records every step, and a
    // witness edited to match is not the scenario's.
    let (text, root, count) = without_receipt(dir, "read-dotenv");
    for (name, witness, place) in [
        ("vanished", false, "arena.json status"),
        ("rewitnessed", true, "arena.json determinism.steps"),
    ] {
        copy(name);
        std::fs::write(dir.join(name).join("receipts.ndjson"), &text).unwrap();
        edit_manifest(dir, name, |m| {
            m["steps"].as_array_mut().unwrap().remove(1);
            m["mismatches"] = Value::Array(Vec::new());
            m["receipt_root"] = root.clone().into();
            m["receipt_count"] = count.into();
            if witness {
                m["determinism"]["steps"].as_array_mut().unwrap().remove(1);
            }
        });
        refused_as_evidence(dir, name, place);
    }
}

/// Whether `text` holds a character a terminal acts on: a control
/// character other than a line break, or a bidirectional override.
fn holds_raw_controls(text: &str) -> bool {
    text.chars()
        .any(|c| (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}'))
}

/// A scenario whose recorded tool's schema has an argument under a key
/// holding terminal escapes, given a value of the wrong type.
const ESCAPED_KEY_SCENARIO: &str = r#"schema_version = "chio.arena.scenario/v1"
id = "escaped_key"
title = "an argument key with terminal escapes"
rng_seed = 1
virtual_clock_start = "2026-01-01T00:00:00.000Z"

[determinism]
scheduler = "single-agent-v1"
locale = "C"

[[nodes]]
id = "node-a"

[[kernels]]
id = "kernel-a"
node = "node-a"

[[agents]]
id = "agent"
role = "caller"
model = "recorded:agent"
seed_prompt_ref = "prompts/agent.txt"
kernel = "kernel-a"

[[servers]]
id = "mcp"
kernel = "kernel-a"
kind = "recorded"

[[servers.tools]]
name = "read"
description = "d"
input_schema = '{"type":"object","properties":{"a":{"type":"object","properties":{"b\u001b]0;PWNED\u0007\u001b[2J\u202e":{"type":"string"}}}}}'

[[servers.answers]]
step = "call"
output = "x"

[[grants]]
id = "agent-mcp"
agent = "agent"
server = "mcp"
tools = ["read"]

[[steps]]
id = "call"
agent = "agent"
server = "mcp"
tool = "read"
arguments = { a = { "b\u001B]0;PWNED\u0007\u001B[2J\u202e" = 1 } }
expect_verdict = "allow"
"#;

// A reason quoting a hostile argument, a file name planted in a bundle and a JSON pointer built from an argument key reach the terminal escaped, in arena run's table, explain, replay, diff and a validation error.
#[test]
fn text_from_input_reaches_the_terminal_printable() {
    let tmp = workspace();
    let dir = tmp.path();
    let text = std::fs::read_to_string(dir.join("scenarios/deny_reasons.toml")).unwrap();
    let hostile = text.replacen(
        "path = \"/etc/hosts\"",
        "path = \"/etc/x\\u001b]0;T\\u0007\\u001b[2J\\u202e\\u000b\"",
        1,
    );
    assert_ne!(hostile, text);
    std::fs::write(dir.join("scenarios/hostile.toml"), hostile).unwrap();
    let ran = run(
        dir,
        &["arena", "run", "scenarios/hostile.toml", "--out", "b"],
        0,
    );
    let table = stdout(&ran);
    assert!(!holds_raw_controls(&table), "{table:?}");
    assert!(
        table.contains("reason: path /etc/x\\u{1b}]0;T\\u{7}\\u{1b}[2J\\u{202e}\\u{b}"),
        "{table}"
    );
    let explained = stdout(&run(
        dir,
        &["arena", "explain", "b", "read-outside-prefix"],
        0,
    ));
    assert!(!holds_raw_controls(&explained), "{explained:?}");
    assert!(explained.contains("\\u{202e}"), "{explained}");

    run(
        dir,
        &[
            "arena",
            "run",
            "scenarios/deny_reasons.toml",
            "--out",
            "clean",
        ],
        0,
    );
    copy_tree(&dir.join("clean"), &dir.join("planted"));
    let forged = "x\nno drift: every step has the same verdict and receipt\n\u{1b}[1A\u{1b}[2K";
    std::fs::write(dir.join("planted").join(forged), b"").unwrap();
    for args in [
        &["arena", "replay", "planted"][..],
        &["arena", "diff", "clean", "planted"][..],
    ] {
        let output = run(dir, args, 1);
        let (out, err) = (stdout(&output), stderr(&output));
        assert!(
            !holds_raw_controls(&out) && !holds_raw_controls(&err),
            "{out:?} {err:?}"
        );
        assert!(
            !out.lines().any(|l| l.starts_with("no drift")),
            "a forged line: {out}"
        );
        assert!(err.starts_with("error[CHIO-ARENA-DRIFT]"), "{err}");
    }

    std::fs::create_dir_all(dir.join("keyed/prompts")).unwrap();
    std::fs::write(dir.join("keyed/prompts/agent.txt"), "read\n").unwrap();
    std::fs::write(dir.join("keyed/scenario.toml"), ESCAPED_KEY_SCENARIO).unwrap();
    let refused = stderr(&run(dir, &["arena", "validate", "keyed/scenario.toml"], 2));
    assert!(
        refused.starts_with("error[CHIO-SCENARIO-ARGUMENTS-REFUSED]"),
        "{refused}"
    );
    assert!(!holds_raw_controls(&refused), "{refused:?}");
    assert!(refused.contains("/a/b\\u{1b}]0;PWNED\\u{7}"), "{refused}");
}

/// Runs `chio report BUNDLE` (exit 0) and answers the page.
fn page_of(dir: &Path, bundle: &str) -> String {
    let page = format!("{bundle}.html");
    run(dir, &["report", bundle, "--out", &page], 0);
    std::fs::read_to_string(dir.join(page)).unwrap()
}

/// `scenarios/deny_reasons.toml` with `from` replaced by `to`, written as
/// `scenarios/NAME.toml` and run with `flags` (it fails: exit 1) into NAME.
fn failing_variant(dir: &Path, name: &str, (from, to): (&str, &str), flags: &[&str]) {
    let text = std::fs::read_to_string(dir.join("scenarios/deny_reasons.toml")).unwrap();
    let variant = text.replacen(from, to, 1);
    assert_ne!(variant, text);
    let file = format!("scenarios/{name}.toml");
    std::fs::write(dir.join(&file), variant).unwrap();
    let mut args = vec!["arena", "run", file.as_str(), "--out", name];
    args.extend(flags);
    run(dir, &args, 1);
}

/// The bundle `revoke`: the reference scenario with its refused revocation
/// expected done, so the run fails at that step.
fn revoke_expected_done(dir: &Path) {
    failing_variant(
        dir,
        "revoke",
        (
            "expect = \"refused\"\nexpect_reason = \"the revoker holds no ancestor of capability operator-read\"\nat = 7",
            "expect = \"done\"\nat = 7",
        ),
        &[],
    );
}

/// Marks step `index` of the bundle NAME as a pass with `outcome`, its
/// reason cleared, and the run as completed with no mismatch.
fn flip_outcome(dir: &Path, bundle: &str, index: usize, outcome: &str) {
    edit_manifest(dir, bundle, |m| {
        let step = m["steps"][index].as_object_mut().unwrap();
        step.insert("actual".into(), outcome.into());
        step.insert("pass".into(), true.into());
        step.insert("reason".into(), Value::Null);
        step.insert("reason_code".into(), Value::Null);
        let m = m.as_object_mut().unwrap();
        m.insert("mismatches".into(), Value::Array(Vec::new()));
        m.insert("status".into(), "completed".into());
        m.remove("stopped");
    });
}

/// Asserts that `page` is framed red and lists what re-deciding found,
/// `line` among it.
fn assert_drift_named(page: &str, line: &str) {
    assert!(
        page.contains("<div id=\"summary\" class=\"summary bad\">"),
        "{page}"
    );
    assert!(page.contains("<ul id=\"drift\">"), "{page}");
    assert!(page.contains(line), "{line} not in the page: {page}");
}

// A bundle edited only where no signature reaches agrees with its own receipts, so it is not refused, but `chio report` re-decides it from its inputs and frames the page red, naming the step and the field: a refused revocation recorded as done and the run as completed, a delegation's outcome flipped, and an allow whose receipt was deleted (root and count recomputed) rewritten as a deny no kernel decided. The bundles as their runs wrote them list no drift.
#[test]
fn report_re_decides_a_bundle_edited_where_nothing_signs() {
    let tmp = workspace();
    let dir = tmp.path();
    let copy = |from: &str, to: &str| copy_tree(&dir.join(from), &dir.join(to));
    revoke_expected_done(dir);
    assert!(!page_of(dir, "revoke").contains("id=\"drift\""));
    copy("revoke", "revoke-forged");
    flip_outcome(dir, "revoke-forged", 6, "done");
    assert_drift_named(
        &page_of(dir, "revoke-forged"),
        "step deputy-revokes-operator (#6): verdict differs (done in the bundle, refused when re-decided)",
    );

    failing_variant(
        dir,
        "delegate",
        (
            "max_invocations = 1\nat = 4",
            "max_invocations = 1\nexpect = \"refused\"\nat = 4",
        ),
        &["--keep-going"],
    );
    assert!(!page_of(dir, "delegate").contains("id=\"drift\""));
    copy("delegate", "delegate-forged");
    flip_outcome(dir, "delegate-forged", 3, "refused");
    edit_manifest(dir, "delegate-forged", |m| {
        m["steps"][3]["reason"] = "the delegator holds no capability operator-read".into();
    });
    assert_drift_named(
        &page_of(dir, "delegate-forged"),
        "step hand-to-deputy (#3): verdict differs (refused in the bundle, done when re-decided)",
    );

    run(
        dir,
        &[
            "arena",
            "run",
            "scenarios/campaigns/controls/misexpected_read.toml",
            "--out",
            "control",
        ],
        1,
    );
    copy("control", "control-forged");
    std::fs::write(dir.join("control-forged/receipts.ndjson"), "").unwrap();
    let root = chio_kernel::receipt::merkle_root_of_ids(&[]);
    edit_manifest(dir, "control-forged", |m| {
        util::forge_receiptless_deny(m, &root)
    });
    assert_drift_named(
        &page_of(dir, "control-forged"),
        "step read-notes (#0): verdict differs (deny in the bundle, allow when re-decided)",
    );
}

/// Asserts that `chio eval --from-bundle BUNDLE STEP` refuses the bundle as
/// evidence (`CHIO-ARENA-BUNDLE`, exit 2, no answer), naming `said`.
fn eval_refuses_bundle(dir: &Path, bundle: &str, step: &str, said: &str) {
    let args = ["eval", "--from-bundle", bundle, step, "--json"];
    let output = run(dir, &args, 2);
    let err = stderr(&output);
    assert!(
        err.starts_with("error[CHIO-ARENA-BUNDLE]") && err.contains(said),
        "{}",
        explain(&args, &output)
    );
    assert!(output.stdout.is_empty(), "{}", explain(&args, &output));
}

// `chio eval --from-bundle` answers from a bundle only once it holds up as `chio report` holds it: a scenario edited among the inputs with its digest rewritten in the manifest (the grant's prefix widened) agrees with the signed receipts but re-decides otherwise, so the call the kernel signed as a deny is refused, naming the first step that drifted, not answered `pending_approval`; so is a call of that bundle the edit leaves alone, and a call of a bundle edited where nothing signs (a refused revocation recorded as done). The bundle as its run wrote it is answered as the kernel decided.
#[test]
fn eval_of_a_bundle_refuses_one_that_does_not_re_decide() {
    let tmp = workspace();
    let dir = tmp.path();
    run(
        dir,
        &["arena", "run", "scenarios/deny_reasons.toml", "--out", "b"],
        0,
    );
    let answer = eval_step(dir, "b", "read-outside-prefix");
    assert_eq!(answer["verdict"], "deny", "{answer}");
    copy_tree(&dir.join("b"), &dir.join("widened"));
    let scenario = dir.join("widened/inputs/scenario.toml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    let widened = text.replacen("path_prefix = \"/workspace/\"", "path_prefix = \"/\"", 1);
    assert_ne!(widened, text);
    std::fs::write(&scenario, &widened).unwrap();
    let digest = |t: &str| chio_experiment::definition::sha256_hex(t.as_bytes());
    edit_manifest(dir, "widened", |m| {
        assert_eq!(m["scenario_sha256"], digest(&text));
        m["scenario_sha256"] = digest(&widened).into();
    });
    let drifted = "re-deciding it gives another run: step read-outside-prefix (#2): verdict differs (deny in the bundle,";
    eval_refuses_bundle(dir, "widened", "read-outside-prefix", drifted);
    eval_refuses_bundle(dir, "widened", "read-notes", drifted);

    revoke_expected_done(dir);
    assert_eq!(
        eval_step(dir, "revoke", "read-notes")["verdict"],
        "pending_approval"
    );
    copy_tree(&dir.join("revoke"), &dir.join("revoke-forged"));
    flip_outcome(dir, "revoke-forged", 6, "done");
    eval_refuses_bundle(
        dir,
        "revoke-forged",
        "read-notes",
        "step deputy-revokes-operator (#6): verdict differs (done in the bundle, refused when re-decided)",
    );
}

// A run that read sealed files cannot be re-decided from its bundle alone (the bundle records only their digests): `chio report` says its outcome is unverified, naming why, and frames the page red; the run's own `--html` page, written as it decided, is not.
#[test]
fn report_of_a_bundle_that_cannot_be_re_decided_says_it_is_unverified() {
    let tmp = workspace();
    let dir = tmp.path();
    run(
        dir,
        &[
            "arena",
            "run",
            "scenarios/sealed_secret.toml",
            "--out",
            "sealed",
            "--html",
            "own.html",
        ],
        0,
    );
    let own = std::fs::read_to_string(dir.join("own.html")).unwrap();
    assert!(!own.contains("summary bad") && !own.contains("id=\"unverified\""));
    let page = page_of(dir, "sealed");
    assert!(
        page.contains("<div id=\"summary\" class=\"summary bad\">"),
        "{page}"
    );
    assert!(
        page.contains("<p id=\"unverified\">The outcome below is unverified: the bundle could not be re-decided from its inputs here (CHIO-CLI-SEALED-FROM: the run read 2 sealed file(s)"),
        "{page}"
    );
}
