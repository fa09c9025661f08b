//! Unit tests of `secret-redaction`.
use super::*;
use crate::guards::GuardMode;
use serde_json::json;

// Each credential shape is redacted and the surrounding text survives.
#[test]
fn redacts_each_shape() {
    let all = CredentialKind::ALL;
    let pem = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\ndone";
    assert_eq!(redact_text(pem, &all).unwrap(), "key:\n[REDACTED]\ndone");
    assert_eq!(
        redact_text("use sk-abcdefghijklmnop1234 now", &all).unwrap(),
        "use [REDACTED] now"
    );
    assert_eq!(
        redact_text("id AKIAIOSFODNN7EXAMPLE.", &all).unwrap(),
        "id [REDACTED]."
    );
    assert_eq!(
        redact_text("Authorization: Bearer abc.def-123456", &all).unwrap(),
        "Authorization: Bearer [REDACTED]"
    );
}

// Bearer followed by a line break or other whitespace, and GitHub tokens, are redacted.
#[test]
fn redacts_what_the_old_patterns_missed() {
    let all = CredentialKind::ALL;
    for (text, want) in [
        (
            "curl -H 'Bearer\n  eyJhbGciOi.e30.c2ln'",
            "curl -H 'Bearer\n  [REDACTED]'",
        ),
        ("bearer\t\tabc.def-123456", "bearer\t\t[REDACTED]"),
        ("Bearer\u{00a0}abc.def-123456", "Bearer\u{00a0}[REDACTED]"),
        (
            "GH=ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "GH=[REDACTED]",
        ),
        (
            "pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz end",
            "pat [REDACTED] end",
        ),
        (
            "Authorization: Basic YWxpY2U6czNjcjN0",
            "Authorization: Basic [REDACTED]",
        ),
        (
            "DATABASE_PASSWORD=hunter2 next",
            "DATABASE_PASSWORD=[REDACTED] next",
        ),
    ] {
        assert_eq!(redact_text(text, &all).as_deref(), Some(want), "{text:?}");
    }
}

/// A context for a call with `arguments`.
fn context(arguments: &Value) -> GuardContext<'_> {
    use std::collections::{BTreeMap, BTreeSet};
    static LABELS: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    static MONEY: BTreeMap<String, crate::guards::MoneyTotal> = BTreeMap::new();
    GuardContext {
        server: "http",
        tool: "post",
        arguments,
        agent_id: "a",
        session_id: "s",
        journal: &[],
        labels: &LABELS,
        money: &MONEY,
        session_filesystem_roots: None,
        provenance: &crate::provenance::NO_PROVENANCE,
        definition: None,
    }
}

fn guard_scanning(scan: &[&str]) -> SecretRedactionGuard {
    SecretRedactionGuard::new(
        GuardMeta {
            id: "redact".into(),
            mode: GuardMode::Enforce,
        },
        SecretRedactionConfig {
            patterns: None,
            scan: Some(scan.iter().map(|s| s.to_string()).collect()),
        },
    )
    .unwrap()
}

// An argument scan finds a credential inside an array, naming its pointer; an argument-only guard leaves outputs alone.
#[test]
fn arrays_are_scanned_and_each_scan_place_is_its_own() {
    let guard = guard_scanning(&["arguments"]);
    let arguments = json!({"headers": ["Accept: */*", "Authorization: Bearer abc.def-123456"]});
    let GuardVerdict::Deny(reason) = guard.check_request(&context(&arguments)).unwrap() else {
        panic!("a credential in an array passed");
    };
    assert!(reason.to_string().contains("/headers/1"), "{reason}");
    assert!(!guard.inspects_output());
    assert!(guard_scanning(&["output"]).inspects_output());
}

// Look-alikes that are not credentials are left alone.
#[test]
fn innocent_text_untouched() {
    let all = CredentialKind::ALL;
    for text in [
        "task-1.txt",
        "risk-assessment",
        "the bearer of news",
        "bearer\nof news",
        "-----BEGIN PUBLIC KEY-----",
        "AKIA",
        "ghp_short",
        "build 1841 passed in 42s",
    ] {
        assert_eq!(redact_text(text, &all), None, "{text}");
    }
}

// The guard counts the strings it changed, keeps keys, and honours a narrowed pattern list.
#[test]
fn guard_rewrites_output() {
    let meta = GuardMeta {
        id: "redact".into(),
        mode: GuardMode::Enforce,
    };
    let guard = SecretRedactionGuard::new(
        meta.clone(),
        SecretRedactionConfig {
            patterns: None,
            scan: None,
        },
    )
    .unwrap();
    let labels = Default::default();
    let arguments = json!({});
    let ctx = GuardContext {
        server: "ci-logs",
        tool: "read_file",
        arguments: &arguments,
        agent_id: "operator",
        session_id: "operator",
        journal: &[],
        labels: &labels,
        money: &Default::default(),
        session_filesystem_roots: None,
        provenance: &crate::provenance::NO_PROVENANCE,
        definition: None,
    };
    let output = json!({"log": ["Bearer\nabc.def-123456", "ok"], "ghp_x": "ghp_16C7e42F292c6912E7710c838347Ae178B4a"});
    let OutputVerdict::Rewrite(value, reason) = guard.check_output(&ctx, &output).unwrap() else {
        panic!("not rewritten");
    };
    assert_eq!(reason, "redacted credentials in 2 output strings");
    assert_eq!(
        value,
        json!({"log": ["Bearer\n[REDACTED]", "ok"], "ghp_x": "[REDACTED]"})
    );
    let narrow = SecretRedactionGuard::new(
        meta.clone(),
        SecretRedactionConfig {
            patterns: Some(vec!["github-token".into()]),
            scan: None,
        },
    )
    .unwrap();
    let only_bearer = json!({"log": "Bearer abc.def-123456"});
    assert_eq!(
        narrow.check_output(&ctx, &only_bearer).unwrap(),
        OutputVerdict::Pass
    );
    let err = SecretRedactionGuard::new(
        meta,
        SecretRedactionConfig {
            patterns: Some(vec!["gh-token".into()]),
            scan: None,
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("github-token"), "{err}");
}

const GHP: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";

/// Base64 of `bytes` (standard alphabet, padded).
fn base64(bytes: &[u8]) -> String {
    crate::credentials::forms::tests::base64(bytes, false)
}

/// The reason an argument-scanning guard gives for `arguments`, if it denies.
fn refusal(arguments: Value) -> Option<String> {
    match guard_scanning(&["arguments"])
        .check_request(&context(&arguments))
        .unwrap()
    {
        GuardVerdict::Deny(reason) => Some(reason.to_string()),
        _ => None,
    }
}

/// What an output-scanning guard releases for `output`: the rewrite and its reason.
fn released(output: Value) -> Option<(Value, String)> {
    let guard = guard_scanning(&["output"]);
    match guard.check_output(&context(&json!({})), &output).unwrap() {
        OutputVerdict::Rewrite(value, reason) => {
            let again = guard.check_output(&context(&json!({})), &value).unwrap();
            assert_eq!(again, OutputVerdict::Pass, "a redaction left {value}");
            Some((value, reason))
        }
        OutputVerdict::Pass => None,
        other => panic!("unexpected {other:?}"),
    }
}

/// Each transformed spelling of a token, with what the hostile tester sent.
fn transformed_tokens() -> Vec<(&'static str, String)> {
    let rest = &GHP[4..];
    let all_percent: String = GHP.bytes().map(|b| format!("%{b:02X}")).collect();
    vec![
        ("percent-encoded underscore", format!("ghp%5F{rest}")),
        ("percent-encoded", all_percent),
        (
            "zero-width space",
            format!("ghp_{}\u{200b}{}", &rest[..12], &rest[12..]),
        ),
        (
            "no-break space",
            format!("ghp_{}\u{a0}{}", &rest[..12], &rest[12..]),
        ),
        ("word joiner", format!("gh\u{2060}p_{rest}")),
        ("fullwidth letter", format!("\u{ff47}hp_{rest}")),
        ("json escape", format!("ghp\\u005f{rest}")),
        ("base64", base64(GHP.as_bytes())),
        ("hex", hex::encode(GHP)),
        ("aws lower case", "akiaiosfodnn7example".to_string()),
    ]
}

// Every transformed spelling of a credential in an argument is refused, naming the shape and the pointer, never the value.
#[test]
fn transformed_credentials_in_arguments_are_refused() {
    for (what, text) in transformed_tokens() {
        let reason = refusal(json!({"title": "notes", "body": format!("see {text} here")}))
            .unwrap_or_else(|| panic!("{what} passed"));
        let shape = if what.starts_with("aws") {
            "aws-access-key"
        } else {
            "github-token"
        };
        assert_eq!(
            reason,
            format!("credential ({shape}) in arguments at /body; a call may not send a credential"),
            "{what}"
        );
        assert!(!reason.contains(&GHP[8..20]), "{reason}");
    }
}

// A credential split across string arguments is refused naming every part, whichever key sorts first and beside other values.
#[test]
fn split_credentials_in_arguments_are_refused() {
    let rest = &GHP[4..];
    let split = |reason: Option<String>, pointers: &str, shape: &str| {
        assert_eq!(
            reason.as_deref(),
            Some(format!("credential ({shape}) in arguments split across string values at {pointers}; a call may not send a credential").as_str())
        );
    };
    split(
        refusal(json!({"a": "ghp_", "b": rest})),
        "/a, /b",
        "github-token",
    );
    split(
        refusal(json!({"a": rest, "b": "ghp_"})),
        "/a, /b",
        "github-token",
    );
    split(
        refusal(json!({"0": "note", "a": "AKIAIOSFOD", "b": "NN7EXAMPLE", "c": "ok"})),
        "/a, /b",
        "aws-access-key",
    );
    split(
        refusal(json!({"parts": ["ghp_16C7e42F", "292c6912E7710c8", "38347Ae178B4a"]})),
        "/parts/0, /parts/1, /parts/2",
        "github-token",
    );
    split(
        refusal(json!({"scheme": "Bearer", "value": "abc.def-123456"})),
        "/scheme, /value",
        "bearer-token",
    );
    let encoded = base64(GHP.as_bytes());
    let (head, tail) = encoded.split_at(22);
    split(
        refusal(json!({"a": head, "b": tail})),
        "/a, /b",
        "github-token",
    );
    split(
        refusal(json!({"a": "ghp%5F", "b": rest})),
        "/a, /b",
        "github-token",
    );
}

// The token alone and inside prose are refused as before; a near miss, prose, paths, ids, digests and encoded prose pass.
#[test]
fn argument_neighbours_and_innocent_values() {
    assert!(refusal(json!({"body": GHP})).is_some());
    assert!(refusal(json!({"body": format!("the token {GHP} leaked")})).is_some());
    let prose = "The quick brown fox jumps over the lazy dog, and no token is here.";
    let innocent = json!({
        "prose": prose,
        "words": ["the bearer", "of news", "asia", "pacific"],
        "path": "/workspace/src/internationalization/configuration_manager.rs",
        "id": "123e4567-e89b-12d3-a456-426614174000",
        "sha1": "da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "trace": ["asia", "4bf92f3577b34da6"],
        "encoded": base64(prose.as_bytes()),
        "hex": hex::encode(prose),
        "url": "https://example.com/search?q=a%20b%2Fc&page=2",
    });
    assert_eq!(refusal(innocent), None);
    // Near misses, alone and split; a near miss glued to a neighbour that
    // completes its shape is no near miss, so each is read in a call of its own.
    assert_eq!(refusal(json!({"near": &GHP[..GHP.len() - 7]})), None);
    assert_eq!(
        refusal(json!({"near_split": ["ghp_", "16C7e42F292c69"]})),
        None
    );
}

// A transformed credential in an output string redacts that whole string; one read as written is cut where it sits.
#[test]
fn transformed_credentials_in_output_redact_the_string() {
    for (what, text) in transformed_tokens() {
        let (value, reason) = released(json!({"log": [format!("key {text} end"), "ok"]}))
            .unwrap_or_else(|| panic!("{what} released"));
        // A lower-case key id is the id as written: it is cut where it sits.
        let want = if what.starts_with("aws") {
            "key [REDACTED] end"
        } else {
            "[REDACTED]"
        };
        assert_eq!(value, json!({"log": [want, "ok"]}), "{what}");
        assert_eq!(reason, "redacted credentials in 1 output strings");
    }
    let (value, _) = released(json!({"log": format!("key {GHP} end")})).unwrap();
    assert_eq!(value, json!({"log": "key [REDACTED] end"}));
}

// A credential split across an output's strings is redacted in each part: where it sits when read as written, the whole part otherwise.
#[test]
fn split_credentials_in_output_are_redacted_in_each_part() {
    let rest = &GHP[4..];
    let (value, reason) = released(json!({"lines": ["ghp_", rest, "- done"]})).unwrap();
    assert_eq!(
        value,
        json!({"lines": ["[REDACTED]", "[REDACTED]", "- done"]})
    );
    assert_eq!(reason, "redacted credentials in 2 output strings");
    let prose = json!([
        "token part one ghp_16C7e42F",
        "292c6912E7710c838347Ae178B4a and more"
    ]);
    let (value, _) = released(prose).unwrap();
    assert_eq!(
        value,
        json!(["token part one [REDACTED]", "[REDACTED] and more"])
    );
    let (value, _) =
        released(json!({"auth": {"scheme": "Bearer", "value": "abc.def-123456"}})).unwrap();
    assert_eq!(
        value,
        json!({"auth": {"scheme": "Bearer", "value": "[REDACTED]"}})
    );
    let encoded = base64(GHP.as_bytes());
    let (head, tail) = encoded.split_at(30);
    let (value, reason) = released(json!({"chunks": [head, tail], "note": "ok"})).unwrap();
    assert_eq!(
        value,
        json!({"chunks": ["[REDACTED]", "[REDACTED]"], "note": "ok"})
    );
    assert_eq!(reason, "redacted credentials in 2 output strings");
    let (value, _) = released(json!(["akiaiosfod", "nn7example"])).unwrap();
    assert_eq!(value, json!(["[REDACTED]", "[REDACTED]"]));
}

// Ordinary output (prose, paths, ids, digests, encoded prose, split near misses) passes unchanged.
#[test]
fn innocent_output_passes() {
    let prose = "The quick brown fox jumps over the lazy dog, and no token is here.";
    let output = json!({
        "content": prose,
        "files": ["/workspace/a.txt", "/workspace/b/c.rs", "C:\\Users\\me\\report.pdf"],
        "ids": ["123e4567-e89b-12d3-a456-426614174000", "da39a3ee5e6b4b0d3255bfef95601890afd80709"],
        "digest": "sha256:47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU",
        "encoded": [base64(prose.as_bytes()), hex::encode(prose)],
        "region": "asia",
        "trace_id": "4bf92f3577b34da6",
    });
    assert_eq!(released(output), None);
    assert_eq!(released(json!({"near": ["ghp_", "short123"]})), None);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    // A token cut anywhere across two array strings among printable text is redacted, the rewrite passes a second reading, and no piece of the token long enough to matter survives.
    #[test]
    fn split_tokens_never_survive_the_output(
        before in "[ -~]{0,24}",
        after in "[ -~]{0,24}",
        cut in 1usize..40,
        encode in 0usize..3,
    ) {
        let secret = match encode {
            0 => GHP.to_string(),
            1 => base64(GHP.as_bytes()),
            _ => format!("ghp%5F{}", &GHP[4..]),
        };
        let cut = cut.min(secret.len() - 1);
        let (head, tail) = secret.split_at(cut);
        let output = json!({"lines": [format!("{before} {head}"), format!("{tail} {after}")]});
        let (value, _) = released(output).expect("redacted");
        let text = value.to_string();
        for piece in [head, tail] {
            proptest::prop_assert!(piece.len() < 8 || !text.contains(piece), "{}", text);
        }
    }
}
