//! Portable evaluation (issue 9): the seed's four cases through the
//! envelope, the delegated-share registry cases through the library, the
//! byte-stable signed fixture, and named errors for malformed envelopes.

use crate::util;

use std::path::PathBuf;

use chio_kernel::guards::{Guard, GuardKind};
use chio_kernel::portable::{
    evaluate_envelope, evaluate_envelope_at, evaluate_portable, parse_envelope, reference_fixture,
    reference_fixture_bytes, EvaluateInput, PortableRequest, PortableVerdict,
};
use chio_kernel::stores::InMemorySiblingShares;
use chio_kernel::token::Attenuation;
use chio_kernel::EnvelopeError;
use proptest::prelude::*;
use serde_json::{json, Value};
use util::*;

fn fixture_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/portable/envelope.json")
}

fn fixture() -> Value {
    serde_json::from_slice(&std::fs::read(fixture_path()).expect("fixture file"))
        .expect("fixture JSON")
}

fn answer(envelope: &Value) -> Value {
    let a = evaluate_envelope(envelope.to_string().as_bytes()).expect("well-formed envelope");
    serde_json::from_str(&a.to_canonical_json().unwrap()).unwrap()
}

// The stored fixture is exactly what the generator produces (set CHIO_REGENERATE_FIXTURES=1 to rewrite it).
#[test]
fn fixture_is_byte_stable() {
    let bytes = reference_fixture_bytes();
    if std::env::var("CHIO_REGENERATE_FIXTURES").as_deref() == Ok("1") {
        std::fs::write(fixture_path(), &bytes).unwrap();
    }
    assert_eq!(std::fs::read(fixture_path()).unwrap(), bytes);
    assert_eq!(fixture(), reference_fixture());
}

// Inside the window, twice: identical pending_approval answers with authorized false.
#[test]
fn inside_window_twice() {
    let a = answer(&fixture());
    let b = answer(&fixture());
    assert_eq!(a, b);
    assert_eq!(a["verdict"], "pending_approval");
    assert_eq!(a["authorized"], false);
    assert_eq!(a["reason"], Value::Null);
}

// Only the clock at 1710000801: capability has expired.
#[test]
fn clock_past_expiry() {
    let mut env = fixture();
    env["clock_override_unix_secs"] = json!(1_710_000_801u64);
    let a = answer(&env);
    assert_eq!(a["verdict"], "deny");
    assert_eq!(a["reason"], "capability has expired");
}

// Only the trusted issuers emptied: capability issuer is not a trusted CA.
#[test]
fn issuers_emptied() {
    let mut env = fixture();
    env["trusted_issuers_hex"] = json!([]);
    assert_eq!(
        answer(&env)["reason"],
        "capability issuer is not a trusted CA"
    );
}

// Only the tool changed: a scope denial.
#[test]
fn tool_changed() {
    let mut env = fixture();
    env["request"]["tool"] = json!("file_write");
    assert_eq!(
        answer(&env)["reason"],
        "tool file_write on server srv-files not covered by any scope grant"
    );
}

// Without a clock in the envelope the caller must supply one; the kernel reads none.
#[test]
fn clock_is_required() {
    let mut env = fixture();
    env.as_object_mut()
        .unwrap()
        .remove("clock_override_unix_secs");
    let bytes = env.to_string();
    assert_eq!(
        evaluate_envelope(bytes.as_bytes()).unwrap_err(),
        EnvelopeError::MissingClock
    );
    let a = evaluate_envelope_at(bytes.as_bytes(), Some(1_710_000_300)).unwrap();
    assert_eq!(a.verdict, "pending_approval");
}

/// One change to the fixture envelope.
type Mutation = Box<dyn Fn(&mut Value)>;

// Every malformed field gets an error naming it.
#[test]
fn malformed_fields_are_named() {
    let cases: Vec<(Mutation, EnvelopeError)> = vec![
        (
            Box::new(|e| {
                e.as_object_mut().unwrap().remove("request");
            }),
            EnvelopeError::MissingField {
                field: "request".into(),
            },
        ),
        (
            Box::new(|e| {
                e.as_object_mut().unwrap().remove("capability");
            }),
            EnvelopeError::MissingField {
                field: "capability".into(),
            },
        ),
        (
            Box::new(|e| {
                e.as_object_mut().unwrap().remove("trusted_issuers_hex");
            }),
            EnvelopeError::MissingField {
                field: "trusted_issuers_hex".into(),
            },
        ),
        (
            Box::new(|e| {
                e["extra"] = json!(1);
            }),
            EnvelopeError::UnknownField {
                field: "extra".into(),
            },
        ),
        (
            Box::new(|e| {
                e["request"]["bogus"] = json!(1);
            }),
            EnvelopeError::UnknownField {
                field: "request.bogus".into(),
            },
        ),
        (
            Box::new(|e| {
                e["request"].as_object_mut().unwrap().remove("tool");
            }),
            EnvelopeError::MissingField {
                field: "request.tool".into(),
            },
        ),
        (
            Box::new(|e| {
                e["request"]["server"] = json!(7);
            }),
            EnvelopeError::InvalidField {
                field: "request.server".into(),
                detail: "expected a string".into(),
            },
        ),
        (
            Box::new(|e| {
                e["request"]["arguments"] = json!([1]);
            }),
            EnvelopeError::InvalidField {
                field: "request.arguments".into(),
                detail: "expected an object".into(),
            },
        ),
        (
            Box::new(|e| {
                e["request"] = json!("x");
            }),
            EnvelopeError::InvalidField {
                field: "request".into(),
                detail: "expected an object".into(),
            },
        ),
        (
            Box::new(|e| {
                e["trusted_issuers_hex"] = json!("abc");
            }),
            EnvelopeError::InvalidField {
                field: "trusted_issuers_hex".into(),
                detail: "expected an array of hex strings".into(),
            },
        ),
        (
            Box::new(|e| {
                e["trusted_issuers_hex"] = json!(["ABC"]);
            }),
            EnvelopeError::InvalidField {
                field: "trusted_issuers_hex[0]".into(),
                detail: "expected 64 lowercase hex characters of an Ed25519 public key".into(),
            },
        ),
        (
            Box::new(|e| {
                e["clock_override_unix_secs"] = json!(-1);
            }),
            EnvelopeError::InvalidField {
                field: "clock_override_unix_secs".into(),
                detail: "expected a non-negative integer of Unix seconds".into(),
            },
        ),
    ];
    for (i, (mutate, expected)) in cases.into_iter().enumerate() {
        let mut env = fixture();
        mutate(&mut env);
        assert_eq!(
            parse_envelope(env.to_string().as_bytes()).unwrap_err(),
            expected,
            "case {i}"
        );
    }
    let mut env = fixture();
    env["capability"].as_object_mut().unwrap().remove("issuer");
    match parse_envelope(env.to_string().as_bytes()).unwrap_err() {
        EnvelopeError::InvalidField { field, detail } => {
            assert_eq!(field, "capability");
            assert!(detail.contains("issuer"), "{detail}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        parse_envelope(b"{"),
        Err(EnvelopeError::NotJson { .. })
    ));
    assert_eq!(
        parse_envelope(b"[]").unwrap_err(),
        EnvelopeError::NotAnObject
    );
}

fn portable_request(agent: &str, tool: &str) -> PortableRequest {
    PortableRequest {
        request_id: "req".into(),
        server: "files".into(),
        tool: tool.into(),
        agent_id: agent_pk(agent),
        arguments: json!({"path": "/workspace/a.txt"}),
    }
}

// Wrong agent or tool leaves the registry unchanged; the valid sibling is admitted; unknown parent and oversubscription deny last while admitted siblings keep their shares.
#[test]
fn delegated_share_registry() {
    let root = issue("cap-alice", "alice", files_scope());
    let read_only = |bps: u32| Attenuation {
        tools: Some(vec!["read_file".into()]),
        share_bps: Some(bps),
        ..Default::default()
    };
    let bob = root
        .delegate(
            &agent_key("alice"),
            &agent_pk("bob"),
            &read_only(6000),
            "cap-bob",
            NOW_MS,
        )
        .unwrap();
    let carol = root
        .delegate(
            &agent_key("alice"),
            &agent_pk("carol"),
            &read_only(5000),
            "cap-carol",
            NOW_MS,
        )
        .unwrap();
    let dave = root
        .delegate(
            &agent_key("alice"),
            &agent_pk("dave"),
            &read_only(4000),
            "cap-dave",
            NOW_MS,
        )
        .unwrap();
    let issuers = vec![authority_pk()];
    let mut registry = InMemorySiblingShares::strict();
    registry.register_parent("cap-alice", 10_000);
    let run = |req: &PortableRequest, cap, reg: &mut InMemorySiblingShares| {
        evaluate_portable(
            &EvaluateInput {
                request: req,
                capability: cap,
                trusted_issuers: &issuers,
                now_ms: NOW_SECS * 1000,
                guards: &[],
                session_filesystem_roots: None,
            },
            reg,
        )
    };
    let d = run(&portable_request("carol", "read_file"), &bob, &mut registry);
    assert!(d
        .reason
        .unwrap()
        .starts_with("capability presented by another agent"));
    let d = run(&portable_request("bob", "write_file"), &bob, &mut registry);
    assert_eq!(
        d.reason.as_deref(),
        Some("tool write_file on server files not covered by any scope grant")
    );
    assert!(registry.children("cap-alice").is_empty());
    let d = run(
        &portable_request("carol", "read_file"),
        &carol,
        &mut registry,
    );
    assert_eq!(d.verdict, PortableVerdict::Allow);
    let d = run(&portable_request("bob", "read_file"), &bob, &mut registry);
    assert_eq!(
        d.reason.as_deref(),
        Some("sibling shares oversubscribed: child cap-bob asks 6000 bps, admitted siblings hold 5000 of parent cap-alice's 10000 bps")
    );
    assert_eq!(
        d.matched_grant,
        Some(0),
        "oversubscription is decided after grant selection"
    );
    let d = run(
        &portable_request("dave", "read_file"),
        &dave,
        &mut InMemorySiblingShares::strict(),
    );
    assert_eq!(
        d.reason.as_deref(),
        Some("sibling share registry does not know parent cap-alice")
    );
    assert_eq!(
        registry
            .children("cap-alice")
            .into_iter()
            .collect::<Vec<_>>(),
        vec![("cap-carol".to_string(), 5000)]
    );
    let d = run(&portable_request("dave", "read_file"), &dave, &mut registry);
    assert_eq!(d.verdict, PortableVerdict::Allow);
    assert_eq!(registry.children("cap-alice").len(), 2);
}

// Supplied guards run in order and a guard asking for approval denies here.
#[test]
fn guards_fail_closed() {
    let root = issue("cap-alice", "alice", files_scope());
    let approval = guard(
        "approve-reads",
        GuardKind::Approval,
        json!({"tools": ["read_file"]}),
    )
    .build()
    .unwrap();
    let guards: Vec<&dyn Guard> = vec![approval.as_ref()];
    let issuers = vec![authority_pk()];
    let d = evaluate_portable(
        &EvaluateInput {
            request: &portable_request("alice", "read_file"),
            capability: &root,
            trusted_issuers: &issuers,
            now_ms: NOW_SECS * 1000,
            guards: &guards,
            session_filesystem_roots: None,
        },
        &mut InMemorySiblingShares::default(),
    );
    assert_eq!(d.verdict, PortableVerdict::Deny);
    assert_eq!(
        d.reason.as_deref(),
        Some("guard approve-reads requires approval, which portable evaluation cannot run: tool read_file requires approval")
    );
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{0,10}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    // The envelope parser never panics on arbitrary JSON or arbitrary bytes.
    #[test]
    fn envelope_never_panics(v in arb_json(), bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = evaluate_envelope(v.to_string().as_bytes());
        let _ = evaluate_envelope(&bytes);
    }

    // Replacing any one envelope field with arbitrary JSON is a typed error or an answer, never a panic.
    #[test]
    fn fixture_fields_replaced(field in 0usize..9, v in arb_json()) {
        let mut env = fixture();
        match field {
            0 => env["request"] = v,
            1 => env["capability"] = v,
            2 => env["trusted_issuers_hex"] = v,
            3 => env["clock_override_unix_secs"] = v,
            4 => env["request"]["arguments"] = v,
            5 => env["capability"]["scope"] = v,
            6 => env["capability"]["expires_at_ms"] = v,
            7 => env["request"]["agent_id"] = v,
            _ => env["capability"]["signature"] = v,
        }
        let _ = evaluate_envelope(env.to_string().as_bytes());
    }
}

/// A delegation link object of the right shape, for envelopes that carry a chain.
fn link(timestamp_ms: Value, signature: Value) -> Value {
    json!({
        "schema": "chio.delegation/v1",
        "parent_id": "cap-portable-fixture",
        "child_id": "child",
        "delegator": "a",
        "delegatee": "b",
        "attenuation": {
            "scope": [], "not_before_ms": 0, "expires_at_ms": 0,
            "max_invocations": null, "share_bps": 0
        },
        "timestamp_ms": timestamp_ms,
        "signature": signature
    })
}

/// What an envelope error prints, as the CLI shows it.
fn printed(err: &EnvelopeError) -> String {
    format!("{err} {err:?}")
}

// A clock above 2^53, in the envelope or from the caller, is a named out-of-range error instead of an answer that cannot print; 2^53 itself prints.
#[test]
fn clock_beyond_two_to_the_53_is_refused() {
    let mut env = fixture();
    env["clock_override_unix_secs"] = json!((1u64 << 53) + 1);
    assert_eq!(
        evaluate_envelope(env.to_string().as_bytes()).unwrap_err(),
        EnvelopeError::OutOfRange {
            field: "clock_override_unix_secs".into()
        }
    );
    env["clock_override_unix_secs"] = json!(1u64 << 53);
    let a = evaluate_envelope(env.to_string().as_bytes()).unwrap();
    assert!(a.to_canonical_json().unwrap().contains("9007199254740992"));
    env.as_object_mut()
        .unwrap()
        .remove("clock_override_unix_secs");
    assert_eq!(
        evaluate_envelope_at(env.to_string().as_bytes(), Some(u64::MAX)).unwrap_err(),
        EnvelopeError::OutOfRange {
            field: "now_unix_secs".into()
        }
    );
}

// An integer beyond 2^53 anywhere in the envelope is refused naming its full path: in the arguments, in the token, deep in its delegation chain.
#[test]
fn integers_beyond_two_to_the_53_name_their_path() {
    let cases: Vec<(Mutation, &str)> = vec![
        (
            Box::new(|e| e["request"]["arguments"]["n"] = json!([1, -(1i64 << 53) - 1])),
            "request.arguments.n[1]",
        ),
        (
            Box::new(|e| e["capability"]["not_before_ms"] = json!(u64::MAX)),
            "capability.not_before_ms",
        ),
        (
            Box::new(|e| {
                e["capability"]["delegation_chain"] = json!([
                    link(json!(1), json!("s")),
                    link(json!((1u64 << 53) + 1), json!("s"))
                ])
            }),
            "capability.delegation_chain[1].timestamp_ms",
        ),
    ];
    for (mutate, field) in cases {
        let mut env = fixture();
        mutate(&mut env);
        assert_eq!(
            parse_envelope(env.to_string().as_bytes()).unwrap_err(),
            EnvelopeError::OutOfRange {
                field: field.into()
            }
        );
    }
}

// Errors name the full field path, inside the capability too, and never echo the refused value.
#[test]
fn errors_name_full_paths_without_values() {
    const MARKER: &str = "zq9-refused-value";
    let cases: Vec<(Mutation, EnvelopeError)> = vec![
        (
            Box::new(|e| {
                e["capability"]["delegation_chain"] = json!([
                    link(json!(1), json!("s")),
                    link(json!(2), json!("s")),
                    link(json!(3), json!([MARKER]))
                ])
            }),
            EnvelopeError::InvalidField {
                field: "capability.delegation_chain[2].signature".into(),
                detail: "expected a string".into(),
            },
        ),
        (
            Box::new(|e| e["capability"]["not_before_ms"] = json!(MARKER)),
            EnvelopeError::InvalidField {
                field: "capability.not_before_ms".into(),
                detail: "expected a non-negative integer".into(),
            },
        ),
        (
            Box::new(|e| e["capability"]["share_bps"] = json!(1u64 << 40)),
            EnvelopeError::InvalidField {
                field: "capability.share_bps".into(),
                detail: "expected a non-negative integer below 2^32".into(),
            },
        ),
        (
            Box::new(|e| e["capability"]["scope"][0]["bogus"] = json!(MARKER)),
            EnvelopeError::InvalidField {
                field: "capability.scope[0].bogus".into(),
                detail: "not part of the capability format; remove it".into(),
            },
        ),
        (
            Box::new(|e| e["capability"]["scope"][0] = json!(["srv-files", ["file_read"]])),
            EnvelopeError::InvalidField {
                field: "capability.scope[0]".into(),
                detail: "expected an object".into(),
            },
        ),
        (
            Box::new(|e| e["request"] = json!([MARKER, "s", "t", "a", {}])),
            EnvelopeError::InvalidField {
                field: "request".into(),
                detail: "expected an object".into(),
            },
        ),
        (
            Box::new(|e| e["request"]["tool"] = json!(MARKER.len())),
            EnvelopeError::InvalidField {
                field: "request.tool".into(),
                detail: "expected a string".into(),
            },
        ),
        (
            Box::new(|e| e["request"]["arguments"] = json!(MARKER)),
            EnvelopeError::InvalidField {
                field: "request.arguments".into(),
                detail: "expected an object".into(),
            },
        ),
        (
            Box::new(|e| e["trusted_issuers_hex"] = json!([MARKER])),
            EnvelopeError::InvalidField {
                field: "trusted_issuers_hex[0]".into(),
                detail: "expected 64 lowercase hex characters of an Ed25519 public key".into(),
            },
        ),
        (
            Box::new(|e| e["clock_override_unix_secs"] = json!(MARKER)),
            EnvelopeError::InvalidField {
                field: "clock_override_unix_secs".into(),
                detail: "expected a non-negative integer of Unix seconds".into(),
            },
        ),
    ];
    for (i, (mutate, expected)) in cases.into_iter().enumerate() {
        let mut env = fixture();
        mutate(&mut env);
        let err = parse_envelope(env.to_string().as_bytes()).unwrap_err();
        assert_eq!(err, expected, "case {i}");
        assert!(!printed(&err).contains(MARKER), "case {i} echoes: {err}");
    }
    let err = parse_envelope(format!("{{\"{MARKER}\": tru}}").as_bytes()).unwrap_err();
    assert!(matches!(err, EnvelopeError::NotJson { .. }), "{err:?}");
    assert!(!printed(&err).contains(MARKER), "{err}");
}

proptest! {
    // Whatever string replaces an envelope field, an error never quotes it.
    #[test]
    fn errors_never_echo_the_value(field in 0usize..9, text in "[a-z]{6}-[0-9]{6}") {
        let mut env = fixture();
        let v = json!(text);
        match field {
            0 => env["request"] = v,
            1 => env["capability"] = v,
            2 => env["trusted_issuers_hex"] = json!([text]),
            3 => env["clock_override_unix_secs"] = v,
            4 => env["request"]["arguments"] = v,
            5 => env["capability"]["scope"] = v,
            6 => env["capability"]["expires_at_ms"] = v,
            7 => env["capability"]["delegation_chain"] = json!([{"schema": text}]),
            _ => env["capability"]["root"] = v,
        }
        if let Err(err) = evaluate_envelope(env.to_string().as_bytes()) {
            prop_assert!(!printed(&err).contains(&text), "{}", err);
        }
    }
}

/// What a key field of an envelope is refused with.
const KEY_DETAIL: &str = "expected 64 lowercase hex characters of an Ed25519 public key";

// A chain that hands the capability back to its root holder spelt in capitals is denied at step 1 as a malformed key, by the portable evaluator and the hosted kernel alike (the key-cycle check compares keys as strings).
#[test]
fn a_key_spelt_in_capitals_is_denied_at_step_one() {
    let root = issue("cap-alice", "alice", files_scope());
    let bob = root.hand_down_to("alice", "bob", "cap-bob");
    let upper = agent_pk("alice").to_uppercase();
    let back = bob
        .delegate(
            &agent_key("bob"),
            &upper,
            &Attenuation::default(),
            "cap-back",
            NOW_MS,
        )
        .unwrap();
    let issuers = vec![authority_pk()];
    let mut request = portable_request("alice", "read_file");
    request.agent_id = upper.clone();
    let d = evaluate_portable(
        &EvaluateInput {
            request: &request,
            capability: &back,
            trusted_issuers: &issuers,
            now_ms: NOW_SECS * 1000,
            guards: &[],
            session_filesystem_roots: None,
        },
        &mut InMemorySiblingShares::strict(),
    );
    assert_eq!(d.verdict, PortableVerdict::Deny);
    let wanted =
        "capability key subject is not an Ed25519 public key in 64 lowercase hex characters";
    assert_eq!(d.reason.as_deref(), Some(wanted));
    // The same capability spelt the accepted way is the key cycle it hid.
    let lower = bob.hand_down_to("bob", "alice", "cap-back");
    let mut hosted = kernel(Vec::new());
    let files = standard_files();
    let decision = decide(
        &mut hosted,
        &files,
        "alice",
        &lower,
        ("files", "read_file"),
        json!({"path": "/workspace/a.txt"}),
        "r1",
    );
    assert_eq!(
        decision.reason.as_deref(),
        Some("delegation chain has a cycle: link cap-back delegates back to a key already in the chain")
    );
    let decision = decide(
        &mut hosted,
        &files,
        "alice",
        &back,
        ("files", "read_file"),
        json!({"path": "/workspace/a.txt"}),
        "r2",
    );
    assert_eq!(decision.reason.as_deref(), Some(wanted));
}

// The key check walks every key field in the token's order and names the first malformed one by its path.
#[test]
fn the_first_malformed_key_is_named_by_its_path() {
    use chio_kernel::verification::first_malformed_key;
    let root = issue("cap-alice", "alice", files_scope());
    let bob = root.hand_down_to("alice", "bob", "cap-bob");
    assert_eq!(first_malformed_key(&bob), None);
    type Edit = fn(&mut chio_kernel::token::CapabilityToken);
    let cases: Vec<(Edit, &str)> = vec![
        (|t| t.issuer = t.issuer.to_uppercase(), "issuer"),
        (|t| t.root.as_mut().unwrap().issuer.push('0'), "root.issuer"),
        (
            |t| t.root.as_mut().unwrap().subject = "anyone".into(),
            "root.subject",
        ),
        (
            |t| t.delegation_chain[0].delegator.clear(),
            "delegation_chain[0].delegator",
        ),
        (
            |t| t.delegation_chain[0].delegatee = t.delegation_chain[0].delegatee.to_uppercase(),
            "delegation_chain[0].delegatee",
        ),
    ];
    for (mutate, field) in cases {
        let mut token = bob.clone();
        mutate(&mut token);
        assert_eq!(first_malformed_key(&token).as_deref(), Some(field));
    }
}

// Every key field of an envelope (the caller, the token's issuer and subject, its root's, each link's delegator and delegatee) that is not a key in lowercase hex is refused naming its path.
#[test]
fn key_fields_of_an_envelope_are_refused_by_path() {
    fn upper(e: &mut Value, pointer: &str) {
        let field = e.pointer_mut(pointer).unwrap();
        *field = json!(field.as_str().unwrap().to_uppercase());
    }
    let cases: Vec<(Mutation, &str)> = vec![
        (
            Box::new(|e| upper(e, "/request/agent_id")),
            "request.agent_id",
        ),
        (
            Box::new(|e| e["request"]["agent_id"] = json!("not-a-key")),
            "request.agent_id",
        ),
        (
            Box::new(|e| upper(e, "/capability/subject")),
            "capability.subject",
        ),
        (
            Box::new(|e| e["capability"]["subject"] = json!("anyone")),
            "capability.subject",
        ),
        (
            Box::new(|e| upper(e, "/capability/issuer")),
            "capability.issuer",
        ),
        (
            Box::new(|e| {
                let key = e["capability"]["subject"].as_str().unwrap().to_string();
                e["capability"]["subject"] = json!(&key[..63]);
            }),
            "capability.subject",
        ),
    ];
    for (mutate, field) in cases {
        let mut env = fixture();
        mutate(&mut env);
        let err = parse_envelope(env.to_string().as_bytes()).unwrap_err();
        assert_eq!(
            err,
            EnvelopeError::InvalidField {
                field: field.into(),
                detail: KEY_DETAIL.into()
            }
        );
    }
}

proptest! {
    // A caller key that is not 64 lowercase hex characters of a key is refused naming request.agent_id, never quoting it.
    #[test]
    fn a_caller_that_is_not_a_key_is_refused(text in "[0-9a-fA-F]{1,70}|[ -~]{1,70}") {
        prop_assume!(chio_kernel::keys::parse_public_key_hex(&text).is_err());
        let mut env = fixture();
        env["request"]["agent_id"] = json!(text);
        let err = parse_envelope(env.to_string().as_bytes()).unwrap_err();
        prop_assert_eq!(
            &err,
            &EnvelopeError::InvalidField { field: "request.agent_id".into(), detail: KEY_DETAIL.into() }
        );
        prop_assert!(!printed(&err).contains(&text) || text.len() < 4, "{}", err);
    }
}
