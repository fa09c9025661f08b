//! Process tests for `chio eval`: the four state-dependence cases of the
//! portable fixture with their exact reasons, identical answers on repeat,
//! standard input, and typed refusals of malformed envelopes.

use crate::util;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use util::{chio, explain, repo_path};

fn eval(file: &str) -> Value {
    let tmp = tempfile::tempdir().unwrap();
    let path = repo_path(&format!("kernel/tests/fixtures/portable/{file}"));
    let args = ["eval", path.to_str().unwrap(), "--json"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    serde_json::from_slice(&output.stdout).unwrap()
}

// Inside the window the check passes as pending_approval, unauthorized, and twice gives the same bytes.
#[test]
fn inside_window_is_pending_approval_and_stable() {
    let a = eval("envelope.json");
    assert_eq!(a["verdict"], "pending_approval");
    assert_eq!(a["authorized"], false);
    assert_eq!(a, eval("envelope.json"));
}

// Each one-input change gives its exact reason.
#[test]
fn one_input_changes_give_exact_reasons() {
    let expired = eval("expired.json");
    assert_eq!(expired["verdict"], "deny");
    assert_eq!(expired["reason"], "capability has expired");
    let untrusted = eval("untrusted.json");
    assert_eq!(untrusted["reason"], "capability issuer is not a trusted CA");
    let wrong = eval("wrong-tool.json");
    assert_eq!(
        wrong["reason"],
        "tool file_write on server srv-files not covered by any scope grant"
    );
}

// docs/portable-evaluation.md shows exactly the answers the command prints.
#[test]
fn docs_show_the_exact_answers() {
    let doc = std::fs::read_to_string(repo_path("docs/portable-evaluation.md")).unwrap();
    for file in [
        "envelope.json",
        "expired.json",
        "untrusted.json",
        "wrong-tool.json",
    ] {
        let answer = chio_kernel::canonical::to_canonical_string(&eval(file)).unwrap();
        assert!(doc.contains(&answer), "{file}: {answer} not in the doc");
    }
}

// The envelope can come from standard input, and the clock from --now-unix-secs when the envelope has none.
#[test]
fn reads_standard_input_with_a_flag_clock() {
    let mut envelope: Value = serde_json::from_slice(
        &std::fs::read(repo_path("kernel/tests/fixtures/portable/envelope.json")).unwrap(),
    )
    .unwrap();
    envelope
        .as_object_mut()
        .unwrap()
        .remove("clock_override_unix_secs");
    let mut child = Command::new(env!("CARGO_BIN_EXE_chio"))
        .args(["eval", "-", "--json", "--now-unix-secs", "1710000801"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(envelope.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer["reason"], "capability has expired");
}

// Malformed envelopes are refused with exit 2 and a code naming what is wrong.
#[test]
fn malformed_envelopes_are_typed_errors() {
    let base: Value = serde_json::from_slice(
        &std::fs::read(repo_path("kernel/tests/fixtures/portable/envelope.json")).unwrap(),
    )
    .unwrap();
    let mut no_clock = base.clone();
    no_clock
        .as_object_mut()
        .unwrap()
        .remove("clock_override_unix_secs");
    let mut missing = base.clone();
    missing.as_object_mut().unwrap().remove("capability");
    let mut unknown = base.clone();
    unknown["extra"] = Value::Bool(true);
    let cases: Vec<(&str, String)> = vec![
        ("CHIO-EVAL-NOT-JSON", "{not json".to_string()),
        ("CHIO-EVAL-NOT-AN-OBJECT", "[1, 2]".to_string()),
        ("CHIO-EVAL-MISSING-FIELD", missing.to_string()),
        ("CHIO-EVAL-UNKNOWN-FIELD", unknown.to_string()),
        (
            "CHIO-EVAL-INVALID-FIELD",
            "{\"request\": 1, \"capability\": {}, \"trusted_issuers_hex\": []}".to_string(),
        ),
        ("CHIO-EVAL-MISSING-CLOCK", no_clock.to_string()),
        // A key given twice would be one request here and another to a
        // reader that keeps the first.
        (
            "CHIO-EVAL-NOT-JSON",
            base.to_string()
                .replacen("{", "{\"clock_override_unix_secs\": 1, ", 1),
        ),
        (
            "CHIO-EVAL-NOT-JSON",
            base.to_string()
                .replacen("\"request\":{", "\"request\":{\"tool\":\"file_write\",", 1),
        ),
        // An integer literal past 2^64 reads as a float past 2^53.
        (
            "CHIO-EVAL-OUT-OF-RANGE",
            base.to_string().replacen(
                "\"arguments\":{",
                "\"arguments\":{\"n\":18446744073709551623,",
                1,
            ),
        ),
    ];
    for (code, text) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("e.json");
        std::fs::write(&file, &text).unwrap();
        let args = ["eval", file.to_str().unwrap()];
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains(&format!("error[{code}]")),
            "{code}: {stderr}"
        );
    }
}

// A clock override above 2^53 with --json is refused with exit 2 and CHIO-EVAL-OUT-OF-RANGE naming the field, never a panic; so is --now-unix-secs above 2^53.
#[test]
fn clock_beyond_two_to_the_53_is_refused() {
    let mut envelope: Value = serde_json::from_slice(
        &std::fs::read(repo_path("kernel/tests/fixtures/portable/envelope.json")).unwrap(),
    )
    .unwrap();
    envelope["clock_override_unix_secs"] = Value::from(9_007_199_254_740_993u64);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("e.json");
    std::fs::write(&file, envelope.to_string()).unwrap();
    let args = ["eval", file.to_str().unwrap(), "--json"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(
            "error[CHIO-EVAL-OUT-OF-RANGE]: eval: envelope field clock_override_unix_secs "
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("9007199254740993"), "{stderr}");
    assert!(output.stdout.is_empty());

    envelope
        .as_object_mut()
        .unwrap()
        .remove("clock_override_unix_secs");
    std::fs::write(&file, envelope.to_string()).unwrap();
    let args = [
        "eval",
        file.to_str().unwrap(),
        "--json",
        "--now-unix-secs",
        "18446744073709551615",
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error[CHIO-CLI-FLAG-OUT-OF-RANGE]"),
        "{stderr}"
    );
    assert!(stderr.contains("--now-unix-secs"), "{stderr}");
}

// A malformed field deep in the capability is named by its full path, and the value it holds is never printed.
#[test]
fn capability_errors_name_the_path_not_the_value() {
    let mut envelope: Value = serde_json::from_slice(
        &std::fs::read(repo_path("kernel/tests/fixtures/portable/envelope.json")).unwrap(),
    )
    .unwrap();
    envelope["capability"]["scope"][0]["tools"] = serde_json::json!("leaked-value-4f9a");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("e.json");
    std::fs::write(&file, envelope.to_string()).unwrap();
    let args = ["eval", file.to_str().unwrap()];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error[CHIO-EVAL-INVALID-FIELD]: eval: envelope field capability.scope[0].tools is invalid: expected an array"),
        "{stderr}"
    );
    assert!(!stderr.contains("leaked-value-4f9a"), "{stderr}");
}

// --write-envelope writes what was evaluated as canonical JSON, whatever spelling it was given in, and writes nothing for an envelope that is refused.
#[test]
fn write_envelope_writes_only_an_evaluated_envelope_canonically() {
    let tmp = tempfile::tempdir().unwrap();
    let base: Value = serde_json::from_slice(
        &std::fs::read(repo_path("kernel/tests/fixtures/portable/envelope.json")).unwrap(),
    )
    .unwrap();
    let pretty = tmp.path().join("pretty.json");
    std::fs::write(&pretty, serde_json::to_vec_pretty(&base).unwrap()).unwrap();
    let out = tmp.path().join("out.json");
    let args = [
        "eval",
        pretty.to_str().unwrap(),
        "--write-envelope",
        out.to_str().unwrap(),
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
    let written = std::fs::read_to_string(&out).unwrap();
    let canonical = chio_kernel::canonical::to_canonical_string(&base).unwrap();
    assert_eq!(written, format!("{canonical}\n"));
    let refused = tmp.path().join("refused.json");
    std::fs::write(&refused, "{\"request\": 1}").unwrap();
    let never = tmp.path().join("never.json");
    let args = [
        "eval",
        refused.to_str().unwrap(),
        "--write-envelope",
        never.to_str().unwrap(),
    ];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    assert!(!never.exists(), "a refused envelope was written");
}

// --write-envelope onto a named pipe or a symbolic link is refused naming the path, and both are left as they were (a rename would replace them).
#[test]
fn write_envelope_never_replaces_a_pipe_or_a_link() {
    use std::os::unix::fs::FileTypeExt;
    let tmp = tempfile::tempdir().unwrap();
    let fixture = repo_path("kernel/tests/fixtures/portable/envelope.json");
    let pipe = tmp.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(made.success());
    let target = tmp.path().join("target.json");
    std::fs::write(&target, b"kept").unwrap();
    let link = tmp.path().join("link.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for path in [&pipe, &link] {
        let args = [
            "eval",
            fixture.to_str().unwrap(),
            "--write-envelope",
            path.to_str().unwrap(),
        ];
        let output = chio(tmp.path(), &args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(3), "{}", explain(&args, &output));
        assert!(stderr.starts_with("error[CHIO-REPORT-WRITE]"), "{stderr}");
        assert!(stderr.contains(path.to_str().unwrap()), "{stderr}");
    }
    assert!(std::fs::symlink_metadata(&pipe)
        .unwrap()
        .file_type()
        .is_fifo());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&target).unwrap(), b"kept");
}

// A key given twice is refused at its position, never quoting the key: a key is input too, and may be a credential.
#[test]
fn a_duplicate_key_is_refused_without_quoting_it() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = repo_path("kernel/tests/fixtures/portable/envelope.json");
    let base = std::fs::read_to_string(fixture).unwrap();
    let secret = "ghp_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let doubled = base.replacen(
        "\"arguments\": {",
        &format!("\"arguments\": {{\"x\": {{\"{secret}\": 1, \"{secret}\": 2}},"),
        1,
    );
    assert_ne!(doubled, base);
    std::fs::write(tmp.path().join("dup.json"), doubled).unwrap();
    let args = ["eval", "dup.json"];
    let output = chio(tmp.path(), &args);
    assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.starts_with("error[CHIO-EVAL-NOT-JSON]"), "{err}");
    assert!(err.contains("a key appears twice in one object"), "{err}");
    assert!(err.contains(" at line "), "{err}");
    assert!(!err.contains("ghp_"), "{err}");
}

// A credential-shaped key the envelope format does not define, or whose number is out of range, is named by the mark of its shape, never printed.
#[test]
fn a_credential_shaped_key_is_named_by_its_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = repo_path("kernel/tests/fixtures/portable/envelope.json");
    let base = std::fs::read_to_string(fixture).unwrap();
    let token = format!("ghp_{}", "a".repeat(36));
    for (name, text, code, wanted) in [
        (
            "unknown.json",
            base.replacen(
                "\"agent_id\":",
                &format!("\"{token}\": 1, \"agent_id\":"),
                1,
            ),
            "CHIO-EVAL-UNKNOWN-FIELD",
            "envelope field request.[REDACTED:github-token] is not part",
        ),
        (
            "range.json",
            base.replacen(
                "\"path\":",
                "\"AKIAIOSFODNN7EXAMPLE\": 18014398509481984, \"path\":",
                1,
            ),
            "CHIO-EVAL-OUT-OF-RANGE",
            "envelope field request.arguments.[REDACTED:aws-access-key] is outside",
        ),
    ] {
        assert_ne!(text, base);
        std::fs::write(tmp.path().join(name), text).unwrap();
        let args = ["eval", name];
        let output = chio(tmp.path(), &args);
        assert_eq!(output.status.code(), Some(2), "{}", explain(&args, &output));
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(err.starts_with(&format!("error[{code}]")), "{err}");
        assert!(err.contains(wanted), "{err}");
        assert!(
            !err.contains(&token) && !err.contains("AKIAIOSFODNN7EXAMPLE"),
            "{err}"
        );
    }
}

// A reason that quotes an argument holding a credential (a path outside the grant's prefix) is printed, in the readable answer and in --json, with the credential as the mark of its shape.
#[test]
fn a_reason_quoting_a_credential_prints_its_mark() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = repo_path("kernel/tests/fixtures/portable/envelope.json");
    let base = std::fs::read_to_string(fixture).unwrap();
    let token = format!("ghp_{}", "a".repeat(36));
    let text = base.replacen(
        "\"path\":",
        &format!("\"was\": 0, \"path\": \"/etc/{token}\", \"old\":"),
        1,
    );
    assert_ne!(text, base);
    std::fs::write(tmp.path().join("env.json"), text).unwrap();
    for out in eval_plain_and_json(tmp.path()) {
        assert!(
            out.contains("path /etc/[REDACTED:github-token] (argument /path)"),
            "{out}"
        );
        assert!(!out.contains(&token), "{out}");
    }
}

// A request id and a capability id that hold a credential are printed, in the readable answer and in --json, as the mark of its shape, like a reason.
#[test]
fn echoed_ids_holding_a_credential_print_their_mark() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = repo_path("kernel/tests/fixtures/portable/envelope.json");
    let mut env: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    let token = format!("ghp_{}", "b".repeat(36));
    let aws = "AKIAIOSFODNN7EXAMPLE";
    env["request"]["request_id"] = serde_json::json!(token);
    // The capability id is signed: changed, the answer is a deny that still names it.
    env["capability"]["id"] = serde_json::json!(format!("cap {aws}"));
    std::fs::write(tmp.path().join("env.json"), env.to_string()).unwrap();
    for out in eval_plain_and_json(tmp.path()) {
        assert!(out.contains("[REDACTED:github-token]"), "{out}");
        assert!(out.contains("[REDACTED:aws-access-key]"), "{out}");
        assert!(!out.contains(&token) && !out.contains(aws), "{out}");
    }
}

/// `chio eval env.json` in `dir`, read and as `--json`: each answer's
/// standard output, after asserting the evaluation succeeded.
fn eval_plain_and_json(dir: &Path) -> Vec<String> {
    [false, true]
        .into_iter()
        .map(|json| {
            let mut args = vec!["eval", "env.json"];
            if json {
                args.push("--json");
            }
            let output = chio(dir, &args);
            assert_eq!(output.status.code(), Some(0), "{}", explain(&args, &output));
            String::from_utf8_lossy(&output.stdout).into_owned()
        })
        .collect()
}

// A trusted issuer or a capability key that is a point of small order (the identity, the all-zero bytes) or a second spelling of a point is no one's key: refused as an invalid field naming its path, never decided.
#[test]
fn keys_of_small_order_or_a_second_spelling_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = repo_path("kernel/tests/fixtures/portable/envelope.json");
    let base: Value = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    let identity = format!("01{}", "0".repeat(62));
    let zero = "0".repeat(64);
    let second = format!("ee{}7f", "f".repeat(60));
    for key in [&identity, &zero, &second] {
        for (place, path) in [
            ("trusted", "trusted_issuers_hex[1]"),
            ("subject", "capability.subject"),
        ] {
            let mut env = base.clone();
            match place {
                "trusted" => env["trusted_issuers_hex"]
                    .as_array_mut()
                    .unwrap()
                    .push(key.as_str().into()),
                _ => env["capability"]["subject"] = key.as_str().into(),
            }
            std::fs::write(tmp.path().join("env.json"), env.to_string()).unwrap();
            let output = chio(tmp.path(), &["eval", "env.json"]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{key} {place}: {stderr}");
            assert!(
                stderr.starts_with("error[CHIO-EVAL-INVALID-FIELD]")
                    && stderr.contains(&format!("envelope field {path} is invalid")),
                "{key} {place}: {stderr}"
            );
        }
    }
}
